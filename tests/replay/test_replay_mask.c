/* Mask gating (spec §1.3): which event types reach the plugin for a given
 * mask, with one process driving two ranks over a 2-node ring. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "replay_log.h"

/* Bitmask of the event types started. */
static int types_seen(int mask, int nodes) {
  struct lens_replay_opts o;
  rl_opts(&o, "allreduce", nodes, 2);
  struct rl_log lg;
  rl_run(&lg, &o, mask, NULL);
  assert_int_equal(lg.rc, 0);
  int seen = 0;
  for (int i = 0; i < lg.n; i++)
    if (!strcmp(lg.l[i].call, "start")) seen |= (int)lg.l[i].type;
  rl_free(&lg);
  return seen;
}

static void only_kernel_ch(void **state) {
  (void)state;
  /* KernelCh implies GroupApi, CollApi, Group and Coll, but not KernelLaunch,
   * ProxyOp, ProxyStep or ProxyCtrl. */
  assert_int_equal(types_seen(64, 2), 256 | 512 | 1 | 2 | 64);
}

static void only_proxy_ctrl(void **state) {
  (void)state;
  assert_int_equal(types_seen(32, 2), 32);
}

static void only_kernel_launch(void **state) {
  (void)state;
  assert_int_equal(types_seen(2048, 1), 256 | 2048);
}

static void proxy_step_implies_op(void **state) {
  (void)state;
  /* ProxyStep: GroupApi, CollApi, Group, Coll, ProxyOp and ProxyStep. */
  assert_int_equal(types_seen(16, 2), 256 | 512 | 1 | 2 | 8 | 16);
}

static void zero_mask_nothing(void **state) {
  (void)state;
  assert_int_equal(types_seen(0, 1), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(only_kernel_ch),     cmocka_unit_test(only_proxy_ctrl),
      cmocka_unit_test(only_kernel_launch), cmocka_unit_test(proxy_step_implies_op),
      cmocka_unit_test(zero_mask_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
