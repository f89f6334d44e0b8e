/* The job-wide views the report's verdict, plots and straggler hints share:
 * the job view (job.h), the host alignment (job_align.h) that puts every
 * rank's times on one job time base, and the hang diagnosis, read once with
 * the report (struct lens_report holds them), and
 * the one rule that turns a collective instance into the window of
 * `nccl-lens export --format job` that shows it. */
#ifndef NCCL_LENS_REPORT_VIEW_H
#define NCCL_LENS_REPORT_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/hang/hang_analysis.h"
#include "analysis/job/job.h"
#include "analysis/job/job_align.h"
#include "report/report_model.h"

struct lens_report_view {
  const struct lens_model *m;  /* the skeleton */
  const struct lens_report *r;
  struct lens_job j;            /* copies of r's views: not owned */
  struct lens_align a;
  struct lens_hang_report h;
  int64_t origin;           /* export --format job's origin without --comm (job ns) */
  uint64_t coll_ns;         /* all ranks' collective time: the spans of the decomposed instances */
};

/* 0, or -1 when r lacks the job view or the alignment (nothing to free then). */
int lens_report_view_build(const struct lens_model *m, const struct lens_report *r, struct lens_report_view *v);
void lens_report_view_free(struct lens_report_view *v);

/* Job time of a MONOTONIC ns of process proc; *placed 0 when its host could not be placed. */
int64_t lens_report_job_time(const struct lens_report_view *v, int32_t proc, uint64_t mono, int *placed);
/* export --format job's origin with --comm comm_id (0: without): the
 * earliest aligned event of the selected processes, floored to 1 ms. */
int64_t lens_report_origin(const struct lens_report_view *v, uint64_t comm_id);

/* Where an instance is: its first rank's start (t_s: seconds after the
 * origin without --comm) and a window around it, half its length again on
 * each side (at least 50 us), in whole us after the origin with --comm. */
struct lens_report_window {
  int ok;                   /* 0: none of its ranks' hosts placed */
  double t_s;
  int64_t since_us, until_us;
};
void lens_report_window_of(const struct lens_report_view *v, const struct lens_job_inst *in, int64_t comm_origin,
                           struct lens_report_window *w);
/* The export command that shows it ("TRACES" stands for the traces given).
 * Made of fixed words and numbers only (the communicator by its hex id, no
 * name from a trace), so that it is safe to paste into a shell as it is and
 * to print inside a Markdown code span (no backtick). */
void lens_report_export_cmd(const struct lens_job_inst *in, const struct lens_report_window *w, char *buf, size_t len);

/* The instances where straggler s arrived last and made the others wait
 * past the threshold (the ones it is counted for), the longest waits
 * (summed over the ranks) first: at most max into out; returns how many. */
size_t lens_report_straggler_instances(const struct lens_report_view *v, const struct lens_job_straggler *s,
                                       const struct lens_job_inst **out, size_t max);

#endif
