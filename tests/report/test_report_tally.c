/* The report's count of one fact over the processes (report_tally.h): the
 * most common values kept, most processes first and equal counts by value,
 * one that comes later with more processes pushing the last kept out, and
 * the values not kept counted so that every process is accounted for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "report/report_tally.h"

static void expect(const struct lens_report_tally *t, const uint64_t *v, const size_t *n, size_t k, size_t ov,
                   size_t op) {
  assert_int_equal(t->k, k);
  for (size_t i = 0; i < k; i++) {
    assert_int_equal(t->v[i], v[i]);
    assert_int_equal(t->n[i], n[i]);
  }
  assert_int_equal(t->other_vals, ov);
  assert_int_equal(t->other_procs, op);
}

static void test_most_common_first_rest_counted(void **state) {
  (void)state;
  /* 9 once, 7 twice, 5 three times, 1 twice, 4 once, 8 four times (it comes last when sorted) */
  uint64_t vals[] = {5, 9, 7, 1, 5, 4, 7, 1, 5, 8, 8, 8, 8};
  struct lens_report_tally t;
  lens_report_tally(vals, sizeof vals / sizeof vals[0], &t);
  const uint64_t v[] = {8, 5, 1};
  const size_t n[] = {4, 3, 2};
  expect(&t, v, n, 3, 3, 4); /* 4, 7 and 9: 1 + 2 + 1 processes */
}

static void test_one_value_and_none(void **state) {
  (void)state;
  uint64_t vals[1024];
  for (size_t i = 0; i < 1024; i++) vals[i] = 5;
  struct lens_report_tally t;
  lens_report_tally(vals, 1024, &t);
  const uint64_t v[] = {5};
  const size_t n[] = {1024};
  expect(&t, v, n, 1, 0, 0);
  lens_report_tally(vals, 0, &t);
  expect(&t, v, n, 0, 0, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_most_common_first_rest_counted),
      cmocka_unit_test(test_one_value_and_none),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
