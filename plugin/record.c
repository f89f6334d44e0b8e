/* Hot-path pieces common to every ABI version: stop, state, and the START
 * builders for members whose layout never changed (proxy, kernel channel,
 * net plugin, legacy group). */
#include "record.h"

#include <string.h>

#include "nccl_lib.h"

int lens_self_pid;

static inline void count_ring_full(struct lens_tslot *s) {
  atomic_store_explicit(&s->ring_full, atomic_load_explicit(&s->ring_full, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  s->dropped_pending = 1;
}

/* Foreign or NULL handles never reach the ring: they are counted. */
static inline struct lens_tslot *slot_for_handle(uint64_t id) {
  if (__builtin_expect(!id, 0)) {
    lens_count(&lens_cnt.null_handle);
    return NULL;
  }
  if (__builtin_expect(!(id & LENS_ID_TAG), 0)) {
    lens_count(&lens_cnt.bad_handle);
    return NULL;
  }
  struct lens_tslot *s = lens_tslot_get();
  if (__builtin_expect(!s, 0)) lens_count(&lens_cnt.no_thread_slot);
  return s;
}

lens_nccl_result_t lens_stop_event(void *eHandle) {
  uint64_t id = (uint64_t)(uintptr_t)eHandle;
  struct lens_tslot *s = slot_for_handle(id);
  if (!s) return LENS_NCCL_SUCCESS;
  uint64_t nh;
  struct lens_rec_stop *r = lens_ring_reserve(&s->ring, &s->prod, &s->tail, sizeof *r, &nh);
  if (__builtin_expect(r != NULL, 1)) {
    r->h.size = sizeof *r;
    r->h.kind = LENS_REC_STOP;
    r->h.type = (uint8_t)LENS_ID_TYPE(id);
    r->h.aux = 0;
    r->id = id;
    r->ts = lens_hot_now();
    lens_ring_publish(&s->prod, nh);
  } else {
    count_ring_full(s);
  }
  unsigned type = LENS_ID_TYPE(id);
  if (type == LENS_T_GROUP) s->last_launch_id = 0; /* the plan is over */
  if (lens_hook_nvtx() && lens_nvtx_on_stop) lens_nvtx_on_stop(id);
  if (type == LENS_T_KERNEL_LAUNCH && s->ext_id) {
    if (lens_cupti_launch_end) lens_cupti_launch_end(s->ext_id);
    s->ext_id = 0;
  }
  return LENS_NCCL_SUCCESS;
}

/* The state-args union is 8 bytes with every member at 0; which member is
 * meaningful depends on the event type, which the id carries. */
static inline uint64_t state_arg(unsigned type, const lens_nccl_state_args_v4_t *a) {
  switch (type) {
  case LENS_T_PROXY_CTRL: return (uint64_t)(int64_t)a->proxyCtrl.appendedProxyOps;
  case LENS_T_KERNEL_CH:
  case LENS_T_KERNEL_PHASE: return a->kernelCh.pTimer; /* 22 / 31: the stop pTimer */
  case LENS_T_NET_PLUGIN: return (uint64_t)(uintptr_t)a->netPlugin.data;
  default: return (uint64_t)a->proxyStep.transSize;
  }
}

lens_nccl_result_t lens_record_state(void *eHandle, lens_nccl_state_t eState, lens_nccl_state_args_v4_t *args) {
  uint64_t id = (uint64_t)(uintptr_t)eHandle;
  struct lens_tslot *s = slot_for_handle(id);
  if (!s) return LENS_NCCL_SUCCESS;
  unsigned type = LENS_ID_TYPE(id);
  uint64_t arg = args ? state_arg(type, args) : 0;
  uint64_t nh;
  struct lens_rec_state *r = lens_ring_reserve(&s->ring, &s->prod, &s->tail, sizeof *r, &nh);
  if (__builtin_expect(r != NULL, 1)) {
    r->h.size = sizeof *r;
    r->h.kind = LENS_REC_STATE;
    r->h.type = (uint8_t)type;
    r->h.aux = (uint32_t)eState;
    r->id = id;
    r->ts = lens_hot_now();
    r->arg = arg;
    r->has_args = args != NULL;
    r->reserved = 0;
    lens_ring_publish(&s->prod, nh);
  } else {
    count_ring_full(s);
  }
  if (lens_hook_nvtx() && lens_nvtx_on_state) lens_nvtx_on_state(id, (uint32_t)eState, arg, args != NULL);
  return LENS_NCCL_SUCCESS;
}

/* PXN: a ProxyOp carries the originator's pid; children decide through the
 * parent id we issued, never through context. */
static inline uint32_t inherit_remote(uint64_t parent) {
  return (parent & (LENS_ID_TAG | LENS_ID_REMOTE)) == (LENS_ID_TAG | LENS_ID_REMOTE) ? LENS_START_F_REMOTE : 0;
}

void lens_start_proxy_op(void *ctx, void **eHandle, uint64_t parent, int rank, const struct lens_nccl_proxy_op *d) {
  uint32_t flags = d->pid != lens_self_pid ? LENS_START_F_REMOTE : 0;
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, eHandle, (uint64_t)(uintptr_t)ctx, LENS_T_PROXY_OP,
                                              sizeof(struct lens_p_proxy_op), parent, rank, flags, LENS_ROLE_PROXY);
  if (!r) return;
  struct lens_p_proxy_op *p = (void *)(r + 1);
  p->pid = d->pid;
  p->peer = d->peer;
  p->n_steps = d->nSteps;
  p->chunk_size = d->chunkSize;
  p->is_send = d->isSend;
  p->channel = d->channelId;
  memset(p->reserved, 0, sizeof p->reserved);
  lens_start_end(&w, eHandle);
}

void lens_start_proxy_step(void *ctx, void **eHandle, uint64_t parent, int rank,
                           const struct lens_nccl_proxy_step *d) {
  struct lens_wip w;
  struct lens_rec_start *r =
      lens_start_begin(&w, eHandle, (uint64_t)(uintptr_t)ctx, LENS_T_PROXY_STEP, sizeof(struct lens_p_proxy_step),
                       parent, rank, inherit_remote(parent), LENS_ROLE_PROXY);
  if (!r) return;
  struct lens_p_proxy_step *p = (void *)(r + 1);
  p->step = d->step;
  p->reserved = 0;
  lens_start_end(&w, eHandle);
}

void lens_start_proxy_ctrl(void *ctx, void **eHandle, uint64_t parent, int rank) {
  struct lens_wip w;
  struct lens_rec_start *r =
      lens_start_begin(&w, eHandle, (uint64_t)(uintptr_t)ctx, LENS_T_PROXY_CTRL, 0, parent, rank, 0, LENS_ROLE_PROXY);
  if (!r) return;
  /* ProxyCtrl always runs on the local proxy with its own context: it names
   * the communicator this progress thread serves. */
  const struct lens_comm_info *c = lens_comm_lookup_inline((uint64_t)(uintptr_t)ctx);
  if (c && atomic_load_explicit(&w.s->proxy_comm_index, memory_order_relaxed) != c->comm_index) {
    atomic_store_explicit(&w.s->proxy_rank, c->rank, memory_order_relaxed);
    atomic_store_explicit(&w.s->proxy_comm_index, c->comm_index, memory_order_relaxed);
  }
  lens_start_end(&w, eHandle);
}

void lens_start_kernel_ch(void *ctx, void **eHandle, uint64_t parent, int rank, const struct lens_nccl_kernel_ch *d) {
  struct lens_wip w;
  struct lens_rec_start *r =
      lens_start_begin(&w, eHandle, (uint64_t)(uintptr_t)ctx, LENS_T_KERNEL_CH, sizeof(struct lens_p_kernel_ch),
                       parent, rank, inherit_remote(parent), lens_kernel_ch_role);
  if (!r) return;
  struct lens_p_kernel_ch *p = (void *)(r + 1);
  p->start_gpu_ns = d->pTimer;
  p->channel = d->channelId;
  memset(p->reserved, 0, sizeof p->reserved);
  lens_start_end(&w, eHandle);
}

void lens_start_kernel_phase(void *ctx, void **eHandle, uint64_t parent, int rank,
                             const struct lens_nccl_kernel_phase *d) {
  struct lens_wip w;
  struct lens_rec_start *r =
      lens_start_begin(&w, eHandle, (uint64_t)(uintptr_t)ctx, LENS_T_KERNEL_PHASE, sizeof(struct lens_p_kernel_phase),
                       parent, rank, inherit_remote(parent), lens_kernel_ch_role);
  if (!r) return;
  struct lens_p_kernel_phase *p = (void *)(r + 1);
  p->start_gpu_ns = d->pTimer;
  p->name = (lens_str_t)(uintptr_t)d->phaseName;
  p->channel = d->channelId;
  p->phase_id = d->phaseId;
  memset(p->reserved, 0, sizeof p->reserved);
  lens_start_end(&w, eHandle);
}

void lens_start_net_plugin(void *ctx, void **eHandle, uint64_t parent, int rank,
                           const struct lens_nccl_net_plugin *d) {
  struct lens_wip w;
  struct lens_rec_start *r =
      lens_start_begin(&w, eHandle, (uint64_t)(uintptr_t)ctx, LENS_T_NET_PLUGIN, sizeof(struct lens_p_net_plugin),
                       parent, rank, inherit_remote(parent), LENS_ROLE_NET);
  if (!r) return;
  struct lens_p_net_plugin *p = (void *)(r + 1);
  p->plugin_id = d->id;
  p->data = (uint64_t)(uintptr_t)d->data;
  p->reserved = 0;
  uint32_t len = 0;
  /* The object behind data lives on NCCL's stack: copy it now or never. */
  if (d->data && (d->id & LENS_NET_VER_MASK) == 1) {
    if ((d->id & LENS_NET_TYPE_MASK) == LENS_NET_TYPE_IB)
      len = sizeof(lens_nccl_net_ib_v1_t);
    else if ((d->id & LENS_NET_TYPE_MASK) == LENS_NET_TYPE_SOCK)
      len = sizeof(lens_nccl_net_sock_v1_t);
  }
  if (len) memcpy(p->payload, d->data, len);
  if (len < sizeof p->payload) memset(p->payload + len, 0, sizeof p->payload - len);
  p->payload_len = len;
  lens_start_end(&w, eHandle);
}

void lens_start_group(void *ctx, void **eHandle, uint64_t parent, int rank) {
  struct lens_wip w;
  struct lens_rec_start *r = lens_start_begin(&w, eHandle, (uint64_t)(uintptr_t)ctx, LENS_T_GROUP,
                                              sizeof(struct lens_p_group), parent, rank, 0, lens_task_role());
  if (!r) return;
  struct lens_p_group *p = (void *)(r + 1);
  p->launch_id = lens_current_launch(&w);
  lens_start_end(&w, eHandle);
}
