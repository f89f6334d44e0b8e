/* net and job name the same slow links (issue 26 item 8): one rule
 * (lens_net_link_is_slow) for both. On the committed golden traces
 * (tests/golden/traces/, so the answer is exact, not a loaded machine's):
 *   job-slow-link  the replay slows link 1 -> 2 on the wire: both name 1 -> 2
 *   net-gpu-bound  rank 1's sends wait on its GPU: its links stand out in
 *                  net, and neither view calls one slow
 *   net-slow-link  net names 1 -> 2 (wire); job names no other link (it
 *                  decomposes 2 of its 32 p2p instances: their ranks of
 *                  one host do not end together, docs/job.md) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
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

int main(void) {
  const struct CMUnitTest t[] = {
      cmocka_unit_test(test_job_slow_link),
      cmocka_unit_test(test_net_gpu_bound),
      cmocka_unit_test(test_net_slow_link),
  };
  int rc = cmocka_run_group_tests(t, NULL, NULL);
  cli_cleanup();
  return rc;
}
