/* The job view, part 1: match every Coll/P2p instance across the ranks of
 * its communicator and decompose it (docs/job.md).
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
#include "job_priv.h"

struct key {
  uint64_t comm_id;
  int64_t seq;
  int32_t kind; /* 0 coll, 1 p2p */
  int32_t func, a, b, rank;
  int32_t event;
};

static int func_id(const char *f) {
  static const char *const names[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
                                      "Send",      "Recv",      "AllToAll",      "SendRecv"};
  if (!f) return 99;
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (!strcmp(f, names[i])) return i;
  return 98;
}

static int key_cmp(const void *x, const void *y) {
  const struct key *a = x, *b = y;
#define C(f)                                                                                                           \
  if (a->f != b->f) return a->f < b->f ? -1 : 1
  C(comm_id);
  C(kind);
  C(func);
  C(a);
  C(b);
  C(seq);
  C(rank);
  C(event);
#undef C
  return 0;
}

static int same_inst(const struct key *a, const struct key *b) {
  return a->comm_id == b->comm_id && a->kind == b->kind && a->func == b->func && a->a == b->a && a->b == b->b &&
         a->seq == b->seq;
}

const char *lens_job_host(const struct lens_model *m, int32_t proc) {
  return proc >= 0 && (size_t)proc < m->n_procs ? m->procs[proc].host : "";
}

double lens_job_busbw_factor(const char *func, int n) {
  if (!func || n < 1) return 1.0;
  if (!strcmp(func, "AllReduce")) return 2.0 * (n - 1) / n;
  if (!strcmp(func, "AllGather") || !strcmp(func, "ReduceScatter") || !strcmp(func, "AllToAll"))
    return (double)(n - 1) / n;
  return 1.0; /* Broadcast, Reduce, Send/Recv */
}

#define ACC_BAD_TIMER (LENS_ACC_STOP_BEFORE_START | LENS_ACC_RING_OVERRUN | LENS_ACC_SHARED_TIMER)

/* One rank's side of an instance: span and stages. */
static void rank_row(const struct lens_model *m, const double *map_err, int32_t ei, int rank, struct lens_job_rank *r) {
  const struct lens_event *e = &m->events[ei];
  memset(r, 0, sizeof *r);
  r->rank = rank;
  r->proc = e->proc;
  r->event = ei;
  uint64_t s = UINT64_MAX, t = 0, ms = UINT64_MAX, mt = 0;
  for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    if (x->acc.flags & LENS_ACC_STARVED) r->starved = 1;
    if (x->type == LENS_T_PROXY_OP)
      for (int32_t d = x->first_child; d >= 0; d = m->events[d].next_sibling)
        if (m->events[d].acc.flags & LENS_ACC_STARVED) r->starved = 1;
    if (x->type != LENS_T_KERNEL_CH || (x->acc.flags & ACC_BAD_TIMER)) continue;
    uint64_t a = x->p.kernel_ch.start_gpu_ns, b = x->p.kernel_ch.stop_gpu_ns;
    if (!a || !b || b < a) continue;
    if (a < s) s = a;
    if (b > t) t = b;
    if (x->acc.gpu_start_mono_ns && x->acc.gpu_start_mono_ns < ms) ms = x->acc.gpu_start_mono_ns;
    if (!r->kstart_notice_ns || x->start_mono_ns < r->kstart_notice_ns) r->kstart_notice_ns = x->start_mono_ns;
    if (x->acc.gpu_stop_mono_ns > mt) mt = x->acc.gpu_stop_mono_ns;
    if (x->thread >= 0 && map_err[x->thread] > (double)r->map_err_ns) r->map_err_ns = (uint64_t)map_err[x->thread];
  }
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
  const struct lens_event *g = &m->events[api->parent];
  for (int32_t c = g->first_child; c >= 0; c = m->events[c].next_sibling) {
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

/* exec, waits, last rank, flags of one instance. */
static void decompose(const struct lens_model *m, struct lens_job *j, struct lens_job_inst *in) {
  struct lens_job_rank *r = j->ranks + in->first_rank;
  size_t gpu = 0;
  for (size_t i = 0; i < in->n_ranks; i++) gpu += !r[i].host_span && r[i].span_ns;
  int host = gpu < in->n_ranks;
  if (host) {
    in->flags |= LENS_JOB_HOST_SPANS;
    for (size_t i = 0; i < in->n_ranks; i++) r[i].host_span = 1;
  }
  uint64_t exec = UINT64_MAX;
  int32_t last = -1;
  for (size_t i = 0; i < in->n_ranks; i++)
    if (r[i].span_ns && r[i].span_ns < exec) exec = r[i].span_ns, last = r[i].rank;
  if (last < 0) {
    in->flags |= LENS_JOB_NO_SPAN;
    in->last_rank = -1;
    return;
  }
  /* Ranks of one host share CLOCK_MONOTONIC: with mapped GPU times, check
   * that they really ended together before trusting the rule. */
  uint64_t tol = exec / 10 > 50000 ? exec / 10 : 50000;
  for (size_t i = 0; i < in->n_ranks && !host; i++)
    for (size_t k = i + 1; k < in->n_ranks; k++) {
      if (!r[i].kstop_mono_ns || !r[k].kstop_mono_ns || r[i].proc < 0 || r[k].proc < 0) continue;
      if (strcmp(lens_job_host(m, r[i].proc), lens_job_host(m, r[k].proc))) continue;
      uint64_t a = r[i].kstop_mono_ns, b = r[k].kstop_mono_ns;
      if ((a > b ? a - b : b - a) > tol + r[i].map_err_ns + r[k].map_err_ns) in->flags |= LENS_JOB_ENDS_APART;
    }
  if (in->flags & LENS_JOB_ENDS_APART) { /* do not guess */
    in->last_rank = -1;
    return;
  }
  in->exec_ns = exec;
  in->last_rank = last;
  for (size_t i = 0; i < in->n_ranks; i++) {
    r[i].wait_ns = r[i].span_ns > exec ? r[i].span_ns - exec : 0;
    in->wait_sum_ns += r[i].wait_ns;
    if (r[i].wait_ns > in->max_wait_ns) in->max_wait_ns = r[i].wait_ns;
  }
  if (exec) in->busbw_gbps = (double)in->bytes * lens_job_busbw_factor(in->func, in->nranks) / (double)exec;
}

static void inst_fill(const struct lens_model *m, struct lens_job_inst *in, const struct key *k, int by_order) {
  const struct lens_event *e = &m->events[k->event];
  const struct lens_comm *c = &m->comms[e->comm];
  in->comm_id = k->comm_id;
  in->seq = k->seq;
  in->nranks = c->nranks;
  in->is_p2p = k->kind;
  in->peer_lo = k->kind ? k->a : -1;
  in->peer_hi = k->kind ? k->b : -1;
  uint64_t bytes = lens_event_bytes(m, e);
  if (k->kind) {
    in->func = e->p.p2p.func;
  } else {
    in->func = e->p.coll.func;
    in->algo = e->p.coll.algo;
    in->proto = e->p.coll.proto;
    if (in->func && (!strcmp(in->func, "AllGather") || !strcmp(in->func, "ReduceScatter")))
      bytes *= (uint64_t)(c->nranks > 0 ? c->nranks : 1);
    if (in->func && (!strcmp(in->func, "Broadcast") || !strcmp(in->func, "Reduce")))
      in->flags |= LENS_JOB_APPROX_RULE;
  }
  in->bytes = bytes;
  if (by_order || k->kind) in->flags |= LENS_JOB_BY_ORDER;
  if (e->flags & LENS_EVF_GRAPH) in->flags |= LENS_JOB_GRAPH;
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

int lens_job_match(const struct lens_model *m, struct lens_job *j) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if ((e->type == LENS_T_COLL || e->type == LENS_T_P2P) && e->comm >= 0 && !(e->flags & LENS_EVF_REMOTE)) n++;
  }
  struct key *keys = calloc(n ? n : 1, sizeof *keys);
  char *has_seq = comms_with_seq(m);
  /* order counters: per (comm index, func) for collectives without seq; per
   * (comm index, peer, func) for p2p -- kept in a small open hash */
  size_t hcap = 1024;
  while (hcap < 2 * n) hcap *= 2;
  struct ord { uint64_t k; int64_t n; } *ord = calloc(hcap, sizeof *ord);
  if (!keys || !has_seq || !ord) {
    free(keys), free(has_seq), free(ord);
    return -1;
  }
  size_t nk = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if ((e->type != LENS_T_COLL && e->type != LENS_T_P2P) || e->comm < 0 || (e->flags & LENS_EVF_REMOTE)) continue;
    const struct lens_comm *c = &m->comms[e->comm];
    struct key *k = &keys[nk++];
    k->comm_id = c->comm_id;
    k->rank = c->rank;
    k->event = (int32_t)i;
    k->kind = e->type == LENS_T_P2P;
    k->a = k->b = -1;
    uint64_t ok;
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
        continue;
      }
      ok = ((uint64_t)e->comm << 40) ^ (uint64_t)k->func;
    }
    size_t h = (size_t)(ok * 0x9E3779B97F4A7C15ULL) & (hcap - 1);
    while (ord[h].n && ord[h].k != ok) h = (h + 1) & (hcap - 1);
    ord[h].k = ok;
    k->seq = ord[h].n++; /* n counts from 1 once used: order index = previous n */
  }
  free(ord);
  qsort(keys, nk, sizeof *keys, key_cmp);
  /* error bound of each proxy thread's GPU clock map (worst segment) */
  double *map_err = calloc(m->n_threads ? m->n_threads : 1, sizeof *map_err);
  if (!map_err) {
    free(keys), free(has_seq);
    return -1;
  }
  for (size_t i = 0; i < m->n_clock_maps; i++) {
    const struct lens_clock_map *c = &m->clock_maps[i];
    if (c->thread >= 0 && (size_t)c->thread < m->n_threads && c->error_bound_ns > map_err[c->thread])
      map_err[c->thread] = c->error_bound_ns;
  }
  size_t ni = 0;
  for (size_t i = 0; i < nk; i++)
    if (!i || !same_inst(&keys[i - 1], &keys[i])) ni++;
  j->insts = calloc(ni ? ni : 1, sizeof *j->insts);
  j->ranks = calloc(nk ? nk : 1, sizeof *j->ranks);
  if (!j->insts || !j->ranks) {
    free(keys), free(has_seq), free(map_err);
    return -1;
  }
  struct lens_job_inst *in = NULL;
  for (size_t i = 0; i < nk; i++) {
    const struct key *k = &keys[i];
    if (!i || !same_inst(&keys[i - 1], k)) {
      in = &j->insts[j->n_insts++];
      inst_fill(m, in, k, !k->kind && !has_seq[m->events[k->event].comm]);
      in->first_rank = j->n_ranks;
    } else if (keys[i - 1].rank == k->rank) {
      continue; /* the same rank twice (two traces of one process): first kept */
    }
    rank_row(m, map_err, k->event, k->rank, &j->ranks[j->n_ranks++]);
    in->n_ranks++;
  }
  for (size_t i = 0; i < j->n_insts; i++) {
    struct lens_job_inst *x = &j->insts[i];
    x->ranks_seen = (int)x->n_ranks;
    int want = x->is_p2p ? 2 : x->nranks;
    if (x->ranks_seen < want) x->flags |= LENS_JOB_PARTIAL;
    if (x->ranks_seen >= want) j->matched_all++;
    else if (x->ranks_seen > 1) j->matched_some++;
    else j->matched_one++;
    decompose(m, j, x);
  }
  free(map_err);
  free(keys);
  free(has_seq);
  return 0;
}
