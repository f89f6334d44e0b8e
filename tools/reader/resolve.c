/* Joins done once every file is read: thread -> proxy comm, stop flags,
 * superseded ProxySteps, parents (PXN across processes), comms inherited from
 * parents, graph marks, then events sorted by (proc, start) with children
 * lists and per-event state ranges. */
#include <stdlib.h>
#include <string.h>

#include "oneway.h"
#include "step_phases.h"
#include "reader_priv.h"

#define MAX_DEPTH 16 /* parent chains are short (GroupApi > CollApi > Coll > ProxyOp > Step > Net) */

static void resolve_thread_comms(struct lens_model *m) {
  for (size_t t = 0; t < m->n_threads; t++) {
    struct lens_thread *th = &m->threads[t];
    if (th->proxy_comm > -2) continue;
    uint32_t ci = (uint32_t)(-2 - th->proxy_comm);
    th->proxy_comm = -1;
    for (size_t c = 0; c < m->n_comms; c++)
      if (m->comms[c].proc == th->proc && m->comms[c].comm_index == ci) th->proxy_comm = (int32_t)c;
  }
}

struct step_key { int32_t proc; uint32_t session; uint64_t parent; int32_t step; uint64_t ts; int32_t idx; };
static int cmp_step(const void *a, const void *b) {
  const struct step_key *x = a, *y = b;
#define C(f) if (x->f != y->f) return x->f < y->f ? -1 : 1
  C(proc); C(session); C(parent); C(step); C(ts); C(idx);
#undef C
  return 0;
}

/* Two keys next to each other in cmp_step's order name one step: the first
 * START was re-posted. */
static int same_step(const struct step_key *x, const struct step_key *y) {
  return x->proc == y->proc && x->session == y->session && x->parent == y->parent && x->step == y->step;
}

/* A second START of a ProxyStep with the same parent and step number replaces
 * the earlier one (NCCL re-posts a recv step). */
static int mark_superseded(struct lens_builder *b) {
  struct lens_model *m = b->m;
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) n += m->events[i].type == LENS_T_PROXY_STEP;
  if (!n) return 0;
  struct step_key *k = malloc(n * sizeof *k);
  if (!k) return lens_builder_oom(b);
  n = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_PROXY_STEP) continue;
    k[n++] = (struct step_key){e->proc, e->session, e->parent_raw, e->p.proxy_step.step, e->start_mono_ns,
                               (int32_t)i};
  }
  qsort(k, n, sizeof *k, cmp_step);
  for (size_t i = 0; i + 1 < n; i++)
    if (k[i].parent && same_step(&k[i], &k[i + 1])) m->events[k[i].idx].flags |= LENS_EVF_SUPERSEDED;
  free(k);
  return 0;
}

/* The same rule for the folded steps (LENS_LOAD_FOLD_STEPS), their START
 * order their order in fsteps as it was among the events, once their
 * parents are resolved. The steps whose parent value names an event have
 * the same (proc, session, parent value) exactly when they have that
 * parent (the id table gives each value one entry): only a parent whose
 * steps do not come in increasing step order (an op's steps do, unless
 * one is re-posted) can have one superseded, and only those parents'
 * steps are sorted, by (parent, step, start, index). The others (parent
 * missing, or a folded step) go through mark_superseded's sort. */
struct fkey { int64_t parent; int32_t step; uint32_t idx; uint64_t ts; };
static int cmp_fkey(const void *a, const void *b) {
  const struct fkey *x = a, *y = b;
#define C(f) if (x->f != y->f) return x->f < y->f ? -1 : 1
  C(parent); C(step); C(ts); C(idx);
#undef C
  return 0;
}

enum { STEPS_NONE = 0, STEPS_RISING, STEPS_AGAIN }; /* a parent's steps so far */

static int mark_superseded_folded(struct lens_builder *b) {
  struct lens_model *m = b->m;
  size_t n = b->n_fsteps, n_again = 0, n_other = 0;
  if (!n) return 0;
  if (n >= UINT32_MAX) return lens_builder_oom(b);
  uint8_t *seen = calloc(m->n_events + 1, 1);
  int32_t *last = malloc((m->n_events + 1) * sizeof *last); /* the parent's last step number so far */
  if (!seen || !last) {
    free(seen), free(last);
    return lens_builder_oom(b);
  }
  for (size_t i = 0; i < n; i++) {
    const struct lens_fstep *f = &b->fsteps[i];
    if (f->parent < 0) {
      n_other += f->parent_raw != 0;
      continue;
    }
    uint8_t *st = &seen[f->parent];
    if (*st == STEPS_RISING && f->step <= last[f->parent]) *st = STEPS_AGAIN;
    else if (*st == STEPS_NONE) *st = STEPS_RISING;
    last[f->parent] = f->step;
  }
  for (size_t i = 0; i < n; i++)
    n_again += b->fsteps[i].parent >= 0 && seen[b->fsteps[i].parent] == STEPS_AGAIN;
  struct fkey *k = malloc((n_again ? n_again : 1) * sizeof *k);
  struct step_key *o = malloc((n_other ? n_other : 1) * sizeof *o);
  if (!k || !o) {
    free(seen), free(last), free(k), free(o);
    return lens_builder_oom(b);
  }
  n_again = n_other = 0;
  for (size_t i = 0; i < n; i++) {
    const struct lens_fstep *f = &b->fsteps[i];
    if (f->parent >= 0 && seen[f->parent] == STEPS_AGAIN)
      k[n_again++] = (struct fkey){f->parent, f->step, (uint32_t)i, f->start};
    else if (f->parent < 0 && f->parent_raw)
      o[n_other++] = (struct step_key){f->proc, f->session, f->parent_raw, f->step, f->start, (int32_t)i};
  }
  qsort(k, n_again, sizeof *k, cmp_fkey);
  for (size_t i = 0; i + 1 < n_again; i++)
    if (k[i].parent == k[i + 1].parent && k[i].step == k[i + 1].step) b->fsteps[k[i].idx].flags |= LENS_EVF_SUPERSEDED;
  qsort(o, n_other, sizeof *o, cmp_step);
  for (size_t i = 0; i + 1 < n_other; i++)
    if (same_step(&o[i], &o[i + 1])) b->fsteps[o[i].idx].flags |= LENS_EVF_SUPERSEDED;
  free(seen), free(last), free(k), free(o);
  return 0;
}

/* A folded step's parent, as resolve_parents would link its event: the id
 * table's entry of its parent value (an event, or another folded step),
 * missing when there is none or it is the step itself. */
static void resolve_fstep_parents(struct lens_builder *b) {
  struct lens_reader_priv *pv = b->priv; /* its id tables' lookups move their cache */
  for (size_t i = 0; i < b->n_fsteps; i++) {
    struct lens_fstep *f = &b->fsteps[i];
    int64_t v;
    f->parent = -1;
    if (!f->parent_raw) continue;
    if (lens_idseq_get(&pv->events[f->proc], f->session, f->parent_raw, &v) &&
        v != LENS_STEP_VALUE(i))
      f->parent = v;
    else
      f->flags |= LENS_EVF_PARENT_MISSING;
  }
}

static int32_t find_in_proc(const struct lens_model *m, int32_t proc, uint64_t id) {
  const struct lens_reader_priv *pv = m->priv;
  for (size_t s = 0; s < pv->n_sessions; s++) {
    if (pv->sessions[s].proc != proc) continue;
    int64_t v;
    if (lens_idseq_peek(&pv->events[proc], pv->sessions[s].session, id, &v))
      return v >= LENS_STEP_VALUE(INT32_MAX - 2) ? (int32_t)v : -1; /* a folded step: LENS_STEP_VALUE */
  }
  return -1;
}

/* PXN: the ProxyOp's parent is a Coll/P2p of the process whose pid is
 * proxy_op.pid (a peer on the same host, preferably). */
static int32_t find_remote_parent(const struct lens_model *m, const struct lens_event *e) {
  const struct lens_proc *own = &m->procs[e->proc];
  int32_t fallback = -1;
  for (size_t p = 0; p < m->n_procs; p++) {
    if ((int32_t)p == e->proc || m->procs[p].pid != (uint32_t)e->p.proxy_op.pid) continue;
    int32_t i = find_in_proc(m, (int32_t)p, e->parent_raw);
    if (i == -1) continue;
    if (!strcmp(m->procs[p].host, own->host)) return i;
    if (fallback < 0) fallback = i;
  }
  return fallback;
}

static void resolve_parents(struct lens_model *m) {
  struct lens_reader_priv *pv = m->priv; /* its id tables' lookups move their cache */
  for (size_t i = 0; i < m->n_events; i++) {
    struct lens_event *e = &m->events[i];
    if (!e->parent_raw) continue;
    int32_t p = -1;
    int64_t v;
    if (e->type == LENS_T_PROXY_OP && (e->flags & LENS_EVF_REMOTE) &&
        (uint32_t)e->p.proxy_op.pid != m->procs[e->proc].pid) {
      p = find_remote_parent(m, e);
      if (p < -1) { /* a folded step (LENS_STEP_VALUE): as below */
        e->parent = p;
        continue;
      }
    } else if (lens_idseq_get(&pv->events[e->proc], e->session, e->parent_raw, &v)) {
      if (v >= 0) p = (int32_t)v;
      else if (v <= LENS_STEP_VALUE(0) && v >= LENS_STEP_VALUE(INT32_MAX - 2)) {
        e->parent = (int32_t)v; /* a folded step (LENS_STEP_VALUE): inherit walks through it, then -1 */
        continue;
      }
    }
    if (p == (int32_t)i) p = -1;
    e->parent = p;
    if (p < 0) e->flags |= LENS_EVF_PARENT_MISSING;
  }
}

static int is_graph_api(const struct lens_event *e) {
  return (e->type == LENS_T_GROUP_API && e->p.group_api.graph_captured) ||
         (e->type == LENS_T_COLL_API && e->p.coll_api.graph_captured) ||
         (e->type == LENS_T_P2P_API && e->p.p2p_api.graph_captured);
}

/* The folded steps' number and flags (folded_steps, folded_evf_counts),
 * those with keep[i] (keep NULL: all). */
static void count_folded(struct lens_builder *b, const uint8_t *keep) {
  struct lens_model *m = b->m;
  uint64_t n = 0;
  for (size_t i = 0; i < b->n_fsteps; i++) {
    if (keep && !keep[i]) continue;
    n++;
    for (uint32_t fl = b->fsteps[i].flags; fl; fl &= fl - 1) m->folded_evf_counts[__builtin_ctz(fl)]++; /* its set bits */
    int32_t p = b->fsteps[i].proc;
    if (p >= 0 && (size_t)p < m->n_procs) m->procs[p].folded_steps++;
  }
  m->folded_steps = n;
}

#define GRAPH_SEEN 1024
/* What the walks read of an event, beside the events: a walk's hops then
 * touch 12 bytes, not an event's cache lines (issue 23: the walks over the
 * events were 8 % of summary). */
struct inherit_node { int32_t parent, comm; uint32_t graph; };

/* An ancestor's parent: an event's, or a folded step's (LENS_STEP_VALUE,
 * as resolve_parents and resolve_fstep_parents give them). */
static int64_t node_parent(const struct lens_builder *b, const struct inherit_node *nd, int64_t a) {
  return a >= 0 ? nd[a].parent : b->fsteps[LENS_STEP_INDEX(a)].parent;
}

/* Comm from the nearest ancestor that has one (remote events, NULL or bad
 * contexts), and the graph mark from any graph-captured API ancestor. A
 * folded step is an ancestor too (it counts in the depth; it is no API and
 * its comm is not looked up). The events in load order, each taking what
 * its ancestors hold at its turn (an earlier event's inherited comm too). */
static int inherit(struct lens_builder *b) {
  struct lens_model *m = b->m;
  struct inherit_node *nd = malloc((m->n_events ? m->n_events : 1) * sizeof *nd);
  if (!nd) return lens_builder_oom(b);
  for (size_t i = 0; i < m->n_events; i++)
    nd[i] = (struct inherit_node){m->events[i].parent, m->events[i].comm,
                                  is_graph_api(&m->events[i]) ? LENS_EVF_GRAPH : 0};
  for (size_t i = 0; i < m->n_events; i++) {
    struct inherit_node *e = &nd[i];
    uint32_t graph = 0;
    int64_t a = (int64_t)i;
    for (int d = 0; d < MAX_DEPTH && a != -1; d++, a = node_parent(b, nd, a)) {
      if (a < 0) continue;
      const struct inherit_node *x = &nd[a];
      if (e->comm < 0 && x->comm >= 0) e->comm = x->comm;
      graph |= x->graph;
    }
    m->events[i].comm = e->comm;
    m->events[i].flags |= graph;
  }
  /* the folded steps' graph marks, their flags counted; the events whose
   * parent is a folded step keep none (it is no event) */
  /* a walk per parent, not per step: the last walks kept by parent (the
   * ops whose steps interleave are few at a time) */
  /* a step without a communicator of its own takes its nearest ancestor
   * event's, as its event would (the same walk) */
  struct { int64_t parent; uint32_t graph; int32_t comm; } seen[GRAPH_SEEN];
  for (size_t k = 0; k < GRAPH_SEEN; k++) seen[k].parent = INT64_MIN;
  for (size_t i = 0; i < b->n_fsteps; i++) {
    struct lens_fstep *f = &b->fsteps[i];
    size_t at = (size_t)f->parent % GRAPH_SEEN;
    if (seen[at].parent != f->parent) {
      uint32_t graph = 0;
      int32_t comm = -1;
      int64_t a = f->parent;
      for (int d = 1; d < MAX_DEPTH && a != -1; d++, a = node_parent(b, nd, a)) {
        if (a >= 0) graph |= nd[a].graph;
        if (a >= 0 && comm < 0 && nd[a].comm >= 0) comm = nd[a].comm;
      }
      seen[at].parent = f->parent, seen[at].graph = graph, seen[at].comm = comm;
    }
    f->flags |= seen[at].graph;
    if (f->comm < 0) f->comm = seen[at].comm;
    if (!(f->flags & LENS_EVF_STOPPED_PRIV)) f->flags |= LENS_EVF_NO_STOP;
    f->flags &= ~LENS_EVF_STOPPED_PRIV;
  }
  free(nd);
  if (!(b->flags & LENS_LOAD_FOLD_LATER)) count_folded(b, NULL);
  /* LENS_LOAD_FOLD_LATER: which step each event under a step had (a
   * selection asks its operation through it) */
  size_t n_under = 0;
  int later = (b->flags & (LENS_LOAD_FOLD_LATER | LENS_LOAD_STEP_FACTS)) && b->n_fsteps;
  for (size_t i = 0; i < m->n_events && later; i++) n_under += m->events[i].parent < -1;
  if (n_under && !(m->pending_children = malloc(n_under * sizeof *m->pending_children))) return lens_builder_oom(b);
  for (size_t i = 0; i < m->n_events && b->n_fsteps; i++) {
    if (m->events[i].parent >= -1) continue;
    if (n_under)
      m->pending_children[m->n_pending_children++] =
          (struct lens_pending_child){(int32_t)i, (int32_t)LENS_STEP_INDEX(m->events[i].parent)};
    m->events[i].parent = -1;
  }
  return 0;
}

/* The model's event order: (proc, start), then load order. */
struct order_key { int32_t proc; int32_t idx; uint64_t ts; };
static inline int key_before(const struct order_key *x, const struct order_key *y) {
  if (x->proc != y->proc) return x->proc < y->proc;
  if (x->ts != y->ts) return x->ts < y->ts;
  return x->idx < y->idx;
}
static int cmp_order(const void *a, const void *b) { return key_before(b, a) - key_before(a, b); }

/* Sorts the keys as qsort with cmp_order would (the keys are unique: idx).
 * They come in load order: each chunk's STARTs in time order, chunks of a
 * process's threads interleaved, so the array is a few long ascending runs;
 * a natural merge of those runs does log2(runs) passes with the comparison
 * inline, where qsort did log2(n) through a pointer (issue 23: the sort was
 * 5 % of summary). Many short runs (crafted input) go to qsort: the runs'
 * table is bounded by n / 8. Returns -1 out of memory. */
static int sort_order_keys(struct order_key *k, size_t n) {
  if (n < 2) return 0;
  size_t cap = n / 8 + 2, n_runs = 1;
  uint32_t *run = malloc(cap * sizeof *run); /* run[r]: its first key; run[n_runs] = n */
  if (!run) return -1;
  run[0] = 0;
  for (size_t i = 1; i < n && n_runs + 1 < cap; i++)
    if (key_before(&k[i], &k[i - 1])) run[n_runs++] = (uint32_t)i;
  if (n_runs + 1 >= cap) {
    free(run);
    qsort(k, n, sizeof *k, cmp_order);
    return 0;
  }
  run[n_runs] = (uint32_t)n;
  struct order_key *tmp = n_runs > 1 ? malloc(n * sizeof *tmp) : NULL;
  if (n_runs > 1 && !tmp) {
    free(run);
    return -1;
  }
  struct order_key *src = k, *dst = tmp;
  while (n_runs > 1) {
    size_t out = 0;
    for (size_t r = 0; r < n_runs; r += 2) {
      size_t lo = run[r], mid = run[r + 1], hi = r + 1 < n_runs ? run[r + 2] : mid; /* an odd run out: copied */
      size_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) dst[o++] = key_before(&src[j], &src[i]) ? src[j++] : src[i++];
      memcpy(dst + o, src + i, (mid - i) * sizeof *dst), o += mid - i;
      memcpy(dst + o, src + j, (hi - j) * sizeof *dst);
      run[out++] = (uint32_t)lo;
    }
    run[out] = (uint32_t)n;
    n_runs = out;
    struct order_key *t = src;
    src = dst, dst = t;
  }
  if (src != k) memcpy(k, src, n * sizeof *k);
  free(tmp);
  free(run);
  return 0;
}

/* Moves events into (proc, start) order in place, following the
 * permutation's cycles: a second multi-GB array would cost more than the sort. */
static void permute(struct lens_event *ev, const struct order_key *k, size_t n, uint8_t *done) {
  for (size_t i = 0; i < n; i++) {
    if (done[i] || (size_t)k[i].idx == i) continue;
    struct lens_event tmp = ev[i];
    size_t j = i;
    while ((size_t)k[j].idx != i) {
      ev[j] = ev[k[j].idx];
      done[j] = 1;
      j = (size_t)k[j].idx;
    }
    ev[j] = tmp;
    done[j] = 1;
  }
}

/* The loader's states (event, state) put in the order dest gives, then
 * made the model's array of lens_state_ev in the same memory: a second
 * array beside them was the largest allocation after the events at the
 * peak of the load (issue 23). Swaps along the permutation's cycles, then
 * each state moved down to its slot of the narrower type (slot i ends
 * before state i+1 begins, so no state is overwritten before it moves),
 * then the tail handed back. */
static struct lens_state_ev *states_in_place(struct lens_state_tmp *t, uint32_t *dest, size_t n) {
  for (size_t i = 0; i < n; i++)
    while (dest[i] != i) {
      uint32_t j = dest[i];
      struct lens_state_tmp x = t[i];
      t[i] = t[j], t[j] = x;
      dest[i] = dest[j], dest[j] = j;
    }
  _Static_assert(sizeof(struct lens_state_ev) <= sizeof(struct lens_state_tmp), "a state's slot never passes its source");
  char *base = (char *)t;
  for (size_t i = 0; i < n; i++) {
    struct lens_state_ev s = t[i].s;
    memcpy(base + i * sizeof s, &s, sizeof s);
  }
  if (!n) { /* as before: an array of one, unused */
    free(t);
    return malloc(sizeof(struct lens_state_ev));
  }
  struct lens_state_ev *st = realloc(t, n * sizeof *st);
  return st ? st : (struct lens_state_ev *)(void *)base; /* a refused shrink keeps the block */
}

static int sort_and_link(struct lens_builder *b) {
  struct lens_model *m = b->m;
  size_t n = m->n_events;
  struct order_key *k = malloc((n ? n : 1) * sizeof *k);
  int32_t *inv = malloc((n ? n : 1) * sizeof *inv);
  uint8_t *done = calloc(n ? n : 1, 1);
  uint32_t *cnt = calloc(n + 1, sizeof *cnt);
  if (!k || !inv || !done || !cnt) {
    free(k), free(inv), free(done), free(cnt);
    return lens_builder_oom(b);
  }
  for (size_t i = 0; i < n; i++) k[i] = (struct order_key){m->events[i].proc, (int32_t)i, m->events[i].start_mono_ns};
  if (sort_order_keys(k, n)) {
    free(k), free(inv), free(done), free(cnt);
    return lens_builder_oom(b);
  }
  for (size_t j = 0; j < n; j++) inv[k[j].idx] = (int32_t)j;
  struct lens_event *ev = m->events;
  size_t n_states = b->n_states;
  permute(ev, k, n, done);
  for (size_t j = 0; j < n; j++) {
    if (ev[j].parent >= 0) ev[j].parent = inv[ev[j].parent];
    ev[j].first_child = ev[j].next_sibling = -1;
  }
  for (size_t i = 0; i < b->n_fsteps; i++) /* LENS_LOAD_FOLD_LATER reads them after the sort */
    if (b->fsteps[i].parent >= 0) b->fsteps[i].parent = inv[b->fsteps[i].parent];
  for (size_t i = 0; i < m->n_pending_children; i++)
    m->pending_children[i].event = inv[m->pending_children[i].event];
  /* LENS_LOAD_STEP_FACTS: where each step's event would sort, its START's
   * place among the events' (events_before: those built before it) breaking
   * a tie of start times as an event's does */
  for (size_t i = 0; i < b->n_fsteps && b->fmore; i++) {
    struct lens_fstep *f = &b->fsteps[i];
    struct order_key key = {f->proc, (int32_t)b->fmore[i].events_before, f->start};
    size_t lo = 0, hi = n; /* the first sorted key not before it: a key of index events_before was built after it */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (cmp_order(&k[mid], &key) < 0) lo = mid + 1;
      else hi = mid;
    }
    b->fmore[i].events_before = (uint32_t)lo;
  }
  /* Children in start order: prepend while walking backwards. */
  for (size_t j = n; j-- > 0;) {
    int32_t p = ev[j].parent;
    if (p < 0) continue;
    ev[j].next_sibling = ev[p].first_child;
    ev[p].first_child = (int32_t)j;
  }
  /* States: stable counting sort by new event index keeps file order. */
  for (size_t s = 0; s < b->n_states; s++) cnt[inv[b->states[s].event] + 1]++;
  for (size_t j = 0; j < n; j++) {
    ev[j].first_state = cnt[j];
    ev[j].n_states = cnt[j + 1];
    cnt[j + 1] += cnt[j];
  }
  free(k); /* the sort's keys go before the states' destinations come */
  uint32_t *dest = malloc((b->n_states ? b->n_states : 1) * sizeof *dest);
  if (!dest) {
    free(inv), free(done), free(cnt);
    return lens_builder_oom(b);
  }
  for (size_t s = 0; s < b->n_states; s++) dest[s] = cnt[inv[b->states[s].event]]++;
  struct lens_state_ev *st = states_in_place(b->states, dest, b->n_states);
  b->states = NULL;
  b->n_states = b->cap_states = 0;
  free(dest);
  if (!st) {
    free(inv), free(done), free(cnt);
    return lens_builder_oom(b);
  }
  struct lens_reader_priv *pv = b->priv;
  for (size_t p = 0; p < pv->n_events_hash; p++) lens_idseq_renumber(&pv->events[p], inv, n);
  free(m->states);
  m->states = st;
  m->n_states = n_states;
  free(inv);
  free(done);
  free(cnt);
  return 0;
}

/* LENS_LOAD_FOLD_STEPS: each step that stopped counts on the ProxyOp its
 * parent value names in its process and session, as resolve_parents would
 * link it. */
_Static_assert(sizeof(((struct lens_payload *)0)->proxy_op.folded_phase_ns) == LENS_STEP_NPHASES * sizeof(uint64_t),
               "one folded sum per step phase");
static void fold_steps(struct lens_builder *b, const uint8_t *keep) {
  struct lens_model *m = b->m;
  for (size_t i = 0; i < b->n_fsteps; i++) {
    const struct lens_fstep *f = &b->fsteps[i];
    if (keep && !keep[i]) continue;
    if ((!f->stop && f->ev < 0) || f->parent < 0 || m->events[f->parent].type != LENS_T_PROXY_OP) continue;
    struct lens_event *op = &m->events[f->parent];
    /* step LENS_ONEWAY_STEP: its one-way evidence (oneway.h), whether it
     * stopped or not; every start of a send step precedes its post (the
     * latest counts), and a recv start superseded before irecv gave a
     * request has no post (not read) */
    if (f->ev >= 0)
      lens_oneway_fold(&op->p.proxy_op.folded_oneway_ns, op->p.proxy_op.is_send, b->fevs[f->ev].pre,
                       b->fevs[f->ev].post);
    if (!f->stop) continue;
    /* its phases, split as the network view splits a step event (a stop
     * before its start: untimed there, not split here either) */
    if (f->stop >= f->start)
      lens_step_phases_add(&f->bounds, op->p.proxy_op.is_send ? LENS_STEP_DIR_SEND : LENS_STEP_DIR_RECV, f->start,
                           f->stop, op->p.proxy_op.folded_phase_ns);
    if (!op->p.proxy_op.folded_stops++) op->p.proxy_op.folded_stop_lo = op->p.proxy_op.folded_stop_hi = f->stop;
    if (f->stop < op->p.proxy_op.folded_stop_lo) op->p.proxy_op.folded_stop_lo = f->stop;
    if (f->stop > op->p.proxy_op.folded_stop_hi) op->p.proxy_op.folded_stop_hi = f->stop;
  }
}

/* LENS_LOAD_FOLD_STEPS: what the summary and the hang diagnosis read of a
 * ProxyOp's step children and of a thread's steps (lens_folded_op,
 * lens_thread.folded_*), the superseded steps left out where they leave
 * them out. */
static int fold_children(struct lens_builder *b, const uint8_t *keep) {
  struct lens_model *m = b->m;
  for (size_t t = 0; t < m->n_threads && b->n_fsteps; t++) m->threads[t].folded_first_ns = UINT64_MAX;
  for (size_t i = 0; i < b->n_fsteps; i++) {
    const struct lens_fstep *f = &b->fsteps[i];
    if (keep && !keep[i]) continue;
    int kept = !(f->flags & LENS_EVF_SUPERSEDED);
    if (f->thread >= 0 && (size_t)f->thread < m->n_threads) {
      struct lens_thread *th = &m->threads[f->thread];
      if (f->start < th->folded_first_ns) th->folded_first_ns = f->start;
      th->folded_starts++; /* folded_last_ns: while reading (records.c) */
      th->folded_steps += kept;
      if (kept) th->folded_bytes += f->bytes;
    }
    if (!kept || f->parent < 0 || m->events[f->parent].type != LENS_T_PROXY_OP) continue;
    struct lens_event *op = &m->events[f->parent];
    if (!op->p.proxy_op.folded_op) {
      if (m->n_folded_ops >= UINT32_MAX - 1) continue; /* never: an op holds steps */
      struct lens_folded_op *n = LENS_VEC_PUSH(b, m->folded_ops, m->n_folded_ops, cap_folded_ops);
      if (!n) return lens_builder_oom(b);
      memset(n, 0, sizeof *n);
      op->p.proxy_op.folded_op = (uint32_t)m->n_folded_ops;
    }
    struct lens_folded_op *o = &m->folded_ops[op->p.proxy_op.folded_op - 1];
    o->steps++;
    o->bytes += f->bytes;
    if (f->stop) { /* stopped: the next step after it may be the one never posted */
      if (f->step + 1 > o->next_step) o->next_step = f->step + 1;
      continue;
    }
    if (o->has_wait && f->step >= o->wait_step) continue;
    o->has_wait = 1;
    o->wait_step = f->step, o->wait_thread = f->thread;
    o->wait_start_ns = f->start;
    const struct lens_frun *u = f->run >= 0 ? &b->fruns[f->run] : NULL; /* its state entries, if any */
    o->wait_state = u ? u->state : 0;
    o->wait_since_ns = u ? u->since : f->start;
    o->wait_last_ns = !u ? f->start : u->last > u->ts ? u->last : u->ts;
    o->wait_repeats = u ? u->before + (u->count ? u->count : 1) : 0;
  }
  for (size_t t = 0; t < m->n_threads && b->n_fsteps; t++)
    if (m->threads[t].folded_first_ns == UINT64_MAX) m->threads[t].folded_first_ns = 0;
  return 0;
}

static int keep_pending(struct lens_builder *b);
static int step_facts(struct lens_builder *b);
static void step_children(struct lens_model *m, const int32_t *at);

int lens_resolve_model(struct lens_builder *b) {
  struct lens_model *m = b->m;
  resolve_thread_comms(m);
  resolve_fstep_parents(b);
  if (mark_superseded_folded(b)) return -1;
  int later = (b->flags & LENS_LOAD_FOLD_LATER) != 0;
  if (!later) fold_steps(b, NULL);
  if (!later && fold_children(b, NULL)) return -1;
  for (size_t i = 0; i < m->n_events; i++) {
    struct lens_event *e = &m->events[i];
    if (!(e->flags & LENS_EVF_STOPPED_PRIV)) e->flags |= LENS_EVF_NO_STOP;
    e->flags &= ~LENS_EVF_STOPPED_PRIV;
  }
  if (mark_superseded(b)) return -1;
  resolve_parents(m);
  if (inherit(b)) return -1;
  if (sort_and_link(b)) return -1;
  if ((b->flags & LENS_LOAD_STEP_FACTS) && step_facts(b)) return -1;
  if (!later) step_children(m, NULL);
  return later ? keep_pending(b) : 0;
}

/* LENS_LOAD_STEP_FACTS: every step's facts (lens_model_fold keeps the
 * kept ones), their op's direction choosing its bytes and bounds. */
static int step_facts(struct lens_builder *b) {
  struct lens_model *m = b->m;
  if (!b->n_fsteps || !b->fmore) return 0;
  m->step_facts = calloc(b->n_fsteps, sizeof *m->step_facts);
  if (!m->step_facts) return lens_builder_oom(b);
  for (size_t i = 0; i < b->n_fsteps; i++) {
    const struct lens_fstep *f = &b->fsteps[i];
    const struct lens_fstep_more *y = &b->fmore[i];
    struct lens_step_fact *x = &m->step_facts[i];
    int op = f->parent >= 0 && m->events[f->parent].type == LENS_T_PROXY_OP;
    *x = (struct lens_step_fact){.start_mono_ns = f->start, .stop_mono_ns = f->stop, .op = op ? (int32_t)f->parent : -1,
                                 .proc = f->proc, .flags = f->flags, .events_before = y->events_before};
    if (!op) continue;
    int send = m->events[f->parent].p.proxy_op.is_send != 0, k = send ? 0 : 2;
    x->bound_ns[0] = f->bounds.ts[k], x->bound_ns[1] = f->bounds.ts[k + 1];
    if (f->bounds.have >> k & 1u) x->have |= LENS_STEP_HAVE_BOUND0;
    if (f->bounds.have >> (k + 1) & 1u) x->have |= LENS_STEP_HAVE_BOUND1;
    x->arg = send ? y->arg9 : y->arg11;
    if (y->arg_have & (send ? 1u : 2u)) x->have |= LENS_STEP_HAVE_ARG;
  }
  m->n_step_facts = b->n_fsteps;
  free(b->fmore); /* in the facts now */
  b->fmore = NULL;
  return 0;
}

/* LENS_LOAD_STEP_FACTS: the events under a step, its index renumbered as
 * step_facts were kept (at[i]: its new index, -1 left out; NULL: all kept),
 * those lens_model_keep left out gone. */
static void step_children(struct lens_model *m, const int32_t *at) {
  if (!m->step_facts) return;
  size_t k = 0;
  for (size_t i = 0; i < m->n_pending_children; i++) {
    struct lens_step_child c = {m->pending_children[i].event, m->pending_children[i].step};
    if (c.event < 0) continue;
    if (at) c.step = c.step >= 0 ? at[c.step] : -1;
    m->pending_children[k++] = (struct lens_pending_child){c.event, c.step};
  }
  _Static_assert(sizeof(struct lens_step_child) == sizeof(struct lens_pending_child), "the same pair");
  m->step_children = (struct lens_step_child *)(void *)m->pending_children; /* the same two int32 */
  m->n_step_children = k;
  m->pending_children = NULL, m->n_pending_children = 0;
}

/* LENS_LOAD_FOLD_LATER: the resolved steps stay with the model (priv)
 * until lens_model_fold; what a selection reads of them is public. */
static int keep_pending(struct lens_builder *b) {
  struct lens_model *m = b->m;
  struct lens_reader_priv *pv = b->priv;
  if (!b->n_fsteps) return 0;
  m->pending_steps = malloc(b->n_fsteps * sizeof *m->pending_steps);
  if (!m->pending_steps) return lens_builder_oom(b);
  for (size_t i = 0; i < b->n_fsteps; i++) {
    const struct lens_fstep *f = &b->fsteps[i];
    m->pending_steps[i] = (struct lens_pending_step){.start_mono_ns = f->start, .stop_mono_ns = f->stop,
                                                     .proc = f->proc, .thread = f->thread, .comm = f->comm,
                                                     .parent = f->parent >= 0 ? (int32_t)f->parent : -1,
                                                     .flags = f->flags,
                                                     .parent_step = f->parent < -1 ? (int32_t)LENS_STEP_INDEX(f->parent)
                                                                                   : -1};
  }
  m->n_pending_steps = b->n_fsteps;
  pv->fsteps = b->fsteps, pv->n_fsteps = b->n_fsteps, pv->fruns = b->fruns, pv->fevs = b->fevs;
  b->fsteps = NULL, b->fruns = NULL, b->fevs = NULL;
  b->n_fsteps = 0;
  return 0;
}

int lens_model_fold(struct lens_model *m, const uint8_t *keep) {
  struct lens_reader_priv *pv = m->priv;
  if (!pv || !pv->fsteps) return 0;
  struct lens_builder b = {.m = m, .priv = pv, .fsteps = pv->fsteps, .n_fsteps = pv->n_fsteps, .fruns = pv->fruns,
                           .fevs = pv->fevs};
  /* the parents as lens_model_keep left them (a step whose parent is
   * another folded step keeps that: no op) */
  for (size_t i = 0; i < b.n_fsteps; i++)
    if (b.fsteps[i].parent >= 0) b.fsteps[i].parent = m->pending_steps[i].parent;
  for (size_t t = 0; t < m->n_threads; t++) m->threads[t].folded_last_ns = 0;
  for (size_t i = 0; i < b.n_fsteps; i++) {
    const struct lens_fstep *f = &b.fsteps[i];
    if ((keep && !keep[i]) || f->thread < 0 || (size_t)f->thread >= m->n_threads) continue;
    if (f->last > m->threads[f->thread].folded_last_ns) m->threads[f->thread].folded_last_ns = f->last;
  }
  fold_steps(&b, keep);
  int rc = fold_children(&b, keep);
  count_folded(&b, keep);
  if (m->step_facts) { /* the kept steps' facts, in order; the events under one renumbered */
    int32_t *at = malloc((b.n_fsteps ? b.n_fsteps : 1) * sizeof *at);
    if (!at) rc = -1;
    size_t k = 0;
    for (size_t i = 0; i < b.n_fsteps && at; i++) {
      at[i] = keep && !keep[i] ? -1 : (int32_t)k;
      if (at[i] >= 0) m->step_facts[k++] = m->step_facts[i];
    }
    m->n_step_facts = k;
    if (at) step_children(m, at);
    free(at);
  }
  free(pv->fsteps), free(pv->fruns), free(pv->fevs);
  pv->fsteps = NULL, pv->fruns = NULL, pv->fevs = NULL, pv->n_fsteps = 0;
  free(m->pending_steps);
  m->pending_steps = NULL, m->n_pending_steps = 0;
  free(m->pending_children);
  m->pending_children = NULL, m->n_pending_children = 0;
  return rc;
}
