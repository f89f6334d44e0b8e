/* Mapping KernelCh timers to host time and flagging what cannot be trusted.
 *
 * NCCL's KernelCh timers come from a 64-slot ring per channel that the proxy
 * thread polls; when it falls more than 64 work items behind, a slot already
 * holds a later item's timers and NCCL reports those: start and stop may come
 * from different items (spec §3). A slot only ever holds the item itself or
 * a later one, so an item's reported timers are never earlier than its own.
 * We suspect an overrun when an item's start or stop timer equals another
 * launch's (items of one launch, a p2p send/recv pair or a batch, share their
 * timers by design), when its stop is before its start, when its start is
 * later than a later-noticed item's start on the same channel, or when it
 * maps to a GPU time after the host already saw it. */
#include <stdlib.h>
#include <string.h>

#include "gpu_state.h"

struct chan_item {
  int32_t thread, channel, ev;
  uint64_t start, stop;
  uint64_t launch; /* items of one launch may share timers (0: unknown, shares with none) */
  uint64_t key;    /* the timer being compared */
  size_t seq;      /* position in notice order (consecutive along a channel) */
};

static int cmp_seq(const void *pa, const void *pb) { /* by channel, then event order (notice order) */
  const struct chan_item *a = pa, *b = pb;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  if (a->channel != b->channel) return a->channel < b->channel ? -1 : 1;
  return (a->ev > b->ev) - (a->ev < b->ev);
}

/* The launch a KernelCh belongs to: its Coll/P2p's launch id, else its
 * Group (every task of one plan), per process. 0 when neither is known. */
static uint64_t launch_of(const struct lens_model *m, const struct lens_event *e) {
  if (e->parent < 0) return 0;
  const struct lens_event *op = &m->events[e->parent];
  uint64_t id = 0;
  if (op->type == LENS_T_COLL) id = op->p.coll.launch_id ? op->p.coll.launch_id : op->p.coll.parent_group;
  if (op->type == LENS_T_P2P) id = op->p.p2p.launch_id ? op->p.p2p.launch_id : op->p.p2p.parent_group;
  return id ? id * 1000003u + (uint64_t)op->proc + 1 : 0;
}

static int bad_item(const struct lens_model *m, const struct chan_item *x, const uint8_t *exclude) {
  uint32_t f = m->events[x->ev].acc.flags;
  return exclude ? exclude[x->ev] == LENS_GPU_EX_SUSPECT
                 : (f & (LENS_ACC_RING_OVERRUN | LENS_ACC_STOP_BEFORE_START)) != 0;
}

/* Items [i, j) (in notice order) report the same timer: their start, or
 * their stop. They form runs: items of one launch noticed one right after
 * the other (a p2p send/recv pair, a batch) share their timers by design.
 * With more than one run, all runs but one read another's slot after the
 * ring wrapped (a launch of more than 64 items on a channel wraps it
 * itself): the owner is the run with an item that fits its CUPTI kernel if
 * exactly one has, else the run noticed last. exclude != NULL: the pre-fit
 * pass, before any clock map: the runs noticed before the last are suspect
 * (LENS_GPU_EX_SUSPECT); the last is the owner unless CUPTI says otherwise,
 * which needs the map (LENS_GPU_EX_OWNER: kept out of CUPTI fits only). The
 * owner must stay in a notice fit: in a stalled proxy's burst the owners are
 * the items noticed soonest after their timers, the very points that hold
 * the lower envelope down (without them the map of the overrun scenario was
 * placed 1.1 ms late and the owners got negative notice lags). */
static void flag_equal(struct lens_model *m, struct chan_item *it, size_t i, size_t j, uint8_t *exclude) {
  int32_t run[j - i];
  int32_t runs = 0;
  for (size_t k = i; k < j; k++) {
    int same = k > i && it[k].launch && it[k].launch == it[k - 1].launch && it[k].seq == it[k - 1].seq + 1;
    run[k - i] = same ? run[k - i - 1] : runs++;
  }
  if (runs < 2) return;
  if (exclude) {
    for (size_t k = i; k < j; k++)
      if (run[k - i] != runs - 1) exclude[it[k].ev] = LENS_GPU_EX_SUSPECT;
      else if (!exclude[it[k].ev]) exclude[it[k].ev] = LENS_GPU_EX_OWNER;
    return;
  }
  int32_t owner = runs - 1, fitting = 0, last_fit = -1;
  for (size_t k = i; k < j; k++) {
    const struct lens_event *e = &m->events[it[k].ev];
    if ((e->acc.flags & LENS_ACC_OUTSIDE_KERNEL) || e->acc.cupti_kernel < 0 || run[k - i] == last_fit) continue;
    fitting++;
    owner = last_fit = run[k - i];
  }
  if (fitting != 1) owner = runs - 1;
  for (size_t k = i; k < j; k++)
    if (run[k - i] != owner) m->events[it[k].ev].acc.flags |= LENS_ACC_SHARED_TIMER | LENS_ACC_RING_OVERRUN;
}

/* cmp_seq's order within one channel for the timer compared: by the timer,
 * then notice order. */
static int cmp_key_seq(const struct chan_item *a, const struct chan_item *b) {
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

static int cmp_key_q(const void *pa, const void *pb) { return cmp_key_seq(pa, pb); }

/* Items of equal timers, channel by channel: it is in notice order (grouped
 * by channel, seq its index) and stays so. A channel's items are walked by
 * (timer, seq): as they are when their timers already rise with notice
 * order (an honest channel's do), else a sorted copy (in scratch, room for
 * n; scratch NULL: sorted in place and put back). The same runs of equal
 * timers as one sort of every item by (thread, channel, timer, seq), for a
 * sort of only the channels that need one. */
static void equal_timers(struct lens_model *m, struct chan_item *it, size_t n, uint8_t *exclude, int stop,
                         struct chan_item *scratch) {
  for (size_t i = 0; i < n; i++) it[i].key = stop ? it[i].stop : it[i].start;
  for (size_t c0 = 0; c0 < n;) {
    size_t c1 = c0 + 1;
    int sorted = 1;
    for (; c1 < n && it[c1].thread == it[c0].thread && it[c1].channel == it[c0].channel; c1++)
      if (sorted && cmp_key_seq(&it[c1 - 1], &it[c1]) > 0) sorted = 0;
    struct chan_item *g = it + c0;
    size_t len = c1 - c0;
    if (!sorted) {
      if (scratch) g = memcpy(scratch, g, len * sizeof *g);
      qsort(g, len, sizeof *g, cmp_key_q);
    }
    for (size_t i = 0; i < len;) {
      size_t j = i + 1;
      while (j < len && g[j].key == g[i].key) j++;
      if (j - i >= 2 && g[i].key) flag_equal(m, g, i, j, exclude);
      i = j;
    }
    if (!sorted && !scratch) qsort(g, len, sizeof *g, cmp_seq); /* back to notice order (ev rises with seq) */
    c0 = c1;
  }
}

/* it (in event order, ev rising) into cmp_seq's order: by thread, then
 * channel, ties in event order. Already in it: nothing to do. Else two
 * stable counting passes (channel, then thread) when their ranges are small
 * next to n, so a job's million items are not sorted by comparisons; else
 * qsort. The same order in all three. */
static void group_by_channel(struct chan_item *it, size_t n) {
  int in_order = 1, ev_rising = 1;
  int32_t t_lo = INT32_MAX, t_hi = INT32_MIN, c_lo = INT32_MAX, c_hi = INT32_MIN;
  for (size_t i = 0; i < n; i++) {
    if (i && cmp_seq(&it[i - 1], &it[i]) > 0) in_order = 0;
    if (i && it[i - 1].ev >= it[i].ev) ev_rising = 0;
    if (it[i].thread < t_lo) t_lo = it[i].thread;
    if (it[i].thread > t_hi) t_hi = it[i].thread;
    if (it[i].channel < c_lo) c_lo = it[i].channel;
    if (it[i].channel > c_hi) c_hi = it[i].channel;
  }
  if (in_order) return;
  uint64_t t_range = (uint64_t)((int64_t)t_hi - t_lo) + 1, c_range = (uint64_t)((int64_t)c_hi - c_lo) + 1;
  uint64_t limit = (uint64_t)n + 65536; /* the counts' memory stays about the items' */
  size_t *count = NULL;
  struct chan_item *tmp = NULL;
  if (ev_rising && t_range <= limit && c_range <= limit) {
    count = malloc((size_t)(t_range > c_range ? t_range : c_range) * sizeof *count);
    tmp = malloc(n * sizeof *tmp);
  }
  if (!count || !tmp) {
    free(count);
    free(tmp);
    qsort(it, n, sizeof(*it), cmp_seq);
    return;
  }
  /* By channel into tmp, then by thread back into it: stable, so ties keep event order. */
  memset(count, 0, (size_t)c_range * sizeof *count);
  for (size_t i = 0; i < n; i++) count[(int64_t)it[i].channel - c_lo]++;
  for (size_t k = 0, at = 0; k < c_range; k++) {
    size_t c = count[k];
    count[k] = at, at += c;
  }
  for (size_t i = 0; i < n; i++) tmp[count[(int64_t)it[i].channel - c_lo]++] = it[i];
  memset(count, 0, (size_t)t_range * sizeof *count);
  for (size_t i = 0; i < n; i++) count[(int64_t)tmp[i].thread - t_lo]++;
  for (size_t k = 0, at = 0; k < t_range; k++) {
    size_t c = count[k];
    count[k] = at, at += c;
  }
  for (size_t i = 0; i < n; i++) it[count[(int64_t)tmp[i].thread - t_lo]++] = tmp[i];
  free(count);
  free(tmp);
}

static void flag_sequences(struct lens_model *m, struct chan_item *it, size_t n, uint8_t *exclude) {
  group_by_channel(it, n);
  for (size_t i = 0; i < n; i++) it[i].seq = i;
  /* A start or a stop timer equal to another item's. */
  struct chan_item *scratch = malloc((n ? n : 1) * sizeof *scratch);
  equal_timers(m, it, n, exclude, 0, scratch);
  equal_timers(m, it, n, exclude, 1, scratch);
  free(scratch);
  /* Starts along each channel, in notice order (it still is): an honest
   * item's start is never later than a later item's reported start (that is
   * its own or an even later item's). So when an item starts before
   * earlier-noticed items, those earlier items hold later items' timers,
   * however many in a row; the item itself is not to blame. Items already
   * known to be wrong are passed over (they would otherwise hide the run
   * before them). */
  size_t first = 0;
  for (size_t i = 1; i < n; i++) {
    if (it[i].thread != it[first].thread || it[i].channel != it[first].channel) {
      first = i;
      continue;
    }
    if (bad_item(m, &it[i], exclude)) continue;
    for (size_t k = i; k-- > first;) {
      if (it[k].start <= it[i].start) {
        if (!bad_item(m, &it[k], exclude)) break; /* honest items before it are in order */
        continue;
      }
      if (exclude) exclude[it[k].ev] = LENS_GPU_EX_SUSPECT;
      else m->events[it[k].ev].acc.flags |= LENS_ACC_NON_MONOTONIC | LENS_ACC_RING_OVERRUN;
    }
  }
}

static int outside(uint64_t s, uint64_t t, const struct lens_kernel *k, double bound) {
  uint64_t tol = (uint64_t)(bound + 50); /* 50 ns: %globaltimer quantisation on GH100 (32 ns) */
  return s + tol < k->start_mono_ns || (t && t > k->end_mono_ns + tol);
}

/* How many KernelCh events m holds: the channel items' arrays are sized
 * for them, not for every event (56 bytes an event, zeroed, was the
 * largest allocation of the analyses on real traces; issue 23). */
static size_t count_kch(const struct lens_model *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) n += m->events[i].type == LENS_T_KERNEL_CH;
  return n;
}

void lens_gpu_flag(struct lens_model *m, struct lens_gpu_report *r) {
  struct chan_item *it = malloc((count_kch(m) + 1) * sizeof(*it)); /* every item used is written whole */
  size_t n = 0;
  struct lens_gpu_state *st = lens_gpu_state(m, 0); /* once: it takes a lock */
  const struct lens_gpu_report *rep = lens_gpu_report_get(m);
  for (size_t i = 0; i < m->n_events; i++) {
    struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    r->kch++;
    uint64_t s = e->p.kernel_ch.start_gpu_ns, t = e->p.kernel_ch.stop_gpu_ns;
    /* Only two items' timers make a stop before its start (spec §3). */
    if (t && t < s) e->acc.flags |= LENS_ACC_STOP_BEFORE_START | LENS_ACC_RING_OVERRUN;
    if (it) it[n++] = (struct chan_item){e->thread, e->p.kernel_ch.channel, (int32_t)i, s, t, launch_of(m, e), 0, 0};
    /* The launch's join result carries over to its channels. */
    if (e->parent >= 0) {
      const struct lens_event *op = &m->events[e->parent];
      uint64_t lid = op->type == LENS_T_COLL ? op->p.coll.launch_id : op->type == LENS_T_P2P ? op->p.p2p.launch_id : 0;
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
    e->acc.gpu_start_mono_ns = lens_gpu_report_map_ns(rep, map, s);
    e->acc.gpu_stop_mono_ns = t ? lens_gpu_report_map_ns(rep, map, t) : 0;
    /* lens_gpu_notice_lag_known: the same notice says whether a lag is known */
    uint64_t notice = t ? lens_gpu_kch_stop_notice(m, e) : e->start_mono_ns;
    uint64_t mapped = t ? e->acc.gpu_stop_mono_ns : e->acc.gpu_start_mono_ns;
    if (notice) e->acc.notice_lag_ns = (int64_t)(notice - mapped);
    r->kch_mapped++;
    /* A GPU time after the host already saw it is impossible for the item
     * itself: the timers belong to a later work item. Either end, either
     * kind of map: a CUPTI map holds every kernel within its bound; a notice
     * map is the line under every point it was fitted on, so only a point
     * kept out of the fit (suspect timers) can lie below it, and one beyond
     * the bound is a later item's timers, not the map's error. */
    uint64_t tol = (uint64_t)(cm->error_bound_ns + 1000); /* +1 us: timer ticks, rounding */
    if ((e->start_mono_ns && e->acc.gpu_start_mono_ns > e->start_mono_ns + tol) ||
        (t && notice && e->acc.gpu_stop_mono_ns > notice + tol))
      e->acc.flags |= LENS_ACC_RING_OVERRUN;
    int32_t k = lens_gpu_state_kernel_of_kch(m, st, e);
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
  struct chan_item *it = malloc((count_kch(m) + 1) * sizeof(*it)); /* every item used is written whole */
  if (!ex || !it) {
    free(it);
    return ex; /* without the pre-pass the fit still works, less robustly */
  }
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    uint64_t s = e->p.kernel_ch.start_gpu_ns, t = e->p.kernel_ch.stop_gpu_ns;
    if (t && t < s) ex[i] = LENS_GPU_EX_SUSPECT;
    it[n++] = (struct chan_item){e->thread, e->p.kernel_ch.channel, (int32_t)i, s, t, launch_of(m, e), 0, 0};
  }
  flag_sequences((struct lens_model *)m, it, n, ex);
  free(it);
  return ex;
}
