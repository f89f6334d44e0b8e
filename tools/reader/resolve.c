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
    if (k[i].proc == k[i + 1].proc && k[i].session == k[i + 1].session && k[i].parent == k[i + 1].parent &&
        k[i].step == k[i + 1].step && k[i].parent)
      m->events[k[i].idx].flags |= LENS_EVF_SUPERSEDED;
  free(k);
  return 0;
}

static int32_t find_in_proc(const struct lens_model *m, int32_t proc, uint64_t id) {
  const struct lens_reader_priv *pv = m->priv;
  for (size_t s = 0; s < pv->n_sessions; s++) {
    if (pv->sessions[s].proc != proc) continue;
    int64_t v;
    if (lens_idseq_peek(&pv->events[proc], pv->sessions[s].session, id, &v))
      return v >= 0 ? (int32_t)v : -1; /* a folded step is no event */
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
    if (i < 0) continue;
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
        (uint32_t)e->p.proxy_op.pid != m->procs[e->proc].pid)
      p = find_remote_parent(m, e);
    else if (lens_idseq_get(&pv->events[e->proc], e->session, e->parent_raw, &v) && v >= 0)
      p = (int32_t)v;
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

/* Comm from the nearest ancestor that has one (remote events, NULL or bad
 * contexts), and the graph mark from any graph-captured API ancestor. */
static void inherit(struct lens_model *m) {
  for (size_t i = 0; i < m->n_events; i++) {
    struct lens_event *e = &m->events[i];
    int32_t a = (int32_t)i;
    for (int d = 0; d < MAX_DEPTH && a >= 0; d++, a = m->events[a].parent) {
      const struct lens_event *x = &m->events[a];
      if (e->comm < 0 && x->comm >= 0) e->comm = x->comm;
      if (is_graph_api(x)) e->flags |= LENS_EVF_GRAPH;
    }
  }
}

struct order_key { int32_t proc; int32_t idx; uint64_t ts; };
static int cmp_order(const void *a, const void *b) {
  const struct order_key *x = a, *y = b;
  if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
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
  qsort(k, n, sizeof *k, cmp_order);
  for (size_t j = 0; j < n; j++) inv[k[j].idx] = (int32_t)j;
  struct lens_event *ev = m->events;
  size_t n_states = b->n_states;
  permute(ev, k, n, done);
  for (size_t j = 0; j < n; j++) {
    if (ev[j].parent >= 0) ev[j].parent = inv[ev[j].parent];
    ev[j].first_child = ev[j].next_sibling = -1;
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
static void fold_steps(struct lens_builder *b) {
  struct lens_model *m = b->m;
  struct lens_reader_priv *pv = b->priv;
  for (size_t i = 0; i < b->n_fsteps; i++) {
    const struct lens_fstep *f = &b->fsteps[i];
    int64_t v;
    if ((!f->stop && f->ev < 0) || !f->parent_raw ||
        !lens_idseq_get(&pv->events[f->proc], f->session, f->parent_raw, &v) ||
        v < 0 || m->events[v].type != LENS_T_PROXY_OP)
      continue;
    struct lens_event *op = &m->events[v];
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

int lens_resolve_model(struct lens_builder *b) {
  struct lens_model *m = b->m;
  resolve_thread_comms(m);
  fold_steps(b);
  for (size_t i = 0; i < m->n_events; i++) {
    struct lens_event *e = &m->events[i];
    if (!(e->flags & LENS_EVF_STOPPED_PRIV)) e->flags |= LENS_EVF_NO_STOP;
    e->flags &= ~LENS_EVF_STOPPED_PRIV;
  }
  if (mark_superseded(b)) return -1;
  resolve_parents(m);
  inherit(m);
  return sort_and_link(b);
}
