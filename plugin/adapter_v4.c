/* ncclProfiler_v4 (NCCL 2.27): uint8_t type (bits 0..7 only), Coll/P2p
 * without parentGroup (their parentObj is the Group), the old init order
 * (mask second, commHash fourth). */
#include <string.h>

#include "adapter.h"
#include "record.h"

static void start_coll_v4(void *ctx, void **h, uint64_t parent, int rank, const lens_nccl_descr_v4_t *d) {
  LENS_MEMBER_BEGIN(LENS_T_COLL, lens_p_coll, lens_task_role());
  LENS_COPY_COLL_HEAD(p, &d->coll);
  p->algo = (lens_str_t)(uintptr_t)d->coll.algo;
  p->proto = (lens_str_t)(uintptr_t)d->coll.proto;
  p->parent_group = 0;
  p->launch_id = lens_current_launch(&w);
  p->root = d->coll.root;
  p->n_channels = d->coll.nChannels;
  p->n_warps = d->coll.nWarps;
  p->reserved = 0;
  lens_start_end(&w, h);
}

static void start_p2p_v4(void *ctx, void **h, uint64_t parent, int rank, const lens_nccl_descr_v4_t *d) {
  LENS_MEMBER_BEGIN(LENS_T_P2P, lens_p_p2p, lens_task_role());
  p->func = (lens_str_t)(uintptr_t)d->p2p.func;
  p->buff = (uint64_t)(uintptr_t)d->p2p.buff;
  p->datatype = (lens_str_t)(uintptr_t)d->p2p.datatype;
  p->count = d->p2p.count;
  p->parent_group = 0;
  p->launch_id = lens_current_launch(&w);
  p->peer = d->p2p.peer;
  p->n_channels = d->p2p.nChannels;
  memset(p->reserved, 0, sizeof p->reserved);
  lens_start_end(&w, h);
}

static lens_nccl_result_t v4_init(void **context, int *mask, const char *commName, uint64_t commHash, int nNodes,
                                  int nranks, int rank, lens_nccl_logger_t logfn) {
  return lens_session_init(4, context, commHash, mask, commName, nNodes, nranks, rank, logfn);
}

static lens_nccl_result_t v4_start(void *ctx, void **h, lens_nccl_descr_v4_t *d) {
  uint64_t parent = (uint64_t)(uintptr_t)d->parentObj;
  int rank = d->rank;
  switch (lens_type_index(d->type, LENS_T_NET_PLUGIN + 1)) {
  case LENS_T_GROUP: lens_start_group(ctx, h, parent, rank); break;
  case LENS_T_COLL: start_coll_v4(ctx, h, parent, rank, d); break;
  case LENS_T_P2P: start_p2p_v4(ctx, h, parent, rank, d); break;
  case LENS_T_PROXY_OP: lens_start_proxy_op(ctx, h, parent, rank, &d->proxyOp); break;
  case LENS_T_PROXY_STEP: lens_start_proxy_step(ctx, h, parent, rank, &d->proxyStep); break;
  case LENS_T_PROXY_CTRL: lens_start_proxy_ctrl(ctx, h, parent, rank); break;
  case LENS_T_KERNEL_CH: lens_start_kernel_ch(ctx, h, parent, rank, &d->kernelCh); break;
  case LENS_T_NET_PLUGIN: lens_start_net_plugin(ctx, h, parent, rank, &d->netPlugin); break;
  default: lens_start_unknown(h, d->type);
  }
  return LENS_NCCL_SUCCESS;
}

__attribute__((visibility("default"))) lens_nccl_profiler_v4_t ncclProfiler_v4 = {
    .name = "lens",
    .init = v4_init,
    .startEvent = v4_start,
    .stopEvent = lens_stop_event,
    .recordEventState = lens_record_state,
    .finalize = lens_session_finalize,
};
