/* validate on the overrun scenario (issue 26, item 5): a replay through the
 * real plugin, then `validate --json`, checked against the replay's truth by
 * overrun_fit_check.py: no unflagged channel noticed before the map places
 * it, the map late by exactly the least honest notice delay (the owners of
 * shared timers fitted, the overrun items not), a residual no wider than
 * the proxy's true notice delays. Without the owners in the fit the map sat
 * 1.1 ms late and 23 unflagged channels had notice lags down to -1.05 ms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"

#define CLI LENS_BUILD_DIR "/bin/nccl-lens"

static char dir[256];

static void test_overrun_fit(void **st) {
  (void)st;
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s/out && %s replay --scenario overrun --iters 3 --out %s/out --truth %s/truth.json --quiet && "
           "%s validate --json %s/out > %s/v.json && python3 %s/tests/cupti/overrun_fit_check.py %s/v.json %s/truth.json",
           dir, CLI, dir, dir, CLI, dir, dir, LENS_SOURCE_DIR, dir, dir);
  assert_int_equal(system(cmd), 0);
}

static int setup(void **st) {
  (void)st;
  lens_test_tmpdir(dir, sizeof dir, "validate-overrun");
  return 0;
}

static int teardown(void **st) {
  (void)st;
  return lens_test_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_overrun_fit)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
