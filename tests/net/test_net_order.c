/* net's orderings (tools/analysis/net/net_order.c) give what qsort gives:
 * the radix sort the same array, the selection the same lower median, on
 * random, duplicated, sorted, reversed and constant inputs of every size
 * around the switch to radix (64) and the digit width (2^11). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net_order.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static int by_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}
static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* kind 0 random 64-bit, 1 net's packed steps (ns << 10 | class << 1 | starved), 2 few distinct, 3 sorted,
 * 4 reversed, 5 constant */
static uint64_t value(int kind, size_t i, size_t n) {
  switch (kind) {
  case 0: return next();
  case 1: return (next() % 2000000) << 10 | (next() % 512) << 1 | (next() & 1);
  case 2: return next() % 5;
  case 3: return i * 3;
  case 4: return (n - i) * 3;
  default: return 42;
  }
}

static void test_sort_is_qsorts(void **state) {
  (void)state;
  const size_t sizes[] = {0, 1, 2, 3, 63, 64, 65, 100, 2047, 2048, 2049, 5000, 100000};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    size_t n = sizes[s];
    uint64_t *v = malloc((n + 1) * sizeof *v), *w = malloc((n + 1) * sizeof *w), *tmp = malloc((n + 1) * sizeof *tmp);
    assert_non_null(v), assert_non_null(w), assert_non_null(tmp);
    for (int kind = 0; kind < 6; kind++) {
      for (size_t i = 0; i < n; i++) v[i] = w[i] = value(kind, i, n);
      lens_sort_u64(v, n, tmp);
      qsort(w, n, sizeof *w, by_u64);
      if (n) assert_memory_equal(v, w, n * sizeof *v);
    }
    free(v), free(w), free(tmp);
  }
}

static void test_median_is_sorted_middle(void **state) {
  (void)state;
  assert_true(lens_lower_median(NULL, 0) == 0);
  const size_t sizes[] = {1, 2, 3, 4, 5, 10, 63, 64, 1000, 4881, 100000};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    size_t n = sizes[s];
    double *v = malloc(n * sizeof *v), *w = malloc(n * sizeof *w);
    assert_non_null(v), assert_non_null(w);
    for (int kind = 0; kind < 6; kind++) {
      for (size_t i = 0; i < n; i++) v[i] = w[i] = (double)(value(kind, i, n) % 100000) / 7.0;
      double got = lens_lower_median(v, n);
      qsort(w, n, sizeof *w, by_double);
      assert_true(got == w[(n - 1) / 2]);
      qsort(v, n, sizeof *v, by_double); /* reordered, not changed */
      assert_memory_equal(v, w, n * sizeof *v);
    }
    free(v), free(w);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_sort_is_qsorts), cmocka_unit_test(test_median_is_sorted_middle)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
