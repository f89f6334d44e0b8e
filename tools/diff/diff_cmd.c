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
#include "summary/summary_read.h"

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
 * read), the shared options and selection, no CUPTI buffers (whose run
 * would they be?); read as summary reads a run (summary_read.h). */
static int read_side(const struct lens_trace_cli *c, size_t from, size_t n, struct lens_summary_run *r,
                     const char *label) {
  struct lens_trace_cli side;
  memset(&side, 0, sizeof side);
  memset(r, 0, sizeof *r);
  side.paths = calloc(n + 1, sizeof *side.paths);
  side.cupti = calloc(1, sizeof *side.cupti);
  if (!side.paths || !side.cupti) {
    lens_trace_cli_free(&side);
    return lens_cli_error(CMD, "out of memory"), 1;
  }
  for (size_t i = 0; i < n; i++) side.paths[i] = c->paths[from + i];
  side.n = n;
  side.min_wait_ns = c->min_wait_ns;
  side.filter = c->filter; /* c's: taken back before side is freed */
  side.progress_label = label;
  int rc = lens_summary_read(CMD, &side, c->min_wait_ns, 0, r);
  memset(&side.filter, 0, sizeof side.filter);
  lens_trace_cli_free(&side);
  return rc;
}

int lens_cmd_diff(int argc, char **argv) {
  struct lens_trace_cli c;
  struct diff_opts o = {.threshold = LENS_DIFF_THRESHOLD_DEFAULT, .top = 20, .vs_at = -1, .c = &c};
  struct lens_summary_run run[2];
  memset(run, 0, sizeof run);
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
  /* Run A is slimmed to what the comparison reads before run B is read:
   * its rows per rank are not alive beside B's reading. */
  if ((rc = read_side(&c, 0, na, &run[0], "reading run A (host groups)"))) goto out;
  lens_summary_run_slim(&run[0]);
  if ((rc = read_side(&c, na, c.n - na, &run[1], "reading run B (host groups)"))) goto out;
  lens_summary_run_slim(&run[1]);
  rc = 1;
  struct lens_diff_run runs[2];
  for (int k = 0; k < 2; k++) runs[k] = (struct lens_diff_run){run[k].out.skel, &run[k].s, &run[k].j};
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
  for (int k = 0; k < 2; k++) lens_summary_run_free(&run[k]);
  lens_trace_cli_free(&c);
  return rc;
}
