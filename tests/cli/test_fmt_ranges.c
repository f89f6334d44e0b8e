/* One way to name a set of ranks (tools/cli/format.h, lens_fmt_ranges):
 * runs of three or more as first-last, pairs as two ranks, touching runs
 * joined, repeats counted once, and a list cut by its run cap or its buffer
 * ends in "..." without passing the buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cli/format.h"

/* Each rank of r[] added as a run of one. */
static const char *of(char *buf, size_t len, const int64_t *r, size_t n, size_t max_runs) {
  struct lens_fmt_ranges rl;
  lens_fmt_ranges_begin(&rl, buf, len, max_runs);
  for (size_t i = 0; i < n; i++) lens_fmt_ranges_add(&rl, r[i], r[i]);
  return lens_fmt_ranges_end(&rl);
}

static void test_runs_pairs_and_singles(void **state) {
  (void)state;
  char b[64];
  const int64_t r[] = {0, 1, 2, 3, 8, 10, 11, 11, 17, 18, 19, 20};
  assert_string_equal(of(b, sizeof b, r, sizeof r / sizeof r[0], 32), "0-3,8,10,11,17-20");
  assert_string_equal(of(b, sizeof b, r, 0, 32), "");
}

/* One run alone, as hang's wrapped lists write each run too. */
static void test_one_run(void **state) {
  (void)state;
  char b[32];
  assert_int_equal(lens_fmt_run(b, sizeof b, 5, 5), 1);
  assert_string_equal(b, "5");
  lens_fmt_run(b, sizeof b, 5, 6);
  assert_string_equal(b, "5,6"); /* two ranks are not a range */
  lens_fmt_run(b, sizeof b, 5, 9);
  assert_string_equal(b, "5-9");
}

static void test_added_runs_join_when_they_touch(void **state) {
  (void)state;
  char b[64];
  struct lens_fmt_ranges rl;
  lens_fmt_ranges_begin(&rl, b, sizeof b, 8);
  lens_fmt_ranges_add(&rl, 0, 2);
  lens_fmt_ranges_add(&rl, 3, 5); /* touches 0-2 */
  lens_fmt_ranges_add(&rl, 9, 9);
  lens_fmt_ranges_add(&rl, 4, 3); /* empty: ignored */
  lens_fmt_ranges_add(&rl, 1000, 1023);
  assert_string_equal(lens_fmt_ranges_end(&rl), "0-5,9,1000-1023");
}

static void test_cut_by_run_cap_and_buffer(void **state) {
  (void)state;
  int64_t r[40];
  for (int i = 0; i < 40; i++) r[i] = 2 * i; /* 40 runs of one */
  char b[256];
  assert_string_equal(of(b, sizeof b, r, 40, 3), "0,2,4,...");
  char small[12];
  of(small, sizeof small, r, 40, 32);
  assert_true(strlen(small) < sizeof small);
  assert_string_equal(small, "0,2,4,6,..."); /* 11 characters and the NUL: full */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_runs_pairs_and_singles),
      cmocka_unit_test(test_one_run),
      cmocka_unit_test(test_added_runs_join_when_they_touch),
      cmocka_unit_test(test_cut_by_run_cap_and_buffer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
