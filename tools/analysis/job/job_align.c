/* Host alignment (job_align.h): hosts from the clock evidence, coarse
 * REALTIME intervals, sync points from the job view's instances, solved as
 * difference constraints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_clock.h"
#include "job_align.h"
#include "lens_checked.h"
#include "mem_hint.h"

const char *lens_align_source_name(int s) {
  switch (s) {
  case LENS_ALIGN_REF: return "reference";
  case LENS_ALIGN_SYNC: return "sync points";
  case LENS_ALIGN_REALTIME: return "realtime";
  case LENS_ALIGN_ONEWAY: return "one-way";
  default: return "none";
  }
}

#define point lens_align_point

static int same_host(const struct lens_align_host *h, const char *host, const char *boot, int64_t tns) {
  return !strcmp(h->host, host) && !strcmp(h->boot_id, boot) && h->timens_mono_offset_ns == tns;
}

/* Drift of a process's MONOTONIC against REALTIME from its first and last
 * samples; the error is what the two brackets leave open. */
static void drift_of(const struct lens_model *m, int32_t proc, double *ppm, double *err_ppm) {
  const struct lens_clock_sample *f = NULL, *l = NULL;
  for (size_t i = 0; i < m->n_clocks; i++) {
    const struct lens_clock_sample *c = &m->clocks[i];
    if (c->proc != proc || c->r.mono_after_ns < c->r.mono_before_ns) continue;
    if (!f) f = c;
    l = c;
  }
  *ppm = 0;
  *err_ppm = LENS_ALIGN_DRIFT_UNKNOWN_PPM;
  if (!f || f == l || l->r.mono_before_ns < f->r.mono_after_ns + LENS_ALIGN_DRIFT_MIN_SPAN_NS) return;
  double fm = (double)f->r.mono_before_ns + (double)(f->r.mono_after_ns - f->r.mono_before_ns) / 2;
  double lm = (double)l->r.mono_before_ns + (double)(l->r.mono_after_ns - l->r.mono_before_ns) / 2;
  double span = lm - fm;
  double dr = (double)lens_u64_diff(l->r.real_ns, f->r.real_ns);
  *ppm = (dr / span - 1.0) * 1e6;
  double w = (double)(f->r.mono_after_ns - f->r.mono_before_ns + l->r.mono_after_ns - l->r.mono_before_ns) / 2 + 2;
  *err_ppm = w / span * 1e6;
}

/* Times and drifts may come from a partial file: every step saturates
 * (lens_checked.h) rather than overflow or convert out of range. */
static int64_t corrected(const struct lens_align_host *h, uint64_t mono) {
  double dt = (double)lens_u64_diff(mono, h->ref_mono_ns);
  return lens_i64_add(lens_u2i64(mono), lens_f2i64(round(dt * h->drift_ppm * 1e-6)));
}
static uint64_t drift_slack(const struct lens_align_host *h, uint64_t mono) {
  double dt = fabs((double)lens_u64_diff(mono, h->ref_mono_ns));
  uint64_t s = lens_f2u64(dt * h->drift_err_ppm * 1e-6);
  return s == UINT64_MAX ? s : s + 1;
}

void lens_align_proc_clock_of(const struct lens_model *m, int32_t p, struct lens_align_proc_clock *x) {
  memset(x, 0, sizeof *x);
  struct lens_host_clock hc;
  int has = lens_host_clock_of(m, p, &hc) == 0;
  snprintf(x->host, sizeof x->host, "%s", has && hc.host ? hc.host : m->procs[p].host);
  snprintf(x->boot_id, sizeof x->boot_id, "%s", has && hc.boot_id ? hc.boot_id : "");
  x->timens_mono_offset_ns = has ? hc.timens_mono_offset_ns : 0;
  for (size_t c = 0; c < m->n_comms; c++) x->n_ranks += m->comms[c].proc == p;
  x->start_mono_ns = m->procs[p].start_mono_ns;
  x->drift_err_ppm = LENS_ALIGN_DRIFT_UNKNOWN_PPM;
  if (!has) return;
  x->has_clock = 1;
  x->bound_ns = hc.bound_ns;
  x->ref_mono_ns = hc.ref_mono_ns;
  x->real_minus_mono_ns = hc.real_minus_mono_ns;
  drift_of(m, p, &x->drift_ppm, &x->drift_err_ppm);
}

/* Processes sharing a host name, boot and time namespace share a MONOTONIC. */
static int hosts_of(struct lens_align *a, const struct lens_align_proc_clock *pc, size_t n) {
  a->n_procs = n;
  a->procs = malloc((n ? n : 1) * sizeof *a->procs);
  a->host_of_proc = malloc((n ? n : 1) * sizeof *a->host_of_proc);
  a->hosts = calloc(n ? n : 1, sizeof *a->hosts);
  if (!a->procs || !a->host_of_proc || !a->hosts) return -1;
  memcpy(a->procs, pc, n * sizeof *pc);
  for (size_t p = 0; p < n; p++) {
    const struct lens_align_proc_clock *c = &a->procs[p];
    size_t h = 0;
    while (h < a->n_hosts && !same_host(&a->hosts[h], c->host, c->boot_id, c->timens_mono_offset_ns)) h++;
    struct lens_align_host *x = &a->hosts[h];
    if (h == a->n_hosts) {
      a->n_hosts++;
      x->host = c->host;
      x->boot_id = c->boot_id;
      x->timens_mono_offset_ns = c->timens_mono_offset_ns;
      x->first_proc = (int32_t)p;
      x->coarse_bound_ns = UINT64_MAX;
      x->drift_err_ppm = LENS_ALIGN_DRIFT_UNKNOWN_PPM;
      x->ref_mono_ns = c->start_mono_ns; /* replaced by a sample's when there is one */
    }
    a->host_of_proc[p] = (int32_t)h;
    x->n_procs++;
    x->n_ranks += c->n_ranks;
    /* The process with the tightest REALTIME sample speaks for its host (they
     * share its MONOTONIC); its samples give the drift. */
    if (c->has_clock && c->bound_ns < x->coarse_bound_ns) {
      x->has_clock = 1;
      x->coarse_bound_ns = c->bound_ns;
      x->ref_mono_ns = c->ref_mono_ns;
      x->coarse_offset_ns = c->real_minus_mono_ns;
      x->drift_ppm = c->drift_ppm;
      x->drift_err_ppm = c->drift_err_ppm;
    }
  }
  return 0;
}

/* Sync points: every rank's end bracketed (lens_align_rank_end), the
 * brackets carried along each GPU's own clock (lens_align_propagate), then
 * per instance of a ring/tree collective and per host the latest lower and
 * the earliest upper bound of its ranks' ends. */
static int eligible(const struct lens_job_inst *in) {
  return !in->is_p2p &&
         !(in->flags & (LENS_JOB_APPROX_RULE | LENS_JOB_ENDS_APART | LENS_JOB_GRAPH | LENS_JOB_NO_SPAN));
}

static int cmp_end_inst(const void *pa, const void *pb) {
  const struct lens_align_end *a = pa, *b = pb;
  if (a->inst != b->inst) return a->inst < b->inst ? -1 : 1;
  return (a->host > b->host) - (a->host < b->host);
}

static struct point *points_of(const struct lens_job *j, struct lens_align *a, size_t *n_out) {
  size_t nr = j ? j->n_ranks : 0, ne = 0, n = 0;
  struct lens_align_end *v = malloc((nr + 1) * sizeof *v);
  struct point *p = malloc((nr + 1) * sizeof *p);
  if (!v || !p) return free(v), free(p), NULL;
  lens_prefault(v, nr * sizeof *v); /* one end per rank, most of them kept */
  for (size_t i = 0; j && i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    for (size_t k = 0; k < in->n_ranks; k++) {
      const struct lens_job_rank *r = &j->ranks[in->first_rank + k];
      if (r->proc < 0 || (size_t)r->proc >= a->n_procs || (!r->end_lo_ns && !r->end_hi_ns)) continue;
      if (r->end_lo_ns > r->end_hi_ns) { /* closed at the map (lens_align_bracket_ranks) */
        a->rejected_points++;
        continue;
      }
      v[ne++] = (struct lens_align_end){.inst = i, .host = a->host_of_proc[r->proc], .lo = r->end_lo_ns,
                                        .hi = r->end_hi_ns, .eligible = eligible(in)};
    }
  }
  /* v is in instance order; each instance's ends go by host. Its ranks come
   * in rank order, which is host order wherever ranks fill hosts in turn:
   * sorted only when not (one sort of every end: 7 % of a 128-partial merge). */
  for (size_t s = 0; s < ne;) {
    size_t e = s, sorted = 1;
    while (e < ne && v[e].inst == v[s].inst) {
      if (e > s && v[e].host < v[e - 1].host) sorted = 0;
      e++;
    }
    if (!sorted) qsort(v + s, e - s, sizeof *v, cmp_end_inst);
    size_t first = n;
    for (size_t k = s; k < e; k++) {
      if (!v[k].eligible) continue;
      if (n > first && p[n - 1].host == v[k].host) {
        if (v[k].lo > p[n - 1].lo) p[n - 1].lo = v[k].lo;
        if (v[k].hi < p[n - 1].hi) p[n - 1].hi = v[k].hi;
      } else {
        p[n++] = (struct point){v[k].inst, v[k].host, v[k].lo, v[k].hi};
      }
    }
    if (n - first < 2) n = first; /* one host alone says nothing about offsets */
    else a->sync_instances++;
    s = e;
  }
  free(v);
  *n_out = n;
  return p;
}

static void tighten(int64_t *ub, size_t nh, size_t x, size_t y, int64_t v) {
  if (v < ub[x * nh + y]) ub[x * nh + y] = v;
}

/* The constraint matrix for a spread eps. lo_c, hi_c: each point's bounds
 * drift-corrected and widened by the drift's error (ends_widened); read only
 * with_sync. ubw: the one-way pairs' hard bounds (oneway_bounds), or NULL. */
static void constraints(const struct lens_align *a, const struct point *p, const int64_t *lo_c, const int64_t *hi_c,
                        size_t np, uint64_t eps, int with_sync, int with_coarse, const int64_t *ubw, int64_t *ub) {
  size_t nh = a->n_hosts;
  for (size_t i = 0; i < nh * nh; i++) ub[i] = ubw ? ubw[i] : INT64_MAX;
  for (size_t h = 0; h < nh && with_coarse; h++)
    for (size_t g = 0; g < nh; g++) {
      const struct lens_align_host *x = &a->hosts[h], *y = &a->hosts[g];
      if (h == g || !x->has_clock || !y->has_clock) continue;
      tighten(ub, nh, h, g,
              lens_i64_add(lens_i64_sub(x->coarse_offset_ns, y->coarse_offset_ns),
                           lens_i64_add(lens_u2i64(x->coarse_bound_ns), lens_u2i64(y->coarse_bound_ns))));
    }
  /* x_h - x_g <= eps - lo_h + hi_g for two hosts' ends of one instance
   * (times drift-corrected, widened by the drift's error). */
  for (size_t s = 0; s < np && with_sync;) {
    size_t e = s;
    while (e < np && p[e].inst == p[s].inst) e++;
    for (size_t u = s; u < e; u++)
      for (size_t v = s; v < e; v++) {
        if (u == v) { /* its own ranks' ends further apart than eps: x_h - x_h <= eps - lo + hi < 0 */
          if (p[u].lo > p[u].hi && p[u].lo - p[u].hi > eps) ub[(size_t)p[u].host * nh + (size_t)p[u].host] = -1;
          continue;
        }
        tighten(ub, nh, (size_t)p[u].host, (size_t)p[v].host,
                lens_i64_add(lens_i64_sub(lens_u2i64(eps), lo_c[u]), hi_c[v]));
      }
    s = e;
  }
}

/* The one-way pairs as hard bounds: a send on host A provably not yet
 * posted at s, its receive on host B provably in at r, so
 * true(r) >= true(s): corrected_B(r) + x_B + slack >= corrected_A(s) + x_A
 * - slack, i.e. x_A - x_B <= corrected_B(r) - corrected_A(s) + both drift
 * slacks. The least over all pairs of two hosts is kept (the promptest
 * transfer decides, as in NTP's minimum-delay filter). Counts each host's
 * pairs; returns the pairs between two hosts. */
static size_t oneway_bounds(struct lens_align *a, const struct lens_job_oneway *ow, size_t now, int64_t *ubw) {
  size_t nh = a->n_hosts, used = 0;
  for (size_t i = 0; i < nh * nh; i++) ubw[i] = INT64_MAX;
  for (size_t i = 0; i < now; i++) {
    const struct lens_job_oneway *w = &ow[i];
    if (w->snd_proc < 0 || w->rcv_proc < 0 || (size_t)w->snd_proc >= a->n_procs ||
        (size_t)w->rcv_proc >= a->n_procs || !w->sent_ns || !w->recv_ns)
      continue;
    int32_t A = a->host_of_proc[w->snd_proc], B = a->host_of_proc[w->rcv_proc];
    if (A < 0 || B < 0 || A == B) continue; /* one CLOCK_MONOTONIC: nothing about offsets */
    const struct lens_align_host *ha = &a->hosts[A], *hb = &a->hosts[B];
    int64_t v = lens_i64_add(lens_i64_sub(lens_i64_add(corrected(hb, w->recv_ns),
                                                       lens_u2i64(drift_slack(hb, w->recv_ns))),
                                          corrected(ha, w->sent_ns)),
                             lens_u2i64(drift_slack(ha, w->sent_ns)));
    tighten(ubw, nh, (size_t)A, (size_t)B, v);
    a->hosts[A].n_oneway++;
    a->hosts[B].n_oneway++;
    used++;
  }
  return used;
}

/* Each point's lower bound drift-corrected minus the drift's error, its
 * upper bound corrected plus it: once per point, not once per pair of hosts
 * and spread tried (the pairs: 12 % of a 128-partial merge). */
static void ends_widened(const struct lens_align *a, const struct point *p, size_t np, int64_t *lo_c, int64_t *hi_c) {
  for (size_t u = 0; u < np; u++) {
    const struct lens_align_host *h = &a->hosts[p[u].host];
    lo_c[u] = lens_i64_sub(corrected(h, p[u].lo), lens_u2i64(drift_slack(h, p[u].lo)));
    hi_c[u] = lens_i64_add(corrected(h, p[u].hi), lens_u2i64(drift_slack(h, p[u].hi)));
  }
}

int lens_align_build_ends(const struct lens_align_proc_clock *pc, size_t n_procs, const struct lens_job *j,
                          const struct lens_align_opts *o, struct lens_align *a) {
  memset(a, 0, sizeof *a);
  a->ref = -1;
  a->ref_utc_bound_ns = UINT64_MAX;
  if (hosts_of(a, pc, n_procs)) return lens_align_free(a), -1;
  size_t np = 0;
  struct point *p = points_of(j, a, &np);
  if (!p) return lens_align_free(a), -1;
  int rc = lens_align_resolve_pairs(a, p, np, j ? j->oneway : NULL, j ? j->n_oneway : 0, o);
  free(p);
  if (rc) lens_align_free(a);
  return rc;
}

int lens_align_build(const struct lens_model *m, const struct lens_job *j, const struct lens_align_opts *o,
                     struct lens_align *a) {
  struct lens_align_proc_clock *pc = malloc((m->n_procs ? m->n_procs : 1) * sizeof *pc);
  if (!pc) {
    memset(a, 0, sizeof *a);
    a->ref = -1;
    return -1;
  }
  for (size_t p = 0; p < m->n_procs; p++) lens_align_proc_clock_of(m, (int32_t)p, &pc[p]);
  int rc = lens_align_build_ends(pc, m->n_procs, j, o, a);
  free(pc);
  return rc;
}

int lens_align_resolve(struct lens_align *a, const struct lens_align_point *p, size_t np,
                       const struct lens_align_opts *o) {
  return lens_align_resolve_pairs(a, p, np, NULL, 0, o);
}

int lens_align_resolve_pairs(struct lens_align *a, const struct lens_align_point *p, size_t np,
                             const struct lens_job_oneway *ow, size_t now, const struct lens_align_opts *o) {
  struct lens_align_opts def = {0};
  if (!o) o = &def;
  a->ref = -1;
  a->ref_utc_bound_ns = UINT64_MAX;
  a->oneway_pairs = 0;
  a->oneway_dropped = 0;
  size_t nh = a->n_hosts;
  if (!nh) return 0;
  if (nh > LENS_ALIGN_MAX_HOSTS) { /* not solved: each host on its own clock */
    for (size_t h = 0; h < nh; h++) {
      struct lens_align_host *x = &a->hosts[h];
      x->source = LENS_ALIGN_NONE;
      x->offset_ns = x->has_clock ? x->coarse_offset_ns : 0;
      x->bound_ns = UINT64_MAX;
      x->n_sync = x->n_oneway = 0;
    }
    return 0;
  }
  if (o->oneway_only) np = 0, a->sync_instances = 0; /* no collective-end sync point */
  for (size_t h = 0; h < nh; h++) a->hosts[h].n_sync = a->hosts[h].n_oneway = 0;
  size_t nn; /* hosts come from files: the matrix's size is checked, not wrapped */
  if (lens_mul_size(nh, nh, &nn) || lens_mul_size(nn, sizeof(int64_t), &nn)) return -1;
  int64_t *ub = malloc(nn), *lo = malloc(nh * sizeof *lo), *hi = malloc(nh * sizeof *hi);
  int64_t *clo = malloc(nh * sizeof *clo), *chi = malloc(nh * sizeof *chi);
  int64_t *blo = malloc(nh * sizeof *blo), *bhi = malloc(nh * sizeof *bhi);
  int64_t *ubw = malloc(nn);
  int64_t *lo_c = malloc((np ? np : 1) * sizeof *lo_c), *hi_c = malloc((np ? np : 1) * sizeof *hi_c);
  if (!ub || !lo || !hi || !clo || !chi || !blo || !bhi || !ubw || !lo_c || !hi_c) {
    free(ub), free(lo), free(hi), free(clo), free(chi), free(blo), free(bhi), free(ubw), free(lo_c), free(hi_c);
    return -1;
  }
  lens_prefault(lo_c, np * sizeof *lo_c); /* written whole (ends_widened) */
  lens_prefault(hi_c, np * sizeof *hi_c);
  for (size_t s = 0; s < np; s++) a->hosts[p[s].host].n_sync++;
  /* Reference: the tightest REALTIME placement, else the most sync points. */
  size_t ref = 0;
  for (size_t h = 1; h < nh; h++) {
    const struct lens_align_host *x = &a->hosts[h], *r = &a->hosts[ref];
    if (x->coarse_bound_ns < r->coarse_bound_ns ||
        (x->coarse_bound_ns == r->coarse_bound_ns && x->n_sync > r->n_sync))
      ref = h;
  }
  a->ref = (int)ref;
  struct lens_align_host *R = &a->hosts[ref];
  a->time_base_realtime = R->has_clock;
  if (R->has_clock) a->ref_utc_bound_ns = R->coarse_bound_ns;
  int with_coarse = !o->sync_only && !o->oneway_only;
  /* The coarse solution alone: what the sync points are judged against. */
  constraints(a, p, NULL, NULL, np, 0, 0, with_coarse, NULL, ub); /* no sync point read */
  int crc = lens_align_solve(nh, ub, ref, clo, chi);
  /* The hard base: REALTIME and the one-way pairs. Pairs that contradict
   * REALTIME (or each other) prove a rule they rest on broken here (a wrong
   * pairing, a clock stepped): they are all left out, and said so. */
  const int64_t *hard = NULL;
  int brc = crc;
  memcpy(blo, clo, nh * sizeof *blo);
  memcpy(bhi, chi, nh * sizeof *bhi);
  if (!o->no_oneway && now) {
    a->oneway_pairs = oneway_bounds(a, ow, now, ubw);
    if (a->oneway_pairs) {
      constraints(a, p, NULL, NULL, np, 0, 0, with_coarse, ubw, ub);
      if (lens_align_solve(nh, ub, ref, blo, bhi) == 0) {
        hard = ubw, brc = 0;
      } else {
        a->oneway_dropped = 1;
        for (size_t h = 0; h < nh; h++) a->hosts[h].n_oneway = 0;
        memcpy(blo, clo, nh * sizeof *blo);
        memcpy(bhi, chi, nh * sizeof *bhi);
      }
    }
  }
  ends_widened(a, p, np, lo_c, hi_c);
  uint64_t eps = o->end_spread_ns ? o->end_spread_ns : LENS_ALIGN_END_SPREAD_NS;
  int rc = -1;
  for (; np && eps <= LENS_ALIGN_END_SPREAD_MAX_NS; eps *= 2) {
    constraints(a, p, lo_c, hi_c, np, eps, 1, with_coarse, hard, ub);
    if ((rc = lens_align_solve(nh, ub, ref, lo, hi)) == 0) break;
  }
  /* A contradiction proved the assumed spread wrong; agreeing points do not
   * prove the first spread that agrees right: keep twice that. */
  if (!rc && eps != (o->end_spread_ns ? o->end_spread_ns : LENS_ALIGN_END_SPREAD_NS)) {
    eps *= 2;
    constraints(a, p, lo_c, hi_c, np, eps, 1, with_coarse, hard, ub);
    rc = lens_align_solve(nh, ub, ref, lo, hi);
  }
  if (rc) { /* no sync point, or they never agreed: REALTIME and the one-way pairs */
    a->sync_dropped = np > 0;
    for (size_t h = 0; h < nh; h++) {
      lo[h] = brc ? INT64_MIN : blo[h];
      hi[h] = brc ? INT64_MAX : bhi[h];
    }
    eps = 0;
  }
  a->end_spread_ns = eps;
  int64_t base = R->has_clock ? R->coarse_offset_ns : 0; /* the time base: ref on UTC by its REALTIME */
  for (size_t h = 0; h < nh; h++) {
    struct lens_align_host *x = &a->hosts[h];
    if (!x->has_clock) x->drift_err_ppm = LENS_ALIGN_DRIFT_UNKNOWN_PPM, x->drift_ppm = 0;
    if (h == ref) {
      x->source = LENS_ALIGN_REF;
      x->offset_ns = base;
      x->bound_ns = 0;
      continue;
    }
    if (lo[h] == INT64_MIN || hi[h] == INT64_MAX) {
      x->source = LENS_ALIGN_NONE;
      x->offset_ns = x->has_clock ? x->coarse_offset_ns : 0;
      x->bound_ns = UINT64_MAX;
      continue;
    }
    /* the width in unsigned: lo and hi may be far apart (absurd inputs) */
    uint64_t w = hi[h] >= lo[h] ? (uint64_t)hi[h] - (uint64_t)lo[h] : 0;
    x->offset_ns = lens_i64_add(base, lo[h] + (int64_t)(w / 2));
    x->bound_ns = w / 2 + (w & 1);
    /* The job's evidence narrowed it when the interval is tighter than
     * REALTIME's: the collective ends when they held, else the one-way
     * pairs. */
    int narrowed = crc || clo[h] == INT64_MIN || chi[h] == INT64_MAX ||
                   (chi[h] >= clo[h] && w < (uint64_t)chi[h] - (uint64_t)clo[h]);
    x->source = !narrowed ? LENS_ALIGN_REALTIME : !rc ? LENS_ALIGN_SYNC : hard ? LENS_ALIGN_ONEWAY : LENS_ALIGN_REALTIME;
  }
  for (size_t h = 0; h < nh; h++)
    a->hosts[h].coarse_bound_ns = a->hosts[h].has_clock && R->has_clock && h != ref
                                      ? a->hosts[h].coarse_bound_ns + R->coarse_bound_ns
                                      : h == ref ? 0 : UINT64_MAX;
  free(ub), free(lo), free(hi), free(clo), free(chi), free(blo), free(bhi), free(ubw), free(lo_c), free(hi_c);
  return 0;
}

void lens_align_free(struct lens_align *a) {
  free(a->procs);
  free(a->hosts);
  free(a->host_of_proc);
  memset(a, 0, sizeof *a);
  a->ref = -1;
}

int lens_align_to_job(const struct lens_align *a, int32_t proc, uint64_t mono_ns, int64_t *job, uint64_t *bound) {
  int32_t h = proc >= 0 && (size_t)proc < a->n_procs ? a->host_of_proc[proc] : -1;
  if (h < 0 || a->hosts[h].source == LENS_ALIGN_NONE) {
    *job = (int64_t)mono_ns;
    if (bound) *bound = UINT64_MAX;
    return -1;
  }
  const struct lens_align_host *x = &a->hosts[h];
  *job = lens_i64_add(corrected(x, mono_ns), x->offset_ns);
  if (bound) *bound = x->bound_ns + (x->source == LENS_ALIGN_REF ? 0 : drift_slack(x, mono_ns));
  return 0;
}
