#include "summary/summary_top.h"

#include <stdlib.h>

static uint64_t row_time(const struct lens_sum_row *r) {
  return r->completion.n ? r->completion.sum : r->enqueue.sum;
}

size_t lens_summary_top(struct lens_summary *s, size_t top) {
  if (!top || !s->n_rows) return 0;
  unsigned char *keep = malloc(s->n_rows);
  if (!keep) return 0; /* out of memory: every row, which is never wrong */
  for (size_t i = 0; i < s->n_rows; i++) {
    /* Rows of the same group that took longer (earlier rows win ties). */
    size_t better = 0;
    uint64_t ti = row_time(&s->rows[i]);
    for (size_t j = 0; j < s->n_rows && better < top; j++) {
      if (j == i || s->rows[j].group != s->rows[i].group) continue;
      uint64_t tj = row_time(&s->rows[j]);
      better += tj > ti || (tj == ti && j < i);
    }
    keep[i] = better < top;
  }
  size_t k = 0;
  for (size_t i = 0; i < s->n_rows; i++) {
    struct lens_sum_row *r = &s->rows[i];
    if (keep[i]) {
      s->rows[k++] = *r;
      continue;
    }
    /* a summary owns its rows' strings (lens_summary_map): a row left out frees them */
    free((char *)r->func), free((char *)r->algo), free((char *)r->proto), free((char *)r->kernel_variant);
  }
  size_t dropped = s->n_rows - k;
  s->n_rows = k;
  free(keep);
  return dropped;
}
