/* net names the rank that arrived last by the job view's rule, not the one
 * that waited most on the wire (one answer: lens_net_insts_arrival reads
 * job's instances). A replay plants a late rank (job-late-app, --straggler 6
 * of 8 ranks on 2 nodes): its ring neighbour's receives wait for the data
 * it sends late, so the neighbour's rows have the most network step time.
 *   - net and job agree, exactly: each row's last_to_arrive and last_wait_ns
 *     are job's last_rank and max_wait_ns of the same collective;
 *   - the rows name the truth's late rank: the replay sleeps for real, so a
 *     loaded machine (or a sanitizer build) can make another rank later in
 *     an instance; 20 ms of lateness dominates that, and at least 3 of 4
 *     rows must name rank 6 (all of them on a quiet machine, as seen), with
 *     at least one top row another rank's (the neighbour the view used to
 *     present alone);
 *   - the text says it: each listed row's "last in" is the rank of the JSON
 *     row, and the note names the last to arrive beside the rank that
 *     waited most. */
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

#define LATE 6
#define TOP 5 /* the rows the text lists (LENS_NET_PRINT_TOP_INSTANCES) */

static struct cli_result res;
static struct mj *truth, *net, *job;
static char text[65536];

static int setup(void **state) {
  (void)state;
  char dir[512], tr[512], nj[512], jj[512];
  snprintf(dir, sizeof dir, "%s/late", cli_tmpdir());
  snprintf(tr, sizeof tr, "%s/late.truth.json", cli_tmpdir());
  snprintf(nj, sizeof nj, "%s/late.net.json", cli_tmpdir());
  snprintf(jj, sizeof jj, "%s/late.job.json", cli_tmpdir());
  const char *rp[] = {"replay", "--scenario", "job-late-app", "--nodes", "2", "--ranks-per-node", "4", "--iters", "2",
                      "--straggler", "6", "--delay-us", "20000", "--out", dir, "--truth", tr, "--quiet", NULL};
  const char *na[] = {"net", "--json", "-o", nj, dir, NULL};
  const char *ja[] = {"job", "--json", "-o", jj, dir, NULL};
  const char *nt[] = {"net", dir, NULL};
  if (cli_run(&res, rp) || res.status) return fprintf(stderr, "replay: %d %s\n", res.status, res.err), -1;
  if (cli_run(&res, na) || res.status) return fprintf(stderr, "net --json: %d %s\n", res.status, res.err), -1;
  if (cli_run(&res, ja) || res.status) return fprintf(stderr, "job --json: %d %s\n", res.status, res.err), -1;
  if (cli_run(&res, nt) || res.status) return fprintf(stderr, "net: %d %s\n", res.status, res.err), -1;
  snprintf(text, sizeof text, "%s", res.out);
  truth = mj_parse_file(tr);
  net = mj_parse_file(nj);
  job = mj_parse_file(jj);
  return truth && net && job ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  mj_free(truth), mj_free(net), mj_free(job);
  cli_cleanup();
  return 0;
}

/* The truth's planted late rank of collective seq (-1 none). */
static int truth_late(int64_t seq) {
  const struct mj *in = mj_get(truth, "instances");
  assert_non_null(in);
  for (size_t i = 0; i < in->n; i++)
    if (mj_int(mj_at(in, i), "seq", -1) == seq) return (int)mj_int(mj_at(in, i), "straggler", -1);
  return -1;
}

/* net's instance rows, most step time first (as the text lists them). */
static size_t rows_by_step_ns(const struct mj **v, size_t cap) {
  const struct mj *in = mj_get(net, "instances");
  assert_non_null(in);
  size_t n = 0;
  for (size_t i = 0; i < in->n && n < cap; i++) {
    const struct mj *x = mj_at(in, i);
    size_t k = n++;
    while (k && mj_uint(v[k - 1], "step_ns", 0) < mj_uint(x, "step_ns", 0)) v[k] = v[k - 1], k--;
    v[k] = x;
  }
  return n;
}

static void test_net_names_the_late_rank(void **s) {
  (void)s;
  const struct mj *v[256];
  size_t n = rows_by_step_ns(v, 256);
  assert_true(n >= TOP);
  size_t named = 0, others = 0;
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(truth_late(mj_int(v[i], "seq", -1)), LATE); /* the replay made rank 6 late in every instance */
    if (mj_int(v[i], "last_to_arrive", -1) == LATE && mj_uint(v[i], "last_wait_ns", 0) >= 1000000) named++;
    if (i < TOP && mj_int(v[i], "rank", -1) != LATE) others++;
  }
  fprintf(stderr, "%zu of %zu rows name rank %d last to arrive, by at least 1 ms\n", named, n, LATE);
  assert_true(named * 4 >= n * 3);
  assert_true(others > 0); /* the wire's view alone would point at them */
}

static void test_net_and_job_agree(void **s) {
  (void)s;
  const struct mj *in = mj_get(net, "instances"), *cs = mj_get(job, "collectives");
  assert_non_null(in);
  assert_non_null(cs);
  for (size_t i = 0; i < in->n; i++) {
    const struct mj *x = mj_at(in, i);
    const struct mj *c = NULL;
    for (size_t k = 0; k < cs->n && !c; k++) {
      const struct mj *y = mj_at(cs, k);
      if (mj_int(y, "seq", -2) == mj_int(x, "seq", -1) && !strcmp(mj_str(y, "comm_id"), mj_str(x, "comm_id")) &&
          !strcmp(mj_str(y, "func"), mj_str(x, "func")))
        c = y;
    }
    assert_non_null(c);
    assert_int_equal(mj_int(x, "last_to_arrive", -1), mj_int(c, "last_rank", -2));
    assert_int_equal(mj_uint(x, "last_wait_ns", 0), mj_uint(c, "max_wait_ns", 1));
  }
}

static void test_text_says_last_in(void **s) {
  (void)s;
  const struct mj *v[256];
  size_t n = rows_by_step_ns(v, 256);
  assert_true(n >= TOP);
  const char *t = strstr(text, "collective instances with the most network step time");
  assert_non_null(t);
  t = strstr(t, "last in\n");
  assert_non_null(t);
  t += strlen("last in\n");
  for (int i = 0; i < TOP; i++) { /* each listed row ends with its last rank, as --json says */
    const char *eol = strchr(t, '\n');
    assert_non_null(eol);
    char row[256], want[32];
    snprintf(row, sizeof row, "%.*s", (int)(eol - t), t);
    snprintf(want, sizeof want, "  r%lld +", (long long)mj_int(v[i], "last_to_arrive", -1));
    if (!strstr(row, want)) fail_msg("row %d '%s' does not end with%s", i, row, want);
    t = eol + 1;
  }
  assert_non_null(strstr(t, "waited most on the network; last to arrive: r"));
  assert_non_null(strstr(t, "(job's rule, +"));
}

int main(void) {
  const struct CMUnitTest t[] = {
      cmocka_unit_test(test_net_names_the_late_rank),
      cmocka_unit_test(test_net_and_job_agree),
      cmocka_unit_test(test_text_says_last_in),
  };
  return cmocka_run_group_tests(t, setup, teardown);
}
