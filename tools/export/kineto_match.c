/* See kineto_match.h. */
#include "export/kineto_match.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/gpu/gpu_analysis.h"

#define KM_WINDOW_NS 20000000LL    /* first guess: a kernel's nearest launch within 20 ms of the coarse time */
#define KM_TOL_MIN_NS 3000.0       /* the tolerance is 8 x the spread, within these */
#define KM_TOL_MAX_NS 100000.0
#define KM_SLOPE_SPAN_NS 50000000LL /* below this span a drift cannot be told from noise: slope 0 */

int64_t km_to_kineto(const struct km_result *r, const struct km_fit *fit, int64_t mono_ns) {
  long double v = (long double)mono_ns + (long double)r->c_ns - (long double)r->base_ns;
  if (fit) v += (long double)fit->a_ns + (long double)fit->slope * (long double)(mono_ns - fit->x0);
  return (int64_t)llroundl(v);
}

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
    qsort(v, k, sizeof *v, cmp_i64);
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

/* The GPU span of a launch: its CUPTI kernel, else its channels (mapped). */
static int launch_span(const struct lens_model *m, int32_t li, struct km_launch *l) {
  const struct lens_event *e = &m->events[li];
  l->corr = l->dev = l->cstream = -1;
  if (e->acc.cupti_kernel >= 0 && (size_t)e->acc.cupti_kernel < m->n_kernels) {
    const struct lens_kernel *k = &m->kernels[e->acc.cupti_kernel];
    l->corr = k->correlation_id, l->dev = k->device_id, l->cstream = k->stream_id;
    if (k->start_mono_ns && k->end_mono_ns >= k->start_mono_ns) {
      l->start = (int64_t)k->start_mono_ns, l->end = (int64_t)k->end_mono_ns, l->src = KM_SRC_CUPTI;
      return 1;
    }
  }
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int32_t op = lens_gpu_next_op_of_launch(m, li, -1); op >= 0; op = lens_gpu_next_op_of_launch(m, li, op))
    for (int32_t c = m->events[op].first_child; c >= 0; c = m->events[c].next_sibling) {
      const struct lens_event *x = &m->events[c];
      if (x->type != LENS_T_KERNEL_CH || !x->acc.gpu_start_mono_ns || x->acc.gpu_stop_mono_ns < x->acc.gpu_start_mono_ns)
        continue;
      if (x->acc.gpu_start_mono_ns < lo) lo = x->acc.gpu_start_mono_ns;
      if (x->acc.gpu_stop_mono_ns > hi) hi = x->acc.gpu_stop_mono_ns;
    }
  if (!hi) return 0;
  l->start = (int64_t)lo, l->end = (int64_t)hi, l->src = KM_SRC_CHANNELS;
  return 1;
}

/* ---- the fit ---- */

/* d = y - x over n pairs: offset (and slope over a long enough span),
 * robust residual and largest residual. */
static void fit_line(const int64_t *x, const int64_t *y, size_t n, struct km_fit *f, double *maxres) {
  f->pairs = n;
  f->a_ns = 0, f->slope = 0, f->residual_ns = 0, f->x0 = n ? x[0] : 0;
  *maxres = 0;
  if (!n) return;
  long double sx = 0, sd = 0;
  int64_t xmin = x[0], xmax = x[0];
  for (size_t i = 0; i < n; i++) {
    sx += (long double)(x[i] - x[0]);
    sd += (long double)(y[i] - x[i]);
    if (x[i] < xmin) xmin = x[i];
    if (x[i] > xmax) xmax = x[i];
  }
  long double mx = sx / n, md = sd / n;
  f->x0 = x[0] + (int64_t)llroundl(mx);
  if (xmax - xmin >= KM_SLOPE_SPAN_NS && n >= 3) {
    long double cxx = 0, cxd = 0;
    for (size_t i = 0; i < n; i++) {
      long double dx = (long double)(x[i] - f->x0), dd = (long double)(y[i] - x[i]) - md;
      cxx += dx * dx, cxd += dx * dd;
    }
    if (cxx > 0) f->slope = (double)(cxd / cxx);
  }
  /* the offset at x0: the median of what the slope leaves (robust to a few
   * pairs off by the channels' own lag) */
  double *res = malloc(n * sizeof *res);
  if (!res) {
    f->a_ns = (double)md;
    return;
  }
  for (size_t i = 0; i < n; i++) res[i] = (double)(y[i] - x[i]) - f->slope * (double)(x[i] - f->x0);
  qsort(res, n, sizeof *res, cmp_dbl);
  f->a_ns = res[n / 2];
  for (size_t i = 0; i < n; i++) {
    double v = fabs(res[i] - f->a_ns);
    if (v > *maxres) *maxres = v;
    res[i] = v;
  }
  qsort(res, n, sizeof *res, cmp_dbl);
  f->residual_ns = 1.4826 * res[n / 2];
  free(res);
}

/* ---- order and time, one pair of streams ---- */

struct seq {
  const struct lens_model *m;
  const struct kj_scan *s;
  struct km_result *r;
  const int32_t *L; size_t nl; /* launches (indexes into r->l), by start */
  const int32_t *K; size_t nk; /* kernels (indexes into s->k), by ts */
};

static int64_t pred(const struct seq *q, const struct km_fit *f, int64_t mono) {
  long double v = (long double)mono + (long double)q->r->c_ns - (long double)q->r->base_ns + (long double)f->a_ns +
                  (long double)f->slope * (long double)(mono - f->x0);
  return (int64_t)llroundl(v);
}

/* Our span [ps, pe] (predicted) inside kernel k within tol. */
static int inside(const struct kj_kernel *k, int64_t ps, int64_t pe, double tol) {
  return (double)ps >= (double)k->ts_ns - tol && (double)pe <= (double)(k->ts_ns + k->dur_ns) + tol;
}

/* One pass of matching under fit f: pairs into mi/mj (n returned). */
static size_t seq_pass(const struct seq *q, const struct km_fit *f, double tol, int32_t *mi, int32_t *mj,
                       size_t *ambiguous) {
  size_t i = 0, j = 0, n = 0;
  const struct km_launch *l = q->r->l;
  while (i < q->nl && j < q->nk) {
    const struct km_launch *a = &l[q->L[i]];
    if (a->kk >= 0) {
      i++;
      continue;
    }
    if (q->r->kk_launch[q->K[j]] >= 0) {
      j++;
      continue;
    }
    const struct kj_kernel *k = &q->s->k[q->K[j]];
    int64_t ps = pred(q, f, a->start), pe = pred(q, f, a->end);
    if (!inside(k, ps, pe, tol)) {
      if ((double)k->ts_ns + tol < (double)ps) j++;
      else i++;
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
      int64_t bs = pred(q, f, b->start), be = pred(q, f, b->end);
      if ((double)bs - tol > (double)(k->ts_ns + k->dur_ns)) break;
      amb = b->kk < 0 && inside(k, bs, be, tol);
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

/* Matches one stream pair; commit 0: only counts. Returns the pairs made (or -1 no memory). */
static long seq_match(const struct seq *q, int commit) {
  size_t cap = q->nl < q->nk ? q->nl : q->nk;
  if (!cap) return 0;
  int32_t *mi = malloc(cap * sizeof *mi), *mj = malloc(cap * sizeof *mj);
  int64_t *x = malloc(cap * sizeof *x), *y = malloc(cap * sizeof *y);
  double *d = malloc(q->nl * sizeof *d);
  long out = -1;
  if (!mi || !mj || !x || !y || !d) goto done;
  /* first guess: the median distance from each launch to its nearest kernel */
  size_t nd = 0;
  for (size_t i = 0; i < q->nl; i++) {
    const struct km_launch *a = &q->r->l[q->L[i]];
    if (a->kk >= 0) continue;
    int64_t xs = a->start + q->r->c_ns - q->r->base_ns;
    size_t lo = 0, hi = q->nk;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (q->s->k[q->K[mid]].ts_ns < xs) lo = mid + 1;
      else hi = mid;
    }
    int64_t best = INT64_MAX;
    for (size_t j = lo > 0 ? lo - 1 : 0; j < q->nk && j <= lo; j++) {
      int64_t dd = q->s->k[q->K[j]].ts_ns - xs;
      if (llabs(dd) < llabs(best)) best = dd;
    }
    if (best != INT64_MAX && llabs(best) <= KM_WINDOW_NS) d[nd++] = (double)best;
  }
  out = 0;
  if (!nd) goto done;
  qsort(d, nd, sizeof *d, cmp_dbl);
  struct km_fit f = {.a_ns = d[nd / 2], .x0 = 0};
  for (size_t i = 0; i < nd; i++) d[i] = fabs(d[i] - f.a_ns);
  qsort(d, nd, sizeof *d, cmp_dbl);
  double tol = clampd(8 * 1.4826 * d[nd / 2], KM_TOL_MIN_NS, KM_TOL_MAX_NS);
  size_t n = 0;
  for (int round = 0; round < 2; round++) {
    n = seq_pass(q, &f, tol, mi, mj, round ? &q->r->ambiguous : NULL);
    if (!n) break;
    for (size_t k = 0; k < n; k++) x[k] = q->r->l[mi[k]].start, y[k] = q->s->k[mj[k]].ts_ns - (q->r->c_ns - q->r->base_ns);
    double maxres;
    fit_line(x, y, n, &f, &maxres);
    tol = clampd(8 * f.residual_ns + 1000.0, KM_TOL_MIN_NS, KM_TOL_MAX_NS);
  }
  if (commit)
    for (size_t k = 0; k < n; k++) {
      q->r->l[mi[k]].kk = mj[k];
      q->r->l[mi[k]].by = KM_BY_ORDER_TIME;
      q->r->kk_launch[mj[k]] = mi[k];
    }
  out = (long)n;
done:
  free(mi), free(mj), free(x), free(y), free(d);
  return out;
}

/* ---- sorting helpers (qsort has no context: a file-level pointer, set per sort) ---- */
static const struct km_result *g_r;
static const struct kj_scan *g_s;
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

struct cand { size_t s, t; long score; };
static int by_score(const void *a, const void *b) {
  const struct cand *x = a, *y = b;
  return x->score > y->score ? -1 : x->score < y->score;
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
    struct km_launch l = {.ev = (int32_t)i, .stream = e->p.kernel_launch.stream, .kk = -1, .fit = -1};
    if (!launch_span(m, (int32_t)i, &l)) {
      r->launches_no_gpu_time++;
      continue;
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
  qsort(K, s->n_k, sizeof *K, by_corr);
  for (size_t i = 0; i < r->n_l; i++) {
    struct km_launch *l = &r->l[i];
    if (l->corr < 0) continue;
    size_t lo = 0, hi = s->n_k;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (s->k[K[mid]].correlation < l->corr) lo = mid + 1;
      else hi = mid;
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
  qsort(L, r->n_l, sizeof *L, by_stream_start);
  for (size_t j = 0; j < s->n_k; j++) K[j] = (int32_t)j;
  qsort(K, s->n_k, sizeof *K, by_dev_stream_ts);
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
  size_t nc = 0;
  for (size_t a = 0; cv && a < ns; a++)
    for (size_t b = 0; b < nt; b++) {
      struct seq q = {m, s, r, L + sg[a], sg[a + 1] - sg[a], K + tg[b], tg[b + 1] - tg[b]};
      long sc = seq_match(&q, 0);
      if (sc < 0) {
        free(sg), free(tg);
        goto out;
      }
      if (sc > 0) cv[nc++] = (struct cand){a, b, sc};
    }
  if (nc) qsort(cv, nc, sizeof *cv, by_score);
  uint8_t *used_s = calloc(ns + 1, 1), *used_t = calloc(nt + 1, 1);
  for (size_t c = 0; used_s && used_t && c < nc; c++) {
    if (used_s[cv[c].s] || used_t[cv[c].t]) continue;
    used_s[cv[c].s] = used_t[cv[c].t] = 1;
    struct seq q = {m, s, r, L + sg[cv[c].s], sg[cv[c].s + 1] - sg[cv[c].s], K + tg[cv[c].t], tg[cv[c].t + 1] - tg[cv[c].t]};
    long got = seq_match(&q, 1);
    if (got > 0) r->by_order += (size_t)got;
  }
  int oom = !used_s || !used_t;
  free(used_s), free(used_t), free(sg), free(tg);
  if (oom) goto out;
  /* the fits, per stream pair, over every matched launch (both ways) */
  size_t nm = 0;
  for (size_t i = 0; i < r->n_l; i++)
    if (r->l[i].kk >= 0) L[nm++] = (int32_t)i;
  qsort(L, nm, sizeof *L, by_pair);
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
    for (size_t k = i; k < e; k++)
      x[k - i] = r->l[L[k]].start, y[k - i] = s->k[r->l[L[k]].kk].ts_ns - (r->c_ns - r->base_ns);
    struct km_fit f = {.our_stream = a->stream, .dev = ka->pid, .stream = ka->tid};
    double maxres;
    fit_line(x, y, e - i, &f, &maxres);
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
