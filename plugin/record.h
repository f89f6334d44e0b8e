/* The hot path shared by the version adapters: claim room in this thread's
 * ring, fill a START record in place, publish it, run the hooks, hand back
 * the id as the handle. One clock read, no locks, no allocation, no syscall
 * (except the first call of a thread, which claims its slot).
 *
 * Usage in an adapter:
 *   struct lens_wip w;
 *   struct lens_rec_start *r = lens_start_begin(&w, eHandle, ctx, T, sizeof(payload), parent, rank, flags, role);
 *   if (!r) return LENS_NCCL_SUCCESS;
 *   struct lens_p_x *p = (void *)(r + 1);  ... fill p ...
 *   lens_start_end(&w, eHandle); */
#ifndef NCCL_LENS_PLUGIN_RECORD_H
#define NCCL_LENS_PLUGIN_RECORD_H

#include <stdint.h>

#include "clock.h"
#include "comm_table.h"
#include "counters.h"
#include "hooks.h"
#include "nccl-lens/nccl_profiler_abi.h"
#include "nccl-lens/trace_format.h"
#include "tslot.h"

struct lens_wip {
  struct lens_tslot *s;
  struct lens_rec_start *rec;
  uint64_t new_head;
  int in_ring;
};

extern int lens_self_pid; /* getpid() cached at init, for the PXN test */

#define LENS_REC_START_SIZE(payload) ((uint32_t)((sizeof(struct lens_rec_start) + (payload) + 7) & ~7u))

static inline int lens_hook_nvtx(void) { return __atomic_load_n(&lens_nvtx_active, __ATOMIC_RELAXED); }
static inline int lens_hook_cupti(void) { return __atomic_load_n(&lens_cupti_active, __ATOMIC_RELAXED); }

static inline __attribute__((always_inline)) struct lens_rec_start *lens_start_begin(struct lens_wip *w, void **eHandle, uint64_t context,
                                                      unsigned type, uint32_t payload_bytes, uint64_t parent,
                                                      int rank, uint32_t flags, uint32_t role) {
  uint64_t remote = (flags & LENS_START_F_REMOTE) ? LENS_ID_REMOTE : 0;
  if (!remote) {
    if (__builtin_expect(context == LENS_CTX_NOOP, 0)) {
      *eHandle = NULL; /* disabled or failed init: nothing to stop later */
      return NULL;
    }
    if (!context)
      flags |= LENS_START_F_NULL_CONTEXT;
    else if (!lens_comm_lookup_inline(context))
      flags |= LENS_START_F_BAD_CONTEXT;
  }
  if (!parent) flags |= LENS_START_F_NULL_PARENT;
  struct lens_tslot *s = lens_tslot_get();
  if (__builtin_expect(!s, 0)) {
    lens_count(&lens_cnt.no_thread_slot);
    *eHandle = (void *)(uintptr_t)(LENS_ID_MAKE(type, LENS_SLOT_NONE, 0) | remote);
    return NULL;
  }
  lens_tslot_add_role(s, role);
  uint32_t size = LENS_REC_START_SIZE(payload_bytes);
  struct lens_rec_start *r = lens_ring_reserve(&s->ring, &s->prod, &s->tail, size, &w->new_head);
  w->in_ring = r != NULL;
  if (__builtin_expect(!r, 0)) {
    atomic_store_explicit(&s->ring_full, atomic_load_explicit(&s->ring_full, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    s->dropped_pending = 1;
    r = (struct lens_rec_start *)s->scratch; /* hooks still see the event */
  } else if (__builtin_expect(s->dropped_pending, 0)) {
    flags |= LENS_START_F_DROPPED_BEFORE;
    s->dropped_pending = 0;
  }
  w->s = s;
  w->rec = r;
  r->h.size = (uint16_t)size;
  r->h.kind = LENS_REC_START;
  r->h.type = (uint8_t)type;
  r->h.aux = flags;
  r->id = LENS_ID_MAKE(type, s->index, ++s->seq) | remote;
  r->parent = parent;
  r->context = context;
  r->ts = lens_hot_now();
  r->rank = rank;
  r->tid_slot_reserved = 0;
  return r;
}

/* The hook runs BEFORE the record is published: once published, the record
 * belongs to the writer, which converts it in place (ts to CLOCK_MONOTONIC,
 * string pointers to ids) and writes it straight from the ring. */
static inline __attribute__((always_inline)) void lens_start_end(struct lens_wip *w, void **eHandle) {
  uint64_t id = w->rec->id;
  if (lens_hook_nvtx() && lens_nvtx_on_start) lens_nvtx_on_start(w->rec);
  if (w->in_ring) lens_ring_publish(&w->s->prod, w->new_head);
  *eHandle = (void *)(uintptr_t)id;
}

/* Common to every version: stop and state records carry only the id. */
lens_nccl_result_t lens_stop_event(void *eHandle);
lens_nccl_result_t lens_record_state(void *eHandle, lens_nccl_state_t eState, lens_nccl_state_args_v4_t *args);

/* Shared START builders for the members whose layout is identical in v4..v7. */
void lens_start_proxy_op(void *ctx, void **eHandle, uint64_t parent, int rank, const struct lens_nccl_proxy_op *d);
void lens_start_proxy_step(void *ctx, void **eHandle, uint64_t parent, int rank, const struct lens_nccl_proxy_step *d);
void lens_start_proxy_ctrl(void *ctx, void **eHandle, uint64_t parent, int rank);
void lens_start_kernel_ch(void *ctx, void **eHandle, uint64_t parent, int rank, const struct lens_nccl_kernel_ch *d);
void lens_start_net_plugin(void *ctx, void **eHandle, uint64_t parent, int rank, const struct lens_nccl_net_plugin *d);
/* v7 KernelPhase: on the same thread as its KernelCh. */
void lens_start_kernel_phase(void *ctx, void **eHandle, uint64_t parent, int rank,
                             const struct lens_nccl_kernel_phase *d);
/* Group (legacy plan event); launch_id comes from this thread's state. */
void lens_start_group(void *ctx, void **eHandle, uint64_t parent, int rank);

/* Role for a Group/Coll/P2p start: APP threads keep APP, others are host callbacks. */
static inline uint32_t lens_task_role(void) {
  struct lens_tslot *s = lens_tls_cur.slot;
  return (s && (atomic_load_explicit(&s->roles, memory_order_relaxed) & LENS_ROLE_APP)) ? LENS_ROLE_APP
                                                                                      : LENS_ROLE_HOSTCB;
}
static inline uint64_t lens_current_launch(const struct lens_wip *w) { return w->s->last_launch_id; }

#endif
