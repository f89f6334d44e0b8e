/* nccl-lens export --format chrome TRACE... [-o out.json] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "export/chrome.h"
#include "export/load_traces.h"

#define CMD "export"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-lens export [--format chrome] [-o OUT.json] [--cupti-buffer FILE]... [--min-wait-us N] "
          "TRACE.lens...\n"
          "  Writes Chrome Trace Event JSON; open it at https://ui.perfetto.dev or chrome://tracing.\n"
          "  -o, --output FILE    output file (default: standard output)\n"
          "  --format chrome      the only format\n"
          "  --cupti-buffer FILE  raw CUPTI activity buffer saved on the GPU machine (repeatable)\n"
          "  --min-wait-us N      starvation: ignore scheduler waits shorter than N us (default 0)\n");
}

int lens_cmd_export(int argc, char **argv) {
  const char *out = NULL, *format = "chrome";
  const char **paths = calloc((size_t)argc + 1, sizeof *paths), **cupti = calloc((size_t)argc + 1, sizeof *cupti);
  size_t n = 0, nc = 0;
  struct lens_load_opts lo = {0};
  int rc = 1;
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
      if (!has_val) { lens_cli_error(CMD, "%s needs a file name", a); goto done; }
      out = argv[++i];
    } else if (!strcmp(a, "--format")) {
      if (!has_val) { lens_cli_error(CMD, "--format needs a value (chrome)"); goto done; }
      format = argv[++i];
    } else if (!strcmp(a, "--cupti-buffer")) {
      if (!has_val) { lens_cli_error(CMD, "--cupti-buffer needs a file name"); goto done; }
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
  if (strcmp(format, "chrome")) {
    lens_cli_error(CMD, "unknown format '%s' (only 'chrome')", format);
    goto done;
  }
  if (!n) {
    lens_cli_error(CMD, "no trace files given (try --help)");
    goto done;
  }
  lo.cupti_files = cupti;
  lo.n_cupti_files = nc;
  struct lens_model *m = lens_cli_load(CMD, paths, n, &lo);
  if (!m) goto done;
  FILE *f = out && strcmp(out, "-") ? fopen(out, "w") : stdout;
  if (!f) {
    lens_cli_error(CMD, "cannot write %s", out);
    lens_model_free(m);
    goto done;
  }
  struct lens_chrome_counts c;
  int wr = lens_export_chrome(f, m, &c);
  if (f != stdout) wr |= fclose(f);
  else wr |= fflush(f);
  if (wr) {
    lens_cli_error(CMD, "write error on %s", out ? out : "standard output");
    if (out && strcmp(out, "-")) unlink(out);
  } else {
    if (f != stdout)
      printf("wrote %s: %zu events of %zu processes (%zu operations, %zu GPU channel slices, %zu starvation)\n", out,
             m->n_events, m->n_procs, c.ops, c.gpu_slices, c.starvation);
    rc = 0;
  }
  lens_model_free(m);
done:
  free(paths);
  free(cupti);
  return rc;
}
