/* nccl-lens validate TRACE... [--cupti-buffer FILE...] [--json] [--limit N]
 *
 * Joins CUPTI kernel records to NCCL's launches, fits per-GPU clock maps
 * and says how far NCCL's kernel timing (KernelCh pTimers) can be trusted:
 * per kernel and per channel whether the span sits inside the kernel CUPTI
 * measured, how late the proxy thread noticed it, where its time came from,
 * and whether the 64-slot timer ring was overrun. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/trace_args.h"
#include "export/load_traces.h"
#include "analysis/analyses.h"
#include "analysis/gpu/gpu_analysis.h"
#include "validate_print.h"

static void load_progress(uint64_t done, uint64_t total) {
  lens_cli_progress("loading traces (MiB)", (long)(done >> 20), (long)(total >> 20));
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-lens validate [--json] [--limit N] [-o FILE] [common options] TRACE.lens|DIR...\n"
          "  --json               machine-readable output\n"
          "  --limit N            list at most N of each list: clock maps, launches, channels without a launch\n"
          "                       (default: 20 as text, all with --json; totals and flags always cover all)\n"
          "  The text starts with the verdict.\n");
  lens_trace_cli_usage_common(f);
}

/* --json and --limit; the rest is the shared command line (cli/trace_args.h). */
static int validate_option(void *ctx, int *i, int argc, char **argv) {
  struct lens_validate_opts *o = ctx;
  const char *v;
  if (lens_opt_flag(argv[*i], "--json", 0)) return o->json = 1, 1;
  int r = lens_opt_val("validate", i, argc, argv, "--limit", 0, "a number of launches", &v);
  if (r > 0) {
    char *end;
    o->limit = strtol(v, &end, 10);
    if (end == v || *end || o->limit < 0)
      return lens_cli_usage("validate", "--limit wants a number of launches >= 0, not '%s'", v), -1;
  }
  return r;
}

int lens_cmd_validate(int argc, char **argv) {
  struct lens_validate_opts o = {.json = 0, .limit = LENS_VALIDATE_LIMIT_DEFAULT};
  struct lens_trace_cli c;
  int rc = 1;
  if (lens_trace_cli_parse("validate", argc, argv, &c, validate_option, NULL, &o, usage)) {
    rc = c.exit_code;
    goto out;
  }
  if (lens_trace_cli_expand_dirs("validate", &c)) goto out;
  const char *const *traces = c.paths, *const *buffers = c.cupti;
  size_t n_traces = c.n, n_buffers = c.n_cupti;
  char err[512] = "";
  struct lens_model *m = lens_model_load(traces, n_traces, err, sizeof(err), load_progress);
  lens_cli_progress(NULL, -1, 0);
  if (!m) {
    rc = lens_cli_error("validate", "%s", err[0] ? err : "cannot load traces");
    goto out;
  }
  lens_trace_cli_name_inputs(&c, m); /* "-", x.lens.gz: as the user named them */
  lens_cli_load_notes("validate", m);
  for (size_t i = 0; i < n_buffers; i++)
    if (lens_model_add_cupti_file(m, buffers[i], err, sizeof(err))) {
      rc = lens_cli_error("validate", "%s", err);
      goto free_model;
    }
  /* Progress goes on after loading (on a terminal): the analysis and the
   * listing of every launch take as long as the load on a big run. */
  lens_cli_progress("analysing: CUPTI join, clock maps, accuracy flags; step", 1, 3);
  if (lens_analyze_gpu(m, err, sizeof(err))) {
    lens_cli_progress(NULL, -1, 0);
    rc = lens_cli_error("validate", "%s", err);
    goto free_model;
  }
  /* The same starvation flags as summary and report (their default
   * --min-wait-us 0), so the commands agree on the same files. */
  lens_cli_progress("analysing: starvation; step", 2, 3);
  if (m->n_sched && lens_analyze_starvation(m, c.min_wait_ns) < 0) {
    lens_cli_progress(NULL, -1, 0);
    rc = lens_cli_error("validate", "out of memory in the starvation analysis");
    goto free_model;
  }
  lens_cli_progress("analysing: verdict; step", 3, 3);
  if ((rc = lens_filter_apply("validate", &c.filter, m, 0))) goto free_model;
  FILE *f = lens_trace_cli_open_out("validate", &c);
  if (f) {
    int pr = lens_validate_print(f, m, &o); /* 1 after its own error line */
    rc = lens_trace_cli_close_out("validate", &c, f, 0) || pr;
  } else {
    rc = 1; /* "cannot write" said: never exit 0 after it */
  }
free_model:
  lens_gpu_release(m);
  lens_model_free(m);
out:
  lens_trace_cli_free(&c);
  return rc;
}
