#include "cli/trace_args.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "cli/trace_input.h"
#include "export/load_traces.h"

/* -o FILE that is a directory, or whose directory does not exist or cannot be written: said
 * before loading gigabytes, not after, by every command that reads traces. */
static int out_dir_unwritable(const char *cmd, const struct lens_trace_cli *c) {
  if (!c->out || !strcmp(c->out, "-")) return 0;
  struct stat st;
  if (stat(c->out, &st) == 0 && S_ISDIR(st.st_mode))
    return lens_cli_error(cmd, "cannot write %s: it is a directory", c->out);
  if (access(c->out, W_OK) == 0) return 0; /* an existing writable file (/dev/null in an unwritable /dev) */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", c->out);
  char *slash = strrchr(dir, '/');
  if (!slash) strcpy(dir, ".");
  else if (slash == dir) dir[1] = 0;
  else *slash = 0;
  if (stat(dir, &st) != 0) return lens_cli_error(cmd, "cannot write %s: %s", c->out, strerror(errno));
  if (!S_ISDIR(st.st_mode)) return lens_cli_error(cmd, "cannot write %s: %s is not a directory", c->out, dir);
  if (access(dir, W_OK | X_OK) != 0) return lens_cli_error(cmd, "cannot write %s: %s", c->out, strerror(errno));
  return 0;
}

/* One step of the shared loop: 0 next argument, 1 stop (c->exit_code set). */
static int parse_one(const char *cmd, int *i, int argc, char **argv, struct lens_trace_cli *c,
                     lens_trace_cli_extra_fn extra, void *ctx, void (*usage)(FILE *)) {
  const char *a = argv[*i], *v;
  int r;
  c->exit_code = LENS_EXIT_USAGE;
  if (lens_opt_flag(a, "--help", 'h')) {
    usage(stdout);
    c->exit_code = 0;
    return 1;
  }
  if ((r = lens_opt_val(cmd, i, argc, argv, "--output", 'o', "a file name (- for standard output)", &v))) {
    if (r < 0) return 1;
    if (!*v) return lens_cli_usage(cmd, "-o wants a file name (- for standard output), not ''"), 1;
    c->out = v;
    return 0;
  }
  if ((r = lens_opt_val(cmd, i, argc, argv, "--cupti-buffer", 0, "a file name", &v))) {
    if (r < 0) return 1;
    c->cupti[c->n_cupti++] = v;
    return 0;
  }
  if ((r = lens_opt_val(cmd, i, argc, argv, "--min-wait-us", 0, "a number of microseconds", &v))) {
    uint64_t us;
    if (r < 0) return 1;
    if (lens_cli_parse_u64(v, &us) || us > UINT64_MAX / 1000)
      return lens_cli_usage(cmd, "--min-wait-us wants a number of microseconds >= 0, not '%s'", v), 1;
    c->min_wait_ns = us * 1000;
    return 0;
  }
  if ((r = lens_opt_val(cmd, i, argc, argv, "--tag-names", 0, "TAG:NAME[,TAG:NAME]...", &v))) {
    if (r < 0) return 1;
    if (lens_tag_names_set(v)) /* overrides NCCL_LENS_TAG_NAMES */
      return lens_cli_usage(cmd, "--tag-names wants TAG:NAME[,TAG:NAME]... (tags > 0), e.g. 1:forward,2:backward"), 1;
    return 0;
  }
  if ((r = lens_filter_option(cmd, &c->filter, i, argc, argv))) return r < 0;
  if (extra) {
    r = extra(ctx, i, argc, argv);
    if (r < 0) return 1;
    if (r > 0) return 0;
  }
  if (a[0] == '-' && a[1]) return lens_cli_usage(cmd, "unknown option '%s'", a), 1;
  if (!strcmp(a, "-"))
    for (size_t k = 0; k < c->n; k++)
      if (!strcmp(c->paths[k], "-")) return lens_cli_usage(cmd, "'-' (standard input) given twice"), 1;
  c->paths[c->n++] = a;
  return 0;
}

int lens_trace_cli_parse(const char *cmd, int argc, char **argv, struct lens_trace_cli *c, lens_trace_cli_extra_fn extra,
                         lens_trace_cli_check_fn check, void *ctx, void (*usage)(FILE *)) {
  memset(c, 0, sizeof *c);
  /* Every argument could be a path or a CUPTI file: argc bounds both. */
  c->paths = calloc((size_t)argc + 1, sizeof *c->paths);
  c->cupti = calloc((size_t)argc + 1, sizeof *c->cupti);
  if (!c->paths || !c->cupti) return c->exit_code = 1, lens_cli_error(cmd, "out of memory");
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--"); i++)
    if (parse_one(cmd, &i, argc, argv, c, extra, ctx, usage)) return 1;
  for (i++; i < argc; i++) c->paths[c->n++] = argv[i]; /* after "--": paths only */
  c->exit_code = LENS_EXIT_USAGE;
  if (lens_filter_check(cmd, &c->filter)) return 1;
  if (check && check(ctx)) return 1;
  if (!c->n) return lens_cli_usage(cmd, "no trace files given"), 1;
  if (out_dir_unwritable(cmd, c)) return c->exit_code = 1, 1; /* a runtime error: exit 1 */
  c->exit_code = 0;
  return 0;
}

void lens_trace_cli_usage_common(FILE *f) { lens_trace_cli_usage_common_but(f, 0); }

void lens_trace_cli_usage_common_but(FILE *f, int no_cupti) {
  fprintf(f,
          "common options (every command that reads traces):\n"
          "  -o, --output FILE       write there instead of standard output (- = standard output)\n"
          "  --comm ID|NAME[,...]    only these communicators: hex id as summary prints it (0x optional) or name;\n"
          "                          repeatable\n"
          "  --rank LIST             only these communicator ranks, e.g. 3, 0-7 or 0-7,64 (0..1000000); repeatable\n"
          "  --func NAME[,...]       only these operations: AllReduce, AllGather, Send, Recv, ... (any case)\n"
          "  --since T, --until T    only events overlapping this window, T after the first event of the host\n"
          "                          (its own CLOCK_MONOTONIC): 1.5s, 200ms, 30us or 500ns; a bare number is seconds\n"
          "%s"
          "  --min-wait-us N         starvation: ignore scheduler waits shorter than N us (default 0)\n"
          "  --tag-names T:NAME,...  names of user tags (NCCL 2.31+), e.g. 1:forward (default: NCCL_LENS_TAG_NAMES)\n"
          "  --                      only paths follow\n"
          "  A DIR stands for the .lens files in it; - reads a trace (plain or gzip) from standard input;\n"
          "  TRACE.lens.gz is decompressed (each into memory, up to NCCL_LENS_INPUT_MAX_MB, default 4096).\n"
          "  Options take --opt=VALUE too, -o also -oFILE.\n"
          "  The selection runs after the GPU clock fits and starvation analysis, which use every event;\n"
          "  a --since/--until window takes the fits from the cache a whole read of the same files left\n"
          "  (~/.cache/nccl-lens; NCCL_LENS_CACHE=off: none).\n"
          "  Exit status: 0 done, 1 failed (unreadable trace, write error), 2 usage error.\n",
          no_cupti ? "" : "  --cupti-buffer FILE     raw CUPTI activity buffer saved on the GPU machine (repeatable)\n");
}

void lens_trace_cli_free(struct lens_trace_cli *c) {
  for (size_t i = 0; i < c->n_spooled; i++) {
    lens_cli_input_alias(c->spooled[i].fd_path, NULL);
    close(c->spooled[i].fd);
    free(c->spooled[i].fd_path);
  }
  free(c->spooled);
  c->spooled = NULL;
  c->n_spooled = 0;
  for (size_t i = 0; i < c->n_renamed; i++) free(c->renamed[i].shown);
  free(c->renamed);
  c->renamed = NULL;
  c->n_renamed = 0;
  free(c->paths);
  free(c->cupti);
  for (size_t i = 0; i < c->n_owned; i++) free(c->owned[i]);
  free(c->owned);
  lens_filter_free(&c->filter);
  c->paths = c->cupti = NULL;
  c->owned = NULL;
  c->n_owned = 0;
}

static const char *const default_suffixes[] = {".lens", NULL};

/* A file name (of len characters) that ends in one of the suffixes, with a name before it. */
static int has_suffix(const char *name, size_t len, const char *const *suffixes) {
  for (const char *const *s = suffixes ? suffixes : default_suffixes; *s; s++) {
    size_t sl = strlen(*s);
    if (len > sl && !strcmp(name + len - sl, *s)) return 1;
  }
  return 0;
}

/* "-" and NAME.gz among the (expanded) paths: each spooled into a sealed
 * memfd that the readers open by its /proc/self/fd name. 0, or 1 after one
 * error line. */
static int spool_inputs(const char *cmd, struct lens_trace_cli *c) {
  size_t want = 0;
  for (size_t i = 0; i < c->n; i++) want += lens_trace_input_needs_spool(c->paths[i]);
  if (!want) return 0;
  struct lens_trace_spooled *v = realloc(c->spooled, (c->n_spooled + want) * sizeof *v);
  if (!v) return lens_cli_error(cmd, "out of memory");
  c->spooled = v;
  for (size_t i = 0; i < c->n; i++) {
    if (!lens_trace_input_needs_spool(c->paths[i])) continue;
    struct lens_trace_spooled *s = &c->spooled[c->n_spooled];
    char err[512], fd_path[32];
    int fd = lens_trace_input_spool(c->paths[i], lens_trace_input_max(), fd_path, sizeof fd_path, err, sizeof err);
    if (fd < 0) return lens_cli_error(cmd, "%s", err);
    /* its own allocation: paths[] and the error alias point at it while spooled[] grows */
    if (!(s->fd_path = strdup(fd_path))) {
      close(fd);
      return lens_cli_error(cmd, "out of memory");
    }
    s->fd = fd;
    s->shown = c->paths[i];
    c->n_spooled++;
    lens_cli_input_alias(s->fd_path, s->shown); /* errors name it as the user did */
    c->paths[i] = s->fd_path;
  }
  return 0;
}

/* The name the user gave a spooled input, else p itself; either cleaned
 * when it needed it (renamed). */
static const char *shown_name(const struct lens_trace_cli *c, const char *p) {
  for (size_t i = 0; p && i < c->n_spooled; i++)
    if (!strcmp(p, c->spooled[i].fd_path)) {
      p = c->spooled[i].shown;
      break;
    }
  for (size_t i = 0; p && i < c->n_renamed; i++)
    if (!strcmp(p, c->renamed[i].real)) return c->renamed[i].shown;
  return p;
}

/* A cleaned copy of every input name a terminal must not see raw (spooled
 * inputs by the name the user gave). 0, or 1 after one error line. */
static int rename_inputs(const char *cmd, struct lens_trace_cli *c) {
  for (size_t i = 0; i < c->n; i++) {
    const char *name = shown_name(c, c->paths[i]);
    size_t len = strlen(name);
    char *copy = malloc(len + 1);
    if (!copy) return lens_cli_error(cmd, "out of memory");
    lens_cli_shown(name, copy, len + 1);
    if (!memcmp(copy, name, len)) {
      free(copy);
      continue;
    }
    struct lens_trace_renamed *v = realloc(c->renamed, (c->n_renamed + 1) * sizeof *v);
    if (!v) {
      free(copy);
      return lens_cli_error(cmd, "out of memory");
    }
    c->renamed = v;
    c->renamed[c->n_renamed++] = (struct lens_trace_renamed){.real = name, .shown = copy};
  }
  return 0;
}

void lens_trace_cli_name_inputs(const struct lens_trace_cli *c, struct lens_model *m) {
  if (!m || (!c->n_spooled && !c->n_renamed)) return;
  for (size_t f = 0; f < m->n_files; f++) m->files[f].path = shown_name(c, m->files[f].path);
  for (size_t d = 0; d < m->n_same_traces; d++) {
    m->same_traces[d].path = shown_name(c, m->same_traces[d].path);
    m->same_traces[d].same_as = shown_name(c, m->same_traces[d].same_as);
  }
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int lens_trace_cli_expand_dirs(const char *cmd, struct lens_trace_cli *c) {
  if (c->expanded) return 0; /* once: a command may hand a subset of its files to the pass driver */
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
      if (!has_suffix(de->d_name, len, c->suffixes)) continue;
      size_t plen = strlen(c->paths[i]) + len + 2;
      char *p = malloc(plen);
      if (p) snprintf(p, plen, "%s/%s", c->paths[i], de->d_name);
      if (p && c->dir_accept && !c->dir_accept(p)) {
        free(p);
        continue;
      }
      char **no = p ? realloc(c->owned, (c->n_owned + 1) * sizeof *c->owned) : NULL;
      if (!no) {
        free(p);
        closedir(d);
        goto oom;
      }
      c->owned = no;
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
      return lens_cli_error(cmd, "no %s files in directory %s", c->suffixes ? "trace" : ".lens", c->paths[i]);
    }
    qsort(out + first, k - first, sizeof *out, by_name);
  }
  free(c->paths);
  c->paths = out;
  c->expanded = 1;
  c->n = k;
  return spool_inputs(cmd, c) || rename_inputs(cmd, c);
oom:
  free(out);
  return lens_cli_error(cmd, "out of memory");
}

int lens_trace_cli_out_is_file(const struct lens_trace_cli *c) { return c->out && strcmp(c->out, "-"); }

FILE *lens_trace_cli_open_out(const char *cmd, const struct lens_trace_cli *c) {
  if (!lens_trace_cli_out_is_file(c)) return stdout;
  FILE *f = fopen(c->out, "w"); /* nofollow-ok: -o FILE, named on the command line */
  if (!f) lens_cli_error(cmd, "cannot write %s: %s", c->out, strerror(errno));
  return f;
}

int lens_trace_cli_close_out(const char *cmd, const struct lens_trace_cli *c, FILE *f, int wr) {
  wr |= f == stdout ? fflush(f) : fclose(f);
  if (wr) return lens_cli_error(cmd, "write error on %s", c->out ? c->out : "standard output");
  return 0;
}
