/* Per-model storage of the GPU analysis (private to tools/analysis/gpu/gpu_*.c). */
#ifndef NCCL_LENS_GPU_STATE_H
#define NCCL_LENS_GPU_STATE_H

#include "gpu_analysis.h"
#include "gpu_index.h"

/* What the flags' sequence pass (gpu_flags.c) added to one KernelCh: the
 * part of its flags that depends on other KernelCh of its channel. */
struct lens_gpu_seqflag {
  int32_t proc;
  uint32_t session;
  uint64_t id;
  uint32_t flags;
  uint32_t reserved; /* 0: no padding, so a memo holds the struct's bytes (gpu_memo.c) */
};
_Static_assert(sizeof(struct lens_gpu_seqflag) == 24, "a memo holds these bytes as they are");
/* Their order: (proc, session, id), as qsort and bsearch take it. */
int lens_gpu_seqflag_cmp(const void *a, const void *b);

struct lens_gpu_state {
  const struct lens_model *m;
  /* The model this state belongs to: a freed model's address can come back
   * for a new one (when lens_model_free did not call lens_gpu_release). */
  const void *fp_priv, *fp_events;
  struct lens_gpu_report report;
  struct lens_cupti_blob *extra; size_t n_extra; /* --cupti-buffer files; data owned */
  struct lens_gpu_index launches; /* KernelLaunch: (proc, event id) -> event */
  struct lens_gpu_index ops;      /* Coll/P2p: (proc, launch_id) -> event */
  /* The last full flag pass's sequence flags, by (proc, session, id), for a
   * memo (gpu_memo.c); ambiguous: a memo cannot carry them. */
  struct lens_gpu_seqflag *seq; size_t n_seq;
  int seq_ambiguous;
  struct lens_gpu_state *next;
};

#endif
