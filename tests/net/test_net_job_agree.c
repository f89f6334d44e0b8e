/* net and job name the same slow links (issue 26 item 8): one rule
 * (lens_net_link_is_slow) for both. On the committed golden traces
 * (tests/golden/traces/, so the answer is exact, not a loaded machine's):
 *   job-slow-link  the replay slows link 1 -> 2 on the wire: both name 1 -> 2
 *   net-gpu-bound  rank 1's sends wait on its GPU: its links stand out in
 *                  net, and neither view calls one slow
 *   net-slow-link  net names 1 -> 2 (wire); job names no other link (it
 *                  decomposes 2 of its 32 p2p instances: their ranks of
 *                  one host do not end together, docs/job.md)
 * and the reader's step fold, which the job map reads, splits every op as
 * the network view splits its step events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/net/net_analysis.h"
#include "cli_run.h"
#include "lensread.h"
#include "mini_json.h"

static struct cli_result res;

/* Links as src * 1000 + dst, sorted and unique. */
struct links { int v[64]; size_t n; };
static void add(struct links *l, int x) {
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i] == x) return;
  assert_true(l->n < 64);
  size_t i = l->n++;
  while (i && l->v[i - 1] > x) l->v[i] = l->v[i - 1], i--;
  l->v[i] = x;
}

static struct mj *view_json(const char *view, const char *scen) {
  char in[512], out[600];
  snprintf(in, sizeof in, "%s/tests/golden/traces/%s", LENS_SOURCE_DIR, scen);
  snprintf(out, sizeof out, "%s/%s.%s.json", cli_tmpdir(), scen, view);
  const char *args[] = {view, "--json", "-o", out, in, NULL};
  assert_int_equal(cli_run(&res, args), 0);
  assert_int_equal(res.status, 0);
  struct mj *j = mj_parse_file(out);
  assert_non_null(j);
  return j;
}

/* job: the links it names as an instance's cause. */
static void job_links(const char *scen, struct links *l) {
  struct mj *j = view_json("job", scen);
  const struct mj *cs = mj_get(j, "collectives");
  assert_non_null(cs);
  for (size_t i = 0; i < cs->n; i++) {
    const struct mj *c = mj_at(cs, i);
    const char *cause = mj_str(c, "cause");
    if (cause && !strcmp(cause, "slow_link")) add(l, (int)(mj_int(c, "cause_rank", -1) * 1000 + mj_int(c, "cause_peer", -1)));
  }
  mj_free(j);
}

/* net: its slow connections; *standing: how many stand out. */
static void net_links(const char *scen, struct links *l, size_t *standing) {
  struct mj *j = view_json("net", scen);
  const struct mj *cs = mj_get(j, "connections");
  assert_non_null(cs);
  *standing = 0;
  for (size_t i = 0; i < cs->n; i++) {
    const struct mj *c = mj_at(cs, i);
    if (mj_int(c, "slow", 0)) add(l, (int)(mj_int(c, "src", -1) * 1000 + mj_int(c, "dst", -1)));
    if (mj_int(c, "stands_out", 0)) (*standing)++;
  }
  mj_free(j);
}

static void same(const struct links *a, const struct links *b) {
  assert_int_equal(a->n, b->n);
  for (size_t i = 0; i < a->n; i++) assert_int_equal(a->v[i], b->v[i]);
}

static void test_job_slow_link(void **s) {
  (void)s;
  struct links j = {0}, n = {0};
  size_t standing;
  job_links("job-slow-link", &j);
  net_links("job-slow-link", &n, &standing);
  assert_int_equal(n.n, 1);
  assert_int_equal(n.v[0], 1002);
  same(&j, &n);
}

static void test_net_gpu_bound(void **s) {
  (void)s;
  struct links j = {0}, n = {0};
  size_t standing;
  job_links("net-gpu-bound", &j);
  net_links("net-gpu-bound", &n, &standing);
  assert_true(standing > 0); /* its links are slow in pace... */
  assert_int_equal(n.n, 0);  /* ...on the sender's GPU: not slow links */
  same(&j, &n);
}

static void test_net_slow_link(void **s) {
  (void)s;
  struct links j = {0}, n = {0};
  size_t standing;
  job_links("net-slow-link", &j);
  net_links("net-slow-link", &n, &standing);
  assert_int_equal(n.n, 1);
  assert_int_equal(n.v[0], 1002);
  for (size_t i = 0; i < j.n; i++) assert_int_equal(j.v[i], 1002); /* job names no link net does not */
}

/* One classification: the reader's step fold (what the job map reads)
 * sums each op's steps into the same phases as the network view's split
 * of the step events, op by op. */
static void test_fold_splits_as_net(void **s) {
  (void)s;
  const char *scen[] = {"job-slow-link", "net-slow-link", "net-gpu-bound", "net-slow-recv"};
  for (size_t k = 0; k < sizeof scen / sizeof scen[0]; k++) {
    char p0[512], p1[512], err[256];
    snprintf(p0, sizeof p0, "%s/tests/golden/traces/%s/node0.lens", LENS_SOURCE_DIR, scen[k]);
    snprintf(p1, sizeof p1, "%s/tests/golden/traces/%s/node1.lens", LENS_SOURCE_DIR, scen[k]);
    const char *paths[] = {p0, p1};
    struct lens_model *full = lens_model_load_ex(paths, 2, 0, err, sizeof err, NULL);
    struct lens_model *fold = lens_model_load_ex(paths, 2, LENS_LOAD_FOLD_STEPS, err, sizeof err, NULL);
    assert_non_null(full);
    assert_non_null(fold);
    size_t a = 0, b = 0, ops = 0;
    uint64_t wire = 0;
    for (;;) {
      while (a < full->n_events && full->events[a].type != LENS_T_PROXY_OP) a++;
      while (b < fold->n_events && fold->events[b].type != LENS_T_PROXY_OP) b++;
      if (a == full->n_events || b == fold->n_events) break;
      struct lens_net_split x, y;
      assert_int_equal(lens_net_op_split(full, (int32_t)a, &x), 1);
      assert_int_equal(lens_net_op_split(fold, (int32_t)b, &y), 1);
      assert_int_equal(x.steps, y.steps);
      for (int q = 0; q < LENS_NET_NPHASES; q++) assert_int_equal(x.blame_ns[q], y.blame_ns[q]);
      wire += x.blame_ns[LENS_NET_SEND_WIRE];
      ops++, a++, b++;
    }
    assert_int_equal(a, full->n_events); /* as many ops in both */
    assert_true(ops > 0 && wire > 0);
    lens_model_free(full);
    lens_model_free(fold);
  }
}

int main(void) {
  const struct CMUnitTest t[] = {
      cmocka_unit_test(test_job_slow_link),
      cmocka_unit_test(test_net_gpu_bound),
      cmocka_unit_test(test_net_slow_link),
      cmocka_unit_test(test_fold_splits_as_net),
  };
  int rc = cmocka_run_group_tests(t, NULL, NULL);
  cli_cleanup();
  return rc;
}
