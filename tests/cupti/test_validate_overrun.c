/* validate on the overrun scenario (issue 26, item 5): a replay through the
 * real plugin, then `validate --json`, checked against the replay's truth by
 * overrun_fit_check.py: no unflagged channel noticed before the map places
 * it, the map late by exactly the least honest notice delay (the owners of
 * shared timers fitted, the overrun items not), a residual that is the
 * proxy's own variation (from the truth; an allreduce replay's printed
 * beside it). Without the owners in the fit
 * the map sat 1.1 ms late and 23 unflagged channels had notice lags down to
 * -1.05 ms; with slices of points the residual was the stall (12 ms). */
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
           "cd %s && mkdir -p out ref && %s replay --scenario overrun --iters 3 --out out --truth truth.json --quiet && "
           "%s validate --json out > v.json && %s replay --scenario allreduce --iters 3 --out ref --quiet && "
           "%s validate --json ref > ref.json && python3 %s/tests/cupti/overrun_fit_check.py v.json truth.json ref.json",
           dir, CLI, CLI, CLI, CLI, LENS_SOURCE_DIR);
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
