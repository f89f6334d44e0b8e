/* See report_view.h. */
#include "report/report_view.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t lens_report_job_time(const struct lens_report_view *v, int32_t proc, uint64_t mono, int *placed) {
  int64_t t = (int64_t)mono;
  *placed = proc >= 0 && lens_align_to_job(&v->a, proc, mono, &t, NULL) == 0;
  return t;
}

/* The same rule as tools/export/job_export.c's origin: its processes'
 * first events are the report model's spans (report_model.c). */
int64_t lens_report_origin(const struct lens_report_view *v, uint64_t comm_id) {
  const struct lens_model *m = v->m;
  int64_t o = INT64_MAX;
  for (size_t p = 0; p < m->n_procs; p++) {
    if (comm_id) {
      int has = 0;
      for (size_t i = 0; i < m->n_comms && !has; i++)
        has = m->comms[i].proc == (int32_t)p && m->comms[i].comm_id == comm_id;
      if (!has) continue;
    }
    int placed;
    if (p >= v->r->n_procs) break;
    int64_t t = lens_report_job_time(v, (int32_t)p, v->r->procs[p].first_ns, &placed);
    if (placed && p < v->r->n_procs && v->r->procs[p].last_ns && t < o) o = t;
  }
  if (o == INT64_MAX) return 0;
  return o - ((o % 1000000) + 1000000) % 1000000;
}

int lens_report_view_build(const struct lens_model *m, const struct lens_report *r, struct lens_report_view *v) {
  memset(v, 0, sizeof *v);
  v->m = m;
  v->r = r;
  if (!r->job || !r->align || !r->hang) return -1;
  v->j = *r->job;
  v->a = *r->align;
  v->h = *r->hang;
  v->origin = lens_report_origin(v, 0);
  for (size_t i = 0; i < v->j.n_insts; i++) {
    const struct lens_job_inst *in = &v->j.insts[i];
    if (!lens_job_inst_decomposed(in)) continue;
    for (size_t k = 0; k < in->n_ranks; k++) v->coll_ns += v->j.ranks[in->first_rank + k].span_ns;
  }
  return 0;
}

void lens_report_view_free(struct lens_report_view *v) {
  memset(v, 0, sizeof *v); /* the views are the report's */
}

void lens_report_window_of(const struct lens_report_view *v, const struct lens_job_inst *in, int64_t comm_origin,
                           struct lens_report_window *w) {
  memset(w, 0, sizeof *w);
  int64_t s = INT64_MAX, e = INT64_MIN;
  for (size_t k = 0; k < in->n_ranks; k++) {
    const struct lens_job_rank *rk = &v->j.ranks[in->first_rank + k];
    uint64_t start;
    if (!lens_report_rank_start(v->r, rk, &start)) continue;
    int placed;
    int64_t a = lens_report_job_time(v, rk->proc, start, &placed);
    if (!placed) continue;
    /* its end: the mapped GPU stop, else its start plus its span (a Coll's own stop can come much later) */
    uint64_t stop = rk->kstop_mono_ns > start ? rk->kstop_mono_ns : start + rk->span_ns;
    int64_t b = lens_report_job_time(v, rk->proc, stop, &placed);
    if (a < s) s = a;
    if (b > e) e = b;
  }
  if (s > e) return;
  /* in 128 bits: times from a hostile trace may sit anywhere in int64 */
  __int128 len = (__int128)e - s, pad = len / 2 > 50000 ? len / 2 : 50000;
  __int128 since = (__int128)s - pad - comm_origin, until = (__int128)e + pad - comm_origin;
  if (since < 0) since = 0;
  if (until < since) until = since;
  if (until > INT64_MAX - 999) until = INT64_MAX - 999;
  if (since > until) since = until;
  w->ok = 1;
  w->t_s = ((double)s - (double)v->origin) / 1e9;
  w->since_us = (int64_t)(since / 1000);
  w->until_us = (int64_t)((until + 999) / 1000);
}

void lens_report_export_cmd(const struct lens_job_inst *in, const struct lens_report_window *w, char *buf, size_t len) {
  snprintf(buf, len,
           "nccl-lens export --format job --comm 0x%016" PRIx64 " --since %" PRId64 "us --until %" PRId64
           "us -o seq%" PRId64 ".json TRACES",
           in->comm_id, w->since_us, w->until_us, in->seq);
}

static int cmp_inst_wait(const void *pa, const void *pb) {
  const struct lens_job_inst *a = *(const struct lens_job_inst *const *)pa;
  const struct lens_job_inst *b = *(const struct lens_job_inst *const *)pb;
  if (a->wait_sum_ns != b->wait_sum_ns) return a->wait_sum_ns > b->wait_sum_ns ? -1 : 1;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

size_t lens_report_straggler_instances(const struct lens_report_view *v, const struct lens_job_straggler *s,
                                       const struct lens_job_inst **out, size_t max) {
  const struct lens_job *j = &v->j;
  const struct lens_job_inst **all = malloc((j->n_insts + 1) * sizeof *all);
  if (!all) return 0;
  size_t n = 0;
  for (size_t k = 0; k < j->n_insts; k++) {
    const struct lens_job_inst *in = &j->insts[k];
    if (in->comm_id == s->comm_id && in->last_rank == s->rank && lens_job_inst_straggles(j, in)) all[n++] = in;
  }
  qsort(all, n, sizeof *all, cmp_inst_wait);
  if (n > max) n = max;
  memcpy(out, all, n * sizeof *out);
  free(all);
  return n;
}

