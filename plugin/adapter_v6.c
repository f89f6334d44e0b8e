/* ncclProfiler_v6 (NCCL 2.29, 2.30): the v5 members plus the copy-engine
 * events (CeColl, CeSync, CeBatch). Same function signatures as v5; the
 * members are built by adapter_members.c. */
#include "adapter.h"
#include "record.h"

static lens_nccl_result_t v6_init(void **context, uint64_t commId, int *mask, const char *commName, int nNodes,
                                  int nranks, int rank, lens_nccl_logger_t logfn) {
  return lens_session_init(6, context, commId, mask, commName, nNodes, nranks, rank, logfn);
}

static lens_nccl_result_t v6_start(void *context, void **eHandle, lens_nccl_descr_v6_t *d) {
  int t = lens_type_index(d->type, LENS_T_CE_BATCH + 1);
  if (t < 0 || lens_start_member(context, eHandle, t, (uint64_t)(uintptr_t)d->parentObj, d->rank, &d->groupApi,
                                 NULL) != 0)
    lens_start_unknown(eHandle, d->type);
  return LENS_NCCL_SUCCESS;
}

static lens_nccl_result_t v6_record(void *h, lens_nccl_state_t s, lens_nccl_state_args_v6_t *a) {
  return lens_record_state(h, s, a);
}

__attribute__((visibility("default"))) lens_nccl_profiler_v6_t ncclProfiler_v6 = {
    .name = "lens",
    .init = v6_init,
    .startEvent = v6_start,
    .stopEvent = lens_stop_event,
    .recordEventState = v6_record,
    .finalize = lens_session_finalize,
};
