/* The job view, part 1 (the map, job_part.h): every Coll/P2p of a model
 * becomes a compact record carrying its match key, its rank's span and
 * stages and its proxy ops' pace; job_reduce.c matches the records across
 * ranks and decomposes each instance (docs/job.md).
 *
 * Matching keys: collectives by (communicator id, function, seqNumber);
 * when a rank's trace has no sequence numbers for a communicator (all zero),
 * by order of its collectives per function. P2p by (communicator, sender,
 * receiver, function pair) and order: the k-th Send from a to b is the k-th
 * Recv on b from a. Graph replays advance seqNumber per replay (with
 * KernelCh), so they match by seqNumber too.
 *
 * Decomposition: each rank's span is its first channel start to its last
 * channel stop, both pTimer values on that rank's own GPU clock. The ranks
 * of a ring/tree/NVLS/CollNet collective end together, so the rank with the
 * shortest span started last and its span is the execution; every other
 * rank's span minus the execution is its wait. No cross-host clock is
 * used. */
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "lens_checked.h"
#include "job_part.h"
#include "job_priv.h"
#include "net_analysis.h"
#include "oneway.h"

static int func_id(const char *f) {
  static const char *const names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
                                      "Send",      "Recv",      "AllToAll",      "SendRecv"};
  if (!f) return 99;
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (!strcmp(f, names[i])) return i;
  return 98;
}

const char *lens_job_host(const struct lens_model *m, int32_t proc) {
  return proc >= 0 && (size_t)proc < m->n_procs ? m->procs[proc].host : "";
}

long lens_job_group_of_proc(const size_t *group_proc, size_t n, int32_t proc) {
  if (proc < 0 || !n || (size_t)proc < group_proc[0] || (size_t)proc >= group_proc[n]) return -1;
  size_t g = 0, lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (group_proc[mid] <= (size_t)proc) g = mid, lo = mid + 1;
    else hi = mid;
  }
  return (long)g;
}

uint64_t lens_nccl_tests_size(const char *func, uint64_t rank_bytes, int nranks) {
  if (func && (!strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter")))
    return rank_bytes * (uint64_t)(nranks > 0 ? nranks : 1);
  return rank_bytes;
}

int lens_size_bucket(uint64_t size) {
  int k = -1;
  while (size) size >>= 1, k++;
  return k;
}

double lens_job_busbw_factor(const char *func, int n) {
  if (!func || n < 1) return 1.0;
  if (!strcmp(func, "AllReduce")) return 2.0 * (n - 1) / n;
  if (!strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter") || !strcmp(func, "AllToAll"))
    return (double)(n - 1) / n;
  return 1.0; /* Broadcast, Reduce, Send/Recv */
}

/* One rank's side of an instance: span and stages; and into gpu what the end's
 * bracket reads of the same channels (job_align.h). */
static void rank_row(const struct lens_model *m, const double *map_err, int32_t ei, int rank, struct lens_job_rank *r,
                     struct lens_align_gpu *gpu, struct lens_child_memo *memo) {
  const struct lens_event *e = &m->events[ei];
  memset(r, 0, sizeof *r);
  *gpu = (struct lens_align_gpu){UINT64_MAX, 0, UINT64_MAX, -1, -1};
  r->rank = rank;
  r->proc = e->proc;
  r->event = ei;
  uint64_t s = UINT64_MAX, t = 0, ms = UINT64_MAX, mt = 0;
  for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    /* Starved: how long the proxy was kept from noticing one of the
     * rank's GPU channel events (a KernelCh's starvation counts only its
     * notice lags: starvation.c). Not a ProxyOp's or ProxyStep's: their
     * windows run from start to stop, through the time the proxy only
     * waited for the GPU or a peer, and a wait there delays nothing (the
     * replay's four busy proxies on two cores made every rank 'starved'
     * for milliseconds while their truth noticed within 10 us). */
    if (x->type == LENS_T_KERNEL_CH && (x->acc.flags & LENS_ACC_STARVED)) {
      r->starved = 1;
      if (x->acc.starved_ns > r->starved_ns) r->starved_ns = x->acc.starved_ns;
    }
    if (!lens_job_kch_timed(x)) continue;
    uint64_t a = x->p.kernel_ch.start_gpu_ns, b = x->p.kernel_ch.stop_gpu_ns;
    if (a < s) s = a;
    if (b > t) t = b;
    gpu->thread = x->thread;
    if (x->acc.gpu_start_mono_ns && x->acc.gpu_start_mono_ns < ms) ms = x->acc.gpu_start_mono_ns;
    if (!r->kstart_notice_ns || x->start_mono_ns < r->kstart_notice_ns) r->kstart_notice_ns = x->start_mono_ns;
    if (x->acc.gpu_stop_mono_ns > mt) mt = x->acc.gpu_stop_mono_ns;
    if (x->thread >= 0 && map_err[x->thread] > (double)r->map_err_ns) r->map_err_ns = lens_f2u64(map_err[x->thread]);
  }
  gpu->s = s, gpu->t = t;
  if (t) {
    r->span_ns = t - s;
    if (ms != UINT64_MAX) r->kstart_mono_ns = ms;
    r->kstop_mono_ns = mt;
  } else {
    uint64_t end = lens_event_completion(m, e, NULL);
    r->host_span = 1;
    r->span_ns = end > e->start_mono_ns ? end - e->start_mono_ns : 0;
  }
  /* Stages on the host clock: CollApi/P2pApi start, KernelLaunch of the same
   * communicator under the same GroupApi. */
  if (e->parent < 0) return;
  const struct lens_event *api = &m->events[e->parent];
  if (api->type != LENS_T_COLL_API && api->type != LENS_T_P2P_API) return;
  r->api_ns = api->start_mono_ns;
  if (api->parent < 0) return;
  for (int32_t c = lens_first_child_of_type(m, api->parent, LENS_T_KERNEL_LAUNCH, memo); c >= 0;
       c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    if (x->type != LENS_T_KERNEL_LAUNCH || x->comm != e->comm || !x->stop_mono_ns) continue;
    r->launch_start_ns = x->start_mono_ns;
    r->launch_stop_ns = x->stop_mono_ns;
    break;
  }
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

uint64_t lens_job_median(uint64_t *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_u64);
  return v[n / 2];
}

/* The instance's facts as this rank's event gives them (the reduce takes
 * them from the lowest rank). */
static void inst_fill(const struct lens_model *m, struct lens_job_prec *p, const struct lens_event *e, int by_order) {
  const struct lens_comm *c = &m->comms[e->comm];
  p->nranks = c->nranks;
  uint64_t bytes = lens_event_bytes(m, e);
  if (p->kind) {
    p->func_s = e->p.p2p.func;
  } else {
    p->func_s = e->p.coll.func;
    p->algo_s = e->p.coll.algo;
    p->proto_s = e->p.coll.proto;
    bytes = lens_nccl_tests_size(p->func_s, bytes, c->nranks);
    if (p->func_s && (!strcmp(p->func_s, "Broadcast") || !strcmp(p->func_s, "Reduce")))
      p->iflags |= LENS_JOB_APPROX_RULE;
  }
  p->bytes = bytes;
  if (by_order || p->kind) p->iflags |= LENS_JOB_BY_ORDER;
  if (e->flags & LENS_EVF_GRAPH) p->iflags |= LENS_JOB_GRAPH;
}

/* Per (proc, comm): do its collectives carry sequence numbers? */
static char *comms_with_seq(const struct lens_model *m) {
  char *has = calloc(m->n_comms ? m->n_comms : 1, 1);
  if (!has) return NULL;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type == LENS_T_COLL && e->comm >= 0 && e->p.coll.seq) has[e->comm] = 1;
  }
  return has;
}

/* The rank's proxy ops under event e with their pace: first to last step
 * completion over the steps. A step's own start->stop also holds the wait
 * for the GPU to produce the data (steps are posted ahead), and single
 * intervals come in bursts (one proxy pass completes several steps). */
/* The one-way evidence of an op (oneway.h) from its step events, when the
 * steps were not folded by the reader. */
static uint64_t op_oneway(const struct lens_model *m, const struct lens_event *op) {
  if (m->steps_folded) return op->p.proxy_op.folded_oneway_ns;
  uint64_t w = 0;
  for (int32_t d = op->first_child; d >= 0; d = m->events[d].next_sibling) {
    const struct lens_event *st = &m->events[d];
    if (st->type != LENS_T_PROXY_STEP || st->p.proxy_step.step != LENS_ONEWAY_STEP) continue;
    uint64_t pre = 0, post = 0;
    lens_oneway_note(&pre, &post, LENS_ONEWAY_STEP_START, st->start_mono_ns, st->start_mono_ns);
    if (st->stop_mono_ns) lens_oneway_note(&pre, &post, LENS_ONEWAY_STEP_STOP, st->stop_mono_ns, st->stop_mono_ns);
    for (uint32_t i = 0; i < st->n_states && st->first_state + i < m->n_states; i++) {
      const struct lens_state_ev *x = &m->states[st->first_state + i];
      lens_oneway_note(&pre, &post, x->state, x->ts_mono_ns, x->last_mono_ns ? x->last_mono_ns : x->ts_mono_ns);
    }
    lens_oneway_fold(&w, op->p.proxy_op.is_send, pre, post);
  }
  return w;
}

/* The model's communicator ranks, by (communicator id, rank): whether an
 * op's peer is a process of the same host name. */
struct crank { uint64_t comm_id; int32_t rank, proc; };
static int crank_cmp(const void *x, const void *y) {
  const struct crank *a = x, *b = y;
  if (a->comm_id != b->comm_id) return a->comm_id < b->comm_id ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}
static struct crank *cranks_of(const struct lens_model *m) {
  struct crank *v = malloc((m->n_comms ? m->n_comms : 1) * sizeof *v);
  if (!v) return NULL;
  for (size_t i = 0; i < m->n_comms; i++) v[i] = (struct crank){m->comms[i].comm_id, m->comms[i].rank, m->comms[i].proc};
  qsort(v, m->n_comms, sizeof *v, crank_cmp);
  return v;
}
static int peer_same_host(const struct lens_model *m, const struct crank *v, const struct lens_event *e, int32_t peer) {
  struct crank k = {m->comms[e->comm].comm_id, peer, -1};
  const struct crank *x = bsearch(&k, v, m->n_comms, sizeof *v, crank_cmp);
  return x && x->proc >= 0 && (size_t)x->proc < m->n_procs && !strcmp(m->procs[x->proc].host, m->procs[e->proc].host);
}

/* Its one-way evidence, kept when its times are on the rank's own process's
 * clock (a PXN op recorded by another process is left out: its host clock
 * is another trace's), and when its peer is not a process of the same host
 * name in this model (one CLOCK_MONOTONIC: no pair of theirs says anything
 * about offsets, and within a node they are most of the links). */
static int wop_of(const struct lens_model *m, const struct crank *cr, const struct lens_event *e,
                  const struct lens_event *op, uint32_t rec, struct lens_job_part *p, size_t *cap) {
  int ch = op->p.proxy_op.channel;
  if (op->proc != e->proc || ch < 0 || ch > UINT16_MAX || peer_same_host(m, cr, e, op->p.proxy_op.peer)) return 0;
  uint64_t t = op_oneway(m, op);
  if (!t) return 0;
  if (p->n_wops == *cap) {
    size_t nc = *cap ? *cap * 2 : 1024;
    struct lens_job_wop *nb = realloc(p->wops, nc * sizeof *nb);
    if (!nb) return -1;
    p->wops = nb, *cap = nc;
  }
  p->wops[p->n_wops++] = (struct lens_job_wop){.t = t, .rec = rec, .peer = op->p.proxy_op.peer,
                                               .channel = (uint16_t)ch, .is_send = op->p.proxy_op.is_send != 0,
                                               .step = LENS_ONEWAY_STEP};
  return 0;
}

static int ops_of(const struct lens_model *m, const struct crank *cr, const struct lens_event *e, int32_t rank,
                  struct lens_job_part *p, size_t *cap, size_t *cap_w) {
  for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *op = &m->events[c];
    if (op->type != LENS_T_PROXY_OP || op->p.proxy_op.peer < 0) continue;
    if (wop_of(m, cr, e, op, (uint32_t)(p->n_recs - 1), p, cap_w)) return -1;
    uint64_t lo = UINT64_MAX, hi = 0, k = 0;
    if (m->steps_folded) { /* the reader counted them (LENS_LOAD_FOLD_STEPS) */
      k = op->p.proxy_op.folded_stops;
      lo = op->p.proxy_op.folded_stop_lo;
      hi = op->p.proxy_op.folded_stop_hi;
    }
    for (int32_t d = op->first_child; d >= 0 && !m->steps_folded; d = m->events[d].next_sibling) {
      const struct lens_event *st = &m->events[d];
      if (st->type != LENS_T_PROXY_STEP || !st->stop_mono_ns) continue;
      if (st->stop_mono_ns < lo) lo = st->stop_mono_ns;
      if (st->stop_mono_ns > hi) hi = st->stop_mono_ns;
      k++;
    }
    if (k < 4) continue;
    if (p->n_ops == *cap) {
      size_t nc = *cap ? *cap * 2 : 1024;
      struct lens_job_op *nb = realloc(p->ops, nc * sizeof *nb);
      if (!nb) return -1;
      p->ops = nb, *cap = nc;
    }
    int32_t snd = op->p.proxy_op.is_send ? rank : op->p.proxy_op.peer;
    int32_t rcv = op->p.proxy_op.is_send ? op->p.proxy_op.peer : rank;
    struct lens_job_op *o = &p->ops[p->n_ops++];
    *o = (struct lens_job_op){snd, rcv, (hi - lo) / (k - 1), {0, 0, 0}, 0, 0};
    /* its phases, as the network view splits them (the same function) */
    struct lens_net_split sp;
    lens_net_op_split(m, c, &sp);
    o->bytes = sp.bytes; /* folded: the reader counted them (lens_folded_op) */
    uint32_t fo = op->p.proxy_op.folded_op;
    if (m->steps_folded && fo && fo <= m->n_folded_ops) o->bytes = m->folded_ops[fo - 1].bytes;
    int base = op->p.proxy_op.is_send ? LENS_NET_SEND_GPU_WAIT : LENS_NET_RECV_DATA_WAIT;
    for (int q = 0; q < 3; q++) {
      uint64_t us = sp.blame_ns[base + q] / 1000 + (sp.blame_ns[base + q] % 1000 >= 500);
      o->phase_us[q] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
      if (sp.phase_ns[base + q]) o->flags |= LENS_JOB_OP_SPLIT;
    }
    if (op->p.proxy_op.is_send) o->flags |= LENS_JOB_OP_SEND;
  }
  return 0;
}

static int part_meta(const struct lens_model *m, struct lens_job_part *p) {
  p->files = calloc(m->n_files ? m->n_files : 1, sizeof *p->files);
  p->procs = calloc(m->n_procs ? m->n_procs : 1, sizeof *p->procs);
  p->comms = calloc(m->n_comms ? m->n_comms : 1, sizeof *p->comms);
  if (!p->files || !p->procs || !p->comms) return -1;
  for (size_t i = 0; i < m->n_files; i++, p->n_files++)
    if (!(p->files[i] = strdup(m->files[i].path ? m->files[i].path : ""))) return -1;
  for (size_t i = 0; i < m->n_procs; i++, p->n_procs++) {
    p->procs[i].pid = m->procs[i].pid;
    p->procs[i].outer_pid = m->procs[i].outer_pid;
    memcpy(p->procs[i].host, m->procs[i].host, sizeof p->procs[i].host);
  }
  for (size_t i = 0; i < m->n_comms; i++, p->n_comms++) {
    const struct lens_comm *c = &m->comms[i];
    p->comms[i] = (struct lens_job_pcomm){.proc = c->proc, .rank = c->rank, .nranks = c->nranks, .comm_id = c->comm_id};
    memcpy(p->comms[i].name, c->name, sizeof c->name);
  }
  p->have_clock_map = m->n_clock_maps > 0;
  return 0;
}

int lens_job_map(const struct lens_model *m, struct lens_job_part *p) {
  memset(p, 0, sizeof *p);
  size_t n = 0;
  /* One pass: the records to make, and the copy-engine collectives, which
   * the job view cannot match (their events time the host's enqueue) but
   * counts, in partial files too. */
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if ((e->type == LENS_T_COLL || e->type == LENS_T_P2P) && e->comm >= 0 && !(e->flags & LENS_EVF_REMOTE)) n++;
    if (e->type != LENS_T_CE_COLL) continue;
    p->ce_count++;
    if (e->stop_mono_ns > e->start_mono_ns) p->ce_enqueue_ns += e->stop_mono_ns - e->start_mono_ns;
  }
  p->have_ce = 1;
  p->recs = calloc(n ? n : 1, sizeof *p->recs);
  char *has_seq = comms_with_seq(m);
  /* order counters: per (comm index, func) for collectives without seq; per
   * (comm index, peer, func) for p2p -- kept in a small open hash */
  size_t hcap = 1024;
  while (hcap < 2 * n) hcap *= 2;
  struct ord { uint64_t k; int64_t n; } *ord = calloc(hcap, sizeof *ord);
  /* error bound of each proxy thread's GPU clock map (worst segment) */
  double *map_err = calloc(m->n_threads ? m->n_threads : 1, sizeof *map_err);
  size_t cap_ops = 0, cap_wops = 0;
  struct crank *cranks = cranks_of(m);
  int rc = -1;
  struct lens_align_gpu *gpu = malloc((n ? n : 1) * sizeof *gpu); /* each record's, for the bracket */
  if (!p->recs || !has_seq || !ord || !map_err || !cranks || !gpu || part_meta(m, p)) goto out;
  for (size_t i = 0; i < m->n_clock_maps; i++) {
    const struct lens_clock_map *c = &m->clock_maps[i];
    if (c->thread >= 0 && (size_t)c->thread < m->n_threads && c->error_bound_ns > map_err[c->thread])
      map_err[c->thread] = c->error_bound_ns;
  }
  struct lens_child_memo memo = LENS_CHILD_MEMO_INIT;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if ((e->type != LENS_T_COLL && e->type != LENS_T_P2P) || e->comm < 0 || (e->flags & LENS_EVF_REMOTE)) continue;
    const struct lens_comm *c = &m->comms[e->comm];
    struct lens_job_prec *k = &p->recs[p->n_recs++];
    k->comm_id = c->comm_id;
    k->kind = e->type == LENS_T_P2P;
    k->a = k->b = -1;
    uint64_t ok = 0;
    int by_seq = 0;
    if (k->kind) {
      int send = e->p.p2p.func && !strcmp(e->p.p2p.func, "Send");
      k->a = send ? c->rank : e->p.p2p.peer; /* sender */
      k->b = send ? e->p.p2p.peer : c->rank; /* receiver */
      k->func = func_id("SendRecv");
      ok = ((uint64_t)e->comm << 40) ^ ((uint64_t)(uint32_t)e->p.p2p.peer << 8) ^ (uint64_t)send ^ 0x8000000000000000ULL;
    } else {
      k->func = func_id(e->p.coll.func);
      if (has_seq[e->comm]) {
        k->seq = (int64_t)e->p.coll.seq;
        by_seq = 1;
      }
      ok = ((uint64_t)e->comm << 40) ^ (uint64_t)k->func;
    }
    if (!by_seq) {
      size_t h = (size_t)(ok * 0x9E3779B97F4A7C15ULL) & (hcap - 1);
      while (ord[h].n && ord[h].k != ok) h = (h + 1) & (hcap - 1);
      ord[h].k = ok;
      k->seq = ord[h].n++; /* n counts from 1 once used: order index = previous n */
    }
    inst_fill(m, k, e, !k->kind && !has_seq[e->comm]);
    struct lens_align_gpu *g = &gpu[p->n_recs - 1];
    rank_row(m, map_err, (int32_t)i, c->rank, &k->r, g, &memo);
    lens_job_rank_clear_bad_times(&k->r); /* a forged trace's times past 2^62 ns: unknown (job_part.h) */
    lens_align_rank_notices(m, &k->r, g); /* its children, still in cache from rank_row */
    k->user_tag = lens_event_user_tag(e);
    k->first_op = p->n_ops;
    if (ops_of(m, cranks, e, c->rank, p, &cap_ops, &cap_wops)) goto out;
    k->n_ops = (uint32_t)(p->n_ops - k->first_op);
  }
  /* What the host alignment needs of the events, kept with the records so
   * that it survives in partial files: each rank's end bracketed on its
   * host's clock, and each process's clock evidence. */
  if (p->n_recs && lens_align_bracket_ranks(m, &p->recs[0].r, p->n_recs, sizeof *p->recs, gpu) < 0) goto out;
  if (!(p->clocks = malloc((p->n_procs ? p->n_procs : 1) * sizeof *p->clocks))) goto out;
  for (size_t i = 0; i < p->n_procs; i++) {
    lens_align_proc_clock_of(m, (int32_t)i, &p->clocks[i]);
    lens_job_clock_clear_bad(&p->clocks[i]);
  }
  /* what a partial may hold, so that a partial of any trace reads back */
  for (size_t i = 0; i < p->n_recs; i++) lens_job_rank_clear_bad_times(&p->recs[i].r);
  size_t nw = 0;
  for (size_t i = 0; i < p->n_wops; i++)
    if (lens_time_ok(p->wops[i].t)) p->wops[nw++] = p->wops[i];
  p->n_wops = nw;
  rc = 0;
out:
  free(gpu);
  free(ord);
  free(has_seq);
  free(map_err);
  free(cranks);
  if (rc) lens_job_part_free(p);
  return rc;
}
