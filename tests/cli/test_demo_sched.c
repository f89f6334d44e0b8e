/* `nccl-lens demo` with the scheduler probe (tools/demo/demo_sched.c).
 *
 * Privileged (root or CAP_BPF+CAP_PERFMON, kernel BTF, probe built in): the
 * demo must leave a sched .lens next to the plugin's traces, a summary whose
 * starvation section names at least one proxy thread with at least one
 * run-queue wait or preemption, and Chrome slices of category "sched".
 * Otherwise that case prints why and skips. A decoy replay with the plugin
 * runs beside it (its own registry dir, as another job on the machine would):
 * none of its threads may show up in the demo's starvation section.
 *
 * Without privileges (uid 65534 in a child, when we are root) and with
 * NCCL_LENS_DEMO_NO_PROBE=1, the demo must still succeed, print its one-line
 * note, and write no sched trace. */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched_test_util.h"
#include "../lens_test_tmp.h"
#include "../lens_test_file.h"

static char g_tmp[] = "/tmp/lens-demo-sched-XXXXXX";

/* Number of nccl-lens-sched-*.lens files in dir/traces that are not empty. */
static int sched_traces(const char *dir) {
  char p[512];
  snprintf(p, sizeof p, "%s/traces", dir);
  DIR *d = opendir(p);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (strncmp(e->d_name, "nccl-lens-sched-", 16) || l < 5 || strcmp(e->d_name + l - 5, ".lens")) continue;
    char f[1024];
    struct stat st;
    snprintf(f, sizeof f, "%s/%s", p, e->d_name);
    if (!stat(f, &st) && st.st_size > 0) n++;
  }
  closedir(d);
  return n;
}

/* Runs the demo into tmp/name; returns its exit status, output in out. */
static int run_demo(const char *name, int drop_privs, char *dir, size_t dir_len, char *out, size_t out_len) {
  snprintf(dir, dir_len, "%s/%s", g_tmp, name);
  char err[8192];
  char *argv[] = {LENS_CLI, "demo", "--out", dir, NULL};
  int rc = sched_run(argv, drop_privs, err, sizeof err, out, out_len);
  if (rc) fprintf(stderr, "demo exit %d\nstdout:\n%s\nstderr:\n%s\n", rc, out, err);
  return rc;
}

/* Largest "in R run-queue waits + P preemptions" (R + P) in the summary's
 * lines for proxy threads. */
static long max_proxy_waits(const char *summary) {
  long best = -1;
  for (const char *l = strstr(summary, "proxy of rank"); l; l = strstr(l + 1, "proxy of rank")) {
    const char *w = strstr(l, "\n    waited ");
    const char *in = w ? strstr(w, " in ") : NULL;
    long r, p;
    if (in && sscanf(in, " in %ld run-queue waits + %ld preemptions", &r, &p) == 2 && r + p > best) best = r + p;
  }
  return best;
}

/* 1 once dir holds a registry file (*.reg). */
static int has_registry(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int found = 0;
  struct dirent *e;
  while (!found && (e = readdir(d))) {
    size_t l = strlen(e->d_name);
    found = l > 4 && !strcmp(e->d_name + l - 4, ".reg");
  }
  closedir(d);
  return found;
}

/* Another job on the machine: a replay through the plugin with a registry of
 * its own, running (its plugin loaded and published) before the demo starts. */
static int start_decoy(struct sched_child *c) {
  char out[256], reg[256];
  snprintf(out, sizeof out, "%s/decoy", g_tmp);
  snprintf(reg, sizeof reg, "%s/decoy-registry", g_tmp);
  mkdir(out, 0755);
  mkdir(reg, 0755);
  setenv("NCCL_LENS_REGISTRY_DIR", reg, 1);
  char *argv[] = {LENS_CLI, "replay", "--scenario", "allreduce", "--iters", "400", "--nodes", "1",
                  "--out", out, "--quiet", NULL};
  int rc = sched_child_start(c, argv, 0);
  unsetenv("NCCL_LENS_REGISTRY_DIR");
  if (rc) return -1;
  for (int i = 0; i < 300 && !has_registry(reg); i++) usleep(10000);
  return has_registry(reg) ? 0 : -1;
}

static void test_demo_with_probe(void **state) {
  (void)state;
  const char *why = sched_test_cannot_probe();
  if (why) {
    printf("SKIP test_demo_with_probe: %s\n", why);
    skip();
  }
  char dir[256], out[16384];
  unsetenv("NCCL_LENS_DEMO_NO_PROBE");
  struct sched_child decoy;
  int have_decoy = start_decoy(&decoy) == 0;
  if (!have_decoy) printf("note: the decoy replay did not publish a registry; checking the demo alone\n");
  int rc = run_demo("probe", 0, dir, sizeof dir, out, sizeof out);
  int decoy_alive = have_decoy && waitpid(decoy.pid, NULL, WNOHANG) == 0;
  if (have_decoy) {
    char e[4096], o[4096];
    kill(decoy.pid, SIGKILL);
    sched_child_finish(&decoy, 5000, e, sizeof e, o, sizeof o);
  }
  assert_int_equal(rc, 0);
  if (have_decoy && !decoy_alive) printf("note: the decoy replay ended before the demo did\n");
  assert_null(strstr(out, "scheduler probe not started"));
  assert_int_equal(sched_traces(dir), 1);

  char path[512];
  snprintf(path, sizeof path, "%s/summary.txt", dir);
  char *summary = lens_test_slurp(path, NULL);
  assert_non_null(summary);
  /* the starvation section included; the long lines said, so a failure names its column */
  if (lens_test_max_line(summary) > 120)
    for (const char *l = summary; *l;) {
      const char *e = strchr(l, '\n');
      size_t n = e ? (size_t)(e - l) : strlen(l);
      if (n > 120) fprintf(stderr, "wider than 120 columns (%zu): %.*s\n", n, (int)n, l);
      l += n + (e != NULL);
    }
  assert_true(lens_test_max_line(summary) <= 120);
  const char *sec = strstr(summary, "\nstarvation (scheduler probe, ");
  if (!sec) fprintf(stderr, "summary without a starvation section:\n%s\n", summary);
  assert_non_null(sec);
  long samples = 0;
  assert_int_equal(sscanf(sec, "\nstarvation (scheduler probe, %ld samples)", &samples), 1);
  assert_true(samples > 0);
  /* Every watched thread in the section is one of the demo's proxy threads:
   * the decoy's, or any other job's, would print without "proxy of rank". */
  size_t threads = 0, proxies = 0;
  assert_int_equal(sscanf(strstr(sec, "Proxy thread scheduling (eBPF probe): "),
                          "Proxy thread scheduling (eBPF probe): %zu thread(s)", &threads), 1);
  for (const char *l = strstr(sec, "\n  pid "); l; l = strstr(l + 1, "\n  pid ")) {
    const char *eol = strchr(l + 1, '\n');
    const char *pr = strstr(l, ", proxy of rank ");
    if (pr && (!eol || pr < eol)) proxies++;
    else fprintf(stderr, "a thread that is not the demo's proxy:%.*s\n", eol ? (int)(eol - l - 1) : 80, l + 1);
  }
  printf("demo: %zu watched threads in the starvation section, %zu of them the demo's proxies\n", threads, proxies);
  assert_true(threads >= 1);
  assert_int_equal(proxies, threads);
  long waits = max_proxy_waits(sec);
  if (waits < 1) fprintf(stderr, "no proxy thread with a wait:\n%s\n", sec);
  assert_true(waits >= 1);
  printf("demo: %ld sched samples, busiest proxy thread %ld waits\n", samples, waits);
  free(summary);

  snprintf(path, sizeof path, "%s/trace.json", dir);
  char *trace = lens_test_slurp(path, NULL);
  assert_non_null(trace);
  size_t slices = 0;
  for (const char *p = strstr(trace, "\"cat\":\"sched\""); p; p = strstr(p + 1, "\"cat\":\"sched\"")) slices++;
  printf("demo: %zu starvation slices in trace.json\n", slices);
  assert_true(slices > 0);
  assert_non_null(strstr(trace, "\"ph\":\"X\",\"name\":\"preempted\"") ? trace
                                                                         : strstr(trace, "run-queue wait"));
  free(trace);
}

/* The one-line note, and a demo that goes on without the probe. */
static void expect_plain_demo(const char *dir, const char *out, const char *reason) {
  const char *note = strstr(out, "note: scheduler probe not started: ");
  if (!note || !strstr(note, reason)) fprintf(stderr, "expected a note with '%s' in:\n%s\n", reason, out);
  assert_non_null(note);
  const char *eol = strchr(note, '\n');
  assert_non_null(eol);
  assert_non_null(strstr(note, reason));
  assert_true(strstr(note, reason) < eol);
  assert_non_null(strstr(out, "recorded "));
  assert_int_equal(sched_traces(dir), 0);
  char path[512];
  snprintf(path, sizeof path, "%s/summary.txt", dir);
  char *summary = lens_test_slurp(path, NULL);
  assert_non_null(summary);
  assert_null(strstr(summary, "\nstarvation (scheduler probe, "));
  free(summary);
}

static void test_demo_no_probe_env(void **state) {
  (void)state;
  char dir[256], out[16384];
  setenv("NCCL_LENS_DEMO_NO_PROBE", "1", 1);
  int rc = run_demo("env", 0, dir, sizeof dir, out, sizeof out);
  unsetenv("NCCL_LENS_DEMO_NO_PROBE");
  assert_int_equal(rc, 0);
  expect_plain_demo(dir, out, "NCCL_LENS_DEMO_NO_PROBE");
}

static void test_demo_unprivileged(void **state) {
  (void)state;
  if (geteuid() != 0) {
    printf("SKIP test_demo_unprivileged: not root, cannot switch to uid 65534 (the env case covers the note)\n");
    skip();
  }
  if (!sched_test_cli_has_sched()) {
    printf("SKIP test_demo_unprivileged: nccl-lens was built without the eBPF probe\n");
    skip();
  }
  char dir[256], out[16384];
  unsetenv("NCCL_LENS_DEMO_NO_PROBE");
  assert_int_equal(run_demo("unpriv", 1, dir, sizeof dir, out, sizeof out), 0);
  expect_plain_demo(dir, out, "needs root or CAP_BPF + CAP_PERFMON");
}

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(g_tmp)) return -1;
  return chmod(g_tmp, 01777); /* the unprivileged demo writes here too; sticky, as /tmp: the plugin trusts a registry below no other kind of world-writable directory */
}

static int teardown(void **state) {
  (void)state;
  return lens_test_rmtree(g_tmp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_demo_with_probe),
      cmocka_unit_test(test_demo_no_probe_env),
      cmocka_unit_test(test_demo_unprivileged),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
