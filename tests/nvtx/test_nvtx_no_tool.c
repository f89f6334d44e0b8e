/* With no NVTX_INJECTION64_PATH, the emitter's setup finds no tool: the hot
 * path stays off (lens_nvtx_active = 0) and the injection is never loaded. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "nvtx_check.h"
#include "nvtx_emit.h"
#include "nvtx_fakes.h"

static void test_no_tool_means_inactive(void **state) {
  unsetenv("NVTX_INJECTION64_PATH");
  lens_nvtx_setup();
  assert_int_equal(lens_nvtx_active, 0);
  assert_null(lens_nvtx_g.domain);
  assert_null(nvtx_log_if_loaded(NVTX_INJECT_PATH));
  /* setting the variable later does not attach: NVTX reads it once per instance */
  setenv("NVTX_INJECTION64_PATH", NVTX_INJECT_PATH, 1);
  lens_nvtx_setup();
  assert_int_equal(lens_nvtx_active, 0);
  assert_null(nvtx_log_if_loaded(NVTX_INJECT_PATH));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_tool_means_inactive)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
