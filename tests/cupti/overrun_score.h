/* Ring-overrun flags against the replay driver's truth: runs `nccl-lens
 * replay` at a layout, loads its traces, and scores the GPU analysis's
 * flags (any of outside_kernel, ring_overrun, stop_before_start,
 * shared_timer, non_monotonic) against the channels the driver knows read
 * another item's timers. Shared by the test and the benchmark. */
#ifndef NCCL_LENS_TESTS_CUPTI_OVERRUN_SCORE_H
#define NCCL_LENS_TESTS_CUPTI_OVERRUN_SCORE_H

#include <stddef.h>

#include "reader/lensread.h"
#include "truth_json.h"

struct overrun_score {
  size_t channels, unmatched, truth_overruns, flagged, true_pos;
  size_t false_pos_by_flag[16]; /* clean channels flagged, per LENS_ACC_* bit */
  /* True overruns not flagged: those whose borrowed timers some other
   * channel reports as its own (detectable), and those whose source item
   * itself reported a later item's timers or nothing (the ring lapped twice
   * in a row: a consistent sequence of genuine GPU times, undetectable). */
  size_t missed_visible, missed_lapped;
  double precision, recall;
};

/* Replays into dir (emptied first); truth's channels come back sorted for
 * overrun_score. Returns 0, or -1 (reason on stderr). */
int overrun_replay(const char *dir, const char *scenario, int nodes, int rpn, int iters, struct truth *t,
                   struct lens_model **m);
/* Call after lens_analyze_gpu. */
void overrun_score(struct truth *t, const struct lens_model *m, struct overrun_score *sc);
void overrun_score_print(const char *what, const struct overrun_score *sc);

#endif
