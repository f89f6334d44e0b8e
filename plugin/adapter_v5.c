/* ncclProfiler_v5 (NCCL 2.28): API-level events, parentGroup on Coll/P2p,
 * and the commId-second init order. The v5 members are shared with v6. */
#include <string.h>

#include "adapter.h"
#include "log.h"
#include "record.h"

static void start_group_api(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_group_api *d) {
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, h, (uint64_t)(uintptr_t)ctx, LENS_T_GROUP_API,
                                              sizeof(struct lens_p_group_api), parent, rank, 0, LENS_ROLE_APP);
  if (!r) return;
  struct lens_p_group_api *p = (void *)(r + 1);
  p->graph_captured = d->graphCaptured;
  p->group_depth = d->groupDepth;
  lens_start_end(&w, h);
}

static void start_coll_api(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_coll_api *d) {
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, h, (uint64_t)(uintptr_t)ctx, LENS_T_COLL_API,
                                              sizeof(struct lens_p_coll_api), parent, rank, 0, LENS_ROLE_APP);
  if (!r) return;
  struct lens_p_coll_api *p = (void *)(r + 1);
  p->func = (lens_str_t)(uintptr_t)d->func;
  p->count = d->count;
  p->datatype = (lens_str_t)(uintptr_t)d->datatype;
  p->stream = (uint64_t)(uintptr_t)d->stream;
  p->root = d->root;
  p->graph_captured = d->graphCaptured;
  lens_start_end(&w, h);
}

static void start_p2p_api(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_p2p_api *d) {
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, h, (uint64_t)(uintptr_t)ctx, LENS_T_P2P_API,
                                              sizeof(struct lens_p_p2p_api), parent, rank, 0, LENS_ROLE_APP);
  if (!r) return;
  struct lens_p_p2p_api *p = (void *)(r + 1);
  p->func = (lens_str_t)(uintptr_t)d->func;
  p->count = d->count;
  p->datatype = (lens_str_t)(uintptr_t)d->datatype;
  p->stream = (uint64_t)(uintptr_t)d->stream;
  p->graph_captured = d->graphCaptured;
  p->reserved = 0;
  lens_start_end(&w, h);
}

static void start_kernel_launch(void *ctx, void **h, uint64_t parent, int rank,
                                const struct lens_nccl_kernel_launch *d) {
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, h, (uint64_t)(uintptr_t)ctx, LENS_T_KERNEL_LAUNCH,
                                              sizeof(struct lens_p_kernel_launch), parent, rank, 0, LENS_ROLE_APP);
  if (!r) return;
  struct lens_p_kernel_launch *p = (void *)(r + 1);
  p->stream = (uint64_t)(uintptr_t)d->stream;
  /* CUPTI first: the external id must be on the stack before NCCL launches. */
  uint64_t ext = 0;
  if (lens_hook_cupti() && lens_cupti_launch_begin) ext = lens_cupti_launch_begin(r->id);
  p->ext_corr_id = ext;
  w.s->ext_id = ext;
  w.s->last_launch_id = r->id;
  lens_start_end(&w, h);
}

static void start_coll(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_coll_v5 *d) {
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, h, (uint64_t)(uintptr_t)ctx, LENS_T_COLL,
                                              sizeof(struct lens_p_coll), parent, rank, 0, lens_task_role());
  if (!r) return;
  struct lens_p_coll *p = (void *)(r + 1);
  p->seq = d->seqNumber;
  p->func = (lens_str_t)(uintptr_t)d->func;
  p->send_buff = (uint64_t)(uintptr_t)d->sendBuff;
  p->recv_buff = (uint64_t)(uintptr_t)d->recvBuff;
  p->count = d->count;
  p->datatype = (lens_str_t)(uintptr_t)d->datatype;
  p->algo = (lens_str_t)(uintptr_t)d->algo;
  p->proto = (lens_str_t)(uintptr_t)d->proto;
  p->parent_group = (uint64_t)(uintptr_t)d->parentGroup;
  p->launch_id = lens_current_launch(&w);
  p->root = d->root;
  p->n_channels = d->nChannels;
  p->n_warps = d->nWarps;
  p->reserved = 0;
  lens_start_end(&w, h);
}

static void start_p2p(void *ctx, void **h, uint64_t parent, int rank, const struct lens_nccl_p2p_v5 *d) {
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, h, (uint64_t)(uintptr_t)ctx, LENS_T_P2P,
                                              sizeof(struct lens_p_p2p), parent, rank, 0, lens_task_role());
  if (!r) return;
  struct lens_p_p2p *p = (void *)(r + 1);
  p->func = (lens_str_t)(uintptr_t)d->func;
  p->buff = (uint64_t)(uintptr_t)d->buff;
  p->datatype = (lens_str_t)(uintptr_t)d->datatype;
  p->count = d->count;
  p->parent_group = (uint64_t)(uintptr_t)d->parentGroup;
  p->launch_id = lens_current_launch(&w);
  p->peer = d->peer;
  p->n_channels = d->nChannels;
  memset(p->reserved, 0, sizeof p->reserved);
  lens_start_end(&w, h);
}

int lens_start_v5_member(void *ctx, void **h, int tindex, uint64_t parent, int rank, const void *u) {
  switch (tindex) {
  case LENS_T_GROUP: lens_start_group(ctx, h, parent, rank); return 0; /* legacy plan event, no payload */
  case LENS_T_COLL: start_coll(ctx, h, parent, rank, u); return 0;
  case LENS_T_P2P: start_p2p(ctx, h, parent, rank, u); return 0;
  case LENS_T_PROXY_OP: lens_start_proxy_op(ctx, h, parent, rank, u); return 0;
  case LENS_T_PROXY_STEP: lens_start_proxy_step(ctx, h, parent, rank, u); return 0;
  case LENS_T_PROXY_CTRL: lens_start_proxy_ctrl(ctx, h, parent, rank); return 0;
  case LENS_T_KERNEL_CH: lens_start_kernel_ch(ctx, h, parent, rank, u); return 0;
  case LENS_T_NET_PLUGIN: lens_start_net_plugin(ctx, h, parent, rank, u); return 0;
  case LENS_T_GROUP_API: start_group_api(ctx, h, parent, rank, u); return 0;
  case LENS_T_COLL_API: start_coll_api(ctx, h, parent, rank, u); return 0;
  case LENS_T_P2P_API: start_p2p_api(ctx, h, parent, rank, u); return 0;
  case LENS_T_KERNEL_LAUNCH: start_kernel_launch(ctx, h, parent, rank, u); return 0;
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

static lens_nccl_result_t v5_init(void **context, uint64_t commId, int *mask, const char *commName, int nNodes,
                                  int nranks, int rank, lens_nccl_logger_t logfn) {
  return lens_session_init(5, context, commId, mask, commName, nNodes, nranks, rank, logfn);
}

static lens_nccl_result_t v5_start(void *context, void **eHandle, lens_nccl_descr_v5_t *d) {
  int t = lens_type_index(d->type, LENS_T_KERNEL_LAUNCH + 1);
  if (t < 0 || lens_start_v5_member(context, eHandle, t, (uint64_t)(uintptr_t)d->parentObj, d->rank,
                                    &d->groupApi) != 0)
    lens_start_unknown(eHandle, d->type);
  return LENS_NCCL_SUCCESS;
}

static lens_nccl_result_t v5_record(void *h, lens_nccl_state_t s, lens_nccl_state_args_v5_t *a) {
  return lens_record_state(h, s, a);
}

__attribute__((visibility("default"))) lens_nccl_profiler_v5_t ncclProfiler_v5 = {
    .name = "lens",
    .init = v5_init,
    .startEvent = v5_start,
    .stopEvent = lens_stop_event,
    .recordEventState = v5_record,
    .finalize = lens_session_finalize,
};
