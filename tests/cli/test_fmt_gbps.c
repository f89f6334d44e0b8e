/* One way to print a bandwidth (tools/cli/format.h, lens_fmt_gbps): the
 * exact text of values that occur in summary, net, job and report, from a
 * slow link's 0.00013 GB/s to a node's 1234.5, and the width a column gives
 * it (LENS_FMT_GBPS_WIDTH); and the one way to print bytes (lens_fmt_bytes). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cli/format.h"

static void expect(double g, const char *want) {
  char buf[32];
  const char *got = lens_fmt_gbps(g, buf, sizeof buf);
  if (strcmp(got, want)) fail_msg("lens_fmt_gbps(%.17g) = \"%s\", want \"%s\"", g, got, want);
}

static void test_three_significant_digits(void **state) {
  (void)state;
  expect(0.00013, "0.00013"); /* below 0.001: two digits */
  expect(0.0013, "0.00130");
  expect(0.0129, "0.0129");
  expect(0.00102, "0.00102");
  expect(3.05, "3.05");
  expect(3.0, "3.00");
  expect(22.22, "22.2");
  expect(400, "400");
  expect(1234.5, "1235"); /* an integer from 1000 GB/s, half away from zero */
}

static void test_rounding_into_the_next_decade(void **state) {
  (void)state;
  expect(9.996, "10.0");
  expect(99.96, "100");
  expect(999.6, "1000");
  expect(0.0009996, "0.00100");
  expect(0.00099949, "0.0010"); /* 3 digits say 0.000999: two digits round it up */
}

static void test_unknown_and_tiny(void **state) {
  (void)state;
  expect(0, "-");
  expect(-1, "-");
  expect(NAN, "-");
  expect(INFINITY, "-");
  expect(0.0001, "0.00010");
  expect(0.00009, "<0.0001");
  expect(1e-12, "<0.0001");
}

/* No value below 10^7 GB/s is wider than LENS_FMT_GBPS_WIDTH, none has an
 * exponent. */
static void test_width(void **state) {
  (void)state;
  char buf[32];
  for (double g = 1e-9; g < 1e7; g *= 1.0137) {
    lens_fmt_gbps(g, buf, sizeof buf);
    if (strlen(buf) > LENS_FMT_GBPS_WIDTH) fail_msg("%.17g -> \"%s\": wider than %d", g, buf, LENS_FMT_GBPS_WIDTH);
    if (strchr(buf, 'e')) fail_msg("%.17g -> \"%s\": an exponent", g, buf);
  }
}

/* Bytes (lens_fmt_bytes), the one rule of summary, net and report. */
static void expect_bytes(uint64_t b, const char *want) {
  char buf[32];
  const char *got = lens_fmt_bytes(b, buf, sizeof buf);
  if (strcmp(got, want)) fail_msg("lens_fmt_bytes(%llu) = \"%s\", want \"%s\"", (unsigned long long)b, got, want);
}

static void test_bytes(void **state) {
  (void)state;
  expect_bytes(0, "0 B");
  expect_bytes(1023, "1023 B");
  expect_bytes(1024, "1.0 KiB");
  expect_bytes(2 << 20, "2.0 MiB");
  expect_bytes(1048524, "1023.9 KiB");
  expect_bytes(1048525, "1.0 MiB"); /* 1023.95 KiB: the next unit, never "1024.0 KiB" */
  expect_bytes(1245540515ull, "1.16 GiB");               /* two decimals from GiB below 100 */
  expect_bytes(12345678901ull, "11.50 GiB");
  expect_bytes(132607045222ull, "123.5 GiB");           /* one from 100 */
  expect_bytes(UINT64_MAX, "16.00 EiB");
  char buf[32];
  for (double b = 1; b < 1.8e19; b *= 1.0173) {
    lens_fmt_bytes((uint64_t)b, buf, sizeof buf);
    if (strlen(buf) > LENS_FMT_BYTES_WIDTH) fail_msg("%.0f -> \"%s\": wider than %d", b, buf, LENS_FMT_BYTES_WIDTH);
    if (strstr(buf, "1024.")) fail_msg("%.0f -> \"%s\": 1024 of a unit", b, buf);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_three_significant_digits),
      cmocka_unit_test(test_rounding_into_the_next_decade),
      cmocka_unit_test(test_unknown_and_tiny),
      cmocka_unit_test(test_width),
      cmocka_unit_test(test_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
