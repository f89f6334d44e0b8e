/* GPU clock maps: host_mono = offset + slope * pTimer, per GPU (a GPU = the
 * proxy thread that reports its KernelCh), refitted in windows of GPU time
 * because drift reaches tens of ppm.
 *
 * With CUPTI: each kernel joined to a launch bounds its channels' timers:
 * kernel start <= host(min channel start) and host(max channel stop) <=
 * kernel end. The slope comes from a least-squares fit of span midpoints
 * (outliers dropped); the offset is the middle of the interval every kept
 * kernel allows, and half that interval is the error bound.
 * Without CUPTI: NCCL reports each timer only when its proxy thread polls,
 * so host notice - pTimer >= true offset. The minimum-delay filter (NTP):
 * slope from the minima of sub-windows, offset = the line just under every
 * point (lower envelope). Its bias is the smallest polling delay seen.
 *
 * Precision: pTimers are ~1.7e18 ns and doubles hold 53 bits, so all
 * arithmetic is on differences from a reference point, in long double. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_kch.h"
#include "gpu_state.h"

struct pt {
  uint64_t x0, x1; /* GPU: CUPTI: min start / max stop; notice: pTimer (x1 = x0) */
  uint64_t y0, y1; /* host: CUPTI: kernel start / end; notice: notice time (y1 = y0) */
  int drop;
};

struct fit {
  uint64_t ref_gpu, ref_host;
  long double a, b;
  double residual, bound;
  uint32_t n;
  int slope_fixed;
};

static long double dx(uint64_t x, uint64_t ref) { return (long double)(int64_t)(x - ref); }

/* Least squares y = a + b x over points (midpoints), x/y relative to refs. */
static void least_squares(const struct pt *p, size_t n, struct fit *f, long double *a, long double *b) {
  long double sx = 0, sy = 0, sxx = 0, sxy = 0, k = 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < n; i++)
    if (!p[i].drop) {
      if (p[i].x0 < lo) lo = p[i].x0;
      if (p[i].x1 > hi) hi = p[i].x1;
    }
  int short_span = hi <= lo || hi - lo < LENS_GPU_MIN_SLOPE_SPAN_NS;
  for (size_t i = 0; i < n; i++) {
    if (p[i].drop) continue;
    long double x = (dx(p[i].x0, f->ref_gpu) + dx(p[i].x1, f->ref_gpu)) / 2;
    long double y = (dx(p[i].y0, f->ref_host) + dx(p[i].y1, f->ref_host)) / 2;
    sx += x, sy += y, sxx += x * x, sxy += x * y, k++;
  }
  long double den = k * sxx - sx * sx;
  *b = (k >= 2 && den > 0 && !short_span) ? (k * sxy - sx * sy) / den : 1.0L;
  /* A slope far from 1 means bad data, not a clock: keep 1. */
  if (fabsl(*b - 1.0L) > 1e-3L) *b = 1.0L;
  f->slope_fixed = *b == 1.0L;
  *a = k > 0 ? (sy - *b * sx) / k : 0;
}

static long double resid(const struct pt *p, const struct fit *f, long double a, long double b) {
  long double x = (dx(p->x0, f->ref_gpu) + dx(p->x1, f->ref_gpu)) / 2;
  long double y = (dx(p->y0, f->ref_host) + dx(p->y1, f->ref_host)) / 2;
  return y - (a + b * x);
}

static int cmp_ld(const void *pa, const void *pb) {
  long double a = *(const long double *)pa, b = *(const long double *)pb;
  return (a > b) - (a < b);
}

static void fit_cupti(struct pt *p, size_t n, struct fit *f) {
  long double a, b;
  least_squares(p, n, f, &a, &b);
  /* Drop outliers (a channel outside its kernel, a ring overrun): beyond 5x
   * the median absolute residual, then refit. */
  long double *r = malloc(n * sizeof(*r));
  if (r) {
    for (size_t i = 0; i < n; i++) r[i] = fabsl(resid(&p[i], f, a, b));
    qsort(r, n, sizeof(*r), cmp_ld);
    long double lim = 5 * r[n / 2] + 100; /* +100 ns: timer quantisation */
    for (size_t i = 0; i < n; i++) p[i].drop = fabsl(resid(&p[i], f, a, b)) > lim;
    free(r);
    least_squares(p, n, f, &a, &b);
  }
  long double lo = -INFINITY, hi = INFINITY, ss = 0;
  uint32_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i].drop) continue;
    long double l = dx(p[i].y0, f->ref_host) - b * dx(p[i].x0, f->ref_gpu);
    long double h = dx(p[i].y1, f->ref_host) - b * dx(p[i].x1, f->ref_gpu);
    if (l > lo) lo = l;
    if (h < hi) hi = h;
    long double e = resid(&p[i], f, a, b);
    ss += e * e;
    k++;
  }
  f->a = a;
  f->b = b;
  f->n = k;
  f->residual = k ? (double)sqrtl(ss / k) : 0;
  if (lo <= hi) { /* every kernel agrees: take the middle of what they allow */
    f->a = (lo + hi) / 2;
    f->bound = (double)((hi - lo) / 2);
  } else {
    f->bound = (double)(lo - hi) + f->residual; /* inconsistent bounds: say how far */
  }
}

/* Without CUPTI: the line under every (pTimer, notice) point that is as
 * high as possible on average - the linear program of Moon, Skelly and
 * Towsley (skew estimation from one-way delays). Its optimum lies on the
 * lower convex hull, on the edge spanning the mean pTimer. Points arrive
 * sorted by pTimer. */
#define LENS_GPU_MAX_NOTICE_DRIFT 200e-6L

static void fit_notice(struct pt *p, size_t n, struct fit *f) {
  long double *hx = malloc(n * sizeof(*hx)), *hy = malloc(n * sizeof(*hy));
  size_t h = 0;
  long double mean_x = 0;
  if (hx && hy)
    for (size_t i = 0; i < n; i++) {
      long double x = dx(p[i].x0, f->ref_gpu), y = dx(p[i].y0, f->ref_host);
      mean_x += x / n;
      if (h && x == hx[h - 1]) { /* same pTimer: keep the earliest notice */
        if (y < hy[h - 1]) hy[h - 1] = y;
        else continue;
        while (h >= 3 && (hx[h - 2] - hx[h - 3]) * (hy[h - 1] - hy[h - 3]) -
                                 (hy[h - 2] - hy[h - 3]) * (hx[h - 1] - hx[h - 3]) <= 0) {
          hx[h - 2] = hx[h - 1], hy[h - 2] = hy[h - 1];
          h--;
        }
        continue;
      }
      while (h >= 2 && (hx[h - 1] - hx[h - 2]) * (y - hy[h - 2]) - (hy[h - 1] - hy[h - 2]) * (x - hx[h - 2]) <= 0) h--;
      hx[h] = x, hy[h] = y, h++;
    }
  long double b = 1.0L;
  uint64_t span = p[n - 1].x0 - p[0].x0;
  if (h >= 2 && span >= LENS_GPU_MIN_SLOPE_SPAN_NS) {
    size_t j = 0;
    while (j + 2 < h && hx[j + 1] < mean_x) j++;
    b = (hy[j + 1] - hy[j]) / (hx[j + 1] - hx[j]);
    /* A local hull edge can be steep when few notices are quick: beyond
     * what GPU clocks drift (tens of ppm) it says nothing; keep 1. */
    if (fabsl(b - 1.0L) > LENS_GPU_MAX_NOTICE_DRIFT) b = 1.0L;
  }
  free(hx);
  free(hy);
  /* Lower envelope for that slope: the line under every point. */
  long double lo = INFINITY;
  for (size_t i = 0; i < n; i++) {
    long double d = dx(p[i].y0, f->ref_host) - b * dx(p[i].x0, f->ref_gpu);
    if (d < lo) lo = d;
  }
  /* Two spreads of the least delays above the line, over 16 slices each.
   * Of host (notice) time: how much the proxy's best polling delay varies
   * over the window, the fit's residual. Of points, i.e. of GPU time: how
   * well each stretch of GPU time is pinned by a prompt notice. A proxy held
   * back notices a burst of items that the GPU ran over milliseconds: their
   * stretch of GPU time is pinned only by late notices, a slope or step
   * there would go unseen, so that spread (the stall: 12 ms in the overrun
   * scenario, for a map 65 us late) is the error bound, and not the
   * residual. The job view takes the bound as how far two GPUs' maps may
   * disagree. */
  long double by_time = 0, by_points = 0, mins[16];
  uint64_t ylo = UINT64_MAX, yhi = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i].y0 < ylo) ylo = p[i].y0;
    if (p[i].y0 > yhi) yhi = p[i].y0;
  }
  for (size_t k = 0; k < 16; k++) mins[k] = INFINITY;
  for (size_t i = 0; i < n; i++) {
    size_t k = (size_t)((long double)(p[i].y0 - ylo) * 16 / ((long double)(yhi - ylo) + 1));
    long double d = dx(p[i].y0, f->ref_host) - b * dx(p[i].x0, f->ref_gpu) - lo;
    if (k < 16 && d < mins[k]) mins[k] = d;
  }
  for (size_t k = 0; k < 16; k++)
    if (mins[k] > by_time && mins[k] < INFINITY) by_time = mins[k];
  size_t slices = n < 16 ? n : 16;
  for (size_t k = 0; k < slices; k++) {
    long double mn = INFINITY;
    for (size_t i = k * n / slices; i < (k + 1) * n / slices; i++) {
      long double d = dx(p[i].y0, f->ref_host) - b * dx(p[i].x0, f->ref_gpu) - lo;
      if (d < mn) mn = d;
    }
    if (mn > by_points && mn < INFINITY) by_points = mn;
  }
  f->a = lo;
  f->b = b;
  f->n = (uint32_t)n;
  f->slope_fixed = b == 1.0L;
  f->residual = (double)by_time;
  /* plus the unknown least polling delay (a positive bias) */
  f->bound = (double)(by_points > by_time ? by_points : by_time);
}

static int cmp_pt(const void *pa, const void *pb) {
  const struct pt *a = pa, *b = pb;
  return (a->x0 > b->x0) - (a->x0 < b->x0);
}

static int add_pt(struct pt **v, size_t *n, size_t *cap, struct pt p) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 256;
    struct pt *nv = realloc(*v, c * sizeof(*nv));
    if (!nv) return -1;
    *v = nv;
    *cap = c;
  }
  (*v)[(*n)++] = p;
  return 0;
}

/* Timers NCCL reported that are usable for fitting (not obviously broken). */
static int timers_usable(uint64_t s, uint64_t t) { return s && (!t || t >= s); }
static int kch_usable(const struct lens_event *e) {
  return timers_usable(e->p.kernel_ch.start_gpu_ns, e->p.kernel_ch.stop_gpu_ns);
}

/* A channel that lasts longer than its kernel cannot be inside it, at any
 * offset: the join (or the record) is wrong. Slack: timer ticks, and clocks
 * that drift by up to 100 ppm against each other. */
int lens_gpu_kch_longer_than_kernel(const struct lens_event *e, const struct lens_kernel *k) {
  uint64_t s = e->p.kernel_ch.start_gpu_ns, t = e->p.kernel_ch.stop_gpu_ns;
  if (!t || t < s || k->end_mono_ns < k->start_mono_ns) return 0;
  uint64_t gpu = t - s, host = k->end_mono_ns - k->start_mono_ns;
  return gpu > host + 100 + gpu / 10000;
}

/* CUPTI points of one proxy thread: one per (kernel, thread). A kernel
 * shorter than one of its channels is flagged (LENS_GPU_K_CONTRADICT) and
 * kept out: absorbed into the fit it would only widen every channel's bound. */
/* What a fit reads, listed once per model rather than found by scanning
 * every event for every proxy thread (that scan was quadratic: a model of 8
 * processes spent more time in it than in loading). In event order. */
struct fit_index {
  const struct lens_gpu_kch *rows;  /* the KernelCh table */
  const uint8_t *ex_ev;             /* rows' ex by event, for the CUPTI points (NULL without launches) */
  int32_t *launch; size_t n_launch; /* KernelLaunch events joined to a CUPTI kernel */
  int32_t *kch; size_t *first;      /* rows of thread t: kch[first[t] .. first[t + 1]) */
};

static int cupti_points(const struct lens_model *m, struct lens_gpu_report *r, int32_t thread,
                        const struct fit_index *fx, struct pt **v, size_t *n, size_t *cap) {
  const uint8_t *ex = fx->ex_ev;
  for (size_t li = 0; li < fx->n_launch; li++) {
    size_t i = (size_t)fx->launch[li];
    const struct lens_event *l = &m->events[i];
    const struct lens_kernel *k = &m->kernels[l->acc.cupti_kernel];
    if (k->graph_id || !k->start_mono_ns || k->end_mono_ns < k->start_mono_ns) continue;
    struct pt p = {UINT64_MAX, 0, k->start_mono_ns, k->end_mono_ns, 0};
    int contradict = 0;
    for (int32_t op = lens_gpu_next_op_of_launch(m, (int32_t)i, -1); op >= 0;
         op = lens_gpu_next_op_of_launch(m, (int32_t)i, op))
      for (int32_t c = m->events[op].first_child; c >= 0; c = m->events[c].next_sibling) {
        const struct lens_event *e = &m->events[c];
        if (e->type != LENS_T_KERNEL_CH || e->thread != thread || !kch_usable(e) || !e->p.kernel_ch.stop_gpu_ns ||
            (ex && ex[c]))
          continue;
        contradict |= lens_gpu_kch_longer_than_kernel(e, k);
        if (e->p.kernel_ch.start_gpu_ns < p.x0) p.x0 = e->p.kernel_ch.start_gpu_ns;
        if (e->p.kernel_ch.stop_gpu_ns > p.x1) p.x1 = e->p.kernel_ch.stop_gpu_ns;
      }
    if (p.x1 && contradict) {
      if (r->kernel_flags && !(r->kernel_flags[l->acc.cupti_kernel] & LENS_GPU_K_CONTRADICT)) {
        r->kernel_flags[l->acc.cupti_kernel] |= LENS_GPU_K_CONTRADICT;
        r->kernels_contradict++;
      }
      continue;
    }
    if (p.x1 && add_pt(v, n, cap, p)) return -1;
  }
  return 0;
}

static int notice_points(int32_t thread, const struct fit_index *fx, struct pt **v, size_t *n, size_t *cap) {
  for (size_t q = fx->first[thread]; q < fx->first[thread + 1]; q++) {
    const struct lens_gpu_kch *k = &fx->rows[fx->kch[q]];
    uint64_t s = k->start_gpu, t = k->stop_gpu;
    if (!timers_usable(s, t) || k->ex == LENS_GPU_EX_SUSPECT) continue;
    if (add_pt(v, n, cap, (struct pt){s, s, k->start_notice, k->start_notice, 0})) return -1;
    if (t && k->stop_notice && add_pt(v, n, cap, (struct pt){t, t, k->stop_notice, k->stop_notice, 0})) return -1;
  }
  return 0;
}

static int emit(struct lens_model *m, struct lens_gpu_report *r, int32_t thread, uint32_t source,
                const struct fit *f, uint64_t from, uint64_t to) {
  struct lens_clock_map *cm = realloc(m->clock_maps, (m->n_clock_maps + 1) * sizeof(*cm));
  if (!cm) return -1;
  m->clock_maps = cm;
  struct lens_gpu_seg *sg = realloc(r->segs, (r->n_segs + 1) * sizeof(*sg));
  if (!sg) return -1;
  r->segs = sg;
  const struct lens_thread *t = &m->threads[thread];
  struct lens_clock_map *c = &m->clock_maps[m->n_clock_maps];
  memset(c, 0, sizeof(*c));
  c->proc = t->proc;
  c->thread = thread;
  c->rank = t->proxy_rank;
  c->gpu_from = from;
  c->gpu_to = to;
  c->slope = (double)f->b;
  c->offset_ns = (double)((long double)f->ref_host + f->a - f->b * (long double)f->ref_gpu);
  c->residual_ns = f->residual;
  c->error_bound_ns = f->bound;
  c->n_points = f->n;
  c->source = source;
  r->segs[r->n_segs] = (struct lens_gpu_seg){(int32_t)m->n_clock_maps, f->ref_gpu, f->ref_host, f->a, f->b, f->slope_fixed};
  m->n_clock_maps++;
  r->n_segs++;
  return 0;
}

/* Fewest points for a window of its own; smaller tails join the previous. */
#define MIN_POINTS 8

static int fit_thread(struct lens_model *m, struct lens_gpu_report *r, int32_t thread, const struct fit_index *fx) {
  struct pt *v = NULL;
  size_t n = 0, cap = 0;
  uint32_t source = LENS_TS_CUPTI;
  if (cupti_points(m, r, thread, fx, &v, &n, &cap)) goto oom;
  /* One joined kernel is enough: its bounds fix the offset (slope held at 1,
   * least_squares keeps 1 for a single point) within the room it leaves
   * around its channels, far tighter than notice times. */
  if (n < 1) { /* no joined kernel: fall back to notice times */
    n = 0;
    source = LENS_TS_GPU_PTIMER;
    if (notice_points(thread, fx, &v, &n, &cap)) goto oom;
  }
  if (n == 0) {
    free(v);
    return 0;
  }
  qsort(v, n, sizeof(*v), cmp_pt);
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && (v[j].x0 - v[i].x0 < LENS_GPU_FIT_WINDOW_NS || j - i < MIN_POINTS)) j++;
    if (n - j < MIN_POINTS) j = n; /* no short last window */
    struct fit f = {.ref_gpu = v[i].x0, .ref_host = v[i].y0};
    if (source == LENS_TS_CUPTI) fit_cupti(v + i, j - i, &f);
    else fit_notice(v + i, j - i, &f);
    uint64_t to = v[j - 1].x1 > v[j - 1].x0 ? v[j - 1].x1 : v[j - 1].x0;
    if (emit(m, r, thread, source, &f, v[i].x0, to)) goto oom;
    i = j;
  }
  free(v);
  return 0;
oom:
  free(v);
  return -1;
}

int lens_gpu_fit_clocks(struct lens_model *m, struct lens_gpu_report *r, const struct lens_gpu_kch_table *t,
                        char *err, size_t err_len) {
  struct fit_index fx = {.rows = t->v};
  uint8_t *ex_ev = NULL;
  size_t nt = m->n_threads, nk = 0;
  fx.first = calloc(nt + 2, sizeof *fx.first);
  if (!fx.first) goto oom;
  for (size_t q = 0; q < t->n; q++)
    if (t->v[q].thread >= 0 && (size_t)t->v[q].thread < nt) fx.first[t->v[q].thread + 2]++, nk++;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type == LENS_T_KERNEL_LAUNCH && e->acc.cupti_kernel >= 0) fx.n_launch++;
  }
  fx.kch = malloc((nk ? nk : 1) * sizeof *fx.kch);
  fx.launch = malloc((fx.n_launch ? fx.n_launch : 1) * sizeof *fx.launch);
  if (!fx.kch || !fx.launch) goto oom;
  if (fx.n_launch) { /* the CUPTI points walk a launch's KernelCh events: their rows' ex by event */
    if (!(ex_ev = calloc(m->n_events + 1, 1))) goto oom;
    for (size_t q = 0; q < t->n; q++)
      if (t->v[q].ev >= 0) ex_ev[t->v[q].ev] = t->v[q].ex;
    fx.ex_ev = ex_ev;
  }
  for (size_t k = 0; k < nt; k++) fx.first[k + 2] += fx.first[k + 1]; /* first[k + 1]: start of thread k's list */
  for (size_t q = 0; q < t->n; q++)
    if (t->v[q].thread >= 0 && (size_t)t->v[q].thread < nt) fx.kch[fx.first[t->v[q].thread + 1]++] = (int32_t)q;
  fx.n_launch = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type == LENS_T_KERNEL_LAUNCH && e->acc.cupti_kernel >= 0) fx.launch[fx.n_launch++] = (int32_t)i;
  }
  /* now first[k] .. first[k + 1] is thread k's list */
  for (size_t k = 0; k < nt; k++)
    if (fx.first[k + 1] > fx.first[k] && fit_thread(m, r, (int32_t)k, &fx)) goto oom;
  free(fx.first), free(fx.kch), free(fx.launch), free(ex_ev);
  return 0;
oom:
  free(fx.first), free(fx.kch), free(fx.launch), free(ex_ev);
  snprintf(err, err_len, "out of memory fitting clock maps");
  return -1;
}

/* A thread's maps are contiguous and in GPU-time order (fit_thread emits
 * them so): find the run, then binary search it. */
int32_t lens_gpu_map_for(const struct lens_model *m, int32_t thread, uint64_t gpu_ns) {
  size_t lo = 0, hi = m->n_clock_maps;
  while (lo < hi) { /* first map of this thread (maps are emitted by ascending thread) */
    size_t mid = (lo + hi) / 2;
    if (m->clock_maps[mid].thread < thread) lo = mid + 1;
    else hi = mid;
  }
  size_t first = lo, end = first;
  hi = m->n_clock_maps;
  while (end < hi) { /* one past the last */
    size_t mid = (end + hi) / 2;
    if (m->clock_maps[mid].thread <= thread) end = mid + 1;
    else hi = mid;
  }
  if (first == end || m->clock_maps[first].thread != thread) return -1;
  lo = first, hi = end; /* last map with gpu_from <= gpu_ns */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (m->clock_maps[mid].gpu_from <= gpu_ns) lo = mid;
    else hi = mid;
  }
  /* Between two maps: the nearer one. */
  if (lo + 1 < end && gpu_ns > m->clock_maps[lo].gpu_to &&
      m->clock_maps[lo + 1].gpu_from - gpu_ns < gpu_ns - m->clock_maps[lo].gpu_to)
    lo++;
  return (int32_t)lo;
}

uint64_t lens_gpu_map_ns(const struct lens_model *m, int32_t map_index, uint64_t gpu_ns) {
  return lens_gpu_report_map_ns(lens_gpu_report_get(m), map_index, gpu_ns);
}

uint64_t lens_gpu_report_map_ns(const struct lens_gpu_report *r, int32_t map_index, uint64_t gpu_ns) {
  if (!r || map_index < 0 || (size_t)map_index >= r->n_segs) return 0;
  const struct lens_gpu_seg *s = &r->segs[map_index];
  long double h = s->a + s->b * dx(gpu_ns, s->ref_gpu);
  return s->ref_host + (uint64_t)(int64_t)llroundl(h);
}

int lens_gpu_notice_lag_known(const struct lens_model *m, const struct lens_event *e) {
  if (e->type != LENS_T_KERNEL_CH || e->acc.time_source == LENS_TS_HOST_NOTICE) return 0;
  if (e->acc.notice_lag_ns) return 1;
  /* lens_gpu_flag's notice: a lag of 0 is known when the notice is there */
  return (e->p.kernel_ch.stop_gpu_ns ? lens_gpu_kch_stop_notice(m, e) : e->start_mono_ns) != 0;
}

uint64_t lens_gpu_kch_stop_notice(const struct lens_model *m, const struct lens_event *e) {
  for (uint32_t i = 0; i < e->n_states; i++) {
    const struct lens_state_ev *s = &m->states[e->first_state + i];
    if (lens_gpu_stop_state(LENS_T_KERNEL_CH, s->state)) return s->ts_mono_ns;
  }
  return e->stop_mono_ns;
}
