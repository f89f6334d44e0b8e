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
          "                       sched; the names of NCCL_LENS_EVENT_MASK)\n");
  lens_trace_cli_usage_common(f);
}

struct xopts {
  const char *format;
  const char **into; size_t n_into; /* --into: Kineto files */
  int into_open;                    /* the arguments after --into that name .json files are its */
  const char *out_dir;              /* --format kineto: -o OUTDIR */
  const char *types;               /* --types, per-trace export only */
  struct lens_chrome_opts chrome;
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
  int r = lens_opt_val(CMD, i, argc, argv, "--format", 0, "chrome, job, perfetto or kineto", &o->format);
  if (!r) r = lens_opt_val(CMD, i, argc, argv, "--types", 0, "event types", &o->types);
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
  if (o->types && lens_chrome_parse_types(o->types, &o->chrome.types))
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

/* --comm ID|NAME for the job timeline: its id, found in the model. 0, or 2
 * after one usage error line. */
static int job_comm(const struct lens_model *m, struct xopts *o) {
  const struct lens_filter *fl = &o->c->filter;
  if (!fl->n_comms) return 0;
  const char *want = fl->comms[0];
  for (size_t i = 0; i < m->n_comms; i++) {
    char *end;
    const char *h = strncasecmp(want, "0x", 2) ? want : want + 2;
    uint64_t id = strtoull(h, &end, 16);
    if ((m->comms[i].name[0] && !strcmp(m->comms[i].name, want)) || (end != h && !*end && id == m->comms[i].comm_id)) {
      o->job.have_comm = 1;
      o->job.comm_id = m->comms[i].comm_id;
      return 0;
    }
  }
  return lens_cli_usage(CMD, "--comm %s: no such communicator in these traces", want);
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
  struct lens_trace_cli c;
  struct xopts o = {.c = &c};
  int rc = 1;
  if ((rc = lens_trace_cli_parse(CMD, argc, argv, &c, format_option, format_check, &o, usage))) {
    rc = c.exit_code;
    goto done;
  }
  if (!strcmp(o.format, "kineto")) {
    rc = 1;
    char **owned = NULL;
    size_t n_owned = 0;
    if (!expand_into(&o, &owned, &n_owned) && !lens_trace_cli_expand_dirs(CMD, &c)) {
      struct lens_kineto_merge_opts ko = {o.into, o.n_into, c.paths, c.n, o.out_dir};
      rc = lens_export_kineto(CMD, &ko);
    }
    for (size_t k = 0; k < n_owned; k++) free(owned[k]);
    free(owned);
    goto done;
  }
  struct lens_model *m = lens_trace_cli_load(CMD, &c);
  if (!m) {
    rc = c.exit_code;
    goto done;
  }
  if ((rc = job_comm(m, &o))) {
    lens_model_free(m);
    goto done;
  }
  rc = 1;
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
    else if (f != stdout) {
      size_t ce = 0; /* copy-engine collectives: exported as slices with their CE events, counted apart */
      for (size_t i = 0; i < m->n_events; i++) ce += m->events[i].type == LENS_T_CE_COLL;
      char ce_txt[64] = "";
      if (ce) snprintf(ce_txt, sizeof ce_txt, ", %zu copy-engine (CE) collectives", ce);
      printf("wrote %s: %zu events of %zu processes (%zu operations%s, %zu GPU channel slices, %zu starvation)\n",
             c.out, m->n_events, m->n_procs, cnt.ops, ce_txt, cnt.gpu_slices, cnt.starvation);
    }
    rc = 0;
  }
  lens_model_free(m);
done:
  free(o.into);
  lens_trace_cli_free(&c);
  return rc;
}
