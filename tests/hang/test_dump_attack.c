/* `nccl-lens dump` run by root against a local user's plants: it created
 * root-owned files wherever planted <pid>.reg and <pid>.dump links pointed.
 * Each case plants as "another user" (uid 4242, a process of theirs for a
 * target) and asserts that nothing is created or changed outside the one
 * request file dump is meant to write, and that each refusal is one line. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lens_test_attack.h"
#include "../lens_test_tmp.h"

#define CLI LENS_BUILD_DIR "/bin/nccl-lens"

static char err[16384], out[16384];

/* A process of uid `uid` whose registry directory is dir (its initial
 * environment, as the plugin would read it), once it has exec'd. */
static pid_t target(uid_t uid, const char *dir) {
  char env[PATH_MAX + 32];
  snprintf(env, sizeof env, "NCCL_LENS_REGISTRY_DIR=%s", dir);
  pid_t pid = lens_attack_spawn_as(uid, (char *[]){"/bin/sleep", "60", NULL}, (char *[]){env, NULL});
  assert_true(pid > 0);
  char exe[64], link[PATH_MAX];
  snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
  for (int i = 0; i < 500; i++) { /* at most 5 s */
    ssize_t n = readlink(exe, link, sizeof link - 1);
    if (n > 0 && (link[n] = 0, strstr(link, "sleep"))) return pid;
    usleep(10000);
  }
  fail_msg("the target never started");
  return -1;
}

static int dump(char *const extra[]) {
  char *argv[16] = {CLI, "dump"};
  int n = 2;
  for (int i = 0; extra[i] && n < 15; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  double secs;
  int rc = lens_attack_run(argv, NULL, 20000, err, sizeof err, out, sizeof out, &secs);
  assert_true(rc >= 0); /* not killed at the deadline */
  return rc;
}

static int entries(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* The attacker owns the registry directory and the target; their <pid>.reg
 * and <pid>.dump are links to root's places. `dump --all` and `dump PID`
 * create nothing there and change no victim. */
static void test_planted_links(void **state) {
  (void)state;
  char base[64], d[128], vdir[128], vfile[192], p[256], q[256], pidarg[32];
  lens_test_tmpdir(base, sizeof base, "dump-links");
  snprintf(d, sizeof d, "%s/reg", base);
  snprintf(vdir, sizeof vdir, "%s/etc", base); /* root's directory, standing for /etc */
  assert_int_equal(mkdir(d, 0700), 0);
  assert_int_equal(mkdir(vdir, 0755), 0);
  assert_int_equal(lens_attack_give(d), 0);
  snprintf(vfile, sizeof vfile, "%s/passwd", vdir);
  struct lens_victim v;
  lens_victim_make(&v, vfile);
  pid_t pid = target(LENS_TEST_OTHER_UID, d);
  snprintf(pidarg, sizeof pidarg, "%d", (int)pid);

  /* <pid>.reg a link to root's file, <pid>.dump a (dangling) link into root's directory. */
  snprintf(p, sizeof p, "%s/%d.reg", d, (int)pid);
  assert_int_equal(symlink(vfile, p), 0);
  assert_int_equal(lens_attack_give(p), 0);
  snprintf(q, sizeof q, "%s/%d.dump", d, (int)pid);
  char planted[256];
  snprintf(planted, sizeof planted, "%s/cron-job", vdir);
  assert_int_equal(symlink(planted, q), 0);
  assert_int_equal(lens_attack_give(q), 0);

  assert_int_equal(dump((char *[]){"--all", "--registry-dir", d, "--wait-s", "0", NULL}), 1);
  assert_non_null(strstr(err, "no process registered")); /* a link is not a registry file */
  assert_int_equal(lens_count_lines(err, "nccl-lens dump:"), 1);

  /* A real registry file of theirs: --all takes the pid, and the planted
   * .dump link is refused, not written through. */
  unlink(p);
  write_file(p, "nccl-lens-registry 1\n");
  assert_int_equal(lens_attack_give(p), 0);
  assert_int_equal(dump((char *[]){"--all", "--registry-dir", d, "--wait-s", "0", NULL}), 1);
  assert_non_null(strstr(err, "exists and is not a request"));
  assert_int_equal(lens_count_lines(err, "nccl-lens dump:"), 1);
  assert_int_equal(dump((char *[]){pidarg, "--wait-s", "0", NULL}), 1);
  assert_non_null(strstr(err, "exists and is not a request"));

  assert_int_equal(entries(vdir), 1); /* only the victim: no cron-job */
  assert_true(lens_victim_intact(&v));
  struct stat st;
  assert_int_equal(lstat(q, &st), 0);
  assert_true(S_ISLNK(st.st_mode)); /* their link, left as it was */
  lens_attack_reap(pid);
}

/* A registry directory that is not the target's user's: another user's
 * (the target is root's process), or a link to root's directory. Refused in
 * one line; nothing created in either. */
static void test_directory_not_the_targets(void **state) {
  (void)state;
  char base[64], d[128], vdir[128], lnk[128], pidarg[32];
  lens_test_tmpdir(base, sizeof base, "dump-dir");
  snprintf(d, sizeof d, "%s/theirs", base);
  snprintf(vdir, sizeof vdir, "%s/etc", base);
  snprintf(lnk, sizeof lnk, "%s/link", base);
  assert_int_equal(mkdir(d, 0700), 0);
  assert_int_equal(lens_attack_give(d), 0);
  assert_int_equal(mkdir(vdir, 0755), 0);
  assert_int_equal(symlink(vdir, lnk), 0);

  pid_t pid = target(0, d);
  snprintf(pidarg, sizeof pidarg, "%d", (int)pid);
  assert_int_equal(dump((char *[]){pidarg, "--wait-s", "0", NULL}), 1);
  assert_non_null(strstr(err, "owned by uid 4242"));
  assert_int_equal(lens_count_lines(err, "nccl-lens dump:"), 1);
  assert_int_equal(entries(d), 0);
  lens_attack_reap(pid);

  pid = target(0, lnk);
  snprintf(pidarg, sizeof pidarg, "%d", (int)pid);
  assert_int_equal(dump((char *[]){pidarg, "--wait-s", "0", NULL}), 1);
  assert_non_null(strstr(err, "symbolic link"));
  assert_int_equal(entries(vdir), 0);
  lens_attack_reap(pid);
}

/* The request as it should be: in the target's directory, a regular file of
 * the target's user (the plugin accepts its own euid or root), 0600; --all
 * skips a stale .reg and one not owned by its process's user. */
static void test_request_given_to_target(void **state) {
  (void)state;
  char base[64], d[128], p[256], pidarg[32];
  lens_test_tmpdir(base, sizeof base, "dump-ok");
  snprintf(d, sizeof d, "%s/reg", base);
  assert_int_equal(mkdir(d, 0700), 0);
  assert_int_equal(lens_attack_give(d), 0);
  pid_t pid = target(LENS_TEST_OTHER_UID, d);
  snprintf(pidarg, sizeof pidarg, "%d", (int)pid);

  /* Root's file for their process, and a file for a pid that is gone. */
  snprintf(p, sizeof p, "%s/%d.reg", d, (int)pid);
  write_file(p, "nccl-lens-registry 1\n");
  snprintf(p, sizeof p, "%s/1073741800.reg", d);
  write_file(p, "nccl-lens-registry 1\n");
  assert_int_equal(lens_attack_give(p), 0);
  assert_int_equal(dump((char *[]){"--all", "--registry-dir", d, "--wait-s", "0", NULL}), 1);
  assert_non_null(strstr(err, "no process registered"));

  assert_int_equal(dump((char *[]){pidarg, "--wait-s", "0", NULL}), 1);
  assert_non_null(strstr(out, "request not taken")); /* no plugin in sleep(1) to take it */
  snprintf(p, sizeof p, "%s/%d.dump", d, (int)pid);
  struct stat st;
  assert_int_equal(lstat(p, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_uid, LENS_TEST_OTHER_UID);
  assert_int_equal(st.st_mode & 07777, 0600);
  /* A second request while the first waits: accepted as pending. */
  assert_int_equal(dump((char *[]){pidarg, "--wait-s", "0", NULL}), 1);
  assert_non_null(strstr(out, "request not taken"));
  assert_int_equal(lens_count_lines(err, "nccl-lens dump:"), 0);
  lens_attack_reap(pid);
}

int main(void) {
  if (geteuid() != 0) {
    printf("skip: these cases plant files as another user (uid %d) and need root\n", LENS_TEST_OTHER_UID);
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_planted_links),
      cmocka_unit_test(test_directory_not_the_targets),
      cmocka_unit_test(test_request_given_to_target),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
