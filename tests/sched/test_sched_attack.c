/* `nccl-lens sched` runs as root; the registry and page directories are
 * other users' to write. Each case plays a local user's plant and asserts
 * that root's sched neither writes through it, nor waits on it, nor watches
 * threads it names: a FIFO, a link or another user's file as <pid>.reg, a
 * registry of another process (pid, pid namespace, start ticks), a
 * directory of another user, links planted at the page's old temporary
 * name, and forged .sched pages the agent would export. The last case runs
 * the real loader (when the probe can load here) against a FIFO registry. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lens_test_attack.h"
#include "../lens_test_tmp.h"
#include "lens_safe_fs.h"
#include "nccl-lens/trace_format.h"
#include "sched/sched_page.h"
#include "sched/sched_targets.h"
#include "sched_test_util.h"

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* A registry for this process naming this thread as the proxy; extra is
 * appended (identity lines). */
static void write_registry(const char *path, const char *extra) {
  char text[512];
  snprintf(text, sizeof text, "nccl-lens-registry 1\npid %d\n%snspid %d\nthread %d %d 2 0 0\n", getpid(), extra,
           getpid(), gettid(), gettid());
  write_file(path, text);
}

static struct lens_sched_target *new_target(void) {
  struct lens_sched_target *t = calloc(1, sizeof *t);
  assert_non_null(t);
  t->host_pid = getpid();
  return t;
}

/* A FIFO as <pid>.reg: the refresh returns at once (the old reader blocked in
 * open() until a writer came), refused, watching nothing. */
static void test_registry_fifo(void **state) {
  (void)state;
  char dir[64], reg[256], err[1024];
  lens_test_tmpdir(dir, sizeof dir, "sched-fifo");
  snprintf(reg, sizeof reg, "%s/%d.reg", dir, getpid());
  assert_int_equal(mkfifo(reg, 0666), 0);
  struct lens_sched_target *t = new_target();
  alarm(10); /* a hang fails the test instead of stalling ctest */
  double t0 = mono_s();
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), -1);
  alarm(0);
  assert_true(mono_s() - t0 < 1.0);
  assert_true(t->refused);
  assert_int_equal(t->n_tids, 0);
  assert_non_null(strstr(err, "not a regular file"));
  free(t);
}

/* Another user's file, a symbolic link to a good registry, and a hard link:
 * each refused with its reason; the good registry itself is accepted. */
static void test_registry_not_the_targets(void **state) {
  (void)state;
  char dir[64], reg[256], good[256], err[1024];
  lens_test_tmpdir(dir, sizeof dir, "sched-owner");
  snprintf(reg, sizeof reg, "%s/%d.reg", dir, getpid());
  snprintf(good, sizeof good, "%s/elsewhere", dir);
  struct lens_sched_target *t = new_target();

  write_registry(reg, "");
  assert_int_equal(lens_attack_give(reg), 0);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), -1);
  assert_true(t->refused);
  assert_non_null(strstr(err, "owned by uid 4242"));
  unlink(reg);

  write_registry(good, "");
  assert_int_equal(symlink(good, reg), 0);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), -1);
  assert_true(t->refused);
  assert_non_null(strstr(err, "symbolic link"));
  unlink(reg);

  assert_int_equal(link(good, reg), 0);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), -1);
  assert_non_null(strstr(err, "more than one link"));
  unlink(reg);

  assert_int_equal(rename(good, reg), 0);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), 1);
  assert_false(t->refused);
  assert_int_equal(t->tids[0].host_tid, (uint32_t)gettid());
  free(t);
}

/* A registry directory of another user (the target here is root): refused,
 * as is one that is a link or writable by others without the sticky bit. */
static void test_registry_dir_of_another_user(void **state) {
  (void)state;
  char dir[64], sub[128], reg[256], err[1024], lnk[128];
  lens_test_tmpdir(dir, sizeof dir, "sched-dir");
  snprintf(sub, sizeof sub, "%s/d", dir);
  assert_int_equal(mkdir(sub, 0700), 0);
  snprintf(reg, sizeof reg, "%s/%d.reg", sub, getpid());
  write_registry(reg, "");
  struct lens_sched_target *t = new_target();
  assert_int_equal(lens_sched_target_refresh(t, sub, 0, err, sizeof err), 1);

  assert_int_equal(lens_attack_give(sub), 0);
  assert_int_equal(lens_sched_target_refresh(t, sub, 0, err, sizeof err), -1);
  assert_true(t->refused);
  assert_non_null(strstr(err, "owned by uid 4242"));

  assert_int_equal(chown(sub, 0, 0), 0);
  assert_int_equal(chmod(sub, 0777), 0);
  assert_int_equal(lens_sched_target_refresh(t, sub, 0, err, sizeof err), -1);
  assert_non_null(strstr(err, "writable by others"));
  assert_int_equal(chmod(sub, 01777), 0); /* a sticky shared directory of root's: accepted */
  assert_int_equal(lens_sched_target_refresh(t, sub, 0, err, sizeof err), 1);

  snprintf(lnk, sizeof lnk, "%s/link", dir);
  assert_int_equal(symlink(sub, lnk), 0);
  assert_int_equal(lens_sched_target_refresh(t, lnk, 0, err, sizeof err), -1);
  assert_non_null(strstr(err, "symbolic link"));
  free(t);
}

/* A registry of another process: its pid, pid namespace or start ticks are
 * not this process's. Refused; with the right ones it is accepted. */
static void test_registry_identity(void **state) {
  (void)state;
  char dir[64], reg[256], err[1024], extra[256];
  lens_test_tmpdir(dir, sizeof dir, "sched-id");
  snprintf(reg, sizeof reg, "%s/%d.reg", dir, getpid());
  uint64_t ticks = lens_proc_start_ticks(getpid()), ns = lens_proc_ns(0, "pid");
  assert_true(ticks > 0 && ns > 0);
  struct lens_sched_target *t = new_target();

  snprintf(extra, sizeof extra, "start %llu\npidns %llu\n", (unsigned long long)ticks + 1, (unsigned long long)ns);
  write_registry(reg, extra);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), -1);
  assert_true(t->refused);
  assert_non_null(strstr(err, "started at tick"));

  snprintf(extra, sizeof extra, "start %llu\npidns %llu\n", (unsigned long long)ticks, (unsigned long long)ns + 1);
  write_registry(reg, extra);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), -1);
  assert_non_null(strstr(err, "pid namespace"));

  /* The right identity, but the pid line names another process. */
  char text[512];
  snprintf(text, sizeof text, "nccl-lens-registry 1\npid %d\nstart %llu\npidns %llu\nthread %d %d 2 0 0\n",
           getpid() + 1, (unsigned long long)ticks, (unsigned long long)ns, gettid(), gettid());
  write_file(reg, text);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), -1);
  assert_non_null(strstr(err, "names pid"));

  snprintf(extra, sizeof extra, "start %llu\npidns %llu\n", (unsigned long long)ticks, (unsigned long long)ns);
  write_registry(reg, extra);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), 1);
  assert_false(t->refused);

  /* Hostile numbers: signs, overflow, trailing text; a tid of another
   * process is never matched (only /proc/<pid>/task says which are ours). */
  struct lens_registry_id id;
  assert_int_equal(lens_registry_parse_id("nccl-lens-registry 1\npid -5\nstart 99999999999999999999999\n"
                                                "pidns 12x\n", &id), 0);
  assert_false(id.has_pid || id.has_start || id.has_pidns);
  snprintf(text, sizeof text, "nccl-lens-registry 1\npid %d\nthread 1 1 2 0 0\nthread -3 4 2 0 0\n"
                              "thread 4294967297 1 2 0 0\nthread %d %d 2x 0 0\n",
           getpid(), gettid(), gettid());
  write_file(reg, text);
  assert_int_equal(lens_sched_target_refresh(t, dir, 0, err, sizeof err), 0); /* pid 1's tid is not ours */
  free(t);
}

static void count_pid(void *ctx, int pid) {
  if (pid == getpid()) ++*(int *)ctx;
}

/* --follow's scan: a FIFO, a link or another user's file named <pid>.reg is
 * not a process to follow; a directory writable by others (not sticky) is
 * refused; bounded and quick even when stuffed with names. */
static void test_scan_registry_dir(void **state) {
  (void)state;
  char dir[64], reg[256], so[256], why[256], other[256];
  lens_test_tmpdir(dir, sizeof dir, "sched-scan");
  /* This process maps a file named like the plugin: the scan's other test. */
  snprintf(so, sizeof so, "%s/libnccl-profiler-lens.so", dir);
  write_file(so, "x");
  int fd = open(so, O_RDONLY);
  void *map = mmap(NULL, 1, PROT_READ, MAP_PRIVATE, fd, 0);
  assert_true(map != MAP_FAILED);
  snprintf(reg, sizeof reg, "%s/%d.reg", dir, getpid());
  snprintf(other, sizeof other, "%s/target", dir);
  write_file(other, "nccl-lens-registry 1\n");

  int found = 0;
  assert_int_equal(mkfifo(reg, 0666), 0);
  alarm(10);
  assert_int_equal(lens_sched_scan_registry_dir(dir, count_pid, &found, why, sizeof why), 0);
  unlink(reg);
  assert_int_equal(symlink(other, reg), 0);
  assert_int_equal(lens_sched_scan_registry_dir(dir, count_pid, &found, why, sizeof why), 0);
  unlink(reg);
  write_file(reg, "nccl-lens-registry 1\n");
  assert_int_equal(lens_attack_give(reg), 0);
  assert_int_equal(lens_sched_scan_registry_dir(dir, count_pid, &found, why, sizeof why), 0);
  assert_int_equal(found, 0);
  assert_int_equal(chown(reg, 0, 0), 0);
  assert_int_equal(lens_sched_scan_registry_dir(dir, count_pid, &found, why, sizeof why), 1);
  assert_int_equal(found, 1);

  /* 20000 names: at most LENS_SCHED_SCAN_MAX are looked at. */
  char stuffed[128];
  snprintf(stuffed, sizeof stuffed, "%s/stuffed", dir);
  assert_int_equal(mkdir(stuffed, 0700), 0);
  for (int i = 0; i < 20000; i++) {
    char p[256];
    snprintf(p, sizeof p, "%s/%d.reg", stuffed, 1000000 + i);
    int f = open(p, O_CREAT | O_WRONLY, 0600);
    assert_true(f >= 0);
    close(f);
  }
  double t0 = mono_s();
  assert_int_equal(lens_sched_scan_registry_dir(stuffed, count_pid, &found, why, sizeof why), 0);
  assert_true(mono_s() - t0 < 5.0);

  assert_int_equal(chmod(dir, 0777), 0);
  assert_int_equal(lens_sched_scan_registry_dir(dir, count_pid, &found, why, sizeof why), -1);
  assert_non_null(strstr(why, "writable by others"));
  assert_int_equal(chmod(dir, 0700), 0);
  alarm(0);
  munmap(map, 1);
  close(fd);
}

/* The page: links planted at the old temporary name .<pid>.sched.tmp and at
 * <pid>.sched itself point at root's file; writing the page changes neither
 * (the page replaces the link). The directory is created 0700; one that is a
 * link, another user's, or writable by others is refused. */
static void test_page_write_through_planted_links(void **state) {
  (void)state;
  char dir[64], pd[128], victim_path[256], lnk[256], why[256];
  lens_test_tmpdir(dir, sizeof dir, "sched-page");
  struct lens_victim v1, v2;
  snprintf(victim_path, sizeof victim_path, "%s/victim1", dir);
  lens_victim_make(&v1, victim_path);
  snprintf(victim_path, sizeof victim_path, "%s/victim2", dir);
  lens_victim_make(&v2, victim_path);

  snprintf(pd, sizeof pd, "%s/pages", dir);
  int dfd = lens_sched_page_open_dir(pd, 0, why, sizeof why); /* created */
  assert_true(dfd >= 0);
  struct stat st;
  assert_int_equal(stat(pd, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0700);

  snprintf(lnk, sizeof lnk, "%s/.%d.sched.tmp", pd, getpid());
  assert_int_equal(symlink(v1.path, lnk), 0);
  assert_int_equal(lens_attack_give(lnk), 0);
  snprintf(lnk, sizeof lnk, "%s/%d.sched", pd, getpid());
  assert_int_equal(symlink(v2.path, lnk), 0);
  assert_int_equal(lens_attack_give(lnk), 0);

  static struct lens_sched_page page;
  memset(&page, 0, sizeof page);
  page.n = 1;
  page.t[0] = (struct lens_sched_page_thread){.pid = 7, .tid = 8, .ns_tid = 8, .roles = LENS_ROLE_PROXY,
                                              .runq_ns = 5000, .runq_waits = 2};
  assert_int_equal(lens_sched_page_write(&page, dfd, 10000), 0);
  assert_true(lens_victim_intact(&v1));
  assert_true(lens_victim_intact(&v2));
  assert_int_equal(lstat(lnk, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_mode & 07777, 0644);
  close(dfd);

  static struct lens_sched_page back;
  uint32_t writer;
  uint64_t updated;
  assert_int_equal(lens_sched_page_read(lnk, &back, &writer, &updated), 0);
  assert_int_equal(back.n, 1);
  assert_int_equal(back.t[0].runq_ns, 5000);
  assert_int_equal(writer, (uint32_t)getpid());

  /* Directories root's sched must not write in. */
  char bad[128];
  snprintf(bad, sizeof bad, "%s/link", dir);
  assert_int_equal(symlink(pd, bad), 0);
  assert_true(lens_sched_page_open_dir(bad, 1, why, sizeof why) < 0);
  assert_non_null(strstr(why, "symbolic link"));
  snprintf(bad, sizeof bad, "%s/theirs", dir);
  assert_int_equal(mkdir(bad, 0700), 0);
  assert_int_equal(lens_attack_give(bad), 0);
  assert_true(lens_sched_page_open_dir(bad, 1, why, sizeof why) < 0);
  assert_non_null(strstr(why, "owned by uid 4242"));
  snprintf(bad, sizeof bad, "%s/open", dir);
  assert_int_equal(mkdir(bad, 0777), 0);
  assert_int_equal(chmod(bad, 0777), 0);
  assert_true(lens_sched_page_open_dir(bad, 1, why, sizeof why) < 0);
  assert_non_null(strstr(why, "writable by others"));
  assert_int_equal(chmod(bad, 01777), 0); /* a site's shared sticky directory of root's */
  dfd = lens_sched_page_open_dir(bad, 1, why, sizeof why);
  assert_true(dfd >= 0);
  close(dfd);
  assert_true(lens_sched_page_open_dir(bad, 0, why, sizeof why) < 0); /* not as the per-user default */
}

/* Pages the agent would export: one of another user is refused (a forgery),
 * a FIFO is refused at once, and hostile numbers are not taken. */
static void test_page_read_forged(void **state) {
  (void)state;
  char dir[64], path[256], why[256];
  lens_test_tmpdir(dir, sizeof dir, "sched-forged");
  static struct lens_sched_page page;
  uint32_t writer;
  uint64_t updated;
  snprintf(path, sizeof path, "%s/4000.sched", dir);
  write_file(path, "nccl-lens-sched-page 1\nhost h\npid 4000\nupdated_real_ns 5\nmin_wait_ns 1\n"
                   "thread 1 2 2 2 999 1 0 0 0 0\n");
  assert_int_equal(lens_attack_give(path), 0);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  assert_int_equal(lens_sched_page_read_at(dfd, "4000.sched", &page, &writer, &updated, why, sizeof why), -1);
  assert_non_null(strstr(why, "owned by uid 4242"));
  assert_int_equal(chown(path, 0, 0), 0);
  assert_int_equal(lens_sched_page_read_at(dfd, "4000.sched", &page, &writer, &updated, why, sizeof why), 0);
  assert_int_equal(page.n, 1);

  write_file(path, "nccl-lens-sched-page 1\npid 4000\nupdated_real_ns 18446744073709551616\n"
                   "thread 1 2 2 2 -999 1 0 0 0 0\nthread 1 2 2 2 99999999999999999999 1 0 0 0 0\n"
                   "thread 1 2 2 2 5 1 0 0 0 0 extra\nthread 4294967296 2 2 2 5 1 0 0 0 0\n"
                   "thread 3 4 4 1 7 1 0 0 0 0\n");
  assert_int_equal(lens_sched_page_read_at(dfd, "4000.sched", &page, &writer, &updated, why, sizeof why), 0);
  assert_int_equal(updated, 0); /* overflowed: not taken */
  assert_int_equal(page.n, 1);  /* only the well-formed line */
  assert_int_equal(page.t[0].pid, 3);
  assert_int_equal(page.t[0].runq_ns, 7);

  unlink(path);
  assert_int_equal(mkfifo(path, 0666), 0);
  alarm(10);
  assert_int_equal(lens_sched_page_read_at(dfd, "4000.sched", &page, &writer, &updated, why, sizeof why), -1);
  alarm(0);
  assert_non_null(strstr(why, "not a regular file"));
  close(dfd);
}

/* The loader itself: a process mapping the plugin with a FIFO as its
 * registry. `sched --follow --duration 1` ends on time (it stalled past
 * its duration), exit 0, and says the refusal once; `sched --pid` fails
 * at once with that one line. */
static void test_follow_fifo_registry(void **state) {
  (void)state;
  const char *why_not = sched_test_cannot_probe();
  if (why_not) {
    printf("skip: %s\n", why_not);
    skip();
  }
  char dir[64], reg[256], so[256], out_dir[64];
  lens_test_tmpdir(dir, sizeof dir, "sched-follow-fifo");
  lens_test_tmpdir(out_dir, sizeof out_dir, "sched-follow-out");
  snprintf(so, sizeof so, "%s/libnccl-profiler-lens.so", dir);
  write_file(so, "x");
  int fd = open(so, O_RDONLY);
  void *map = mmap(NULL, 1, PROT_READ, MAP_PRIVATE, fd, 0);
  assert_true(map != MAP_FAILED);
  /* The target: a child that maps the "plugin" (this process's mapping,
   * inherited) and waits. */
  pid_t child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  snprintf(reg, sizeof reg, "%s/%d.reg", dir, (int)child);
  assert_int_equal(mkfifo(reg, 0666), 0);
  static char err[16384], out[16384];
  double secs = 0;
  /* --follow finds it by /proc (it maps the plugin): the FIFO is not even a
   * registry file to the directory scan. */
  int rc = lens_attack_run((char *[]){LENS_CLI, "sched", "--follow", "--registry-dir", dir,
                                      "--duration", "1", "--out", out_dir, "--page-dir", "none", NULL},
                           NULL, 10000, err, sizeof err, out, sizeof out, &secs);
  /* --pid: refused at once (not after the 5 s wait for a registry), one line, exit 1. */
  static char err2[16384], out2[16384];
  char pidarg[32];
  snprintf(pidarg, sizeof pidarg, "%d", (int)child);
  double secs2 = 0;
  int rc2 = lens_attack_run((char *[]){LENS_CLI, "sched", "--pid", pidarg, "--registry-dir", dir, "--duration", "1",
                                       "--out", out_dir, "--page-dir", "none", NULL},
                            NULL, 10000, err2, sizeof err2, out2, sizeof out2, &secs2);
  lens_attack_reap(child);
  munmap(map, 1);
  close(fd);
  if (rc2 != 1 || secs2 > 3.0) print_error("--pid: rc=%d secs=%.2f stderr=[%s]\n", rc2, secs2, err2);
  assert_int_equal(rc2, 1);
  assert_true(secs2 <= 3.0);
  assert_int_equal(lens_count_lines(err2, "nccl-lens sched:"), 1);
  assert_non_null(strstr(err2, "registry refused"));
  char said[64];
  snprintf(said, sizeof said, "registry refused for pid %d ", (int)child);
  if (rc != 0 || secs > 3.0 || lens_count_lines(err, said) != 1)
    print_error("rc=%d secs=%.2f stderr=[%s]\n", rc, secs, err);
  assert_int_equal(rc, 0);
  assert_true(secs <= 3.0);
  assert_int_equal(lens_count_lines(err, said), 1); /* once, not at every 50 ms refresh */
  assert_non_null(strstr(err, "not a regular file"));
}

int main(void) {
  if (geteuid() != 0) {
    printf("skip: these cases plant files as another user (uid %d) and need root\n", LENS_TEST_OTHER_UID);
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry_fifo),
      cmocka_unit_test(test_registry_not_the_targets),
      cmocka_unit_test(test_registry_dir_of_another_user),
      cmocka_unit_test(test_registry_identity),
      cmocka_unit_test(test_scan_registry_dir),
      cmocka_unit_test(test_page_write_through_planted_links),
      cmocka_unit_test(test_page_read_forged),
      cmocka_unit_test(test_follow_fifo_registry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
