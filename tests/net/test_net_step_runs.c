/* The net partial's compact step runs (tools/analysis/net/net_step_runs.h):
 * every value comes back exactly -- sorted runs as the map writes them,
 * unsorted ones (deltas wrap), the extremes of the time and tag fields --
 * the length counted before writing is the length written, and a sorted
 * run of close times takes far less than 8 bytes a step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "net_step_runs.h"

#define NS_MAX ((UINT64_C(1) << 54) - 1)

static uint64_t pack(uint64_t ns, unsigned tag) { return ns << 10 | (tag & 1023u); }

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static int by_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Encodes v, decodes it back, checks both; returns the bytes taken. */
static size_t round_trip(const uint64_t *v, size_t n) {
  struct lens_net_steps_cursor c;
  lens_net_steps_start(&c);
  size_t len = 0;
  for (size_t i = 0; i < n; i++) len += lens_net_steps_len(&c, v[i]);
  uint8_t *buf = malloc(len + 1);
  assert_non_null(buf);
  lens_net_steps_start(&c);
  uint8_t *w = buf;
  for (size_t i = 0; i < n; i++) w = lens_net_steps_put(&c, v[i], w);
  assert_int_equal((size_t)(w - buf), len);
  lens_net_steps_start(&c);
  const uint8_t *q = buf;
  for (size_t i = 0; i < n; i++) {
    uint64_t x = ~0ull;
    q = lens_net_steps_get(&c, q, &x);
    assert_int_equal(x, v[i]);
  }
  assert_ptr_equal(q, buf + len);
  free(buf);
  return len;
}

static void test_extremes(void **state) {
  (void)state;
  uint64_t v[] = {pack(0, 0), pack(0, 1023), pack(NS_MAX, 0), pack(NS_MAX, 1023), pack(0, 0), pack(1, 512),
                  pack(NS_MAX - 1, 1), pack(NS_MAX, 1), pack(12345, 1), pack(12345, 1)};
  round_trip(v, sizeof v / sizeof *v);
  round_trip(v, 0);
}

static void test_sorted_runs_are_compact(void **state) {
  (void)state;
  size_t n = 100000;
  uint64_t *v = malloc(n * sizeof *v);
  assert_non_null(v);
  /* one link: steps of 10..60 us in two size classes, a few starved */
  for (size_t i = 0; i < n; i++)
    v[i] = pack(10000 + next() % 50000, (unsigned)(1u << 8 | (next() % 2 ? 20 : 21)) << 1 | (next() % 100 == 0));
  qsort(v, n, sizeof *v, by_u64);
  size_t len = round_trip(v, n);
  assert_true(len < n * 3); /* not 8 bytes a step */
  free(v);
}

static void test_any_order(void **state) {
  (void)state;
  size_t n = 20000;
  uint64_t *v = malloc(n * sizeof *v);
  assert_non_null(v);
  for (size_t i = 0; i < n; i++) v[i] = pack(next() & NS_MAX, (unsigned)next());
  round_trip(v, n);
  free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_extremes),
      cmocka_unit_test(test_sorted_runs_are_compact),
      cmocka_unit_test(test_any_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
