/* nccl-lens net TRACE|DIR... [--json] [--top N|--all] [-o FILE]: the network view
 * (docs/net.md). A directory stands for the .lens files in it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/filter.h"
#include "cli/format.h"
#include "cli/opt.h"
#include "cli/passes.h"
#include "cli/trace_args.h"
#include "net/net_print.h"
#include "analysis/analyses.h"
#include "analysis/job/job.h"
#include "analysis/job/job_part.h"

#define CMD "net"
#define DEFAULT_TOP 10

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens net [--json] [--top N|--all] [-o FILE] [common options] TRACE.lens|DIR...\n"
             "  The network: per link (rank -> peer, channel, direction) ops, steps, bytes, each step's time split\n"
             "  into the phases of NCCL's ProxyStep state machine (send: GPU, peer credit, wire; receive: waiting\n"
             "  for data, flush, GPU), bandwidth on the wire, step p50/p99; the slowest connections first with\n"
             "  their dominant phase, asymmetry, per collective instance (with the rank that arrived last, by the\n"
             "  job view's rule), NetPlugin QPs. A DIR means the .lens files in it (scheduler probe traces\n"
             "  included: starved steps are flagged, not blamed).\n"
             "  --top N: connections listed in text (default %d, 0 = all). --json: every flagged connection\n"
             "  (standing out, slow, asymmetric), the first ok ones and their links, the instances with the most\n"
             "  step time; \"left_out\" counts the rest (docs/net.md). --all: every one, as text and --json.\n",
          DEFAULT_TOP);
  lens_trace_cli_usage_common(f);
}

struct opts { int json, all; long top; };

static int inst_by_event(const void *a, const void *b) {
  const struct lens_net_inst *x = a, *y = b;
  return (x->event > y->event) - (x->event < y->event);
}

static int net_option(void *ctx, int *i, int argc, char **argv) {
  struct opts *o = ctx;
  if (lens_opt_flag(argv[*i], "--json", 0)) return o->json = 1, 1;
  if (lens_opt_flag(argv[*i], "--all", 0)) return o->all = 1, 1;
  return lens_top_option(CMD, i, argc, argv, &o->top);
}

enum { PASS_NET, PASS_JOB, N_PASSES };

static void *job_map(struct lens_model *m, void *ctx) {
  void *p = lens_job_pass_map(m, ctx);
  if (!p) lens_cli_error(CMD, "out of memory");
  return p;
}

/* The net partials are merged: they go before the job reduce. 0. */
static int free_net_parts(struct lens_passes_out *out) {
  for (size_t g = 0; g < out->n_groups; g++) {
    lens_net_pass_free(out->parts[PASS_NET * out->n_groups + g]);
    out->parts[PASS_NET * out->n_groups + g] = NULL;
  }
  return 0;
}

/* The job view of the groups' partials (moved out of the driver's, freed
 * here) names each instance's last rank in n. 0, -1 out of memory. */
static int arrival(struct lens_net *n, struct lens_passes_out *out) {
  size_t ng = out->n_groups;
  struct lens_job_part *parts = lens_job_pass_take(out->parts + PASS_JOB * ng, ng);
  if (!parts) return -1;
  struct lens_job j;
  memset(&j, 0, sizeof j);
  int rc = lens_job_reduce_consume(parts, ng, &j, 0);
  if (!rc) rc = lens_net_insts_arrival(n, &j);
  lens_job_free(&j);
  for (size_t g = 0; g < ng; g++) lens_job_part_free(&parts[g]);
  free(parts);
  return rc;
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
   * the merge joins a connection's two sides (tools/cli/passes.h); beside
   * them the job view's partials, whose reduce says who arrived last at each
   * instance (its rule, not the network's: lens_net_insts_arrival). */
  /* --json without --all lists the instances with the most step time up to the JSON bound: each group keeps
   * no more (at 10^8 events all of them, 4 M rows, took net --json to 3.3 GB) */
  struct lens_net_map_opts mo = {.top_instances = !o.json  ? LENS_NET_PRINT_TOP_INSTANCES
                                                  : o.all ? 0
                                                          : lens_fmt_json_ok_entries()};
  const struct lens_pass passes[N_PASSES] = {
      [PASS_NET] = {.map = lens_net_pass_map, .free = lens_net_pass_free, .ctx = &mo, .needs = LENS_PASS_STEP_FACTS},
      [PASS_JOB] = {.map = job_map, .free = lens_job_pass_free},
  };
  struct lens_passes_out out;
  int rc = lens_passes_run(CMD, &c, passes, N_PASSES, NULL, &out);
  struct lens_net *n = NULL;
  if (!rc && (!(n = lens_net_merge((struct lens_net_part *const *)out.parts, out.n_groups, out.bases)) ||
              free_net_parts(&out) || arrival(n, &out))) {
    lens_cli_error(CMD, "out of memory");
    rc = 1;
  }
  if (n) {
    FILE *f = lens_trace_cli_open_out(CMD, &c);
    rc = 1;
    if (f) {
      if (o.json && n->insts_top) /* listed in the order --all lists them */
        qsort(n->insts, n->n_insts, sizeof *n->insts, inst_by_event);
      if (o.json) lens_net_print_json_listed(f, out.skel, n, o.all);
      else lens_net_print_text(f, out.skel, n, o.all ? 0 : (int)o.top);
      rc = lens_trace_cli_close_out(CMD, &c, f, 0);
    }
  }
  lens_net_free(n);
  lens_passes_free(passes, &out);
  lens_trace_cli_free(&c);
  return rc;
}
