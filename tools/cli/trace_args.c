#include "cli/trace_args.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
  for (size_t i = 0; i < c->n_owned; i++) free(c->owned[i]);
  free(c->owned);
  c->paths = c->cupti = NULL;
  c->owned = NULL;
  c->n_owned = 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int lens_trace_cli_expand_dirs(const char *cmd, struct lens_trace_cli *c) {
  size_t cap = c->n + 16, k = 0;
  const char **out = malloc(cap * sizeof *out);
  if (!out) return lens_cli_error(cmd, "out of memory");
  for (size_t i = 0; i < c->n; i++) {
    struct stat st;
    if (stat(c->paths[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
      if (k == cap) {
        const char **no = realloc(out, (cap *= 2) * sizeof *out);
        if (!no) goto oom;
        out = no;
      }
      out[k++] = c->paths[i];
      continue;
    }
    DIR *d = opendir(c->paths[i]);
    if (!d) {
      free(out);
      return lens_cli_error(cmd, "cannot read directory %s", c->paths[i]);
    }
    size_t first = k;
    struct dirent *de;
    while ((de = readdir(d))) {
      size_t len = strlen(de->d_name);
      if (len < 6 || strcmp(de->d_name + len - 5, ".lens")) continue;
      size_t plen = strlen(c->paths[i]) + len + 2;
      char *p = malloc(plen);
      char **no = p ? realloc(c->owned, (c->n_owned + 1) * sizeof *c->owned) : NULL;
      if (!no) {
        free(p);
        closedir(d);
        goto oom;
      }
      c->owned = no;
      snprintf(p, plen, "%s/%s", c->paths[i], de->d_name);
      c->owned[c->n_owned++] = p;
      if (k == cap) {
        const char **nout = realloc(out, (cap *= 2) * sizeof *out);
        if (!nout) {
          closedir(d);
          goto oom;
        }
        out = nout;
      }
      out[k++] = p;
    }
    closedir(d);
    if (k == first) {
      free(out);
      return lens_cli_error(cmd, "no .lens files in directory %s", c->paths[i]);
    }
    qsort(out + first, k - first, sizeof *out, by_name);
  }
  free(c->paths);
  c->paths = out;
  c->n = k;
  return 0;
oom:
  free(out);
  return lens_cli_error(cmd, "out of memory");
}

struct lens_model *lens_trace_cli_load(const char *cmd, struct lens_trace_cli *c) {
  if (lens_trace_cli_expand_dirs(cmd, c)) return NULL;
  struct lens_load_opts lo = {.cupti_files = c->cupti, .n_cupti_files = c->n_cupti, .min_wait_ns = c->min_wait_ns};
  return lens_cli_load(cmd, c->paths, c->n, &lo);
}

/* -o FILE whose directory does not exist or cannot be written. */
static int out_dir_unwritable(const char *cmd, const struct lens_trace_cli *c) {
  if (!c->out || !strcmp(c->out, "-")) return 0;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", c->out);
  char *slash = strrchr(dir, '/');
  if (!slash) strcpy(dir, ".");
  else if (slash == dir) dir[1] = 0;
  else *slash = 0;
  struct stat st;
  if (stat(dir, &st) != 0) return lens_cli_error(cmd, "cannot write %s: %s", c->out, strerror(errno));
  if (!S_ISDIR(st.st_mode)) return lens_cli_error(cmd, "cannot write %s: %s is not a directory", c->out, dir);
  if (access(dir, W_OK | X_OK) != 0) return lens_cli_error(cmd, "cannot write %s: %s", c->out, strerror(errno));
  return 0;
}

struct lens_model *lens_trace_cli_start(const char *cmd, int argc, char **argv, struct lens_trace_cli *c,
                                        lens_trace_cli_extra_fn extra, lens_trace_cli_check_fn check, void *ctx,
                                        void (*usage)(FILE *), int *exit_code) {
  int r = lens_trace_cli_parse(cmd, argc, argv, c, extra, check, ctx, usage);
  if (!r && out_dir_unwritable(cmd, c)) r = 1; /* say it before loading gigabytes, not after */
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
  if (!f) lens_cli_error(cmd, "cannot write %s: %s", c->out, strerror(errno));
  return f;
}

int lens_trace_cli_close_out(const char *cmd, const struct lens_trace_cli *c, FILE *f, int wr) {
  wr |= f == stdout ? fflush(f) : fclose(f);
  if (wr) return lens_cli_error(cmd, "write error on %s", c->out ? c->out : "standard output");
  return 0;
}
