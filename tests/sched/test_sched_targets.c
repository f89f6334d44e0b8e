/* Target discovery of `nccl-lens sched` without privileges: registry parsing,
 * registry paths (override, the target's environment, the default), the
 * /proc NSpid translation to host tids, --all-threads, and exited or reused
 * pids. Uses this process and its own threads as the target. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "nccl-lens/registry.h"
#include "nccl-lens/trace_format.h"
#include "lens_safe_fs.h"
#include "sched/sched_targets.h"
#include "../lens_test_tmp.h"

struct seen { uint32_t tid[8], outer[8], roles[8]; int n; };
static void on_thread(void *ctx, uint32_t tid, uint32_t outer, uint32_t roles) {
  struct seen *s = ctx;
  s->tid[s->n] = tid;
  s->outer[s->n] = outer;
  s->roles[s->n++] = roles;
}

static void test_parse_registry(void **state) {
  (void)state;
  struct seen s = {0};
  const char *text = "nccl-lens-registry 1\npid 7\nnspid 4000 7\ntrace /tmp/x.lens\n"
                     "future-field whatever\nthread 8 4001 2 0 0\nthread 9 4002 0x3 -1 -1\nthread bad\n";
  assert_int_equal(lens_registry_parse_threads(text, on_thread, &s), 2);
  assert_int_equal(s.n, 2);
  assert_int_equal(s.tid[0], 8);
  assert_int_equal(s.outer[0], 4001);
  assert_int_equal(s.roles[0], LENS_ROLE_PROXY);
  assert_int_equal(s.tid[1], 9);
  assert_int_equal(s.roles[1], LENS_ROLE_PROXY | LENS_ROLE_APP);
  s.n = 0;
  assert_int_equal(lens_registry_parse_threads("nccl-lens-registryX 1\nthread 1 1 2 0 0\n", on_thread, &s), -1);
  assert_int_equal(lens_registry_parse_threads("hello\n", on_thread, &s), -1);
  assert_int_equal(s.n, 0);
}

static void test_proc_facts(void **state) {
  (void)state;
  uint32_t ns_pid = 0;
  assert_int_equal(lens_sched_ns_pid(getpid(), &ns_pid), 0);
  assert_int_equal(ns_pid, (uint32_t)getpid()); /* the test runs in our own namespace */
  assert_int_equal(lens_sched_host_tid(getpid(), (uint32_t)gettid()), (uint32_t)gettid());
  assert_int_equal(lens_sched_host_tid(getpid(), 0x3ffffffe), 0);
  uint64_t t1 = lens_proc_start_ticks(getpid());
  assert_true(t1 > 0);
  assert_int_equal(lens_proc_start_ticks(getpid()), t1);
  assert_int_equal(lens_sched_maps_plugin(getpid()), 0);
  assert_int_equal(lens_sched_maps_plugin(0x3ffffffe), -1);
}

static void test_registry_path(void **state) {
  (void)state;
  char p[PATH_MAX], want[PATH_MAX];
  lens_sched_registry_path(getpid(), 77, "/some/dir", p, sizeof p);
  snprintf(want, sizeof want, "/proc/%d/root/some/dir/77.reg", getpid());
  assert_string_equal(p, want);
  /* No override: the target's initial environment (ctest sets it), else the default. */
  lens_sched_registry_path(getpid(), 77, NULL, p, sizeof p);
  const char *env = getenv("NCCL_LENS_REGISTRY_DIR");
  char dflt[512]; /* the per-user default, as this process computes it for itself */
  assert_int_equal(lens_registry_default_dir(dflt, sizeof dflt), 0);
  snprintf(want, sizeof want, "/proc/%d/root%s/77.reg", getpid(), env && *env ? env : dflt);
  assert_string_equal(p, want);
}

static int helper_stop;
static void *helper(void *arg) {
  __atomic_store_n((uint32_t *)arg, (uint32_t)gettid(), __ATOMIC_RELEASE);
  while (!__atomic_load_n(&helper_stop, __ATOMIC_ACQUIRE)) usleep(1000);
  return NULL;
}

static void test_refresh_registry_and_all_threads(void **state) {
  (void)state;
  char dir[64];
  lens_test_tmpdir(dir, sizeof dir, "sched-targets");
  pthread_t th;
  uint32_t tid_slot = 0;
  __atomic_store_n(&helper_stop, 0, __ATOMIC_RELEASE);
  assert_int_equal(pthread_create(&th, NULL, helper, &tid_slot), 0);
  while (!__atomic_load_n(&tid_slot, __ATOMIC_ACQUIRE)) usleep(100);
  uint32_t helper_tid = tid_slot;

  struct lens_sched_target *t = calloc(1, sizeof *t);
  t->host_pid = getpid();
  char err[512];
  /* No registry yet. */
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), -1);
  assert_non_null(strstr(err, "no nccl-lens registry found"));

  /* Registry: this thread is the proxy, the helper an app thread, one dead tid. */
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%d.reg", dir, getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "nccl-lens-registry 1\npid %d\nnspid %d\nthread %d %d 2 0 0\nthread %u %u 1 -1 -1\n"
             "thread 1073741800 1073741800 2 0 0\n",
          getpid(), getpid(), gettid(), gettid(), helper_tid, helper_tid);
  fclose(f);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), 1);
  assert_int_equal(t->tids[0].host_tid, (uint32_t)gettid());
  assert_int_equal(t->tids[0].ns_tid, (uint32_t)gettid());
  assert_true(t->has_registry);

  /* --all-threads: every thread (both of ours, plus any a sanitizer runtime
   * started), whatever the registry says. */
  int n_all = lens_sched_target_refresh(t, dir, 1, err, sizeof err);
  assert_true(n_all >= 2);
  int found_helper = 0, found_self = 0;
  for (size_t i = 0; i < t->n_tids; i++) {
    found_helper |= t->tids[i].host_tid == helper_tid;
    found_self |= t->tids[i].host_tid == (uint32_t)gettid();
  }
  assert_true(found_helper && found_self);

  /* Not a registry. */
  f = fopen(path, "w");
  fprintf(f, "garbage\n");
  fclose(f);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), -1);
  assert_non_null(strstr(err, "is not an nccl-lens registry"));

  __atomic_store_n(&helper_stop, 1, __ATOMIC_RELEASE);
  pthread_join(th, NULL);
  unlink(path);
  rmdir(dir);
  free(t);
}

static void test_exited_process(void **state) {
  (void)state;
  pid_t child = fork();
  if (child == 0) _exit(0);
  int st;
  waitpid(child, &st, 0);
  struct lens_sched_target *t = calloc(1, sizeof *t);
  t->host_pid = child;
  char err[512];
  assert_int_equal(lens_sched_target_refresh(t, NULL, 1, err, sizeof err), -1);
  assert_non_null(strstr(err, "has exited"));
  /* A live pid whose start time differs from the one recorded: reused. */
  t->host_pid = getpid();
  t->start_ticks = lens_proc_start_ticks(getpid()) + 1;
  assert_int_equal(lens_sched_target_refresh(t, NULL, 1, err, sizeof err), -1);
  assert_non_null(strstr(err, "has exited"));
  free(t);
}

static void count_pid(void *ctx, int pid) {
  if (pid == getpid()) ++*(int *)ctx;
}

/* --follow finds processes that map the plugin, through registry files and /proc maps. */
static void test_find_plugin_processes(void **state) {
  (void)state;
  char dir[64], reg[PATH_MAX], so[PATH_MAX], why[256];
  lens_test_tmpdir(dir, sizeof dir, "sched-follow");
  snprintf(reg, sizeof reg, "%s/%d.reg", dir, getpid());
  FILE *f = fopen(reg, "w");
  fputs("nccl-lens-registry 1\n", f);
  fclose(f);
  int found = 0;
  lens_sched_scan_registry_dir(dir, count_pid, &found, why, sizeof why);
  assert_int_equal(found, 0); /* a registry alone is not enough: stale files stay behind */
  lens_sched_scan_plugin_procs(count_pid, &found);
  assert_int_equal(found, 0);

  snprintf(so, sizeof so, "%s/libnccl-profiler-lens.so", dir);
  f = fopen(so, "w");
  fputs("x", f);
  fclose(f);
  int fd = open(so, O_RDONLY);
  void *map = mmap(NULL, 1, PROT_READ, MAP_PRIVATE, fd, 0);
  assert_true(map != MAP_FAILED);
  assert_int_equal(lens_sched_maps_plugin(getpid()), 1);
  lens_sched_scan_registry_dir(dir, count_pid, &found, why, sizeof why);
  assert_int_equal(found, 1);
  found = 0;
  lens_sched_scan_plugin_procs(count_pid, &found);
  assert_int_equal(found, 0); /* the scan skips the caller itself */
  munmap(map, 1);
  close(fd);
  unlink(so);
  unlink(reg);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_registry),
      cmocka_unit_test(test_proc_facts),
      cmocka_unit_test(test_registry_path),
      cmocka_unit_test(test_refresh_registry_and_all_threads),
      cmocka_unit_test(test_exited_process),
      cmocka_unit_test(test_find_plugin_processes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
