/* Numbers the report needs beyond the summary's (summary_model.h): how long
 * each process recorded, how late each rank arrives at its collectives,
 * starvation per proxy thread, KernelCh notice lag. Computed once from an
 * analysed model; printed by report_md.c, turned into hints by report_hints.c.
 * Times in ns, CLOCK_MONOTONIC of each host. */
#ifndef NCCL_LENS_REPORT_MODEL_H
#define NCCL_LENS_REPORT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "reader/lensread.h"
#include "analysis/net/net_analysis.h"
#include "summary/summary_model.h"

/* Recorded span of one process: first event start .. last event stop. */
struct lens_rep_proc { uint64_t first_ns, last_ns; };

/* Arrival of one rank at a communicator's collectives: its Coll start minus
 * the earliest start of the same operation (comm id, seq) on the same host
 * (clocks of different hosts are not aligned, so only same-host ranks are
 * compared). */
struct lens_rep_late {
  uint64_t comm_id;
  const char *comm_name;
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

struct lens_report {
  struct lens_summary sum;
  struct lens_rep_proc *procs;          /* parallel to model->procs */
  struct lens_rep_late *late; size_t n_late;
  struct lens_rep_starve *starve; size_t n_starve;
  uint64_t kernel_ch, kernel_ch_starved;
  uint64_t lag_n, lag_sum_ns, lag_max_ns; /* KernelCh notice lag behind mapped GPU stop */
  int gpu_ran;                          /* the GPU analysis ran */
  struct lens_net *net;                 /* the network view (docs/net.md) */
};

/* 0, or -1 (out of memory). */
int lens_report_build(const struct lens_model *m, struct lens_report *r, int gpu_ran);
void lens_report_free(struct lens_report *r);

#endif
