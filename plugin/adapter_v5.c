/* ncclProfiler_v5 (NCCL 2.28): API-level events, parentGroup on Coll/P2p,
 * and the commId-second init order. Its members are built by
 * adapter_members.c, which v6 and v7 share. */
#include "adapter.h"
#include "record.h"

static lens_nccl_result_t v5_init(void **context, uint64_t commId, int *mask, const char *commName, int nNodes,
                                  int nranks, int rank, lens_nccl_logger_t logfn) {
  return lens_session_init(5, context, commId, mask, commName, nNodes, nranks, rank, logfn);
}

static lens_nccl_result_t v5_start(void *context, void **eHandle, lens_nccl_descr_v5_t *d) {
  int t = lens_type_index(d->type, LENS_T_KERNEL_LAUNCH + 1);
  if (t < 0 || lens_start_member(context, eHandle, t, (uint64_t)(uintptr_t)d->parentObj, d->rank, &d->groupApi,
                                 NULL) != 0)
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
