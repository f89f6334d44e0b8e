/* How summary, diff and report read a run: through the pass driver (cli/passes.h),
 * host group after host group, each group mapped to its summary
 * (analysis/summary/summary_analysis.h) and its job partial
 * (analysis/job/job_part.h); the summaries merge, the partials reduce to the
 * job view, and the hosts are aligned from the partials' clocks; a command
 * may add passes of its own to the same reading (lens_summary_read_with).
 * No model of the whole run is ever built. */
#ifndef NCCL_LENS_SUMMARY_READ_H
#define NCCL_LENS_SUMMARY_READ_H

#include <stdint.h>

#include "analysis/job/job.h"
#include "analysis/job/job_align.h"
#include "analysis/hang/hang_analysis.h"
#include "cli/passes.h"
#include "cli/trace_args.h"
#include "summary/summary_model.h"

struct lens_summary_run {
  struct lens_passes_out out;    /* out.skel: files, processes, threads, notes, clocks of every group */
  struct lens_summary s;         /* merged; proxies' threads index out.skel */
  struct lens_job_part *parts;   /* the groups' job partials (j and job_skel point at their strings) */
  size_t n_parts;
  struct lens_model *job_skel;   /* what the job view prints of processes and communicators */
  struct lens_job j;
  int have_job;
  struct lens_align al;          /* the hosts on one time base, from the partials' clocks and j */
  int have_align;
  struct lens_hang_report hang;  /* with LENS_SUMMARY_READ_HANG: `nccl-lens hang`'s analysis, merged */
  int have_hang;
  /* lens_summary_read_with's extra passes: their partials are
   * out.parts[(extra_at + k) * out.n_groups + g], freed with the run */
  struct lens_pass *passes; size_t n_passes, extra_at;
};

#define LENS_SUMMARY_READ_HANG 0x1u /* a third pass: the hang analysis (lens_hang_map), for the headline */
/* The job view's rows keep their event: the Coll/P2p's index in its group's
 * model (the one every pass of the reading mapped), for a pass that keyed
 * its own numbers by it (report: each row's start) */
#define LENS_SUMMARY_READ_EVENTS 0x2u

/* Reads c's traces. job_min_wait_ns: the job view's --min-wait; flags:
 * LENS_SUMMARY_READ_*. 0; 1 after an error line; 2 after a usage error. r
 * is to be freed whatever is returned. */
int lens_summary_read(const char *cmd, struct lens_trace_cli *c, uint64_t job_min_wait_ns, unsigned flags,
                      struct lens_summary_run *r);
/* The same with the caller's passes run in the same reading (report: its
 * own numbers, net, validate). */
int lens_summary_read_with(const char *cmd, struct lens_trace_cli *c, uint64_t job_min_wait_ns, unsigned flags,
                           const struct lens_pass *extra, size_t n_extra, struct lens_summary_run *r);
/* Extra pass k's partials, one per group in input order. */
void **lens_summary_run_extra(struct lens_summary_run *r, size_t k);
/* Keeps what a comparison of runs reads (diff: the summary, the job view's
 * instances, rows and stragglers, the skeleton and the partials' strings
 * they point at) and frees the rest now: the job view's rows per rank
 * (j.ranks: n_ranks 0 after, the instances' first_rank and n_ranks name
 * nothing), its one-way pairs, the host alignment, the hang report, the
 * partials' ops, clocks, processes and communicators and the job
 * skeleton. diff reads its second run after this: the first run's rows are
 * not alive beside the second's reading (docs/scale.md, 2 GB). */
void lens_summary_run_slim(struct lens_summary_run *r);
void lens_summary_run_free(struct lens_summary_run *r);

#endif
