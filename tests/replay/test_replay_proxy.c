/* Proxy-thread sequences (spec §2.5, §3): ProxyStep state machines for send
 * and recv with transSize carried over, ProxyOp starts inside Append
 * windows, ProxyCtrl and KernelCh on the proxy thread, KernelCh record 22
 * then stop with epoch-like pTimers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "replay_log.h"

static struct rl_log lg;

static int setup(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "allreduce", 2, 1);
  rl_run(&lg, &o, 4095, NULL);
  return lg.rc;
}
static int teardown(void **state) {
  (void)state;
  rl_free(&lg);
  return 0;
}

static bool is(const struct rl_line *l, const char *call) { return !strcmp(l->call, call); }

static void step_state_machines(void **state) {
  (void)state;
  int sends = 0, recvs = 0;
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *s = &lg.l[i];
    if (!is(s, "start") || s->type != 16) continue;
    int op = rl_find_start(&lg, s->parent, s->pid);
    assert_true(op >= 0);
    bool send = rl_geti(&lg.l[op], "send") == 1;
    int st[64] = {0}, ns = 0;
    uint64_t args[64];
    bool stopped = false;
    for (int j = i + 1; j < lg.n; j++) {
      const struct rl_line *l = &lg.l[j];
      if (l->pid != s->pid || strcmp(l->id, s->id)) continue;
      if (is(l, "record")) {
        assert_false(stopped);
        assert_true(ns < 64);
        args[ns] = l->args;
        st[ns++] = l->state;
      }
      if (is(l, "stop")) stopped = true;
    }
    assert_true(stopped);
    if (send) { /* 8, 20 x m (m >= 1), 9 */
      assert_true(ns >= 3);
      assert_int_equal(st[0], 8);
      for (int k = 1; k < ns - 1; k++) assert_int_equal(st[k], 20);
      assert_int_equal(st[ns - 1], 9);
      assert_true(args[ns - 1] > 0);
      sends++;
    } else { /* 10, 11, 12 */
      assert_int_equal(ns, 3);
      assert_int_equal(st[0], 10);
      assert_int_equal(st[1], 11);
      assert_int_equal(st[2], 12);
      assert_true(args[1] > 0);
      recvs++;
    }
  }
  assert_true(sends > 0);
  assert_true(recvs > 0);
}

/* On 8, 20 and 10, transSize is the op's current sub->transSize: the size
 * of its latest 9 or 11 in time (0 before the first). */
static void trans_size_carried(void **state) {
  (void)state;
  int checked = 0;
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *op = &lg.l[i];
    if (!is(op, "start") || op->type != 8) continue;
    char steps[256][24];
    int nsteps = 0;
    uint64_t cur = 0;
    for (int j = i + 1; j < lg.n; j++) {
      const struct rl_line *l = &lg.l[j];
      if (l->pid != op->pid) continue;
      if (is(l, "start") && l->type == 16 && !strcmp(l->parent, op->id) && nsteps < 256)
        snprintf(steps[nsteps++], 24, "%s", l->id);
      if (!is(l, "record")) continue;
      bool mine = false;
      for (int k = 0; k < nsteps && !mine; k++) mine = !strcmp(steps[k], l->id);
      if (!mine) continue;
      if (l->state == 8 || l->state == 10 || l->state == 20) {
        assert_int_equal(l->args, cur);
        checked++;
      }
      if (l->state == 9 || l->state == 11) cur = l->args;
    }
  }
  assert_true(checked > 4);
}

static bool on_app(const int *tids, int n, int tid) {
  for (int k = 0; k < n; k++)
    if (tids[k] == tid) return true;
  return false;
}

static void proxy_thread_calls(void **state) {
  (void)state;
  int app_tids[16], napp = 0, in_window = 0, ops = 0, kch = 0;
  for (int i = 0; i < lg.n; i++)
    if (is(&lg.l[i], "start") && lg.l[i].type == 256) {
      bool have = false;
      for (int k = 0; k < napp; k++) have |= app_tids[k] == lg.l[i].tid;
      if (!have && napp < 16) app_tids[napp++] = lg.l[i].tid;
    }
  assert_int_equal(napp, 2); /* one app thread per process */
  int open_tids[64], nopen = 0; /* threads inside an Append window */
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *l = &lg.l[i];
    if (is(l, "record") && l->state == 17 && nopen < 64) open_tids[nopen++] = l->tid, in_window++;
    if (is(l, "record") && l->state == 18)
      for (int k = 0; k < nopen; k++)
        if (open_tids[k] == l->tid) open_tids[k] = open_tids[--nopen];
    if (is(l, "start") && l->type == 8) { /* ProxyOp: only inside an Append window of its thread */
      bool inside = false;
      for (int k = 0; k < nopen; k++) inside |= open_tids[k] == l->tid;
      assert_true(inside);
      assert_false(on_app(app_tids, napp, l->tid));
      ops++;
    }
    if (is(l, "start") && (l->type == 32 || l->type == 64 || l->type == 16)) assert_false(on_app(app_tids, napp, l->tid));
    if (is(l, "start") && l->type == 64) {
      kch++;
      assert_int_equal(l->rank, 0); /* NCCL does not set rank on KernelCh */
      uint64_t t0 = strtoull(strstr(l->rest, "ptimer=") + 7, NULL, 10);
      assert_true(t0 > 1600000000000000000ULL);
      int rec = -1, stop = -1;
      for (int j = i + 1; j < lg.n; j++) {
        if (lg.l[j].pid != l->pid || strcmp(lg.l[j].id, l->id)) continue;
        if (is(&lg.l[j], "record")) rec = j;
        if (is(&lg.l[j], "stop")) {
          stop = j;
          break;
        }
      }
      assert_true(rec > i && stop > rec);
      assert_int_equal(lg.l[rec].state, 22);
      assert_int_equal(lg.l[rec].tid, l->tid);
      assert_true(lg.l[rec].args >= t0);
    }
  }
  assert_true(in_window > 0);
  assert_true(ops > 0);
  assert_true(kch > 0);
}

/* ProxyCtrl: each event is start, one (or Sleep+Wakeup) record, stop. */
static void proxy_ctrl_shapes(void **state) {
  (void)state;
  int sleeps = 0;
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *l = &lg.l[i];
    if (!is(l, "start") || l->type != 32) continue;
    int st[4] = {0}, ns = 0;
    for (int j = i + 1; j < lg.n; j++) {
      if (lg.l[j].pid != l->pid || strcmp(lg.l[j].id, l->id)) continue;
      if (is(&lg.l[j], "record")) st[ns++] = lg.l[j].state;
      if (is(&lg.l[j], "stop") || ns == 3) break;
    }
    assert_true(ns == 1 || ns == 2);
    if (ns == 2) {
      bool ok = (st[0] == 15 && st[1] == 16) || (st[0] == 17 && st[1] == 18);
      assert_true(ok);
      sleeps += st[0] == 15;
    } else {
      assert_true(st[0] == 13 || st[0] == 14);
    }
  }
  assert_true(sleeps > 0);
}

/* Each rank's ProxyCtrl events (context: the comm that made the proxy) come
 * from the same thread as that rank's KernelCh: its proxy progress thread. */
static void proxy_ctrl_on_proxy_tid(void **state) {
  (void)state;
  int checked = 0;
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *c = &lg.l[i];
    if (strcmp(c->call, "start") || c->type != 32) continue;
    for (int j = 0; j < lg.n; j++) {
      const struct rl_line *k = &lg.l[j];
      if (k->pid != c->pid || strcmp(k->call, "start") || k->type != 64 || strcmp(k->ctx, c->ctx)) continue;
      assert_int_equal(k->tid, c->tid);
      checked++;
    }
  }
  assert_true(checked > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(step_state_machines),
      cmocka_unit_test(trans_size_carried),
      cmocka_unit_test(proxy_thread_calls),
      cmocka_unit_test(proxy_ctrl_shapes),
      cmocka_unit_test(proxy_ctrl_on_proxy_tid),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
