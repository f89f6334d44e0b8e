/* Plans of one communicator: the simulated kernel, the proxy ops NCCL posts
 * for it (net ops for ring edges or peers on another node, one profiler
 * pseudo-op per channel when KernelCh is on), and the Group/Coll/P2p events
 * of hostStreamPlanTask. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay/rp_plan.h"
#include "replay/rp_net.h"
#include "replay/rp_couple.h"
#include "replay/rp_job.h"
#include "replay/rp_truth.h"

#define LAUNCH_LAT_NS 6000   /* launch call -> kernel start */
#define LAUNCH_BLOCK_NS 15000 /* the launch call blocks the thread */
#define CH_SKEW_NS 250       /* channels start a little apart */

static int node_of(const struct rp_node *n, int rank) { return rank / n->rpn; }

static const char *proto_for(size_t bytes) { return bytes <= 65536 ? "LL" : bytes <= (512u << 10) ? "LL128" : "SIMPLE"; }

/* Rewritten datatype/count as in the Coll descriptor (enqueue.cc:2476). */
static const char *desc_dtype(const struct rp_task *t) {
  return t->func == RP_ALLGATHER || t->func == RP_BROADCAST ? "ncclInt8" : t->dtype;
}
static size_t desc_count(const struct rp_task *t) {
  return t->func == RP_ALLGATHER || t->func == RP_BROADCAST ? t->count * t->esize : t->count;
}

struct net_plan {
  int send_peer, recv_peer, nSteps, chunkSize;
  size_t step_bytes;
};

static struct net_plan net_plan_for(const struct rp_node *n, const struct rp_task *t) {
  struct net_plan np = {-1, -1, 0, 0, 0};
  const struct rp_comm *c = t->comm;
  int g = c->rank, N = c->nranks;
  size_t bytes = t->count * t->esize;
  size_t per_ch = bytes / (size_t)t->nChannels + 1;
  if (t->is_p2p) {
    if (node_of(n, t->peer) != node_of(n, g)) {
      if (t->func == RP_SEND) np.send_peer = t->peer;
      else np.recv_peer = t->peer;
    }
    size_t chunk = 128u << 10; /* sliceSteps = chunkSteps = 1 */
    np.nSteps = (int)((per_ch + chunk - 1) / chunk);
    np.chunkSize = (int)chunk;
    np.step_bytes = per_ch < chunk ? per_ch : chunk;
  } else {
    int next = (g + 1) % N, prev = (g + N - 1) % N;
    bool snd = node_of(n, next) != node_of(n, g), rcv = node_of(n, prev) != node_of(n, g);
    if (t->func == RP_BROADCAST) {
      snd = snd && next != t->root;
      rcv = rcv && g != t->root;
    }
    if (snd) np.send_peer = next;
    if (rcv) np.recv_peer = prev;
    int per_loop = t->func == RP_ALLREDUCE ? 2 * (N - 1) : t->func == RP_BROADCAST ? 1 : N - 1;
    if (per_loop < 1) per_loop = 1;
    size_t chunk = 128u << 10; /* chunkSize x sliceSteps, SIMPLE-like */
    size_t loop_bytes = t->func == RP_BROADCAST ? chunk : chunk * (size_t)N;
    int nloops = (int)((per_ch + loop_bytes - 1) / loop_bytes);
    np.nSteps = per_loop * 2 * nloops; /* chunkSteps / sliceSteps = 2 */
    if (np.nSteps > 48) np.nSteps = 48;
    np.chunkSize = (int)chunk;
    size_t sb = per_ch / (size_t)(per_loop * nloops) + 1;
    np.step_bytes = sb < chunk ? sb : chunk;
  }
  return np;
}

/* True duration of a task's work on each channel. */
int64_t rp_task_dur_ns(const struct rp_node *n, const struct rp_task *t) {
  double bytes = (double)t->count * (double)t->esize, N = t->comm->nranks;
  double traffic = t->func == RP_ALLREDUCE   ? 2 * (N - 1) / N * bytes
                   : t->is_p2p || t->func == RP_BROADCAST ? bytes
                                                          : (N - 1) / N * bytes;
  double bw = n->nodes > 1 ? 12.0 : 40.0; /* bytes per ns per channel */
  int64_t d = 5000 + (int64_t)(traffic / t->nChannels / bw);
  if (n->o->slow_factor > 0 && !strcmp(n->o->slow_func, rp_func_name(t->func))) d = (int64_t)((double)d * n->o->slow_factor);
  return d;
}

int rp_task_net_steps(const struct rp_node *n, const struct rp_task *t) { return net_plan_for(n, t).nSteps; }

bool rp_plan_has_proxy_ops(struct rp_node *n, const struct rp_plan *p) {
  for (const struct rp_task *t = p->tasks; t; t = t->next) {
    if (t->mask & LENS_EV_KERNEL_CH) return true;
    struct net_plan np = net_plan_for(n, t);
    if (np.send_peer >= 0 || np.recv_peer >= 0) return true;
  }
  return false;
}

static void pair_p2p(struct rp_plan *p) {
  for (struct rp_task *t = p->tasks; t; t = t->next) t->pair = NULL;
  for (struct rp_task *t = p->tasks; t; t = t->next) {
    if (!t->is_p2p || t->pair) continue;
    for (struct rp_task *u = t->next; u; u = u->next)
      if (u->is_p2p && !u->pair && u->func != t->func) {
        t->pair = u;
        u->pair = t;
        if (u->nChannels > t->nChannels) t->nChannels = u->nChannels;
        u->nChannels = t->nChannels;
        break;
      }
  }
}

bool rp_plan_task_follows(const struct rp_task *t, const struct rp_plan *p) {
  if (!t->pair) return false;
  for (const struct rp_task *u = p->tasks; u; u = u->next) {
    if (u == t) return false; /* t comes first: it leads */
    if (u == t->pair) return true;
  }
  return false;
}

/* A truth entry for one execution of a task at its rank. */
static int truth_op_for(struct rp_node *n, struct rp_task *t, int replay) {
  int id = rp_truth_op_new(n->truth);
  t->op_id = id;
  struct rp_truth_op *op = rp_truth_op_at(n->truth, id);
  if (!op) return id;
  op->comm = t->comm->index;
  op->rank = t->comm->rank;
  op->func = t->func;
  op->is_p2p = t->is_p2p;
  op->iter = n->iter;
  op->graph_replay = replay;
  op->mask = t->mask;
  op->nChannels = t->nChannels;
  op->root = t->is_p2p ? -1 : t->root;
  op->peer = t->is_p2p ? t->peer : -1;
  op->datatype = t->is_p2p ? t->dtype : desc_dtype(t);
  op->count = t->is_p2p ? t->count : desc_count(t);
  op->bytes = t->count * t->esize;
  op->algo = t->is_p2p ? NULL : "RING";
  op->proto = t->is_p2p ? NULL : proto_for(op->bytes);
  op->user_tag = t->user_tag;
  if (t->sym_kernel) { /* NCCL overwrites algo with the variant's algorithm part and clears proto */
    op->is_sym = true;
    op->kernel_variant = t->sym_kernel;
    op->algo = rp_sym_algo(t->sym_kernel);
    op->proto = "";
  }
  op->seq = -1;
  op->api_ns = t->api_ns;
  op->proxy_rank = -1;
  op->tid = rp_gettid();
  return id;
}

void rp_plan_gpu(struct rp_node *n, struct rp_plan *p, int replay) {
  struct rp_comm *c = p->comm;
  struct rp_gpu *g = &n->gpu[c->local];
  int64_t now = rp_now();
  int64_t ks = now + LAUNCH_LAT_NS;
  if (ks < c->stream_free) ks = c->stream_free; /* stream order */
  p->kstart = ks;
  pair_p2p(p);
  int64_t off = 0;
  for (struct rp_task *t = p->tasks; t; t = t->next) {
    t->hang = n->hang.now;
    int id = truth_op_for(n, t, replay);
    struct rp_truth_op *op = rp_truth_op_at(n->truth, id);
    if (op) op->kernel_start = ks + off;
    if (rp_plan_task_follows(t, p)) {
      memcpy(t->items, t->pair->items, sizeof t->items);
      if (op) op->kernel_start = rp_truth_op_at(n->truth, t->pair->op_id)->kernel_start;
      continue;
    }
    for (int ch = 0; ch < t->nChannels; ch++) t->items[ch] = rp_gpu_new_item(g, ch, id, ks + off + ch * CH_SKEW_NS);
    off += rp_task_dur_ns(n, t);
  }
}

void rp_plan_finish_set(struct rp_node *n, struct rp_plan *plans, int np, int set) {
  int64_t sync[RP_MAX_COMMSETS] = {0};
  for (int i = 0; i < np; i++)
    if (plans[i].kstart > sync[plans[i].comm->set]) sync[plans[i].comm->set] = plans[i].kstart;
  for (int i = 0; i < np; i++) {
    struct rp_plan *p = &plans[i];
    if (set >= 0 && p->comm->set != set) continue;
    struct rp_gpu *g = &n->gpu[p->comm->local];
    int64_t off = 0, s = sync[p->comm->set];
    for (struct rp_task *t = p->tasks; t; t = t->next) {
      struct rp_truth_op *op = rp_truth_op_at(n->truth, t->op_id);
      if (rp_plan_task_follows(t, p)) {
        if (op) op->kernel_end = rp_truth_op_at(n->truth, t->pair->op_id)->kernel_end;
        continue;
      }
      int64_t end = s + off + rp_task_dur_ns(n, t);
      if (t->hang) continue; /* its kernel waits for a peer for ever: no end published */
      for (int ch = 0; ch < t->nChannels; ch++) {
        struct rp_item *it = rp_gpu_item(g, ch, t->items[ch]);
        if (it) atomic_store_explicit(&it->end, end + ch * CH_SKEW_NS, memory_order_release);
      }
      if (op) op->kernel_end = end + (t->nChannels - 1) * CH_SKEW_NS;
      off += rp_task_dur_ns(n, t);
    }
    if (s + off > p->comm->stream_free) p->comm->stream_free = s + off + (int64_t)CH_SKEW_NS * RP_MAX_CH;
  }
}

void rp_plan_finish(struct rp_node *n, struct rp_plan *plans, int np) { rp_plan_finish_set(n, plans, np, -1); }

static struct rp_op *op_new(struct rp_node *n, struct rp_task *t, enum rp_op_kind kind, int ch) {
  struct rp_op *op = calloc(1, sizeof *op);
  op->kind = kind;
  op->ctx = t->comm->ctx;
  op->parent = t->h;
  op->mask = t->mask;
  op->rank = t->comm->rank;
  op->pid = getpid();
  op->channel = ch;
  op->op_id = t->op_id;
  op->local = t->comm->local;
  op->base = t->items[ch];
  op->t0 = rp_now();
  op->kch_truth = -1;
  (void)n;
  return op;
}

static void post_ops(struct rp_node *n, struct rp_task *t) {
  struct rp_comm *c = t->comm;
  struct net_plan np = net_plan_for(n, t);
  int own = c->local;
  int via = n->pxn && n->rpn > 1 ? (own + 1) % n->rpn : own; /* PXN: another local rank's proxy */
  int64_t dur = rp_task_dur_ns(n, t);
  int nets = 0;
  for (int ch = 0; ch < t->nChannels; ch++) {
    for (int dir = 0; dir < 2; dir++) { /* recv op, then send op, per channel */
      int peer = dir == 0 ? np.recv_peer : np.send_peer;
      if (peer < 0) continue;
      struct rp_op *op = op_new(n, t, dir == 0 ? RP_OP_NET_RECV : RP_OP_NET_SEND, ch);
      op->peer = peer;
      op->nSteps = np.nSteps;
      op->chunkSize = np.chunkSize;
      op->step_bytes = np.step_bytes;
      op->step_ns = (dur - 4000) / (np.nSteps > 0 ? np.nSteps : 1);
      if (op->step_ns < 500) op->step_ns = 500;
      rp_net_shape_op(n, op, dir == 1);
      if (n->board) op->wire_extra_ns += rp_job_wire_ns(n, c, dir == 1, peer);
      if (dir == 0 && n->hazard_dup_recv) {
        op->dup_recv_start = true;
        n->hazard_dup_recv = false;
      }
      if (dir == 1 && n->hazard_net_null) {
        op->net_null_stop = true;
        n->hazard_net_null = false;
      }
      if (t->board_ord1 && op->nSteps <= RP_LINK_STEPS) { /* the receive waits for its sender's posts */
        op->link_ord1 = t->board_ord1;
        op->link_set = c->set;
      }
      if (t->hang) rp_hang_stall_op(n, op, dir == 1);
      if (via != own) rp_truth_hazard(n->truth, "pxn_same_process", c->rank, via);
      rp_proxy_post(&n->proxy[via], op);
      if (t->hang && n->o->hang_post_gap_ms) /* the poster descheduled between two posts (tests) */
        rp_sleep_ns((int64_t)n->o->hang_post_gap_ms * 1000000LL);
      nets++;
    }
    if (t->mask & LENS_EV_KERNEL_CH) {
      struct rp_op *op = op_new(n, t, RP_OP_PROFILER, ch);
      op->kch_truth = rp_truth_kch_new(n->truth);
      struct rp_truth_kch *k = rp_truth_kch_at(n->truth, op->kch_truth);
      if (k) {
        k->rank = c->rank;
        k->channel = ch;
        k->op = t->op_id;
        k->counter = op->base;
      }
      rp_proxy_post(rp_kch_thread(n, own), op); /* 2.31: the profiler thread, from the host callback */
    }
  }
  if (n->hazard_collnet && !t->is_p2p) { /* a collnet-like op: started, never stopped */
    struct rp_op *op = op_new(n, t, RP_OP_COLLNET, 0);
    op->peer = -1;
    op->nSteps = 1;
    op->chunkSize = np.chunkSize;
    n->hazard_collnet = false;
    rp_proxy_post(&n->proxy[own], op);
  }
  struct rp_truth_op *top = rp_truth_op_at(n->truth, t->op_id);
  if (top) {
    top->net_ops = nets;
    top->proxy_rank = nets ? n->comms[via].rank : -1;
  }
}

void rp_plan_host_task(struct rp_node *n, struct rp_plan *p, int replay, bool post) {
  struct rp_comm *c = p->comm;
  int gm = 0;
  for (struct rp_task *t = p->tasks; t; t = t->next) gm |= t->mask;
  void *hg = NULL;
  if (rp_gate(LENS_EV_GROUP, gm)) {
    lens_nccl_descr_v6_t d = {0};
    d.type = LENS_EV_GROUP;
    hg = rp_start(&n->plugin, c->ctx, &d);
  }
  for (struct rp_task *t = p->tasks; t; t = t->next) {
    if (t->op_id < 0) truth_op_for(n, t, replay); /* capture: the only time these events fire */
    struct rp_truth_op *op = rp_truth_op_at(n->truth, t->op_id);
    if (op) op->tid = rp_gettid();
    lens_nccl_descr_v6_t d = {0};
    d.parentObj = t->api_h;
    d.rank = c->rank;
    if (!t->is_p2p) {
      uint64_t seq = c->seq[t->func];
      if (replay == RP_EAGER || (replay >= 0 && (t->mask & LENS_EV_KERNEL_CH))) c->seq[t->func]++;
      if (op) op->seq = (int64_t)seq;
      if (!rp_gate(LENS_EV_COLL, t->mask)) continue;
      d.type = LENS_EV_COLL;
      d.coll.seqNumber = seq;
      d.coll.func = rp_func_name(t->func);
      d.coll.sendBuff = (const void *)(uintptr_t)(0x7f1000000000ULL + ((uint64_t)c->index << 28));
      d.coll.recvBuff = (void *)(uintptr_t)(0x7f2000000000ULL + ((uint64_t)c->index << 28));
      d.coll.count = desc_count(t);
      d.coll.root = t->root;
      d.coll.datatype = desc_dtype(t);
      d.coll.nChannels = (uint8_t)t->nChannels;
      d.coll.nWarps = 16;
      d.coll.algo = t->sym_kernel ? rp_sym_algo(t->sym_kernel) : "RING";
      d.coll.proto = t->sym_kernel ? "" : proto_for(t->count * t->esize);
      d.coll.parentGroup = hg;
    } else {
      if (!rp_gate(LENS_EV_P2P, t->mask)) continue;
      d.type = LENS_EV_P2P;
      d.p2p.func = rp_func_name(t->func);
      d.p2p.buff = (void *)(uintptr_t)(0x7f3000000000ULL + ((uint64_t)c->index << 28));
      d.p2p.datatype = t->dtype;
      d.p2p.count = t->count;
      d.p2p.peer = t->peer;
      d.p2p.nChannels = (uint8_t)t->nChannels;
      d.p2p.parentGroup = hg;
    }
    struct rp_v7x x = {.user_tag = t->user_tag, .kernel_variant = t->sym_kernel, .is_sym = t->sym_kernel != NULL};
    t->h = rp_start7(&n->plugin, c->ctx, &d, &x);
    if (op) op->emitted = true;
  }
  if (post) /* uploadProxyOps + ncclProxyStart */
    for (struct rp_task *t = p->tasks; t; t = t->next) post_ops(n, t);
  for (struct rp_task *t = p->tasks; t; t = t->next) rp_stop(&n->plugin, t->h);
  rp_stop(&n->plugin, hg);
}

void rp_tasks_free(struct rp_task *t) {
  while (t) {
    struct rp_task *nx = t->next;
    free(t);
    t = nx;
  }
}

struct rp_task *rp_tasks_clone(const struct rp_task *t) {
  struct rp_task *head = NULL, **tail = &head;
  for (; t; t = t->next) {
    struct rp_task *c = malloc(sizeof *c);
    *c = *t;
    c->next = NULL;
    c->pair = NULL;
    c->h = NULL;
    c->op_id = -1;
    c->board_ord1 = 0;
    memset(c->items, 0, sizeof c->items);
    *tail = c;
    tail = &c->next;
  }
  return head;
}

/* ncclGroupEnd's doLaunches: plans per communicator, launched in reverse
 * order of first use (§11), each: KernelLaunch [launch] KernelLaunch stop,
 * then hostStreamPlanTask right away (no host callbacks for eager work). */
void rp_launch_tasks(struct rp_node *n, struct rp_task *tasks, bool capture) {
  if (!tasks) return;
  struct rp_plan plans[RP_MAX_COMMSETS * RP_MAX_LOCAL];
  int np = 0;
  while (tasks) {
    struct rp_task *t = tasks;
    tasks = t->next;
    t->next = NULL;
    int i = 0;
    while (i < np && plans[i].comm != t->comm) i++;
    if (i == np) {
      plans[np].comm = t->comm;
      plans[np].tasks = NULL;
      plans[np].kstart = 0;
      np++;
    }
    struct rp_task **pp = &plans[i].tasks;
    while (*pp) pp = &(*pp)->next;
    *pp = t;
  }
  for (int i = np - 1; i >= 0; i--) {
    struct rp_plan *p = &plans[i];
    const struct rp_task *first = NULL;
    for (const struct rp_task *t = p->tasks; t && !first; t = t->next)
      if (t->mask) first = t;
    void *hkl = NULL;
    if (first && rp_gate(LENS_EV_KERNEL_LAUNCH, first->mask)) {
      lens_nccl_descr_v6_t d = {0};
      d.type = LENS_EV_KERNEL_LAUNCH;
      d.parentObj = first->group_api_h;
      d.kernelLaunch.stream = (void *)(uintptr_t)(0x7e0000100000ULL + 0x1000ULL * p->comm->index);
      hkl = rp_start(&n->plugin, p->comm->ctx, &d);
    }
    int64_t t0 = rp_now();
    rp_standin_launch();
    if (!capture && n->board) { /* coupled GPUs (job scenarios): the board fixes the ends */
      rp_job_launch_hold(n, p->comm);
      rp_plan_gpu(n, p, RP_EAGER);
      rp_couple_arrive(n, p);
    } else if (!capture) {
      rp_plan_gpu(n, p, RP_EAGER);
      /* The last rank of a communicator to launch fixes when all of them end:
       * publish the ends now, as the GPUs would reach them. */
      bool last = true;
      for (int j = 0; j < i; j++) last &= plans[j].comm->set != p->comm->set;
      if (last) rp_plan_finish_set(n, plans + i, np - i, p->comm->set);
    }
    rp_sleep_ns(LAUNCH_BLOCK_NS); /* the launch call blocks */
    rp_stop(&n->plugin, hkl);
    int64_t t1 = rp_now();
    if (capture) {
      rp_graph_capture_plan(n, p);
      continue;
    }
    for (struct rp_task *t = p->tasks; t; t = t->next) {
      struct rp_truth_op *op = rp_truth_op_at(n->truth, t->op_id);
      if (op) {
        op->launch_start = t0;
        op->launch_end = t1;
      }
    }
    rp_plan_host_task(n, p, RP_EAGER, true);
  }
  if (capture) return;
  for (int i = 0; i < np; i++) rp_tasks_free(plans[i].tasks);
}
