/* The simulated GPUs: each rank has its own globaltimer (offset + drift from
 * the host clock) and, per channel, the work items it ran with their true
 * start and end. rp_gpu_slot() answers what NCCL's 64-slot timestamp ring
 * would show the proxy at a given moment, overruns included (spec §3). */
#include <limits.h>

#include "replay/rp_internal.h"

int64_t rp_gpu_time(const struct rp_gpu *g, int64_t host_ns) {
  return g->offset_ns + host_ns + (int64_t)((double)host_ns * g->drift_ppm * 1e-6);
}

uint64_t rp_gpu_new_item(struct rp_gpu *g, int ch, int op, int64_t start) {
  uint64_t n = atomic_load_explicit(&g->published[ch], memory_order_relaxed);
  if (n >= g->items_cap) return 0;
  struct rp_item *it = &g->items[ch][n];
  it->counter = n + 1;
  it->op = op;
  atomic_store_explicit(&it->start, start, memory_order_relaxed);
  atomic_store_explicit(&it->end, LLONG_MAX, memory_order_relaxed);
  atomic_store_explicit(&g->published[ch], n + 1, memory_order_release);
  return n + 1;
}

struct rp_item *rp_gpu_item(struct rp_gpu *g, int ch, uint64_t counter) {
  if (counter == 0 || counter > atomic_load_explicit(&g->published[ch], memory_order_acquire)) return NULL;
  return &g->items[ch][counter - 1];
}

uint64_t rp_gpu_slot(struct rp_gpu *g, int ch, uint64_t base, bool stop, int64_t now, int64_t *host_ns) {
  uint64_t n = atomic_load_explicit(&g->published[ch], memory_order_acquire);
  /* Items with the same counter % 64 share a slot; the newest that has
   * happened is what the slot holds. */
  uint64_t c = base;
  while (c + RP_RING <= n) c += RP_RING;
  for (; c >= 1 && c + RP_RING > base; c -= RP_RING) {
    if (c > n) continue;
    struct rp_item *it = &g->items[ch][c - 1];
    int64_t t = atomic_load_explicit(stop ? &it->end : &it->start, memory_order_acquire);
    if (t <= now) {
      *host_ns = t;
      return c;
    }
    if (c <= RP_RING) break;
  }
  return 0;
}
