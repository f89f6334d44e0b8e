/* See report_tally.h. Sorting the values once makes the count exact in
 * O(n log n) with memory for the values only: no value is missed however
 * rare the common one is among the first processes. */
#include "report/report_tally.h"

#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

void lens_report_tally(uint64_t *vals, size_t n, struct lens_report_tally *t) {
  enum { K = LENS_REPORT_TALLY_VALUES };
  memset(t, 0, sizeof *t);
  qsort(vals, n, sizeof *vals, cmp_u64);
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i; j < n && vals[j] == vals[i];) j++;
    uint64_t v = vals[i];
    size_t c = j - i, pos = t->k;
    while (pos && t->n[pos - 1] < c) pos--; /* strictly more: equal counts keep the smaller value first */
    if (pos == K) {
      t->other_vals++, t->other_procs += c;
      continue;
    }
    if (t->k == K) t->other_vals++, t->other_procs += t->n[K - 1]; /* the last kept one drops out */
    else t->k++;
    memmove(&t->v[pos + 1], &t->v[pos], (t->k - 1 - pos) * sizeof t->v[0]);
    memmove(&t->n[pos + 1], &t->n[pos], (t->k - 1 - pos) * sizeof t->n[0]);
    t->v[pos] = v, t->n[pos] = c;
  }
}
