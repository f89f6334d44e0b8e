/* How every command reads a job: host group after host group, never the
 * whole job at once (docs/scale.md).
 *
 * The traces given are grouped by host (the hostname of each trace's first
 * SESSION; a scheduler probe trace joins its host's group; at most
 * LENS_PASS_GROUP_MAX traces a group, a bigger host is split). A pool of
 * threads takes group after group: loads it into its own model (reader, then
 * the analyses that need a whole process: GPU clock maps and CUPTI join,
 * starvation), narrows it to the selection (--comm, --rank, ...), and runs
 * each of the command's passes on it. A pass maps the group's model to a
 * small partial result that owns everything it keeps; then the model is
 * freed. The command merges the partials of each pass in input order (the
 * same answer on 1 thread or 16) and prints from them and from the skeleton
 * (lens_model_skeleton_add: files, processes, communicators, threads, clock
 * maps of every group, renumbered).
 *
 * Memory: one model per thread (bounded by the largest host group, not the
 * job) plus the partials. A partial's indexes into procs, comms, threads or
 * files are its group's: add the group's base (out->bases[g]) when merging.
 *
 * What a group boundary changes: a PXN proxy op recorded in another process
 * joins its collective only inside a group (same host, up to 64 traces), and
 * a probe trace explains starvation only for its own host's traces. */
#ifndef NCCL_LENS_CLI_PASSES_H
#define NCCL_LENS_CLI_PASSES_H

#include <stddef.h>
#include <stdint.h>

#include "cli/trace_args.h"
#include "reader/lensread.h"

#define LENS_PASS_GROUP_MAX 64

/* lens_pass.needs */
#define LENS_PASS_STEPS 0x1u /* reads ProxySteps as events (else the reader folds them into their ProxyOp when it can) */
/* reads each folded ProxyStep's facts (lens_step_fact: LENS_LOAD_STEP_FACTS) when they are folded */
#define LENS_PASS_STEP_FACTS 0x2u

struct lens_pass {
  /* On a worker thread: one group's model, loaded, analysed and narrowed.
   * Returns the partial, or NULL after one error line (out of memory). ctx
   * is shared by every group: read it only, or lock. */
  void *(*map)(struct lens_model *m, void *ctx);
  void (*free)(void *part); /* may be NULL: free() */
  void *ctx;
  uint32_t needs;           /* LENS_PASS_* */
};

struct lens_passes_out {
  struct lens_model *skel;         /* every group's files, procs, comms, threads, notes, clocks, clock maps */
  size_t n_groups;
  struct lens_model_base *bases;   /* per group, in input order: where its tables start in skel */
  char (*hosts)[64];               /* per group: its host name ("" unknown) */
  void **parts;                    /* parts[pass * n_groups + group] */
  size_t n_passes;
  uint64_t events;                 /* events loaded over all groups (after the selection) */
};

struct lens_passes_opts {
  long threads;                    /* 0: the cores */
  int no_progress;                 /* no progress line even on a terminal */
  /* Without a selection: group g (in input order) loaded by a window of the
   * caller's own (*w zeroed; 1 when set, 0 for a whole load). The timeline
   * export's window on job time, mapped to each group's MONOTONIC through
   * the alignment its memo holds (export_job.c). On a worker thread. */
  int (*group_window)(void *ctx, size_t g, struct lens_load_window *w);
  void *group_window_ctx;
};

/* Reads c's traces (directories already expanded by the caller, or expanded
 * here) through the passes. 0; 1 after an error line; 2 after a usage error
 * (a --comm or --func that names nothing in any group). out is filled on 0
 * and must be freed with lens_passes_free whatever is returned. */
int lens_passes_run(const char *cmd, struct lens_trace_cli *c, const struct lens_pass *passes, size_t n_passes,
                    const struct lens_passes_opts *o, struct lens_passes_out *out);
void lens_passes_free(const struct lens_pass *passes, struct lens_passes_out *out);

/* Grouping, shared with job's reading of partial files: the hostname of a
 * trace's first SESSION ("" if its first chunk is not one); *probe: written
 * by the scheduler probe, or its header unread. */
void lens_pass_trace_host(const char *path, char *host, size_t len, int *probe);

#endif
