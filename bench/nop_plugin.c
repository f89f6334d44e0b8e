/* A do-nothing profiler plugin: the baseline lens-bench subtracts. It
 * exports ncclProfiler_v5 and returns at once with a constant handle, so
 * what remains is the cost of the call through NCCL's function pointers. */
#include <stdint.h>

#include "nccl-lens/nccl_profiler_abi.h"

static int g_ctx;

static lens_nccl_result_t nop_init(void **context, uint64_t commId, int *mask, const char *name, int nNodes,
                                   int nranks, int rank, lens_nccl_logger_t logfn) {
  *context = &g_ctx;
  if (mask) *mask = 0xFFF;
  return LENS_NCCL_SUCCESS;
}
static lens_nccl_result_t nop_start(void *context, void **eHandle, lens_nccl_descr_v5_t *d) {
  *eHandle = (void *)(uintptr_t)0x1;
  return LENS_NCCL_SUCCESS;
}
static lens_nccl_result_t nop_stop(void *eHandle) { return LENS_NCCL_SUCCESS; }
static lens_nccl_result_t nop_record(void *eHandle, lens_nccl_state_t s, lens_nccl_state_args_v5_t *a) {
  return LENS_NCCL_SUCCESS;
}
static lens_nccl_result_t nop_finalize(void *context) { return LENS_NCCL_SUCCESS; }

__attribute__((visibility("default"))) lens_nccl_profiler_v5_t ncclProfiler_v5 = {
    "nop", nop_init, nop_start, nop_stop, nop_record, nop_finalize,
};
