/* `nccl-lens diff A B`: two runs compared per communicator and per operation
 * (func, size bucket). The numbers come from the views every command shows:
 * the job view's execution (tools/analysis/job/job.h) for a communicator with
 * several ranks loaded in both runs, else summary's completion
 * (tools/summary/summary_model.h). Nothing is re-derived from events here:
 * this file matches the two runs' rows and ranks the differences.
 *
 * With the job view, waiting is compared too, not only execution: a rank
 * that arrives 3 ms late leaves every instance's execution as it was and
 * makes the others wait 3 ms. Per instance its wait is its longest rank
 * wait (how late the last rank was: lens_job_inst.max_wait_ns) and its wall
 * time execution + that wait (first rank in -> all out). */
#ifndef NCCL_LENS_DIFF_MODEL_H
#define NCCL_LENS_DIFF_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/job/job.h"
#include "reader/lensread.h"
#include "summary/summary_model.h"

#define LENS_DIFF_THRESHOLD_DEFAULT 5.0 /* percent: smaller relative changes are noise */

/* One run, loaded and analysed: the views the diff reads. */
struct lens_diff_run {
  const struct lens_model *m; /* files and processes (a skeleton: no event is read) */
  const struct lens_summary *s;
  const struct lens_job *j; /* NULL when the job view could not be built */
};

enum lens_diff_metric { LENS_DIFF_COMPLETION = 0, LENS_DIFF_EXECUTION = 1 };
enum lens_diff_match { LENS_DIFF_BY_NONE = 0, LENS_DIFF_BY_HASH, LENS_DIFF_BY_NAME, LENS_DIFF_BY_SIZE };
enum lens_diff_status {
  LENS_DIFF_SAME = 0, /* time within the threshold (or the spread), same count */
  LENS_DIFF_COUNT,    /* time within the threshold, count changed */
  LENS_DIFF_SLOWER,
  LENS_DIFF_FASTER,
  LENS_DIFF_NEW,      /* only in B */
  LENS_DIFF_GONE,     /* only in A */
};

/* One side of a row: an operation (func, size bucket) of a communicator. */
struct lens_diff_side {
  int present;
  uint64_t count;      /* instances (execution) or ops over ranks (completion) */
  uint64_t timed;      /* of which with a time */
  double avg_ns;       /* mean execution or completion */
  double p50_ns;       /* median execution, 0 unknown (completion) */
  double total_ns;     /* avg x timed: the row's weight */
  /* from the job view's execution only, never a completion time (which
   * holds the wait for a late rank); bw_known 0: none was decomposed */
  double busbw_gbps, algbw_gbps;
  int bw_known;
  const char *algo, *proto; /* the most frequent (summary rows), NULL unknown */
  /* execution rows only (0 otherwise), means over the timed instances */
  double wait_ns;      /* each instance's longest wait: how late its last rank was */
  double wait_p50_ns;  /* its median over the instances */
  double wait_p75_ns;  /* its 75th percentile: what a wait change must move besides the mean */
  double wait_rank_ns; /* per rank and instance (the job table's "wait avg") */
  double wall_ns;      /* execution + wait */
};

/* What moved beyond the threshold in a row (bits of lens_diff_row.moved). */
#define LENS_DIFF_MOVED_EXEC 1u /* the execution (mean and median) */
#define LENS_DIFF_MOVED_WAIT 2u /* the wait (mean and median), by threshold % of A's wall time */

struct lens_diff_comm {
  int32_t a, b;        /* summary group index in each run, -1 absent */
  int match;           /* enum lens_diff_match */
  int metric;          /* enum lens_diff_metric */
};

struct lens_diff_row {
  size_t comm;         /* index into lens_diff.comms */
  const char *func;
  int bucket;          /* floor(log2(bytes)), -1 for 0 bytes */
  int metric;
  struct lens_diff_side a, b;
  double change;       /* (b - a) / a of the time, 0 when either has none */
  double wait_change_ns; /* b.wait_ns - a.wait_ns (execution rows) */
  double wall_change;    /* (b - a) / a of the wall time, 0 when unknown */
  unsigned moved;        /* LENS_DIFF_MOVED_* */
  double score;        /* |change| x the row's share of the runs' time (new/gone: the share) */
  int status;          /* enum lens_diff_status */
};

struct lens_diff {
  struct lens_diff_comm *comms; size_t n_comms;
  struct lens_diff_row *rows; size_t n_rows; /* changes first (execution ones, then wait-only ones), by score; then the rest */
  size_t n_changed;    /* rows whose status is not SAME */
  double threshold;    /* percent */
};

/* Returns 0, or -1 out of memory. */
int lens_diff_build(const struct lens_diff_run *a, const struct lens_diff_run *b, double threshold_pct,
                    struct lens_diff *d);
void lens_diff_free(struct lens_diff *d);
const char *lens_diff_status_name(int status);
const char *lens_diff_match_name(int match);
/* The communicator's group in run a (side 0) or b (side 1), NULL absent. */
const struct lens_sum_group *lens_diff_group(const struct lens_diff_run *r, int32_t g);

#endif
