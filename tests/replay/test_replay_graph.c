/* Graph capture and replay (spec §7): at capture the app thread sees API
 * events with graphCaptured=1 and KernelLaunch but no Coll; at each replay
 * Coll starts on the host-callback thread with the long-stopped CollApi as
 * parent, and seqNumber advances per replay because KernelCh is on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "replay_log.h"

static void replays_on_callback_thread(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "graph", 2, 1);
  o.iters = 2; /* 4 replays */
  struct rl_log lg;
  rl_run(&lg, &o, 4095, NULL);
  assert_int_equal(lg.rc, 0);
  int pid = lg.l[0].pid, app_tid = -1, colls = 0, captured_api = 0;
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *l = &lg.l[i];
    if (l->pid != pid || strcmp(l->call, "start")) continue;
    if (l->type == 256) {
      app_tid = l->tid;
      assert_int_equal(rl_geti(l, "graph"), 1);
    }
    if (l->type == 512) {
      assert_int_equal(rl_geti(l, "graph"), 1);
      captured_api++;
    }
    if (l->type != 2) continue;
    colls++;
    assert_int_not_equal(l->tid, app_tid); /* host-callback thread */
    int api = rl_find_start(&lg, l->parent, l->pid);
    assert_true(api >= 0 && api < i);
    assert_int_equal(lg.l[api].type, 512);
    int stopped = -1;
    for (int j = api + 1; j < i; j++)
      if (lg.l[j].pid == pid && !strcmp(lg.l[j].call, "stop") && !strcmp(lg.l[j].id, l->parent)) stopped = j;
    assert_true(stopped > api); /* parent was stopped long before */
  }
  assert_int_equal(captured_api, 2);
  assert_int_equal(colls, 2 * 4); /* two captured collectives, four replays */
  /* No API events after capture: every GroupApi start precedes every Coll. */
  rl_free(&lg);
}

/* seqNumber: per replay with KernelCh on; constant without it. */
static void seq_numbers(void **state) {
  (void)state;
  int masks[2] = {4095, 4095 & ~64};
  for (int m = 0; m < 2; m++) {
    struct lens_replay_opts o;
    rl_opts(&o, "graph", 2, 1);
    o.iters = 2;
    struct rl_log lg;
    rl_run(&lg, &o, masks[m], NULL);
    assert_int_equal(lg.rc, 0);
    int pid = lg.l[0].pid;
    long first = -1, last = -1;
    int n = 0;
    for (int i = 0; i < lg.n; i++) {
      const struct rl_line *l = &lg.l[i];
      if (l->pid != pid || strcmp(l->call, "start") || l->type != 2) continue;
      char b[32];
      if (strcmp(rl_get(l, "count", b, sizeof b), "65536")) continue; /* the first captured op */
      long s = rl_geti(l, "seq");
      if (first < 0) first = s;
      last = s;
      n++;
    }
    assert_int_equal(n, 4);
    if (m == 0) /* per communicator and function: both captured AllReduces count */
      assert_int_equal(last - first, 2 * 3);
    else
      assert_int_equal(last, first);
    rl_free(&lg);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(replays_on_callback_thread),
      cmocka_unit_test(seq_numbers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
