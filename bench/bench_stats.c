#include "bench_stats.h"

#include <stdlib.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_percentile(double *v, size_t n, double p) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp);
  size_t k = (size_t)(p / 100.0 * (double)n);
  if (k >= n) k = n - 1;
  return v[k];
}
