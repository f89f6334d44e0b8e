/* Shared by the version adapters (adapter_v4.c, adapter_v5.c, adapter_v6.c):
 * each translates its descriptor into the one event model (trace_format.h
 * records) and nothing else. */
#ifndef NCCL_LENS_PLUGIN_ADAPTER_H
#define NCCL_LENS_PLUGIN_ADAPTER_H

#include <stdint.h>

#include "nccl-lens/nccl_profiler_abi.h"

/* Descriptor type (a mask bit) -> enum lens_type, or -1 when it is not one
 * bit below limit_bits. */
static inline int lens_type_index(uint64_t type_bit, int limit_bits) {
  if (type_bit == 0 || (type_bit & (type_bit - 1)) != 0) return -1;
  int i = __builtin_ctzll(type_bit);
  return i < limit_bits ? i : -1;
}

/* v5 and v6 share the members of the v5 union; u points at the union
 * (descriptor offset 24). Returns 0 if tindex was handled, -1 if not. */
int lens_start_v5_member(void *ctx, void **eHandle, int tindex, uint64_t parent, int rank, const void *u);

/* An unknown descriptor type: counted, logged once, no handle. */
void lens_start_unknown(void **eHandle, uint64_t type);

/* Lifecycle entry points (session.c) used by the tables. */
lens_nccl_result_t lens_session_init(int api_version, void **context, uint64_t comm_id, int *mask,
                                     const char *name, int nnodes, int nranks, int rank, lens_nccl_logger_t logfn);
lens_nccl_result_t lens_session_finalize(void *context);

#endif
