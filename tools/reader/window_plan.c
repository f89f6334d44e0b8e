/* See window_plan.h. */
#define _GNU_SOURCE /* qsort_r */
#include "window_plan.h"

#include <stdlib.h>
#include <string.h>

#include "reader_hash.h"
#include "reader_priv.h"

/* An event the plan has heard of (found by its session and LENS_INDEX_KEY in plan.ids). */
struct went {
  uint64_t parent;
  uint32_t flags;
  uint8_t seen, wanted, done; /* its START decoded; wanted; its touches and parent asked for */
};

struct todo {
  uint64_t id;
  uint32_t session;
};

/* A (session, slot)'s indexed chunks holding STARTs, by their first START. */
struct group {
  uint32_t session, slot;
  size_t first, n; /* into plan.order */
};

struct plan {
  const struct lens_trace_index *ix;
  uint8_t *in;
  uint32_t *queue;
  size_t nq;
  struct lens_hash ids; /* (session, LENS_INDEX_KEY) -> index in ev */
  struct went *ev;
  size_t n_ev, cap_ev;
  uint32_t *order;   /* chunk indices by (session, slot, start_lo) */
  uint64_t *hi_max;  /* per order position: the highest start_hi of its group up to it */
  struct group *g;
  size_t ng;
  struct todo *todo; /* wanted events whose touches and parent are still to be asked for */
  size_t n_todo, cap_todo;
  int oom;
};

static void add(struct plan *p, size_t k) {
  if (p->in[k]) return;
  p->in[k] = 1;
  p->queue[p->nq++] = (uint32_t)k;
}

static void add_cb(void *ctx, size_t k) { add(ctx, k); }

/* The event of (session, id), made when new; NULL out of memory. Valid until the next call. */
static struct went *get(struct plan *p, uint32_t session, uint64_t id) {
  int64_t i;
  if (lens_hash_get(&p->ids, lens_hash_scope(0, session), LENS_INDEX_KEY(id), &i)) return &p->ev[i];
  if (lens_vec_reserve((void **)&p->ev, &p->cap_ev, p->n_ev + 1, sizeof *p->ev) ||
      lens_hash_put(&p->ids, lens_hash_scope(0, session), LENS_INDEX_KEY(id), (int64_t)p->n_ev)) {
    p->oom = 1;
    return NULL;
  }
  memset(&p->ev[p->n_ev], 0, sizeof p->ev[p->n_ev]);
  return &p->ev[p->n_ev++];
}

static int cmp_order(const void *a, const void *b, void *ctx) {
  const struct lens_chunk_ix *c = ctx;
  const struct lens_chunk_ix *x = &c[*(const uint32_t *)a], *y = &c[*(const uint32_t *)b];
  if (x->session != y->session) return x->session < y->session ? -1 : 1;
  if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
  if (x->start_lo != y->start_lo) return x->start_lo < y->start_lo ? -1 : 1;
  return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}

/* The chunks that may hold the START of (session, slot, seq): binary search in its group, then back while an
 * earlier chunk's range may still reach it (a writer's ranges do not overlap; a forged file's may). Unindexed
 * chunks are planned from the start. */
static void starts(struct plan *p, uint32_t session, uint64_t id) {
  uint32_t slot = LENS_ID_SLOT(id);
  uint64_t seq = LENS_ID_SEQ(id);
  size_t lo = 0, hi = p->ng;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct group *g = &p->g[mid];
    if (g->session < session || (g->session == session && g->slot < slot)) lo = mid + 1;
    else hi = mid;
  }
  if (lo == p->ng || p->g[lo].session != session || p->g[lo].slot != slot) return;
  const struct group *g = &p->g[lo];
  size_t a = 0, b = g->n; /* the first chunk of the group whose start_lo > seq */
  while (a < b) {
    size_t mid = a + (b - a) / 2;
    if (p->ix->c[p->order[g->first + mid]].start_lo <= seq) a = mid + 1;
    else b = mid;
  }
  for (size_t i = a; i-- > 0 && p->hi_max[g->first + i] >= seq;) {
    const struct lens_chunk_ix *c = &p->ix->c[p->order[g->first + i]];
    if (c->start_hi >= seq) add(p, p->order[g->first + i]);
  }
}

/* A wanted event whose START was decoded: the chunks touching it, and its parent (of this process: a PXN op's
 * parent is the other process's). Through a work list, not recursion: a forged trace's parent chain is as long
 * as it likes. */
static void want(struct plan *p, uint32_t session, uint64_t id);

static void drain_todo(struct plan *p) {
  while (p->n_todo && !p->oom) {
    struct todo x = p->todo[--p->n_todo];
    struct went *e = get(p, x.session, x.id);
    if (!e) return;
    uint64_t parent = e->parent;
    int remote = (e->flags & LENS_START_F_REMOTE) != 0;
    lens_trace_index_touches(p->ix, x.session, LENS_ID_SLOT(x.id), LENS_ID_SEQ(x.id), add_cb, p);
    if (parent && !remote) want(p, x.session, parent);
  }
}

static void process(struct plan *p, struct went *e, uint32_t session, uint64_t id) {
  e->done = 1;
  if (lens_vec_reserve((void **)&p->todo, &p->cap_todo, p->n_todo + 1, sizeof *p->todo)) {
    p->oom = 1;
    return;
  }
  p->todo[p->n_todo++] = (struct todo){id, session};
}

static void want(struct plan *p, uint32_t session, uint64_t id) {
  struct went *e = get(p, session, id);
  if (!e || e->wanted) return;
  e->wanted = 1;
  if (e->seen) process(p, e, session, id);
  else starts(p, session, id);
}

static int build_groups(struct plan *p) {
  const struct lens_trace_index *ix = p->ix;
  size_t n = 0;
  p->order = malloc((ix->n ? ix->n : 1) * sizeof *p->order);
  p->hi_max = malloc((ix->n ? ix->n : 1) * sizeof *p->hi_max);
  p->g = malloc((ix->n ? ix->n : 1) * sizeof *p->g);
  if (!p->order || !p->hi_max || !p->g) return -1;
  for (size_t k = 0; k < ix->n; k++)
    if ((ix->c[k].flags & LENS_CIX_INDEXED) && ix->c[k].start_hi) p->order[n++] = (uint32_t)k;
  qsort_r(p->order, n, sizeof *p->order, cmp_order, (void *)ix->c);
  for (size_t i = 0; i < n; i++) {
    const struct lens_chunk_ix *c = &ix->c[p->order[i]];
    if (!p->ng || p->g[p->ng - 1].session != c->session || p->g[p->ng - 1].slot != c->slot) {
      p->g[p->ng++] = (struct group){c->session, c->slot, i, 0};
      p->hi_max[i] = c->start_hi;
    } else {
      p->hi_max[i] = p->hi_max[i - 1] > c->start_hi ? p->hi_max[i - 1] : c->start_hi;
    }
    p->g[p->ng - 1].n++;
  }
  return 0;
}

/* The open set a session's window starts from: the last taken 1 ms or more before it, complete; NULL none. */
static const struct lens_open_ix *open_set(const struct lens_trace_index *ix, uint32_t session, uint64_t since) {
  const struct lens_open_ix *s = NULL;
  for (size_t i = 0; i < ix->n_open; i++) {
    const struct lens_open_ix *o = &ix->open[i];
    if (o->session == session && o->taken_mono_ns + 1000000ull <= since &&
        (!s || o->taken_mono_ns > s->taken_mono_ns))
      s = o;
  }
  return s && !(s->flags & LENS_INDEX_OPEN_F_INCOMPLETE) ? s : NULL;
}

int lens_wplan_make(const struct lens_trace_index *ix, const struct lens_wplan_opts *o, lens_wplan_decode_fn decode,
                    void *ctx, uint8_t *in, struct lens_wplan_stats *st) {
  memset(st, 0, sizeof *st);
  struct plan p = {.ix = ix, .in = in, .queue = malloc((ix->n ? ix->n : 1) * sizeof(uint32_t))};
  uint64_t *drained_hi = calloc(ix->n ? ix->n : 1, sizeof *drained_hi);
  if (!p.queue || !drained_hi || build_groups(&p)) goto oom;
  uint64_t s = o->since, u = o->until, m = o->need_margin;
  uint64_t ms = m == UINT64_MAX || m > s ? 0 : s - m, mu = m == UINT64_MAX || u > UINT64_MAX - m ? UINT64_MAX : u + m;
  const struct lens_open_ix *set = NULL;
  uint32_t set_session = UINT32_MAX;
  for (size_t k = 0; k < ix->n; k++) {
    const struct lens_chunk_ix *c = &ix->c[k];
    if (c->session != set_session) { /* a session's open set: once, and its events' START chunks */
      set_session = c->session;
      set = open_set(ix, c->session, s);
      if (!set) st->no_open_set = 1;
      for (size_t i = 0; set && i < set->n_ids; i++) {
        want(&p, set_session, ix->ids[set->ids + i]);
        drain_todo(&p);
      }
    }
    for (size_t d = 0; set && d < set->n_drained; d++)
      if (ix->drained[set->drained + d].slot == c->slot) drained_hi[k] = ix->drained[set->drained + d].seq_hi;
    int need = !(c->flags & LENS_CIX_INDEXED) || (c->first_ts < u && c->last_ts >= s) ||
               (c->start_hi && c->first_ts < u && c->start_hi > drained_hi[k]) ||
               ((c->types & o->need_types) && c->last_ts >= ms && c->first_ts < mu);
    if (need) add(&p, k);
  }
  for (size_t q = 0; q < p.nq && !p.oom; q++) { /* decode each planned chunk once */
    size_t k = p.queue[q];
    uint32_t sess = ix->c[k].session;
    const struct lens_wplan_rec *r;
    size_t n;
    st->decoded++;
    if (decode(ctx, k, &r, &n)) continue;
    for (size_t i = 0; i < n && !p.oom; i++) {
      if (r[i].kind == LENS_REC_START) {
        struct went *e = get(&p, sess, r[i].id);
        if (!e) break;
        e->seen = 1, e->parent = r[i].parent, e->flags = r[i].flags;
        int rule = (r[i].ts >= s && r[i].ts < u) || (r[i].ts < u && LENS_ID_SEQ(r[i].id) > drained_hi[k]) ||
                   ((o->need_types >> (r[i].type & 31) & 1) && r[i].ts >= ms && r[i].ts < mu);
        if (e->wanted && !e->done) process(&p, e, sess, r[i].id);
        else if (!e->wanted && rule) want(&p, sess, r[i].id);
      } else if (r[i].id && r[i].ts >= s && r[i].ts < u) {
        /* Before the window: needed only as a parent, reached from its child. After it: an event that started
         * before the window's end is wanted by the rules above already (in it, open at the set, or started
         * after the set), one that started later is not needed. In it: wanted by those rules too; asked again
         * here so that an open set that missed an event cannot lose a record the window shows. */
        want(&p, sess, r[i].id);
      }
      drain_todo(&p);
    }
  }
  if (p.oom) goto oom;
  st->planned = p.nq;
  free(p.queue), free(drained_hi), free(p.ev), free(p.order), free(p.hi_max), free(p.g), free(p.todo);
  lens_hash_free(&p.ids);
  return 0;
oom:
  memset(in, 1, ix->n);
  st->planned = ix->n;
  free(p.queue), free(drained_hi), free(p.ev), free(p.order), free(p.hi_max), free(p.g), free(p.todo);
  lens_hash_free(&p.ids);
  return -1;
}
