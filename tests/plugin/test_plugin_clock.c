/* CLOCK chunks: the writer records the evidence an offline aligner needs,
 * and the reader places each process's CLOCK_MONOTONIC on the job time base
 * (REALTIME) within the bound it reports. A simulated second host is a child
 * in its own time namespace (MONOTONIC 1000 s ahead) and UTS namespace (its
 * own host name), as root; skipped with the reason otherwise. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
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

#include "host_clock.h"
#include "lensread.h"
#include "plugin_driver.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define SIM_HOST "lens-simhost-7"
#define SHIFT_S 1000ll

static int g_mask;
static char g_dir[256];

static int64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int run_session(void) {
  setenv("NCCL_LENS_OUTPUT_DIR", g_dir, 1);
  setenv("NCCL_LENS_REGISTRY_DIR", g_dir, 1);
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 1;
  void *ctx = NULL;
  if (p.v5->init(&ctx, 11, &g_mask, "clk", 1, 1, 0, test_logger) || !ctx) return 2;
  lens_nccl_descr_v5_t d;
  d5_coll(&d, NULL, "AllReduce");
  for (int i = 0; i < 100; i++) {
    void *h;
    p.v5->startEvent(ctx, &h, &d);
    p.v5->stopEvent(h);
  }
  if (p.v5->finalize(ctx)) return 3;
  return 0;
}

static struct lens_model *load_one(void) {
  DIR *dd = opendir(g_dir);
  if (!dd) return NULL;
  char path[512] = "";
  struct dirent *e;
  while ((e = readdir(dd)))
    if (strstr(e->d_name, ".lens")) snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
  closedir(dd);
  const char *paths[] = {path};
  char err[256];
  return path[0] ? lens_model_load(paths, 1, err, sizeof err, NULL) : NULL;
}

/* On this host's own clocks: the placement is within its bound of REALTIME. */
static void test_clock_evidence_same_host(void **state) {
  (void)state;
  make_tmp_dir(g_dir, sizeof g_dir, "clk");
  pid_t pid = fork();
  if (pid == 0) _exit(run_session());
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  int64_t off_here = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
  struct lens_model *m = load_one();
  assert_non_null(m);
  assert_true(m->n_clocks >= 2); /* at least one at the start, one at the end */
  struct lens_host_clock hc;
  assert_int_equal(lens_host_clock_of(m, 0, &hc), 0);
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  assert_string_equal(hc.host, host);
  assert_int_equal(strlen(hc.boot_id), 36); /* a UUID */
  int64_t err = hc.real_minus_mono_ns - off_here;
  if (err < 0) err = -err;
  assert_true((uint64_t)err <= hc.bound_ns + 5000000ull); /* + NTP slew while the test ran */
  lens_model_free(m);
}

/* A second "host": MONOTONIC 1000 s ahead, its own host name. */
static void test_clock_evidence_time_namespace(void **state) {
  (void)state;
  if (geteuid() != 0) {
    fprintf(stderr, "skip: time namespaces need root\n");
    skip();
  }
  make_tmp_dir(g_dir, sizeof g_dir, "clkns");
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    char why = 0;
    if (unshare(CLONE_NEWTIME | CLONE_NEWUTS) != 0) why = 'u';
    if (!why && sethostname(SIM_HOST, strlen(SIM_HOST)) != 0) why = 'h';
    int fd = why ? -1 : open("/proc/self/timens_offsets", O_WRONLY);
    char line[64];
    int n = snprintf(line, sizeof line, "monotonic %lld 0", SHIFT_S);
    if (!why && (fd < 0 || write(fd, line, (size_t)n) != n)) why = 'o';
    if (fd >= 0) close(fd);
    if (why) {
      if (write(pfd[1], &why, 1) != 1) _exit(9);
      _exit(0);
    }
    pid_t g = fork(); /* the time namespace applies to children */
    if (g == 0) _exit(run_session());
    int gst;
    waitpid(g, &gst, 0);
    _exit(WIFEXITED(gst) ? WEXITSTATUS(gst) : 99);
  }
  close(pfd[1]);
  char why = 0;
  ssize_t got = read(pfd[0], &why, 1);
  close(pfd[0]);
  int st;
  waitpid(pid, &st, 0);
  if (got == 1) {
    fprintf(stderr, "skip: cannot make a time/UTS namespace here (step %c)\n", why);
    skip();
  }
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  int64_t off_here = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
  int64_t mono_here = clock_ns(CLOCK_MONOTONIC);
  struct lens_model *m = load_one();
  assert_non_null(m);
  struct lens_host_clock hc;
  assert_int_equal(lens_host_clock_of(m, 0, &hc), 0);
  assert_string_equal(hc.host, SIM_HOST);
  assert_string_equal(m->procs[0].host, SIM_HOST);
  assert_true(hc.timens_mono_offset_ns == SHIFT_S * 1000000000ll);
  /* its MONOTONIC really was 1000 s ahead of ours ... */
  assert_true(m->n_events > 0);
  assert_true((int64_t)m->events[0].start_mono_ns > mono_here + (SHIFT_S - 10) * 1000000000ll);
  /* ... and the placement undoes it, within the bound */
  int64_t err = hc.real_minus_mono_ns + SHIFT_S * 1000000000ll - off_here;
  if (err < 0) err = -err;
  assert_true((uint64_t)err <= hc.bound_ns + 5000000ull);
  int64_t job = lens_host_clock_to_job(&hc, m->events[0].start_mono_ns);
  int64_t real_now = clock_ns(CLOCK_REALTIME);
  assert_true(job <= real_now && job > real_now - 30 * 1000000000ll); /* it happened in the last seconds */
  lens_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clock_evidence_same_host),
      cmocka_unit_test(test_clock_evidence_time_namespace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
