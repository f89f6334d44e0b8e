/* One-way pairs (job_priv.h, oneway.h): within each matched instance, the
 * send op of the link a -> b on a channel and the recv op of that link are
 * the two ends of the same transfers, so their evidence of one step makes a
 * pair: true(receiver's evidence) >= true(sender's evidence). A link seen
 * more than once on one side of an instance (several ops of one connection,
 * or a lost op on the other side) is ambiguous: no pair (a wrong pair would
 * be a wrong hard bound). Only pairs between processes of different host
 * names are kept (the map already left out peers of its own host): the
 * others share a CLOCK_MONOTONIC and say nothing about offsets (the
 * alignment checks the finer host identity again). Memory: 32 bytes per op
 * whose peer is on another host, while the reduce runs. */
#include <stdlib.h>

#include "job_priv.h"

int lens_job_wends_add(const struct lens_job *j, size_t row, const struct lens_job_rank *r,
                       const struct lens_job_wop *w, size_t n, struct lens_job_wend **v, size_t *nv, size_t *cap) {
  if (r->proc < 0 || !j->n_insts) return 0;
  /* the row's instance: the last whose first row is at or before it */
  size_t lo = 0, hi = j->n_insts - 1;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (j->insts[mid].first_rank <= row) lo = mid;
    else hi = mid - 1;
  }
  for (size_t q = 0; q < n; q++) {
    if (*nv == *cap) {
      size_t nc = *cap ? *cap * 2 : 1024;
      struct lens_job_wend *x = realloc(*v, nc * sizeof *x);
      if (!x) return -1;
      *v = x, *cap = nc;
    }
    (*v)[(*nv)++] = (struct lens_job_wend){.inst = (uint32_t)lo, .snd = w[q].is_send ? r->rank : w[q].peer,
                                           .rcv = w[q].is_send ? w[q].peer : r->rank, .proc = r->proc,
                                           .ch = w[q].channel, .is_send = w[q].is_send, .t = w[q].t};
  }
  return 0;
}

static int wend_cmp(const void *x, const void *y) {
  const struct lens_job_wend *a = x, *b = y;
#define C(f)                                                                                                           \
  if (a->f != b->f) return a->f < b->f ? -1 : 1
  C(inst);
  C(snd);
  C(rcv);
  C(ch);
  C(is_send);
#undef C
  return 0;
}

int lens_job_pair_oneway(struct lens_job *j, struct lens_job_wend *v, size_t n, const int32_t *host_of) {
  if (n < 2) return 0; /* no pair (and v may be NULL) */
  qsort(v, n, sizeof *v, wend_cmp);
  size_t cap = 0;
  for (size_t s = 0; s < n;) {
    size_t e = s + 1;
    while (e < n && v[e].inst == v[s].inst && v[e].snd == v[s].snd && v[e].rcv == v[s].rcv && v[e].ch == v[s].ch) e++;
    /* sorted recv (0) first, then send (1): one of each, or nothing */
    if (e - s == 2 && !v[s].is_send && v[s + 1].is_send) {
      const struct lens_job_wend *rv = &v[s], *sd = &v[s + 1];
      if (host_of[sd->proc] != host_of[rv->proc]) {
        if (j->n_oneway == cap) {
          size_t nc = cap ? cap * 2 : 1024;
          struct lens_job_oneway *x = realloc(j->oneway, nc * sizeof *x);
          if (!x) return -1;
          j->oneway = x, cap = nc;
        }
        j->oneway[j->n_oneway++] = (struct lens_job_oneway){sd->proc, rv->proc, sd->t, rv->t};
      }
    } else if (e - s > 2 || (e - s == 2 && v[s].is_send == v[s + 1].is_send)) {
      j->oneway_ambiguous++;
    }
    s = e;
  }
  return 0;
}
