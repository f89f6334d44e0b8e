/* ncclProfiler_v7 (NCCL 2.31.2, 2.32): the v6 members with userTag on
 * CollApi, P2pApi, Coll, P2p and CeColl, kernelVariant and isSymColl on
 * Coll, and the KernelPhase sub-event (bit 15, state 31). The members are
 * built by adapter_members.c, as for v5 and v6; this file only reads what v7
 * appended.
 *
 * userTag is read only when the library in the process is NVIDIA NCCL
 * 2.31.2 or newer (nccl_lib.c): RCCL's own v7 descriptor has no tag at all
 * and is 128 bytes, so Coll's tag (@128) lies past its end and the others
 * lie on bytes of other fields. */
#include <stddef.h>

#include "adapter.h"
#include "nccl_lib.h"
#include "record.h"

/* Offset of the userTag of each type in the v7 descriptor, 0 = none. */
static const uint8_t k_user_tag_offset[LENS_T_COUNT] = {
    [LENS_T_COLL_API] = offsetof(lens_nccl_descr_v7_t, collApi.userTag),
    [LENS_T_P2P_API] = offsetof(lens_nccl_descr_v7_t, p2pApi.userTag),
    [LENS_T_COLL] = offsetof(lens_nccl_descr_v7_t, coll.userTag),
    [LENS_T_P2P] = offsetof(lens_nccl_descr_v7_t, p2p.userTag),
    [LENS_T_CE_COLL] = offsetof(lens_nccl_descr_v7_t, ceColl.userTag),
};

static lens_nccl_result_t v7_init(void **context, uint64_t commId, int *mask, const char *commName, int nNodes,
                                  int nranks, int rank, lens_nccl_logger_t logfn) {
  return lens_session_init(7, context, commId, mask, commName, nNodes, nranks, rank, logfn);
}

static lens_nccl_result_t v7_start(void *context, void **eHandle, lens_nccl_descr_v7_t *d) {
  int t = lens_type_index(d->type, LENS_T_KERNEL_PHASE + 1);
  struct lens_v7_fields x = {0};
  if (t >= 0) {
    unsigned off = k_user_tag_offset[t];
    if (off && lens_lib_user_tags_readable()) {
      uint64_t tag;
      __builtin_memcpy(&tag, (const char *)d + off, sizeof tag);
      x.user_tag = tag;
    }
    if (t == LENS_T_COLL) { /* both inside RCCL's 128 bytes too */
      x.kernel_variant = d->coll.kernelVariant;
      x.is_sym_coll = d->coll.isSymColl;
    }
  }
  if (t < 0 || lens_start_member(context, eHandle, t, (uint64_t)(uintptr_t)d->parentObj, d->rank, &d->groupApi,
                                 &x) != 0)
    lens_start_unknown(eHandle, d->type);
  return LENS_NCCL_SUCCESS;
}

static lens_nccl_result_t v7_record(void *h, lens_nccl_state_t s, lens_nccl_state_args_v7_t *a) {
  return lens_record_state(h, s, a);
}

__attribute__((visibility("default"))) lens_nccl_profiler_v7_t ncclProfiler_v7 = {
    .name = "lens",
    .init = v7_init,
    .startEvent = v7_start,
    .stopEvent = lens_stop_event,
    .recordEventState = v7_record,
    .finalize = lens_session_finalize,
};
