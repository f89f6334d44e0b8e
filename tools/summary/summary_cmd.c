/* nccl-lens summary TRACE... [--json] [-o FILE] */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/trace_args.h"
#include "reader/analyses.h"
#include "job/job_print.h"
#include "summary/summary_print.h"

#define CMD "summary"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens summary [--json] [-o FILE] [--cupti-buffer FILE]... [--min-wait-us N] [--tag-names T:NAME,...]\n"
             "       TRACE.lens...\n"
             "  Per communicator and operation (func, algo, proto, size): counts, bytes, enqueue and completion\n"
             "  times, algorithm bandwidth, GPU time per channel, proxy activity; then drops, accuracy flags and\n"
             "  starvation. --json prints the same numbers as one JSON object.\n");
}

/* --json: the only summary-specific option. */
static int json_option(void *ctx, int *i, int argc, char **argv) {
  (void)argc;
  if (strcmp(argv[*i], "--json")) return 0;
  *(int *)ctx = 1;
  return 1;
}

int lens_cmd_summary(int argc, char **argv) {
  int json = 0;
  struct lens_trace_cli c;
  int rc = 1;
  struct lens_model *m = lens_trace_cli_start(CMD, argc, argv, &c, json_option, NULL, &json, usage, &rc);
  if (!m) return rc;
  struct lens_summary s;
  if (lens_summary_build(m, &s, lens_analyze_gpu != NULL)) {
    lens_cli_error(CMD, "out of memory");
    lens_model_free(m);
    goto done;
  }
  FILE *f = lens_trace_cli_open_out(CMD, &c);
  if (f) {
    if (json) {
      lens_summary_print_json(f, m, &s);
    } else {
      struct lens_job j; /* the job view leads whenever a communicator has more than one rank loaded */
      if (!lens_job_build(m, &j, 0)) {
        if (j.comms_multi) {
          fprintf(f, "nccl-lens summary: the job (nccl-lens job has the instances and causes)\n");
          lens_job_print_headline(f, m, &j);
          fputc('\n', f);
        }
        lens_job_free(&j);
      }
      lens_summary_print_text(f, m, &s);
    }
    rc = lens_trace_cli_close_out(CMD, &c, f, 0);
  }
  lens_summary_free(&s);
  lens_model_free(m);
done:
  lens_trace_cli_free(&c);
  return rc;
}
