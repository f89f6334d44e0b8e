/* API versions: v4 gets init(ctx, mask, name, hash, ...) and no API-level
 * events, with Coll under the legacy Group; v5 gets init(ctx, commId, mask,
 * ...); the default picks v5 like NCCL 2.28.9, auto picks v6. Also: init
 * failures are logged and the run continues; --reload re-inits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "replay_log.h"

static void init_lines(const struct rl_log *lg, char out[][200], int *n) {
  *n = 0;
  for (int i = 0; i < lg->n; i++)
    if (!strcmp(lg->l[i].call, "init")) {
      const char *p = strstr(lg->l[i].rest, "commId=");
      snprintf(out[(*n)++], 200, "%s", p ? p : "");
    }
}

static void v4_vs_v5_init(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "allreduce", 1, 2);
  struct rl_log l4, l5;
  o.api = 4;
  rl_run(&l4, &o, 4095, NULL);
  o.api = LENS_REPLAY_API_NCCL2289;
  rl_run(&l5, &o, 4095, NULL);
  assert_int_equal(l4.res.api, 4);
  assert_int_equal(l5.res.api, 5);
  char a[8][200], b[8][200];
  int na, nb;
  init_lines(&l4, a, &na);
  init_lines(&l5, b, &nb);
  assert_int_equal(na, 2);
  assert_int_equal(nb, 2);
  /* The same commId, name, nNodes, nranks, rank whichever argument order. */
  for (int i = 0; i < na; i++) {
    bool found = false;
    for (int j = 0; j < nb; j++) found |= !strcmp(a[i], b[j]);
    assert_true(found);
    assert_non_null(strstr(a[i], "name=replay-world nNodes=1 nranks=2"));
  }
  for (int i = 0; i < l4.n; i++) {
    const struct rl_line *l = &l4.l[i];
    if (strcmp(l->call, "start")) continue;
    assert_true(l->type < 256); /* no GroupApi/CollApi/P2pApi/KernelLaunch in v4 */
    if (l->type == 2) assert_int_equal(l4.l[rl_find_start(&l4, l->parent, l->pid)].type, 1); /* parent: Group */
  }
  for (int i = 0; i < l4.n; i++)
    if (!strcmp(l4.l[i].call, "record")) assert_true(l4.l[i].state >= 8 && l4.l[i].state <= 22);
  rl_free(&l4);
  rl_free(&l5);
}

static void auto_picks_v6(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "allreduce", 1, 2);
  o.api = LENS_REPLAY_API_AUTO;
  struct rl_log lg;
  rl_run(&lg, &o, 4095, NULL);
  assert_int_equal(lg.rc, 0);
  assert_int_equal(lg.res.api, 6);
  rl_free(&lg);
}

static void init_failure_continues(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "allreduce", 1, 2);
  o.verbose = false;
  struct rl_log lg;
  rl_run(&lg, &o, 4095, "REC_INIT_FAIL=1");
  assert_int_equal(lg.rc, 0);
  assert_int_equal(lg.res.init_failures, 1);
  assert_int_equal(lg.res.warn_count, 1); /* the plugin's WARN line was counted */
  int finals = 0, colls_rank1 = 0;
  for (int i = 0; i < lg.n; i++) {
    finals += !strcmp(lg.l[i].call, "finalize");
    colls_rank1 += !strcmp(lg.l[i].call, "start") && lg.l[i].type == 2 && lg.l[i].rank == 1;
  }
  assert_int_equal(finals, 2); /* ctx was set, so finalize still comes */
  assert_true(colls_rank1 > 0); /* events keep flowing for the failed comm */
  rl_free(&lg);
}

static void reload_and_no_finalize(void **state) {
  (void)state;
  struct lens_replay_opts o;
  rl_opts(&o, "allreduce", 1, 2);
  o.reload = true;
  struct rl_log lg;
  rl_run(&lg, &o, 4095, NULL);
  int inits = 0, finals = 0, ftid = -1;
  for (int i = 0; i < lg.n; i++) {
    inits += !strcmp(lg.l[i].call, "init");
    if (!strcmp(lg.l[i].call, "finalize")) {
      if (ftid < 0) ftid = lg.l[i].tid;
      assert_int_equal(lg.l[i].tid, ftid); /* batched from one thread */
      finals++;
    }
  }
  assert_int_equal(inits, 4);
  assert_int_equal(finals, 4);
  rl_free(&lg);
  o.reload = false;
  o.no_finalize = true;
  rl_run(&lg, &o, 4095, NULL);
  for (int i = 0; i < lg.n; i++) assert_string_not_equal(lg.l[i].call, "finalize");
  rl_free(&lg);
}

/* Bad options: one line, exit status 2; good ones fill the struct. */
static void options(void **state) {
  (void)state;
  struct lens_replay_opts o;
  lens_replay_opts_init(&o);
  char *good[] = {"replay", "--scenario", "mixed", "--nodes", "2", "--api", "auto", "--seed", "0x10", "--reload", NULL};
  assert_int_equal(lens_replay_parse_args(10, good, &o), 0);
  assert_string_equal(o.scenario, "mixed");
  assert_int_equal(o.nodes, 2);
  assert_int_equal(o.api, LENS_REPLAY_API_AUTO);
  assert_int_equal(o.seed, 16);
  assert_true(o.reload);
  char *bad1[] = {"replay", "--nodes", "0", NULL};
  char *bad2[] = {"replay", "--api", "3", NULL};
  char *bad3[] = {"replay", "--frobnicate", NULL};
  char *bad4[] = {"replay", "--iters", NULL};
  assert_int_equal(lens_replay_parse_args(3, bad1, &o), 2);
  assert_int_equal(lens_replay_parse_args(3, bad2, &o), 2);
  assert_int_equal(lens_replay_parse_args(2, bad3, &o), 2);
  assert_int_equal(lens_replay_parse_args(2, bad4, &o), 2);
  rl_opts(&o, "nosuchscenario", 1, 1);
  assert_int_equal(lens_replay_run(&o, NULL), 2);
  rl_opts(&o, "allreduce", 1, 1);
  o.plugin = "/nonexistent/libnccl-profiler-x.so";
  assert_int_equal(lens_replay_run(&o, NULL), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(v4_vs_v5_init),
      cmocka_unit_test(auto_picks_v6),
      cmocka_unit_test(init_failure_continues),
      cmocka_unit_test(reload_and_no_finalize),
      cmocka_unit_test(options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
