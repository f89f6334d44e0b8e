/* See kineto_match.h. */
#include "export/kineto_match.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/gpu/gpu_analysis.h"

#define KM_TOL_MIN_NS 3000.0    /* the tolerance is 8 x the spread, within these */
#define KM_TOL_MAX_NS 100000.0
#define KM_SLOPE_SPAN_NS 50000000LL /* below this span a drift cannot be told from noise: slope 0 */
#define KM_CANDIDATES 128           /* first guesses tried per stream pair (seq_match) */
#define KM_AFTER_CALL 6             /* ... of which, per sample launch, the first kernels after its call */
#define KM_SCREEN 16                 /* of which the best by a first round go through every round */
#define KM_CAUSAL_TOL_NS 200000.0   /* a kernel starts after its launch call: both on REALTIME, within this */

int64_t km_to_kineto(const struct km_result *r, int64_t mono_ns) { return mono_ns + r->c_ns - r->base_ns; }

int64_t km_fit_to_kineto(const struct km_fit *f, int64_t x) {
  long double dx = (long double)(x - f->x0);
  return f->y0 + (int64_t)llroundl(dx + (long double)f->slope * dx);
}

int64_t km_launch_x(const struct km_launch *l, const struct km_fit *f) { return f->on_gpu ? l->g_start : l->start; }

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int32_t in_procs(const int32_t *procs, size_t n, int32_t p) {
  for (size_t i = 0; i < n; i++)
    if (procs[i] == p) return 1;
  return 0;
}

/* REALTIME - MONOTONIC of the process: the median of its CLOCK samples. */
static void coarse_offset(const struct lens_model *m, const int32_t *procs, size_t n_procs, struct km_result *r) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_clocks; i++) n += in_procs(procs, n_procs, m->clocks[i].proc);
  int64_t *v = n ? malloc(n * sizeof *v) : NULL;
  size_t k = 0;
  for (size_t i = 0; v && i < m->n_clocks; i++) {
    const struct lens_clock_rec *c = &m->clocks[i].r;
    if (!in_procs(procs, n_procs, m->clocks[i].proc) || !c->real_ns || c->mono_after_ns < c->mono_before_ns) continue;
    v[k++] = (int64_t)c->real_ns - (int64_t)(c->mono_before_ns + (c->mono_after_ns - c->mono_before_ns) / 2);
  }
  if (k) {
    if (k) qsort(v, k, sizeof *v, cmp_i64);
    r->c_ns = v[k / 2];
    r->c_source = "CLOCK chunks";
    r->c_spread_ns = (double)(v[k - 1] - v[0]);
  } else {
    const struct lens_proc *p = &m->procs[procs[0]];
    r->c_ns = (int64_t)p->start_real_ns - (int64_t)p->start_mono_ns;
    r->c_source = "session start";
  }
  free(v);
}

int km_kch_timed(const struct lens_event *e) {
  const uint32_t suspect = LENS_ACC_STOP_BEFORE_START | LENS_ACC_RING_OVERRUN | LENS_ACC_NON_MONOTONIC;
  return e->type == LENS_T_KERNEL_CH && e->p.kernel_ch.start_gpu_ns &&
         e->p.kernel_ch.stop_gpu_ns >= e->p.kernel_ch.start_gpu_ns && !(e->acc.flags & suspect);
}

/* The GPU span of a launch: its CUPTI kernel, else its channels (mapped). */
static int launch_span(const struct lens_model *m, int32_t li, struct km_launch *l) {
  const struct lens_event *e = &m->events[li];
  l->corr = l->dev = l->cstream = -1;
  if (e->acc.cupti_kernel >= 0 && (size_t)e->acc.cupti_kernel < m->n_kernels) {
    const struct lens_kernel *k = &m->kernels[e->acc.cupti_kernel];
    l->corr = k->correlation_id, l->dev = k->device_id, l->cstream = k->stream_id;
    if (k->start_mono_ns && k->end_mono_ns >= k->start_mono_ns)
      l->start = (int64_t)k->start_mono_ns, l->end = (int64_t)k->end_mono_ns, l->src = KM_SRC_CUPTI;
  }
  uint64_t lo = UINT64_MAX, hi = 0, glo = UINT64_MAX, ghi = 0;
  for (int32_t op = lens_gpu_next_op_of_launch(m, li, -1); op >= 0; op = lens_gpu_next_op_of_launch(m, li, op))
    for (int32_t c = m->events[op].first_child; c >= 0; c = m->events[c].next_sibling) {
      const struct lens_event *x = &m->events[c];
      if (!km_kch_timed(x)) continue;
      if (x->p.kernel_ch.start_gpu_ns < glo) glo = x->p.kernel_ch.start_gpu_ns;
      if (x->p.kernel_ch.stop_gpu_ns > ghi) ghi = x->p.kernel_ch.stop_gpu_ns;
      if (!x->acc.gpu_start_mono_ns || x->acc.gpu_stop_mono_ns < x->acc.gpu_start_mono_ns) continue;
      if (x->acc.gpu_start_mono_ns < lo) lo = x->acc.gpu_start_mono_ns;
      if (x->acc.gpu_stop_mono_ns > hi) hi = x->acc.gpu_stop_mono_ns;
    }
  if (ghi) l->g_start = (int64_t)glo, l->g_end = (int64_t)ghi;
  if (l->src == KM_SRC_CUPTI) return 1;
  if (!hi) return 0;
  l->start = (int64_t)lo, l->end = (int64_t)hi, l->src = KM_SRC_CHANNELS;
  return 1;
}

/* ---- the fit ---- */

/* y (Kineto ns) against x (our domain) over n pairs: y = y0 + (x - x0) (1 +
 * slope), the slope only over a long enough span. Robust first (a few wrong
 * first-round pairs, a kernel off, must not tilt it: least squares would let
 * 2 % of pairs a millisecond off move the far end by tens of microseconds):
 * the median slope of pairs half the run apart (Theil-Sen on n/2 pairs),
 * the offset at x0 the median of what the slope leaves; then least squares
 * over the pairs that line keeps (within 5 robust spreads). residual: the
 * robust spread of what is left; *maxres: the largest (over every pair). */
/* the comparator's array: one per thread (export --format kineto merges files on several) */
static _Thread_local const int64_t *g_fx;
static int by_fx(const void *a, const void *b) {
  int64_t x = g_fx[*(const size_t *)a], y = g_fx[*(const size_t *)b];
  return x < y ? -1 : x > y;
}

/* residual of pair i against the line through (x[0], y[0]) with this slope */
static double left(const int64_t *x, const int64_t *y, size_t i, double slope) {
  long double dx = (long double)(x[i] - x[0]);
  return (double)((long double)(y[i] - y[0]) - dx - (long double)slope * dx);
}

static void fit_line(const int64_t *x, const int64_t *y, size_t n, struct km_fit *f, double *maxres) {
  f->pairs = n;
  f->slope = 0, f->residual_ns = 0, f->x0 = n ? x[0] : 0, f->y0 = n ? y[0] : 0;
  *maxres = 0;
  if (!n) return;
  double *res = malloc(n * sizeof *res);
  size_t *ix = malloc(n * sizeof *ix);
  if (!res || !ix) {
    free(res), free(ix);
    return;
  }
  for (size_t i = 0; i < n; i++) ix[i] = i;
  g_fx = x;
  if (n) qsort(ix, n, sizeof *ix, by_fx);
  int64_t span = x[ix[n - 1]] - x[ix[0]];
  if (span >= KM_SLOPE_SPAN_NS && n >= 4) {
    size_t h = n / 2, k = 0;
    for (size_t i = 0; i < h; i++) {
      int64_t a = (int64_t)ix[i], b = (int64_t)ix[i + h];
      int64_t dx = x[b] - x[a];
      if (dx <= 0) continue;
      res[k++] = (double)((y[b] - y[a]) - dx) / (double)dx;
    }
    if (k) {
      if (k) qsort(res, k, sizeof *res, cmp_dbl);
      f->slope = res[k / 2];
    }
  }
  long double sx = 0;
  for (size_t i = 0; i < n; i++) sx += (long double)(x[i] - x[0]);
  f->x0 = x[0] + (int64_t)llroundl(sx / n);
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < n; i++) res[i] = left(x, y, i, f->slope);
    if (n) qsort(res, n, sizeof *res, cmp_dbl);
    double med = res[n / 2];
    for (size_t i = 0; i < n; i++) res[i] = fabs(res[i] - med);
    if (n) qsort(res, n, sizeof *res, cmp_dbl);
    double keep = 5 * 1.4826 * res[n / 2] + 100.0;
    if (pass || span < KM_SLOPE_SPAN_NS || n < 4) break;
    /* least squares over the pairs this line keeps */
    long double sxk = 0, sdk = 0, cxx = 0, cxd = 0;
    size_t nk = 0;
    for (size_t i = 0; i < n; i++)
      if (fabs(left(x, y, i, f->slope) - med) <= keep) {
        sxk += (long double)(x[i] - x[0]), sdk += (long double)((y[i] - y[0]) - (x[i] - x[0])), nk++;
      }
    if (nk < 3) break;
    long double mxk = sxk / nk, mdk = sdk / nk;
    double b = f->slope;
    for (size_t i = 0; i < n; i++)
      if (fabs(left(x, y, i, b) - med) <= keep) {
        long double dx = (long double)(x[i] - x[0]) - mxk, dd = (long double)((y[i] - y[0]) - (x[i] - x[0])) - mdk;
        cxx += dx * dx, cxd += dx * dd;
      }
    if (cxx > 0) f->slope = (double)(cxd / cxx);
  }
  for (size_t i = 0; i < n; i++) res[i] = left(x, y, i, f->slope);
  if (n) qsort(res, n, sizeof *res, cmp_dbl);
  double med = res[n / 2];
  long double dx0 = (long double)(f->x0 - x[0]);
  f->y0 = y[0] + (int64_t)llroundl(dx0 + (long double)f->slope * dx0 + med);
  for (size_t i = 0; i < n; i++) {
    double v = fabs(left(x, y, i, f->slope) - med);
    if (v > *maxres) *maxres = v;
    res[i] = v;
  }
  if (n) qsort(res, n, sizeof *res, cmp_dbl);
  f->residual_ns = 1.4826 * res[n / 2];
  free(res), free(ix);
}

/* What the host clock alone says of a (launch, kernel) pair, on REALTIME on
 * both sides (no GPU mapping in it): the kernel started after the launch was
 * called. (That a launch's proxy ops overlap its kernel would be evidence
 * too, but a ProxyOp's start is when the proxy noticed it, which a starved
 * proxy does after the kernel ended; not used.) */
static int host_plausible(const struct km_result *r, const struct km_launch *a, const struct kj_kernel *k) {
  return (double)k->ts_ns >= (double)(a->call + r->c_ns - r->base_ns) - KM_CAUSAL_TOL_NS;
}

/* ---- order and time, one pair of streams ---- */

struct seq {
  const struct lens_model *m;
  const struct kj_scan *s;
  struct km_result *r;
  const int32_t *L;
  size_t nl; /* launches (indexes into r->l), by start */
  const int32_t *K;
  size_t nk; /* kernels (indexes into s->k), by ts */
  int gpu;   /* most launches have raw GPU times: fit on them (the others stay unmatched) */
};

/* A launch's start (end 0) or end (1) on the Kineto file's time under fit f. */
static int64_t pred(const struct km_fit *f, const struct km_launch *a, int end) {
  int64_t x = f->on_gpu ? (end ? a->g_end : a->g_start) : (end ? a->end : a->start);
  return km_fit_to_kineto(f, x);
}

/* Our span [ps, pe] (predicted) starts and ends with kernel k, within tol
 * (at the end also 5 % of the kernel: its blocks' exit after the last
 * channel's stop). A launch's channels cover its kernel, so a kernel of
 * another length -- the next one in a loop of different collectives -- is
 * never its. */
static int inside(const struct kj_kernel *k, int64_t ps, int64_t pe, double tol) {
  double kend = (double)(k->ts_ns + k->dur_ns);
  return fabs((double)(ps - k->ts_ns)) <= tol && (double)pe <= kend + tol &&
         (double)pe >= kend - tol - 0.05 * (double)k->dur_ns;
}

/* One pass of matching under fit f: pairs into mi/mj (n returned). */
static size_t seq_pass(const struct seq *q, const struct km_fit *f, double tol, int32_t *mi, int32_t *mj,
                       size_t *ambiguous) {
  size_t i = 0, j = 0, n = 0;
  const struct km_launch *l = q->r->l;
  while (i < q->nl && j < q->nk) {
    const struct km_launch *a = &l[q->L[i]];
    if (a->kk >= 0 || !a->start || (f->on_gpu && !a->g_start)) {
      i++;
      continue;
    }
    if (q->r->kk_launch[q->K[j]] >= 0) {
      j++;
      continue;
    }
    const struct kj_kernel *k = &q->s->k[q->K[j]];
    if ((double)k->ts_ns < (double)(a->call + q->r->c_ns - q->r->base_ns) - KM_CAUSAL_TOL_NS) {
      j++; /* started before this launch was called: not its kernel, nor a later launch's */
      continue;
    }
    int64_t ps = pred(f, a, 0), pe = pred(f, a, 1);
    if (!inside(k, ps, pe, tol)) {
      if ((double)k->ts_ns + tol < (double)ps)
        j++;
      else
        i++;
      continue;
    }
    if (!host_plausible(q->r, a, k)) { /* our GPU times of this launch contradict the host clock: leave it */
      i++;
      continue;
    }
    /* the only candidate both ways: the next kernel cannot hold this launch, the next launch cannot fit this kernel */
    int amb = 0;
    for (size_t j2 = j + 1; j2 < q->nk && !amb; j2++) {
      const struct kj_kernel *k2 = &q->s->k[q->K[j2]];
      if ((double)k2->ts_ns - tol > (double)ps) break;
      amb = q->r->kk_launch[q->K[j2]] < 0 && inside(k2, ps, pe, tol);
    }
    for (size_t i2 = i + 1; i2 < q->nl && !amb; i2++) {
      const struct km_launch *b = &l[q->L[i2]];
      int64_t bs = pred(f, b, 0), be = pred(f, b, 1);
      if ((double)bs - tol > (double)(k->ts_ns + k->dur_ns)) break;
      amb = b->kk < 0 && b->start && (!f->on_gpu || b->g_start) && inside(k, bs, be, tol);
    }
    if (amb) {
      if (ambiguous) (*ambiguous)++;
      i++;
      continue;
    }
    mi[n] = q->L[i], mj[n] = q->K[j], n++;
    i++, j++;
  }
  return n;
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The rounds from a first guess f (on our host clock): match, fit on the
 * GPU's own clock, match again tighter. Pairs in mi/mj, the fit in *f. */
static size_t rounds(const struct seq *q, struct km_fit *f, double tol, int32_t *mi, int32_t *mj, int64_t *x,
                     int64_t *y, size_t *amb) {
  size_t n = 0;
  for (int round = 0; round < 3; round++) {
    *amb = 0;
    n = seq_pass(q, f, tol, mi, mj, amb);
    if (!n) break;
    f->on_gpu = q->gpu;
    for (size_t k = 0; k < n; k++) x[k] = km_launch_x(&q->r->l[mi[k]], f), y[k] = q->s->k[mj[k]].ts_ns;
    double maxres;
    fit_line(x, y, n, f, &maxres);
    tol = clampd(8 * f->residual_ns + 1000.0, KM_TOL_MIN_NS, KM_TOL_MAX_NS);
  }
  return n;
}

/* A first guess: our host time + C - base + delta. */
/* The first of the stream's kernels (in start order) that starts at or after t (file ns); q->nk when none. */
static size_t first_kernel_at(const struct seq *q, int64_t t) {
  size_t lo = 0, hi = q->nk;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (q->s->k[q->K[mid]].ts_ns < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static struct km_fit guess(const struct seq *q, double delta) {
  struct km_fit f = {.on_gpu = 0, .x0 = 0, .y0 = q->r->c_ns - q->r->base_ns + (int64_t)llround(delta)};
  return f;
}

/* Matches one stream pair; commit 0: only counts. Returns the pairs made (or -1 no memory).
 *
 * Our host-clock GPU times can be off by more than the kernels' period (our
 * clock map under a starved proxy), and the kernels of a training loop repeat:
 * an alignment shifted by a whole period fits as well locally. So several
 * first guesses are tried -- the median distance to the nearest kernel, and
 * the offsets that put a few sample launches on each kernel near them --
 * and the one that matches most wins; a kernel never pairs with a launch
 * called after it started (KM_CAUSAL_TOL_NS), which a shift to earlier
 * kernels breaks, and a shift to later ones loses the pairs at the ends.
 * Two different alignments matching as many: the pair is left unmatched.
 * The best alignment off the clocks' line (KM_FIT_RESIDUAL_MAX_NS): left
 * unmatched too, its residual and pairs in *misfit_ns, *misfit_n (may be NULL). */
static long seq_match(const struct seq *q, int commit, double *misfit_ns, size_t *misfit_n) {
  size_t cap = q->nl < q->nk ? q->nl : q->nk;
  if (!cap) return 0;
  int32_t *mi = malloc(cap * sizeof *mi), *mj = malloc(cap * sizeof *mj);
  int32_t *bi = malloc(cap * sizeof *bi), *bj = malloc(cap * sizeof *bj);
  int64_t *x = malloc(cap * sizeof *x), *y = malloc(cap * sizeof *y);
  double *d = malloc(q->nl * sizeof *d);
  double cand[KM_CANDIDATES];
  size_t nc = 0;
  long out = -1;
  if (!mi || !mj || !bi || !bj || !x || !y || !d) goto done;
  /* the median distance from each launch to its nearest kernel */
  size_t nd = 0, with_time = 0;
  for (size_t i = 0; i < q->nl; i++) {
    const struct km_launch *a = &q->r->l[q->L[i]];
    if (a->kk >= 0 || !a->start) continue;
    with_time++;
    int64_t xs = a->start + q->r->c_ns - q->r->base_ns;
    size_t lo = first_kernel_at(q, xs);
    int64_t best = INT64_MAX;
    for (size_t j = lo > 0 ? lo - 1 : 0; j < q->nk && j <= lo; j++) {
      int64_t dd = q->s->k[q->K[j]].ts_ns - xs;
      if (llabs(dd) < llabs(best)) best = dd;
    }
    if (best == INT64_MAX) continue;
    if ((double)llabs(best) < q->r->nearest_ns || q->r->nearest_ns == 0) q->r->nearest_ns = (double)llabs(best);
    if (llabs(best) <= KM_WINDOW_NS) d[nd++] = (double)best;
  }
  out = 0;
  if (!nd) goto done;
  qsort(d, nd, sizeof *d, cmp_dbl);
  double med = d[nd / 2];
  cand[nc++] = med;
  for (size_t i = 0; i < nd; i++) d[i] = fabs(d[i] - med);
  qsort(d, nd, sizeof *d, cmp_dbl);
  double tol = clampd(8 * 1.4826 * d[nd / 2], KM_TOL_MIN_NS, KM_TOL_MAX_NS);
  /* sample launches at a quarter, half and three quarters: each kernel near them is a guess */
  for (int qt = 1; qt <= 3; qt++) {
    size_t want = with_time * (size_t)qt / 4, seen = 0;
    const struct km_launch *a = NULL;
    for (size_t i = 0; i < q->nl && !a; i++) {
      const struct km_launch *c = &q->r->l[q->L[i]];
      if (c->kk < 0 && c->start && seen++ == want) a = c;
    }
    if (!a) continue;
    int64_t xs = a->start + q->r->c_ns - q->r->base_ns;
    size_t lo = first_kernel_at(q, xs);
    /* the first kernels after its launch call: its own, when the stream had no queue (the host clock is
     * exact where our GPU mapping may be far off) */
    int64_t cs = a->call + q->r->c_ns - q->r->base_ns - (int64_t)KM_CAUSAL_TOL_NS;
    size_t c0 = first_kernel_at(q, cs);
    for (size_t j = c0; j < q->nk && j < c0 + KM_AFTER_CALL && nc < KM_CANDIDATES; j++)
      cand[nc++] = (double)(q->s->k[q->K[j]].ts_ns - xs);
    /* nearest first, alternating sides, within the window */
    size_t l = lo, r = lo, per = (KM_CANDIDATES - 1) / 3 - KM_AFTER_CALL;
    for (size_t k = 0; k < per && nc < KM_CANDIDATES; k++) {
      int64_t dl = l > 0 ? xs - q->s->k[q->K[l - 1]].ts_ns : INT64_MAX;
      int64_t dr = r < q->nk ? q->s->k[q->K[r]].ts_ns - xs : INT64_MAX;
      if (dl == INT64_MAX && dr == INT64_MAX) break;
      if (dl <= dr) {
        if (dl > KM_WINDOW_NS) break;
        cand[nc++] = (double)-dl, l--;
      } else {
        if (dr > KM_WINDOW_NS) break;
        cand[nc++] = (double)dr, r++;
      }
    }
  }
  /* screen every guess by its first round; the best few go through all rounds */
  long score[KM_CANDIDATES];
  for (size_t c = 0; c < nc; c++) {
    struct km_fit f = guess(q, cand[c]);
    size_t amb = 0;
    score[c] = (long)seq_pass(q, &f, tol, mi, mj, &amb);
  }
  size_t best_n = 0, amb_best = 0, ties = 0;
  struct km_fit best_f = {0};
  for (int pick = 0; pick < KM_SCREEN; pick++) {
    size_t top = nc;
    for (size_t c = 0; c < nc; c++)
      if (score[c] > 0 && (top == nc || score[c] > score[top])) top = c;
    if (top == nc) break;
    score[top] = -1;
    struct km_fit f = guess(q, cand[top]);
    size_t amb = 0, n = rounds(q, &f, tol, mi, mj, x, y, &amb);
    if (n > best_n) {
      best_n = n, amb_best = amb, best_f = f, ties = 0;
      memcpy(bi, mi, n * sizeof *bi), memcpy(bj, mj, n * sizeof *bj);
    } else if (n == best_n && n && (memcmp(bi, mi, n * sizeof *bi) || memcmp(bj, mj, n * sizeof *bj))) {
      ties++;
    }
  }
  if (ties) { /* two alignments as good: not ours to pick */
    if (commit) q->r->ambiguous += best_n;
    goto done;
  }
  /* the best alignment does not lie on a line of the one clock both sides read: another
   * kernel's launches (a coarse offset off by a run of kernels), not ours to keep */
  if (best_n && best_f.on_gpu && best_f.residual_ns > KM_FIT_RESIDUAL_MAX_NS + q->r->ts_resolution_ns) {
    if (misfit_ns) *misfit_ns = best_f.residual_ns, *misfit_n = best_n;
    goto done;
  }
  if (commit) {
    q->r->ambiguous += amb_best;
    for (size_t k = 0; k < best_n; k++) {
      q->r->l[bi[k]].kk = bj[k];
      q->r->l[bi[k]].by = KM_BY_ORDER_TIME;
      q->r->kk_launch[bj[k]] = bi[k];
    }
  }
  out = (long)best_n;
done:
  free(mi), free(mj), free(bi), free(bj), free(x), free(y), free(d);
  return out;
}

struct misfit {
  double res; /* its fit's robust residual */
  size_t n;   /* pairs it made */
  size_t t;   /* with which of the file's streams */
};

/* ---- sorting helpers (qsort has no context: a file-level pointer, set per sort) ---- */
/* the comparators' arrays: one per thread (export --format kineto merges files on several) */
static _Thread_local const struct km_result *g_r;
static _Thread_local const struct kj_scan *g_s;
static int by_stream_start(const void *a, const void *b) {
  const struct km_launch *x = &g_r->l[*(const int32_t *)a], *y = &g_r->l[*(const int32_t *)b];
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  return x->start < y->start ? -1 : x->start > y->start;
}
static int by_dev_stream_ts(const void *a, const void *b) {
  const struct kj_kernel *x = &g_s->k[*(const int32_t *)a], *y = &g_s->k[*(const int32_t *)b];
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}
static int by_corr(const void *a, const void *b) {
  const struct kj_kernel *x = &g_s->k[*(const int32_t *)a], *y = &g_s->k[*(const int32_t *)b];
  return x->correlation < y->correlation ? -1 : x->correlation > y->correlation;
}
/* matched launches by (stream, kernel device, kernel stream, start) */
static int by_pair(const void *a, const void *b) {
  const struct km_launch *x = &g_r->l[*(const int32_t *)a], *y = &g_r->l[*(const int32_t *)b];
  const struct kj_kernel *kx = &g_s->k[x->kk], *ky = &g_s->k[y->kk];
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  if (kx->pid != ky->pid) return kx->pid < ky->pid ? -1 : 1;
  if (kx->tid != ky->tid) return kx->tid < ky->tid ? -1 : 1;
  return x->start < y->start ? -1 : x->start > y->start;
}

struct cand {
  size_t s, t;
  long score;
};

static int all_gpu(const struct km_result *r, const int32_t *L, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!r->l[L[i]].g_start) return 0;
  return n > 0;
}

/* Most launches of a stream with raw GPU times: the stream is matched on them. */
static int most_gpu(const struct km_result *r, const int32_t *L, size_t n) {
  size_t g = 0;
  for (size_t i = 0; i < n; i++) g += r->l[L[i]].g_start != 0;
  return n > 0 && 2 * g >= n;
}
static int by_score(const void *a, const void *b) {
  const struct cand *x = a, *y = b;
  return x->score > y->score ? -1 : x->score < y->score;
}

/* Launches the time match could not place (no GPU time of ours: their
 * channel records lost) between two matched neighbours of the same stream
 * pair, or between a stream's first or last pair and that end of both
 * sequences: kernels on one stream run in launch order, so when as many of
 * our launches as of the file's kernels lie unmatched there, they pair in
 * order -- each kernel starting after its launch call (CPU times are on
 * REALTIME on both sides, within KM_CAUSAL_TOL_NS). Else they stay
 * unmatched. */
#define KM_GAP_MAX 64 /* a longer run of our launches without GPU time stays unmatched */
static _Thread_local const struct lens_model *g_m;
static int by_stream_call(const void *a, const void *b) {
  const struct km_launch *x = &g_r->l[*(const int32_t *)a], *y = &g_r->l[*(const int32_t *)b];
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  uint64_t p = g_m->events[x->ev].start_mono_ns, q = g_m->events[y->ev].start_mono_ns;
  return p < q ? -1 : p > q;
}

/* Launches L[i0..i1) and the unmatched kernels among K[j0..j1) pair in
 * order when they are as many, each kernel after its launch call. */
static void pair_run(const struct kj_scan *s, struct km_result *r, const int32_t *L, size_t i0, size_t i1,
                     const int32_t *K, size_t j0, size_t j1) {
  size_t nu = i1 - i0, nv = 0;
  if (!nu || nu > KM_GAP_MAX) return;
  int32_t v[KM_GAP_MAX];
  for (size_t j = j0; j < j1; j++)
    if (r->kk_launch[K[j]] < 0) {
      if (nv == KM_GAP_MAX) return;
      v[nv++] = K[j];
    }
  if (nv != nu) return;
  for (size_t k = 0; k < nu; k++) { /* only launches without GPU time: the others' times said no */
    const struct km_launch *u = &r->l[L[i0 + k]];
    if (u->kk >= 0 || u->start || u->g_start || !host_plausible(r, u, &s->k[v[k]])) return;
  }
  for (size_t k = 0; k < nu; k++) {
    struct km_launch *u = &r->l[L[i0 + k]];
    u->kk = v[k], u->by = KM_BY_ORDER_GAP;
    r->kk_launch[v[k]] = L[i0 + k];
    r->by_gap++;
  }
}

static void fill_gaps(const struct lens_model *m, const struct kj_scan *s, struct km_result *r, int32_t *L,
                      const int32_t *K, const int32_t *kpos) {
  for (size_t i = 0; i < r->n_l; i++) L[i] = (int32_t)i;
  g_m = m;
  if (r->n_l) qsort(L, r->n_l, sizeof *L, by_stream_call);
  for (size_t s0 = 0, s1; s0 < r->n_l; s0 = s1) {
    for (s1 = s0 + 1; s1 < r->n_l && r->l[L[s1]].stream == r->l[L[s0]].stream; s1++) {
    }
    /* its matched launches: all on one stream of the file, in order there too */
    size_t first = SIZE_MAX, prev = SIZE_MAX;
    int one = 1;
    for (size_t i = s0; i < s1 && one; i++) {
      const struct km_launch *b = &r->l[L[i]];
      if (b->kk < 0) continue;
      if (first == SIZE_MAX) first = i;
      if (prev != SIZE_MAX) {
        const struct kj_kernel *ka = &s->k[r->l[L[prev]].kk];
        one = ka->pid == s->k[b->kk].pid && ka->tid == s->k[b->kk].tid && kpos[b->kk] > kpos[r->l[L[prev]].kk];
      }
      prev = i;
    }
    if (first == SIZE_MAX || !one) continue;
    /* the file's stream: K[t0..t1) */
    const struct kj_kernel *kf = &s->k[r->l[L[first]].kk];
    size_t t0 = (size_t)kpos[r->l[L[first]].kk], t1 = (size_t)kpos[r->l[L[prev]].kk] + 1;
    while (t0 > 0 && s->k[K[t0 - 1]].pid == kf->pid && s->k[K[t0 - 1]].tid == kf->tid) t0--;
    while (t1 < s->n_k && s->k[K[t1]].pid == kf->pid && s->k[K[t1]].tid == kf->tid) t1++;
    /* before the first pair, between pairs, after the last (both sequences' ends are anchors too) */
    pair_run(s, r, L, s0, first, K, t0, (size_t)kpos[r->l[L[first]].kk]);
    size_t last = first;
    for (size_t i = first + 1; i < s1; i++) {
      const struct km_launch *b = &r->l[L[i]];
      if (b->kk < 0 || b->by == KM_BY_ORDER_GAP) continue;
      pair_run(s, r, L, last + 1, i, K, (size_t)kpos[r->l[L[last]].kk] + 1, (size_t)kpos[b->kk]);
      last = i;
    }
    pair_run(s, r, L, last + 1, s1, K, (size_t)kpos[r->l[L[last]].kk] + 1, t1);
  }
}

int km_match(const struct lens_model *m, const int32_t *procs, size_t n_procs, const struct kj_scan *s,
             struct km_result *r) {
  memset(r, 0, sizeof *r);
  r->base_ns = s->have_base ? s->base_ns : 0;
  coarse_offset(m, procs, n_procs, r);
  for (size_t i = 0; i < m->n_clock_maps; i++)
    if (in_procs(procs, n_procs, m->clock_maps[i].proc) && m->clock_maps[i].error_bound_ns > r->map_bound_ns)
      r->map_bound_ns = m->clock_maps[i].error_bound_ns;
  r->ts_resolution_ns = 1;
  int whole_us = s->n_k > 0;
  for (size_t j = 0; j < s->n_k && whole_us; j++) whole_us = !(s->k[j].ts_ns % 1000) && !(s->k[j].dur_ns % 1000);
  if (whole_us) r->ts_resolution_ns = 1000; /* pre-2024 files: integer microseconds */
  r->kk_launch = malloc((s->n_k ? s->n_k : 1) * sizeof *r->kk_launch);
  if (!r->kk_launch) return -1;
  for (size_t j = 0; j < s->n_k; j++) r->kk_launch[j] = -1;
  size_t cap = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_LAUNCH || !in_procs(procs, n_procs, e->proc)) continue;
    if (e->flags & LENS_EVF_GRAPH) { /* captured once, run at each replay: no 1:1 kernel */
      r->launches_graph++;
      continue;
    }
    struct km_launch l = {.src = -1,
                          .ev = (int32_t)i,
                          .call = (int64_t)e->start_mono_ns,
                          .stream = e->p.kernel_launch.stream,
                          .kk = -1,
                          .fit = -1};
    if (!launch_span(m, (int32_t)i, &l)) { /* kept: matched by order alone, if at all (fill_gaps) */
      r->launches_no_gpu_time++;
      l.start = l.end = l.g_start = l.g_end = 0;
    }
    if (r->n_l == cap) {
      cap = cap ? cap * 2 : 256;
      struct km_launch *nl = realloc(r->l, cap * sizeof *nl);
      if (!nl) return -1;
      r->l = nl;
    }
    r->l[r->n_l++] = l;
  }
  int32_t *L = malloc((r->n_l ? r->n_l : 1) * sizeof *L), *K = malloc((s->n_k ? s->n_k : 1) * sizeof *K);
  struct cand *cv = NULL;
  int rc = -1;
  if (!L || !K) goto out;
  g_r = r, g_s = s;
  /* (1) CUPTI correlation ids, device and stream */
  for (size_t j = 0; j < s->n_k; j++) K[j] = (int32_t)j;
  if (s->n_k) qsort(K, s->n_k, sizeof *K, by_corr);
  for (size_t i = 0; i < r->n_l; i++) {
    struct km_launch *l = &r->l[i];
    if (l->corr < 0) continue;
    size_t lo = 0, hi = s->n_k;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (s->k[K[mid]].correlation < l->corr)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo >= s->n_k || s->k[K[lo]].correlation != l->corr) continue;
    if (lo + 1 < s->n_k && s->k[K[lo + 1]].correlation == l->corr) continue; /* two kernels, one id: not ours to pick */
    const struct kj_kernel *k = &s->k[K[lo]];
    if (k->pid != l->dev || k->tid != l->cstream || r->kk_launch[K[lo]] >= 0) continue;
    l->kk = K[lo], l->by = KM_BY_CORRELATION;
    r->kk_launch[K[lo]] = (int32_t)i;
    r->by_corr++;
  }
  /* (2) order and time, per pair of streams, the pairs that match most first */
  for (size_t i = 0; i < r->n_l; i++) L[i] = (int32_t)i;
  if (r->n_l) qsort(L, r->n_l, sizeof *L, by_stream_start);
  for (size_t j = 0; j < s->n_k; j++) K[j] = (int32_t)j;
  if (s->n_k) qsort(K, s->n_k, sizeof *K, by_dev_stream_ts);
  size_t ns = 0, nt = 0;
  size_t *sg = malloc((r->n_l + 1) * sizeof *sg), *tg = malloc((s->n_k + 1) * sizeof *tg);
  if (!sg || !tg) {
    free(sg), free(tg);
    goto out;
  }
  for (size_t i = 0; i < r->n_l; i++)
    if (!i || r->l[L[i]].stream != r->l[L[i - 1]].stream) sg[ns++] = i;
  sg[ns] = r->n_l;
  for (size_t j = 0; j < s->n_k; j++)
    if (!j || s->k[K[j]].pid != s->k[K[j - 1]].pid || s->k[K[j]].tid != s->k[K[j - 1]].tid) tg[nt++] = j;
  tg[nt] = s->n_k;
  cv = ns && nt ? malloc(ns * nt * sizeof *cv) : NULL;
  struct misfit *mf = calloc(ns + 1, sizeof *mf); /* per our stream: its largest misfit alignment */
  if (!mf) {
    free(sg), free(tg);
    goto out;
  }
  size_t nc = 0;
  for (size_t a = 0; cv && a < ns; a++)
    for (size_t b = 0; b < nt; b++) {
      struct seq q = {m,
                      s,
                      r,
                      L + sg[a],
                      sg[a + 1] - sg[a],
                      K + tg[b],
                      tg[b + 1] - tg[b],
                      most_gpu(r, L + sg[a], sg[a + 1] - sg[a])};
      double mres = 0;
      size_t mn = 0;
      long sc = seq_match(&q, 0, &mres, &mn);
      if (sc < 0) {
        free(sg), free(tg), free(mf);
        goto out;
      }
      if (sc > 0) cv[nc++] = (struct cand){a, b, sc};
      if (mn) mf[a] = mf[a].n > mn ? mf[a] : (struct misfit){mres, mn, b};
    }
  if (nc) qsort(cv, nc, sizeof *cv, by_score);
  uint8_t *used_s = calloc(ns + 1, 1), *used_t = calloc(nt + 1, 1);
  for (size_t c = 0; used_s && used_t && c < nc; c++) {
    if (used_s[cv[c].s] || used_t[cv[c].t]) continue;
    used_s[cv[c].s] = used_t[cv[c].t] = 1;
    const int32_t *Ls = L + sg[cv[c].s];
    size_t nls = sg[cv[c].s + 1] - sg[cv[c].s];
    struct seq q = {m, s, r, Ls, nls, K + tg[cv[c].t], tg[cv[c].t + 1] - tg[cv[c].t], most_gpu(r, Ls, nls)};
    long got = seq_match(&q, 1, NULL, NULL);
    if (got > 0) r->by_order += (size_t)got;
  }
  /* our streams and the file's left without a partner, where the best alignment between them was off the
   * line: said, not silently unmatched (another local rank's streams, whose kernels are in its own file,
   * leave this file's streams matched: not counted) */
  for (size_t a = 0; mf && used_s && used_t && a < ns; a++)
    if (!used_s[a] && mf[a].n && !used_t[mf[a].t]) {
      r->misfit_streams++, r->ambiguous += mf[a].n;
      if (mf[a].res > r->misfit_worst_ns) r->misfit_worst_ns = mf[a].res;
    }
  free(mf);
  int oom = !used_s || !used_t;
  free(used_s), free(used_t), free(sg), free(tg);
  if (oom) goto out;
  int32_t *kpos = malloc((s->n_k ? s->n_k : 1) * sizeof *kpos);
  if (!kpos) goto out;
  for (size_t j = 0; j < s->n_k; j++) kpos[K[j]] = (int32_t)j;
  fill_gaps(m, s, r, L, K, kpos);
  free(kpos);
  /* the fits, per stream pair, over every launch matched in time (both ways) */
  size_t nm = 0;
  for (size_t i = 0; i < r->n_l; i++)
    if (r->l[i].kk >= 0 && r->l[i].by != KM_BY_ORDER_GAP) L[nm++] = (int32_t)i;
  if (nm) qsort(L, nm, sizeof *L, by_pair);
  int64_t *x = malloc((nm ? nm : 1) * sizeof *x), *y = malloc((nm ? nm : 1) * sizeof *y);
  if (!x || !y) {
    free(x), free(y);
    goto out;
  }
  for (size_t i = 0; i < nm;) {
    size_t e = i;
    const struct km_launch *a = &r->l[L[i]];
    const struct kj_kernel *ka = &s->k[a->kk];
    while (e < nm && r->l[L[e]].stream == a->stream && s->k[r->l[L[e]].kk].pid == ka->pid &&
           s->k[r->l[L[e]].kk].tid == ka->tid)
      e++;
    struct km_fit f = {.our_stream = a->stream, .dev = ka->pid, .stream = ka->tid, .on_gpu = all_gpu(r, L + i, e - i)};
    for (size_t k = i; k < e; k++) x[k - i] = km_launch_x(&r->l[L[k]], &f), y[k - i] = s->k[r->l[L[k]].kk].ts_ns;
    double maxres;
    fit_line(x, y, e - i, &f, &maxres);
    /* the bound covers both ends: a kernel's channels may also end after it by this much */
    for (size_t k = i; k < e; k++) {
      const struct km_launch *l = &r->l[L[k]];
      const struct kj_kernel *kk = &s->k[l->kk];
      int64_t xe = f.on_gpu ? l->g_end : l->end;
      double over = (double)(km_fit_to_kineto(&f, xe) - (kk->ts_ns + kk->dur_ns));
      if (over > maxres) maxres = over;
    }
    /* the fine offset, as a number a reader can judge: Kineto minus (our host time + C - base) at the median pair */
    const struct km_launch *mid = &r->l[L[i + (e - i) / 2]];
    f.a_ns = (double)(km_fit_to_kineto(&f, km_launch_x(mid, &f)) - km_to_kineto(r, mid->start));
    /* Where a channel lands against this file's kernel: its launch's start
     * residual (channel - launch start is an exact GPU-time difference), so
     * the largest residual, plus the file's own rounding of ts. Our clock
     * map's error against the host clock cancels here (both sides went
     * through it); it is reported apart (map_bound_ns). */
    f.bound_ns = maxres + r->ts_resolution_ns;
    struct km_fit *nf = realloc(r->fits, (r->n_fits + 1) * sizeof *nf);
    if (!nf) {
      free(x), free(y);
      goto out;
    }
    r->fits = nf;
    r->fits[r->n_fits] = f;
    for (size_t k = i; k < e; k++) r->l[L[k]].fit = (int32_t)r->n_fits;
    r->n_fits++;
    i = e;
  }
  free(x), free(y);
  rc = 0;
out:
  free(L), free(K), free(cv);
  return rc;
}

void km_result_free(struct km_result *r) {
  free(r->l);
  free(r->kk_launch);
  free(r->fits);
  memset(r, 0, sizeof *r);
}
