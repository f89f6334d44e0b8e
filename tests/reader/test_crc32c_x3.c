/* lens_crc32c_x3 (three interleaved streams, tools/reader/crc32c_x3.c)
 * gives lens_crc32c's value and the portable table's: every length around
 * the block sizes (3 x 256, 3 x 8192) at every alignment, big buffers,
 * chained calls, a flipped bit, the standard check value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "crc32c_fast.h"
#include "lens_chunk.h"
#include "reader/crc32c_x3.h"

static uint8_t *random_buf(size_t n) {
  uint8_t *b = malloc(n);
  assert_non_null(b);
  uint32_t x = 987654321u;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    b[i] = (uint8_t)(x >> 16);
  }
  return b;
}

static void test_same_values(void **state) {
  (void)state;
  assert_int_equal(lens_crc32c_x3(0, "123456789", 9), 0xE3069283u);
  enum { N = 3 << 20 };
  uint8_t *buf = random_buf(N + 16);
  for (size_t off = 0; off < 8; off++)
    for (size_t len = 0; len <= 3 * 256 + 40; len++)
      assert_int_equal(lens_crc32c_x3(0, buf + off, len), lens_crc32c_table(0, buf + off, len));
  const size_t lens[] = {3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 3 * 8192 + 3 * 256 + 7, 6 * 8192 + 100, 100000,
                         262144, N};
  for (size_t k = 0; k < sizeof lens / sizeof *lens; k++)
    for (size_t off = 0; off < 8; off += 3)
      assert_int_equal(lens_crc32c_x3(0, buf + off, lens[k]), lens_crc32c(0, buf + off, lens[k]));
  assert_int_equal(lens_crc32c_x3(0, buf + 5, 100000), lens_crc32c_table(0, buf + 5, 100000));
  /* Chained, split at odd places. */
  uint32_t whole = lens_crc32c_x3(0, buf + 1, N);
  uint32_t part = lens_crc32c_x3(0, buf + 1, 77777);
  assert_int_equal(lens_crc32c_x3(part, buf + 1 + 77777, N - 77777), whole);
  assert_int_equal(lens_crc32c(0, buf + 1, N), whole);
  /* A flipped bit in each stream of a block changes it. */
  for (size_t at = 100; at < 3 * 8192; at += 8192) {
    buf[1 + at] ^= 4;
    assert_int_not_equal(lens_crc32c_x3(0, buf + 1, N), whole);
    buf[1 + at] ^= 4;
  }
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_same_values)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
