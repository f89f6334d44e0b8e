/* lens-job-naming [--iters N] [--delay-us D] [--scenario S]... [--verbose]
 *
 * How often `nccl-lens job` names the injected straggler, with the right
 * cause, over many instances (docs/job.md, "Checked against the replay's
 * ground truth"): runs each job-* replay scenario (2 processes x 2 ranks,
 * coupled GPUs) and compares every instance with the truth, as
 * tests/job/test_job_replay.c does, then PRINTS per scenario:
 *   instances    instances in the truth (all matched on every rank)
 *   eligible     where the truth says the injected rank was last, by at
 *                least the threshold (slow link: every instance; none:
 *                every instance whose true waits were below 10 us)
 *   right        named with the cause that really made it late (slow link:
 *                the right sender -> receiver; none: nothing named)
 *   unknown      named with cause "unknown" (the trace could not decide)
 *   wrong        named with another cause or rank (none: a straggler named)
 *   rate         right / eligible
 * and the 1-min load beside it: these are timings of real threads on this
 * machine, so read them on a quiet one. Default: 100 iterations (200
 * instances per scenario), 20 ms injected delay. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_truth.h"
#include "lens_test_tmp.h"

static double load1(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

static int verbose;

static int run(const char *sc, int iters, int delay_us) {
  char dir[256], tp[300];
  lens_test_tmpdir(dir, sizeof dir, "jobbench");
  double l0 = load1();
  if (job_run_replay(dir, sc, 2, 2, iters, delay_us) != 0) {
    fprintf(stderr, "%s: the replay failed\n", sc);
    return 1;
  }
  snprintf(tp, sizeof tp, "%s/truth.json", dir);
  struct job_check c;
  /* the checker lists every miss on stderr: keep them out of the table */
  fflush(stderr);
  int saved = dup(2), null = verbose ? -1 : open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, 2);
  int rc = job_check_dir(dir, tp, NULL, &c);
  fflush(stderr);
  if (saved >= 0) dup2(saved, 2), close(saved);
  if (null >= 0) close(null);
  if (rc != 0) {
    fprintf(stderr, "%s: nccl-lens job or the truth failed\n", sc);
    return 1;
  }
  size_t elig, right, unknown, wrong;
  if (!strcmp(c.cause, "slow_link")) {
    elig = c.instances - c.withheld - c.link_straggler, right = c.link_named, unknown = 0, wrong = c.link_wrong;
  } else if (!strcmp(c.cause, "none")) {
    elig = c.quiet, right = c.quiet - c.quiet_named - c.quiet_link, unknown = 0, wrong = c.quiet_named + c.quiet_link;
  } else {
    elig = c.truth_last_x, right = c.named_right, unknown = c.undecided, wrong = c.truth_last_x - c.named_right - c.undecided;
  }
  printf("%-18s %9zu %9zu %9zu %9zu %9zu %9zu %8.2f%% %9zu %9zu %8.1f %8.1f\n", sc, c.instances, c.matched, elig, right,
         unknown, wrong, elig ? 100.0 * (double)right / (double)elig : 0, c.exec_ok, c.wait_ok, l0, load1());
  fflush(stdout);
  lens_test_rmtree(dir);
  return 0;
}

int main(int argc, char **argv) {
  int iters = 100, delay_us = 20000, n_sc = 0;
  const char *sc[16];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--delay-us") && i + 1 < argc) delay_us = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--scenario") && i + 1 < argc && n_sc < 16) sc[n_sc++] = argv[++i];
    else if (!strcmp(argv[i], "--verbose")) verbose = 1;
    else {
      fprintf(stderr, "usage: lens-job-naming [--iters N (100)] [--delay-us D (20000)] [--scenario job-X]... [--verbose]\n"
                      "  --verbose  list every instance not named right (on stderr)\n");
      return 2;
    }
  }
  if (!n_sc) {
    static const char *const all[] = {"job-late-app", "job-slow-launch", "job-gpu-busy", "job-none", "job-slow-link"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sc[n_sc++] = all[i];
  }
  printf("job-* replays, 2 processes x 2 ranks, %d iterations (2 AllReduces each), %d us injected; %ld CPUs\n", iters,
         delay_us, sysconf(_SC_NPROCESSORS_ONLN));
  printf("%-18s %9s %9s %9s %9s %9s %9s %9s %9s %9s %8s %8s\n", "scenario", "instances", "matched", "eligible", "right",
         "unknown", "wrong", "rate", "exec ok", "waits ok", "load0", "load1");
  int rc = 0;
  for (int i = 0; i < n_sc; i++) rc |= run(sc[i], iters, delay_us);
  return rc;
}
