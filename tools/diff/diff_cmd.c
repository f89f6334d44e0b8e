/* nccl-lens diff A B [--json] [-o FILE] [--threshold PCT] [--top N]
 * nccl-lens diff A1 A2... --vs B1 B2... : two runs, each a trace, several
 * traces or a directory, compared per communicator and operation (what a
 * user does after changing an NCCL setting). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/trace_args.h"
#include "diff/diff_print.h"
#include "export/load_traces.h"
#include "analysis/analyses.h"

#define CMD "diff"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-lens diff [--json] [-o FILE] [--threshold PCT] [--top N] [--min-wait-us N] A B\n"
          "       nccl-lens diff [options] A.lens... --vs B.lens...\n"
          "  Compares run A with run B (each a trace, traces or a directory of traces) per communicator (matched by\n"
          "  hash, else name, else size and order) and per operation (func, size bucket): the execution time of the\n"
          "  job view when a communicator has several ranks in both runs, else the completion time; bus and\n"
          "  algorithm bandwidth; counts. Changes are ranked by relative change x share of the runs' time.\n"
          "  --threshold PCT  smaller changes of the mean (or changes of the mean the median does not follow) are\n"
          "                   noise (default %.0f, 0..1000)\n"
          "  --top N          list at most N changes as text (default 20, 0 = all); --json lists every row\n"
          "  --vs             ends run A's traces and starts run B's (needed when a run has several files)\n",
          LENS_DIFF_THRESHOLD_DEFAULT);
  lens_trace_cli_usage_common_but(f, 1); /* --cupti-buffer is refused here */
}

struct diff_opts {
  int json;
  double threshold;
  size_t top;
  long vs_at;                   /* paths before --vs, -1 none */
  const struct lens_trace_cli *c;
};

static int diff_option(void *ctx, int *i, int argc, char **argv) {
  struct diff_opts *o = ctx;
  const char *a = argv[*i];
  if (lens_opt_flag(a, "--json", 0)) return o->json = 1;
  if (lens_opt_flag(a, "--vs", 0)) {
    if (o->vs_at >= 0) return lens_cli_usage(CMD, "--vs given twice"), -1;
    o->vs_at = (long)o->c->n;
    return 1;
  }
  const char *v;
  int r = lens_opt_val(CMD, i, argc, argv, "--threshold", 0, "a percentage", &v);
  if (r > 0) {
    double t;
    if (lens_opt_num(v, 0, 1000, &t)) return lens_cli_usage(CMD, "--threshold wants a percentage 0..1000, not '%s'", v), -1;
    o->threshold = t;
    return 1;
  }
  if (r < 0) return -1;
  long top;
  r = lens_top_option(CMD, i, argc, argv, &top);
  if (r > 0) o->top = (size_t)top;
  return r;
}

/* One side's command line: the given paths (a directory is expanded when
 * loaded), the shared options, no CUPTI buffers (whose run would they be?). */
static struct lens_model *load_side(const struct lens_trace_cli *c, size_t from, size_t n, struct lens_trace_cli *side) {
  memset(side, 0, sizeof *side);
  side->paths = calloc(n + 1, sizeof *side->paths);
  side->cupti = calloc(1, sizeof *side->cupti);
  if (!side->paths || !side->cupti) {
    lens_cli_error(CMD, "out of memory");
    return NULL;
  }
  for (size_t i = 0; i < n; i++) side->paths[i] = c->paths[from + i];
  side->n = n;
  side->min_wait_ns = c->min_wait_ns;
  side->no_filter = 1; /* c's selection, applied below: side does not own it */
  struct lens_model *m = lens_trace_cli_load(CMD, side);
  if (m && lens_filter_apply(CMD, &c->filter, m, 0)) {
    lens_model_free(m);
    return NULL;
  }
  return m;
}

int lens_cmd_diff(int argc, char **argv) {
  struct lens_trace_cli c, sa, sb;
  struct diff_opts o = {.threshold = LENS_DIFF_THRESHOLD_DEFAULT, .top = 20, .vs_at = -1, .c = &c};
  memset(&sa, 0, sizeof sa);
  memset(&sb, 0, sizeof sb);
  struct lens_model *ma = NULL, *mb = NULL;
  struct lens_summary s[2];
  struct lens_job j[2];
  int have_s[2] = {0, 0}, have_j[2] = {0, 0};
  int rc = lens_trace_cli_parse(CMD, argc, argv, &c, diff_option, NULL, &o, usage);
  if (rc) {
    rc = c.exit_code;
    goto out;
  }
  if (c.n_cupti) {
    rc = lens_cli_usage(CMD, "--cupti-buffer is not taken here: give each run's buffers inside its traces");
    goto out;
  }
  size_t na = o.vs_at >= 0 ? (size_t)o.vs_at : 1;
  if ((o.vs_at < 0 && c.n != 2) || (o.vs_at >= 0 && (na == 0 || na == c.n))) {
    rc = lens_cli_usage(CMD, "give two runs: A B (a trace or a directory each), or A... --vs B...");
    goto out;
  }
  rc = 1;
  ma = load_side(&c, 0, na, &sa);
  mb = ma ? load_side(&c, na, c.n - na, &sb) : NULL;
  if (!ma || !mb) goto out;
  struct lens_model *ms[2] = {ma, mb};
  struct lens_diff_run runs[2];
  for (int k = 0; k < 2; k++) {
    if (lens_summary_build(ms[k], &s[k], lens_analyze_gpu != NULL)) {
      lens_cli_error(CMD, "out of memory");
      goto out;
    }
    have_s[k] = 1;
    have_j[k] = !lens_job_build(ms[k], &j[k], c.min_wait_ns); /* without it, completion times */
    runs[k] = (struct lens_diff_run){ms[k], &s[k], have_j[k] ? &j[k] : NULL};
  }
  struct lens_diff d;
  if (lens_diff_build(&runs[0], &runs[1], o.threshold, &d)) {
    lens_cli_error(CMD, "out of memory");
    goto out;
  }
  FILE *f = lens_trace_cli_open_out(CMD, &c);
  if (f) {
    if (o.json) lens_diff_print_json(f, &runs[0], &runs[1], &d);
    else lens_diff_print_text(f, &runs[0], &runs[1], &d, o.top);
    rc = lens_trace_cli_close_out(CMD, &c, f, ferror(f));
  }
  lens_diff_free(&d);
out:
  for (int k = 0; k < 2; k++) {
    if (have_j[k]) lens_job_free(&j[k]);
    if (have_s[k]) lens_summary_free(&s[k]);
  }
  if (ma) lens_model_free(ma);
  if (mb) lens_model_free(mb);
  lens_trace_cli_free(&sa);
  lens_trace_cli_free(&sb);
  lens_trace_cli_free(&c);
  return rc;
}
