/* See passes.h. */
#include "cli/passes.h"

#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/filter.h"
#include "cli/work_pool.h"
#include "export/load_traces.h"

/* The plugin writes a CLOCK chunk before its first SESSION (the clock
 * evidence of the open): the host is read from the first SESSION among the
 * first few chunks, each skipped by its header's length. */
#define HOST_CHUNKS_MAX 8
#define HOST_SKIP_MAX (1u << 20) /* a chunk before the SESSION is small; a longer one is not skipped */

void lens_pass_trace_host(const char *path, char *host, size_t len, int *probe) {
  host[0] = 0;
  *probe = 1;
  /* Not blocking: opening a named pipe for reading waits for a writer. Only
   * a regular file is read here; the reader says what is wrong with another. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* nofollow-ok: a trace the user named, read only */
  struct stat st;
  if (fd < 0) return;
  FILE *f = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "rb") : NULL;
  if (!f) {
    close(fd);
    return;
  }
  struct lens_file_hdr fh;
  if (fread(&fh, 1, sizeof fh, f) != sizeof fh) {
    fclose(f);
    return;
  }
  *probe = fh.producer == LENS_PRODUCER_SCHED;
  for (int k = 0; k < HOST_CHUNKS_MAX; k++) {
    struct lens_chunk_hdr ch;
    if (fread(&ch, 1, sizeof ch, f) != sizeof ch || ch.magic != LENS_CHUNK_MAGIC) break;
    if (ch.type == LENS_CHUNK_SESSION) {
      struct lens_session s;
      if (ch.payload_len < sizeof s || fread(&s, 1, sizeof s, f) != sizeof s) break;
      size_t n = strnlen(s.host, sizeof s.host - 1);
      if (n >= len) n = len - 1;
      memcpy(host, s.host, n);
      host[n] = 0;
      break;
    }
    if (ch.payload_len > HOST_SKIP_MAX || fseek(f, (long)((ch.payload_len + 7u) & ~7u), SEEK_CUR)) break;
  }
  fclose(f);
}

struct group { char host[64]; size_t *files; size_t n, cap; int probe; };

static int add_to_group(struct group **gs, size_t *ng, size_t *cap, const char *host, int probe, size_t file) {
  struct group *g = NULL;
  for (size_t i = *ng; i-- > 0 && host[0];) /* hosts are few per node; a job's are usually listed together */
    if (!strcmp((*gs)[i].host, host) && (*gs)[i].n < LENS_PASS_GROUP_MAX) {
      g = &(*gs)[i];
      break;
    }
  if (!g) {
    if (*ng == *cap) {
      size_t c = *cap ? *cap * 2 : 16;
      struct group *q = realloc(*gs, c * sizeof *q);
      if (!q) return -1;
      *gs = q, *cap = c;
    }
    g = &(*gs)[(*ng)++];
    memset(g, 0, sizeof *g);
    snprintf(g->host, sizeof g->host, "%s", host);
  }
  if (g->n == g->cap) {
    size_t c = g->cap ? g->cap * 2 : 8;
    size_t *q = realloc(g->files, c * sizeof *q);
    if (!q) return -1;
    g->files = q, g->cap = c;
  }
  g->files[g->n++] = file;
  g->probe |= probe;
  return 0;
}

struct run {
  const char *cmd;
  const struct lens_trace_cli *c;
  const struct lens_pass *passes; size_t n_passes;
  const struct lens_passes_opts *o;
  struct group *groups; size_t n_groups;
  struct lens_passes_out *out;
  struct lens_model **done;        /* per group: its tables without events, once its passes ran, until it joins the skeleton */
  size_t next_skel;                /* groups before this one are in the skeleton (input order) */
  struct lens_filter_tally tally;  /* summed under mu */
  char (*func_have)[512];          /* per group: its operations, when a --func names none there (usage error) */
  pthread_mutex_t mu;
};

/* Groups join the skeleton in input order (the same numbering on any number
 * of threads): a finished group waits, as a model without its events, for
 * the ones before it. Called with mu held. */
static int skeleton_catch_up(struct run *r) {
  while (r->next_skel < r->n_groups && r->done[r->next_skel]) {
    size_t g = r->next_skel;
    if (lens_model_skeleton_add(r->out->skel, r->done[g], &r->out->bases[g])) return -1;
    lens_model_free(r->done[g]);
    r->done[g] = NULL;
    r->next_skel++;
  }
  return 0;
}

static int map_group(struct run *r, size_t g) {
  const struct group *gr = &r->groups[g];
  const char **v = malloc(gr->n * sizeof *v);
  if (!v) return lens_cli_error(r->cmd, "out of memory"), -1;
  for (size_t i = 0; i < gr->n; i++) v[i] = r->c->paths[gr->files[i]];
  /* The notes (a trace read once, a file cut short) are said once every
   * group is read, from the skeleton: none before an error of a later group. */
  struct lens_load_opts lo = {.cupti_files = r->c->cupti, .n_cupti_files = r->c->n_cupti,
                              .min_wait_ns = r->c->min_wait_ns, .no_progress = 1, .no_notes = 1};
  /* Two thirds of a typical trace's events are ProxySteps: folded into
   * their ProxyOp by the reader unless a pass reads them or the starvation
   * analysis marks them (a probe trace is in the group). Under a selection
   * the reader holds them resolved but uncounted (LENS_LOAD_FOLD_LATER) and
   * the selection counts the ones it keeps, each on its own test, as it
   * keeps a step event. A pass that reads each step but not its states
   * (net, report) gets the steps' facts (LENS_LOAD_STEP_FACTS). */
  int fold = !gr->probe, facts = 0;
  for (size_t k = 0; k < r->n_passes; k++) {
    if (r->passes[k].needs & LENS_PASS_STEPS) fold = 0;
    if (r->passes[k].needs & LENS_PASS_STEP_FACTS) facts = 1;
  }
  if (fold)
    lo.load_flags = LENS_LOAD_FOLD_STEPS | (lens_filter_any(&r->c->filter) ? LENS_LOAD_FOLD_LATER : 0) |
                    (facts ? LENS_LOAD_STEP_FACTS : 0);
  /* --since/--until: the events outside the window are not built at all
   * (lens_model_load_window), the selection below narrows what was built
   * to the same events as from a full model. Not with --func (the check
   * that a name exists reads every operation) nor with a probe trace (the
   * starvation analysis reads every event). */
  const struct lens_filter *f = &r->c->filter;
  struct lens_load_window win = {.have_since = f->have_since, .have_until = f->have_until,
                                 .since_ns = f->since_ns, .until_ns = f->until_ns};
  if ((f->have_since || f->have_until) && !f->n_funcs && !gr->probe) lo.window = &win;
  else if (!lens_filter_any(f) && !gr->probe && r->o && r->o->group_window &&
           r->o->group_window(r->o->group_window_ctx, g, &win) == 1)
    lo.window = &win; /* the caller's own (the timeline's): no selection narrows it */
  struct lens_model *m = lens_cli_load(r->cmd, v, gr->n, &lo);
  free(v);
  if (!m) return -1;
  lens_trace_cli_name_inputs(r->c, m); /* "-", x.lens.gz: as the user named them */
  struct lens_filter_tally t = {0};
  t.comm_hit = calloc(f->n_comms + 1, 1);
  t.func_hit = calloc(f->n_funcs + 1, 1);
  if (r->func_have) t.func_have = r->func_have[g], t.func_have_len = sizeof r->func_have[g];
  int rc = -1;
  if (!t.comm_hit || !t.func_hit) {
    lens_cli_error(r->cmd, "out of memory");
    goto out;
  }
  uint64_t built = m->n_events + m->n_pending_steps; /* a pending folded step is an event built */
  if (lens_filter_apply_ex(r->cmd, f, m, LENS_FILTER_PART, &t)) goto out;
  if (lo.window) t.total += win.events_total - built; /* "keeps N of M": M the job's events, built or not */
  for (size_t k = 0; k < r->n_passes; k++) {
    void *p = r->passes[k].map(m, r->passes[k].ctx);
    if (!p) goto out;
    r->out->parts[k * r->n_groups + g] = p;
  }
  /* The passes copied what they keep: only the skeleton's tables remain to
   * be taken, so the events go now (the heap reuses their pages) and the
   * group waits for the ones before it as a model without events. */
  uint64_t n_events = m->n_events + m->folded_steps; /* a folded ProxyStep is an event read */
  struct lens_model *mini = lens_model_skeleton_new();
  if (!mini || lens_model_skeleton_add(mini, m, NULL)) {
    lens_model_free(mini);
    lens_cli_error(r->cmd, "out of memory");
    goto out;
  }
  lens_model_free(m);
  m = NULL;
  rc = 0;
  pthread_mutex_lock(&r->mu);
  r->out->events += n_events;
  r->tally.kept += t.kept, r->tally.total += t.total;
  for (size_t k = 0; k < f->n_comms; k++) r->tally.comm_hit[k] |= t.comm_hit[k];
  for (size_t k = 0; k < f->n_funcs; k++) r->tally.func_hit[k] |= t.func_hit[k];
  r->done[g] = mini;
  if (skeleton_catch_up(r)) rc = -1, lens_cli_error(r->cmd, "out of memory");
  pthread_mutex_unlock(&r->mu);
out:
  free(t.comm_hit);
  free(t.func_hit);
  lens_model_free(m);
  return rc;
}

/* Group g on a worker thread of the pool (work_pool.h: its lines said in input order). */
static int map_item(void *ctx, size_t g, FILE *out) {
  (void)out;
  return map_group(ctx, g);
}

/* A --comm or --func that no group holds is the same usage error as for one
 * model, with what the traces have: the skeleton's communicators, the
 * groups' operations in input order. */
static int check_names(const struct run *r, const struct lens_filter *f) {
  const struct lens_filter_tally *t = &r->tally;
  char have[512] = "";
  for (size_t k = 0; k < f->n_comms; k++)
    if (!t->comm_hit[k])
      return lens_cli_usage(r->cmd, "--comm %s: no such communicator in these traces (they have %s)", f->comms[k],
                            lens_filter_list_comms(r->out->skel, have, sizeof have));
  for (size_t k = 0; k < f->n_funcs; k++)
    if (!t->func_hit[k]) {
      for (size_t g = 0; r->func_have && g < r->n_groups; g++) lens_filter_list_add(have, sizeof have, r->func_have[g]);
      return lens_cli_usage(r->cmd, "--func %s: no such operation in these traces (they have %s)", f->funcs[k], have);
    }
  return 0;
}

int lens_passes_run(const char *cmd, struct lens_trace_cli *c, const struct lens_pass *passes, size_t n_passes,
                    const struct lens_passes_opts *o, struct lens_passes_out *out) {
  memset(out, 0, sizeof *out);
  out->n_passes = n_passes;
  if (lens_trace_cli_expand_dirs(cmd, c)) return 1;
  struct run r = {.cmd = cmd, .c = c, .passes = passes, .n_passes = n_passes, .o = o, .out = out};
  size_t cap = 0;
  int rc = 1;
  for (size_t i = 0; i < c->n; i++) {
    char host[64];
    int probe;
    lens_pass_trace_host(c->paths[i], host, sizeof host, &probe);
    /* CUPTI buffer files name no host: every trace is then one group. */
    if (c->n_cupti) snprintf(host, sizeof host, "all");
    if (add_to_group(&r.groups, &r.n_groups, &cap, host, probe, i)) goto oom;
  }
  out->n_groups = r.n_groups;
  out->skel = lens_model_skeleton_new();
  out->bases = calloc(r.n_groups + 1, sizeof *out->bases);
  out->hosts = calloc(r.n_groups + 1, sizeof *out->hosts);
  out->parts = calloc(n_passes * r.n_groups + 1, sizeof *out->parts);
  r.done = calloc(r.n_groups + 1, sizeof *r.done);
  r.tally.comm_hit = calloc(c->filter.n_comms + 1, 1);
  r.tally.func_hit = calloc(c->filter.n_funcs + 1, 1);
  if (c->filter.n_funcs && !(r.func_have = calloc(r.n_groups + 1, sizeof *r.func_have))) goto oom;
  if (!out->skel || !out->bases || !out->hosts || !out->parts || !r.done ||
      !r.tally.comm_hit || !r.tally.func_hit)
    goto oom;
  for (size_t g = 0; g < r.n_groups; g++) memcpy(out->hosts[g], r.groups[g].host, sizeof out->hosts[g]);
  pthread_mutex_init(&r.mu, NULL);
  /* Each worker builds and frees model after model. glibc serves blocks of
   * 32 MiB and more with fresh mmaps, so every model faulted its pages in
   * again; from the heap, kept, the pages are reused (docs/scale.md). */
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  int progress = !(o && o->no_progress) && r.n_groups > 1;
  struct lens_cli_pool pool = {.cmd = cmd, .n = r.n_groups, .threads = o ? o->threads : 0, .stop_on_fail = 1,
                               .progress = !progress            ? NULL
                                           : c->progress_label ? c->progress_label
                                                               : "reading traces (host groups)",
                               .fn = map_item, .ctx = &r};
  int failed = lens_cli_pool_run(&pool);
  malloc_trim(0);
  mallopt(M_MMAP_MAX, 65536);
  pthread_mutex_destroy(&r.mu);
  if (failed) goto out;
  if (r.next_skel != r.n_groups) goto oom;
  lens_cli_load_notes(cmd, out->skel);
  if (lens_filter_any(&c->filter)) {
    if ((rc = check_names(&r, &c->filter))) goto out;
    fprintf(stderr, "nccl-lens %s: the selection keeps %llu of %llu events\n", cmd, (unsigned long long)r.tally.kept,
            (unsigned long long)r.tally.total);
  }
  rc = 0;
  goto out;
oom:
  lens_cli_error(cmd, "out of memory");
out:
  for (size_t g = 0; r.done && g < r.n_groups; g++) lens_model_free(r.done[g]);
  free(r.done);
  for (size_t g = 0; g < r.n_groups; g++) free(r.groups[g].files);
  free(r.groups);
  free(r.tally.comm_hit);
  free(r.tally.func_hit);
  free(r.func_have);
  return rc;
}

void lens_passes_free(const struct lens_pass *passes, struct lens_passes_out *out) {
  for (size_t k = 0; out->parts && k < out->n_passes; k++)
    for (size_t g = 0; g < out->n_groups; g++) {
      void *p = out->parts[k * out->n_groups + g];
      if (!p) continue;
      if (passes[k].free) passes[k].free(p);
      else free(p);
    }
  free(out->parts);
  free(out->bases);
  free(out->hosts);
  lens_model_free(out->skel);
  memset(out, 0, sizeof *out);
}
