/* Scenarios of NCCL 2.31.2's additions (docs/replay.md):
 *   tagged     calls made through nccl*Config() with a userProfilerTag:
 *              forward (1), backward (2), optimizer (3), plus untagged ones;
 *   symmetric  collectives run as symmetric kernels (isSymColl, kernelVariant;
 *              NCCL rewrites algo to the variant's algorithm and proto to "");
 *   phases     the job-wide mask set through NCCL's RAS client after init,
 *              turning KernelPhase on (and back off): every KernelCh after it
 *              has its three phases.
 * With a v7 plugin, `all` runs them too. With an older one they still run:
 * the plugin then sees what NCCL's v6 translation leaves (no tags, no variant,
 * no phases; a symmetric kernel's algo and proto are rewritten all the same). */
#include <string.h>

#include "replay/rp_internal.h"
#include "replay/rp_truth.h"

static const char *const v7_scenarios[] = {"tagged", "symmetric", "phases", NULL};

bool rp_scen_v7_known(const char *name) {
  for (int i = 0; v7_scenarios[i]; i++)
    if (!strcmp(name, v7_scenarios[i])) return true;
  return false;
}

enum { TAG_NONE = 0, TAG_FORWARD = 1, TAG_BACKWARD = 2, TAG_OPTIMIZER = 3 };

/* One collective on every local rank, each call configured (nccl*Config). */
static void coll_cfg(struct rp_node *n, int func, size_t count, uint64_t tag, const char *sym) {
  if (n->rpn > 1) rp_group_start(n);
  for (int l = 0; l < n->rpn; l++) {
    n->app.cfg_tag = tag;
    n->app.cfg_sym = sym;
    rp_coll(n, &n->comms[l], func, count, "ncclFloat32", 4, 0);
    n->app.cfg_tag = 0;
    n->app.cfg_sym = NULL;
  }
  if (n->rpn > 1) rp_group_end(n);
}

/* Ring exchange with a tag on every Send and Recv. */
static void sendrecv_cfg(struct rp_node *n, size_t count, uint64_t tag) {
  rp_group_start(n);
  for (int l = 0; l < n->rpn; l++) {
    struct rp_comm *c = &n->comms[l];
    n->app.cfg_tag = tag;
    rp_p2p(n, c, RP_SEND, count, "ncclInt8", 1, (c->rank + 1) % c->nranks);
    n->app.cfg_tag = tag;
    rp_p2p(n, c, RP_RECV, count, "ncclInt8", 1, (c->rank + c->nranks - 1) % c->nranks);
    n->app.cfg_tag = 0;
  }
  rp_group_end(n);
}

static void sc_tagged(struct rp_node *n, int iters) {
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    coll_cfg(n, RP_ALLGATHER, 1 << 14, TAG_FORWARD, NULL);
    coll_cfg(n, RP_ALLREDUCE, 1 << 18, TAG_BACKWARD, NULL);
    sendrecv_cfg(n, 1 << 12, TAG_BACKWARD);
    coll_cfg(n, RP_ALLREDUCE, 1 << 16, TAG_OPTIMIZER, NULL);
    coll_cfg(n, RP_ALLREDUCE, 1 << 10, TAG_NONE, NULL); /* a plain ncclAllReduce() */
    rp_sync(n);
  }
}

static void sc_symmetric(struct rp_node *n, int iters) {
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    coll_cfg(n, RP_ALLREDUCE, 1 << 10, TAG_NONE, "AllReduce_AGxLL_R");
    coll_cfg(n, RP_ALLREDUCE, 1 << 20, TAG_BACKWARD, "AllReduce_RSxLD_AGxST");
    coll_cfg(n, RP_ALLGATHER, 1 << 16, TAG_FORWARD, "AllGather_ST");
    coll_cfg(n, RP_ALLREDUCE, 1 << 18, TAG_NONE, NULL); /* a regular kernel beside them */
    rp_sync(n);
  }
}

static void sc_phases(struct rp_node *n, int iters) {
  int before = rp_mask_load();
  coll_cfg(n, RP_ALLREDUCE, 1 << 16, TAG_NONE, NULL); /* no phases yet */
  rp_sync(n);
  rp_ras_override(n, before | LENS_EV_KERNEL_PHASE); /* the RAS client, job-wide, after init */
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    coll_cfg(n, RP_ALLREDUCE, 1 << 18, TAG_BACKWARD, NULL);
    coll_cfg(n, RP_ALLREDUCE, 1 << 12, TAG_NONE, "AllReduce_AGxLL_R");
    rp_sync(n);
  }
  rp_ras_override(n, before & ~LENS_EV_KERNEL_PHASE);
  coll_cfg(n, RP_ALLREDUCE, 1 << 16, TAG_NONE, NULL); /* none again */
  rp_sync(n);
}

bool rp_scen_v7_run(struct rp_node *n, const char *name, int iters) {
  if (!strcmp(name, "tagged")) sc_tagged(n, iters);
  else if (!strcmp(name, "symmetric")) sc_symmetric(n, iters);
  else if (!strcmp(name, "phases")) sc_phases(n, iters);
  else return false;
  return true;
}

void rp_scen_v7_in_all(struct rp_node *n) {
  if (n->plugin.api != 7) return;
  sc_tagged(n, 1);
  sc_symmetric(n, 1);
  sc_phases(n, 1);
}
