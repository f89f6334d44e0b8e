/* Mask gating exactly as NCCL 2.28.9 (spec §1.3): a task-level event is
 * emitted when its own bit or any descendant's bit is in the mask. */
#include "replay/rp_internal.h"

#define DESC_PROXY_STEP (LENS_EV_PROXY_STEP | LENS_EV_NET_PLUGIN)
#define DESC_PROXY_OP (LENS_EV_PROXY_OP | DESC_PROXY_STEP)
#define DESC_TASK (DESC_PROXY_OP | LENS_EV_KERNEL_CH)
#define CE_BITS (LENS_EV_CE_COLL | LENS_EV_CE_SYNC | LENS_EV_CE_BATCH)

bool rp_gate(uint64_t type, int mask) {
  int want;
  switch (type) {
  case LENS_EV_GROUP_API:
    want = LENS_EV_GROUP_API | LENS_EV_COLL_API | LENS_EV_P2P_API | LENS_EV_KERNEL_LAUNCH | LENS_EV_GROUP |
           LENS_EV_COLL | LENS_EV_P2P | DESC_TASK;
    break;
  case LENS_EV_COLL_API: want = LENS_EV_COLL_API | LENS_EV_COLL | DESC_TASK; break;
  case LENS_EV_P2P_API: want = LENS_EV_P2P_API | LENS_EV_P2P | DESC_TASK; break;
  case LENS_EV_KERNEL_LAUNCH: want = LENS_EV_KERNEL_LAUNCH; break;
  case LENS_EV_GROUP: want = LENS_EV_GROUP | LENS_EV_COLL | LENS_EV_P2P | DESC_TASK; break;
  case LENS_EV_COLL: want = LENS_EV_COLL | DESC_TASK; break;
  case LENS_EV_P2P: want = LENS_EV_P2P | DESC_TASK; break;
  case LENS_EV_PROXY_OP: want = DESC_PROXY_OP; break;
  case LENS_EV_PROXY_STEP: want = DESC_PROXY_STEP; break;
  case LENS_EV_NET_PLUGIN: want = LENS_EV_NET_PLUGIN; break;
  case LENS_EV_KERNEL_CH: want = LENS_EV_KERNEL_CH; break;
  case LENS_EV_PROXY_CTRL: want = LENS_EV_PROXY_CTRL; break;
  case LENS_EV_CE_COLL: want = CE_BITS; break;
  default: want = (int)type; break;
  }
  return (mask & want) != 0;
}
