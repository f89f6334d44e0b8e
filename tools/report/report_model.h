/* Numbers the report needs beyond the summary's (summary_model.h): how long
 * each process recorded, how late each rank arrives at its collectives,
 * starvation per proxy thread, KernelCh notice lag and its distribution, and
 * the start of each Coll/P2p the job view's rows name (for placing them on
 * the job time base). Read host group by host group (tools/cli/passes.h): a
 * group's model maps to a partial that owns what it keeps; the partials
 * merge, in input order, into struct lens_report, which the printers read
 * with the skeleton (report_md.c, report_json.c, report_hints.c).
 * Times in ns, CLOCK_MONOTONIC of each host. */
#ifndef NCCL_LENS_REPORT_MODEL_H
#define NCCL_LENS_REPORT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "reader/lensread.h"
#include "analysis/hang/hang_analysis.h"
#include "analysis/job/job.h"
#include "analysis/job/job_align.h"
#include "analysis/net/net_analysis.h"
#include "summary/summary_model.h"
#include "validate/validate_print.h"

/* Recorded span of one process: first event start .. last event stop. */
struct lens_rep_proc { uint64_t first_ns, last_ns; };

/* Arrival of one rank at a communicator's collectives: its Coll start minus
 * the earliest start of the same operation (comm id, seq) on the same host
 * (clocks of different hosts are not aligned, so only same-host ranks are
 * compared: a host is one group of the pass driver, so each group compares
 * its own ranks and the merge adds them up by (comm id, rank)). */
struct lens_rep_late {
  uint64_t comm_id;
  char comm_name[128];
  int rank;
  uint64_t n, sum_ns, max_ns, last_n; /* last_n: ops where it was the last to arrive */
  /* ops where the thread that started its Coll also started another rank's
   * Coll of the same op (one thread drives several ranks): that thread */
  uint64_t same_thread_n;
  int32_t thread;
};

/* Starvation of one proxy thread (needs probe traces). */
struct lens_rep_starve {
  int32_t thread;
  uint64_t kernel_ch, kernel_ch_starved, proxy, proxy_starved, starved_ns;
};

/* KernelCh notice lag distribution: bin b holds [2^(b-3), 2^(b-2)) us; the
 * first also holds less (0 and the lags below 0, counted as 0), the last more.
 * Every KernelCh with a known lag (lens_gpu_notice_lag_known) counts. */
#define LENS_REPORT_LAG_BINS 24
int lens_report_lag_bin(uint64_t lag_ns);

/* The start (host MONOTONIC) of one Coll/P2p: event is its index in its
 * group's model, as the job view's rows keep it (lens_job_rank.event). */
struct lens_rep_start { uint64_t event, start_ns; };

struct lens_report {
  struct lens_summary sum;
  struct lens_rep_proc *procs; size_t n_procs; /* parallel to the skeleton's procs */
  struct lens_rep_late *late; size_t n_late;
  struct lens_rep_starve *starve; size_t n_starve;
  uint64_t kernel_ch, kernel_ch_starved;
  uint64_t lag_n, lag_sum_ns, lag_max_ns; /* KernelCh notice lag behind mapped GPU stop */
  uint64_t lag_hist[LENS_REPORT_LAG_BINS];
  uint64_t n_events;                    /* events read (after the selection) */
  size_t n_sched;                       /* scheduler samples read */
  size_t n_kernels;                     /* CUPTI kernel records read */
  int gpu_ran;                          /* the GPU analysis ran */
  struct lens_validate_verdict gpu;     /* validate's verdict (gpu_ran) */
  struct lens_net *net;                 /* the network view (docs/net.md), owned */
  /* Coll/P2p starts per group (sorted by event), and where each group's procs start in the skeleton. */
  struct lens_rep_start *starts; size_t *group_first; size_t *group_proc; size_t n_groups;
  /* The job-wide views, not owned (the reading that made this report holds them): the job view (rows with the
   * group's event index), its skeleton (what it prints of processes), the host alignment, the hang diagnosis. */
  const struct lens_job *job;
  const struct lens_model *job_skel;
  const struct lens_align *align;
  const struct lens_hang_report *hang;
};

/* ---- map and merge (tools/cli/passes.h) ---- */
struct lens_report_part;
/* The driver's map (ctx unused; reads folded ProxySteps' facts: .needs =
 * LENS_PASS_STEP_FACTS, or step events) and free. */
void *lens_report_pass_map(struct lens_model *m, void *ctx);
void lens_report_pass_free(void *part);
/* Adds the groups' partials (in input order) to r, whose other members the
 * caller fills. 0, or -1 out of memory. */
int lens_report_merge(struct lens_report *r, const struct lens_model *skel, struct lens_report_part *const *parts,
                      size_t n, const struct lens_model_base *bases);
/* The start of the Coll/P2p a job row names; 0 when unknown. */
int lens_report_rank_start(const struct lens_report *r, const struct lens_job_rank *rk, uint64_t *start_ns);
void lens_report_free(struct lens_report *r);

#endif
