/* nccl-lens hang TRACE|DIR... [--json] [-o FILE]: where a hung job's ranks
 * part and what each stuck rank waits for (tools/reader/hang_analysis.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/trace_args.h"
#include "export/load_traces.h"
#include "hang/hang_print.h"
#include "reader/hang_analysis.h"

#define CMD "hang"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens hang [--json] [-o FILE] TRACE.lens|DIR...\n"
             "  Hang diagnosis (traces cut by a kill are fine): per communicator, the last sequence number each\n"
             "  rank started and completed, the collective where the ranks part and the ranks that never entered\n"
             "  it; per stuck rank the channels whose kernel never stopped and the proxy ops in flight with the\n"
             "  step, the state it sits in and the peer it waits for; whether each proxy thread still recorded.\n"
             "  A DIR stands for the .lens files in it. --json prints one JSON object.\n");
}

static int json_option(void *ctx, int *i, int argc, char **argv) {
  (void)argc;
  if (strcmp(argv[*i], "--json")) return 0;
  *(int *)ctx = 1;
  return 1;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Paths with each directory replaced by its *.lens files (sorted); owned
 * strings in *owned. NULL after an error line. */
static const char **expand(const struct lens_trace_cli *c, size_t *n, char ***owned, size_t *n_owned) {
  size_t cap = c->n + 16, k = 0, ocap = 16;
  const char **out = malloc(cap * sizeof *out);
  *owned = malloc(ocap * sizeof **owned);
  *n_owned = 0;
  if (!out || !*owned) goto oom;
  for (size_t i = 0; i < c->n; i++) {
    struct stat st;
    if (stat(c->paths[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
      if (k == cap && !(out = realloc(out, (cap *= 2) * sizeof *out))) goto oom;
      out[k++] = c->paths[i];
      continue;
    }
    DIR *d = opendir(c->paths[i]);
    if (!d) {
      lens_cli_error(CMD, "cannot read directory %s", c->paths[i]);
      goto fail;
    }
    size_t first = k;
    struct dirent *de;
    while ((de = readdir(d))) {
      size_t len = strlen(de->d_name);
      if (len < 6 || strcmp(de->d_name + len - 5, ".lens")) continue;
      size_t plen = strlen(c->paths[i]) + len + 2;
      char *p = malloc(plen);
      if (!p) {
        closedir(d);
        goto oom;
      }
      snprintf(p, plen, "%s/%s", c->paths[i], de->d_name);
      if (*n_owned == ocap && !(*owned = realloc(*owned, (ocap *= 2) * sizeof **owned))) {
        free(p);
        closedir(d);
        goto oom;
      }
      (*owned)[(*n_owned)++] = p;
      if (k == cap && !(out = realloc(out, (cap *= 2) * sizeof *out))) {
        closedir(d);
        goto oom;
      }
      out[k++] = p;
    }
    closedir(d);
    qsort(out + first, k - first, sizeof *out, by_name);
    if (k == first) {
      lens_cli_error(CMD, "no .lens files in %s", c->paths[i]);
      goto fail;
    }
  }
  *n = k;
  return out;
oom:
  lens_cli_error(CMD, "out of memory");
fail:
  free(out);
  return NULL;
}

int lens_cmd_hang(int argc, char **argv) {
  int json = 0;
  struct lens_trace_cli c;
  int r = lens_trace_cli_parse(CMD, argc, argv, &c, json_option, NULL, &json, usage);
  if (r) {
    lens_trace_cli_free(&c);
    return r == 2 ? 0 : 1;
  }
  int rc = 1;
  size_t n = 0, n_owned = 0;
  char **owned = NULL;
  const char **paths = expand(&c, &n, &owned, &n_owned);
  struct lens_model *m = NULL;
  if (paths) {
    struct lens_load_opts lo = {.cupti_files = c.cupti, .n_cupti_files = c.n_cupti, .min_wait_ns = c.min_wait_ns};
    m = lens_cli_load(CMD, paths, n, &lo);
  }
  struct lens_hang_report h;
  if (m && lens_hang_analyze(m, &h) != 0) {
    lens_cli_error(CMD, "out of memory");
  } else if (m) {
    FILE *f = lens_trace_cli_open_out(CMD, &c);
    if (f) {
      if (json) lens_hang_print_json(f, m, &h);
      else lens_hang_print_text(f, m, &h);
      rc = lens_trace_cli_close_out(CMD, &c, f, 0);
    }
    lens_hang_free(&h);
  }
  if (m) lens_model_free(m);
  for (size_t i = 0; i < n_owned; i++) free(owned[i]);
  free(owned);
  free(paths);
  lens_trace_cli_free(&c);
  return rc;
}
