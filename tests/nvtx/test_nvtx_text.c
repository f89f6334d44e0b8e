/* Allocation-free message text: byte sizes, numbers, truncation, datatypes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nvtx_text.h"

static const char *bytes(uint64_t b) {
  static char buf[64];
  struct lens_text t;
  lens_text_init(&t, buf, sizeof(buf));
  lens_text_bytes(&t, b);
  return buf;
}

static void test_bytes(void **state) {
  assert_string_equal(bytes(0), "0 B");
  assert_string_equal(bytes(1023), "1023 B");
  assert_string_equal(bytes(1024), "1 KiB");
  assert_string_equal(bytes(1536), "1.5 KiB");
  assert_string_equal(bytes(1024 + 1023), "1.9 KiB"); /* truncated, never rounded up */
  assert_string_equal(bytes(4u << 20), "4 MiB");
  assert_string_equal(bytes((3ull << 30) + (1ull << 29)), "3.5 GiB");
  assert_string_equal(bytes(UINT64_MAX), "15.9 EiB"); /* 16 EiB - 1 */
}

static void test_numbers_and_truncation(void **state) {
  char buf[8];
  struct lens_text t;
  lens_text_init(&t, buf, sizeof(buf));
  lens_text_i64(&t, INT64_MIN);
  assert_string_equal(buf, "-922337"); /* cut at the buffer, NUL-terminated */
  assert_int_equal(t.len, 7);
  lens_text_str(&t, "more");
  lens_text_char(&t, 'x');
  assert_string_equal(buf, "-922337");
  char big[32];
  lens_text_init(&t, big, sizeof(big));
  lens_text_u64(&t, UINT64_MAX);
  lens_text_char(&t, ' ');
  lens_text_str(&t, NULL);
  assert_string_equal(big, "18446744073709551615 ?");
}

static void test_datatypes(void **state) {
  struct lens_dtype_cache c;
  memset(&c, 0, sizeof(c));
  char name[16];
  strcpy(name, "ncclFloat32"); /* not our literal: matched by content */
  assert_int_equal(lens_dtype_size(&c, name), 4);
  assert_string_equal(lens_dtype_short(&c, name), "f32");
  strcpy(name, "ncclBfloat16"); /* same pointer, new content: the cache is by pointer, a known trade-off */
  assert_int_equal(lens_dtype_size(NULL, name), 2);
  assert_int_equal(lens_dtype_size(&c, "ncclFloat8e5m2"), 1);
  assert_int_equal(lens_dtype_size(&c, "Unknown"), 1); /* what ncclUint8 is reported as */
  assert_int_equal(lens_dtype_size(&c, "ncclInt64"), 8);
  assert_int_equal(lens_dtype_size(&c, "bogus"), 0);
  assert_string_equal(lens_dtype_short(&c, "bogus"), "bogus");
  assert_string_equal(lens_dtype_short(&c, NULL), "?");
  assert_int_equal(lens_dtype_size(&c, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bytes),
      cmocka_unit_test(test_numbers_and_truncation),
      cmocka_unit_test(test_datatypes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
