/* The app thread's call order for a bare collective (spec §2.6, lines 1-12)
 * and for a grouped send/recv (§2.7), as the recording plugin saw it, on a
 * 2-node job with one rank per node (one process per rank). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "replay_log.h"

/* The lines of rank 0's app thread, from its first GroupApi start on. */
static int app_lines(const struct rl_log *lg, const struct rl_line **out, int max) {
  int pid = -1, tid = -1, n = 0;
  for (int i = 0; i < lg->n; i++)
    if (!strcmp(lg->l[i].call, "init") && lg->l[i].rank == 0 && strstr(lg->l[i].rest, "rank=0")) pid = lg->l[i].pid;
  for (int i = 0; i < lg->n && n < max; i++) {
    const struct rl_line *l = &lg->l[i];
    if (l->pid != pid) continue;
    if (tid < 0 && !strcmp(l->call, "start") && l->type == 256) tid = l->tid;
    if (tid >= 0 && l->tid == tid) out[n++] = l;
  }
  return n;
}

static void expect_start(const struct rl_line *l, uint64_t type, const char *parent) {
  assert_string_equal(l->call, "start");
  assert_int_equal(l->type, type);
  if (parent) assert_string_equal(l->parent, parent);
}
static void expect_stop(const struct rl_line *l, const char *id) {
  assert_string_equal(l->call, "stop");
  assert_string_equal(l->id, id);
}
static void expect_record_null(const struct rl_line *l, const char *id, int state) {
  assert_string_equal(l->call, "record");
  assert_string_equal(l->id, id);
  assert_int_equal(l->state, state);
  assert_true(l->args_null);
}

/* KernelLaunch start/stop bracket exactly one NVTX event: the stand-in launch. */
static void expect_one_nvtx_inside(const struct rl_line *start, const struct rl_line *stop) {
#ifdef REPLAY_HAVE_NVTX_INJECT
  assert_int_equal(rl_geti(stop, "nvtx") - rl_geti(start, "nvtx"), 1);
#else
  (void)start;
  (void)stop;
#endif
}

static void bare_collective(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "allreduce", 2, 1);
  struct rl_log lg;
  rl_run(&lg, &o, 4095, NULL);
  assert_int_equal(lg.rc, 0);
  const struct rl_line *a[64];
  int n = app_lines(&lg, a, 64);
  assert_true(n >= 12);
  const char *ga = a[0]->id, *ca = a[2]->id, *kl = a[5]->id, *g = a[7]->id, *c = a[8]->id;
  expect_start(a[0], 256, "0");
  assert_int_equal(rl_geti(a[0], "depth"), 1);
  expect_record_null(a[1], ga, 23);
  expect_start(a[2], 512, ga);
  char b[32];
  assert_string_equal(rl_get(a[2], "func", b, sizeof b), "AllReduce");
  expect_stop(a[3], ca);
  expect_record_null(a[4], ga, 24);
  expect_start(a[5], 2048, ga);
  expect_stop(a[6], kl);
  expect_one_nvtx_inside(a[5], a[6]);
  expect_start(a[7], 1, "0");
  expect_start(a[8], 2, ca);
  assert_string_equal(rl_get(a[8], "pgroup", b, sizeof b), g);
  assert_int_equal(a[8]->rank, 0);
  assert_string_equal(rl_get(a[8], "algo", b, sizeof b), "RING");
  expect_stop(a[9], c);
  expect_stop(a[10], g);
  expect_stop(a[11], ga);
  rl_free(&lg);
}

static void grouped_sendrecv(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "sendrecv", 2, 1);
  struct rl_log lg;
  rl_run(&lg, &o, 4095, NULL);
  assert_int_equal(lg.rc, 0);
  const struct rl_line *a[64];
  int n = app_lines(&lg, a, 64);
  assert_true(n >= 16);
  char b[32];
  const char *ga = a[0]->id, *ps = a[2]->id, *pr = a[4]->id, *kl = a[7]->id, *g = a[9]->id;
  expect_start(a[0], 256, "0");
  assert_int_equal(rl_geti(a[0], "depth"), 2);
  expect_record_null(a[1], ga, 23);
  expect_start(a[2], 1024, ga);
  assert_string_equal(rl_get(a[2], "func", b, sizeof b), "Send");
  expect_stop(a[3], ps);
  expect_start(a[4], 1024, ga);
  assert_string_equal(rl_get(a[4], "func", b, sizeof b), "Recv");
  expect_stop(a[5], pr);
  expect_record_null(a[6], ga, 24);
  expect_start(a[7], 2048, ga);
  expect_stop(a[8], kl);
  expect_one_nvtx_inside(a[7], a[8]);
  expect_start(a[9], 1, "0");
  expect_start(a[10], 4, ps);
  assert_string_equal(rl_get(a[10], "func", b, sizeof b), "Send");
  assert_int_equal(rl_geti(a[10], "peer"), 1);
  assert_string_equal(rl_get(a[10], "pgroup", b, sizeof b), g);
  expect_start(a[11], 4, pr);
  assert_string_equal(rl_get(a[11], "func", b, sizeof b), "Recv");
  expect_stop(a[12], a[10]->id);
  expect_stop(a[13], a[11]->id);
  expect_stop(a[14], g);
  expect_stop(a[15], ga);
  rl_free(&lg);
}

/* One process, two ranks: per-rank calls inside one user group share one
 * GroupApi; launches run in reverse rank order (§11). */
static void multi_rank_group(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "allreduce", 1, 2);
  struct rl_log lg;
  rl_run(&lg, &o, 4095, NULL);
  assert_int_equal(lg.rc, 0);
  const struct rl_line *a[64];
  int n = app_lines(&lg, a, 64);
  assert_true(n > 10);
  const char *ga = a[0]->id;
  assert_int_equal(rl_geti(a[0], "depth"), 2);
  int colls = 0, kls = 0, firstcoll_rank = -1;
  for (int i = 1; i < n; i++) {
    if (!strcmp(a[i]->call, "stop") && !strcmp(a[i]->id, ga)) break;
    if (!strcmp(a[i]->call, "start") && a[i]->type == 512) assert_string_equal(a[i]->parent, ga), colls++;
    if (!strcmp(a[i]->call, "start") && a[i]->type == 2048) kls++;
    if (!strcmp(a[i]->call, "start") && a[i]->type == 2 && firstcoll_rank < 0) firstcoll_rank = a[i]->rank;
  }
  assert_int_equal(colls, 2);
  assert_int_equal(kls, 2);
  assert_int_equal(firstcoll_rank, 1); /* rank 1's plan launches first */
  rl_free(&lg);
}

/* Non-blocking communicator (scenario all, third comm set): KernelLaunch,
 * Group and Coll come from an async thread, after GroupApi stop on the app
 * thread (§2.1). */
static void nonblocking_async(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "all", 1, 2);
  struct rl_log lg;
  rl_run(&lg, &o, 4095, NULL);
  assert_int_equal(lg.rc, 0);
  char ctxs[2][24];
  int nc = 0;
  for (int i = 0; i < lg.n; i++)
    if (!strcmp(lg.l[i].call, "init") && strstr(lg.l[i].rest, "name=replay-nonblocking") && nc < 2)
      snprintf(ctxs[nc++], 24, "%s", lg.l[i].ctx);
  assert_int_equal(nc, 2);
  int checked = 0;
  for (int i = 0; i < lg.n; i++) {
    const struct rl_line *g = &lg.l[i];
    if (strcmp(g->call, "start") || g->type != 256 || (strcmp(g->ctx, ctxs[0]) && strcmp(g->ctx, ctxs[1]))) continue;
    int gstop = -1, kl = -1, coll = -1;
    for (int j = i + 1; j < lg.n; j++) {
      const struct rl_line *l = &lg.l[j];
      if (!strcmp(l->call, "stop") && !strcmp(l->id, g->id) && gstop < 0) gstop = j;
      if (!strcmp(l->call, "start") && l->type == 2048 && !strcmp(l->parent, g->id) && kl < 0) kl = j;
      if (!strcmp(l->call, "start") && l->type == 2 && kl >= 0 && coll < 0 && l->tid == lg.l[kl].tid) coll = j;
    }
    assert_true(gstop > i && kl > gstop && coll > kl);
    assert_int_equal(lg.l[gstop].tid, g->tid);
    assert_int_not_equal(lg.l[kl].tid, g->tid);
    checked++;
  }
  assert_int_equal(checked, 2);
  rl_free(&lg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bare_collective),
      cmocka_unit_test(grouped_sendrecv),
      cmocka_unit_test(multi_rank_group),
      cmocka_unit_test(nonblocking_async),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
