/* lens_model_load_window: a load that builds only the events a time window
 * (the CLI's --since/--until) keeps, and what decides their fields, so that
 * a window of a huge job costs about the window (docs/scale.md, "A time
 * window").
 *
 * The selection's rule (tools/cli/filter.c): an event is in the window if
 * start <= origin + until and (never stopped or stop >= origin + since),
 * origin the earliest event start of its host. Three reads of the same bytes:
 *   1. origin: each file's earliest START (and what kinds of event it holds);
 *   2. decide, file by file: its STARTs, their first STOP (as the loader
 *      applies them: the latest START of an id takes its records), the ones
 *      in the window, and to those the events that decide their fields in
 *      the model: every ancestor (communicator, graph mark, missing-parent
 *      flag, the selection's groups), every ProxyStep with the same parent
 *      and step (the superseded mark), the file's earliest event (the
 *      origin), the types the caller keeps whole; a PXN ProxyOp's parent in
 *      another process is asked of that process's files (decided again if
 *      they were already);
 *   3. the load, building those STARTs only and dropping the STOP and STATE
 *      records of the others (they are no orphans).
 * The model is then a superset of the window's events whose events are
 * exactly as a full load makes them; the selection narrows it as it
 * narrows a full model. One reach differs: a STATE run record joins its
 * event's previous STATE if that is among the last 65,536 states read
 * (records.c); with fewer events built, a crafted run record farther than
 * that from its first record can join where a full load's would not. A
 * writer puts both in one chunk (at most 8,192 records), so never there.
 * Memory beyond the model: the files' bytes (a full load holds them too),
 * two bits per record, and while one file is decided, about 80 bytes per
 * START (its row and id table slot) and 24 per STOP/STATE of that file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_read.h"
#include "reader_priv.h"

struct win_file {
  uint8_t *bytes; size_t size;     /* read on the first scan; handed to the model by the load */
  int has_proc;
  uint32_t pid;
  char host[64];
  uint64_t min_start, min_ord;     /* earliest nonzero START time and its START number */
  uint64_t max_start, min_stop;    /* latest START time, earliest nonzero STOP time */
  uint64_t origin;                 /* of its host: UINT64_MAX none */
  int gpu;                         /* holds a START of w->o.keep_types_if, or a CUPTI chunk */
  uint64_t n_starts, n_pends;      /* records of the decision */
  uint8_t *keep, *drop;            /* bits: STARTs built, STOP/STATE records dropped */
  uint64_t n_keep;
  size_t req_seen;                 /* requests there were when it was decided */
};

struct dstart { uint64_t id, parent, ts, stop; uint32_t session; uint16_t type; uint8_t remote, stopped; int32_t aux; };
struct dpend { uint64_t id, ts; uint32_t session, kind; };
struct req { uint32_t pid; uint64_t id; };

struct lens_win {
  struct lens_load_window o;
  struct win_file *f; size_t n;
  const size_t *index; /* a rescan's file (NULL: the k-th read file is file k) */
  int keep_on;         /* keep_types apply to this load */
  int all;             /* the window holds every event: the load builds all, decides nothing */
  /* The file being decided. */
  struct dstart *t; size_t nt, cap_t;
  struct dpend *p; size_t np, cap_p;
  struct lens_hash ids;
  /* PXN parents asked of other processes: (pid, id), each once. */
  struct req *rq; size_t n_rq, cap_rq;
  struct lens_hash rq_set;
};

#define BIT(v, i) ((v)[(i) >> 3] >> ((i) & 7) & 1)
#define SET(v, i) ((v)[(i) >> 3] |= (uint8_t)(1u << ((i) & 7)))

size_t lens_win_index(const struct lens_win *w, size_t k) { return w->index ? w->index[k] : k; }
uint64_t lens_win_kept(const struct lens_win *w, size_t k) {
  return k >= w->n ? 0 : w->all ? w->f[k].n_starts : w->f[k].n_keep;
}

int lens_win_bytes(struct lens_builder *b, const char *path, uint8_t **addr, size_t *size) {
  struct lens_win *w = b->win;
  if (b->win_file >= w->n) return lens_builder_oom(b); /* not reached: the scans read the same list */
  struct win_file *f = &w->f[b->win_file];
  if (!f->bytes && lens_read_regular_file(path, UINT64_MAX, "trace", &f->bytes, &f->size, b->err, b->err_len))
    return -1;
  *addr = f->bytes;
  *size = f->size;
  if (b->win_mode == LENS_WIN_BUILD) f->bytes = NULL; /* the model's now */
  return 0;
}

int lens_win_start(struct lens_builder *b, uint32_t session, const struct lens_rec_start *s, const uint8_t *r,
                   size_t size) {
  struct lens_win *w = b->win;
  struct win_file *f = &w->f[b->win_file];
  uint64_t ord = b->win_starts++;
  switch (b->win_mode) {
  case LENS_WIN_ORIGIN:
    if (s->ts && s->ts < f->min_start) f->min_start = s->ts, f->min_ord = ord;
    if (s->ts > f->max_start) f->max_start = s->ts;
    if (w->o.keep_types_if >> s->h.type & 1) f->gpu = 1;
    return 0;
  case LENS_WIN_DECIDE: {
    struct dstart *d = LENS_VEC_PUSH(w, w->t, w->nt, cap_t);
    if (!d) return lens_builder_oom(b);
    *d = (struct dstart){.id = s->id, .parent = s->parent, .ts = s->ts, .session = session,
                         .type = (uint16_t)s->h.type,
                         .remote = (s->h.aux & LENS_START_F_REMOTE) || (s->id & LENS_ID_REMOTE)};
    /* ProxyOp: the pid a PXN parent lives in; ProxyStep: its step (both int32 first in the payload). */
    if ((s->h.type == LENS_T_PROXY_OP || s->h.type == LENS_T_PROXY_STEP) && size >= sizeof *s + 4)
      memcpy(&d->aux, r + sizeof *s, 4);
    return 0;
  }
  default: /* the load: a START the window leaves out is counted, not built */
    return w->all || ord >= f->n_starts || BIT(f->keep, ord); /* more than the scans saw: built */
  }
}

int lens_win_pend(struct lens_builder *b, uint32_t session, uint32_t kind, uint64_t id, uint64_t ts) {
  struct lens_win *w = b->win;
  struct win_file *f = &w->f[b->win_file];
  uint64_t ord = b->win_pends++;
  switch (b->win_mode) {
  case LENS_WIN_ORIGIN:
    if (kind == LENS_REC_STOP && ts && ts < f->min_stop) f->min_stop = ts;
    return 0;
  case LENS_WIN_DECIDE: {
    struct dpend *q = LENS_VEC_PUSH(w, w->p, w->np, cap_p);
    if (!q) return lens_builder_oom(b);
    *q = (struct dpend){id, ts, session, kind};
    return 0;
  }
  default: return w->all || ord >= f->n_pends || !BIT(f->drop, ord);
  }
}

static int ask_parent(struct lens_win *w, uint32_t pid, uint64_t id) {
  int64_t v;
  if (lens_hash_get(&w->rq_set, pid, id, &v)) return 0;
  if (lens_hash_put(&w->rq_set, pid, id, 1)) return -1;
  struct req *q = LENS_VEC_PUSH(w, w->rq, w->n_rq, cap_rq);
  if (!q) return -1;
  *q = (struct req){pid, id};
  return 0;
}

/* A ProxyStep's (parent, step), one key: a collision only keeps more. */
static uint64_t step_key(const struct dstart *d) {
  return d->parent * 0x9E3779B97F4A7C15ull ^ (uint32_t)d->aux;
}

/* The decisions of the file just scanned (see the top of the file). */
static int decide(struct lens_builder *b) {
  struct lens_win *w = b->win;
  struct win_file *f = &w->f[b->win_file];
  const struct lens_load_window *o = &w->o;
  size_t n = w->nt;
  int rc = -1;
  uint8_t *keep = calloc(n / 8 + 1, 1), *drop = calloc(w->np / 8 + 1, 1);
  uint32_t *stack = malloc((n ? n : 1) * sizeof *stack);
  struct lens_hash steps = {0};
  if (!keep || !drop || !stack || lens_hash_reserve(&w->ids, n)) goto out;
  /* Ids as the loader enters them: the latest START of an id wins. */
  for (size_t i = 0; i < n; i++)
    if (lens_hash_put(&w->ids, w->t[i].session, w->t[i].id, (int64_t)i)) goto out;
  int64_t v;
  for (size_t k = 0; k < w->np; k++) { /* the first STOP, in file order */
    const struct dpend *q = &w->p[k];
    if (!lens_hash_get(&w->ids, q->session, q->id, &v)) continue;
    struct dstart *d = &w->t[v];
    if (q->kind == LENS_REC_STOP && !d->stopped) d->stopped = 1, d->stop = q->ts;
  }
  size_t top = 0, n_steps = 0;
  uint64_t og = f->origin;
  for (size_t i = 0; i < n; i++) {
    const struct dstart *d = &w->t[i];
    int in = 1;
    if (og != UINT64_MAX) { /* filter.c's rule, to the letter */
      if (o->have_until && d->ts > og + o->until_ns) in = 0;
      if (o->have_since && d->stop && d->stop < og + o->since_ns) in = 0;
    }
    if (in && d->type == LENS_T_PROXY_STEP && d->parent) {
      if (lens_hash_put(&steps, d->session, step_key(d), 1)) goto out;
      n_steps++;
    }
    if (!in && w->keep_on && (o->keep_types >> d->type & 1)) in = 1;
    if (!in && f->min_start != UINT64_MAX && i == f->min_ord) in = 1;
    if (in) SET(keep, i), stack[top++] = (uint32_t)i;
  }
  /* Parents other processes asked for: every START of the id, any session. */
  int asked = 0;
  for (size_t r = 0; r < w->n_rq && !asked; r++) asked = w->rq[r].pid == f->pid;
  for (size_t i = 0; i < n && (asked || n_steps); i++) {
    const struct dstart *d = &w->t[i];
    if (BIT(keep, i)) continue;
    int in = asked && lens_hash_get(&w->rq_set, f->pid, d->id, &v);
    if (!in && n_steps && d->type == LENS_T_PROXY_STEP && d->parent)
      in = lens_hash_get(&steps, d->session, step_key(d), &v);
    if (in) SET(keep, i), stack[top++] = (uint32_t)i;
  }
  /* Every ancestor, to any depth. */
  while (top) {
    const struct dstart *d = &w->t[stack[--top]];
    if (!d->parent) continue;
    if (d->type == LENS_T_PROXY_OP && d->remote && (uint32_t)d->aux != f->pid) {
      if (ask_parent(w, (uint32_t)d->aux, d->parent)) goto out;
      continue;
    }
    if (!lens_hash_get(&w->ids, d->session, d->parent, &v) || BIT(keep, v)) continue;
    SET(keep, v);
    stack[top++] = (uint32_t)v;
  }
  /* STOP and STATE records of the STARTs left out: dropped (no orphans). */
  for (size_t k = 0; k < w->np; k++) {
    const struct dpend *q = &w->p[k];
    if (lens_hash_get(&w->ids, q->session, q->id, &v) && !BIT(keep, v)) SET(drop, k);
  }
  uint64_t kept = 0;
  for (size_t i = 0; i < n; i++) kept += BIT(keep, i);
  free(f->keep);
  free(f->drop);
  f->keep = keep, f->drop = drop;
  keep = drop = NULL;
  f->n_starts = n, f->n_pends = w->np, f->n_keep = kept;
  f->req_seen = w->n_rq;
  rc = 0;
out:
  free(keep);
  free(drop);
  free(stack);
  lens_hash_free(&steps);
  /* The next file's tables start empty (their memory is the largest file's). */
  w->nt = w->np = 0;
  lens_hash_free(&w->ids);
  return rc ? lens_builder_oom(b) : 0;
}

int lens_win_end_file(struct lens_builder *b) {
  struct lens_win *w = b->win;
  struct win_file *f = &w->f[b->win_file];
  if (b->win_mode == LENS_WIN_ORIGIN) {
    f->has_proc = b->proc >= 0;
    if (b->proc >= 0) {
      const struct lens_proc *p = &b->m->procs[b->proc];
      f->pid = p->pid;
      memcpy(f->host, p->host, sizeof f->host);
    }
    if (b->m->n_cupti && w->o.keep_types_if) f->gpu = 1;
    f->n_starts = b->win_starts, f->n_pends = b->win_pends;
    return 0;
  }
  return b->proc >= 0 ? decide(b) : 0;
}

static void win_free(struct lens_win *w) {
  for (size_t i = 0; i < w->n; i++) {
    free(w->f[i].bytes);
    free(w->f[i].keep);
    free(w->f[i].drop);
  }
  free(w->f);
  free(w->t);
  free(w->p);
  free(w->rq);
  lens_hash_free(&w->ids);
  lens_hash_free(&w->rq_set);
}

/* One read of the files (a scan): its model holds their tables only. */
static int scan(struct lens_win *w, const char *const *paths, size_t n, uint32_t flags, uint32_t mode, char *err,
                size_t err_len) {
  struct lens_model *m = lens_load_files(paths, n, flags, w, mode, err, err_len, NULL);
  lens_model_free(m);
  return m ? 0 : -1;
}

struct lens_model *lens_model_load_window(const char *const *paths, size_t n_paths, uint32_t flags,
                                          struct lens_load_window *win, char *err, size_t err_len,
                                          void (*progress)(uint64_t done, uint64_t total)) {
  flags &= ~LENS_LOAD_FOLD_STEPS; /* a window may keep single steps */
  if (err && err_len) err[0] = 0;
  struct lens_win w = {.o = *win};
  size_t *keep = malloc((n_paths ? n_paths : 1) * sizeof *keep), n_keep = 0, n_dups = 0;
  struct lens_same_trace *dups = calloc(n_paths ? n_paths : 1, sizeof *dups);
  const char **kp = malloc((n_paths ? n_paths : 1) * sizeof *kp);
  struct lens_model *m = NULL;
  if (!keep || !dups || !kp || lens_same_trace_select(paths, n_paths, keep, &n_keep, dups, &n_dups)) goto oom;
  for (size_t k = 0; k < n_keep; k++) kp[k] = paths[keep[k]];
  if (!(w.f = calloc(n_keep ? n_keep : 1, sizeof *w.f))) goto oom;
  w.n = n_keep;
  for (size_t k = 0; k < n_keep; k++) w.f[k].min_start = w.f[k].min_stop = UINT64_MAX;
  if (!n_keep) { /* the load says why */
    m = lens_load_files(paths, n_paths, flags, NULL, LENS_WIN_OFF, err, err_len, progress);
    goto out;
  }
  if (scan(&w, kp, n_keep, flags, LENS_WIN_ORIGIN, err, err_len)) goto out;
  /* Each file's origin: the earliest of its host's files (filter.c's). */
  for (size_t k = 0; k < n_keep; k++) {
    w.f[k].origin = UINT64_MAX;
    if (w.f[k].gpu) w.keep_on = 1;
    if (!w.f[k].has_proc) continue;
    for (size_t j = 0; j < n_keep; j++)
      if (w.f[j].has_proc && !strcmp(w.f[j].host, w.f[k].host) && w.f[j].min_start < w.f[k].origin)
        w.f[k].origin = w.f[j].min_start;
  }
  if (!w.o.keep_types_if) w.keep_on = 1;
  /* A window that holds every START and every stop (--since 0, an --until
   * past the end): nothing to decide, the load builds all. */
  w.all = 1;
  for (size_t k = 0; k < n_keep; k++) {
    const struct win_file *f = &w.f[k];
    if (f->origin == UINT64_MAX) continue;
    if (w.o.have_until && f->max_start > f->origin + w.o.until_ns) w.all = 0;
    if (w.o.have_since && f->min_stop != UINT64_MAX && f->min_stop < f->origin + w.o.since_ns) w.all = 0;
  }
  if (!w.all && scan(&w, kp, n_keep, flags, LENS_WIN_DECIDE, err, err_len)) goto out;
  /* A process asked for PXN parents after its files were decided: again,
   * until no file is asked for anything new (the asks only grow). A chain
   * of PXN parents deeper than any NCCL makes (crafted input) would take a
   * round a link: past 16 rounds the load builds every event instead. */
  for (int again = 1, rounds = 0; again && !w.all; rounds++) {
    again = 0;
    if (rounds == 16) {
      w.all = 1;
      break;
    }
    for (size_t k = 0; k < n_keep; k++) {
      struct win_file *f = &w.f[k];
      int asked = 0;
      for (size_t r = f->req_seen; r < w.n_rq && !asked; r++) asked = f->has_proc && w.rq[r].pid == f->pid;
      if (!asked) {
        f->req_seen = w.n_rq;
        continue;
      }
      w.index = &k;
      int rc = scan(&w, &kp[k], 1, flags, LENS_WIN_DECIDE, err, err_len);
      w.index = NULL;
      if (rc) goto out;
      again = 1;
    }
  }
  free(w.t), free(w.p), free(w.rq);
  w.t = NULL, w.p = NULL, w.rq = NULL;
  w.cap_t = w.cap_p = w.cap_rq = w.n_rq = 0;
  lens_hash_free(&w.rq_set);
  uint64_t total = 0;
  for (size_t k = 0; k < n_keep; k++) total += w.f[k].n_starts;
  win->events_total = total;
  m = lens_load_files(paths, n_paths, flags, &w, LENS_WIN_BUILD, err, err_len, progress);
  goto out;
oom:
  if (err && err_len) snprintf(err, err_len, "out of memory while loading traces");
out:
  win_free(&w);
  free(keep);
  free(dups);
  free(kp);
  return m;
}
