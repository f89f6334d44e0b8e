/* The job view across "hosts" with really different clocks: two replay
 * processes, each in its own time and UTS namespaces (unshare --time --uts,
 * CLOCK_MONOTONIC seconds apart, own hostname), couple their simulated GPUs
 * through a shared board file; `nccl-lens job` must give the same answers as
 * on one host (docs/job.md). Needs root and time namespaces: skipped with
 * the reason otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "job_truth.h"
#include "mini_json.h"

#define HOSTS 2

/* 1 when hosts can be made here; else prints why (the test is skipped). */
static int hosts_possible(void) {
  const char *why = NULL;
  if (geteuid() != 0) why = "not root: unshare --time --uts needs CAP_SYS_ADMIN";
  else if (system("unshare --time --uts --fork --monotonic=7 true >/dev/null 2>&1") != 0)
    why = "unshare --time --uts --monotonic failed (no time namespaces in this kernel or util-linux)";
  if (why) fprintf(stderr, "skipped: %s\n", why);
  return !why;
}

/* Host i: monotonic clock 1000 s x (i + 1) ahead, hostname lens-host-i. */
static pid_t start_host(const char *dir, const char *scenario, int i) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "unshare --time --uts --fork --monotonic=%d sh -c 'hostname lens-host-%d && exec %s/bin/nccl-lens replay "
           "--scenario %s --nodes %d --ranks-per-node 2 --node %d --board %s/board --iters 12 --delay-us 20000 --out "
           "%s --truth %s/truth-%d.json --quiet'",
           1000 * (i + 1), i, LENS_BUILD_DIR, scenario, HOSTS, i, dir, dir, dir, i);
  pid_t p = fork();
  if (p == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  return p;
}

static void run_hosts(const char *scenario, struct job_check *c) {
  char dir[256], tp[300];
  lens_test_tmpdir(dir, sizeof dir, "jobhosts");
  pid_t p[HOSTS];
  for (int i = 0; i < HOSTS; i++) p[i] = start_host(dir, scenario, i);
  for (int i = 0; i < HOSTS; i++) {
    int st = 0;
    assert_int_equal(waitpid(p[i], &st, 0), p[i]);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  char tp1[300];
  snprintf(tp, sizeof tp, "%s/truth-0.json", dir); /* node 0 wrote the instances */
  snprintf(tp1, sizeof tp1, "%s/truth-1.json", dir);
  assert_int_equal(job_check_dir(dir, tp, tp1, c), 0);
  fprintf(stderr,
          "%s on %d hosts: %zu instances, %zu matched, exec ok %zu, waits ok %zu, last=injected %zu named %zu "
          "(unknown %zu), quiet %zu named %zu\n",
          scenario, HOSTS, c->instances, c->matched, c->exec_ok, c->wait_ok, c->truth_last_x, c->named_right,
          c->undecided, c->quiet, c->quiet_named);
  assert_true(c->instances >= 24);
  assert_int_equal(c->matched, c->instances);
  assert_int_equal(c->exec_ok, c->instances);
  assert_int_equal(c->wait_ok, c->instances);
  /* the hosts really had their own clocks (1000 s apart) and names */
  int64_t t[HOSTS];
  for (int i = 0; i < HOSTS; i++) {
    char path[320];
    snprintf(path, sizeof path, "%s/truth-%d.json", dir, i);
    struct mj *tr = mj_parse_file(path);
    assert_non_null(tr);
    const struct mj *ops = mj_get(mj_at(mj_get(tr, "processes"), 0), "ops");
    assert_true(ops && ops->n > 0);
    t[i] = mj_int(mj_at(ops, 0), "launch_start_ns", 0);
    mj_free(tr);
  }
  assert_true(t[1] - t[0] > 500LL * 1000000000LL);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "grep -q '\"lens-host-1\"' %s/truth-1.json && grep -q 'lens-host-1' %s/job.json", dir, dir);
  assert_int_equal(system(cmd), 0);
  lens_test_rmtree(dir);
}

/* As on one host (test_job_replay.c): the injected rank last in nearly
 * every instance, named with the cause that really made it late, never a
 * wrong cause; the cause read on the straggler's own host clock. */
static void arrival_cause_hosts(const char *scenario) {
  struct job_check c;
  run_hosts(scenario, &c);
  assert_true(job_injection_held(&c)); /* the simulation injected what it says (job_truth.h) */
  assert_int_equal(c.named_right + c.undecided, c.truth_last_x);
  assert_int_equal(c.top_straggler, c.straggler);
  /* over the instances the trace can decide: an "unknown" where the last
   * rank's GPU clock map bound is >= a quarter of the wait is right (17.6 ms
   * once at load 6 with a 20 ms injection; test_job_replay.c) */
  if (!job_machine_overloaded()) assert_true(c.named_right * 10 >= (c.truth_last_x - c.undecided_coarse) * 9);
}

static void test_late_app_hosts(void **s) {
  (void)s;
  if (!hosts_possible()) skip();
  arrival_cause_hosts("job-late-app");
}

static void test_slow_launch_hosts(void **s) {
  (void)s;
  if (!hosts_possible()) skip();
  arrival_cause_hosts("job-slow-launch");
}

static void test_gpu_busy_hosts(void **s) {
  (void)s;
  if (!hosts_possible()) skip();
  arrival_cause_hosts("job-gpu-busy");
}

static void test_none_hosts(void **s) {
  (void)s;
  if (!hosts_possible()) skip();
  struct job_check c;
  run_hosts("job-none", &c);
  /* Under a sanitizer or a load above one per CPU the replay's app threads
   * overrun their compute: real stragglers in the truth (a CI beside two
   * builds, load 5.2: 6 of 24 instances quiet in the truth), so the share of
   * quiet instances is the simulation's, asserted on a quiet machine only, as
   * in test_job_replay.c. Naming none there is always asserted. */
  int sim_quiet = job_machine_quiet() && !*LENS_SANITIZER;
  if (sim_quiet) assert_true(c.quiet * 2 >= c.instances);
  assert_int_equal(c.quiet_named, 0);
  /* a sanitizer build slows one process's proxies for the whole run: a really slow link */
  if (sim_quiet) assert_int_equal(c.quiet_link, 0);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_late_app_hosts), cmocka_unit_test(test_slow_launch_hosts),
                                 cmocka_unit_test(test_gpu_busy_hosts), cmocka_unit_test(test_none_hosts)};
  return cmocka_run_group_tests(t, NULL, NULL);
}
