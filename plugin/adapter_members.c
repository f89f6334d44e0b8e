/* The START builders of the union members that v5, v6 and v7 share, and
 * their one dispatcher. Each builder reads the v5/v6 layout of its member
 * (which a v7 member begins with) plus the v7-only fields handed in x. */
#include <string.h>

#include "adapter.h"
#include "log.h"
#include "record.h"

static const struct lens_v7_fields k_no_v7;

/* The leading fields CollApi and P2pApi share. */
#define COPY_API_HEAD(p, d)                               \
  do {                                                    \
    (p)->func = (lens_str_t)(uintptr_t)(d)->func;         \
    (p)->count = (d)->count;                              \
    (p)->datatype = (lens_str_t)(uintptr_t)(d)->datatype; \
    (p)->stream = (uint64_t)(uintptr_t)(d)->stream;       \
  } while (0)

static void start_group_api(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_group_api *d) {
  LENS_MEMBER_BEGIN(LENS_T_GROUP_API, lens_p_group_api, LENS_ROLE_APP);
  p->graph_captured = d->graphCaptured;
  p->group_depth = d->groupDepth;
  lens_start_end(&w, h);
}

static void start_coll_api(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_coll_api *d,
                           const struct lens_v7_fields *x) {
  LENS_MEMBER_BEGIN(LENS_T_COLL_API, lens_p_coll_api, LENS_ROLE_APP);
  COPY_API_HEAD(p, d);
  p->root = d->root;
  p->graph_captured = d->graphCaptured;
  p->user_tag = x->user_tag;
  lens_start_end(&w, h);
}

static void start_p2p_api(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_p2p_api *d,
                          const struct lens_v7_fields *x) {
  LENS_MEMBER_BEGIN(LENS_T_P2P_API, lens_p_p2p_api, LENS_ROLE_APP);
  COPY_API_HEAD(p, d);
  p->graph_captured = d->graphCaptured;
  p->reserved = 0;
  p->user_tag = x->user_tag;
  lens_start_end(&w, h);
}

static void start_kernel_launch(void *ctx, void **h, uint64_t parent, int rank,
                                const struct lens_nccl_kernel_launch *d) {
  LENS_MEMBER_BEGIN(LENS_T_KERNEL_LAUNCH, lens_p_kernel_launch, LENS_ROLE_APP);
  p->stream = (uint64_t)(uintptr_t)d->stream;
  /* CUPTI first: the external id must be on the stack before NCCL launches. */
  uint64_t ext = 0;
  if (lens_hook_cupti() && lens_cupti_launch_begin) ext = lens_cupti_launch_begin(r->id);
  p->ext_corr_id = ext;
  w.s->ext_id = ext;
  w.s->last_launch_id = r->id;
  lens_start_end(&w, h);
}

static void start_coll(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_coll_v5 *d,
                       const struct lens_v7_fields *x) {
  LENS_MEMBER_BEGIN(LENS_T_COLL, lens_p_coll, lens_task_role());
  LENS_COPY_COLL_HEAD(p, d);
  p->algo = (lens_str_t)(uintptr_t)d->algo;
  p->proto = (lens_str_t)(uintptr_t)d->proto;
  p->parent_group = (uint64_t)(uintptr_t)d->parentGroup;
  p->launch_id = lens_current_launch(&w);
  p->root = d->root;
  p->n_channels = d->nChannels;
  p->n_warps = d->nWarps;
  p->is_sym_coll = x->is_sym_coll != 0;
  p->reserved = 0;
  p->user_tag = x->user_tag;
  p->kernel_variant = (lens_str_t)(uintptr_t)x->kernel_variant;
  lens_start_end(&w, h);
}

static void start_p2p(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_p2p_v5 *d,
                      const struct lens_v7_fields *x) {
  LENS_MEMBER_BEGIN(LENS_T_P2P, lens_p_p2p, lens_task_role());
  p->func = (lens_str_t)(uintptr_t)d->func;
  p->buff = (uint64_t)(uintptr_t)d->buff;
  p->datatype = (lens_str_t)(uintptr_t)d->datatype;
  p->count = d->count;
  p->parent_group = (uint64_t)(uintptr_t)d->parentGroup;
  p->launch_id = lens_current_launch(&w);
  p->peer = d->peer;
  p->n_channels = d->nChannels;
  memset(p->reserved, 0, sizeof p->reserved);
  p->user_tag = x->user_tag;
  lens_start_end(&w, h);
}

static void start_ce_coll(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_ce_coll *d,
                          const struct lens_v7_fields *x) {
  LENS_MEMBER_BEGIN(LENS_T_CE_COLL, lens_p_ce_coll, lens_task_role());
  LENS_COPY_COLL_HEAD(p, d);
  p->sync_strategy = (lens_str_t)(uintptr_t)d->syncStrategy;
  p->stream = (uint64_t)(uintptr_t)d->stream;
  p->root = d->root;
  p->intra_batch_sync = d->intraBatchSync;
  p->batch_size = d->batchSize;
  p->num_batches = d->numBatches;
  p->ce_seq_num = d->ceSeqNum;
  p->reserved = 0;
  p->user_tag = x->user_tag;
  lens_start_end(&w, h);
}

static void start_ce_sync(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_ce_sync *d) {
  LENS_MEMBER_BEGIN(LENS_T_CE_SYNC, lens_p_ce_sync, lens_task_role());
  p->is_complete = d->isComplete;
  p->n_ranks = d->nRanks;
  lens_start_end(&w, h);
}

static void start_ce_batch(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_ce_batch *d) {
  LENS_MEMBER_BEGIN(LENS_T_CE_BATCH, lens_p_ce_batch, lens_task_role());
  p->total_bytes = d->totalBytes;
  p->num_ops = d->numOps;
  p->use_intra_sync = d->useIntraSync;
  lens_start_end(&w, h);
}

int lens_start_member(void *ctx, void **h, int tindex, uint64_t parent, int rank, const void *u,
                      const struct lens_v7_fields *x) {
  if (!x) x = &k_no_v7;
  switch (tindex) {
  case LENS_T_GROUP: lens_start_group(ctx, h, parent, rank); return 0; /* legacy plan event, no payload */
  case LENS_T_COLL: start_coll(ctx, h, parent, rank, u, x); return 0;
  case LENS_T_P2P: start_p2p(ctx, h, parent, rank, u, x); return 0;
  case LENS_T_PROXY_OP: lens_start_proxy_op(ctx, h, parent, rank, u); return 0;
  case LENS_T_PROXY_STEP: lens_start_proxy_step(ctx, h, parent, rank, u); return 0;
  case LENS_T_PROXY_CTRL: lens_start_proxy_ctrl(ctx, h, parent, rank); return 0;
  case LENS_T_KERNEL_CH: lens_start_kernel_ch(ctx, h, parent, rank, u); return 0;
  case LENS_T_NET_PLUGIN: lens_start_net_plugin(ctx, h, parent, rank, u); return 0;
  case LENS_T_GROUP_API: start_group_api(ctx, h, parent, rank, u); return 0;
  case LENS_T_COLL_API: start_coll_api(ctx, h, parent, rank, u, x); return 0;
  case LENS_T_P2P_API: start_p2p_api(ctx, h, parent, rank, u, x); return 0;
  case LENS_T_KERNEL_LAUNCH: start_kernel_launch(ctx, h, parent, rank, u); return 0;
  case LENS_T_CE_COLL: start_ce_coll(ctx, h, parent, rank, u, x); return 0;
  case LENS_T_CE_SYNC: start_ce_sync(ctx, h, parent, rank, u); return 0;
  case LENS_T_CE_BATCH: start_ce_batch(ctx, h, parent, rank, u); return 0;
  case LENS_T_KERNEL_PHASE: lens_start_kernel_phase(ctx, h, parent, rank, u); return 0;
  default: return -1;
  }
}

static int g_unknown_once;
void lens_start_unknown(void **eHandle, uint64_t type) {
  *eHandle = NULL;
  lens_count(&lens_cnt.bad_type);
  lens_log_once(&g_unknown_once, LENS_LOG_WARN, "nccl-lens: ignoring events of unknown type 0x%llx",
                (unsigned long long)type);
}
