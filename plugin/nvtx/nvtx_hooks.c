/* The NVTX emitter's hot-path entry points (plugin/hooks.h): route each event
 * by its type to the file that owns that kind. The core calls these only
 * while lens_nvtx_active is set, on NCCL's thread, right after storing the
 * record. The event type is in the id, so stop and state need no lookup. */
#include "nvtx_emit.h"

void lens_nvtx_on_start(const struct lens_rec_start *rec) {
  switch (rec->h.type) {
  case LENS_T_GROUP_API:
  case LENS_T_COLL_API:
  case LENS_T_P2P_API: lens_nvtx_api_start(rec); break;
  case LENS_T_KERNEL_LAUNCH: lens_nvtx_launch_start(rec); break;
  case LENS_T_COLL:
  case LENS_T_P2P: lens_nvtx_task_start(rec); break;
  case LENS_T_PROXY_OP:
  case LENS_T_PROXY_STEP:
  case LENS_T_PROXY_CTRL:
  case LENS_T_KERNEL_CH: lens_nvtx_proxy_start(rec); break;
  default: break; /* Group, NetPlugin, CE: in the trace only */
  }
}

void lens_nvtx_on_stop(uint64_t id) {
  switch (LENS_ID_TYPE(id)) {
  case LENS_T_KERNEL_LAUNCH: lens_nvtx_launch_stop(id); break;
  case LENS_T_PROXY_OP:
  case LENS_T_PROXY_STEP:
  case LENS_T_PROXY_CTRL: lens_nvtx_proxy_stop(id); break;
  default: break;
  }
}

void lens_nvtx_on_state(uint64_t id, uint32_t state, uint64_t arg, int has_args) {
  switch (LENS_ID_TYPE(id)) {
  case LENS_T_PROXY_STEP:
  case LENS_T_PROXY_CTRL:
  case LENS_T_KERNEL_CH: lens_nvtx_proxy_state(id, state, arg, has_args); break;
  default: break;
  }
}
