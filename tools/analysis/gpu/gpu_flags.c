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

#include "gpu_kch.h"
#include "gpu_state.h"

struct chan_item {
  int32_t thread, channel, row; /* row: of the KernelCh table, in event order */
  uint64_t start, stop;
  uint64_t launch; /* items of one launch may share timers (0: unknown, shares with none) */
  uint64_t key;    /* the timer being compared */
  size_t seq;      /* position in notice order (consecutive along a channel) */
};

static int cmp_seq(const void *pa, const void *pb) { /* by channel, then event order (notice order) */
  const struct chan_item *a = pa, *b = pb;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  if (a->channel != b->channel) return a->channel < b->channel ? -1 : 1;
  return (a->row > b->row) - (a->row < b->row);
}

/* pre: the pre-fit pass (rows' ex), else the flags pass (rows' flags). */
static int bad_item(const struct lens_gpu_kch *rows, const struct chan_item *x, int pre) {
  const struct lens_gpu_kch *k = &rows[x->row];
  return pre ? k->ex == LENS_GPU_EX_SUSPECT : (k->flags & (LENS_ACC_RING_OVERRUN | LENS_ACC_STOP_BEFORE_START)) != 0;
}

/* Items [i, j) (in notice order) report the same timer: their start, or
 * their stop. They form runs: items of one launch noticed one right after
 * the other (a p2p send/recv pair, a batch) share their timers by design.
 * With more than one run, all runs but one read another's slot after the
 * ring wrapped (a launch of more than 64 items on a channel wraps it
 * itself): the owner is the run with an item that fits its CUPTI kernel if
 * exactly one has, else the run noticed last. pre: the pre-fit
 * pass, before any clock map: the runs noticed before the last are suspect
 * (LENS_GPU_EX_SUSPECT); the last is the owner unless CUPTI says otherwise,
 * which needs the map (LENS_GPU_EX_OWNER: kept out of CUPTI fits only). The
 * owner must stay in a notice fit: in a stalled proxy's burst the owners are
 * the items noticed soonest after their timers, the very points that hold
 * the lower envelope down (without them the map of the overrun scenario was
 * placed 1.1 ms late and the owners got negative notice lags). */
static void flag_equal(struct lens_gpu_kch *rows, struct chan_item *it, size_t i, size_t j, int pre) {
  int32_t run[j - i];
  int32_t runs = 0;
  for (size_t k = i; k < j; k++) {
    int same = k > i && it[k].launch && it[k].launch == it[k - 1].launch && it[k].seq == it[k - 1].seq + 1;
    run[k - i] = same ? run[k - i - 1] : runs++;
  }
  if (runs < 2) return;
  if (pre) {
    for (size_t k = i; k < j; k++)
      if (run[k - i] != runs - 1) rows[it[k].row].ex = LENS_GPU_EX_SUSPECT;
      else if (!rows[it[k].row].ex) rows[it[k].row].ex = LENS_GPU_EX_OWNER;
    return;
  }
  int32_t owner = runs - 1, fitting = 0, last_fit = -1;
  for (size_t k = i; k < j; k++) {
    const struct lens_gpu_kch *e = &rows[it[k].row];
    if ((e->flags & LENS_ACC_OUTSIDE_KERNEL) || e->cupti_kernel < 0 || run[k - i] == last_fit) continue;
    fitting++;
    owner = last_fit = run[k - i];
  }
  if (fitting != 1) owner = runs - 1;
  for (size_t k = i; k < j; k++)
    if (run[k - i] != owner) rows[it[k].row].flags |= LENS_ACC_SHARED_TIMER | LENS_ACC_RING_OVERRUN;
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
static void equal_timers(struct lens_gpu_kch *rows, struct chan_item *it, size_t n, int pre, int stop,
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
      if (j - i >= 2 && g[i].key) flag_equal(rows, g, i, j, pre);
      i = j;
    }
    if (!sorted && !scratch) qsort(g, len, sizeof *g, cmp_seq); /* back to notice order (row rises with seq) */
    c0 = c1;
  }
}

/* it (in event order, ev rising) into cmp_seq's order: by thread, then
 * channel, ties in event order. Already in it: nothing to do. Else two
 * stable counting passes (channel, then thread) when their ranges are small
 * next to n, so a job's million items are not sorted by comparisons; else
 * qsort. The same order in all three. */
static void group_by_channel(struct chan_item *it, size_t n) {
  int in_order = 1, row_rising = 1;
  int32_t t_lo = INT32_MAX, t_hi = INT32_MIN, c_lo = INT32_MAX, c_hi = INT32_MIN;
  for (size_t i = 0; i < n; i++) {
    if (i && cmp_seq(&it[i - 1], &it[i]) > 0) in_order = 0;
    if (i && it[i - 1].row >= it[i].row) row_rising = 0;
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
  if (row_rising && t_range <= limit && c_range <= limit) {
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

static void flag_sequences(struct lens_gpu_kch *rows, struct chan_item *it, size_t n, int pre) {
  group_by_channel(it, n);
  for (size_t i = 0; i < n; i++) it[i].seq = i;
  /* A start or a stop timer equal to another item's. */
  struct chan_item *scratch = malloc((n ? n : 1) * sizeof *scratch);
  equal_timers(rows, it, n, pre, 0, scratch);
  equal_timers(rows, it, n, pre, 1, scratch);
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
    if (bad_item(rows, &it[i], pre)) continue;
    for (size_t k = i; k-- > first;) {
      if (it[k].start <= it[i].start) {
        if (!bad_item(rows, &it[k], pre)) break; /* honest items before it are in order */
        continue;
      }
      if (pre) rows[it[k].row].ex = LENS_GPU_EX_SUSPECT;
      else rows[it[k].row].flags |= LENS_ACC_NON_MONOTONIC | LENS_ACC_RING_OVERRUN;
    }
  }
}

static int outside(uint64_t s, uint64_t t, const struct lens_kernel *k, double bound) {
  uint64_t tol = (uint64_t)(bound + 50); /* 50 ns: %globaltimer quantisation on GH100 (32 ns) */
  return s + tol < k->start_mono_ns || (t && t > k->end_mono_ns + tol);
}

/* Adds a LENS_ACC_* set to the report's count of each bit. */
static void count_flags(struct lens_gpu_report *r, uint32_t f) {
  for (f &= 0xffffu; f; f &= f - 1) /* set bits only: it runs on every event */
    r->flag_counts[__builtin_ctz(f)]++;
}

/* The channel items of the table's rows, in row (event) order; NULL when
 * out of memory. Every item used is written whole. */
static struct chan_item *chan_items(const struct lens_gpu_kch_table *t) {
  struct chan_item *it = malloc((t->n + 1) * sizeof(*it));
  if (it)
    for (size_t q = 0; q < t->n; q++) {
      const struct lens_gpu_kch *k = &t->v[q];
      it[q] = (struct chan_item){k->thread, k->channel, (int32_t)q, k->start_gpu, k->stop_gpu, k->launch, 0, 0};
    }
  return it;
}

/* Each row on its own: its timers mapped, the flags that need no other row. */
static void flag_rows(struct lens_model *m, struct lens_gpu_state *st, struct lens_gpu_report *r,
                      struct lens_gpu_kch_table *t) {
  const struct lens_gpu_report *rep = lens_gpu_report_get(m);
  for (size_t q = 0; q < t->n; q++) {
    struct lens_gpu_kch *k = &t->v[q];
    struct lens_event *e = k->ev >= 0 ? &m->events[k->ev] : NULL;
    r->kch++;
    uint64_t s = k->start_gpu, tt = k->stop_gpu;
    /* Only two items' timers make a stop before its start (spec §3). */
    if (tt && tt < s) k->flags |= LENS_ACC_STOP_BEFORE_START | LENS_ACC_RING_OVERRUN;
    /* The launch's join result carries over to its channels (a join needs
     * CUPTI evidence, and then every KernelCh is built). */
    if (e && e->parent >= 0) {
      const struct lens_event *op = &m->events[e->parent];
      uint64_t lid = op->type == LENS_T_COLL ? op->p.coll.launch_id : op->type == LENS_T_P2P ? op->p.p2p.launch_id : 0;
      long li = lid && st ? lens_gpu_index_find(&st->launches, e->proc, lid) : -1;
      if (li >= 0 && (m->events[st->launches.v[li].val].acc.flags & LENS_ACC_NO_KERNEL_RECORD))
        k->flags |= LENS_ACC_NO_KERNEL_RECORD;
    }
    int32_t map = s ? lens_gpu_map_for(m, k->thread, s) : -1;
    if (map < 0) {
      k->flags |= LENS_ACC_NO_CLOCK_MAP;
      continue;
    }
    const struct lens_clock_map *cm = &m->clock_maps[map];
    uint64_t gpu_start = lens_gpu_report_map_ns(rep, map, s);
    uint64_t gpu_stop = tt ? lens_gpu_report_map_ns(rep, map, tt) : 0;
    /* lens_gpu_notice_lag_known: the same notice says whether a lag is known */
    uint64_t notice = tt ? k->stop_notice : k->start_notice;
    uint64_t mapped = tt ? gpu_stop : gpu_start;
    if (e) {
      e->acc.time_source = LENS_TS_GPU_PTIMER;
      e->acc.gpu_start_mono_ns = gpu_start;
      e->acc.gpu_stop_mono_ns = gpu_stop;
      if (notice) e->acc.notice_lag_ns = (int64_t)(notice - mapped);
    }
    r->kch_mapped++;
    /* A GPU time after the host already saw it is impossible for the item
     * itself: the timers belong to a later work item. Either end, either
     * kind of map: a CUPTI map holds every kernel within its bound; a notice
     * map is the line under every point it was fitted on, so only a point
     * kept out of the fit (suspect timers) can lie below it, and one beyond
     * the bound is a later item's timers, not the map's error. */
    uint64_t tol = (uint64_t)(cm->error_bound_ns + 1000); /* +1 us: timer ticks, rounding */
    if ((k->start_notice && gpu_start > k->start_notice + tol) || (tt && notice && gpu_stop > notice + tol))
      k->flags |= LENS_ACC_RING_OVERRUN;
    int32_t kk = e ? lens_gpu_state_kernel_of_kch(m, st, e) : -1;
    k->cupti_kernel = kk;
    if (e) e->acc.cupti_kernel = kk;
    if (kk >= 0 && !m->kernels[kk].graph_id && m->kernels[kk].start_mono_ns) {
      r->kch_cupti_checked++;
      /* A kernel shorter than its channels holds none of them, whatever the map says. */
      if (lens_gpu_kch_longer_than_kernel(e, &m->kernels[kk]) ||
          outside(gpu_start, gpu_stop, &m->kernels[kk], cm->error_bound_ns))
        k->flags |= LENS_ACC_OUTSIDE_KERNEL;
    }
  }
}

/* Every row's flags counted once: on its event (which may hold the
 * starvation analysis's bit too), else here. */
static void flag_finish(struct lens_model *m, struct lens_gpu_report *r, const struct lens_gpu_kch_table *t) {
  for (size_t q = 0; q < t->n; q++) {
    const struct lens_gpu_kch *k = &t->v[q];
    if (k->ev >= 0) m->events[k->ev].acc.flags |= k->flags;
    else count_flags(r, k->flags);
  }
  for (size_t i = 0; i < m->n_events; i++) count_flags(r, m->events[i].acc.flags);
}

int lens_gpu_seqflag_cmp(const void *pa, const void *pb) {
  const struct lens_gpu_seqflag *a = pa, *b = pb;
  if (a->proc != b->proc) return a->proc < b->proc ? -1 : 1;
  if (a->session != b->session) return a->session < b->session ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

/* What the sequence pass added to each row, kept in the state for a memo
 * (gpu_memo.c) in (proc, session, id) order; ambiguous when a row it
 * flagged shares its identity with another row (an id started twice:
 * crafted input), as a window could not tell which of them it has. */
static void keep_seqflags(struct lens_gpu_state *st, const struct lens_gpu_kch_table *t, const uint32_t *before) {
  size_t n = 0;
  for (size_t q = 0; q < t->n; q++) n += t->v[q].flags != before[q];
  free(st->seq);
  st->seq = NULL, st->n_seq = 0, st->seq_ambiguous = 0;
  if (!n) return;
  if (!(st->seq = malloc(n * sizeof *st->seq))) {
    st->seq_ambiguous = 1; /* no memo without them */
    return;
  }
  for (size_t q = 0; q < t->n; q++)
    if (t->v[q].flags != before[q])
      st->seq[st->n_seq++] = (struct lens_gpu_seqflag){t->v[q].proc, t->v[q].session, t->v[q].id,
                                                      t->v[q].flags & ~before[q], 0};
  qsort(st->seq, st->n_seq, sizeof *st->seq, lens_gpu_seqflag_cmp);
  for (size_t i = 1; i < st->n_seq; i++)
    if (!lens_gpu_seqflag_cmp(&st->seq[i - 1], &st->seq[i])) st->seq_ambiguous = 1;
  size_t hits = 0; /* every row whose identity is one of them: exactly one each */
  for (size_t q = 0; q < t->n && !st->seq_ambiguous; q++) {
    struct lens_gpu_seqflag key = {t->v[q].proc, t->v[q].session, t->v[q].id, 0, 0};
    hits += bsearch(&key, st->seq, st->n_seq, sizeof key, lens_gpu_seqflag_cmp) != NULL;
  }
  if (hits != st->n_seq) st->seq_ambiguous = 1;
}

void lens_gpu_flag(struct lens_model *m, struct lens_gpu_report *r, struct lens_gpu_kch_table *t) {
  struct lens_gpu_state *st = lens_gpu_state(m, 0); /* once: it takes a lock */
  flag_rows(m, st, r, t);
  uint32_t *before = st ? malloc((t->n ? t->n : 1) * sizeof *before) : NULL;
  for (size_t q = 0; before && q < t->n; q++) before[q] = t->v[q].flags;
  struct chan_item *it = chan_items(t);
  if (it) flag_sequences(t->v, it, t->n, 0);
  free(it);
  if (st) {
    if (before) keep_seqflags(st, t, before);
    else st->seq_ambiguous = 1;
  }
  free(before);
  flag_finish(m, r, t);
}

void lens_gpu_flag_memo(struct lens_model *m, struct lens_gpu_report *r, struct lens_gpu_kch_table *t,
                        const struct lens_gpu_seqflag *seq, size_t n_seq) {
  struct lens_gpu_state *st = lens_gpu_state(m, 0);
  flag_rows(m, st, r, t);
  for (size_t q = 0; q < t->n && n_seq; q++) {
    struct lens_gpu_seqflag key = {t->v[q].proc, t->v[q].session, t->v[q].id, 0, 0};
    const struct lens_gpu_seqflag *hit = bsearch(&key, seq, n_seq, sizeof key, lens_gpu_seqflag_cmp);
    if (hit) t->v[q].flags |= hit->flags;
  }
  flag_finish(m, r, t);
}

/* Before fitting: KernelCh whose timers are structurally suspect (shared
 * with another item, out of order, stop before start) are kept out of the
 * clock fit (rows' ex), so a burst of ring overruns cannot drag the map.
 * Out of memory: none is, and the fit still works, less robustly. */
void lens_gpu_fit_exclusions(struct lens_gpu_kch_table *t) {
  for (size_t q = 0; q < t->n; q++) {
    struct lens_gpu_kch *k = &t->v[q];
    k->ex = k->stop_gpu && k->stop_gpu < k->start_gpu ? LENS_GPU_EX_SUSPECT : 0;
  }
  struct chan_item *it = chan_items(t);
  if (it) flag_sequences(t->v, it, t->n, 1);
  free(it);
}
