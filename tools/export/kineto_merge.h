/* export --format kineto --into RANKFILES...: NCCL's inside merged into the
 * user's own torch.profiler files (docs/pytorch.md). For each Kineto file,
 * the nccl-lens traces of the same process are loaded (one process a
 * thread at a time: memory bounded by one rank a thread), our KernelLaunches are matched with its
 * NCCL kernels per GPU stream (CUPTI correlation when our trace has it, else
 * by order and time), and the file is copied byte for byte with additions
 * (kineto_json.h): channel rows on the GPU, proxy rows on the CPU process,
 * args on each matched kernel, flows, and a top-level "nccl_lens" object. */
#ifndef NCCL_LENS_EXPORT_KINETO_MERGE_H
#define NCCL_LENS_EXPORT_KINETO_MERGE_H

#include <stddef.h>

struct lens_kineto_merge_opts {
  const char *const *into;
  size_t n_into; /* the Kineto files (.json or .json.gz) */
  const char *const *traces;
  size_t n_traces;     /* .lens files (directories already expanded) */
  const char *out_dir; /* created 0700 if missing */
  long threads;        /* files read at once (a trace or a Kineto file a thread); 0: the cores */
};

/* 0 when every Kineto file was written to out_dir (merged, or unchanged with
 * its reason on stderr), 1 after an error line. */
int lens_export_kineto(const char *cmd, const struct lens_kineto_merge_opts *o);

#endif
