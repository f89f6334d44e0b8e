/* nccl-lens export --format chrome TRACE... [-o out.json]
 * nccl-lens export --format kineto --into RANKFILE... TRACE...|DIR -o OUTDIR */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
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
#include "export/kineto_merge.h"
#include "analysis/job/job.h"
#include "analysis/job/job_align.h"

#define CMD "export"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-lens export [--format chrome|job|perfetto] [-o OUT.json] [common options] TRACE.lens|DIR...\n"
          "       nccl-lens export --format kineto --into RANK.json[.gz]...|KINETO_DIR TRACE.lens|DIR... -o OUTDIR\n"
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
          "  --format kineto      merge into torch.profiler's own per-rank files (--into: the .json or .json.gz\n"
          "                       files that follow it, or a directory of them): each is copied into OUTDIR\n"
          "                       with NCCL's channels, proxy work, what ran on each NCCL kernel and flows\n"
          "                       added, every original event kept as it was; a file whose process has no\n"
          "                       trace is copied unchanged, with the reason (docs/pytorch.md). --into\n"
          "                       implies it\n"
          "  --types T,...        --format chrome: only these event types (kernelch, coll, p2p, proxyop, ...,\n"
          "                       sched; the names of NCCL_LENS_EVENT_MASK)\n"
          "  --split              --format chrome: files OUT.1.json, OUT.2.json, ... by time window, each under\n"
          "                       the 1 GB the Perfetto UI opens (a bigger file is not written: exit status 4)\n"
          "  --force              --format chrome|job: write the JSON however big it is (over the 1 GB the\n"
          "                       Perfetto UI opens, nothing is written: exit status 4)\n"
          "  --threads N          host groups (--format kineto: files) read on N threads at once (1..1024,\n"
          "                       default: the cores)\n");
  lens_trace_cli_usage_common(f);
}

struct xopts {
  const char *format;
  const char **into; size_t n_into; /* --into: Kineto files */
  int into_open;                    /* the arguments after --into that name .json files are its */
  const char *out_dir;              /* --format kineto: -o OUTDIR */
  const char *types;               /* --types, per-trace export only */
  struct lens_chrome_export_opts chrome;
  struct lens_job_export_opts job;
  struct lens_trace_cli *c;
};

static int kineto_name(const char *a) {
  size_t n = strlen(a);
  return a[0] != '-' && ((n > 5 && !strcmp(a + n - 5, ".json")) || (n > 8 && !strcmp(a + n - 8, ".json.gz")));
}

static int add_into(struct xopts *o, const char *a) {
  const char **n = realloc(o->into, (o->n_into + 1) * sizeof *n);
  if (!n) return lens_cli_error(CMD, "out of memory"), -1;
  o->into = n;
  o->into[o->n_into++] = a;
  return 1;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* --into's directories replaced by the .json and .json.gz files in them, sorted. 0, or 1 after an error line. */
static int expand_into(struct xopts *o, char ***owned, size_t *n_owned) {
  const char **out = NULL;
  size_t n = 0;
  for (size_t i = 0; i < o->n_into; i++) {
    struct stat st;
    if (stat(o->into[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
      const char **no = realloc(out, (n + 1) * sizeof *no);
      if (!no) goto oom;
      out = no;
      out[n++] = o->into[i];
      continue;
    }
    DIR *d = opendir(o->into[i]);
    if (!d) {
      free(out);
      return lens_cli_error(CMD, "cannot read directory %s", o->into[i]);
    }
    size_t first = n;
    struct dirent *de;
    while ((de = readdir(d))) {
      if (!kineto_name(de->d_name)) continue;
      size_t len = strlen(o->into[i]) + strlen(de->d_name) + 2;
      char *p = malloc(len);
      char **nown = p ? realloc(*owned, (*n_owned + 1) * sizeof *nown) : NULL;
      const char **no = nown ? realloc(out, (n + 1) * sizeof *no) : NULL;
      if (nown) *owned = nown;
      if (!no) {
        free(p);
        closedir(d);
        goto oom;
      }
      out = no;
      snprintf(p, len, "%s/%s", o->into[i], de->d_name);
      (*owned)[(*n_owned)++] = p;
      out[n++] = p;
    }
    closedir(d);
    if (n == first) {
      free(out);
      return lens_cli_error(CMD, "no .json or .json.gz files in directory %s", o->into[i]);
    }
    qsort(out + first, n - first, sizeof *out, by_name);
  }
  free(o->into);
  o->into = out;
  o->n_into = n;
  return 0;
oom:
  free(out);
  return lens_cli_error(CMD, "out of memory");
}

static int format_option(void *ctx, int *i, int argc, char **argv) {
  struct xopts *o = ctx;
  const char *a = argv[*i];
  if (!strcmp(a, "--into")) {
    struct stat st;
    if (*i + 1 < argc && !kineto_name(argv[*i + 1]) && stat(argv[*i + 1], &st) == 0 && S_ISDIR(st.st_mode)) {
      (*i)++; /* --into DIR: the Kineto files in it (tensorboard_trace_handler's directory) */
      return add_into(o, argv[*i]);
    }
    if (*i + 1 >= argc || !kineto_name(argv[*i + 1]))
      return lens_cli_usage(CMD, "--into needs the Kineto files (.json or .json.gz) or their directory after it"), -1;
    o->into_open = 1;
    return 1;
  }
  if (!strncmp(a, "--into=", 7)) return add_into(o, a + 7);
  if (o->into_open && kineto_name(a)) return add_into(o, a);
  o->into_open = 0;
  if (lens_opt_flag(a, "--split", 0)) return o->chrome.split = 1, 1;
  if (lens_opt_flag(a, "--force", 0)) return o->chrome.force = 1, 1;
  int r = lens_opt_val(CMD, i, argc, argv, "--format", 0, "chrome, job, perfetto or kineto", &o->format);
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
  if (!o->format) o->format = o->n_into ? "kineto" : lens_filter_any(fl) ? "job" : "chrome";
  if (strcmp(o->format, "chrome") && strcmp(o->format, "job") && strcmp(o->format, "perfetto") &&
      strcmp(o->format, "kineto"))
    return lens_cli_usage(CMD, "unknown format '%s' (chrome, job, perfetto, kineto)", o->format), -1;
  if (o->n_into && strcmp(o->format, "kineto")) return lens_cli_usage(CMD, "--into is for --format kineto"), -1;
  if (!strcmp(o->format, "kineto")) {
    if (!o->n_into) return lens_cli_usage(CMD, "--format kineto needs --into RANK.json[.gz]..."), -1;
    if (!lens_trace_cli_out_is_file(o->c)) return lens_cli_usage(CMD, "--format kineto needs -o OUTDIR"), -1;
    if (o->types || lens_filter_any(fl) || fl->n_funcs || o->c->n_cupti)
      return lens_cli_usage(CMD, "--format kineto takes no selection, --types or --cupti-buffer: it merges every "
                                 "kernel of the file"), -1;
    /* -o names a directory here (it may exist): the shared check of an output file is not for it */
    o->out_dir = o->c->out;
    o->c->out = NULL;
    return 0;
  }
  o->job.perfetto = !strcmp(o->format, "perfetto");
  if (o->types && strcmp(o->format, "chrome"))
    return lens_cli_usage(CMD, "--types selects from --format chrome only"), -1;
  if (o->chrome.split && strcmp(o->format, "chrome"))
    return lens_cli_usage(CMD, "--split is for --format chrome (the job timeline is selected by --comm, --rank, "
                               "--since, --until)"), -1;
  if (o->chrome.force && strcmp(o->format, "chrome") && strcmp(o->format, "job"))
    return lens_cli_usage(CMD, "--force is for the JSON formats, chrome and job (Perfetto's protobuf opens whole)"),
           -1;
  o->job.force = o->chrome.force;
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
    free(o.into);
    lens_trace_cli_free(&c);
    return rc;
  }
  if (!strcmp(o.format, "kineto")) {
    rc = 1;
    char **owned = NULL;
    size_t n_owned = 0;
    if (!expand_into(&o, &owned, &n_owned) && !lens_trace_cli_expand_dirs(CMD, &c)) {
      struct lens_kineto_merge_opts ko = {o.into, o.n_into, c.paths, c.n, o.out_dir, o.chrome.threads};
      rc = lens_export_kineto(CMD, &ko);
    }
    for (size_t k = 0; k < n_owned; k++) free(owned[k]);
    free(owned);
    free(o.into);
    lens_trace_cli_free(&c);
    return rc;
  }
  free(o.into);
  if (!strcmp(o.format, "chrome")) {
    rc = lens_chrome_export(&c, &o.chrome);
    lens_trace_cli_free(&c);
    return rc;
  }
  rc = lens_job_export_run(&c, &o.job, o.chrome.threads);
  lens_trace_cli_free(&c);
  return rc;
}
