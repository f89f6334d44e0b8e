/* The `ce` scenario: collectives on the copy engines (NCCL >= 2.29, profiler
 * API v6+; spec §2 "CeColl, CeSync, CeBatch"). With symmetric memory and the
 * ZERO CTA policy, AllGather, AlltoAll, Scatter and Gather run as memcpys:
 * ceCollTaskAppend starts and stops the CollApi (parent: the GroupApi), and
 * at the launch ncclLaunchCeColl brackets the host's enqueue with CeColl
 * (parent: the CollApi), inside it a CeSync around each ncclMemOpSync and a
 * CeBatch around each batched memcpy (parent: the CeColl). No Group, Coll,
 * KernelLaunch, ProxyOp or KernelCh. Every stop means "enqueued", not run.
 * A plugin older than v6 is never given these events (NCCL 2.28.9 has no CE
 * collectives): the scenario then says so and emits nothing. */
#include <stdio.h>
#include <string.h>

#include "replay/rp_internal.h"
#include "replay/rp_truth.h"

#define CE_BITS (LENS_EV_CE_COLL | LENS_EV_CE_SYNC | LENS_EV_CE_BATCH)
#define MEMOP_NS 3000   /* one ncclMemOpSync on the host */
#define MEMCPY_NS 6000  /* one batched memcpy enqueue */

struct ce_func { const char *name; int batches; };
static const struct ce_func funcs[] = {{"AllGather", 2}, {"AlltoAll", 3}, {"Scatter", 1}, {"Gather", 1}};

static void *fake_stream(const struct rp_comm *c) { return (void *)(uintptr_t)(0x7e0000200000ULL + 0x1000ULL * c->index); }

static void sync_ev(struct rp_node *n, struct rp_comm *c, void *ce, bool complete, int mask) {
  if (!ce || !(mask & LENS_EV_CE_SYNC)) {
    rp_sleep_ns(MEMOP_NS);
    return;
  }
  lens_nccl_descr_v6_t d = {0};
  d.type = LENS_EV_CE_SYNC;
  d.parentObj = ce;
  d.rank = c->rank;
  d.ceCollSync.isComplete = complete;
  d.ceCollSync.nRanks = c->nranks;
  void *h = rp_start(&n->plugin, c->ctx, &d);
  rp_sleep_ns(MEMOP_NS);
  rp_stop(&n->plugin, h);
}

/* ncclLaunchCeColl for one rank's task. */
static void launch_ce(struct rp_node *n, struct rp_comm *c, const struct ce_func *f, size_t count, void *coll_api,
                      int mask, uint32_t seq) {
  void *ce = NULL;
  if (mask & CE_BITS) {
    lens_nccl_descr_v6_t d = {0};
    d.type = LENS_EV_CE_COLL;
    d.parentObj = coll_api;
    d.rank = c->rank;
    d.ceColl.seqNumber = seq;
    d.ceColl.func = f->name;
    d.ceColl.sendBuff = (const void *)(uintptr_t)(0x7f1000000000ULL + ((uint64_t)c->index << 32));
    d.ceColl.recvBuff = (void *)(uintptr_t)(0x7f2000000000ULL + ((uint64_t)c->index << 32));
    d.ceColl.count = count;
    d.ceColl.root = 0;
    d.ceColl.datatype = "ncclFloat32";
    d.ceColl.syncStrategy = seq % 2 ? "UC" : "MC";
    d.ceColl.ceSeqNum = seq;
    d.ceColl.stream = fake_stream(c);
    ce = rp_start(&n->plugin, c->ctx, &d);
  }
  sync_ev(n, c, ce, false, mask);
  for (int b = 0; b < f->batches; b++) {
    void *h = NULL;
    if (ce && (mask & LENS_EV_CE_BATCH)) {
      lens_nccl_descr_v6_t d = {0};
      d.type = LENS_EV_CE_BATCH;
      d.parentObj = ce;
      d.rank = c->rank;
      d.ceCollBatch.numOps = c->nranks - 1;
      d.ceCollBatch.totalBytes = count * 4 / (size_t)f->batches;
      d.ceCollBatch.useIntraSync = false;
      h = rp_start(&n->plugin, c->ctx, &d);
    }
    rp_sleep_ns(MEMCPY_NS);
    rp_stop(&n->plugin, h);
  }
  sync_ev(n, c, ce, true, mask);
  rp_stop(&n->plugin, ce);
}

/* One CE collective on every local rank, in a group as the app would. */
static void ce_all_ranks(struct rp_node *n, const struct ce_func *f, size_t count, uint32_t seq) {
  int mask = rp_mask_load();
  bool api_events = mask & (LENS_EV_GROUP_API | LENS_EV_COLL_API | CE_BITS);
  void *group = NULL, *apis[RP_MAX_LOCAL] = {0};
  if (api_events) {
    lens_nccl_descr_v6_t d = {0};
    d.type = LENS_EV_GROUP_API;
    d.groupApi.groupDepth = n->rpn > 1 ? 2 : 1;
    group = rp_start(&n->plugin, n->comms[0].ctx, &d);
    rp_record(&n->plugin, group, LENS_ST_GROUP_START_API_STOP, NULL);
  }
  for (int l = 0; l < n->rpn; l++) { /* ceCollTaskAppend */
    struct rp_comm *c = &n->comms[l];
    if (!api_events) continue;
    lens_nccl_descr_v6_t d = {0};
    d.type = LENS_EV_COLL_API;
    d.parentObj = group;
    d.collApi.func = f->name;
    d.collApi.count = count;
    d.collApi.datatype = "ncclFloat32";
    d.collApi.stream = fake_stream(c);
    apis[l] = rp_start(&n->plugin, c->ctx, &d);
    rp_stop(&n->plugin, apis[l]);
  }
  rp_record(&n->plugin, group, LENS_ST_GROUP_END_API_START, NULL);
  for (int l = n->rpn - 1; l >= 0; l--) /* doLaunches: reverse communicator order */
    launch_ce(n, &n->comms[l], f, count, apis[l], mask, seq);
  rp_stop(&n->plugin, group);
}

void rp_ce_run(struct rp_node *n, int iters) {
  if (n->plugin.api < 6) {
    fprintf(stderr, "nccl-lens replay: scenario ce: a v%d plugin is never given CE events (NCCL 2.28.9 has no CE "
                    "collectives); use --api 6, 7 or auto\n",
            n->plugin.api);
    return;
  }
  uint32_t seq = 0;
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    for (size_t k = 0; k < sizeof funcs / sizeof funcs[0]; k++) ce_all_ranks(n, &funcs[k], (size_t)1 << (12 + 2 * k), seq++);
    rp_sync(n);
  }
}
