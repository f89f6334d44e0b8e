/* Network scenarios and their per-step ground truth (rp_net.h). Times are
 * in ms, not the us of a real network: the phases must stand well above the
 * scheduling noise of a loaded 2-core CI machine, where a proxy thread can
 * miss the CPU for several ms. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "replay/rp_net.h"
#include "replay/rp_truth.h"

#define NET_STEP_NS 2000000LL   /* the GPU produces one step every 2 ms (per op) */
#define NET_COUNT (512u << 10)  /* floats per send: 2 MiB, 2 channels, 8 + 1 steps of 128 KiB */
#define SLOW_WIRE_NS 40000000LL /* net-slow-link: every step 40 ms longer on the wire */
#define SLOW_GPU_NS 10000000LL  /* net-gpu-bound: the sender's GPU takes 10 ms more per step */
#define SLOW_CONSUME_NS 40000000LL /* net-slow-recv: the receiver's GPU takes 40 ms more per step */
#define CREDIT_WAIT_NS 20000000LL /* ... and its senders wait this long for each credit */
#define NET_ROUNDS 4            /* exchanges per iteration */
#define MAX_STEP_TRUTH 65536    /* per process; more are counted as drops */
#define GAP_NS 200000LL         /* a proxy pass this late: the thread was not running */
#define MAX_GAPS 4096

enum { NET_EVEN, NET_SLOW_LINK, NET_GPU_BOUND, NET_SLOW_RECV, NET_IB, NET_NKINDS };
static const char *const kinds[NET_NKINDS] = {"net-even", "net-slow-link", "net-gpu-bound", "net-slow-recv",
                                              "net-ib"};

enum { B_START, B_MID1, B_MID2, B_STOP, B_N }; /* send: start, first 20, 9, stop; recv: start, 11, 12, stop */

struct step_truth {
  int rank, peer, channel, dir, op, step, qp, device;
  uint64_t bytes;
  int64_t before[B_N], after[B_N];
  bool have[B_N];
};

struct rp_netsim {
  int kind;
  int src, dst;     /* the injected link / sender / receiver (-1 unused) */
  int64_t inject_ns;
  const char *phase; /* the phase the injection lengthens */
  atomic_int n, drops;
  struct step_truth *steps;
  /* proxy gaps, per local rank (written by that proxy thread only) */
  int64_t last_pass[RP_MAX_LOCAL];
  int last_active[RP_MAX_LOCAL];
  atomic_int ngaps, gap_drops;
  struct { int rank, tid; int64_t start, end; } gaps[MAX_GAPS];
};

void rp_net_pass(struct rp_proxy *px, int64_t now, int nactive) {
  struct rp_netsim *s = px->node->netsim;
  int l = px->local;
  if (s->last_active[l] && s->last_pass[l] && now - s->last_pass[l] > GAP_NS) {
    int i = atomic_fetch_add(&s->ngaps, 1);
    if (i < MAX_GAPS) {
      s->gaps[i].rank = px->node->node * px->node->rpn + l;
      s->gaps[i].tid = atomic_load(&px->tid);
      s->gaps[i].start = s->last_pass[l];
      s->gaps[i].end = now;
    } else {
      atomic_fetch_sub(&s->ngaps, 1);
      atomic_fetch_add(&s->gap_drops, 1);
    }
  }
  s->last_pass[l] = now;
  s->last_active[l] = nactive > 0;
}

static int kind_of(const char *name) {
  for (int i = 0; i < NET_NKINDS; i++)
    if (!strcmp(name, kinds[i])) return i;
  return -1;
}
bool rp_net_scenario_known(const char *name) { return kind_of(name) >= 0; }

static int node_of(const struct rp_node *n, int rank) { return rank / n->rpn; }

/* Ranks the faults hit: rank 1 (the second rank of node 0) and the first
 * rank of node 1; the slow link runs 1 -> that rank, not back. */
static void choose_victims(struct rp_node *n, struct rp_netsim *s) {
  int a = n->nranks > 1 ? 1 : 0, b = n->nodes > 1 ? n->rpn : 0;
  s->src = s->dst = -1;
  switch (s->kind) {
  case NET_SLOW_LINK: s->src = a, s->dst = b, s->inject_ns = SLOW_WIRE_NS, s->phase = "wire"; break;
  case NET_GPU_BOUND: s->src = a, s->inject_ns = SLOW_GPU_NS, s->phase = "send_gpu_wait"; break;
  case NET_SLOW_RECV: s->dst = b, s->inject_ns = SLOW_CONSUME_NS, s->phase = "recv_gpu_wait"; break;
  default: s->inject_ns = 0, s->phase = NULL; break;
  }
}

void rp_net_shape_op(struct rp_node *n, struct rp_op *op, bool send) {
  struct rp_netsim *s = n->netsim;
  for (int k = 0; k < RP_STEPS; k++) op->nt[k] = -1;
  if (!s || op->foreign) return;
  op->net_truth = s;
  op->step_ns = NET_STEP_NS;
  int me = op->rank, peer = op->peer;
  int from = send ? me : peer, to = send ? peer : me; /* the data flows from -> to */
  switch (s->kind) {
  case NET_SLOW_LINK:
    if (from == s->src && to == s->dst) op->wire_extra_ns = SLOW_WIRE_NS; /* recv: the data arrives that late */
    break;
  case NET_GPU_BOUND:
    if (from == s->src) op->step_ns += SLOW_GPU_NS; /* its receivers get the data at that pace too */
    break;
  case NET_SLOW_RECV:
    if (to == s->dst) {
      if (send) op->peer_hold_ns = CREDIT_WAIT_NS;
      else op->consume_extra_ns = SLOW_CONSUME_NS;
    }
    break;
  default: break;
  }
}

void rp_net_step_mark(struct rp_op *op, int k, int state, int64_t before, int64_t after) {
  struct rp_netsim *s = op->net_truth;
  if (!s) return;
  int slot = k % RP_STEPS;
  if (state == 0) { /* a start: a new step (a second start of the same step supersedes the first) */
    int i = atomic_fetch_add(&s->n, 1);
    if (i >= MAX_STEP_TRUTH) {
      atomic_fetch_sub(&s->n, 1);
      atomic_fetch_add(&s->drops, 1);
      op->nt[slot] = -1;
      return;
    }
    struct step_truth *t = &s->steps[i];
    memset(t, 0, sizeof *t);
    t->rank = op->rank;
    t->peer = op->peer;
    t->channel = op->channel;
    t->dir = op->kind == RP_OP_NET_SEND;
    t->op = op->op_id;
    t->step = k;
    t->qp = 0x100 + op->channel; /* as net_event reports it */
    t->device = op->local;
    t->before[B_START] = before;
    t->after[B_START] = after;
    t->have[B_START] = true;
    op->nt[slot] = i;
    return;
  }
  if (op->nt[slot] < 0) return;
  struct step_truth *t = &s->steps[op->nt[slot]];
  int b = state < 0 ? B_STOP
          : state == LENS_ST_PROXY_STEP_SEND_PEER_WAIT || state == LENS_ST_PROXY_STEP_RECV_FLUSH_WAIT ? B_MID1
          : state == LENS_ST_PROXY_STEP_SEND_WAIT || state == LENS_ST_PROXY_STEP_RECV_GPU_WAIT        ? B_MID2
                                                                                                       : -1;
  if (b < 0 || t->have[b]) return; /* 20 repeats: its phase starts at the first */
  t->before[b] = before;
  t->after[b] = after;
  t->have[b] = true;
  if (state == LENS_ST_PROXY_STEP_SEND_WAIT || state == LENS_ST_PROXY_STEP_RECV_FLUSH_WAIT) t->bytes = op->step_bytes;
}

/* ---- the scenarios ---- */

/* Every local rank sends NET_COUNT floats to, and receives as many from,
 * every rank of the other nodes: the same traffic on every link. */
static void exchange(struct rp_node *n) {
  rp_group_start(n);
  for (int l = 0; l < n->rpn; l++) {
    struct rp_comm *c = &n->comms[l];
    for (int p = 0; p < c->nranks; p++) {
      if (node_of(n, p) == node_of(n, c->rank)) continue;
      rp_p2p(n, c, RP_SEND, NET_COUNT, "ncclFloat32", 4, p);
      rp_p2p(n, c, RP_RECV, NET_COUNT, "ncclFloat32", 4, p);
    }
  }
  rp_group_end(n);
}

void rp_net_run(struct rp_node *n, const char *name, int iters) {
  struct rp_netsim *s = n->netsim;
  if (!s) {
    s = calloc(1, sizeof *s);
    s->steps = calloc(MAX_STEP_TRUTH, sizeof *s->steps);
    n->netsim = s;
  }
  s->kind = kind_of(name);
  choose_victims(n, s);
  if (s->kind == NET_IB) /* as a user would: NCCL_LENS_EVENT_MASK with net, or the control call */
    rp_mask_change(n, rp_mask_load() | LENS_EV_NET_PLUGIN);
  /* Rounds of a few ms each: enough of them that a proxy thread descheduled
   * for a few ms (a busy build machine) touches few of a link's steps. */
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    for (int r = 0; r < NET_ROUNDS; r++) {
      exchange(n);
      rp_sync(n);
    }
  }
}

/* ---- truth ---- */

static int64_t mid(const struct step_truth *t, int b) { return t->before[b] + (t->after[b] - t->before[b]) / 2; }
static int64_t half(const struct step_truth *t, int b) { return (t->after[b] - t->before[b] + 1) / 2; }

void rp_net_truth_write(struct rp_node *n, FILE *f) {
  struct rp_netsim *s = n->netsim;
  if (!s) return;
  fprintf(f, ",\n\"net\":{\"scenario\":\"%s\",\"step_period_ns\":%lld,\"injected\":", kinds[s->kind],
          (long long)NET_STEP_NS);
  if (s->phase)
    fprintf(f, "{\"src\":%d,\"dst\":%d,\"phase\":\"%s\",\"ns_per_step\":%" PRId64 "}", s->src, s->dst, s->phase,
            s->inject_ns);
  else
    fputs("null", f);
  int cnt = atomic_load(&s->n);
  int ng = atomic_load(&s->ngaps);
  fprintf(f, ",\"gap_drops\":%d,\"proxy_gaps\":[", atomic_load(&s->gap_drops));
  for (int i = 0; i < ng; i++)
    fprintf(f, "%s{\"rank\":%d,\"tid\":%d,\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 "}", i ? "," : "",
            s->gaps[i].rank, s->gaps[i].tid, s->gaps[i].start, s->gaps[i].end);
  fprintf(f, "],\"step_drops\":%d,\"steps\":[", atomic_load(&s->drops));
  int w = 0;
  for (int i = 0; i < cnt; i++) {
    const struct step_truth *t = &s->steps[i];
    if (!t->have[B_START] || !t->have[B_STOP]) continue; /* superseded or never stopped: not a timed step */
    int64_t st = mid(t, B_START), sp = mid(t, B_STOP);
    int64_t m1 = t->have[B_MID1] ? mid(t, B_MID1) : -1, m2 = t->have[B_MID2] ? mid(t, B_MID2) : -1;
    /* phases as the analysis defines them (docs/net.md); both boundaries are recorded in the replay */
    int64_t p0 = m1 >= 0 ? m1 - st : 0, p1 = m1 >= 0 && m2 >= 0 ? m2 - m1 : 0, p2 = m2 >= 0 ? sp - m2 : 0;
    int64_t err = half(t, B_START) + half(t, B_STOP) + (m1 >= 0 ? half(t, B_MID1) : 0) + (m2 >= 0 ? half(t, B_MID2) : 0);
    fprintf(f,
            "%s\n {\"rank\":%d,\"peer\":%d,\"channel\":%d,\"dir\":\"%s\",\"op\":%d,\"step\":%d,\"bytes\":%" PRIu64
            ",\"qp\":%d,\"device\":%d,\"start_ns\":%" PRId64 ",\"stop_ns\":%" PRId64 ",\"err_ns\":%" PRId64 ",",
            w++ ? "," : "", t->rank, t->peer, t->channel, t->dir ? "send" : "recv", t->op, t->step, t->bytes, t->qp,
            t->device, st, sp, err);
    if (t->dir)
      fprintf(f, "\"send_gpu_wait_ns\":%" PRId64 ",\"send_peer_wait_ns\":%" PRId64 ",\"wire_ns\":%" PRId64 "}", p0, p1,
              p2);
    else
      fprintf(f, "\"recv_data_wait_ns\":%" PRId64 ",\"recv_flush_ns\":%" PRId64 ",\"recv_gpu_wait_ns\":%" PRId64 "}",
              p0, p1, p2);
  }
  fputs("]}", f);
}

void rp_net_free(struct rp_node *n) {
  if (!n->netsim) return;
  free(n->netsim->steps);
  free(n->netsim);
  n->netsim = NULL;
}
