/* Copy-engine collectives (API v6+: CeColl, CeSync, CeBatch) in every view:
 * a replay of the `ce` scenario through the real plugin, then summary (text
 * and JSON), report, export, job (text and JSON) and the agent's exposition
 * of the live page, checked by ce_check.py against the scenario's counts
 * (issue 9: such a replay read "no collective or point-to-point operations").
 * And the default API (NCCL 2.28.9, v5) is never given CE events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"

#define CLI LENS_BUILD_DIR "/bin/nccl-lens"

static char dir[256];

static void test_ce_in_every_view(void **st) {
  (void)st;
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s/out %s/reg && NCCL_LENS_REGISTRY_DIR=%s/reg NCCL_LENS_LIVE_PERIOD_MS=100 "
           "NCCL_LENS_FLUSH_TIMEOUT_MS=30000 %s replay --scenario ce --api auto --iters 3 --out %s/out --quiet && "
           "%s agent --once --dir %s/reg > %s/m.prom && python3 %s/tests/cli/ce_check.py %s %s/out 3 2 %s/m.prom",
           dir, dir, dir, CLI, dir, CLI, dir, dir, LENS_SOURCE_DIR, CLI, dir, dir);
  assert_int_equal(system(cmd), 0);
}

/* ce through the v5 API (the default) cannot be honoured: a usage error, one line, nothing run. */
static void test_v5_gets_no_ce(void **st) {
  (void)st;
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "rm -rf %s/v5 && mkdir -p %s/v5 && %s replay --scenario ce --out %s/v5 --quiet 2> %s/v5.err; "
           "test $? = 2 && test $(wc -l < %s/v5.err) = 1 && grep -q 'scenario ce needs --api 6, 7 or auto' %s/v5.err && "
           "! ls %s/v5/*.lens 2>/dev/null",
           dir, dir, CLI, dir, dir, dir, dir, dir);
  assert_int_equal(system(cmd), 0);
}

static int setup(void **st) {
  (void)st;
  lens_test_tmpdir(dir, sizeof dir, "cli-ce");
  return 0;
}

static int teardown(void **st) {
  (void)st;
  return lens_test_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ce_in_every_view),
      cmocka_unit_test(test_v5_gets_no_ce),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
