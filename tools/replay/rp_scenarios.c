/* Scenarios: what the fake application does with its communicators. One app
 * thread drives every local rank, as a single-process multi-GPU job does
 * (inside ncclGroupStart/End when it has more than one rank). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay/rp_internal.h"
#include "replay/rp_net.h"
#include "replay/rp_job.h"
#include "replay/rp_truth.h"

static const char *const scenarios[] = {"allreduce", "sendrecv", "mixed", "graph", "pxn",
                                        "starved",   "overrun",  "all",   "ce",  NULL};

bool rp_scenario_known(const char *name) {
  for (int i = 0; scenarios[i]; i++)
    if (!strcmp(name, scenarios[i])) return true;
  return rp_scen_v7_known(name) || rp_net_scenario_known(name) || rp_hang_known(name) ||
         rp_job_kind_of(name) != RP_JOB_OFF;
}

int rp_scenario_ncomm_sets(const char *name) {
  return !strcmp(name, "all") ? 3 : !strcmp(name, "mixed") ? 2 : 1;
}

static struct rp_comm *comm(struct rp_node *n, int set, int local) { return &n->comms[set * n->rpn + local]; }

/* Multi-rank processes must group their per-rank calls; one rank calls bare. */
static void app_group_start(struct rp_node *n) {
  if (n->rpn > 1) rp_group_start(n);
}
static void app_group_end(struct rp_node *n) {
  if (n->rpn > 1) rp_group_end(n);
}

static void coll_all_ranks(struct rp_node *n, int set, int func, size_t count, int root) {
  app_group_start(n);
  for (int l = 0; l < n->rpn; l++) rp_coll(n, comm(n, set, l), func, count, "ncclFloat32", 4, root);
  app_group_end(n);
}

void rp_mask_change(struct rp_node *n, int newmask) {
  int old = rp_mask_load();
  const char *via = "store";
  if (n->plugin.set_mask) {
    n->plugin.set_mask(newmask);
    via = "ncclLensSetEventMask";
  } else {
    __atomic_store_n(&rp_event_mask, newmask, __ATOMIC_RELAXED);
  }
  rp_truth_mask_change(n->truth, n->iter, old, newmask, via);
}

/* --mask-change: odd iterations drop every bit that enables CollApi (so the
 * next collective stops the stale CollApi handle, §2.3), even ones restore. */
static void maybe_mask_change(struct rp_node *n, int iter, int *orig) {
  if (!n->o->mask_change || iter == 0) return;
  if (iter == 1) *orig = rp_mask_load();
  const int coll_api_bits = LENS_EV_COLL_API | LENS_EV_COLL | LENS_EV_PROXY_OP | LENS_EV_PROXY_STEP |
                            LENS_EV_KERNEL_CH | LENS_EV_NET_PLUGIN;
  int m = iter % 2 ? ((*orig & ~coll_api_bits) | LENS_EV_GROUP_API | LENS_EV_KERNEL_LAUNCH) : *orig;
  rp_mask_change(n, m);
}

static void sc_allreduce(struct rp_node *n, int iters) {
  static const size_t sizes[] = {1024, 65536, 1 << 20};
  int orig = 0;
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    maybe_mask_change(n, it, &orig);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) coll_all_ranks(n, 0, RP_ALLREDUCE, sizes[s], 0);
    rp_sync(n);
  }
  if (n->o->mask_change && iters > 1 && (iters - 1) % 2) rp_mask_change(n, orig);
}

/* Ring exchange: every rank sends to the next and receives from the previous. */
static void sendrecv_round(struct rp_node *n, int set, size_t count) {
  rp_group_start(n);
  for (int l = 0; l < n->rpn; l++) {
    struct rp_comm *c = comm(n, set, l);
    int next = (c->rank + 1) % c->nranks, prev = (c->rank + c->nranks - 1) % c->nranks;
    rp_p2p(n, c, RP_SEND, count, "ncclFloat32", 4, next);
    rp_p2p(n, c, RP_RECV, count, "ncclFloat32", 4, prev);
  }
  rp_group_end(n);
}

static void sc_sendrecv(struct rp_node *n, int iters) {
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    sendrecv_round(n, 0, 4096);
    sendrecv_round(n, 0, 1 << 18);
    rp_sync(n);
  }
}

/* AlltoAll as NCCL runs it: P2pApi Send/Recv per peer, no CollApi. */
static void alltoall(struct rp_node *n, int set, size_t count) {
  rp_group_start(n);
  for (int l = 0; l < n->rpn; l++) {
    struct rp_comm *c = comm(n, set, l);
    for (int p = 0; p < c->nranks; p++) {
      rp_p2p(n, c, RP_SEND, count, "ncclBfloat16", 2, p);
      rp_p2p(n, c, RP_RECV, count, "ncclBfloat16", 2, p);
    }
  }
  rp_group_end(n);
}

static void sc_mixed(struct rp_node *n, int iters) {
  int set1 = n->ncomm_sets > 1 ? 1 : 0;
  int orig = 0;
  n->hazard_collnet = n->hazard_dup_recv = n->hazard_net_null = true;
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    maybe_mask_change(n, it, &orig);
    coll_all_ranks(n, 0, RP_ALLREDUCE, 1 << 18, 0);
    coll_all_ranks(n, set1, RP_ALLGATHER, 8192, 0);
    coll_all_ranks(n, 0, RP_REDUCESCATTER, 1 << 16, 0);
    coll_all_ranks(n, set1, RP_BROADCAST, 1 << 15, 0);
    alltoall(n, 0, 2048);
    /* one user group over both communicators: one GroupApi for all */
    rp_group_start(n);
    for (int l = 0; l < n->rpn; l++) {
      rp_coll(n, comm(n, 0, l), RP_ALLREDUCE, 4096, "ncclFloat16", 2, 0);
      rp_coll(n, comm(n, set1, l), RP_ALLREDUCE, 4096, "ncclFloat16", 2, 0);
    }
    rp_group_end(n);
    rp_sync(n);
  }
  if (n->o->mask_change && iters > 1 && (iters - 1) % 2) rp_mask_change(n, orig);
}

static void sc_graph(struct rp_node *n, int iters) {
  n->iter = 0;
  rp_capture_begin(n);
  coll_all_ranks(n, 0, RP_ALLREDUCE, 1 << 16, 0);
  coll_all_ranks(n, 0, RP_ALLREDUCE, 1 << 12, 0);
  rp_capture_end(n);
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    for (int r = 0; r < 2; r++) rp_graph_launch(n, it * 2 + r);
    rp_sync(n);
  }
  rp_graph_free(n);
}

/* PXN from another process: ops whose pid, context and parent belong to a
 * process we cannot see (pointers into a PROT_NONE page), run by our proxy. */
static void inject_foreign(struct rp_node *n, int count) {
  for (int i = 0; i < count; i++) {
    for (int dir = 0; dir < 2; dir++) {
      struct rp_op *op = calloc(1, sizeof *op);
      op->kind = dir ? RP_OP_NET_SEND : RP_OP_NET_RECV;
      op->foreign = true;
      op->ctx = (char *)n->foreign_base + 64;
      op->parent = (char *)n->foreign_base + 256 + 16 * i;
      op->mask = LENS_EV_ALL_V5;
      op->rank = n->nranks + 1; /* a rank of the other process */
      op->pid = getpid() + 4099;
      op->channel = i % 2;
      op->peer = (n->node * n->rpn + n->rpn) % n->nranks;
      op->nSteps = 4;
      op->chunkSize = 1 << 17;
      op->step_bytes = 1 << 17;
      op->t0 = rp_now();
      op->step_ns = 8000;
      op->op_id = -1;
      op->kch_truth = -1;
      rp_truth_hazard(n->truth, "pxn_foreign_process", op->rank, op->pid);
      rp_proxy_post(&n->proxy[0], op);
    }
  }
}

static void sc_pxn(struct rp_node *n, int iters) {
  n->pxn = true;
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    inject_foreign(n, 2);
    coll_all_ranks(n, 0, RP_ALLREDUCE, 1 << 18, 0);
    rp_sync(n);
  }
  n->pxn = false;
}

/* The proxy of local rank 0 is busy elsewhere while more than 64 work items
 * go through channel 0: it then reads newer items' timers (§3). */
static void sc_overrun(struct rp_node *n, int iters) {
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    atomic_store(&rp_kch_thread(n, 0)->stall_until, rp_now() + 10 * 1000000000LL);
    for (int k = 0; k < 72; k++) coll_all_ranks(n, 0, RP_ALLREDUCE, 256, 0);
    int64_t last = 0;
    for (int i = 0; i < n->ncomms; i++)
      if (n->comms[i].stream_free > last) last = n->comms[i].stream_free;
    int64_t now = rp_now();
    if (last > now) rp_sleep_ns(last - now);
    rp_truth_hazard(n->truth, "proxy_stall", n->comms[0].rank, 72);
    atomic_store(&rp_kch_thread(n, 0)->stall_until, 0);
    rp_sync(n);
  }
}

/* Starvation as NCCL's proxy meets it: long kernels queued back to back,
 * so every proxy always has KernelCh to poll for and runs NCCL's busy loop
 * (sched_yield when a pass added nothing), on one CPU with busy hogs; the
 * app thread runs elsewhere and keeps the GPUs 1-3 ms ahead, so every GPU
 * event comes after its op was posted and a late notice is the proxy's
 * alone (rp_hog.c). Unstarved AllReduces before and after give prompt
 * notices (GPU clock fits) and not-late KernelCh; the other local ranks'
 * proxies are unstarved controls on the app's CPU. The hog phase lasts
 * 100 ms per iteration (at most 1.6 s), after a 100 ms pause. */
#define STARVE_AHEAD_NS 3000000LL
static int items_left(struct rp_node *n) {
  uint64_t used = 0;
  for (int l = 0; l < n->rpn; l++)
    for (int ch = 0; ch < RP_MAX_CH; ch++) {
      uint64_t u = atomic_load(&n->gpu[l].published[ch]);
      if (u > used) used = u;
    }
  return (int)(n->gpu[0].items_cap - used);
}
#define STARVE_PHASE_NS 100000000LL
static void sc_starved(struct rp_node *n, int iters) {
  /* Kernels of 0.4, 1.0, 1.6 and 2.2 ms on 4 channels (2 ranks): NCCL's
   * KernelCh stop comes at the end of each, at a time unrelated to when the
   * proxy holds the CPU. */
  static const size_t counts[] = {16u << 20, 40u << 20, 64u << 20, 88u << 20};
  const int ncounts = (int)(sizeof counts / sizeof counts[0]);
  n->iter = 0;
  for (int k = 0; k < 4; k++) {
    coll_all_ranks(n, 0, RP_ALLREDUCE, k % 2 ? 1 << 16 : counts[k], 0);
    rp_sync(n);
  }
  /* A follower (`nccl-lens sched --follow`) finds a new process within
   * 50 ms: let it watch the proxies before the hogs start. */
  rp_sleep_ns(STARVE_PHASE_NS);
  int phases = iters < 16 ? iters : 16;
  struct rp_hogs *h = rp_hogs_start(n, 2);
  int64_t end = rp_now() + phases * STARVE_PHASE_NS;
  /* RP_ITEMS_PER_CH bounds the kernels per rank and channel (--reload runs
   * the scenario twice): stop early rather than run out. */
  for (int k = 0; rp_now() < end && items_left(n) > 16; k++) {
    n->iter = k / 64;
    coll_all_ranks(n, 0, RP_ALLREDUCE, counts[(k * 7 + k / ncounts) % ncounts], 0);
    int64_t last = 0;
    for (int i = 0; i < n->ncomms; i++)
      if (n->comms[i].stream_free > last) last = n->comms[i].stream_free;
    int64_t ahead = last - rp_now();
    if (ahead > STARVE_AHEAD_NS) rp_sleep_ns(ahead - STARVE_AHEAD_NS / 3);
  }
  rp_sync(n);
  rp_hogs_stop(h);
  for (int k = 0; k < 4; k++) {
    coll_all_ranks(n, 0, RP_ALLREDUCE, k % 2 ? 1 << 16 : counts[k], 0);
    rp_sync(n);
  }
}

/* Without --iters, the mix the demo and tests know; with it, every part
 * runs that many iterations. */
static void sc_all(struct rp_node *n, int iters) {
  int set = n->o->iters_given;
  sc_allreduce(n, set ? iters : 2);
  sc_sendrecv(n, set ? iters : 1);
  sc_mixed(n, set ? iters : 1);
  sc_graph(n, set ? iters : 2);
  sc_pxn(n, set ? iters : 1);
  sc_overrun(n, set ? iters : 1);
  for (int it = 0; it < 2; it++) /* a non-blocking communicator: launches on the async thread */
    coll_all_ranks(n, 2, RP_ALLREDUCE, 1 << 14, 0);
  rp_sync(n);
  struct rp_hogs *h = rp_hogs_start(n, 1);
  for (int it = 0; it < 4; it++) {
    coll_all_ranks(n, 0, RP_ALLREDUCE, 1 << 16, 0);
    rp_sleep_ns(30 * 1000000LL);
  }
  rp_sync(n);
  rp_hogs_stop(h);
  rp_scen_v7_in_all(n);
}

void rp_scenario_run(struct rp_node *n, const char *name, int iters) {
  if (rp_hang_run(n, name, iters)) return; /* never synced: its collective never completes */
  if (rp_scen_v7_run(n, name, iters)) (void)0;
  else if (!strcmp(name, "allreduce")) sc_allreduce(n, iters);
  else if (!strcmp(name, "sendrecv")) sc_sendrecv(n, iters);
  else if (!strcmp(name, "mixed")) sc_mixed(n, iters);
  else if (!strcmp(name, "graph")) sc_graph(n, iters);
  else if (!strcmp(name, "pxn")) sc_pxn(n, iters);
  else if (!strcmp(name, "starved")) sc_starved(n, iters);
  else if (!strcmp(name, "overrun")) sc_overrun(n, iters);
  else if (!strcmp(name, "all")) sc_all(n, iters);
  else if (!strcmp(name, "ce")) rp_ce_run(n, iters);
  else if (rp_net_scenario_known(name)) rp_net_run(n, name, iters);
  else if (rp_job_kind_of(name) != RP_JOB_OFF) rp_job_run(n, iters);
  rp_sync(n);
}
