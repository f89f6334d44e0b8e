/* nccl-lens summary TRACE... [--json] [-o FILE] */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/trace_args.h"
#include "analysis/analyses.h"
#include "job/job_print.h"
#include "summary/summary_print.h"
#include "summary/summary_top.h"
#include "hang/hang_print.h"

#define CMD "summary"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens summary [--json] [--wide] [--top N] [-o FILE] [common options] TRACE.lens|DIR...\n"
             "  Per communicator and operation (func, algo, proto, size): counts, bytes, enqueue and completion\n"
             "  times, algorithm bandwidth, GPU time per channel, proxy activity; then drops, accuracy flags and\n"
             "  starvation.\n"
             "  --json                  the same numbers as one JSON object\n"
             "  --wide                  every column of the text tables (by default they fit 120 columns: no\n"
             "                          per-channel GPU time, proxy or CeSync/CeBatch columns)\n"
             "  --top N                 per communicator, the N operation rows that took the most time (0 = all,\n"
             "                          the default; how many are left out goes to stderr)\n");
  lens_trace_cli_usage_common(f);
}

struct opts { int json, wide; long top; };

static int summary_option(void *ctx, int *i, int argc, char **argv) {
  struct opts *o = ctx;
  if (lens_opt_flag(argv[*i], "--json", 0)) return o->json = 1, 1;
  if (lens_opt_flag(argv[*i], "--wide", 0)) return o->wide = 1, 1;
  return lens_top_option(CMD, i, argc, argv, &o->top);
}

int lens_cmd_summary(int argc, char **argv) {
  struct opts o = {0, 0, 0};
  struct lens_trace_cli c;
  int rc = 1;
  struct lens_model *m = lens_trace_cli_start(CMD, argc, argv, &c, summary_option, NULL, &o, usage, &rc);
  if (!m) return rc;
  struct lens_summary s;
  if (lens_summary_build(m, &s, lens_analyze_gpu != NULL)) {
    lens_cli_error(CMD, "out of memory");
    lens_model_free(m);
    goto done;
  }
  size_t cut = lens_summary_top(&s, (size_t)o.top);
  if (cut) fprintf(stderr, "nccl-lens summary: --top %ld: %zu operation rows left out\n", o.top, cut);
  s.wide = o.wide;
  struct lens_hang_report h; /* the same analysis as `nccl-lens hang`: a stuck collective leads */
  int have_hang = lens_hang_analyze(m, &h) == 0;
  if (have_hang) s.hang = &h;
  FILE *f = lens_trace_cli_open_out(CMD, &c);
  if (f) {
    if (o.json) {
      lens_summary_print_json(f, m, &s);
    } else {
      if (have_hang) lens_hang_print_headline(f, &h);
      struct lens_job j; /* the job view leads whenever a communicator has more than one rank loaded */
      if (!lens_job_build(m, &j, 0)) {
        if (j.comms_multi) {
          fprintf(f, "nccl-lens summary: the job (nccl-lens job has the instances and causes)\n");
          lens_job_print_headline(f, m, &j);
          fputc('\n', f);
        }
        lens_job_free(&j);
      }
      lens_summary_print_text(f, m, &s);
    }
    rc = lens_trace_cli_close_out(CMD, &c, f, 0);
  }
  if (have_hang) lens_hang_free(&h);
  lens_summary_free(&s);
  lens_model_free(m);
done:
  lens_trace_cli_free(&c);
  return rc;
}
