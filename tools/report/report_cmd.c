/* nccl-lens report [--json|--html] TRACE... [--cupti-buffer F]... [--min-wait-us N] [-o report.md]
 *
 * One Markdown report of a run for a performance engineer: what was
 * recorded, per-communicator tables, completion vs enqueue and rank arrival,
 * the GPU timing verdict, proxy threads and starvation, data losses, and
 * hints on what to look at next (docs/report.md). --json: the verdict and the
 * numbers of the plots (report_json.c); --html: one offline page that draws
 * them (report_html.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/trace_args.h"
#include "analysis/analyses.h"
#include "report/report_html.h"
#include "report/report_json.h"
#include "report/report_md.h"
#include "summary/summary_top.h"

#define CMD "report"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens report [--json|--html] [-o OUT] [--top N] [common options] TRACE.lens|DIR...\n"
             "  One Markdown report of a run: what was recorded, per-communicator operations, completion vs\n"
             "  enqueue and rank arrival, GPU timing accuracy, proxy threads and starvation, data losses,\n"
             "  and what to look at next. Without -o it goes to standard output.\n"
             "  --top N                 per communicator, the N operation rows that took the most time (0 = all)\n"
             "  --json                  the verdict lines and the numbers the HTML page plots, as JSON\n"
             "  --html                  one HTML page that opens offline: verdict, then plots (needs libjs-d3)\n");
  lens_trace_cli_usage_common(f);
}

struct report_opts { long top; int json, html; };

static int report_option(void *ctx, int *i, int argc, char **argv) {
  struct report_opts *o = ctx;
  if (lens_opt_flag(argv[*i], "--json", 0)) return o->json = 1, 1;
  if (lens_opt_flag(argv[*i], "--html", 0)) return o->html = 1, 1;
  return lens_top_option(CMD, i, argc, argv, &o->top);
}

static int report_check(void *ctx) {
  const struct report_opts *o = ctx;
  if (o->json && o->html) return lens_cli_usage(CMD, "--json and --html do not go together"), -1;
  return 0;
}

int lens_cmd_report(int argc, char **argv) {
  struct lens_trace_cli c;
  int rc = 1;
  struct report_opts o = {0};
  struct lens_model *m = lens_trace_cli_start(CMD, argc, argv, &c, report_option, report_check, &o, usage, &rc);
  if (!m) return rc;
  long top = o.top;
  /* The page embeds d3: say so before the analyses when it is not installed. */
  char *d3 = NULL;
  size_t d3_len = 0;
  if (o.html && lens_report_html_library(CMD, &d3, &d3_len)) {
    lens_model_free(m);
    goto done;
  }
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
    int bad = 0;
    if (o.json) bad = lens_report_print_json(f, m, &r);
    else if (o.html) bad = lens_report_print_html(f, m, &r, d3, d3_len);
    else lens_report_print_md(f, m, &r);
    if (bad) lens_cli_error(CMD, "out of memory");
    rc = lens_trace_cli_close_out(CMD, &c, f, 0);
    if (bad) rc = 1;
  }
  lens_report_free(&r);
  lens_model_free(m);
done:
  free(d3);
  lens_trace_cli_free(&c);
  return rc;
}
