/* Where the job view shows up, against the replay's ground truth
 * (docs/job.md):
 *   - headline: `nccl-lens summary` and `nccl-lens report` on a skewed
 *     AllReduce (job-late-app, rank 1 calls 20 ms late, 2 processes x 2
 *     ranks) lead with the job table, whose row shows the execution (within
 *     the truth's bounds), not the wait-inflated completion; the old
 *     completion column is still there, explained;
 *   - per user tag: the same scenario as NCCL 2.31 (--api 7) tags its two
 *     AllReduces of each step 1 and 2; `nccl-lens job` ranks the stragglers
 *     per communicator and tag ("stragglers_by_tag"), with sums that add up
 *     from the instances and tags that match the truth's calls; without
 *     tags (the default API) there is no per-tag ranking. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "job_truth.h"
#include "mini_json.h"
#include "../lens_test_file.h"

#define ITERS 12
#define DELAY_US 20000

static void replay(const char *dir, const char *api) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "%s/bin/nccl-lens replay --scenario job-late-app --nodes 2 --ranks-per-node 2 --iters %d --delay-us %d "
           "%s%s --out %s --truth %s/truth.json --quiet",
           LENS_BUILD_DIR, ITERS, DELAY_US, api ? "--api " : "", api ? api : "", dir, dir);
  assert_int_equal(system(cmd), 0);
}

static char *run_cli(const char *dir, const char *sub, const char *args, const char *out_name) {
  char cmd[2048], out[400];
  snprintf(out, sizeof out, "%s/%s", dir, out_name);
  /* job takes a directory; summary and report the files */
  snprintf(cmd, sizeof cmd, "%s/bin/nccl-lens %s %s -o %s %s%s", LENS_BUILD_DIR, sub, args, out, dir,
           strcmp(sub, "job") ? "/*.lens" : "");
  assert_int_equal(system(cmd), 0);
  char *t = lens_test_slurp(out, NULL);
  assert_non_null(t);
  return t;
}

/* Truth: the execution of the 1 MiB AllReduces (2^20 bytes) read on any
 * rank's GPU clock: [min, max] x (1 +- 1000 ppm), and the largest wait. */
static void truth_exec(const struct mj *truth, double *lo, double *hi, double *wait_max) {
  *lo = 1e30, *hi = 0, *wait_max = 0;
  const struct mj *in = mj_get(truth, "instances");
  for (size_t i = 0; in && i < in->n; i++) {
    const struct mj *t = mj_at(in, i);
    if (mj_int(t, "bytes", 0) != 1 << 20) continue;
    double e = (double)mj_int(t, "exec_ns", 0);
    if (e < *lo) *lo = e;
    if (e > *hi) *hi = e;
    const struct mj *r = mj_get(t, "ranks");
    for (size_t k = 0; r && k < r->n; k++)
      if ((double)mj_int(mj_at(r, k), "wait_ns", 0) > *wait_max) *wait_max = (double)mj_int(mj_at(r, k), "wait_ns", 0);
  }
  assert_true(*hi > 0);
}

/* The bounds a correct execution figure lies in: the truth's range, each
 * within 1 % or 2 us (docs/job.md), drift included. */
static void assert_exec_in(double got_ns, double lo, double hi) {
  double slack_lo = fmax(2000, 0.01 * lo), slack_hi = fmax(2000, 0.01 * hi);
  if (got_ns < lo - slack_lo || got_ns > hi + slack_hi)
    print_error("execution %.0f ns outside the truth's [%.0f, %.0f] ns +- 1 %% or 2 us\n", got_ns, lo, hi);
  assert_true(got_ns >= lo - slack_lo && got_ns <= hi + slack_hi);
}

static void test_headline(void **s) {
  (void)s;
  char dir[256], tp[300];
  lens_test_tmpdir(dir, sizeof dir, "jobview");
  replay(dir, NULL);
  snprintf(tp, sizeof tp, "%s/truth.json", dir);
  struct mj *truth = mj_parse_file(tp);
  assert_non_null(truth);
  double lo, hi, wmax;
  truth_exec(truth, &lo, &hi, &wmax);
  assert_true(wmax > 10.0 * hi); /* skewed: the wait dwarfs the collective */

  /* summary: the job table comes first; its 1 MiB AllReduce row shows the
   * execution avg/p50/p99 and a max wait near the injected 20 ms */
  char *sum = run_cli(dir, "summary", "", "summary.txt");
  const char *job = strstr(sum, "job view: execution");
  const char *old = strstr(sum, "completion avg/max us");
  assert_non_null(job);
  assert_non_null(old);
  assert_true(job < old);
  assert_non_null(strstr(sum, "completion: kernel launch (else Coll start) -> last channel/proxy stop")); /* explained */
  const char *row = strstr(job, "AllReduce      1-2 MiB");
  assert_non_null(row);
  assert_true(row < old);
  double avg, p50, p99, wavg, wm;
  unsigned long cnt;
  assert_int_equal(sscanf(row + strlen("AllReduce      1-2 MiB"), "%lu %lf/%lf/%lf %lf/%lf", &cnt, &avg, &p50, &p99,
                          &wavg, &wm),
                   6);
  fprintf(stderr, "summary row: count %lu exec %.1f/%.1f/%.1f us, wait %.1f/%.1f us; truth exec %.1f..%.1f us, max wait %.1f us\n",
          cnt, avg, p50, p99, wavg, wm, lo / 1e3, hi / 1e3, wmax / 1e3);
  assert_int_equal(cnt, ITERS);
  assert_exec_in(avg * 1e3, lo, hi);
  assert_exec_in(p50 * 1e3, lo, hi);
  assert_exec_in(p99 * 1e3, lo, hi);
  assert_true(fabs(wm * 1e3 - wmax) <= fmax(2000, 0.01 * wmax) + 100); /* printed to 0.1 us */
  /* ... while the old completion of the same rows includes the wait */
  const char *crow = strstr(old, "AllReduce");
  assert_non_null(crow);

  /* report: the job section leads the per-communicator tables */
  char *rep = run_cli(dir, "report", "", "report.md");
  const char *rjob = strstr(rep, "## The job: execution and waiting");
  const char *rcoll = strstr(rep, "## Collectives and point-to-point");
  assert_non_null(rjob);
  assert_non_null(rcoll);
  assert_true(rjob < rcoll);
  const char *rrow = strstr(rjob, "| AllReduce | 1-2 MiB | ");
  assert_non_null(rrow);
  assert_int_equal(sscanf(rrow + strlen("| AllReduce | 1-2 MiB | "), "%lu | %lf / %lf / %lf", &cnt, &avg, &p50, &p99), 4);
  assert_int_equal(cnt, ITERS);
  assert_exec_in(avg * 1e3, lo, hi);
  assert_exec_in(p99 * 1e3, lo, hi);

  /* no tags without v7: no per-tag ranking */
  char *js = run_cli(dir, "job", "--json", "job.json");
  struct mj *j = mj_parse(js);
  assert_non_null(j);
  assert_non_null(mj_get(j, "stragglers_by_tag"));
  assert_int_equal(mj_get(j, "stragglers_by_tag")->n, 0);
  assert_null(strstr(sum, "per user tag"));
  mj_free(j), free(js), free(sum), free(rep), mj_free(truth);
  lens_test_rmtree(dir);
}

/* userTag of rank `rank`'s AllReduce seq in the truth. */
static int64_t truth_tag(const struct mj *truth, int64_t seq) {
  const struct mj *procs = mj_get(truth, "processes");
  for (size_t p = 0; procs && p < procs->n; p++) {
    const struct mj *ops = mj_get(mj_at(procs, p), "ops");
    for (size_t i = 0; ops && i < ops->n; i++) {
      const struct mj *o = mj_at(ops, i);
      if (mj_int(o, "seqNumber", -2) == seq && mj_int(o, "comm", -1) == 0) return mj_int(o, "userTag", -1);
    }
  }
  return -1;
}

#define MAX_T 4
static void test_by_tag(void **s) {
  (void)s;
  char dir[256], tp[300];
  lens_test_tmpdir(dir, sizeof dir, "jobtag");
  replay(dir, "7");
  snprintf(tp, sizeof tp, "%s/truth.json", dir);
  struct mj *truth = mj_parse_file(tp);
  assert_non_null(truth);
  char *js = run_cli(dir, "job", "--json", "job.json");
  struct mj *j = mj_parse(js);
  assert_non_null(j);
  /* From the instances: per (tag, last rank) the straggler count and the
   * wait caused, with the documented threshold. */
  double thr = (double)mj_int(j, "threshold_ns", 0), frac = mj_get(j, "min_wait_frac")->num;
  uint64_t times[MAX_T][4] = {{0}}, caused[MAX_T][4] = {{0}};
  const struct mj *cs = mj_get(j, "collectives");
  size_t tagged = 0;
  for (size_t i = 0; i < cs->n; i++) {
    const struct mj *c = mj_at(cs, i);
    int64_t tag = mj_int(c, "user_tag", -1);
    assert_int_equal(tag, truth_tag(truth, mj_int(c, "seq", -1))); /* the call's tag, from the trace */
    assert_true(tag >= 1 && tag <= 2);
    tagged++;
    const struct mj *mw = mj_get(c, "max_wait_ns");
    if (!mw || mw->type != MJ_NUM) continue;
    double exec = (double)mj_int(c, "exec_ns", 0);
    if (mw->num < fmax(thr, frac * exec)) continue;
    int last = (int)mj_int(c, "last_rank", -1);
    assert_true(last >= 0 && last < 4);
    const struct mj *r = mj_get(c, "ranks");
    uint64_t sum = 0;
    for (size_t k = 0; k < r->n; k++) sum += (uint64_t)mj_int(mj_at(r, k), "wait_ns", 0);
    times[tag][last]++;
    caused[tag][last] += sum;
  }
  assert_true(tagged >= 2 * ITERS);
  const struct mj *bt = mj_get(j, "stragglers_by_tag"), *st = mj_get(j, "stragglers");
  assert_non_null(bt);
  uint64_t seen[MAX_T][4] = {{0}}, total_by_tag[4] = {0};
  for (size_t i = 0; i < bt->n; i++) {
    const struct mj *x = mj_at(bt, i);
    int64_t tag = mj_int(x, "user_tag", -1);
    int rank = (int)mj_int(x, "rank", -1);
    assert_true(tag >= 1 && tag <= 2 && rank >= 0 && rank < 4);
    seen[tag][rank] = (uint64_t)mj_int(x, "times_last", 0);
    assert_int_equal(mj_int(x, "times_last", 0), times[tag][rank]);
    assert_int_equal(mj_uint(x, "wait_caused_ns", 0), caused[tag][rank]);
    total_by_tag[rank] += (uint64_t)mj_int(x, "times_last", 0);
  }
  for (int t = 1; t <= 2; t++)
    for (int r = 0; r < 4; r++) assert_int_equal(seen[t][r], times[t][r]); /* none missing */
  /* every instance is tagged: the per-tag counts add up to the per-communicator ones */
  for (size_t i = 0; i < st->n; i++) {
    const struct mj *x = mj_at(st, i);
    assert_int_equal(mj_int(x, "times_last", 0), total_by_tag[mj_int(x, "rank", 0)]);
  }
  /* the injected straggler leads both tags' rankings (first entry per tag) */
  fprintf(stderr, "by tag: tag 1 rank 1 last %llu, tag 2 rank 1 last %llu of %d each\n",
          (unsigned long long)times[1][1], (unsigned long long)times[2][1], ITERS);
  for (int t = 1; t <= 2; t++) assert_true(times[t][1] * 10 >= (uint64_t)ITERS * 9);
  for (size_t i = 0; i < bt->n; i++)
    if (!i || mj_int(mj_at(bt, i - 1), "user_tag", 0) != mj_int(mj_at(bt, i), "user_tag", 0))
      assert_int_equal(mj_int(mj_at(bt, i), "rank", -1), 1);
  /* text and markdown show the table */
  char *txt = run_cli(dir, "job", "", "job.txt");
  assert_non_null(strstr(txt, "stragglers per user tag"));
  assert_non_null(strstr(txt, "instances with a straggler"));
  if (lens_test_max_line(txt) > 120) fail_msg("job text wider than 120 columns:\n%s", txt);
  char *rep = run_cli(dir, "report", "", "report.md");
  assert_non_null(strstr(rep, "Per user tag"));
  free(txt), free(rep), mj_free(j), free(js), mj_free(truth);
  lens_test_rmtree(dir);
}

/* Waits of a third of a second keep the summary's tables within 120
 * columns: a slow launch of 300 ms makes enqueue and completion averages and
 * maxima of six digits before the point (the table once ran to 122 columns;
 * a loaded CI's demo hit it with a 100+ ms enqueue). */
static void test_summary_width_long_waits(void **s) {
  (void)s;
  char dir[256], cmd[2048];
  lens_test_tmpdir(dir, sizeof dir, "jobwide");
  snprintf(cmd, sizeof cmd,
           "%s/bin/nccl-lens replay --scenario job-slow-launch --nodes 1 --ranks-per-node 2 --iters 3 --delay-us 300000 "
           "--out %s --quiet",
           LENS_BUILD_DIR, dir);
  assert_int_equal(system(cmd), 0);
  char *sum = run_cli(dir, "summary", "", "summary.txt");
  /* the rows' enqueue avg/max (the first X/Y of a row): the slow launch
   * really made some long */
  double avg = 0, max = 0;
  for (const char *row = strstr(sum, "\n  AllReduce "); row; row = strstr(row + 1, "\n  AllReduce ")) {
    const char *eol = strchr(row + 1, '\n'), *slash = strchr(row + 1, '/');
    if (!slash || (eol && slash > eol)) continue;
    const char *num = slash;
    while (num > row && num[-1] != ' ') num--;
    double a, m;
    if (sscanf(num, "%lf/%lf", &a, &m) == 2 && m > max) avg = a, max = m;
  }
  fprintf(stderr, "enqueue avg %.1f us, max %.1f us\n", avg, max);
  assert_true(max >= 100000.0);
  if (lens_test_max_line(sum) > 120) fail_msg("summary wider than 120 columns:\n%s", sum);
  free(sum);
  lens_test_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_headline), cmocka_unit_test(test_by_tag),
                                 cmocka_unit_test(test_summary_width_long_waits)};
  return cmocka_run_group_tests(t, NULL, NULL);
}
