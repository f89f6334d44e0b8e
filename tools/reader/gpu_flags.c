/* Mapping KernelCh timers to host time and flagging what cannot be trusted.
 *
 * NCCL's KernelCh timers come from a 64-slot ring per channel that the proxy
 * thread polls; when it falls more than 64 work items behind, a slot already
 * holds a later item's timers and NCCL reports those (spec §3). We suspect an
 * overrun when an item's timers: equal another item's (not a p2p send/recv
 * pair, which legitimately share them), start later than the next item's on
 * the same channel, or map to a GPU time after the host already saw them. */
#include <stdlib.h>
#include <string.h>

#include "gpu_state.h"

struct chan_item {
  int32_t thread, channel, ev;
  uint64_t start, stop;
};

static int cmp_seq(const void *pa, const void *pb) { /* by channel, then event order (notice order) */
  const struct chan_item *a = pa, *b = pb;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  if (a->channel != b->channel) return a->channel < b->channel ? -1 : 1;
  return (a->ev > b->ev) - (a->ev < b->ev);
}

static int cmp_timers(const void *pa, const void *pb) {
  const struct chan_item *a = pa, *b = pb;
  int c = cmp_seq(pa, pb);
  if (a->thread != b->thread || a->channel != b->channel) return c;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->stop != b->stop) return a->stop < b->stop ? -1 : 1;
  return (a->ev > b->ev) - (a->ev < b->ev);
}

/* A p2p send/recv pair of one launch shares its timers by design. */
static int p2p_pair(const struct lens_model *m, int32_t a, int32_t b) {
  int32_t pa = m->events[a].parent, pb = m->events[b].parent;
  if (pa < 0 || pb < 0 || pa == pb) return 0;
  const struct lens_event *ea = &m->events[pa], *eb = &m->events[pb];
  if (ea->type != LENS_T_P2P || eb->type != LENS_T_P2P) return 0;
  if (ea->p.p2p.launch_id) return ea->p.p2p.launch_id == eb->p.p2p.launch_id;
  return ea->parent >= 0 && ea->parent == eb->parent;
}

/* exclude != NULL: the pre-fit pass; instead of flags, mark every item
 * involved (owners too: which one is honest needs the clock map). */
static void flag_sequences(struct lens_model *m, struct chan_item *it, size_t n, uint8_t *exclude) {
  /* Equal timers across items. */
  qsort(it, n, sizeof(*it), cmp_timers);
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && it[j].thread == it[i].thread && it[j].channel == it[i].channel && it[j].start == it[i].start &&
           it[j].stop == it[i].stop)
      j++;
    int pair = j - i == 2 && p2p_pair(m, it[i].ev, it[i + 1].ev);
    if (j - i >= 2 && !pair && exclude) {
      for (size_t k = i; k < j; k++) exclude[it[k].ev] = 1;
    } else if (j - i >= 2 && !pair) {
      /* The owner: the one whose span fits its CUPTI kernel if exactly one
       * does, else the last noticed (earlier ones read its slot after the
       * ring wrapped). */
      size_t owner = j - 1, fitting = 0;
      for (size_t k = i; k < j; k++)
        if (!(m->events[it[k].ev].acc.flags & LENS_ACC_OUTSIDE_KERNEL) && m->events[it[k].ev].acc.cupti_kernel >= 0)
          fitting++, owner = k;
      if (fitting != 1) owner = j - 1;
      for (size_t k = i; k < j; k++)
        if (k != owner) m->events[it[k].ev].acc.flags |= LENS_ACC_SHARED_TIMER | LENS_ACC_RING_OVERRUN;
    }
    i = j;
  }
  /* Order along each channel, as NCCL reported them, against the last item
   * not already known to hold a later item's timers (after an overrun run
   * the next honest item would otherwise look out of order). */
  qsort(it, n, sizeof(*it), cmp_seq);
  size_t good = 0;
  for (size_t i = 1; i < n; i++) {
    if (it[i].thread != it[i - 1].thread || it[i].channel != it[i - 1].channel) {
      good = i;
      continue;
    }
    if (m->events[it[good].ev].acc.flags & LENS_ACC_RING_OVERRUN) good = i; /* no honest item yet */
    if (exclude) {
      if (it[i].start < it[i - 1].start) exclude[it[i].ev] = exclude[it[i - 1].ev] = 1;
      continue;
    }
    if (it[i].start < it[good].start) {
      m->events[it[i].ev].acc.flags |= LENS_ACC_NON_MONOTONIC;
      m->events[it[good].ev].acc.flags |= LENS_ACC_RING_OVERRUN; /* it holds a later item's timers */
    }
    if (!(m->events[it[i].ev].acc.flags & LENS_ACC_RING_OVERRUN)) good = i;
  }
}

static int outside(uint64_t s, uint64_t t, const struct lens_kernel *k, double bound) {
  uint64_t tol = (uint64_t)(bound + 50); /* 50 ns: %globaltimer quantisation on GH100 (32 ns) */
  return s + tol < k->start_mono_ns || (t && t > k->end_mono_ns + tol);
}

void lens_gpu_flag(struct lens_model *m, struct lens_gpu_report *r) {
  struct chan_item *it = calloc(m->n_events + 1, sizeof(*it));
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    r->kch++;
    uint64_t s = e->p.kernel_ch.start_gpu_ns, t = e->p.kernel_ch.stop_gpu_ns;
    if (t && t < s) e->acc.flags |= LENS_ACC_STOP_BEFORE_START;
    if (it) it[n++] = (struct chan_item){e->thread, e->p.kernel_ch.channel, (int32_t)i, s, t};
    /* The launch's join result carries over to its channels. */
    if (e->parent >= 0) {
      const struct lens_event *op = &m->events[e->parent];
      uint64_t lid = op->type == LENS_T_COLL ? op->p.coll.launch_id : op->type == LENS_T_P2P ? op->p.p2p.launch_id : 0;
      struct lens_gpu_state *st = lens_gpu_state(m, 0);
      long li = lid && st ? lens_gpu_index_find(&st->launches, e->proc, lid) : -1;
      if (li >= 0 && (m->events[st->launches.v[li].val].acc.flags & LENS_ACC_NO_KERNEL_RECORD))
        e->acc.flags |= LENS_ACC_NO_KERNEL_RECORD;
    }
    int32_t map = s ? lens_gpu_map_for(m, e->thread, s) : -1;
    if (map < 0) {
      e->acc.flags |= LENS_ACC_NO_CLOCK_MAP;
      continue;
    }
    const struct lens_clock_map *cm = &m->clock_maps[map];
    e->acc.time_source = LENS_TS_GPU_PTIMER;
    e->acc.gpu_start_mono_ns = lens_gpu_map_ns(m, map, s);
    e->acc.gpu_stop_mono_ns = t ? lens_gpu_map_ns(m, map, t) : 0;
    uint64_t notice = t ? lens_gpu_kch_stop_notice(m, e) : e->start_mono_ns;
    uint64_t mapped = t ? e->acc.gpu_stop_mono_ns : e->acc.gpu_start_mono_ns;
    if (notice) e->acc.notice_lag_ns = (int64_t)(notice - mapped);
    r->kch_mapped++;
    /* A GPU time after the host already saw it is impossible for the item
     * itself: the timers belong to a later work item. */
    if (cm->source == LENS_TS_CUPTI && e->start_mono_ns &&
        e->acc.gpu_start_mono_ns > e->start_mono_ns + (uint64_t)(cm->error_bound_ns + 1000))
      e->acc.flags |= LENS_ACC_RING_OVERRUN;
    int32_t k = lens_gpu_kernel_of_kch(m, e);
    e->acc.cupti_kernel = k;
    if (k >= 0 && !m->kernels[k].graph_id && m->kernels[k].start_mono_ns) {
      r->kch_cupti_checked++;
      /* A kernel shorter than its channels holds none of them, whatever the map says. */
      if (lens_gpu_kch_longer_than_kernel(e, &m->kernels[k]) ||
          outside(e->acc.gpu_start_mono_ns, e->acc.gpu_stop_mono_ns, &m->kernels[k], cm->error_bound_ns))
        e->acc.flags |= LENS_ACC_OUTSIDE_KERNEL;
    }
  }
  if (it) flag_sequences(m, it, n, NULL);
  free(it);
  for (size_t i = 0; i < m->n_events; i++) {
    uint32_t f = m->events[i].acc.flags;
    for (int b = 0; b < 16; b++)
      if (f & (1u << b)) r->flag_counts[b]++;
  }
}

/* Before fitting: KernelCh whose timers are structurally suspect (shared
 * with another item, out of order, stop before start) are kept out of the
 * clock fit, so a burst of ring overruns cannot drag the map. */
uint8_t *lens_gpu_fit_exclusions(const struct lens_model *m) {
  uint8_t *ex = calloc(m->n_events + 1, 1);
  struct chan_item *it = calloc(m->n_events + 1, sizeof(*it));
  if (!ex || !it) {
    free(it);
    return ex; /* without the pre-pass the fit still works, less robustly */
  }
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    uint64_t s = e->p.kernel_ch.start_gpu_ns, t = e->p.kernel_ch.stop_gpu_ns;
    if (t && t < s) ex[i] = 1;
    it[n++] = (struct chan_item){e->thread, e->p.kernel_ch.channel, (int32_t)i, s, t};
  }
  flag_sequences((struct lens_model *)m, it, n, ex);
  free(it);
  return ex;
}
