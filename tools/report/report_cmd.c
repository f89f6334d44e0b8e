/* nccl-lens report [--json|--html] TRACE... [--cupti-buffer F]... [--min-wait-us N] [-o report.md]
 *
 * One Markdown report of a run for a performance engineer: what was
 * recorded, per-communicator tables, completion vs enqueue and rank arrival,
 * the GPU timing verdict, proxy threads and starvation, data losses, and
 * hints on what to look at next (docs/report.md). --json: the verdict and the
 * numbers of the plots (report_json.c); --html: one offline page that draws
 * them (report_html.c).
 *
 * Read host group by host group (tools/cli/passes.h): summary's reading
 * (summary/summary_read.h: summary, job and hang passes) with the report's
 * own pass (report_model.h), net's and validate's; no model of the whole job
 * is built. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/spool.h"
#include "cli/trace_args.h"
#include "analysis/analyses.h"
#include "net/net_print.h"
#include "report/report_html.h"
#include "report/report_json.h"
#include "report/report_md.h"
#include "summary/summary_read.h"
#include "summary/summary_top.h"
#include "validate/validate_part.h"

#define CMD "report"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens report [--json|--html] [-o OUT] [--top N] [--all] [common options] TRACE.lens|DIR...\n"
             "  One Markdown report of a run: what was recorded, per-communicator operations, completion vs\n"
             "  enqueue and rank arrival, GPU timing accuracy, proxy threads and starvation, data losses,\n"
             "  and what to look at next. Without -o it goes to standard output.\n"
             "  --top N                 per communicator, the N operation rows that took the most time (0 = all)\n"
             "  --json                  the verdict lines and the numbers the HTML page plots, as JSON\n"
             "  --html                  one HTML page that opens offline: verdict, then plots (needs libjs-d3)\n"
             "  --all                   every row of the tables with a row per process, rank, GPU or proxy thread\n"
             "                          (by default the 16 that say most; a line says how many more there are)\n");
  lens_trace_cli_usage_common(f);
}

struct report_opts { long top; int json, html, all; };

static int report_option(void *ctx, int *i, int argc, char **argv) {
  struct report_opts *o = ctx;
  if (lens_opt_flag(argv[*i], "--json", 0)) return o->json = 1, 1;
  if (lens_opt_flag(argv[*i], "--html", 0)) return o->html = 1, 1;
  if (lens_opt_flag(argv[*i], "--all", 0)) return o->all = 1, 1;
  return lens_top_option(CMD, i, argc, argv, &o->top);
}

static int report_check(void *ctx) {
  const struct report_opts *o = ctx;
  if (o->json && o->html) return lens_cli_usage(CMD, "--json and --html do not go together"), -1;
  return 0;
}

/* The report's own numbers, beside the summary, job and hang passes of
 * lens_summary_read: its map (report_model.c), net's and validate's. */
enum { X_REPORT, X_NET, X_VALIDATE, N_EXTRA };

static void *report_map(struct lens_model *m, void *ctx) {
  void *p = lens_report_pass_map(m, ctx);
  if (!p) lens_cli_error(CMD, "out of memory");
  return p;
}

/* Merges the extra passes into r (the summary moved in, the views pointed
 * at run's) and frees their partials as it goes. 0, or -1 out of memory. */
static int report_merge(struct lens_summary_run *run, const struct lens_spool_dir *spool, struct lens_report *r) {
  const struct lens_model *skel = run->out.skel;
  size_t ng = run->out.n_groups;
  r->gpu_ran = lens_analyze_gpu != NULL;
  r->sum = run->s;
  memset(&run->s, 0, sizeof run->s);
  r->n_events = run->out.events;
  r->job = run->have_job ? &run->j : NULL;
  r->job_skel = run->job_skel;
  r->align = run->have_align ? &run->al : NULL;
  r->hang = run->have_hang ? &run->hang : NULL;
  void **rp = lens_summary_run_extra(run, X_REPORT), **np = lens_summary_run_extra(run, X_NET);
  if (lens_report_merge(r, skel, (struct lens_report_part *const *)rp, ng, run->out.bases)) return -1;
  for (size_t g = 0; g < ng; g++) lens_report_pass_free(rp[g]), rp[g] = NULL;
  if (!(r->net = lens_net_merge((struct lens_net_part *const *)np, ng, run->out.bases))) return -1;
  if (r->job && lens_net_insts_arrival(r->net, r->job)) return -1; /* who came last: the job view's rule */
  for (size_t g = 0; g < ng; g++) lens_net_pass_free(np[g]), np[g] = NULL;
  struct lens_validate_job vj;
  if (lens_validate_merge(skel, (const struct lens_validate_part *const *)lens_summary_run_extra(run, X_VALIDATE), ng,
                          run->out.bases, spool, &vj))
    return -1;
  lens_validate_judge_job(&vj, skel, &r->gpu); /* validate's verdict, by its rule */
  lens_validate_job_free(&vj);
  return 0;
}

int lens_cmd_report(int argc, char **argv) {
  struct lens_trace_cli c;
  struct report_opts o = {0};
  if (lens_trace_cli_parse(CMD, argc, argv, &c, report_option, report_check, &o, usage)) {
    int rc = c.exit_code;
    lens_trace_cli_free(&c);
    return rc;
  }
  int rc = 1;
  long top = o.top;
  struct lens_summary_run run;
  memset(&run, 0, sizeof run);
  struct lens_report r;
  memset(&r, 0, sizeof r);
  struct lens_spool_dir *spool = NULL;
  /* The page embeds d3: say so before the analyses when it is not installed. */
  char *d3 = NULL;
  size_t d3_len = 0;
  if (o.html && lens_report_html_library(CMD, &d3, &d3_len)) goto done;
  /* validate's counts only: it lists no launch here (limit 0), its spool stays empty */
  if (!(spool = lens_spool_dir_new(CMD, NULL))) goto done;
  struct lens_validate_map_ctx vc = {.spool = spool, .limit = 0};
  /* the Markdown lists the top instances only, the JSON none: the map keeps those (net's text rule) */
  struct lens_net_map_opts net_top = {.top_instances = LENS_NET_PRINT_TOP_INSTANCES};
  const struct lens_pass extra[N_EXTRA] = {
      [X_REPORT] = {.map = report_map, .free = lens_report_pass_free, .needs = LENS_PASS_STEP_FACTS},
      [X_NET] = {.map = lens_net_pass_map, .free = lens_net_pass_free, .ctx = &net_top, .needs = LENS_PASS_STEP_FACTS},
      [X_VALIDATE] = {.map = lens_validate_map, .free = lens_validate_part_free, .ctx = &vc},
  };
  rc = lens_summary_read_with(CMD, &c, 0, LENS_SUMMARY_READ_HANG | LENS_SUMMARY_READ_EVENTS, extra, N_EXTRA, &run);
  if (rc) goto done;
  rc = 1;
  if (report_merge(&run, spool, &r)) {
    lens_cli_error(CMD, "out of memory");
    goto done;
  }
  r.sum.all = o.all;
  size_t cut = lens_summary_top(&r.sum, (size_t)top);
  if (cut) fprintf(stderr, "nccl-lens report: --top %ld: %zu operation rows left out\n", top, cut);
  const struct lens_model *m = run.out.skel;
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
done:
  lens_report_free(&r);
  lens_summary_run_free(&run);
  lens_spool_dir_free(spool);
  free(d3);
  lens_trace_cli_free(&c);
  return rc;
}
