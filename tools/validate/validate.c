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
#include "export/load_traces.h"
#include "reader/analyses.h"
#include "reader/gpu_analysis.h"
#include "validate_print.h"

static void load_progress(uint64_t done, uint64_t total) {
  lens_cli_progress("loading traces (MiB)", (long)(done >> 20), (long)(total >> 20));
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-lens validate TRACE.lens... [--cupti-buffer FILE]... [--json] [--limit N]\n"
          "       [--tag-names T:NAME,...]\n"
          "  --cupti-buffer FILE  raw CUPTI activity buffer saved on the GPU machine (repeatable)\n"
          "  --json               machine-readable output\n"
          "  --limit N            list at most N launches in detail (default: 20 as text, all with --json;\n"
          "                       totals and flags always cover all)\n");
}

int lens_cmd_validate(int argc, char **argv) {
  const char **traces = calloc((size_t)argc + 1, sizeof(char *));
  const char **buffers = calloc((size_t)argc + 1, sizeof(char *));
  size_t n_traces = 0, n_buffers = 0;
  struct lens_validate_opts o = {.json = 0, .limit = LENS_VALIDATE_LIMIT_DEFAULT};
  int rc = 1;
  if (!traces || !buffers) {
    rc = lens_cli_error("validate", "out of memory");
    goto out;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      rc = 0;
      goto out;
    } else if (!strcmp(argv[i], "--json")) {
      o.json = 1;
    } else if (!strcmp(argv[i], "--tag-names")) { /* as summary/export/report: overrides NCCL_LENS_TAG_NAMES */
      if (i + 1 >= argc || lens_tag_names_set(argv[++i])) {
        rc = lens_cli_error("validate", "--tag-names wants TAG:NAME[,TAG:NAME]... (tags > 0), e.g. 1:forward");
        goto out;
      }
    } else if (!strcmp(argv[i], "--cupti-buffer") || !strcmp(argv[i], "--limit")) {
      if (i + 1 >= argc) {
        rc = lens_cli_error("validate", "%s needs a value", argv[i]);
        goto out;
      }
      if (argv[i][2] == 'c') {
        buffers[n_buffers++] = argv[++i];
      } else {
        char *end;
        o.limit = strtol(argv[++i], &end, 10);
        if (*end || o.limit < 0) {
          rc = lens_cli_error("validate", "--limit wants a number >= 0, not '%s'", argv[i]);
          goto out;
        }
      }
    } else if (argv[i][0] == '-' && argv[i][1]) {
      rc = lens_cli_error("validate", "unknown option '%s' (see --help)", argv[i]);
      goto out;
    } else {
      traces[n_traces++] = argv[i];
    }
  }
  if (!n_traces) {
    usage(stderr);
    rc = 2;
    goto out;
  }
  char err[512] = "";
  struct lens_model *m = lens_model_load(traces, n_traces, err, sizeof(err), load_progress);
  lens_cli_progress(NULL, -1, 0);
  if (!m) {
    rc = lens_cli_error("validate", "%s", err[0] ? err : "cannot load traces");
    goto out;
  }
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
  if (m->n_sched && lens_analyze_starvation(m, 0) < 0) {
    lens_cli_progress(NULL, -1, 0);
    rc = lens_cli_error("validate", "out of memory in the starvation analysis");
    goto free_model;
  }
  lens_cli_progress("analysing: verdict; step", 3, 3);
  rc = lens_validate_print(stdout, m, &o);
free_model:
  lens_gpu_release(m);
  lens_model_free(m);
out:
  free(traces);
  free(buffers);
  return rc;
}
