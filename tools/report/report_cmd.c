/* nccl-lens report TRACE... [--cupti-buffer F]... [--min-wait-us N] [-o report.md]
 *
 * One Markdown report of a run for a performance engineer: what was
 * recorded, per-communicator tables, completion vs enqueue and rank arrival,
 * the GPU timing verdict, proxy threads and starvation, data losses, and
 * hints on what to look at next (docs/report.md). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/trace_args.h"
#include "analysis/analyses.h"
#include "report/report_md.h"
#include "summary/summary_top.h"

#define CMD "report"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens report [-o REPORT.md] [--top N] [common options] TRACE.lens|DIR...\n"
             "  One Markdown report of a run: what was recorded, per-communicator operations, completion vs\n"
             "  enqueue and rank arrival, GPU timing accuracy, proxy threads and starvation, data losses,\n"
             "  and what to look at next. Without -o it goes to standard output.\n"
             "  --top N                 per communicator, the N operation rows that took the most time (0 = all)\n");
  lens_trace_cli_usage_common(f);
}

static int report_option(void *ctx, int *i, int argc, char **argv) {
  return lens_top_option(CMD, i, argc, argv, ctx);
}

int lens_cmd_report(int argc, char **argv) {
  struct lens_trace_cli c;
  int rc = 1;
  long top = 0;
  struct lens_model *m = lens_trace_cli_start(CMD, argc, argv, &c, report_option, NULL, &top, usage, &rc);
  if (!m) return rc;
  struct lens_report r;
  if (lens_report_build(m, &r, lens_analyze_gpu != NULL)) {
    lens_cli_error(CMD, "out of memory");
    lens_model_free(m);
    goto done;
  }
  size_t cut = lens_summary_top(&r.sum, (size_t)top);
  if (cut) fprintf(stderr, "nccl-lens report: --top %ld: %zu operation rows left out\n", top, cut);
  FILE *f = lens_trace_cli_open_out(CMD, &c);
  if (f) {
    lens_report_print_md(f, m, &r);
    rc = lens_trace_cli_close_out(CMD, &c, f, 0);
  }
  lens_report_free(&r);
  lens_model_free(m);
done:
  lens_trace_cli_free(&c);
  return rc;
}
