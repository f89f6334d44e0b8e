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

/* ---- the partial of one group ---- */

#define HP_MAX_FUNCS (4 * LENS_HANG_MAX_FUNCS) /* per communicator and group: the merge keeps the first 16 */

struct hp_comm { /* a communicator as this group's COMM records see it */
  uint64_t comm_id;
  int32_t nranks;                  /* the largest its records give */
  char name[128];                  /* its first record's */
  int32_t name_rec;                /* that record */
  char funcs[HP_MAX_FUNCS][LENS_HANG_FUNC_LEN];
  uint32_t n_funcs;                /* in the order its Colls first show them */
};

struct hp_slot { /* (communicator, rank) */
  uint32_t comm;
  int32_t rank, proc;              /* proc: the group's, of its last COMM record */
  int64_t started[HP_MAX_FUNCS], completed[HP_MAX_FUNCS];
  uint64_t done_start[HP_MAX_FUNCS]; /* latest start of a complete Coll of that collective, 0 none */
};

struct hp_pending { /* a Coll that never completed, started after its rank's last completed one */
  uint32_t slot, func;
  int64_t seq;
  uint64_t start_ns;
  uint32_t first_kch, n_kch, first_wait, n_wait; /* its children that never stopped */
};

struct hp_proxy {
  int32_t proc, thread, rank;
  uint64_t last_record_ns, trace_end_ns;
};

struct lens_hang_part {
  struct hp_comm *comms; size_t n_comms;
  struct hp_slot *slots; size_t n_slots;
  struct hp_pending *pend; size_t n_pend, cap_pend;   /* in event order */
  struct lens_hang_kch *kch; size_t n_kch, cap_kch;
  struct lens_hang_wait *wait; size_t n_wait, cap_wait;
  struct hp_proxy *proxies; size_t n_proxies;
  size_t n_procs, n_threads;
};

void lens_hang_part_free(struct lens_hang_part *p) {
  if (!p) return;
  free(p->comms);
  free(p->slots);
  free(p->pend);
  free(p->kch);
  free(p->wait);
  free(p->proxies);
  free(p);
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
  w->thread = op->thread;
  if (op->p.proxy_op.folded_op && op->p.proxy_op.folded_op <= m->n_folded_ops) { /* its steps, folded by the reader */
    const struct lens_folded_op *fo = &m->folded_ops[op->p.proxy_op.folded_op - 1];
    if (!fo->has_wait) {
      w->step = fo->next_step;
      return;
    }
    w->step = fo->wait_step;
    w->step_started = 1;
    w->thread = fo->wait_thread;
    w->state = fo->wait_state;
    w->state_since_ns = fo->wait_since_ns;
    w->state_last_ns = fo->wait_last_ns;
    w->state_repeats = fo->wait_repeats;
    return;
  }
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

static int by_comm_id(const void *a, const void *b, void *model) {
  const struct lens_model *m = model;
  const struct lens_comm *x = &m->comms[*(const int32_t *)a], *y = &m->comms[*(const int32_t *)b];
  if (x->comm_id != y->comm_id) return x->comm_id < y->comm_id ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return *(const int32_t *)a - *(const int32_t *)b;
}

#define HP_MAX_RANKS (1 << 20)

/* The group's communicators (one per comm_id) and (comm, rank) slots; *slot_of:
 * per COMM record, its slot or -1. */
static int map_comms(const struct lens_model *m, struct lens_hang_part *p, int32_t **slot_of) {
  size_t nc = m->n_comms;
  int32_t *order = malloc((nc ? nc : 1) * sizeof *order);
  *slot_of = malloc((nc ? nc : 1) * sizeof **slot_of);
  p->comms = calloc(nc ? nc : 1, sizeof *p->comms);
  p->slots = calloc(nc ? nc : 1, sizeof *p->slots);
  if (!order || !*slot_of || !p->comms || !p->slots) {
    free(order);
    return -1;
  }
  for (size_t i = 0; i < nc; i++) order[i] = (int32_t)i;
  qsort_r(order, nc, sizeof *order, by_comm_id, (void *)m);
  for (size_t j = 0; j < nc; j++) {
    const struct lens_comm *c = &m->comms[order[j]];
    (*slot_of)[order[j]] = -1;
    if (!p->n_comms || p->comms[p->n_comms - 1].comm_id != c->comm_id) {
      struct hp_comm *hc = &p->comms[p->n_comms++];
      hc->comm_id = c->comm_id;
      hc->name_rec = -1;
    }
    struct hp_comm *hc = &p->comms[p->n_comms - 1];
    if (hc->name_rec < 0 || order[j] < hc->name_rec) { /* the first record of the id names it */
      hc->name_rec = order[j];
      snprintf(hc->name, sizeof hc->name, "%s", c->name);
    }
    if (c->nranks > hc->nranks) hc->nranks = c->nranks;
    if (c->rank < 0 || c->rank >= HP_MAX_RANKS) continue;
    struct hp_slot *sl = p->n_slots ? &p->slots[p->n_slots - 1] : NULL;
    if (!sl || sl->comm != p->n_comms - 1 || sl->rank != c->rank) {
      sl = &p->slots[p->n_slots++];
      sl->comm = (uint32_t)(p->n_comms - 1);
      sl->rank = c->rank;
      for (int f = 0; f < HP_MAX_FUNCS; f++) sl->started[f] = sl->completed[f] = -1;
    }
    sl->proc = c->proc; /* records by index within (id, rank): the last one's */
    (*slot_of)[order[j]] = (int32_t)(sl - p->slots);
  }
  free(order);
  return 0;
}

static int func_of(struct hp_comm *c, const char *func) {
  char name[LENS_HANG_FUNC_LEN];
  snprintf(name, sizeof name, "%s", func ? func : "?");
  for (uint32_t i = 0; i < c->n_funcs; i++)
    if (!strcmp(c->funcs[i], name)) return (int)i;
  if (c->n_funcs == HP_MAX_FUNCS) return -1;
  memcpy(c->funcs[c->n_funcs], name, sizeof name);
  return (int)c->n_funcs++;
}

static uint64_t slot_done_start(const struct hp_slot *s) {
  uint64_t d = 0;
  for (int f = 0; f < HP_MAX_FUNCS; f++)
    if (s->done_start[f] > d) d = s->done_start[f];
  return d;
}

static int map_pending(const struct lens_model *m, struct lens_hang_part *p, int32_t slot, uint32_t func,
                       size_t ev) {
  const struct lens_event *e = &m->events[ev];
  struct hp_pending pd = {(uint32_t)slot, func, (int64_t)e->p.coll.seq, e->start_mono_ns,
                          (uint32_t)p->n_kch, 0, (uint32_t)p->n_wait, 0};
  for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    if (x->stop_mono_ns) continue;
    if (x->type == LENS_T_KERNEL_CH) {
      struct lens_hang_kch kc = {p->slots[slot].rank, x->p.kernel_ch.channel, x->proc, x->start_mono_ns};
      if (push((void **)&p->kch, &p->n_kch, &p->cap_kch, sizeof kc, &kc)) return -1;
      pd.n_kch++;
    } else if (x->type == LENS_T_PROXY_OP) {
      struct lens_hang_wait w;
      memset(&w, 0, sizeof w);
      w.rank = p->slots[slot].rank;
      w.proc = x->proc;
      op_wait(m, c, &w);
      if (push((void **)&p->wait, &p->n_wait, &p->cap_wait, sizeof w, &w)) return -1;
      pd.n_wait++;
    }
  }
  return push((void **)&p->pend, &p->n_pend, &p->cap_pend, sizeof pd, &pd);
}

/* The proxy threads: their last record, their process's trace end. */
static int map_proxies(const struct lens_model *m, struct lens_hang_part *p) {
  uint64_t *thr_last = calloc(m->n_threads ? m->n_threads : 1, sizeof *thr_last);
  uint64_t *proc_end = calloc(m->n_procs ? m->n_procs : 1, sizeof *proc_end);
  p->proxies = calloc(m->n_threads ? m->n_threads : 1, sizeof *p->proxies);
  if (!thr_last || !proc_end || !p->proxies) {
    free(thr_last), free(proc_end);
    return -1;
  }
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    uint64_t t = ev_last_ns(m, e);
    if (e->thread >= 0 && (size_t)e->thread < m->n_threads && t > thr_last[e->thread]) thr_last[e->thread] = t;
    if (e->proc >= 0 && (size_t)e->proc < m->n_procs && t > proc_end[e->proc]) proc_end[e->proc] = t;
  }
  /* the ProxySteps the reader folded (their latest start, stop or state) */
  for (size_t t = 0; t < m->n_threads; t++) {
    const struct lens_thread *th = &m->threads[t];
    if (th->folded_last_ns > thr_last[t]) thr_last[t] = th->folded_last_ns;
    if (th->proc >= 0 && (size_t)th->proc < m->n_procs && th->folded_last_ns > proc_end[th->proc])
      proc_end[th->proc] = th->folded_last_ns;
  }
  /* the writer's heartbeats: a CLOCK chunk every second, DROPS */
  for (size_t i = 0; i < m->n_procs; i++)
    if (m->procs[i].drops.at_mono_ns > proc_end[i]) proc_end[i] = m->procs[i].drops.at_mono_ns;
  for (size_t i = 0; i < m->n_clocks; i++) {
    int32_t pr = m->clocks[i].proc;
    if (pr >= 0 && (size_t)pr < m->n_procs && m->clocks[i].r.mono_after_ns > proc_end[pr])
      proc_end[pr] = m->clocks[i].r.mono_after_ns;
  }
  for (size_t t = 0; t < m->n_threads; t++) {
    const struct lens_thread *th = &m->threads[t];
    if (!(th->roles & LENS_ROLE_PROXY) || th->proc < 0 || (size_t)th->proc >= m->n_procs) continue;
    p->proxies[p->n_proxies++] =
        (struct hp_proxy){th->proc, (int32_t)t, th->proxy_rank, thr_last[t], proc_end[th->proc]};
  }
  free(thr_last);
  free(proc_end);
  return 0;
}

struct lens_hang_part *lens_hang_map(const struct lens_model *m) {
  struct lens_hang_part *p = calloc(1, sizeof *p);
  int32_t *slot_of = NULL;
  uint8_t *undone = NULL; /* bits: a Coll some of whose children never stopped */
  if (!p) return NULL;
  p->n_procs = m->n_procs;
  p->n_threads = m->n_threads;
  if (map_comms(m, p, &slot_of)) goto oom;
  /* whether each Coll's children are done, walked once for both loops (a
   * walk of its children is a cache miss a child) */
  undone = calloc(m->n_events / 8 + 1, 1);
  if (!undone) goto oom;
  /* last started / completed, latest complete start per (comm, rank, collective) */
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_COLL || e->comm < 0 || (size_t)e->comm >= m->n_comms || slot_of[e->comm] < 0) continue;
    struct hp_slot *sl = &p->slots[slot_of[e->comm]];
    int f = func_of(&p->comms[sl->comm], e->p.coll.func);
    if (f < 0) continue;
    int64_t seq = (int64_t)e->p.coll.seq;
    if (seq > sl->started[f]) sl->started[f] = seq;
    if (!children_done(m, e)) undone[i >> 3] |= (uint8_t)(1u << (i & 7));
    else {
      if (seq > sl->completed[f]) sl->completed[f] = seq;
      if (e->start_mono_ns > sl->done_start[f]) sl->done_start[f] = e->start_mono_ns;
    }
  }
  /* the Colls that never completed and have no later completed one (a later
   * completed one means a lost stop), with their children that never stopped */
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_COLL || e->comm < 0 || (size_t)e->comm >= m->n_comms || slot_of[e->comm] < 0) continue;
    int32_t s = slot_of[e->comm];
    if (!(undone[i >> 3] >> (i & 7) & 1) || e->start_mono_ns <= slot_done_start(&p->slots[s])) continue;
    int f = func_of(&p->comms[p->slots[s].comm], e->p.coll.func);
    if (f < 0) continue;
    if (map_pending(m, p, s, (uint32_t)f, i)) goto oom;
  }
  if (map_proxies(m, p)) goto oom;
  free(slot_of);
  free(undone);
  return p;
oom:
  free(slot_of);
  free(undone);
  lens_hang_part_free(p);
  return NULL;
}

void *lens_hang_pass_map(struct lens_model *m, void *ctx) {
  (void)ctx;
  return lens_hang_map(m);
}
void lens_hang_pass_free(void *part) { lens_hang_part_free(part); }

/* ---- the merge ---- */

struct comm_ref { uint64_t comm_id; uint32_t part, local; };
static int comm_ref_cmp(const void *pa, const void *pb) {
  const struct comm_ref *a = pa, *b = pb;
  if (a->comm_id != b->comm_id) return a->comm_id < b->comm_id ? -1 : 1;
  if (a->part != b->part) return a->part < b->part ? -1 : 1;
  return (a->local > b->local) - (a->local < b->local);
}

struct merge {
  struct lens_hang_part *const *parts;
  size_t np;
  const struct lens_model_base *bases;
  struct lens_hang_report *r;
  int32_t **comm_of;        /* per part, per local comm: the merged one */
  int32_t **fmap;           /* per part, per local comm * HP_MAX_FUNCS: the merged func, -1 */
  size_t *rank_base;        /* per merged comm: offset into the per-rank arrays */
  uint64_t *max_done;       /* per (comm, rank): latest start of a complete Coll */
  const struct hp_pending **first_stuck; /* per (comm, rank) */
};

static size_t proc_of(const struct merge *g, size_t part, int32_t proc) {
  return (size_t)proc + (g->bases ? g->bases[part].proc : 0);
}
static int32_t rebased(int32_t i, size_t base) { return i >= 0 ? (int32_t)((size_t)i + base) : i; }

static int merge_comms(struct merge *g) {
  struct lens_hang_report *r = g->r;
  size_t total = 0;
  for (size_t k = 0; k < g->np; k++) total += g->parts[k]->n_comms;
  struct comm_ref *refs = malloc((total ? total : 1) * sizeof *refs);
  g->comm_of = calloc(g->np + 1, sizeof *g->comm_of);
  g->fmap = calloc(g->np + 1, sizeof *g->fmap);
  if (!refs || !g->comm_of || !g->fmap) goto oom;
  size_t n = 0;
  for (size_t k = 0; k < g->np; k++) {
    size_t nc = g->parts[k]->n_comms;
    g->comm_of[k] = malloc((nc ? nc : 1) * sizeof **g->comm_of);
    g->fmap[k] = malloc((nc ? nc : 1) * HP_MAX_FUNCS * sizeof **g->fmap);
    if (!g->comm_of[k] || !g->fmap[k]) goto oom;
    for (size_t c = 0; c < nc; c++)
      refs[n++] = (struct comm_ref){g->parts[k]->comms[c].comm_id, (uint32_t)k, (uint32_t)c};
  }
  qsort(refs, n, sizeof *refs, comm_ref_cmp);
  size_t nl = 0;
  for (size_t i = 0; i < n; i++) nl += !i || refs[i].comm_id != refs[i - 1].comm_id;
  r->comms = calloc(nl ? nl : 1, sizeof *r->comms);
  g->rank_base = calloc(nl + 1, sizeof *g->rank_base);
  if (!r->comms || !g->rank_base) goto oom;
  for (size_t i = 0; i < n; i++) {
    const struct hp_comm *x = &g->parts[refs[i].part]->comms[refs[i].local];
    if (!i || refs[i].comm_id != refs[i - 1].comm_id) {
      struct lens_hang_comm *hc = &r->comms[r->n_comms++];
      hc->comm_id = x->comm_id;
      hc->stuck_func = -1;
      hc->stuck_seq = -1;
      snprintf(hc->name, sizeof hc->name, "%s", x->name); /* the first group's: its first record */
    }
    struct lens_hang_comm *hc = &r->comms[r->n_comms - 1];
    if (x->nranks > hc->nranks) hc->nranks = x->nranks;
    g->comm_of[refs[i].part][refs[i].local] = (int32_t)(r->n_comms - 1);
    /* the collectives in the order the groups first show them */
    int32_t *fm = &g->fmap[refs[i].part][(size_t)refs[i].local * HP_MAX_FUNCS];
    for (uint32_t f = 0; f < x->n_funcs; f++) {
      fm[f] = -1;
      for (size_t q = 0; q < hc->n_funcs && fm[f] < 0; q++)
        if (!strcmp(hc->funcs[q], x->funcs[f])) fm[f] = (int32_t)q;
      if (fm[f] < 0 && hc->n_funcs < LENS_HANG_MAX_FUNCS) {
        memcpy(hc->funcs[hc->n_funcs], x->funcs[f], LENS_HANG_FUNC_LEN);
        fm[f] = (int32_t)hc->n_funcs++;
      }
    }
  }
  free(refs);
  size_t ranks = 0;
  for (size_t k = 0; k < r->n_comms; k++) {
    struct lens_hang_comm *hc = &r->comms[k];
    int32_t nr = hc->nranks > 0 && hc->nranks <= HP_MAX_RANKS ? hc->nranks : 0;
    hc->nranks = nr;
    hc->ranks = calloc(nr ? (size_t)nr : 1, sizeof *hc->ranks);
    if (!hc->ranks) return -1;
    for (int32_t i = 0; i < nr; i++) {
      hc->ranks[i].rank = i;
      hc->ranks[i].proc = -1;
      for (int f = 0; f < LENS_HANG_MAX_FUNCS; f++) hc->ranks[i].last_started[f] = hc->ranks[i].last_completed[f] = -1;
    }
    g->rank_base[k] = ranks;
    ranks += (size_t)nr;
  }
  g->rank_base[r->n_comms] = ranks;
  g->max_done = calloc(ranks ? ranks : 1, sizeof *g->max_done);
  g->first_stuck = calloc(ranks ? ranks : 1, sizeof *g->first_stuck);
  return g->max_done && g->first_stuck ? 0 : -1;
oom:
  free(refs);
  return -1;
}

/* A part's slot as (merged comm, rank): -1 when its rank is outside the communicator. */
static int slot_at(const struct merge *g, size_t part, const struct hp_slot *sl, int32_t *rank) {
  int32_t k = g->comm_of[part][sl->comm];
  if (sl->rank >= g->r->comms[k].nranks) return -1;
  *rank = sl->rank;
  return k;
}

static void merge_slots(struct merge *g) {
  for (size_t k = 0; k < g->np; k++) {
    const struct lens_hang_part *p = g->parts[k];
    for (size_t s = 0; s < p->n_slots; s++) {
      const struct hp_slot *sl = &p->slots[s];
      int32_t rk, c = slot_at(g, k, sl, &rk);
      if (c < 0) continue;
      struct lens_hang_rank *hr = &g->r->comms[c].ranks[rk];
      hr->proc = (int32_t)proc_of(g, k, sl->proc); /* the last record's: the last group's */
      const int32_t *fm = &g->fmap[k][(size_t)sl->comm * HP_MAX_FUNCS];
      uint64_t *d = &g->max_done[g->rank_base[c] + (size_t)rk];
      for (uint32_t f = 0; f < p->comms[sl->comm].n_funcs; f++) {
        if (fm[f] < 0) continue;
        if (sl->started[f] > hr->last_started[fm[f]]) hr->last_started[fm[f]] = sl->started[f];
        if (sl->completed[f] > hr->last_completed[fm[f]]) hr->last_completed[fm[f]] = sl->completed[f];
        if (sl->done_start[f] > *d) *d = sl->done_start[f];
      }
    }
  }
}

/* Each pending Coll of the parts that is still pending against the merged
 * latest complete start: fn(part, pending, comm, rank). */
static int each_pending(struct merge *g, int (*fn)(struct merge *, size_t, const struct hp_pending *, int32_t, int32_t,
                                                   void *),
                        void *ctx) {
  for (size_t k = 0; k < g->np; k++) {
    const struct lens_hang_part *p = g->parts[k];
    for (size_t i = 0; i < p->n_pend; i++) {
      const struct hp_pending *pd = &p->pend[i];
      int32_t rk, c = slot_at(g, k, &p->slots[pd->slot], &rk);
      if (c < 0 || pd->start_ns <= g->max_done[g->rank_base[c] + (size_t)rk]) continue;
      int rc = fn(g, k, pd, c, rk, ctx);
      if (rc) return rc;
    }
  }
  return 0;
}

static int pick_first(struct merge *g, size_t part, const struct hp_pending *pd, int32_t c, int32_t rk, void *ctx) {
  (void)part, (void)ctx;
  const struct hp_pending **f = &g->first_stuck[g->rank_base[c] + (size_t)rk];
  if (!*f || pd->start_ns < (*f)->start_ns) *f = pd;
  return 0;
}

static int32_t merged_func(const struct merge *g, size_t part, const struct hp_pending *pd) {
  return g->fmap[part][(size_t)g->parts[part]->slots[pd->slot].comm * HP_MAX_FUNCS + pd->func];
}

/* The stuck instance on each rank that entered it: its children that never stopped. */
static int add_stuck(struct merge *g, size_t part, const struct hp_pending *pd, int32_t c, int32_t rk, void *ctx) {
  size_t *caps = ctx; /* per comm: waiting, kch capacities */
  struct lens_hang_comm *hc = &g->r->comms[c];
  if (!hc->stuck || pd->seq != hc->stuck_seq || merged_func(g, part, pd) != hc->stuck_func) return 0;
  const struct lens_hang_part *p = g->parts[part];
  size_t pb = g->bases ? g->bases[part].proc : 0, tb = g->bases ? g->bases[part].thread : 0;
  hc->ranks[rk].stuck = 1;
  for (uint32_t i = 0; i < pd->n_kch; i++) {
    struct lens_hang_kch kc = p->kch[pd->first_kch + i];
    kc.proc = rebased(kc.proc, pb);
    if (push((void **)&hc->kch, &hc->n_kch, &caps[2 * (size_t)c + 1], sizeof kc, &kc)) return -1;
  }
  for (uint32_t i = 0; i < pd->n_wait; i++) {
    struct lens_hang_wait w = p->wait[pd->first_wait + i];
    w.proc = rebased(w.proc, pb);
    w.thread = rebased(w.thread, tb);
    if (push((void **)&hc->waiting, &hc->n_waiting, &caps[2 * (size_t)c], sizeof w, &w)) return -1;
  }
  return 0;
}

/* Which collective is stuck: the earliest-started pending one over the ranks. */
static int pick_stuck(struct merge *g) {
  struct lens_hang_report *r = g->r;
  const struct hp_pending **pick_of = calloc(r->n_comms + 1, sizeof *pick_of);
  size_t *pick_part = calloc(r->n_comms + 1, sizeof *pick_part);
  if (!pick_of || !pick_part) {
    free(pick_of), free(pick_part);
    return -1;
  }
  for (size_t k = 0; k < r->n_comms; k++)
    for (int32_t rk = 0; rk < r->comms[k].nranks; rk++) {
      const struct hp_pending *f = g->first_stuck[g->rank_base[k] + (size_t)rk];
      if (f && (!pick_of[k] || f->start_ns < pick_of[k]->start_ns)) pick_of[k] = f;
    }
  /* the part a pick came from, for its collective's merged index */
  for (size_t q = 0; q < g->np; q++)
    for (size_t k = 0; k < r->n_comms; k++)
      if (pick_of[k] && pick_of[k] >= g->parts[q]->pend && pick_of[k] < g->parts[q]->pend + g->parts[q]->n_pend)
        pick_part[k] = q;
  int rc = 0;
  for (size_t k = 0; k < r->n_comms && !rc; k++) {
    struct lens_hang_comm *hc = &r->comms[k];
    if (!pick_of[k]) continue;
    hc->stuck = 1;
    hc->stuck_func = merged_func(g, pick_part[k], pick_of[k]);
    hc->stuck_seq = pick_of[k]->seq;
    int f = hc->stuck_func;
    size_t mcap = 0, ucap = 0;
    for (int32_t rk = 0; rk < hc->nranks && !rc; rk++) {
      struct lens_hang_rank *hr = &hc->ranks[rk];
      if (hr->proc < 0) {
        rc = push((void **)&hc->untraced, &hc->n_untraced, &ucap, sizeof(int32_t), &rk);
        continue;
      }
      hr->entered = f >= 0 && hr->last_started[f] >= hc->stuck_seq;
      if (!hr->entered) rc = push((void **)&hc->missing, &hc->n_missing, &mcap, sizeof(int32_t), &rk);
    }
    r->n_stuck_comms++;
  }
  free(pick_of);
  free(pick_part);
  return rc;
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

/* Proxy threads of the processes that hold a stuck rank, in the groups'
 * order (each group's threads in its order). */
static int merge_proxies(struct merge *g) {
  struct lens_hang_report *r = g->r;
  size_t nprocs = 0;
  for (size_t k = 0; k < g->np; k++) {
    size_t end = (g->bases ? g->bases[k].proc : 0) + g->parts[k]->n_procs;
    if (end > nprocs) nprocs = end;
  }
  char *want = calloc(nprocs ? nprocs : 1, 1);
  if (!want) return -1;
  for (size_t k = 0; k < r->n_comms; k++)
    for (int32_t rk = 0; r->comms[k].stuck && rk < r->comms[k].nranks; rk++) {
      int32_t pr = r->comms[k].ranks[rk].proc;
      if (r->comms[k].ranks[rk].stuck && pr >= 0 && (size_t)pr < nprocs) want[pr] = 1;
    }
  size_t cap = 0;
  int rc = 0;
  for (size_t k = 0; k < g->np && !rc; k++) {
    const struct lens_hang_part *p = g->parts[k];
    for (size_t i = 0; i < p->n_proxies && !rc; i++) {
      const struct hp_proxy *h = &p->proxies[i];
      size_t pr = proc_of(g, k, h->proc);
      if (!want[pr]) continue;
      struct lens_hang_proxy x = {(int32_t)pr, rebased(h->thread, g->bases ? g->bases[k].thread : 0), h->rank,
                                  h->last_record_ns, h->trace_end_ns, 0, 0, -1, -1, -1, 0};
      x.recording = x.last_record_ns && x.trace_end_ns - x.last_record_ns <= LENS_HANG_ALIVE_NS;
      if (!x.recording) frozen_evidence(r, &x);
      r->n_frozen += x.frozen != 0;
      rc = push((void **)&r->proxies, &r->n_proxies, &cap, sizeof x, &x);
    }
  }
  free(want);
  return rc;
}

int lens_hang_merge(struct lens_hang_part *const *parts, size_t np, const struct lens_model_base *bases,
                    struct lens_hang_report *r) {
  memset(r, 0, sizeof *r);
  struct merge g = {.parts = parts, .np = np, .bases = bases, .r = r};
  size_t *caps = NULL;
  int rc = merge_comms(&g);
  if (!rc) {
    merge_slots(&g);
    rc = each_pending(&g, pick_first, NULL);
  }
  if (!rc) rc = pick_stuck(&g);
  if (!rc && !(caps = calloc(2 * r->n_comms + 1, sizeof *caps))) rc = -1;
  if (!rc) rc = each_pending(&g, add_stuck, caps);
  if (!rc) rc = merge_proxies(&g);
  free(caps);
  for (size_t k = 0; k < np; k++) {
    if (g.comm_of) free(g.comm_of[k]);
    if (g.fmap) free(g.fmap[k]);
  }
  free(g.comm_of);
  free(g.fmap);
  free(g.rank_base);
  free(g.max_done);
  free(g.first_stuck);
  if (rc) lens_hang_free(r);
  return rc;
}

int lens_hang_analyze(const struct lens_model *m, struct lens_hang_report *r) {
  memset(r, 0, sizeof *r);
  struct lens_hang_part *p = lens_hang_map(m);
  if (!p) return -1;
  int rc = lens_hang_merge(&p, 1, NULL, r);
  lens_hang_part_free(p);
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
