/* Hang diagnosis (hang_analysis.h): per communicator, where the ranks part
 * and what each stuck rank's channels and proxy ops wait for. */
#define _GNU_SOURCE /* qsort_r */
#include "hang_analysis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl-lens/nccl_profiler_abi.h"

const char *lens_hang_state_meaning(uint32_t state, int is_send, int step_started) {
  switch (state) {
  case LENS_ST_PROXY_STEP_SEND_GPU_WAIT: return "send: waiting for the GPU to produce the data";
  case LENS_ST_PROXY_STEP_SEND_PEER_WAIT: return "send: data ready, waiting for the peer's credit";
  case LENS_ST_PROXY_STEP_SEND_WAIT: return "send: posted, waiting for the network to complete it";
  case LENS_ST_PROXY_STEP_RECV_WAIT: return "recv: buffer posted, no data from the peer yet";
  case LENS_ST_PROXY_STEP_RECV_FLUSH_WAIT: return "recv: data arrived, waiting for the flush";
  case LENS_ST_PROXY_STEP_RECV_GPU_WAIT: return "recv: data delivered, waiting for the GPU to consume it";
  default: break;
  }
  if (step_started) return is_send ? "send: step started, no state recorded" : "recv: step started, no state recorded";
  return is_send ? "send: step not posted yet" : "recv: step not posted yet";
}

/* A communicator as all loaded traces see it. */
struct lcomm {
  uint64_t comm_id;
  int32_t nranks, first_rec;
};

static int func_index(struct lens_hang_comm *c, const char *func) {
  if (!func) func = "?";
  for (size_t i = 0; i < c->n_funcs; i++)
    if (!strcmp(c->funcs[i], func)) return (int)i;
  if (c->n_funcs == LENS_HANG_MAX_FUNCS) return -1;
  c->funcs[c->n_funcs] = func;
  return (int)c->n_funcs++;
}

/* 1 when every KernelCh and ProxyOp below the Coll stopped (or none exists). */
static int children_done(const struct lens_model *m, const struct lens_event *e) {
  for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    if ((x->type == LENS_T_KERNEL_CH || x->type == LENS_T_PROXY_OP) && x->stop_mono_ns == 0) return 0;
  }
  return 1;
}

static uint64_t ev_last_ns(const struct lens_model *m, const struct lens_event *e) {
  uint64_t t = e->start_mono_ns > e->stop_mono_ns ? e->start_mono_ns : e->stop_mono_ns;
  for (uint32_t i = 0; i < e->n_states; i++) {
    const struct lens_state_ev *st = &m->states[e->first_state + i];
    uint64_t s = st->last_mono_ns > st->ts_mono_ns ? st->last_mono_ns : st->ts_mono_ns; /* a run's last record */
    if (s > t) t = s;
  }
  return t;
}

static int push(void **arr, size_t *n, size_t *cap, size_t size, const void *item) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, nc * size);
    if (!p) return -1;
    *arr = p;
    *cap = nc;
  }
  memcpy((char *)*arr + *n * size, item, size);
  (*n)++;
  return 0;
}

/* The ProxyOp's lowest unfinished step, its last state run. */
static void op_wait(const struct lens_model *m, int32_t oi, struct lens_hang_wait *w) {
  const struct lens_event *op = &m->events[oi];
  w->peer = op->p.proxy_op.peer;
  w->channel = op->p.proxy_op.channel;
  w->is_send = op->p.proxy_op.is_send;
  w->op_event = oi;
  w->thread = op->thread;
  w->step_event = -1;
  int32_t best = -1, next = 0;
  for (int32_t c = op->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *s = &m->events[c];
    if (s->type != LENS_T_PROXY_STEP || (s->flags & LENS_EVF_SUPERSEDED)) continue;
    if (s->stop_mono_ns) {
      if (s->p.proxy_step.step + 1 > next) next = s->p.proxy_step.step + 1;
      continue;
    }
    if (best < 0 || s->p.proxy_step.step < m->events[best].p.proxy_step.step) best = c;
  }
  if (best < 0) {
    w->step = next; /* every started step finished: the next one was never posted */
    return;
  }
  const struct lens_event *s = &m->events[best];
  w->step = s->p.proxy_step.step;
  w->step_started = 1;
  w->step_event = best;
  w->thread = s->thread;
  w->state_since_ns = w->state_last_ns = s->start_mono_ns;
  if (!s->n_states) return;
  const struct lens_state_ev *st = &m->states[s->first_state];
  uint32_t last = st[s->n_states - 1].state;
  uint32_t i = s->n_states;
  uint64_t repeats = 0;
  while (i > 0 && st[i - 1].state == last) { /* a run folds its repeats into one entry (lens_rec_state_run) */
    i--;
    repeats += st[i].count ? st[i].count : 1;
  }
  w->state = last;
  w->state_since_ns = st[i].ts_mono_ns;
  w->state_last_ns = st[s->n_states - 1].last_mono_ns > st[s->n_states - 1].ts_mono_ns ? st[s->n_states - 1].last_mono_ns
                                                                                   : st[s->n_states - 1].ts_mono_ns;
  w->state_repeats = repeats;
}

struct pass {
  const struct lens_model *m;
  struct lcomm *lc;
  size_t n_lc;
  struct lens_hang_report *r;
  uint64_t *max_done_start; /* per (lcomm, rank): latest start of a complete Coll */
  size_t *rank_base;        /* per lcomm: offset into max_done_start */
  int32_t *lc_of;           /* per COMM record: its lcomm */
};

static int lcomm_of(const struct pass *p, int32_t comm) {
  return comm >= 0 && (size_t)comm < p->m->n_comms ? p->lc_of[comm] : -1;
}

static int by_comm_id(const void *a, const void *b, void *model) {
  const struct lens_model *m = model;
  const struct lens_comm *x = &m->comms[*(const int32_t *)a], *y = &m->comms[*(const int32_t *)b];
  if (x->comm_id != y->comm_id) return x->comm_id < y->comm_id ? -1 : 1;
  return *(const int32_t *)a - *(const int32_t *)b;
}

static int build_comms(struct pass *p) {
  const struct lens_model *m = p->m;
  p->lc = calloc(m->n_comms ? m->n_comms : 1, sizeof *p->lc);
  p->lc_of = calloc(m->n_comms ? m->n_comms : 1, sizeof *p->lc_of);
  if (!p->lc || !p->lc_of) return -1;
  /* COMM records by comm_id, sorted: one logical communicator per id */
  int32_t *order = malloc((m->n_comms ? m->n_comms : 1) * sizeof *order);
  if (!order) return -1;
  for (size_t i = 0; i < m->n_comms; i++) order[i] = (int32_t)i;
  qsort_r(order, m->n_comms, sizeof *order, by_comm_id, (void *)m);
  for (size_t j = 0; j < m->n_comms; j++) {
    const struct lens_comm *c = &m->comms[order[j]];
    if (!p->n_lc || p->lc[p->n_lc - 1].comm_id != c->comm_id) p->lc[p->n_lc++] = (struct lcomm){c->comm_id, 0, order[j]};
    struct lcomm *l = &p->lc[p->n_lc - 1];
    if (c->nranks > l->nranks) l->nranks = c->nranks;
    p->lc_of[order[j]] = (int32_t)(p->n_lc - 1);
  }
  free(order);
  struct lens_hang_report *r = p->r;
  r->comms = calloc(p->n_lc ? p->n_lc : 1, sizeof *r->comms);
  p->rank_base = calloc(p->n_lc + 1, sizeof *p->rank_base);
  if (!r->comms || !p->rank_base) return -1;
  r->n_comms = p->n_lc;
  size_t total = 0;
  for (size_t k = 0; k < p->n_lc; k++) {
    struct lens_hang_comm *hc = &r->comms[k];
    int32_t nr = p->lc[k].nranks > 0 && p->lc[k].nranks <= (1 << 20) ? p->lc[k].nranks : 0;
    hc->comm_id = p->lc[k].comm_id;
    hc->nranks = nr;
    hc->stuck_func = -1;
    hc->stuck_seq = -1;
    snprintf(hc->name, sizeof hc->name, "%s", m->comms[p->lc[k].first_rec].name);
    hc->ranks = calloc(nr ? (size_t)nr : 1, sizeof *hc->ranks);
    if (!hc->ranks) return -1;
    for (int32_t i = 0; i < nr; i++) {
      hc->ranks[i].rank = i;
      hc->ranks[i].proc = -1;
      for (int f = 0; f < LENS_HANG_MAX_FUNCS; f++) hc->ranks[i].last_started[f] = hc->ranks[i].last_completed[f] = -1;
    }
    p->rank_base[k] = total;
    total += (size_t)nr;
  }
  p->rank_base[p->n_lc] = total;
  p->max_done_start = calloc(total ? total : 1, sizeof *p->max_done_start);
  if (!p->max_done_start) return -1;
  for (size_t i = 0; i < m->n_comms; i++) {
    int k = lcomm_of(p, (int32_t)i);
    int32_t rk = m->comms[i].rank;
    if (k >= 0 && rk >= 0 && rk < r->comms[k].nranks) r->comms[k].ranks[rk].proc = m->comms[i].proc;
  }
  return 0;
}

/* The Coll's (communicator, rank), or -1. */
static int coll_slot(const struct pass *p, const struct lens_event *e, int *rank) {
  if (e->type != LENS_T_COLL || e->comm < 0) return -1;
  int k = lcomm_of(p, e->comm);
  int32_t rk = p->m->comms[e->comm].rank;
  if (k < 0 || rk < 0 || rk >= p->r->comms[k].nranks) return -1;
  *rank = rk;
  return k;
}

static int diagnose_comm(struct pass *p, int k, int32_t *first_stuck_ev) {
  const struct lens_model *m = p->m;
  struct lens_hang_comm *hc = &p->r->comms[k];
  /* the stuck instance: the earliest-started Coll that never completed */
  int32_t pick = -1;
  for (int32_t rk = 0; rk < hc->nranks; rk++) {
    int32_t ev = first_stuck_ev[p->rank_base[k] + (size_t)rk];
    if (ev >= 0 && (pick < 0 || m->events[ev].start_mono_ns < m->events[pick].start_mono_ns)) pick = ev;
  }
  if (pick < 0) return 0;
  hc->stuck = 1;
  hc->stuck_func = func_index(hc, m->events[pick].p.coll.func);
  hc->stuck_seq = (int64_t)m->events[pick].p.coll.seq;
  int f = hc->stuck_func;
  size_t mcap = 0, ucap = 0;
  for (int32_t rk = 0; rk < hc->nranks; rk++) {
    struct lens_hang_rank *hr = &hc->ranks[rk];
    if (hr->proc < 0) {
      if (push((void **)&hc->untraced, &hc->n_untraced, &ucap, sizeof(int32_t), &rk)) return -1;
      continue;
    }
    hr->entered = f >= 0 && hr->last_started[f] >= hc->stuck_seq;
    if (!hr->entered && push((void **)&hc->missing, &hc->n_missing, &mcap, sizeof(int32_t), &rk))
      return -1;
  }
  /* the stuck instance on each rank that entered it */
  size_t wcap = 0, kcap = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    int rk;
    if (coll_slot(p, e, &rk) != k || (int64_t)e->p.coll.seq != hc->stuck_seq) continue;
    if (func_index(hc, e->p.coll.func) != f || children_done(m, e)) continue;
    if (e->start_mono_ns <= p->max_done_start[p->rank_base[k] + (size_t)rk]) continue;
    hc->ranks[rk].stuck = 1;
    for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling) {
      const struct lens_event *x = &m->events[c];
      if (x->stop_mono_ns) continue;
      if (x->type == LENS_T_KERNEL_CH) {
        struct lens_hang_kch kc = {rk, x->p.kernel_ch.channel, c, x->proc, x->start_mono_ns};
        if (push((void **)&hc->kch, &hc->n_kch, &kcap, sizeof kc, &kc)) return -1;
      } else if (x->type == LENS_T_PROXY_OP) {
        struct lens_hang_wait w;
        memset(&w, 0, sizeof w);
        w.rank = rk;
        w.proc = x->proc;
        op_wait(m, c, &w);
        if (push((void **)&hc->waiting, &hc->n_waiting, &wcap, sizeof w, &w)) return -1;
      }
    }
  }
  p->r->n_stuck_comms++;
  return 0;
}

/* A silent proxy thread x: frozen when a peer's send cycles in SendPeerWait
 * at step S toward one of x's receives (same channel, the sender as peer)
 * that has posted step S or later: the credit is owed by x, which no longer
 * runs (hang_analysis.h). Else waiting_only when every stuck op it drives
 * waits on its GPU or its peer. */
static void frozen_evidence(const struct lens_hang_report *r, struct lens_hang_proxy *x) {
  int ops = 0, owed = 0;
  for (size_t k = 0; k < r->n_comms; k++) {
    const struct lens_hang_comm *c = &r->comms[k];
    for (size_t i = 0; i < c->n_waiting; i++) {
      const struct lens_hang_wait *rv = &c->waiting[i];
      if (rv->thread != x->thread) continue;
      ops++;
      if (rv->is_send || !rv->step_started) continue;
      for (size_t j = 0; j < c->n_waiting && !owed; j++) {
        const struct lens_hang_wait *sd = &c->waiting[j];
        if (!sd->is_send || sd->state != LENS_ST_PROXY_STEP_SEND_PEER_WAIT || sd->state_repeats < 2) continue;
        if (sd->peer != rv->rank || rv->peer != sd->rank || sd->channel != rv->channel || rv->step < sd->step) continue;
        owed = 1;
        x->blocked_rank = sd->rank, x->blocked_channel = sd->channel, x->blocked_step = sd->step;
      }
    }
  }
  x->frozen = owed;
  x->waiting_only = !owed && ops > 0;
}

/* Proxy threads of the processes that hold a stuck rank. */
static int proxies(struct pass *p) {
  const struct lens_model *m = p->m;
  struct lens_hang_report *r = p->r;
  uint64_t *thr_last = calloc(m->n_threads ? m->n_threads : 1, sizeof *thr_last);
  uint64_t *proc_end = calloc(m->n_procs ? m->n_procs : 1, sizeof *proc_end);
  char *want = calloc(m->n_procs ? m->n_procs : 1, 1);
  if (!thr_last || !proc_end || !want) {
    free(thr_last), free(proc_end), free(want);
    return -1;
  }
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    uint64_t t = ev_last_ns(m, e);
    if (e->thread >= 0 && (size_t)e->thread < m->n_threads && t > thr_last[e->thread]) thr_last[e->thread] = t;
    if (e->proc >= 0 && (size_t)e->proc < m->n_procs && t > proc_end[e->proc]) proc_end[e->proc] = t;
  }
  /* the writer's heartbeats: a CLOCK chunk every second, DROPS */
  for (size_t i = 0; i < m->n_procs; i++)
    if (m->procs[i].drops.at_mono_ns > proc_end[i]) proc_end[i] = m->procs[i].drops.at_mono_ns;
  for (size_t i = 0; i < m->n_clocks; i++) {
    int32_t pr = m->clocks[i].proc;
    if (pr >= 0 && (size_t)pr < m->n_procs && m->clocks[i].r.mono_after_ns > proc_end[pr])
      proc_end[pr] = m->clocks[i].r.mono_after_ns;
  }
  for (size_t k = 0; k < r->n_comms; k++)
    for (int32_t rk = 0; r->comms[k].stuck && rk < r->comms[k].nranks; rk++)
      if (r->comms[k].ranks[rk].stuck && r->comms[k].ranks[rk].proc >= 0) want[r->comms[k].ranks[rk].proc] = 1;
  size_t cap = 0;
  int rc = 0;
  for (size_t t = 0; t < m->n_threads && !rc; t++) {
    const struct lens_thread *th = &m->threads[t];
    if (!(th->roles & LENS_ROLE_PROXY) || th->proc < 0 || !want[th->proc]) continue;
    struct lens_hang_proxy x = {th->proc, (int32_t)t, th->proxy_rank, thr_last[t], proc_end[th->proc], 0, 0, -1, -1, -1, 0};
    x.recording = x.last_record_ns && x.trace_end_ns - x.last_record_ns <= LENS_HANG_ALIVE_NS;
    if (!x.recording) frozen_evidence(r, &x);
    r->n_frozen += x.frozen != 0;
    rc = push((void **)&r->proxies, &r->n_proxies, &cap, sizeof x, &x);
  }
  free(thr_last);
  free(proc_end);
  free(want);
  return rc;
}

int lens_hang_analyze(const struct lens_model *m, struct lens_hang_report *r) {
  memset(r, 0, sizeof *r);
  struct pass p = {m, NULL, 0, r, NULL, NULL, NULL};
  int32_t *first_stuck = NULL;
  int rc = build_comms(&p);
  size_t total = rc ? 0 : p.rank_base[p.n_lc];
  if (!rc) {
    first_stuck = malloc((total ? total : 1) * sizeof *first_stuck);
    if (!first_stuck) rc = -1;
    for (size_t i = 0; first_stuck && i < total; i++) first_stuck[i] = -1;
  }
  /* pass 1: last started / completed, latest complete start per rank */
  for (size_t i = 0; !rc && i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    int rk, k = coll_slot(&p, e, &rk);
    if (k < 0) continue;
    struct lens_hang_comm *hc = &r->comms[k];
    int f = func_index(hc, e->p.coll.func);
    if (f < 0) continue;
    struct lens_hang_rank *hr = &hc->ranks[rk];
    int64_t seq = (int64_t)e->p.coll.seq;
    if (seq > hr->last_started[f]) hr->last_started[f] = seq;
    if (children_done(m, e)) {
      if (seq > hr->last_completed[f]) hr->last_completed[f] = seq;
      uint64_t *d = &p.max_done_start[p.rank_base[k] + (size_t)rk];
      if (e->start_mono_ns > *d) *d = e->start_mono_ns;
    }
  }
  /* pass 2: the first Coll per rank that never completed and has no later completed one */
  for (size_t i = 0; !rc && i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    int rk, k = coll_slot(&p, e, &rk);
    if (k < 0 || children_done(m, e)) continue;
    size_t slot = p.rank_base[k] + (size_t)rk;
    if (e->start_mono_ns <= p.max_done_start[slot]) continue; /* a later one completed: a lost stop */
    if (first_stuck[slot] < 0 || e->start_mono_ns < m->events[first_stuck[slot]].start_mono_ns)
      first_stuck[slot] = (int32_t)i;
  }
  for (size_t k = 0; !rc && k < r->n_comms; k++) rc = diagnose_comm(&p, (int)k, first_stuck);
  if (!rc) rc = proxies(&p);
  free(first_stuck);
  free(p.lc);
  free(p.max_done_start);
  free(p.rank_base);
  free(p.lc_of);
  if (rc) lens_hang_free(r);
  return rc;
}

void lens_hang_free(struct lens_hang_report *r) {
  for (size_t k = 0; r->comms && k < r->n_comms; k++) {
    struct lens_hang_comm *c = &r->comms[k];
    free(c->ranks);
    free(c->missing);
    free(c->untraced);
    free(c->waiting);
    free(c->kch);
  }
  free(r->comms);
  free(r->proxies);
  memset(r, 0, sizeof *r);
}
