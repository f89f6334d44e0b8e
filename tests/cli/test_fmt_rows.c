/* One way to cap a table with a row per process, proxy thread or host
 * (tools/cli/format.h, lens_fmt_rows): which rows, in which order, and the
 * count the "not listed" line says, for each kind of table (every row kept,
 * zero rows not listed, absent rows not in the table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cli/format.h"

/* The rows lens_fmt_rows_next gives, in order, into got[]; their count. */
static size_t rows_given(struct lens_fmt_rows *r, size_t *got, size_t cap) {
  size_t k = 0, i;
  while (lens_fmt_rows_next(r, &i)) {
    assert_true(k < cap);
    got[k++] = i;
  }
  assert_int_equal(lens_fmt_rows_next(r, &i), 0); /* stays done */
  return k;
}

static void expect_rows(const size_t *got, size_t n_got, const size_t *want, size_t n_want) {
  assert_int_equal(n_got, n_want);
  for (size_t k = 0; k < n_want; k++)
    if (got[k] != want[k]) fail_msg("row %zu: %zu, want %zu", k, got[k], want[k]);
}

static void test_a_table_that_fits_keeps_its_order(void **state) {
  (void)state;
  struct lens_fmt_rows r;
  size_t got[64];
  assert_null(lens_fmt_rows_begin(&r, LENS_FMT_LIST_ROWS, 0, LENS_FMT_ROWS_EVERY)); /* no key to fill */
  lens_fmt_rows_order(&r);
  size_t n = rows_given(&r, got, 64);
  assert_int_equal(n, LENS_FMT_LIST_ROWS);
  for (size_t k = 0; k < n; k++) assert_int_equal(got[k], k);
  lens_fmt_rows_end(&r);
  assert_int_equal(r.n - r.listed, 0);
  /* --all: 40 rows, table order, none left out */
  assert_null(lens_fmt_rows_begin(&r, 40, 1, LENS_FMT_ROWS_NONZERO));
  lens_fmt_rows_order(&r);
  n = rows_given(&r, got, 64);
  assert_int_equal(n, 40);
  for (size_t k = 0; k < n; k++) assert_int_equal(got[k], k);
  lens_fmt_rows_end(&r);
  assert_int_equal(r.n - r.listed, 0);
}

static void test_capped_largest_key_first_ties_in_table_order(void **state) {
  (void)state;
  struct lens_fmt_rows r;
  size_t got[64];
  double *key = lens_fmt_rows_begin(&r, 20, 0, LENS_FMT_ROWS_EVERY);
  assert_non_null(key);
  for (size_t i = 0; i < 20; i++) key[i] = (double)(i % 3);
  lens_fmt_rows_order(&r);
  const size_t want[] = {2, 5, 8, 11, 14, 17, 1, 4, 7, 10, 13, 16, 19, 0, 3, 6};
  expect_rows(got, rows_given(&r, got, 64), want, 16);
  lens_fmt_rows_end(&r);
  assert_int_equal(r.n, 20);
  assert_int_equal(r.n - r.listed, 4); /* what "4 more ... not listed" says */
}

static void test_nonzero_rows_only_when_capped(void **state) {
  (void)state;
  struct lens_fmt_rows r;
  size_t got[64];
  double *key = lens_fmt_rows_begin(&r, 30, 0, LENS_FMT_ROWS_NONZERO);
  assert_non_null(key);
  for (size_t i = 0; i < 30; i++) key[i] = 0;
  key[7] = 5, key[3] = 9, key[12] = 5;
  lens_fmt_rows_order(&r);
  const size_t want[] = {3, 7, 12};
  expect_rows(got, rows_given(&r, got, 64), want, 3);
  assert_int_equal(r.nonzero, 3);
  assert_int_equal(r.listed, 3);
  lens_fmt_rows_end(&r);
  /* more nonzero rows than the cap: the cap holds, the largest first */
  key = lens_fmt_rows_begin(&r, 30, 0, LENS_FMT_ROWS_NONZERO);
  assert_non_null(key);
  for (size_t i = 0; i < 30; i++) key[i] = i < 18 ? (double)(i + 1) : 0;
  lens_fmt_rows_order(&r);
  size_t n = rows_given(&r, got, 64);
  assert_int_equal(n, LENS_FMT_LIST_ROWS);
  for (size_t k = 0; k < n; k++) assert_int_equal(got[k], 17 - k);
  assert_int_equal(r.nonzero, 18);
  lens_fmt_rows_end(&r);
  /* fits: every row, zeros too, no key asked for */
  assert_null(lens_fmt_rows_begin(&r, 5, 0, LENS_FMT_ROWS_NONZERO));
  lens_fmt_rows_order(&r);
  assert_int_equal(rows_given(&r, got, 64), 5);
  lens_fmt_rows_end(&r);
}

static void test_absent_rows_are_not_in_the_table(void **state) {
  (void)state;
  struct lens_fmt_rows r;
  size_t got[64];
  /* 30 rows, the even ones absent: 15 present fit, table order */
  double *key = lens_fmt_rows_begin(&r, 30, 0, LENS_FMT_ROWS_PRESENT);
  assert_non_null(key); /* always: the key says which rows are present */
  for (size_t i = 0; i < 30; i++) key[i] = i % 2 ? 100.0 - (double)i : -1.0;
  lens_fmt_rows_order(&r);
  size_t n = rows_given(&r, got, 64);
  assert_int_equal(n, 15);
  for (size_t k = 0; k < n; k++) assert_int_equal(got[k], 2 * k + 1);
  assert_int_equal(r.n, 15);
  lens_fmt_rows_end(&r);
  /* 40 rows, every fourth absent: 30 present, capped to 16, largest key first */
  key = lens_fmt_rows_begin(&r, 40, 0, LENS_FMT_ROWS_PRESENT);
  assert_non_null(key);
  for (size_t i = 0; i < 40; i++) key[i] = i % 4 ? (double)i : -1.0;
  lens_fmt_rows_order(&r);
  const size_t want[] = {39, 38, 37, 35, 34, 33, 31, 30, 29, 27, 26, 25, 23, 22, 21, 19};
  expect_rows(got, rows_given(&r, got, 64), want, 16);
  lens_fmt_rows_end(&r);
  assert_int_equal(r.n - r.listed, 14);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_table_that_fits_keeps_its_order),
      cmocka_unit_test(test_capped_largest_key_first_ties_in_table_order),
      cmocka_unit_test(test_nonzero_rows_only_when_capped),
      cmocka_unit_test(test_absent_rows_are_not_in_the_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
