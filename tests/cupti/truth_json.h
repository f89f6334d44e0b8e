/* Just enough of the replay driver's truth.json (docs/replay.md) for the
 * GPU tests: per rank its simulated GPU clock, per op its launch bracket and
 * true kernel span, per KernelCh its timers and true host times. */
#ifndef NCCL_LENS_TESTS_CUPTI_TRUTH_JSON_H
#define NCCL_LENS_TESTS_CUPTI_TRUTH_JSON_H

#include <stddef.h>
#include <stdint.h>

struct truth_rank { int rank; int64_t gpu_offset_ns; double gpu_drift_ppm; };
struct truth_op { int rank, pid_index, graph_replay; int64_t launch_start, launch_end, kernel_start, kernel_end; };
struct truth_kch {
  int rank, channel, op, overrun, pid_index;
  uint64_t start_ptimer, stop_ptimer;
  int64_t true_start_ns, true_stop_ns;
  int64_t notice_start_ns;
  uint64_t counter, start_counter, stop_counter; /* the item's, and those of the items whose timers it read */
};

struct truth {
  struct truth_rank ranks[64]; size_t n_ranks;
  struct truth_op *ops; size_t n_ops;
  struct truth_kch *kch; size_t n_kch;
};

/* Returns 0, or -1 if the file cannot be read or lacks the arrays. */
int truth_load(struct truth *t, const char *path);
void truth_free(struct truth *t);

#endif
