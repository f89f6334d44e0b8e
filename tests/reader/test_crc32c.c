/* lens_crc32c (hardware crc32 when the CPU has SSE4.2) against the portable
 * table version: every length 0..300 at every alignment 0..7, a large
 * buffer, chained calls, and the standard check value. */
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

static void test_check_value(void **state) {
  (void)state;
  assert_int_equal(lens_crc32c(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(lens_crc32c_table(0, "123456789", 9), 0xE3069283u);
  assert_int_equal(lens_crc32c(0, "", 0), 0);
  printf("crc32c: hardware path %s\n", lens_crc32c_hw_available() ? "in use" : "not available (table)");
}

static void test_same_as_table(void **state) {
  (void)state;
  enum { N = 1 << 20 };
  uint8_t *buf = malloc(N + 8);
  assert_non_null(buf);
  uint32_t x = 12345;
  for (size_t i = 0; i < N + 8; i++) {
    x = x * 1103515245u + 12345u;
    buf[i] = (uint8_t)(x >> 16);
  }
  for (size_t off = 0; off < 8; off++)
    for (size_t len = 0; len <= 300; len++)
      assert_int_equal(lens_crc32c(0, buf + off, len), lens_crc32c_table(0, buf + off, len));
  uint32_t whole = lens_crc32c(0, buf + 3, N);
  assert_int_equal(whole, lens_crc32c_table(0, buf + 3, N));
  /* Chaining: crc(a || b) == crc(crc(a), b), split at odd places. */
  uint32_t part = lens_crc32c(0, buf + 3, 1001);
  assert_int_equal(lens_crc32c(part, buf + 3 + 1001, N - 1001), whole);
  /* A flipped bit changes it. */
  buf[500] ^= 1;
  assert_int_not_equal(lens_crc32c(0, buf + 3, N), whole);
  free(buf);
}

static void test_hdr_init_names(void **state) {
  (void)state;
  uint8_t payload[77];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)(i * 7);
  struct lens_chunk_hdr a, b;
  lens_chunk_hdr_init(&a, LENS_CHUNK_NOTE, 3, 9, payload, sizeof payload);
  lens_chunk_hdr_init_fast(&b, LENS_CHUNK_NOTE, 3, 9, payload, sizeof payload);
  assert_memory_equal(&a, &b, sizeof a);
  assert_int_equal(lens_chunk_hdr_check(&a), 0);
  assert_int_equal(lens_chunk_payload_check(&a, payload), 0);
  assert_int_equal(a.payload_crc, lens_crc32c_table(0, payload, sizeof payload));
  payload[10] ^= 0x80;
  assert_int_equal(lens_chunk_payload_check(&a, payload), -1);
  assert_int_equal(lens_crc32c_fast(0, payload, sizeof payload), lens_crc32c_table(0, payload, sizeof payload));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_check_value), cmocka_unit_test(test_same_as_table),
                                     cmocka_unit_test(test_hdr_init_names)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
