/* nccl-lens export --format chrome TRACE... [-o out.json] */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/trace_args.h"
#include "export/chrome.h"
#include "export/job_export.h"
#include "reader/job.h"
#include "reader/job_align.h"

#define CMD "export"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-lens export [--format chrome|job|perfetto] [-o OUT.json] [--cupti-buffer FILE]... [--min-wait-us N]\n"
          "                        [--comm ID] [--ranks LIST] [--since S] [--until S] TRACE.lens...\n"
          "  Writes Chrome Trace Event JSON; open it at https://ui.perfetto.dev or chrome://tracing.\n"
          "  -o, --output FILE    output file (default: standard output)\n"
          "  --format chrome      every event of every trace, each host on its own CLOCK_MONOTONIC (default)\n"
          "  --format job         the merged job timeline: every host on one job time base (aligned, with\n"
          "                       bounds), ranks grouped by host, a flow through the ranks of each collective\n"
          "                       instance, its last rank marked (docs/timeline.md); the options below imply it\n"
          "  --format perfetto    the merged job timeline as Perfetto's protobuf (.pftrace; streamed, smaller)\n"
          "  --comm ID            only communicator ID (hex, as summary/job print it)\n"
          "  --ranks LIST         only these ranks, e.g. 0-7,64\n"
          "  --since S, --until S only events overlapping this window, seconds after the job's first event\n"
          "                       (job time; the origin is in otherData.origin_job_ns)\n"
          "  --types T,...        --format chrome: only these event types (kernelch, coll, p2p, proxyop, ...,\n"
          "                       sched; the names of NCCL_LENS_EVENT_MASK)\n"
          "  --cupti-buffer FILE  raw CUPTI activity buffer saved on the GPU machine (repeatable)\n"
          "  --min-wait-us N      starvation: ignore scheduler waits shorter than N us (default 0)\n"
          "  --tag-names T:NAME,...  names of user tags (NCCL 2.31+), e.g. 1:forward,2:backward\n"
          "                       (default: NCCL_LENS_TAG_NAMES)\n");
}

struct xopts {
  const char *format;
  const char *types;               /* --types, per-trace export only */
  struct lens_chrome_opts chrome;
  struct lens_job_export_opts job;
  uint8_t *ranks;
  int selection; /* --comm/--ranks/--since/--until given: they imply --format job */
};

static int parse_seconds(const char *v, int64_t *ns) {
  char *end;
  double d = strtod(v, &end);
  if (end == v || *end || !isfinite(d) || d < 0 || d > 1e7) return -1;
  *ns = (int64_t)llround(d * 1e9);
  return 0;
}

/* --format and the merged timeline's selection. */
static int format_option(void *ctx, int *i, int argc, char **argv) {
  struct xopts *o = ctx;
  const char *a = argv[*i];
  int known = !strcmp(a, "--format") || !strcmp(a, "--types") || !strcmp(a, "--comm") || !strcmp(a, "--ranks") || !strcmp(a, "--since") ||
              !strcmp(a, "--until");
  if (!known) return 0;
  if (*i + 1 >= argc) return -lens_cli_error(CMD, "%s needs a value", a);
  const char *v = argv[++*i];
  if (!strcmp(a, "--format")) {
    o->format = v;
    return 1;
  }
  if (!strcmp(a, "--types")) {
    o->types = v;
    return 1;
  }
  o->selection = 1;
  if (!strcmp(a, "--comm")) {
    char *end;
    o->job.comm_id = strtoull(v, &end, 16);
    if (end == v || *end) return -lens_cli_error(CMD, "--comm needs a hex communicator id, e.g. 0x1a2b");
    o->job.have_comm = 1;
  } else if (!strcmp(a, "--ranks")) {
    free(o->ranks);
    o->ranks = lens_job_export_parse_ranks(v, &o->job.n_ranks);
    if (!o->ranks) return -lens_cli_error(CMD, "--ranks needs a list like 0-7,64");
    o->job.ranks = o->ranks;
  } else if (!strcmp(a, "--since")) {
    if (parse_seconds(v, &o->job.since_ns)) return -lens_cli_error(CMD, "--since needs seconds >= 0");
    o->job.have_since = 1;
  } else {
    if (parse_seconds(v, &o->job.until_ns)) return -lens_cli_error(CMD, "--until needs seconds >= 0");
    o->job.have_until = 1;
  }
  return 1;
}

static int format_check(void *ctx) {
  struct xopts *o = ctx;
  if (!o->format) o->format = o->selection ? "job" : "chrome";
  if (strcmp(o->format, "chrome") && strcmp(o->format, "job") && strcmp(o->format, "perfetto"))
    return -lens_cli_error(CMD, "unknown format '%s' (chrome, job, perfetto)", o->format);
  o->job.perfetto = !strcmp(o->format, "perfetto");
  if (o->types && strcmp(o->format, "chrome"))
    return -lens_cli_error(CMD, "--types selects from --format chrome only");
  if (o->types && lens_chrome_parse_types(o->types, &o->chrome.types))
    return -lens_cli_error(CMD, "--types %s: unknown type (%s)", o->types, lens_chrome_type_names());
  if (!strcmp(o->format, "chrome") && o->selection)
    return -lens_cli_error(CMD, "--comm, --ranks, --since and --until select the job timeline (--format job)");
  if (o->job.have_since && o->job.have_until && o->job.until_ns < o->job.since_ns)
    return -lens_cli_error(CMD, "--until is before --since");
  return 0;
}

/* The merged job timeline: the job view, the alignment, then the document. */
static int export_job(FILE *f, const struct lens_model *m, const struct xopts *o, struct lens_job_export_counts *cnt) {
  struct lens_job j;
  struct lens_align a;
  if (lens_job_build(m, &j, 0)) return -1;
  if (lens_align_build(m, &j, NULL, &a)) {
    lens_job_free(&j);
    return -1;
  }
  int rc = lens_export_job(f, m, &j, &a, &o->job, cnt);
  if (cnt->procs_unaligned)
    fprintf(stderr, "nccl-lens export: %zu processes left out: their host could not be placed on the job time base\n",
            cnt->procs_unaligned);
  lens_align_free(&a);
  lens_job_free(&j);
  return rc;
}

int lens_cmd_export(int argc, char **argv) {
  struct xopts o = {0};
  struct lens_trace_cli c;
  int rc = 1;
  struct lens_model *m = lens_trace_cli_start(CMD, argc, argv, &c, format_option, format_check, &o, usage, &rc);
  if (!m) {
    free(o.ranks);
    return rc;
  }
  FILE *f = lens_trace_cli_open_out(CMD, &c);
  if (!f) {
    lens_model_free(m);
    goto done;
  }
  struct lens_chrome_counts cnt;
  struct lens_job_export_counts jc;
  int job = !strcmp(o.format, "job") || !strcmp(o.format, "perfetto");
  int wr = job ? export_job(f, m, &o, &jc) : lens_export_chrome_sel(f, m, &o.chrome, &cnt);
  if (lens_trace_cli_close_out(CMD, &c, f, wr)) {
    /* A half-written trace would load as a broken one: remove it, but only
     * a regular file (never a device or a pipe someone pointed -o at). */
    struct stat st;
    if (lens_trace_cli_out_is_file(&c) && lstat(c.out, &st) == 0 && S_ISREG(st.st_mode)) unlink(c.out);
  } else {
    if (f != stdout && job)
      printf("wrote %s: the job on one time base: %zu slices, %zu instances tied by %zu flow events, %zu last ranks "
             "marked\n",
             c.out, jc.slices, jc.instances_flowed, jc.flows, jc.last_marked);
    else if (f != stdout)
      printf("wrote %s: %zu events of %zu processes (%zu operations, %zu GPU channel slices, %zu starvation)\n", c.out,
             m->n_events, m->n_procs, cnt.ops, cnt.gpu_slices, cnt.starvation);
    rc = 0;
  }
  lens_model_free(m);
done:
  free(o.ranks);
  lens_trace_cli_free(&c);
  return rc;
}
