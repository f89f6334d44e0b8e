/* NCCL 2.31.2's side of profiler API v7 (spec nccl-2.31.md §2-§3): the v7
 * descriptor (each v6 member with fields appended, so a v6 descriptor's
 * members are copied as they are and v7's fields set after them), the
 * KernelPhase sub-event, the mask rules (KernelPhase turns KernelCh on; a RAS
 * mask is re-applied after every init), and ncclGetVersion, which the
 * process exports as libnccl does so a plugin can tell which NCCL it runs
 * under. */
#include <string.h>

#include "replay/rp_internal.h"
#include "replay/rp_truth.h"

int rp_nccl_version = RP_NCCL_VERSION_2289;

/* libnccl's ncclGetVersion(int *version): the executables export it
 * (-Wl,--export-dynamic-symbol). */
__attribute__((visibility("default"))) int ncclGetVersion(int *version) {
  if (!version) return LENS_NCCL_INVALID_ARGUMENT;
  *version = __atomic_load_n(&rp_nccl_version, __ATOMIC_RELAXED);
  return LENS_NCCL_SUCCESS;
}

const char *const rp_phase_names[3] = {"initial_sync", "compute", "final_sync"};

void *rp_start7(struct rp_plugin *p, void *ctx, lens_nccl_descr_v6_t *d, const struct rp_v7x *x) {
  atomic_fetch_add_explicit(&p->calls, 1, memory_order_relaxed);
  if (p->api != 7) return rp_start_v5v6(p, ctx, d); /* older tables: no tags, no variant */
  lens_nccl_descr_v7_t v;
  memset(&v, 0, sizeof v);
  v.type = d->type;
  v.parentObj = d->parentObj;
  v.rank = d->rank;
  /* Every v6 member sits at the same offset in v7, extended at its end. */
  memcpy(&v.groupApi, &d->groupApi, sizeof *d - offsetof(lens_nccl_descr_v6_t, groupApi));
  if (x) {
    switch (d->type) {
    case LENS_EV_COLL_API: v.collApi.userTag = x->user_tag; break;
    case LENS_EV_P2P_API: v.p2pApi.userTag = x->user_tag; break;
    case LENS_EV_P2P: v.p2p.userTag = x->user_tag; break;
    case LENS_EV_CE_COLL: v.ceColl.userTag = x->user_tag; break;
    case LENS_EV_COLL:
      v.coll.userTag = x->user_tag;
      v.coll.kernelVariant = x->kernel_variant;
      v.coll.isSymColl = x->is_sym;
      break;
    default: break;
    }
  }
  void *h = NULL;
  p->v7->startEvent(ctx, &h, &v);
  return h;
}

/* profilerFireKernelPhaseEvents: descriptor zeroed but for these fields
 * (no rank), parent = the KernelCh handle. */
void rp_kernel_phase(struct rp_plugin *p, void *ctx, void *kch, int channel, int phase, uint64_t start_ptimer,
                     uint64_t stop_ptimer) {
  if (p->api != 7) return;
  lens_nccl_descr_v7_t v;
  memset(&v, 0, sizeof v);
  v.type = LENS_EV_KERNEL_PHASE;
  v.parentObj = kch;
  v.kernelPhase.channelId = (uint8_t)channel;
  v.kernelPhase.phaseId = (uint8_t)phase;
  v.kernelPhase.phaseName = rp_phase_names[phase];
  v.kernelPhase.pTimer = start_ptimer;
  void *h = NULL;
  atomic_fetch_add_explicit(&p->calls, 1, memory_order_relaxed);
  p->v7->startEvent(ctx, &h, &v);
  if (!h) return;
  lens_nccl_state_args_v7_t a;
  memset(&a, 0, sizeof a);
  a.kernelCh.pTimer = stop_ptimer;
  atomic_fetch_add_explicit(&p->calls, 2, memory_order_relaxed);
  p->v7->recordEventState(h, LENS_ST_KERNEL_PHASE_STOP, &a);
  p->v7->stopEvent(h);
}

static atomic_bool g_ras_active;
static atomic_int g_ras_mask;

static int enforce_deps(int mask) {
  return (mask & LENS_EV_KERNEL_PHASE) ? mask | LENS_EV_KERNEL_CH : mask;
}

void rp_mask_after_init(void) {
  __atomic_store_n(&rp_event_mask, enforce_deps(rp_mask_load()), __ATOMIC_RELAXED);
  if (atomic_load(&g_ras_active)) __atomic_store_n(&rp_event_mask, atomic_load(&g_ras_mask), __ATOMIC_RELAXED);
}

void rp_ras_override(struct rp_node *n, int mask) {
  mask = enforce_deps(mask);
  int old = rp_mask_load();
  __atomic_store_n(&rp_event_mask, mask, __ATOMIC_RELAXED);
  atomic_store(&g_ras_mask, mask);
  atomic_store(&g_ras_active, true);
  rp_truth_mask_change(n->truth, n->iter, old, mask, "ras");
}

void rp_ras_reset(void) {
  atomic_store(&g_ras_active, false);
  atomic_store(&g_ras_mask, 0);
}

const char *rp_sym_algo(const char *kernel) {
  const char *u = kernel ? strchr(kernel, '_') : NULL;
  return u ? u + 1 : kernel; /* points into the kernel name, which is static */
}
