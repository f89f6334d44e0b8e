/* nccl-lens export --format chrome TRACE... [-o out.json] */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/trace_args.h"
#include "export/chrome.h"
#include "export/chrome_export.h"
#include "export/load_traces.h"
#include "export/export_job.h"
#include "export/job_export.h"
#include "analysis/job/job.h"
#include "analysis/job/job_align.h"

#define CMD "export"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-lens export [--format chrome|job|perfetto] [-o OUT.json] [common options] TRACE.lens|DIR...\n"
          "  Writes Chrome Trace Event JSON; open it at https://ui.perfetto.dev or chrome://tracing.\n"
          "  --format chrome      every event of every trace, each host on its own CLOCK_MONOTONIC (default);\n"
          "                       the selection below narrows it as for every command\n"
          "  --format job         the merged job timeline: every host on one job time base (aligned, with\n"
          "                       bounds), ranks grouped by host, a flow through the ranks of each collective\n"
          "                       instance, its last rank marked (docs/timeline.md); --comm, --rank, --since\n"
          "                       or --until without --format imply it. There --comm takes one communicator,\n"
          "                       --since/--until are job time after the job's first event (the origin is in\n"
          "                       otherData.origin_job_ns), and --func is not taken\n"
          "  --format perfetto    the merged job timeline as Perfetto's protobuf (.pftrace; streamed, smaller)\n"
          "  --types T,...        --format chrome: only these event types (kernelch, coll, p2p, proxyop, ...,\n"
          "                       sched; the names of NCCL_LENS_EVENT_MASK)\n"
          "  --split              --format chrome: files OUT.1.json, OUT.2.json, ... by time window, each under\n"
          "                       the 1 GB the Perfetto UI opens (a bigger file is not written: exit status 4)\n"
          "  --force              --format chrome: write the file however big it is\n"
          "  --threads N          host groups read on N threads at once (1..1024, default: the cores)\n");
  lens_trace_cli_usage_common(f);
}

struct xopts {
  const char *format;
  const char *types;               /* --types, per-trace export only */
  struct lens_chrome_export_opts chrome;
  struct lens_job_export_opts job;
  struct lens_trace_cli *c;
};

static int format_option(void *ctx, int *i, int argc, char **argv) {
  struct xopts *o = ctx;
  if (lens_opt_flag(argv[*i], "--split", 0)) return o->chrome.split = 1, 1;
  if (lens_opt_flag(argv[*i], "--force", 0)) return o->chrome.force = 1, 1;
  int r = lens_opt_val(CMD, i, argc, argv, "--format", 0, "chrome, job or perfetto", &o->format);
  if (!r) r = lens_opt_val(CMD, i, argc, argv, "--types", 0, "event types", &o->types);
  const char *v;
  uint64_t n;
  if (!r && (r = lens_opt_val(CMD, i, argc, argv, "--threads", 0, "a number of threads", &v)) > 0) {
    if (lens_cli_parse_u64(v, &n) || n < 1 || n > 1024)
      return lens_cli_usage(CMD, "--threads wants a number of threads 1..1024, not '%s'", v), -1;
    o->chrome.threads = (long)n;
  }
  return r;
}

/* The selection (--comm, --rank, --since, --until) is the shared one
 * (cli/filter.h). Given without --format it means the merged job timeline,
 * which applies it itself on job time; with --format chrome it narrows the
 * traces like every other command's. */
static int format_check(void *ctx) {
  struct xopts *o = ctx;
  const struct lens_filter *fl = &o->c->filter;
  if (!o->format) o->format = lens_filter_any(fl) ? "job" : "chrome";
  if (strcmp(o->format, "chrome") && strcmp(o->format, "job") && strcmp(o->format, "perfetto"))
    return lens_cli_usage(CMD, "unknown format '%s' (chrome, job, perfetto)", o->format), -1;
  o->job.perfetto = !strcmp(o->format, "perfetto");
  if (o->types && strcmp(o->format, "chrome"))
    return lens_cli_usage(CMD, "--types selects from --format chrome only"), -1;
  if ((o->chrome.split || o->chrome.force) && strcmp(o->format, "chrome"))
    return lens_cli_usage(CMD, "--split and --force are for --format chrome (the job timeline is selected by "
                               "--comm, --rank, --since, --until)"), -1;
  if (o->types && lens_chrome_parse_types(o->types, &o->chrome.chrome.types))
    return lens_cli_usage(CMD, "--types %s: unknown type (%s)", o->types, lens_chrome_type_names()), -1;
  if (!strcmp(o->format, "chrome")) return 0;
  o->c->no_filter = 1;
  if (fl->n_funcs) return lens_cli_usage(CMD, "--func selects from --format chrome only (the job timeline has every operation)"), -1;
  if (fl->n_comms > 1) return lens_cli_usage(CMD, "the job timeline takes one --comm"), -1;
  o->job.ranks = fl->ranks;
  o->job.n_ranks = fl->n_ranks;
  o->job.have_since = fl->have_since, o->job.since_ns = (int64_t)fl->since_ns;
  o->job.have_until = fl->have_until, o->job.until_ns = (int64_t)fl->until_ns;
  return 0;
}

int lens_cmd_export(int argc, char **argv) {
  struct lens_trace_cli c;
  struct xopts o = {.c = &c};
  int rc = 1;
  if (lens_trace_cli_parse(CMD, argc, argv, &c, format_option, format_check, &o, usage)) {
    rc = c.exit_code;
    lens_trace_cli_free(&c);
    return rc;
  }
  if (!strcmp(o.format, "chrome")) {
    rc = lens_chrome_export(&c, &o.chrome);
    lens_trace_cli_free(&c);
    return rc;
  }
  rc = lens_job_export_run(&c, &o.job, o.chrome.threads);
  lens_trace_cli_free(&c);
  return rc;
}
