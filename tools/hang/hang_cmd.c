/* nccl-lens hang TRACE|DIR... [--json] [-o FILE]: where a hung job's ranks
 * part and what each stuck rank waits for (tools/analysis/hang/hang_analysis.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/passes.h"
#include "cli/trace_args.h"
#include "hang/hang_print.h"
#include "analysis/hang/hang_analysis.h"

#define CMD "hang"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens hang [--json] [--all] [-o FILE] [common options] TRACE.lens|DIR...\n"
             "  Hang diagnosis (traces cut by a kill are fine): per communicator, the last sequence number each\n"
             "  rank started and completed, the collective where the ranks part and the ranks that never entered\n"
             "  it; per stuck rank the channels whose kernel never stopped and the proxy ops in flight with the\n"
             "  step, the state it sits in and the peer it waits for; whether each proxy thread still recorded.\n"
             "  --json                  one JSON object\n"
             "  --all                   a line per rank, channel, op and proxy thread (by default, past 16 lines\n"
             "                          a section's alike ones share a line, their ranks as ranges)\n"
             "  Exit status: 0 nothing stuck, 3 a collective is stuck, 1 error, 2 usage.\n");
  lens_trace_cli_usage_common(f);
}

struct hang_opts { int json, all; };

static int hang_option(void *ctx, int *i, int argc, char **argv) {
  (void)argc;
  struct hang_opts *o = ctx;
  if (lens_opt_flag(argv[*i], "--json", 0)) return o->json = 1, 1;
  if (lens_opt_flag(argv[*i], "--all", 0)) return o->all = 1, 1;
  return 0;
}

int lens_cmd_hang(int argc, char **argv) {
  struct hang_opts o = {0};
  struct lens_trace_cli c;
  int r = lens_trace_cli_parse(CMD, argc, argv, &c, hang_option, NULL, &o, usage);
  if (r) {
    r = c.exit_code;
    lens_trace_cli_free(&c);
    return r;
  }
  /* Host group by host group (tools/cli/passes.h); the merge joins each
   * communicator's ranks and judges a silent proxy against its peers' sends
   * recorded on other hosts. */
  const struct lens_pass pass = {.map = lens_hang_pass_map, .free = lens_hang_pass_free};
  struct lens_passes_out out;
  int rc = lens_passes_run(CMD, &c, &pass, 1, NULL, &out); /* a DIR stands for its .lens files */
  struct lens_hang_report h;
  if (!rc && lens_hang_merge((struct lens_hang_part *const *)out.parts, out.n_groups, out.bases, &h) != 0) {
    lens_cli_error(CMD, "out of memory");
    rc = 1;
  } else if (!rc) {
    FILE *f = lens_trace_cli_open_out(CMD, &c);
    rc = 1;
    if (f) {
      if (o.json) lens_hang_print_json(f, out.skel, &h);
      else lens_hang_print_text(f, out.skel, &h, o.all);
      rc = lens_trace_cli_close_out(CMD, &c, f, 0);
      if (!rc && h.n_stuck_comms) rc = LENS_HANG_EXIT_STUCK; /* docs/hang.md: 0 nothing stuck, 3 stuck */
    }
    lens_hang_free(&h);
  }
  lens_passes_free(&pass, &out);
  lens_trace_cli_free(&c);
  return rc;
}
