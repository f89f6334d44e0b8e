/* nccl-lens net TRACE|DIR... [--json] [--top N] [-o FILE]: the network view
 * (docs/net.md). A directory stands for the .lens files in it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/trace_args.h"
#include "net/net_print.h"
#include "reader/analyses.h"

#define CMD "net"
#define DEFAULT_TOP 10

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens net [--json] [--top N] [-o FILE] [--min-wait-us N] TRACE.lens|DIR...\n"
             "  The network: per link (rank -> peer, channel, direction) ops, steps, bytes, each step's time split\n"
             "  into the phases of NCCL's ProxyStep state machine (send: GPU, peer credit, wire; receive: waiting\n"
             "  for data, flush, GPU), bandwidth on the wire, step p50/p99; the slowest connections first with\n"
             "  their dominant phase, asymmetry, per collective instance, NetPlugin QPs. A DIR means the .lens\n"
             "  files in it (scheduler probe traces included: starved steps are flagged, not blamed).\n"
             "  --top N: connections listed in text (default %d, 0 = all). --json: everything, docs/net.md.\n",
          DEFAULT_TOP);
}

struct opts { int json, top; };

static int net_option(void *ctx, int *i, int argc, char **argv) {
  struct opts *o = ctx;
  if (!strcmp(argv[*i], "--json")) {
    o->json = 1;
    return 1;
  }
  if (!strcmp(argv[*i], "--top")) {
    char *end = NULL;
    long v = *i + 1 < argc ? strtol(argv[*i + 1], &end, 10) : -1;
    if (*i + 1 >= argc || !end || *end || v < 0 || v > 1000000) {
      lens_cli_error(CMD, "--top needs a number of connections (0 = all)");
      return -1;
    }
    o->top = (int)v;
    (*i)++;
    return 1;
  }
  return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Options whose next argument is their value, never a trace directory. */
static int takes_value(const char *arg) {
  static const char *const v[] = {"-o", "--output", "--cupti-buffer", "--min-wait-us", "--top"};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (!strcmp(arg, v[i])) return 1;
  return 0;
}

/* argv with every directory replaced by its *.lens files, sorted. Strings
 * it made are listed in *owned for freeing. NULL after one error line. */
static char **expand_dirs(int argc, char **argv, int *out_argc, char ***owned, size_t *n_owned) {
  size_t cap = (size_t)argc + 1, n = 0, no = 0, ocap = 0;
  char **v = malloc(cap * sizeof *v);
  char **own = NULL;
  if (!v) return NULL;
  for (int i = 0; i < argc; i++) {
    struct stat sb;
    int is_value = i > 1 && takes_value(argv[i - 1]);
    DIR *d = i > 0 && !is_value && argv[i][0] != '-' && !stat(argv[i], &sb) && S_ISDIR(sb.st_mode) ? opendir(argv[i])
                                                                                                     : NULL;
    if (!d) {
      if (n + 1 >= cap) {
        cap *= 2;
        char **nv = realloc(v, cap * sizeof *v);
        if (!nv) goto fail;
        v = nv;
      }
      v[n++] = argv[i];
      continue;
    }
    size_t first = n;
    struct dirent *de;
    while ((de = readdir(d))) {
      size_t len = strlen(de->d_name);
      if (len < 6 || strcmp(de->d_name + len - 5, ".lens")) continue;
      char *p = NULL;
      if (asprintf(&p, "%s/%s", argv[i], de->d_name) < 0) break;
      if (n + 1 >= cap || no >= ocap) {
        cap *= 2;
        ocap = ocap ? ocap * 2 : 16;
        char **nv = realloc(v, cap * sizeof *v), **no2 = NULL;
        if (nv) v = nv;
        if (nv) no2 = realloc(own, ocap * sizeof *own);
        if (!nv || !no2) {
          free(p);
          closedir(d);
          goto fail;
        }
        own = no2;
      }
      own[no++] = p;
      v[n++] = p;
    }
    closedir(d);
    if (n == first) {
      lens_cli_error(CMD, "no .lens files in %s", argv[i]);
      *owned = own;
      *n_owned = no;
      free(v);
      return NULL;
    }
    qsort(v + first, n - first, sizeof *v, by_name);
  }
  v[n] = NULL;
  *out_argc = (int)n;
  *owned = own;
  *n_owned = no;
  return v;
fail:
  lens_cli_error(CMD, "out of memory");
  *owned = own;
  *n_owned = no;
  free(v);
  return NULL;
}

int lens_cmd_net(int argc, char **argv) {
  struct opts o = {0, DEFAULT_TOP};
  char **owned = NULL;
  size_t n_owned = 0;
  int eargc = 0, rc = 1;
  char **eargv = expand_dirs(argc, argv, &eargc, &owned, &n_owned);
  if (!eargv) goto out;
  struct lens_trace_cli c;
  struct lens_model *m = lens_trace_cli_start(CMD, eargc, eargv, &c, net_option, NULL, &o, usage, &rc);
  if (!m) goto out;
  struct lens_net *n = lens_net_build(m);
  if (!n) {
    lens_cli_error(CMD, "out of memory");
    rc = 1;
  } else {
    FILE *f = lens_trace_cli_open_out(CMD, &c);
    rc = 1;
    if (f) {
      if (o.json) lens_net_print_json(f, m, n);
      else lens_net_print_text(f, m, n, o.top);
      rc = lens_trace_cli_close_out(CMD, &c, f, 0);
    }
  }
  lens_net_free(n);
  lens_model_free(m);
  lens_trace_cli_free(&c);
out:
  for (size_t i = 0; i < n_owned; i++) free(owned[i]);
  free(owned);
  free(eargv);
  return rc;
}
