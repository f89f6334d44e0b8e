/* nccl-lens summary TRACE... [--json] [-o FILE] */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/trace_args.h"
#include "job/job_print.h"
#include "summary/summary_print.h"
#include "summary/summary_read.h"
#include "hang/hang_print.h"
#include "summary/summary_top.h"

#define CMD "summary"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens summary [--json] [--wide] [--top N] [--all] [-o FILE] [common options] TRACE.lens|DIR...\n"
             "  Per communicator and operation (func, algo, proto, size): counts, bytes, enqueue and completion\n"
             "  times, algorithm bandwidth, GPU time per channel, proxy activity; then drops, accuracy flags and\n"
             "  starvation.\n"
             "  --json                  the same numbers as one JSON object\n"
             "  --wide                  every column of the text tables (by default they fit 120 columns: no\n"
             "                          per-channel GPU time, proxy or CeSync/CeBatch columns)\n"
             "  --top N                 per communicator, the N operation rows that took the most time (0 = all,\n"
             "                          the default; how many are left out goes to stderr)\n"
             "  --all                   every row of the proxy-thread, drops, clocks and hosts tables (by default\n"
             "                          the 16 that say most; a line says how many more there are)\n");
  lens_trace_cli_usage_common(f);
}

struct opts { int json, wide, all; long top; };

static int summary_option(void *ctx, int *i, int argc, char **argv) {
  struct opts *o = ctx;
  if (lens_opt_flag(argv[*i], "--json", 0)) return o->json = 1, 1;
  if (lens_opt_flag(argv[*i], "--wide", 0)) return o->wide = 1, 1;
  if (lens_opt_flag(argv[*i], "--all", 0)) return o->all = 1, 1;
  return lens_top_option(CMD, i, argc, argv, &o->top);
}

int lens_cmd_summary(int argc, char **argv) {
  struct opts o = {0, 0, 0, 0};
  struct lens_trace_cli c;
  int rc = lens_trace_cli_parse(CMD, argc, argv, &c, summary_option, NULL, &o, usage);
  if (rc) {
    rc = c.exit_code;
    lens_trace_cli_free(&c);
    return rc;
  }
  struct lens_summary_run r;
  rc = lens_summary_read(CMD, &c, 0, LENS_SUMMARY_READ_HANG, &r);
  if (rc) goto done;
  struct lens_summary *s = &r.s;
  size_t cut = lens_summary_top(s, (size_t)o.top);
  if (cut) fprintf(stderr, "nccl-lens summary: --top %ld: %zu operation rows left out\n", o.top, cut);
  s->wide = o.wide;
  s->all = o.all;
  s->hang = r.have_hang ? &r.hang : NULL; /* the same analysis as `nccl-lens hang`: a stuck collective leads */
  struct lens_summary_align al = {r.job_skel, &r.al};
  rc = 1;
  FILE *f = lens_trace_cli_open_out(CMD, &c);
  if (f) {
    if (o.json) {
      lens_summary_print_json(f, r.out.skel, s, &al);
    } else {
      if (r.have_hang) lens_hang_print_headline(f, &r.hang);
      /* the job view leads whenever a communicator has more than one rank loaded */
      if (r.j.comms_multi) {
        fprintf(f, "nccl-lens summary: the job (nccl-lens job has the instances and causes)\n");
        lens_job_print_headline(f, r.job_skel, &r.j);
        fputc('\n', f);
      }
      lens_summary_print_text(f, r.out.skel, s, &al);
    }
    rc = lens_trace_cli_close_out(CMD, &c, f, 0);
  }
done:
  lens_summary_run_free(&r);
  lens_trace_cli_free(&c);
  return rc;
}
