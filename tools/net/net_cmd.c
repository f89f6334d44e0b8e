/* nccl-lens net TRACE|DIR... [--json] [--top N|--all] [-o FILE]: the network view
 * (docs/net.md). A directory stands for the .lens files in it. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/filter.h"
#include "cli/opt.h"
#include "cli/passes.h"
#include "cli/trace_args.h"
#include "net/net_print.h"
#include "analysis/analyses.h"

#define CMD "net"
#define DEFAULT_TOP 10

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens net [--json] [--top N|--all] [-o FILE] [common options] TRACE.lens|DIR...\n"
             "  The network: per link (rank -> peer, channel, direction) ops, steps, bytes, each step's time split\n"
             "  into the phases of NCCL's ProxyStep state machine (send: GPU, peer credit, wire; receive: waiting\n"
             "  for data, flush, GPU), bandwidth on the wire, step p50/p99; the slowest connections first with\n"
             "  their dominant phase, asymmetry, per collective instance, NetPlugin QPs. A DIR means the .lens\n"
             "  files in it (scheduler probe traces included: starved steps are flagged, not blamed).\n"
             "  --top N: connections listed in text (default %d, 0 = all). --json: every flagged connection\n"
             "  (standing out, slow, asymmetric), the first ok ones and their links, the instances with the most\n"
             "  step time; \"left_out\" counts the rest (docs/net.md). --all: every one, as text and --json.\n",
          DEFAULT_TOP);
  lens_trace_cli_usage_common(f);
}

struct opts { int json, all; long top; };

static int net_option(void *ctx, int *i, int argc, char **argv) {
  struct opts *o = ctx;
  if (lens_opt_flag(argv[*i], "--json", 0)) return o->json = 1, 1;
  if (lens_opt_flag(argv[*i], "--all", 0)) return o->all = 1, 1;
  return lens_top_option(CMD, i, argc, argv, &o->top);
}

int lens_cmd_net(int argc, char **argv) {
  struct opts o = {0, 0, DEFAULT_TOP};
  struct lens_trace_cli c; /* a DIR stands for its .lens files (lens_trace_cli_expand_dirs) */
  if (lens_trace_cli_parse(CMD, argc, argv, &c, net_option, NULL, &o, usage)) {
    int rc = c.exit_code;
    lens_trace_cli_free(&c);
    return rc;
  }
  /* Host group by host group: each group's links, steps and instances, then
   * the merge joins a connection's two sides (tools/cli/passes.h). */
  struct lens_net_map_opts mo = {.top_instances = o.json ? 0 : LENS_NET_PRINT_TOP_INSTANCES};
  const struct lens_pass pass = {.map = lens_net_pass_map, .free = lens_net_pass_free, .ctx = &mo,
                                 .needs = LENS_PASS_STEP_FACTS};
  struct lens_passes_out out;
  int rc = lens_passes_run(CMD, &c, &pass, 1, NULL, &out);
  struct lens_net *n = NULL;
  if (!rc && !(n = lens_net_merge((struct lens_net_part *const *)out.parts, out.n_groups, out.bases))) {
    lens_cli_error(CMD, "out of memory");
    rc = 1;
  }
  if (n) {
    FILE *f = lens_trace_cli_open_out(CMD, &c);
    rc = 1;
    if (f) {
      if (o.json) lens_net_print_json_listed(f, out.skel, n, o.all);
      else lens_net_print_text(f, out.skel, n, o.all ? 0 : (int)o.top);
      rc = lens_trace_cli_close_out(CMD, &c, f, 0);
    }
  }
  lens_net_free(n);
  lens_passes_free(&pass, &out);
  lens_trace_cli_free(&c);
  return rc;
}
