/* Sync points for the host alignment: a rank's end of a collective,
 * bracketed on its own host's CLOCK_MONOTONIC by hard bounds (job_align.h
 * says which and why). */
#include <stdlib.h>

#include "gpu_analysis.h"
#include "job_align.h"
#include "job_priv.h"
#include "lens_checked.h"

/* GPU ns as host ns, with the rate margin on the side that keeps the bound. */
static uint64_t rate_margin(uint64_t gpu_ns) { return lens_f2u64((double)gpu_ns * LENS_ALIGN_GPU_RATE_PPM * 1e-6) + 1; }

void lens_align_rank_notices(const struct lens_model *m, const struct lens_job_rank *r, struct lens_align_gpu *g) {
  /* Rows reduced from partial files have no events here: nothing to bracket. */
  if (!g->t || r->host_span || r->event < 0 || (size_t)r->event >= m->n_events) return;
  const struct lens_event *e = &m->events[r->event];
  /* Upper: each channel's stop was noticed after the GPU wrote it, and the
   * last channel stopped (t - its stop) of GPU time after that channel. */
  for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    if (!lens_job_kch_timed(x)) continue;
    uint64_t b = x->p.kernel_ch.stop_gpu_ns;
    uint64_t notice = lens_gpu_kch_stop_notice(m, x);
    if (x->stop_mono_ns && x->stop_mono_ns < notice) notice = x->stop_mono_ns;
    if (!notice) continue;
    uint64_t d = g->t - b;
    uint64_t u = notice + d + (d ? rate_margin(d) : 0);
    if (u < g->hi) g->hi = u;
    g->notice_thread = x->thread;
  }
}

int lens_align_rank_end(const struct lens_model *m, const struct lens_job_rank *r, const struct lens_align_gpu *g,
                        const int64_t *map_slack, struct lens_align_end *out) {
  if (!g->t) return -1;
  uint64_t s = g->s, t = g->t, hi = g->hi, lo = 0;
  int32_t thread = g->notice_thread;
  /* Lower: the kernel started after its launch was called, and ran its span. */
  if (r->launch_start_ns) lo = r->launch_start_ns + (t - s) - rate_margin(t - s);
  /* The GPU's clock map: a CUPTI map bounds both ways, a map fitted from
   * notices (lower envelope) only from above (it is late by the smallest
   * polling delay, which no bound here knows). */
  int32_t mi = thread >= 0 ? lens_gpu_map_for(m, thread, t) : -1;
  if (mi >= 0 && (size_t)mi < m->n_clock_maps) {
    const struct lens_clock_map *cm = &m->clock_maps[mi];
    uint64_t mapped = lens_gpu_map_ns(m, mi, t);
    uint64_t err = (uint64_t)cm->error_bound_ns + 1;
    if (mapped && t >= cm->gpu_from && t <= cm->gpu_to) {
      if (mapped + err < hi) hi = mapped + err;
      if (cm->source == LENS_TS_CUPTI && mapped > err && mapped - err > lo) lo = mapped - err;
      /* A notice map is late by its GPU's least polling delay d (unknown,
       * >= 0), and a kernel starts after its launch: d <= mapped start -
       * launch (+ err) for every kernel of that GPU, so the least of those
       * (map_slack) bounds d, and with it every end from below. */
      int64_t sl = map_slack ? map_slack[mi] : INT64_MAX;
      if (cm->source != LENS_TS_CUPTI && sl != INT64_MAX && mapped > (uint64_t)sl + 2 * err &&
          mapped - (uint64_t)sl - 2 * err > lo)
        lo = mapped - (uint64_t)sl - 2 * err;
    }
  }
  if (hi == UINT64_MAX || !lo) return -1;
  out->lo = lo;
  out->hi = hi;
  out->gpu = thread;
  out->gpu_end = t;
  return 0;
}

static int cmp_gpu(const void *pa, const void *pb) {
  const struct lens_align_end *a = pa, *b = pb;
  if (a->gpu != b->gpu) return a->gpu < b->gpu ? -1 : 1;
  return (a->gpu_end > b->gpu_end) - (a->gpu_end < b->gpu_end);
}

size_t lens_align_propagate(struct lens_align_end *v, size_t n, double rate_ppm) {
  qsort(v, n, sizeof *v, cmp_gpu);
  double lo_rate = 1.0 - rate_ppm * 1e-6, hi_rate = 1.0 + rate_ppm * 1e-6;
  for (size_t s = 0; s < n;) {
    size_t e = s;
    while (e < n && v[e].gpu == v[s].gpu) e++;
    /* forward: a later end is at least (dt x lo_rate) after, at most (dt x hi_rate) */
    for (size_t k = s + 1; k < e; k++) {
      double dt = (double)(v[k].gpu_end - v[k - 1].gpu_end);
      uint64_t lo = v[k - 1].lo + lens_f2u64(dt * lo_rate), hi = v[k - 1].hi + lens_f2u64(dt * hi_rate) + 1;
      if (lo > v[k].lo) v[k].lo = lo;
      if (hi < v[k].hi) v[k].hi = hi;
    }
    for (size_t k = e - 1; k > s; k--) { /* backward */
      double dt = (double)(v[k].gpu_end - v[k - 1].gpu_end);
      uint64_t lo = v[k].lo - lens_f2u64(dt * hi_rate) - 1, hi = v[k].hi - lens_f2u64(dt * lo_rate);
      if (lo > v[k - 1].lo) v[k - 1].lo = lo;
      if (hi < v[k - 1].hi) v[k - 1].hi = hi;
    }
    s = e;
  }
  size_t closed = 0;
  for (size_t k = 0; k < n; k++) closed += v[k].lo > v[k].hi;
  return closed;
}

/* The least (mapped kernel start - launch start) per clock map over the
 * ranks given (lens_align_map_slack's rule, from the map's own ranks). */
static int64_t *map_slack_of(const struct lens_model *m, struct lens_job_rank *ranks, size_t n, size_t stride,
                             const struct lens_align_gpu *gpu) {
  int64_t *b = malloc((m->n_clock_maps + 1) * sizeof *b);
  if (!b) return NULL;
  for (size_t i = 0; i <= m->n_clock_maps; i++) b[i] = INT64_MAX;
  for (size_t k = 0; k < n; k++) {
    const struct lens_job_rank *r = (const struct lens_job_rank *)((const char *)ranks + k * stride);
    if (!r->launch_start_ns || !gpu[k].t) continue;
    uint64_t s = gpu[k].s;
    int32_t th = gpu[k].thread;
    int32_t mi = lens_gpu_map_for(m, th, s);
    if (mi < 0 || (size_t)mi >= m->n_clock_maps || s < m->clock_maps[mi].gpu_from || s > m->clock_maps[mi].gpu_to)
      continue;
    int64_t d = lens_u64_diff(lens_gpu_map_ns(m, mi, s), r->launch_start_ns);
    if (d < 0) d = 0;
    if (d < b[mi]) b[mi] = d;
  }
  return b;
}

long lens_align_bracket_ranks(const struct lens_model *m, struct lens_job_rank *ranks, size_t n, size_t stride,
                              const struct lens_align_gpu *gpu) {
  struct lens_align_end *v = malloc((n + 1) * sizeof *v);
  int64_t *slack = map_slack_of(m, ranks, n, stride, gpu);
  if (!v || !slack) return free(v), free(slack), -1;
  size_t ne = 0;
  long closed = 0;
  for (size_t k = 0; k < n; k++) {
    struct lens_job_rank *r = (struct lens_job_rank *)((char *)ranks + k * stride);
    r->end_lo_ns = r->end_hi_ns = 0;
    struct lens_align_end x = {.inst = k};
    if (lens_align_rank_end(m, r, &gpu[k], slack, &x)) continue;
    if (x.lo > x.hi) { /* its own bounds contradict: a rule they rest on was broken here */
      r->end_lo_ns = 1, r->end_hi_ns = 0, closed++;
      continue;
    }
    v[ne++] = x;
  }
  closed += (long)lens_align_propagate(v, ne, LENS_ALIGN_GPU_RATE_PPM);
  for (size_t i = 0; i < ne; i++) { /* lo > hi stays: a bracket that closed is left out, and counted */
    struct lens_job_rank *r = (struct lens_job_rank *)((char *)ranks + v[i].inst * stride);
    r->end_lo_ns = v[i].lo > v[i].hi ? 1 : v[i].lo;
    r->end_hi_ns = v[i].lo > v[i].hi ? 0 : v[i].hi;
  }
  free(v);
  free(slack);
  return closed;
}
