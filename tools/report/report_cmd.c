/* nccl-lens report TRACE... [--cupti-buffer F]... [--min-wait-us N] [-o report.md]
 *
 * One Markdown report of a run for a performance engineer: what was
 * recorded, per-communicator tables, completion vs enqueue and rank arrival,
 * the GPU timing verdict, proxy threads and starvation, data losses, and
 * hints on what to look at next (docs/report.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "export/load_traces.h"
#include "reader/analyses.h"
#include "report/report_md.h"

#define CMD "report"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens report [-o REPORT.md] [--cupti-buffer FILE]... [--min-wait-us N] TRACE.lens...\n"
             "  One Markdown report of a run: what was recorded, per-communicator operations, completion vs\n"
             "  enqueue and rank arrival, GPU timing accuracy, proxy threads and starvation, data losses,\n"
             "  and what to look at next. Without -o it goes to standard output.\n");
}

int lens_cmd_report(int argc, char **argv) {
  const char **paths = calloc((size_t)argc + 1, sizeof *paths), **cupti = calloc((size_t)argc + 1, sizeof *cupti);
  size_t n = 0, nc = 0;
  int rc = 1;
  const char *out = NULL;
  struct lens_load_opts lo = {0};
  if (!paths || !cupti) {
    lens_cli_error(CMD, "out of memory");
    goto done;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has_val = i + 1 < argc;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      rc = 0;
      goto done;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      if (!has_val) {
        lens_cli_error(CMD, "%s needs a file name", a);
        goto done;
      }
      out = argv[++i];
    } else if (!strcmp(a, "--cupti-buffer")) {
      if (!has_val) {
        lens_cli_error(CMD, "--cupti-buffer needs a file name");
        goto done;
      }
      cupti[nc++] = argv[++i];
    } else if (!strcmp(a, "--min-wait-us")) {
      uint64_t us;
      if (!has_val || lens_cli_parse_u64(argv[++i], &us)) {
        lens_cli_error(CMD, "--min-wait-us needs a non-negative integer");
        goto done;
      }
      lo.min_wait_ns = us * 1000;
    } else if (a[0] == '-' && a[1]) {
      lens_cli_error(CMD, "unknown option '%s' (try --help)", a);
      goto done;
    } else {
      paths[n++] = a;
    }
  }
  if (!n) {
    lens_cli_error(CMD, "no trace files given (try --help)");
    goto done;
  }
  lo.cupti_files = cupti;
  lo.n_cupti_files = nc;
  struct lens_model *m = lens_cli_load(CMD, paths, n, &lo);
  if (!m) goto done;
  struct lens_report r;
  if (lens_report_build(m, &r, lens_analyze_gpu != NULL)) {
    lens_cli_error(CMD, "out of memory");
    lens_model_free(m);
    goto done;
  }
  FILE *f = out && strcmp(out, "-") ? fopen(out, "w") : stdout;
  if (!f) {
    lens_cli_error(CMD, "cannot write %s", out);
  } else {
    lens_report_print_md(f, m, &r);
    int wr = f == stdout ? fflush(f) : fclose(f);
    if (wr) lens_cli_error(CMD, "write error on %s", out ? out : "standard output");
    else rc = 0;
  }
  lens_report_free(&r);
  lens_model_free(m);
done:
  free(paths);
  free(cupti);
  return rc;
}
