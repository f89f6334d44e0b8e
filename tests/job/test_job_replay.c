/* nccl-lens job against the replay's ground truth (docs/job.md): for each
 * injected cause, the execution within 1 % or 2 us, every rank's wait
 * within 2 us, the straggler named with the right cause in >= 99 % of the
 * instances where it was last on a quiet machine (200 instances; >= 90 %
 * of 24 on a loaded one), no straggler named where none was. The
 * replay couples the simulated GPUs across processes (2 processes x 2
 * ranks here), so every AllReduce ends together on all ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "job_truth.h"

static void report(const char *sc, const struct job_check *c) {
  fprintf(stderr,
          "%s: %zu instances, %zu matched, %zu withheld, exec ok %zu, waits ok %zu, last=injected %zu named %zu (as "
          "injected %zu, excess off %zu), quiet %zu named %zu, link named %zu, top straggler %d\n",
          sc, c->instances, c->matched, c->withheld, c->exec_ok, c->wait_ok, c->truth_last_x, c->named_right,
          c->injected_named,
          c->excess_off, c->quiet, c->quiet_named, c->link_named, c->top_straggler);
}

static void run(const char *sc, int nodes, int rpn, int iters, struct job_check *c) {
  char dir[256], tp[300];
  lens_test_tmpdir(dir, sizeof dir, "job");
  /* 20 ms late: well above a loaded machine's scheduling noise and the
   * replay's GPU clock map bounds (up to ms under a load of 10+) */
  assert_int_equal(job_run_replay(dir, sc, nodes, rpn, iters, 20000), 0);
  snprintf(tp, sizeof tp, "%s/truth.json", dir);
  assert_int_equal(job_check_dir(dir, tp, NULL, c), 0);
  report(sc, c);
  assert_true(c->instances >= (size_t)(2 * iters));
  assert_int_equal(c->matched, c->instances);
  /* An instance the view withholds (no execution, waits or cause, with the
   * flag that says why: ends_apart, its ranks' GPU clock maps disagree
   * beyond their error bounds) gives no wrong number, and is left out of
   * every count (job_truth.c). It is allowed on an overloaded machine only:
   * at load 14-15 one process's simulated proxy noticed its GPU 23 ms late
   * (median; 44 ms at worst) over a whole job-none run, its ranks' maps
   * claimed 6-16 ms, and all 24 instances were withheld (this assertion then
   * counted them as executions off: 1 failure in 40 runs under 6 busy
   * loops). On a machine that is not overloaded there must be none. */
  if (c->withheld) assert_true(job_machine_overloaded());
  assert_int_equal(c->exec_ok + c->withheld, c->instances);
  assert_int_equal(c->wait_ok + c->withheld, c->instances);
  lens_test_rmtree(dir);
}

/* The injected rank was last in nearly every instance (else the simulation
 * did not inject what it says), and named there with its cause: never a
 * wrong cause; "unknown" only where the trace cannot decide (the GPU clock
 * map's error bound straddles the rule on a loaded machine), at most 1 in
 * 10 of the others (docs/job.md). */
static void arrival_cause(const char *sc) {
  struct job_check c;
  /* On a quiet machine, the issue's >= 99 % over 200 instances (~5 s);
   * else 24 instances and the fallback bars below. */
  int quiet = job_machine_quiet();
  run(sc, 2, 2, quiet ? 100 : 12, &c);
  assert_true(job_injection_held(&c)); /* the simulation injected what it says (job_truth.h) */
  assert_int_equal(c.named_right + c.undecided, c.truth_last_x);
  assert_int_equal(c.top_straggler, c.straggler);
  /* "+X us" is this instance's lateness (docs/job.md), whatever the load */
  assert_int_equal(c.excess_off, 0);
  if (job_machine_overloaded()) return;
  /* "unknown" where the last rank's own GPU clock map is too coarse to
   * decide (its bound >= a quarter of the wait: a notice map on a loaded
   * machine, 10.7 ms wide under ASan at load 7 with a 20 ms injection) is
   * the right answer; the bars hold over the instances the trace can decide.
   * An "unknown" with a fine map still counts against them. */
  size_t decidable = c.truth_last_x - c.undecided_coarse;
  fprintf(stderr, "%s: %zu of %zu last-rank instances undecidable (coarse clock map)\n", sc, c.undecided_coarse,
          c.truth_last_x);
  assert_true(c.named_right * 10 >= decidable * 9);
  assert_true(c.injected_named * 10 >= decidable * 8); /* the injection dominates */
  /* asked again: the rest of the machine may have woken during the run */
  if (quiet && job_machine_quiet()) assert_true(c.named_right * 100 >= c.truth_last_x * 99);
}

static void test_late_app(void **s) { (void)s, arrival_cause("job-late-app"); }
static void test_slow_launch(void **s) { (void)s, arrival_cause("job-slow-launch"); }
static void test_gpu_busy(void **s) { (void)s, arrival_cause("job-gpu-busy"); }

/* Whether the simulation itself is quiet enough to test "no straggler" on
 * most instances, and no slow link: a loaded machine or a sanitizer build
 * (every replay thread several times slower: app threads overrun their 2 ms
 * compute, one process's proxies fall behind the others' for the whole run)
 * makes real stragglers and really slow links. Quiet means a 1-min load
 * below the CPU count and less than half a CPU of other work during the
 * replay itself (job_truth.c; the load average lags a minute): beside another test (ctest -j2, load 2.2 on 2 CPUs)
 * the proxy thread of one cross-process link's rank (each has one network
 * link) fell behind for the whole 2 x 4 run and that link's steps really
 * were 1.7-32x the other's (24 of 24 instances named slow_link 7 -> 0 in a
 * CI run, 3 -> 4 right after it; 0 of 20 runs alone at load 1.2-2). Without a scheduler probe trace the job view cannot tell a
 * descheduled proxy from a slow link (docs/job.md), and the job truth has no
 * step times to tell it either. "No late rank named where none was" is
 * asserted either way. */
static int sim_quiet(void) { return job_machine_quiet() && !*LENS_SANITIZER; }

static void test_none(void **s) {
  (void)s;
  struct job_check c;
  run("job-none", 2, 2, 12, &c);
  if (sim_quiet()) assert_true(c.quiet * 2 >= c.instances - c.withheld);
  assert_int_equal(c.quiet_named, 0);
  if (sim_quiet()) assert_int_equal(c.quiet_link, 0);
}

/* The documented threshold at a larger layout: 2 processes x 4 ranks, no
 * straggler injected; none named where the true waits were below half the
 * threshold (docs/job.md). */
static void test_none_2x4(void **s) {
  (void)s;
  struct job_check c;
  run("job-none", 2, 4, 12, &c);
  if (sim_quiet()) assert_true(c.quiet * 2 >= c.instances - c.withheld);
  assert_int_equal(c.quiet_named, 0);
  if (sim_quiet()) assert_int_equal(c.quiet_link, 0);
}

static void test_slow_link(void **s) {
  (void)s;
  struct job_check c;
  run("job-slow-link", 2, 2, 6, &c);
  /* never another link; the right one in >= 9 of 10 (a simulated proxy
   * stalled for ms on a loaded machine can hide one end: docs/job.md) of
   * the instances where no rank was really late. Where the machine made a
   * rank late (an app thread descheduled for ms: the truth's waits say so),
   * the view names that straggler, as documented, and judges no link: the
   * truth's last rank, with a late-rank cause, is the right answer there
   * (job_truth.c); anything else there still counts as a miss. On a loaded
   * machine (other work 1.0-1.3 of 2 CPUs) 2 or 3 of the 12 instances had
   * such a straggler, and the bar over all 12 failed 3 times in 30 runs. */
  assert_int_equal(c.link_wrong, 0);
  size_t judged = c.instances - c.withheld - c.link_straggler;
  fprintf(stderr, "job-slow-link: %zu instances with a real straggler (named right), %zu judged on the link\n",
          c.link_straggler, judged);
  if (!job_machine_overloaded()) assert_true(c.link_named * 10 >= judged * 9);
  if (job_machine_quiet()) assert_true(c.link_named * 100 >= judged * 99);
}

int main(void) {
  const struct CMUnitTest t[] = {
      cmocka_unit_test(test_late_app), cmocka_unit_test(test_slow_launch), cmocka_unit_test(test_gpu_busy),
      cmocka_unit_test(test_none),     cmocka_unit_test(test_none_2x4), cmocka_unit_test(test_slow_link),
  };
  return cmocka_run_group_tests(t, NULL, NULL);
}
