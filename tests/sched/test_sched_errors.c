/* `nccl-lens sched` error paths: each is one clear line on stderr and a
 * non-zero exit, before anything is loaded or written. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sched_test_util.h"

static char err[8192], out[8192];
static char pidbuf[32];

static int lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* Runs the loader; asserts non-zero exit and exactly one stderr line containing want. */
static void expect_error(char *const argv[], int drop, const char *want) {
  int rc = sched_run(argv, drop, err, sizeof err, out, sizeof out);
  if (rc == 0 || !strstr(err, want) || lines(err) != 1)
    print_error("rc=%d stderr=[%s] stdout=[%s] wanted [%s]\n", rc, err, out, want);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(err, want));
  assert_int_equal(lines(err), 1);
}

static int setup(void **state) {
  (void)state;
  if (!sched_test_cli_has_sched()) {
    printf("skip: nccl-lens was built without the eBPF probe\n");
    return 0;
  }
  snprintf(pidbuf, sizeof pidbuf, "%d", getpid());
  return 0;
}
#define NEED_SCHED()                                                    \
  do {                                                                  \
    if (!sched_test_cli_has_sched()) {                                  \
      printf("skip: nccl-lens was built without the eBPF probe\n");     \
      skip();                                                           \
    }                                                                   \
  } while (0)

static void test_bad_arguments(void **state) {
  (void)state;
  NEED_SCHED();
  expect_error((char *[]){LENS_CLI, "sched", "--pid", "abc", NULL}, 0, "bad pid 'abc'");
  expect_error((char *[]){LENS_CLI, "sched", "--pid", "-5", NULL}, 0, "bad pid '-5'");
  expect_error((char *[]){LENS_CLI, "sched", NULL}, 0, "give exactly one of --pid PID or --follow");
  expect_error((char *[]){LENS_CLI, "sched", "--pid", pidbuf, "--follow", NULL}, 0,
               "give exactly one of --pid PID or --follow");
  expect_error((char *[]){LENS_CLI, "sched", "--pid", pidbuf, "--duration", "0", NULL}, 0, "bad --duration");
  /* --registry-only narrows --follow to one registry dir: it needs both. */
  expect_error((char *[]){LENS_CLI, "sched", "--follow", "--registry-only", NULL}, 0,
               "--registry-only needs --follow and --registry-dir");
  expect_error((char *[]){LENS_CLI, "sched", "--pid", pidbuf, "--registry-only", "--registry-dir", "/tmp", NULL}, 0,
               "--registry-only needs --follow and --registry-dir");
}

static void test_dead_process(void **state) {
  (void)state;
  NEED_SCHED();
  pid_t child = fork();
  if (child == 0) _exit(0);
  char cpid[32];
  snprintf(cpid, sizeof cpid, "%d", child);
  /* Not yet reaped: a zombie is as dead as a process can be. */
  usleep(50000);
  expect_error((char *[]){LENS_CLI, "sched", "--pid", cpid, "--all-threads", NULL}, 0, "has exited");
  int st;
  waitpid(child, &st, 0);
  expect_error((char *[]){LENS_CLI, "sched", "--pid", cpid, "--all-threads", NULL}, 0, "no process with pid");
}

static void test_no_registry(void **state) {
  (void)state;
  NEED_SCHED();
  /* This process publishes no registry and does not map the plugin. */
  expect_error((char *[]){LENS_CLI, "sched", "--pid", pidbuf, "--registry-dir", "/nonexistent-lens-dir", NULL},
               0, "no nccl-lens registry found for pid");
  expect_error((char *[]){LENS_CLI, "sched", "--pid", pidbuf, NULL}, 0, "--all-threads watches every thread");
}

static void test_no_privileges(void **state) {
  (void)state;
  NEED_SCHED();
  int drop = geteuid() == 0;
  if (!drop && !sched_test_cannot_probe()) {
    printf("skip: privileged without being root: cannot drop to an unprivileged user here\n");
    skip();
  }
  expect_error((char *[]){LENS_CLI, "sched", "--pid", pidbuf, "--all-threads", "--out", "/tmp", NULL}, drop,
               "needs CAP_BPF and CAP_PERFMON, or root");
  /* with a registry to read, the missing privilege is still what is named
   * (it used to be "no registry ... is it running with the plugin?") */
  expect_error((char *[]){LENS_CLI, "sched", "--pid", pidbuf, "--out", "/tmp", NULL}, drop,
               "needs CAP_BPF and CAP_PERFMON, or root");
}

static void test_bad_btf(void **state) {
  (void)state;
  NEED_SCHED();
  expect_error((char *[]){LENS_CLI, "sched", "--pid", pidbuf, "--all-threads", "--btf", "/nonexistent", NULL}, 0,
               "cannot read BTF file /nonexistent");
  const char *why = sched_test_cannot_probe();
  if (why) {
    printf("skip (rest): %s\n", why);
    skip();
  }
  /* A readable file that is not BTF: libbpf's CO-RE relocation fails at load. */
  char self[64];
  snprintf(self, sizeof self, "/proc/%d/cmdline", getpid());
  expect_error((char *[]){LENS_CLI, "sched", "--pid", pidbuf, "--all-threads", "--btf", self, "--out", "/tmp",
                          NULL},
               0, "cannot load the probe with BTF from");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_arguments), cmocka_unit_test(test_dead_process),
      cmocka_unit_test(test_no_registry),   cmocka_unit_test(test_no_privileges),
      cmocka_unit_test(test_bad_btf),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
