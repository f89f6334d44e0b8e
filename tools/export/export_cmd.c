/* nccl-lens export --format chrome TRACE... [-o out.json] */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/trace_args.h"
#include "export/chrome.h"

#define CMD "export"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-lens export [--format chrome] [-o OUT.json] [--cupti-buffer FILE]... [--min-wait-us N] "
          "TRACE.lens...\n"
          "  Writes Chrome Trace Event JSON; open it at https://ui.perfetto.dev or chrome://tracing.\n"
          "  -o, --output FILE    output file (default: standard output)\n"
          "  --format chrome      the only format\n"
          "  --cupti-buffer FILE  raw CUPTI activity buffer saved on the GPU machine (repeatable)\n"
          "  --min-wait-us N      starvation: ignore scheduler waits shorter than N us (default 0)\n"
          "  --tag-names T:NAME,...  names of user tags (NCCL 2.31+), e.g. 1:forward,2:backward\n"
          "                       (default: NCCL_LENS_TAG_NAMES)\n");
}

/* --format: the only export-specific option. */
static int format_option(void *ctx, int *i, int argc, char **argv) {
  const char **format = ctx;
  if (strcmp(argv[*i], "--format")) return 0;
  if (*i + 1 >= argc) return -lens_cli_error(CMD, "--format needs a value (chrome)");
  *format = argv[++*i];
  return 1;
}

static int format_check(void *ctx) {
  const char *const *format = ctx;
  if (strcmp(*format, "chrome")) return -lens_cli_error(CMD, "unknown format '%s' (only 'chrome')", *format);
  return 0;
}

int lens_cmd_export(int argc, char **argv) {
  const char *format = "chrome";
  struct lens_trace_cli c;
  int rc = 1;
  struct lens_model *m = lens_trace_cli_start(CMD, argc, argv, &c, format_option, format_check, &format, usage, &rc);
  if (!m) return rc;
  FILE *f = lens_trace_cli_open_out(CMD, &c);
  if (!f) {
    lens_model_free(m);
    goto done;
  }
  struct lens_chrome_counts cnt;
  int wr = lens_export_chrome(f, m, &cnt);
  if (lens_trace_cli_close_out(CMD, &c, f, wr)) {
    /* A half-written trace would load as a broken one: remove it, but only
     * a regular file (never a device or a pipe someone pointed -o at). */
    struct stat st;
    if (lens_trace_cli_out_is_file(&c) && lstat(c.out, &st) == 0 && S_ISREG(st.st_mode)) unlink(c.out);
  } else {
    if (f != stdout)
      printf("wrote %s: %zu events of %zu processes (%zu operations, %zu GPU channel slices, %zu starvation)\n", c.out,
             m->n_events, m->n_procs, cnt.ops, cnt.gpu_slices, cnt.starvation);
    rc = 0;
  }
  lens_model_free(m);
done:
  lens_trace_cli_free(&c);
  return rc;
}
