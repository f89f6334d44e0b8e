#include "cli/trace_args.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "export/load_traces.h"

/* One step of the shared loop: 0 next argument, 1 error printed, 2 help printed. */
static int parse_one(const char *cmd, int *i, int argc, char **argv, struct lens_trace_cli *c,
                     lens_trace_cli_extra_fn extra, void *ctx, void (*usage)(FILE *)) {
  const char *a = argv[*i];
  int has_val = *i + 1 < argc;
  if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
    usage(stdout);
    return 2;
  }
  if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
    if (!has_val) return lens_cli_error(cmd, "%s needs a file name", a);
    c->out = argv[++*i];
    return 0;
  }
  if (!strcmp(a, "--cupti-buffer")) {
    if (!has_val) return lens_cli_error(cmd, "--cupti-buffer needs a file name");
    c->cupti[c->n_cupti++] = argv[++*i];
    return 0;
  }
  if (!strcmp(a, "--min-wait-us")) {
    uint64_t us;
    if (!has_val || lens_cli_parse_u64(argv[++*i], &us))
      return lens_cli_error(cmd, "--min-wait-us needs a non-negative integer");
    c->min_wait_ns = us * 1000;
    return 0;
  }
  if (!strcmp(a, "--tag-names")) { /* overrides NCCL_LENS_TAG_NAMES */
    if (!has_val || lens_tag_names_set(argv[++*i]))
      return lens_cli_error(cmd, "--tag-names wants TAG:NAME[,TAG:NAME]... (tags > 0), e.g. 1:forward,2:backward");
    return 0;
  }
  if (extra) {
    int r = extra(ctx, i, argc, argv);
    if (r < 0) return 1;
    if (r > 0) return 0;
  }
  if (a[0] == '-' && a[1]) return lens_cli_error(cmd, "unknown option '%s' (try --help)", a);
  c->paths[c->n++] = a;
  return 0;
}

int lens_trace_cli_parse(const char *cmd, int argc, char **argv, struct lens_trace_cli *c, lens_trace_cli_extra_fn extra,
                         lens_trace_cli_check_fn check, void *ctx, void (*usage)(FILE *)) {
  memset(c, 0, sizeof *c);
  /* Every argument could be a path or a CUPTI file: argc bounds both. */
  c->paths = calloc((size_t)argc + 1, sizeof *c->paths);
  c->cupti = calloc((size_t)argc + 1, sizeof *c->cupti);
  if (!c->paths || !c->cupti) return lens_cli_error(cmd, "out of memory");
  for (int i = 1; i < argc; i++) {
    int r = parse_one(cmd, &i, argc, argv, c, extra, ctx, usage);
    if (r) return r;
  }
  if (check && check(ctx)) return 1;
  if (!c->n) return lens_cli_error(cmd, "no trace files given (try --help)");
  return 0;
}

void lens_trace_cli_free(struct lens_trace_cli *c) {
  free(c->paths);
  free(c->cupti);
  c->paths = c->cupti = NULL;
}

struct lens_model *lens_trace_cli_load(const char *cmd, const struct lens_trace_cli *c) {
  struct lens_load_opts lo = {.cupti_files = c->cupti, .n_cupti_files = c->n_cupti, .min_wait_ns = c->min_wait_ns};
  return lens_cli_load(cmd, c->paths, c->n, &lo);
}

struct lens_model *lens_trace_cli_start(const char *cmd, int argc, char **argv, struct lens_trace_cli *c,
                                        lens_trace_cli_extra_fn extra, lens_trace_cli_check_fn check, void *ctx,
                                        void (*usage)(FILE *), int *exit_code) {
  int r = lens_trace_cli_parse(cmd, argc, argv, c, extra, check, ctx, usage);
  struct lens_model *m = r ? NULL : lens_trace_cli_load(cmd, c);
  if (!m) {
    lens_trace_cli_free(c);
    *exit_code = r == 2 ? 0 : 1;
  }
  return m;
}

int lens_trace_cli_out_is_file(const struct lens_trace_cli *c) { return c->out && strcmp(c->out, "-"); }

FILE *lens_trace_cli_open_out(const char *cmd, const struct lens_trace_cli *c) {
  if (!lens_trace_cli_out_is_file(c)) return stdout;
  FILE *f = fopen(c->out, "w");
  if (!f) lens_cli_error(cmd, "cannot write %s", c->out);
  return f;
}

int lens_trace_cli_close_out(const char *cmd, const struct lens_trace_cli *c, FILE *f, int wr) {
  wr |= f == stdout ? fflush(f) : fclose(f);
  if (wr) return lens_cli_error(cmd, "write error on %s", c->out ? c->out : "standard output");
  return 0;
}
