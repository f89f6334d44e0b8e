/* Floods (issue 13): NCCL records SendPeerWait on a waiting step on every
 * pass of its proxy loop (net.cc sendProxyProgress, while isend() gives no
 * request). Through the ABI: one ProxyStep gets N identical SendPeerWait
 * records in a tight loop, then one SendWait. In the compact modes the
 * writer folds the repeats into runs: the trace holds far fewer records, and
 * the reader gives back exactly N with the first and last times; with
 * NCCL_LENS_COMPRESS=none every record stays. Either way no record is
 * dropped, and the SendWait after the run keeps its place. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lensread.h"
#include "plugin_driver.h"

#define N_REPEATS 50000

static char g_dir[128];
static int g_mask;

/* In a child: the configuration is read once per process. */
static int body(const char *mode) {
  setenv("NCCL_LENS_OUTPUT_DIR", g_dir, 1);
  setenv("NCCL_LENS_REGISTRY_DIR", g_dir, 1);
  setenv("NCCL_LENS_BUFFER_SIZE", "16M", 1); /* the whole flood fits: no ring_full drop even if the writer sleeps */
  setenv("NCCL_LENS_COMPRESS", mode, 1);
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 1;
  void *ctx = NULL;
  if (p.v5->init(&ctx, 1, &g_mask, "flood", 1, 1, 0, test_logger)) return 2;
  lens_nccl_descr_v5_t d;
  d5_proxy_op(&d, NULL, getpid());
  void *op = NULL, *step = NULL;
  p.v5->startEvent(ctx, &op, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_PROXY_STEP;
  d.parentObj = op;
  d.proxyStep.step = 0;
  p.v5->startEvent(ctx, &step, &d);
  if (!op || !step) return 3;
  lens_nccl_state_args_v5_t a;
  memset(&a, 0, sizeof a);
  a.proxyStep.transSize = 65536;
  for (int i = 0; i < N_REPEATS; i++) p.v5->recordEventState(step, LENS_ST_PROXY_STEP_SEND_PEER_WAIT, &a);
  p.v5->recordEventState(step, LENS_ST_PROXY_STEP_SEND_WAIT, &a);
  p.v5->stopEvent(step);
  p.v5->stopEvent(op);
  if (p.v5->finalize(ctx)) return 4;
  return 0;
}

static struct lens_model *run(const char *mode) {
  make_tmp_dir(g_dir, sizeof g_dir, "flood");
  pid_t pid = fork();
  if (pid == 0) _exit(body(mode));
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  char path[256], err[256];
  trace_path_for(path, sizeof path, g_dir, pid);
  const char *paths[1] = {path};
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof err, NULL);
  if (!m) fail_msg("load: %s", err);
  return m;
}

/* The step's states: SendPeerWait entries (and their total count), then
 * the SendWait last. Returns the number of SendPeerWait entries. */
static uint32_t check(const struct lens_model *m) {
  assert_int_equal(m->procs[0].drops.ring_full, 0);
  const struct lens_event *s = NULL;
  for (size_t i = 0; i < m->n_events; i++)
    if (m->events[i].type == LENS_T_PROXY_STEP) s = &m->events[i];
  assert_non_null(s);
  assert_true(s->stop_mono_ns != 0);
  assert_true(s->n_states >= 2);
  const struct lens_state_ev *st = &m->states[s->first_state];
  uint64_t total = 0, prev_last = 0;
  for (uint32_t k = 0; k + 1 < s->n_states; k++) {
    assert_int_equal(st[k].state, LENS_ST_PROXY_STEP_SEND_PEER_WAIT);
    assert_int_equal(st[k].arg, 65536);
    assert_true(st[k].count >= 1);
    assert_true(st[k].last_mono_ns >= st[k].ts_mono_ns);
    assert_true(st[k].ts_mono_ns >= prev_last); /* runs in order, not overlapping */
    if (st[k].count > 1) assert_true(st[k].max_gap_ns <= 1000000);
    prev_last = st[k].last_mono_ns;
    total += st[k].count;
  }
  assert_int_equal(total, N_REPEATS); /* every record counted, none lost */
  const struct lens_state_ev *last = &st[s->n_states - 1];
  assert_int_equal(last->state, LENS_ST_PROXY_STEP_SEND_WAIT);
  assert_int_equal(last->count, 1);
  assert_true(last->ts_mono_ns >= prev_last);
  assert_true(s->stop_mono_ns >= last->ts_mono_ns);
  return s->n_states - 1;
}

static void test_flood_folded(void **state) {
  (void)state;
  struct lens_model *m = run("zstd");
  uint32_t entries = check(m);
  /* a run per writer chunk at most (the writer drains about every ms, and
   * a pause over 1 ms also starts a new run): far fewer than the records */
  assert_true(entries * 20 <= N_REPEATS);
  lens_model_free(m);
}

static void test_flood_packed(void **state) {
  (void)state;
  struct lens_model *m = run("packed");
  assert_true(check(m) * 20 <= N_REPEATS);
  lens_model_free(m);
}

static void test_flood_fixed(void **state) {
  (void)state;
  struct lens_model *m = run("none");
  assert_int_equal(check(m), N_REPEATS); /* the fixed form keeps every record */
  lens_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flood_folded),
      cmocka_unit_test(test_flood_packed),
      cmocka_unit_test(test_flood_fixed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
