/* See window_plan.h. */
#define _GNU_SOURCE /* qsort_r */
#include "window_plan.h"

#include <stdlib.h>
#include <string.h>

#include "id_seq.h"
#include "reader_priv.h"

/* An event the plan has heard of (found by its session and LENS_INDEX_KEY in plan.ids). */
struct went {
  uint64_t id, parent, start_ts, stop_ts; /* stop_ts: its first STOP decoded (stopped) */
  uint32_t flags, session;
  uint32_t first_child, next_sib;  /* the STARTs seen with it as parent: indices in ev + 1, 0 none */
  uint32_t sib_slot;               /* steps: the thread slot of its first wanted ProxyStep */
  uint8_t type, seen, wanted, done; /* its START decoded; wanted; its touches and parent asked for */
  uint8_t stopped, steps;           /* steps: a ProxyStep of it is wanted, so every one is (step_siblings) */
};

struct todo {
  uint64_t id;
  uint32_t session;
};

struct plan {
  const struct lens_trace_index *ix;
  const struct lens_wplan_opts *o;
  uint8_t *in;
  uint32_t *queue;
  size_t nq;
  uint64_t bytes;    /* of the chunks planned */
  uint64_t need_since, need_until; /* the window widened by need_margin */
  struct lens_idseq ids; /* (session, LENS_INDEX_KEY) -> index in ev: a slot's ids come in runs */
  struct went *ev;
  size_t n_ev, cap_ev;
  struct lens_start_groups sg;
  uint32_t *by_slot; /* every chunk by (session, slot, file order): the sibling ranges' walk */
  struct todo *todo; /* wanted events whose touches and parent are still to be asked for */
  size_t n_todo, cap_todo;
  uint32_t *sib;     /* events whose steps are all wanted, in marking order; sib_done of them ranged */
  size_t n_sib, cap_sib, sib_done;
  int oom;
};

static void add(struct plan *p, size_t k) {
  if (p->in[k]) return;
  p->in[k] = 1;
  p->queue[p->nq++] = (uint32_t)k;
  p->bytes += p->ix->c[k].bytes;
}

static void add_cb(void *ctx, size_t k) { add(ctx, k); }

/* The event of (session, id), made when new; NULL out of memory. Valid until the next call. */
static struct went *get(struct plan *p, uint32_t session, uint64_t id) {
  int64_t i;
  if (lens_idseq_get(&p->ids, session, LENS_INDEX_KEY(id), &i)) return &p->ev[i];
  if (p->n_ev >= INT32_MAX || lens_vec_reserve((void **)&p->ev, &p->cap_ev, p->n_ev + 1, sizeof *p->ev) ||
      lens_idseq_put(&p->ids, session, LENS_INDEX_KEY(id), (int64_t)p->n_ev)) {
    p->oom = 1;
    return NULL;
  }
  memset(&p->ev[p->n_ev], 0, sizeof p->ev[p->n_ev]);
  p->ev[p->n_ev].id = id, p->ev[p->n_ev].session = session;
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

int lens_start_groups_make(const struct lens_trace_index *ix, struct lens_start_groups *sg) {
  memset(sg, 0, sizeof *sg);
  sg->ix = ix;
  size_t n = 0;
  sg->order = malloc((ix->n ? ix->n : 1) * sizeof *sg->order);
  sg->hi_max = malloc((ix->n ? ix->n : 1) * sizeof *sg->hi_max);
  sg->g = malloc((ix->n ? ix->n : 1) * sizeof *sg->g);
  if (!sg->order || !sg->hi_max || !sg->g) {
    lens_start_groups_free(sg);
    return -1;
  }
  for (size_t k = 0; k < ix->n; k++)
    if ((ix->c[k].flags & LENS_CIX_INDEXED) && ix->c[k].start_hi) sg->order[n++] = (uint32_t)k;
  qsort_r(sg->order, n, sizeof *sg->order, cmp_order, (void *)ix->c);
  for (size_t i = 0; i < n; i++) {
    const struct lens_chunk_ix *c = &ix->c[sg->order[i]];
    if (!sg->ng || sg->g[sg->ng - 1].session != c->session || sg->g[sg->ng - 1].slot != c->slot) {
      sg->g[sg->ng++] = (struct lens_start_group){c->session, c->slot, i, 0};
      sg->hi_max[i] = c->start_hi;
    } else {
      sg->hi_max[i] = sg->hi_max[i - 1] > c->start_hi ? sg->hi_max[i - 1] : c->start_hi;
    }
    sg->g[sg->ng - 1].n++;
  }
  return 0;
}

void lens_start_groups_free(struct lens_start_groups *sg) {
  free(sg->order), free(sg->hi_max), free(sg->g);
  memset(sg, 0, sizeof *sg);
}

/* Binary search in its group, then back while an earlier chunk's range may still reach it (a writer's ranges do
 * not overlap; a forged file's may). */
const struct lens_start_group *lens_start_groups_group(const struct lens_start_groups *sg, uint32_t session,
                                                      uint32_t slot) {
  size_t lo = 0, hi = sg->ng;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct lens_start_group *g = &sg->g[mid];
    if (g->session < session || (g->session == session && g->slot < slot)) lo = mid + 1;
    else hi = mid;
  }
  return lo < sg->ng && sg->g[lo].session == session && sg->g[lo].slot == slot ? &sg->g[lo] : NULL;
}

void lens_start_groups_find(const struct lens_start_groups *sg, uint32_t session, uint32_t slot, uint64_t seq,
                            void (*fn)(void *ctx, size_t chunk), void *ctx) {
  const struct lens_start_group *g = lens_start_groups_group(sg, session, slot);
  if (!g) return;
  size_t a = 0, b = g->n; /* the first chunk of the group whose start_lo > seq */
  while (a < b) {
    size_t mid = a + (b - a) / 2;
    if (sg->ix->c[sg->order[g->first + mid]].start_lo <= seq) a = mid + 1;
    else b = mid;
  }
  for (size_t i = a; i-- > 0 && sg->hi_max[g->first + i] >= seq;) {
    const struct lens_chunk_ix *c = &sg->ix->c[sg->order[g->first + i]];
    if (c->start_hi >= seq) fn(ctx, sg->order[g->first + i]);
  }
}

/* The chunks that may hold the START of (session, id); unindexed chunks are planned from the start. */
static void starts(struct plan *p, uint32_t session, uint64_t id) {
  lens_start_groups_find(&p->sg, session, LENS_ID_SLOT(id), LENS_ID_SEQ(id), add_cb, p);
}

/* A wanted event whose START was decoded: the chunks touching it, and its parent (of this process: a PXN op's
 * parent is the other process's). Through a work list, not recursion: a forged trace's parent chain is as long
 * as it likes. */
static void want(struct plan *p, uint32_t session, uint64_t id);
static void mark_steps(struct plan *p, size_t parent, uint32_t slot);

static void drain_todo(struct plan *p) {
  while (p->n_todo && !p->oom) {
    struct todo x = p->todo[--p->n_todo];
    struct went *e = get(p, x.session, x.id);
    if (!e) return;
    uint64_t parent = e->parent;
    int remote = (e->flags & LENS_START_F_REMOTE) != 0, step = e->type == LENS_T_PROXY_STEP;
    lens_trace_index_touches(p->ix, x.session, LENS_ID_SLOT(x.id), LENS_ID_SEQ(x.id), add_cb, p);
    if (!parent || remote) continue;
    want(p, x.session, parent);
    if (step && p->o->step_siblings) {
      struct went *pe = get(p, x.session, parent);
      if (pe && !pe->steps) mark_steps(p, (size_t)(pe - p->ev), LENS_ID_SLOT(x.id));
    }
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

/* Every ProxyStep of event `parent` is wanted: those seen now, those seen later (decode's check), and the
 * chunks where the others may be (its range, once its START and STOP are decoded: sib_ranges). */
static void mark_steps(struct plan *p, size_t parent, uint32_t slot) {
  p->ev[parent].steps = 1;
  p->ev[parent].sib_slot = slot;
  if (lens_vec_reserve((void **)&p->sib, &p->cap_sib, p->n_sib + 1, sizeof *p->sib)) {
    p->oom = 1;
    return;
  }
  p->sib[p->n_sib++] = (uint32_t)parent;
  for (uint32_t c = p->ev[parent].first_child; c && !p->oom; c = p->ev[c - 1].next_sib)
    if (p->ev[c - 1].type == LENS_T_PROXY_STEP && !p->ev[c - 1].wanted) want(p, p->ev[c - 1].session, p->ev[c - 1].id);
}

static int cmp_slot(const void *a, const void *b, void *ctx) {
  const struct lens_chunk_ix *c = ctx;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  if (c[i].session != c[j].session) return c[i].session < c[j].session ? -1 : 1;
  if (c[i].slot != c[j].slot) return c[i].slot < c[j].slot ? -1 : 1;
  return (i > j) - (i < j);
}

/* The parents marked since the last call whose START and STOP the plan has decoded by now (the queue is empty:
 * each is wanted, so both were planned): the chunks of their steps' thread over their life. 1 when it planned a
 * chunk more. */
static int sib_ranges(struct plan *p) {
  const struct lens_trace_index *ix = p->ix;
  size_t nq = p->nq;
  if (p->sib_done < p->n_sib && !p->by_slot) {
    if (!(p->by_slot = malloc((ix->n ? ix->n : 1) * sizeof *p->by_slot))) return p->oom = 1, 0;
    for (size_t k = 0; k < ix->n; k++) p->by_slot[k] = (uint32_t)k;
    qsort_r(p->by_slot, ix->n, sizeof *p->by_slot, cmp_slot, (void *)ix->c);
  }
  for (; p->sib_done < p->n_sib; p->sib_done++) {
    const struct went *e = &p->ev[p->sib[p->sib_done]];
    uint64_t lo = e->seen ? e->start_ts : 0, hi = e->seen && e->stopped ? e->stop_ts : UINT64_MAX;
    size_t a = 0, b = ix->n; /* the thread's first chunk */
    while (a < b) {
      size_t mid = a + (b - a) / 2;
      const struct lens_chunk_ix *c = &ix->c[p->by_slot[mid]];
      if (c->session < e->session || (c->session == e->session && c->slot < e->sib_slot)) a = mid + 1;
      else b = mid;
    }
    for (; a < ix->n; a++) {
      const struct lens_chunk_ix *c = &ix->c[p->by_slot[a]];
      if (c->session != e->session || c->slot != e->sib_slot) break;
      if (!(c->flags & LENS_CIX_INDEXED) || (c->last_ts >= lo && c->first_ts <= hi)) add(p, p->by_slot[a]);
    }
  }
  return p->nq > nq;
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

static void plan_free(struct plan *p, uint64_t *drained_hi) {
  free(p->queue), free(drained_hi), free(p->ev), free(p->by_slot), free(p->todo), free(p->sib);
  lens_start_groups_free(&p->sg);
  lens_idseq_free(&p->ids);
}

/* One decoded record of chunk k. */
static void on_rec(struct plan *p, size_t k, const struct lens_wplan_rec *r, uint64_t drained_hi) {
  const struct lens_wplan_opts *o = p->o;
  uint32_t sess = p->ix->c[k].session;
  uint64_t s = o->since, u = o->until, ms = p->need_since, mu = p->need_until;
  if (r->kind == LENS_REC_START) {
    struct went *e = get(p, sess, r->id);
    if (!e) return;
    if (e->seen) { /* a second START of the id (forged): the first decides */
      if (e->wanted && !e->done) process(p, e, sess, r->id);
      return;
    }
    size_t ei = (size_t)(e - p->ev);
    e->seen = 1, e->parent = r->parent, e->flags = r->flags, e->type = r->type, e->start_ts = r->ts;
    int remote = (r->flags & LENS_START_F_REMOTE) != 0;
    if (r->parent && !remote) { /* its parent's list of children */
      struct went *pe = get(p, sess, r->parent);
      if (!pe) return;
      e = &p->ev[ei]; /* (get may move ev) */
      e->next_sib = pe->first_child;
      pe->first_child = (uint32_t)ei + 1;
      if (pe->steps && e->type == LENS_T_PROXY_STEP && !e->wanted) want(p, sess, r->id);
      e = &p->ev[ei];
    }
    int rule = (r->ts >= s && r->ts < u) || (r->ts < u && LENS_ID_SEQ(r->id) > drained_hi) ||
               ((o->need_types >> (r->type & 31) & 1) && r->ts >= ms && r->ts < mu);
    if (e->wanted && !e->done) process(p, e, sess, r->id);
    else if (!e->wanted && rule) want(p, sess, r->id);
    return;
  }
  if (!r->id) return;
  if (r->kind == LENS_REC_STOP && (o->step_siblings || o->wanted)) { /* its first STOP: a sibling range's end */
    int64_t v;
    if (lens_idseq_get(&p->ids, sess, LENS_INDEX_KEY(r->id), &v) && !p->ev[v].stopped)
      p->ev[v].stopped = 1, p->ev[v].stop_ts = r->ts;
  }
  /* Before the window: needed only as a parent, reached from its child. After it: an event that started before
   * the window's end is wanted by the rules above already (in it, open at the set, or started after the set),
   * one that started later is not needed. In it: wanted by those rules too; asked again here so that an open
   * set that missed an event cannot lose a record the window shows. */
  if (r->ts >= s && r->ts < u) want(p, sess, r->id);
}

int lens_wplan_make(const struct lens_trace_index *ix, const struct lens_wplan_opts *o, lens_wplan_decode_fn decode,
                    void *ctx, uint8_t *in, struct lens_wplan_stats *st) {
  memset(st, 0, sizeof *st);
  struct plan p = {.ix = ix, .o = o, .in = in, .queue = malloc((ix->n ? ix->n : 1) * sizeof(uint32_t))};
  uint64_t *drained_hi = calloc(ix->n ? ix->n : 1, sizeof *drained_hi);
  if (!p.queue || !drained_hi || lens_start_groups_make(ix, &p.sg)) goto oom;
  uint64_t s = o->since, u = o->until, m = o->need_margin;
  /* The needed types' span: the window widened by their margin (saturated), once for every record. */
  p.need_since = m == UINT64_MAX || m > s ? 0 : s - m;
  p.need_until = m == UINT64_MAX || u > UINT64_MAX - m ? UINT64_MAX : u + m;
  uint64_t ms = p.need_since, mu = p.need_until;
  for (size_t i = 0; i < o->n_seeds && !p.oom; i++) {
    want(&p, o->seeds[i].session, o->seeds[i].id);
    drain_todo(&p);
  }
  const struct lens_open_ix *set = NULL;
  uint32_t set_session = UINT32_MAX;
  for (size_t k = 0; k < ix->n && !p.oom; k++) {
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
  /* Decode each planned chunk once; then the sibling ranges the wanted steps ask for, until none is new. A plan
   * past the caller's share gives up (before decoding what a read would decode again). */
  uint64_t limit = o->give_up_pct && o->give_up_pct < 100 ? ix->event_bytes / 100 * o->give_up_pct : UINT64_MAX;
  for (size_t q = 0; !p.oom;) {
    for (; q < p.nq && !p.oom; q++) {
      if (p.bytes > limit) {
        st->gave_up = 1;
        goto whole;
      }
      size_t k = p.queue[q];
      const struct lens_wplan_rec *r;
      size_t n;
      st->decoded++;
      if (decode(ctx, k, &r, &n)) continue;
      for (size_t i = 0; i < n && !p.oom; i++) {
        on_rec(&p, k, &r[i], drained_hi[k]);
        drain_todo(&p);
      }
    }
    if (p.oom || !sib_ranges(&p)) break;
  }
  if (p.oom) goto oom;
  st->planned = p.nq;
  for (size_t i = 0; o->wanted && i < p.n_ev; i++)
    if (p.ev[i].wanted) o->wanted(o->wanted_ctx, p.ev[i].session, p.ev[i].id);
  plan_free(&p, drained_hi);
  return 0;
whole:
  memset(in, 1, ix->n);
  st->planned = ix->n;
  plan_free(&p, drained_hi);
  return 1;
oom:
  memset(in, 1, ix->n);
  st->planned = ix->n;
  plan_free(&p, drained_hi);
  return -1;
}
