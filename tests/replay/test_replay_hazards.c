/* Hazards the driver injects (spec §2.8, §3, §4) as the plugin sees them:
 * PXN ops from another process, the duplicate recv step start, a ProxyOp
 * never stopped, a NetPlugin stop with a NULL handle, KernelCh ring
 * overrun (equal timers from a newer item) and p2p pairs sharing timers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "replay_log.h"

static bool is(const struct rl_line *l, const char *call) { return !strcmp(l->call, call); }

static int stops_of(const struct rl_log *lg, const struct rl_line *s) {
  int n = 0;
  for (int j = 0; j < lg->n; j++)
    if (lg->l[j].pid == s->pid && is(&lg->l[j], "stop") && !strcmp(lg->l[j].id, s->id)) n++;
  return n;
}

static void pxn_foreign(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "pxn", 1, 2);
  struct rl_log lg;
  rl_run(&lg, &o, 4095, NULL);
  assert_int_equal(lg.rc, 0);
  int foreign = 0, steps = 0;
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *l = &lg.l[i];
    if (!is(l, "start") || l->type != 8 || rl_geti(l, "pid") == l->pid) continue;
    foreign++;
    assert_int_equal(l->ctx[0], 'x'); /* not a context this plugin made */
    assert_int_equal(l->parent[0], 'x');
    for (int j = i + 1; j < lg.n; j++) /* its steps hang under the handle we returned */
      if (is(&lg.l[j], "start") && lg.l[j].type == 16 && !strcmp(lg.l[j].parent, l->id)) {
        assert_int_equal(lg.l[j].ctx[0], 'x');
        steps++;
      }
    assert_int_equal(stops_of(&lg, l), 1);
  }
  assert_int_equal(foreign, 4);
  assert_true(steps >= 4 * 4);
  rl_free(&lg);
}

static void mixed_hazards(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "mixed", 2, 1);
  struct rl_log lg;
  rl_run(&lg, &o, 4095 & ~128, NULL); /* no NetPlugin bit: its stop gets NULL */
  assert_int_equal(lg.rc, 0);
  int null_stops = 0, never_stopped_ops = 0, dup = 0, groups_shared = 0;
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *l = &lg.l[i];
    if (is(l, "stop") && !strcmp(l->id, "0")) null_stops++;
    if (is(l, "start") && l->type == 8 && stops_of(&lg, l) == 0) never_stopped_ops++;
    if (is(l, "start") && l->type == 16 && stops_of(&lg, l) == 0) {
      /* the superseded start: the same step of the same op is started again */
      for (int j = i + 1; j < lg.n; j++)
        if (lg.l[j].pid == l->pid && is(&lg.l[j], "start") && lg.l[j].type == 16 &&
            !strcmp(lg.l[j].parent, l->parent) && rl_geti(&lg.l[j], "step") == rl_geti(l, "step")) {
          dup++;
          break;
        }
    }
    if (is(l, "start") && l->type == 512) { /* CollApis of two contexts under one GroupApi */
      for (int j = i + 1; j < lg.n; j++)
        if (lg.l[j].pid == l->pid && is(&lg.l[j], "start") && lg.l[j].type == 512 &&
            !strcmp(lg.l[j].parent, l->parent) && strcmp(lg.l[j].ctx, l->ctx)) {
          groups_shared++;
          break;
        }
    }
  }
  assert_int_equal(null_stops, 2);        /* one per process */
  assert_int_equal(never_stopped_ops, 2); /* collnet-like, one per process */
  assert_int_equal(dup, 2);
  assert_true(groups_shared >= 2);
  rl_free(&lg);
}

/* Overrun: channel-0 items 1..8 of the stalled proxy report items 65..72's
 * timers, so their start pTimers equal later KernelCh starts' pTimers. */
static void overrun_reuses_timers(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "overrun", 1, 1);
  o.nodes = 2; /* one rank per process: rank 0's proxy is stalled */
  struct rl_log lg;
  rl_run(&lg, &o, 64, NULL);
  assert_int_equal(lg.rc, 0);
  int pid = -1;
  for (int i = 0; i < lg.n && pid < 0; i++)
    if (is(&lg.l[i], "init") && strstr(lg.l[i].rest, " rank=0")) pid = lg.l[i].pid;
  uint64_t t[256];
  int n = 0;
  for (int i = 0; i < lg.n && n < 256; i++)
    if (lg.l[i].pid == pid && is(&lg.l[i], "start") && lg.l[i].type == 64)
      t[n++] = strtoull(strstr(lg.l[i].rest, "ptimer=") + 7, NULL, 10);
  assert_int_equal(n, 72);
  int equal = 0;
  for (int i = 0; i < 8; i++) equal += t[i] == t[i + 64];
  assert_int_equal(equal, 8);
  for (int i = 8; i < 64; i++) assert_true(t[i] < t[i + 1]);
  rl_free(&lg);
}

/* A send/recv pair on a channel is one GPU work item: two KernelCh, equal timers. */
static void p2p_pair_equal_timers(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "sendrecv", 1, 2);
  struct rl_log lg;
  rl_run(&lg, &o, 4095, NULL);
  assert_int_equal(lg.rc, 0);
  int pairs = 0;
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *a = &lg.l[i];
    if (!is(a, "start") || a->type != 64) continue;
    for (int j = i + 1; j < lg.n; j++) {
      const struct rl_line *b = &lg.l[j];
      if (!is(b, "start") || b->type != 64 || b->tid != a->tid) continue;
      if (!strcmp(strstr(a->rest, "ptimer="), strstr(b->rest, "ptimer="))) {
        int pa = rl_find_start(&lg, a->parent, a->pid), pb = rl_find_start(&lg, b->parent, b->pid);
        char x[16], y[16];
        assert_string_not_equal(rl_get(&lg.l[pa], "func", x, 16), rl_get(&lg.l[pb], "func", y, 16));
        pairs++;
      }
      break;
    }
  }
  assert_true(pairs >= 2);
  rl_free(&lg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(pxn_foreign),
      cmocka_unit_test(mixed_hazards),
      cmocka_unit_test(overrun_reuses_timers),
      cmocka_unit_test(p2p_pair_equal_timers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
