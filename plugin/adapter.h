/* Shared by the version adapters (adapter_v4.c ... adapter_v7.c): each
 * translates its descriptor into the one event model (trace_format.h
 * records) and nothing else. v5, v6 and v7 share one body,
 * lens_start_member(): a v7 member is its v5/v6 member with fields appended
 * (nccl_profiler_abi.h), so the same builder reads all three, and the fields
 * only v7 has arrive in struct lens_v7_fields (zero for v5/v6). */
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

/* What v7 adds to a member, already read (and gated) by the v7 adapter. */
struct lens_v7_fields {
  uint64_t user_tag;          /* CollApi, P2pApi, Coll, P2p, CeColl; 0 when not read */
  const char *kernel_variant; /* Coll */
  int is_sym_coll;            /* Coll */
};

/* Starts the event of union member u (descriptor offset 24) of type tindex,
 * for any of v5, v6 and v7 (the caller limits tindex to its version's types;
 * KernelPhase is v7 only). x is NULL for v5/v6. Returns 0 if tindex was
 * handled, -1 if not. */
int lens_start_member(void *ctx, void **eHandle, int tindex, uint64_t parent, int rank, const void *u,
                      const struct lens_v7_fields *x);

/* How every START builder of adapter_v4.c and adapter_members.c opens, in a
 * function with parameters ctx, h, parent and rank (record.h): claim the
 * START record of type T with a payload of struct P, p pointing at it, or
 * return when the ring refused it. Expands in place: the same code as
 * writing it out, no call and no indirection added to the hot path. */
#define LENS_MEMBER_BEGIN(T, P, role)                                                                \
  struct lens_wip w;                                                                                 \
  struct lens_rec_start *r =                                                                         \
      lens_start_begin(&w, h, (uint64_t)(uintptr_t)ctx, T, sizeof(struct P), parent, rank, 0, role); \
  if (!r) return;                                                                                    \
  struct P *p = (void *)(r + 1)

/* The leading fields every Coll (v4, v5 and later) and CeColl share: the same
 * names in their descriptors and in their payloads. */
#define LENS_COPY_COLL_HEAD(p, d)                         \
  do {                                                    \
    (p)->seq = (d)->seqNumber;                            \
    (p)->func = (lens_str_t)(uintptr_t)(d)->func;         \
    (p)->send_buff = (uint64_t)(uintptr_t)(d)->sendBuff;  \
    (p)->recv_buff = (uint64_t)(uintptr_t)(d)->recvBuff;  \
    (p)->count = (d)->count;                              \
    (p)->datatype = (lens_str_t)(uintptr_t)(d)->datatype; \
  } while (0)

/* An unknown descriptor type: counted, logged once, no handle. */
void lens_start_unknown(void **eHandle, uint64_t type);

/* Lifecycle entry points (session.c) used by the tables. */
lens_nccl_result_t lens_session_init(int api_version, void **context, uint64_t comm_id, int *mask,
                                     const char *name, int nnodes, int nranks, int rank, lens_nccl_logger_t logfn);
lens_nccl_result_t lens_session_finalize(void *context);

#endif
