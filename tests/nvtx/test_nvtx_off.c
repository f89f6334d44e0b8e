/* NCCL_LENS_NVTX=0 (set by ctest) with a tool named in NVTX_INJECTION64_PATH:
 * the emitter makes zero NVTX calls, so NVTX never even loads the tool. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvtx_check.h"
#include "nvtx_emit.h"
#include "nvtx_fakes.h"

static void test_off_means_zero_calls(void **state) {
  const char *path = getenv("NVTX_INJECTION64_PATH");
  assert_non_null(path);
  assert_string_equal(path, NVTX_INJECT_PATH);
  assert_string_equal(getenv("NCCL_LENS_NVTX"), "0");
  lens_nvtx_setup();
  lens_nvtx_teardown();
  lens_nvtx_setup();
  assert_int_equal(lens_nvtx_active, 0);
  assert_null(lens_nvtx_g.domain);
  assert_null(nvtx_log_if_loaded(path)); /* no NVTX call ran: the loader never opened it */
}

/* The control: the same library does load, and records, once NVTX is used. */
static void test_control_tool_loads_on_first_call(void **state) {
  nvtxDomainHandle_t d = nvtxDomainCreateA("control");
  assert_non_null(d);
  const struct nvtx_inject_log *log = nvtx_log_if_loaded(NVTX_INJECT_PATH);
  assert_non_null(log);
  assert_true(nvtx_domain_index(log, "control") >= 0);
  assert_int_equal(nvtx_domain_index(log, LENS_NVTX_DOMAIN), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_off_means_zero_calls),
      cmocka_unit_test(test_control_tool_loads_on_first_call),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
