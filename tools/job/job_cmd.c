/* nccl-lens job TRACE|DIR... [--json] [--all] [--min-straggler-us N] [-o FILE]
 *
 * The whole job from every trace given (a directory means every .lens in
 * it): collectives matched across ranks, execution vs waiting, stragglers
 * and their causes (docs/job.md). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/trace_args.h"
#include "export/load_traces.h"
#include "job/job_print.h"
#include "reader/job_align.h"
#include "reader/job.h"

#define CMD "job"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens job [--json] [--all] [--min-straggler-us N] [-o FILE] [--cupti-buffer FILE]...\n"
             "                     [--min-wait-us N] TRACE.lens|DIR...\n"
             "  Matches every collective across the ranks of its communicator and splits it into execution (the\n"
             "  span of the rank that started last) and each rank's wait, from each GPU's own clock; names the\n"
             "  rank that made the others wait and why. A directory means every .lens file in it.\n"
             "  --min-straggler-us N  name a last rank only when the others waited >= N us (default 20) and\n"
             "                        >= 2%% of the execution\n"
             "  --all                 list every instance with a straggler (default: the 20 longest waits)\n"
             "  --end-spread-us N     hosts: how far apart the ranks of one collective may end (default 5; doubled\n"
             "                        while the sync points contradict each other)\n"
             "  --sync-only           hosts: offsets from the job's sync points alone, not CLOCK_REALTIME (a check)\n");
}

struct opts {
  int json, all;
  uint64_t min_ns;
  struct lens_align_opts align;
};

static int job_option(void *ctx, int *i, int argc, char **argv) {
  struct opts *o = ctx;
  if (!strcmp(argv[*i], "--json")) return o->json = 1, 1;
  if (!strcmp(argv[*i], "--all")) return o->all = 1, 1;
  if (!strcmp(argv[*i], "--sync-only")) return o->align.sync_only = 1, 1;
  if (!strcmp(argv[*i], "--end-spread-us")) {
    uint64_t us;
    if (*i + 1 >= argc || lens_cli_parse_u64(argv[*i + 1], &us) || !us || us > 1000000) {
      lens_cli_error(CMD, "--end-spread-us needs an integer 1..1000000");
      return -1;
    }
    o->align.end_spread_ns = us * 1000;
    ++*i;
    return 1;
  }
  if (!strcmp(argv[*i], "--min-straggler-us")) {
    uint64_t us;
    if (*i + 1 >= argc || lens_cli_parse_u64(argv[*i + 1], &us)) {
      lens_cli_error(CMD, "--min-straggler-us needs a non-negative integer");
      return -1;
    }
    o->min_ns = us * 1000;
    ++*i;
    return 1;
  }
  return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Paths with directories replaced by their .lens files (sorted). */
static char **expand(const struct lens_trace_cli *c, size_t *n_out) {
  size_t cap = c->n + 16, n = 0;
  char **v = malloc(cap * sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < c->n; i++) {
    struct stat st;
    DIR *d = stat(c->paths[i], &st) == 0 && S_ISDIR(st.st_mode) ? opendir(c->paths[i]) : NULL;
    if (!d) {
      v[n++] = strdup(c->paths[i]);
    } else {
      size_t first = n;
      struct dirent *de;
      while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".lens")) continue;
        if (n + 1 >= cap) {
          char **nv = realloc(v, (cap *= 2) * sizeof *v);
          if (!nv) break;
          v = nv;
        }
        size_t pl = strlen(c->paths[i]) + l + 2;
        v[n] = malloc(pl);
        if (v[n]) snprintf(v[n], pl, "%s/%s", c->paths[i], de->d_name), n++;
      }
      closedir(d);
      qsort(v + first, n - first, sizeof *v, cmp_str);
    }
    if (n + 1 >= cap) {
      char **nv = realloc(v, (cap *= 2) * sizeof *v);
      if (!nv) break;
      v = nv;
    }
  }
  *n_out = n;
  return v;
}

int lens_cmd_job(int argc, char **argv) {
  struct opts o = {0};
  struct lens_trace_cli c;
  int r = lens_trace_cli_parse(CMD, argc, argv, &c, job_option, NULL, &o, usage);
  if (r) {
    lens_trace_cli_free(&c);
    return r == 2 ? 0 : 1;
  }
  size_t n = 0;
  char **paths = expand(&c, &n);
  int rc = 1;
  if (!paths || !n) {
    lens_cli_error(CMD, "no .lens traces found in the paths given");
    goto out;
  }
  struct lens_load_opts lo = {.cupti_files = c.cupti, .n_cupti_files = c.n_cupti, .min_wait_ns = c.min_wait_ns};
  struct lens_model *m = lens_cli_load(CMD, (const char *const *)paths, n, &lo);
  if (!m) goto out;
  struct lens_job j;
  if (lens_job_build(m, &j, o.min_ns)) {
    lens_cli_error(CMD, "out of memory");
    lens_model_free(m);
    goto out;
  }
  struct lens_align al;
  if (lens_align_build(m, &j, &o.align, &al)) {
    lens_cli_error(CMD, "out of memory");
    lens_job_free(&j);
    lens_model_free(m);
    goto out;
  }
  FILE *f = lens_trace_cli_open_out(CMD, &c);
  if (f) {
    if (o.json) lens_job_print_json(f, m, &j, &al);
    else lens_job_print_text(f, m, &j, o.all ? 0 : 20, &al);
    rc = lens_trace_cli_close_out(CMD, &c, f, 0);
  }
  lens_align_free(&al);
  lens_job_free(&j);
  lens_model_free(m);
out:
  for (size_t i = 0; paths && i < n; i++) free(paths[i]);
  free(paths);
  lens_trace_cli_free(&c);
  return rc;
}
