/* common/lens_safe_fs: what a directory or file another user can touch must
 * look like before the plugin or a tool uses it. Each case plants what an
 * attacker would (a link, a FIFO, a hard link, a file of another owner, a
 * world-writable parent) and checks the refusal; "another user" is uid 4242
 * through chown, so the owner cases need root (skipped otherwise). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "lens_safe_fs.h"

#define OTHER 4242

static char g_tmp[256];
static char why[256];

static void path(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_tmp, name); }

static int setup(void **state) {
  (void)state;
  lens_test_tmpdir(g_tmp, sizeof g_tmp, "safefs");
  return chmod(g_tmp, 0700);
}

static void test_default_dir(void **state) {
  (void)state;
  char d[512], want[64];
  unsetenv("XDG_RUNTIME_DIR");
  assert_int_equal(lens_registry_default_dir(d, sizeof d), 0);
  snprintf(want, sizeof want, "/tmp/nccl-lens-%u", (unsigned)geteuid());
  assert_string_equal(d, want);
  setenv("XDG_RUNTIME_DIR", "/run/user/77", 1);
  assert_int_equal(lens_registry_default_dir(d, sizeof d), 0);
  assert_string_equal(d, "/run/user/77/nccl-lens");
  setenv("XDG_RUNTIME_DIR", "relative/dir", 1); /* not absolute: ignored */
  assert_int_equal(lens_registry_default_dir(d, sizeof d), 0);
  assert_string_equal(d, want);
  unsetenv("XDG_RUNTIME_DIR");
  assert_int_equal(lens_registry_dir_for(NULL, 1234, d, sizeof d), 0);
  assert_string_equal(d, "/tmp/nccl-lens-1234");
  assert_int_equal(lens_registry_dir_for(NULL, 1234, d, 8), -1); /* does not fit */
}

static void test_dir_created_private(void **state) {
  (void)state;
  char d[512];
  path(d, sizeof d, "reg");
  int fd = lens_dir_open(d, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0700);
  close(fd);
  /* Again: it exists now, still accepted. */
  fd = lens_dir_open(d, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why);
  assert_true(fd >= 0);
  close(fd);
  /* Missing and not to be created. */
  path(d, sizeof d, "absent");
  assert_int_equal(lens_dir_open(d, 0, geteuid(), LENS_DIR_PRIVATE, why, sizeof why), -1);
}

static void test_dir_refusals(void **state) {
  (void)state;
  char d[600], target[512];
  path(target, sizeof target, "target");
  assert_int_equal(mkdir(target, 0700), 0);
  path(d, sizeof d, "link");
  assert_int_equal(symlink(target, d), 0);
  assert_int_equal(lens_dir_open(d, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why), -1);
  assert_string_equal(why, "a symbolic link");

  path(d, sizeof d, "open");
  assert_int_equal(mkdir(d, 0700), 0);
  assert_int_equal(chmod(d, 0777), 0);
  assert_int_equal(lens_dir_open(d, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why), -1);
  assert_non_null(strstr(why, "writable by others"));
  /* A world-writable directory is a site's shared one only when sticky. */
  assert_int_equal(lens_dir_open(d, 1, geteuid(), LENS_DIR_SHARED_STICKY, why, sizeof why), -1);
  assert_int_equal(chmod(d, 01777), 0);
  int fd = lens_dir_open(d, 1, geteuid(), LENS_DIR_SHARED_STICKY, why, sizeof why);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(lens_dir_open(d, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why), -1);

  path(d, sizeof d, "group");
  assert_int_equal(mkdir(d, 0700), 0);
  assert_int_equal(chmod(d, 0770), 0);
  assert_int_equal(lens_dir_open(d, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why), -1);
  assert_non_null(strstr(why, "its group"));

  /* Below a world-writable, non-sticky parent: anyone could swap it. */
  char p[512];
  path(p, sizeof p, "wparent");
  assert_int_equal(mkdir(p, 0700), 0);
  assert_int_equal(chmod(p, 0777), 0);
  snprintf(d, sizeof d, "%s/reg", p);
  assert_int_equal(lens_dir_open(d, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why), -1);
  assert_non_null(strstr(why, "not sticky"));
  assert_int_equal(access(d, F_OK), -1); /* and nothing was created there */
  snprintf(d, sizeof d, "%s/../x", g_tmp);
  assert_int_equal(lens_dir_open(d, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why), -1);
}

static void test_dir_other_owner(void **state) {
  (void)state;
  if (geteuid() != 0) skip();
  char d[600];
  path(d, sizeof d, "squatted");
  assert_int_equal(mkdir(d, 0700), 0);
  assert_int_equal(chown(d, OTHER, OTHER), 0);
  assert_int_equal(lens_dir_open(d, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why), -1);
  assert_string_equal(why, "owned by uid 4242, not 0");
  /* Sticky and world-writable but owned by another user: no. */
  assert_int_equal(chmod(d, 01777), 0);
  assert_int_equal(lens_dir_open(d, 1, geteuid(), LENS_DIR_SHARED_STICKY, why, sizeof why), -1);
  /* A link in a parent made by another user is not followed either. */
  char t[512], l[512];
  path(t, sizeof t, "realparent");
  assert_int_equal(mkdir(t, 0755), 0);
  path(l, sizeof l, "otherslink");
  assert_int_equal(symlink(t, l), 0);
  assert_int_equal(lchown(l, OTHER, OTHER), 0);
  snprintf(d, sizeof d, "%s/reg", l);
  assert_int_equal(lens_dir_open(d, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why), -1);
  assert_non_null(strstr(why, "symbolic link owned by uid 4242"));
}

static int open_dir(void) { return open(g_tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC); }

static void test_create_never_follows(void **state) {
  (void)state;
  int dfd = open_dir();
  char victim[512], link[512];
  path(victim, sizeof victim, "victim");
  FILE *f = fopen(victim, "w");
  fputs("precious", f);
  fclose(f);
  path(link, sizeof link, "page");
  assert_int_equal(symlink(victim, link), 0);
  /* Replacing "page": the link itself goes, the victim stays. */
  assert_int_equal(lens_file_replace(dfd, "page", 0600, "fresh", 5), 0);
  char buf[64];
  assert_int_equal(lens_file_read_text(dfd, "victim", LENS_ANY_UID, buf, sizeof buf, why, sizeof why), 8);
  assert_string_equal(buf, "precious");
  assert_int_equal(lens_file_read_text(dfd, "page", geteuid(), buf, sizeof buf, why, sizeof why), 5);
  assert_string_equal(buf, "fresh");
  struct stat st;
  assert_int_equal(fstatat(dfd, "page", &st, AT_SYMLINK_NOFOLLOW), 0);
  assert_true(S_ISREG(st.st_mode));
  assert_int_equal(st.st_mode & 07777, 0600);
  /* An exclusive create finds anything there, even a dangling link or a FIFO. */
  assert_int_equal(symlinkat("/nonexistent/file", dfd, "req"), 0);
  assert_int_equal(lens_file_create_excl(dfd, "req", 0600), -1);
  assert_int_equal(errno, EEXIST);
  assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
  assert_int_equal(lens_file_create_excl(dfd, "fifo", 0600), -1);
  /* Temporaries get fresh names each time. */
  char t1[256], t2[256];
  int a = lens_tmp_create(dfd, "x.live", 0644, t1, sizeof t1), b = lens_tmp_create(dfd, "x.live", 0644, t2, sizeof t2);
  assert_true(a >= 0 && b >= 0);
  assert_string_not_equal(t1, t2);
  assert_int_equal(t1[0], '.');
  close(a), close(b);
  assert_int_equal(lens_tmp_commit(dfd, t1, "x.live"), 0);
  unlinkat(dfd, t2, 0);
  close(dfd);
}

/* The file's owner (or anyone with write access) cuts it to 3 bytes. */
static int truncateat_helper(int dfd) {
  int fd = openat(dfd, "good", O_WRONLY | O_CLOEXEC);
  int rc = fd < 0 ? -1 : ftruncate(fd, 3);
  if (fd >= 0) close(fd);
  return rc;
}

static void test_read_refusals(void **state) {
  (void)state;
  int dfd = open_dir();
  char buf[64];
  assert_int_equal(lens_file_replace(dfd, "good", 0600, "0123456789", 10), 0);
  /* A link to it: refused, never followed. */
  assert_int_equal(symlinkat("good", dfd, "sym"), 0);
  assert_int_equal(lens_file_read_text(dfd, "sym", LENS_ANY_UID, buf, sizeof buf, why, sizeof why), -1);
  assert_string_equal(why, "a symbolic link");
  /* A FIFO: the open does not block (O_NONBLOCK), and it is refused. */
  assert_int_equal(mkfifoat(dfd, "pipe", 0600), 0);
  assert_int_equal(lens_file_read_text(dfd, "pipe", LENS_ANY_UID, buf, sizeof buf, why, sizeof why), -1);
  assert_string_equal(why, "not a regular file");
  /* A hard link (two names): refused, whichever name. */
  assert_int_equal(linkat(dfd, "good", dfd, "hard", 0), 0);
  assert_int_equal(lens_file_read_text(dfd, "hard", LENS_ANY_UID, buf, sizeof buf, why, sizeof why), -1);
  assert_string_equal(why, "has more than one link");
  unlinkat(dfd, "hard", 0);
  /* Too big for the buffer: refused, not truncated silently. */
  assert_int_equal(lens_file_read_text(dfd, "good", LENS_ANY_UID, buf, 8, why, sizeof why), -1);
  assert_int_equal(errno, EFBIG);
  assert_int_equal(lens_file_read_text(dfd, "good", LENS_ANY_UID, buf, sizeof buf, why, sizeof why), 10);
  /* A file that shrinks after the check reads short, with no signal. */
  struct stat st;
  int fd = lens_file_open_read(dfd, "good", LENS_ANY_UID, 100, &st, why, sizeof why);
  assert_true(fd >= 0);
  assert_int_equal(st.st_size, 10);
  assert_int_equal(truncateat_helper(dfd), 0);
  assert_int_equal(lens_read_upto(fd, buf, 10), 3);
  close(fd);
  if (geteuid() == 0) {
    assert_int_equal(fchownat(dfd, "good", OTHER, OTHER, 0), 0);
    assert_int_equal(lens_file_read_text(dfd, "good", 0, buf, sizeof buf, why, sizeof why), -1);
    assert_string_equal(why, "owned by uid 4242, not 0");
    assert_int_equal(lens_file_read_text(dfd, "good", OTHER, buf, sizeof buf, why, sizeof why), 3);
  }
  close(dfd);
}

static void test_process_identity(void **state) {
  (void)state;
  uint64_t me = lens_proc_start_ticks(getpid());
  assert_true(me > 0);
  assert_int_equal(lens_proc_start_ticks(getpid()), me);
  pid_t c = fork();
  if (c == 0) _exit(0);
  waitpid(c, NULL, 0);
  assert_int_equal(lens_proc_start_ticks(c), 0); /* gone */
  assert_int_equal(lens_proc_start_ticks(-1), 0);
  uid_t u = 99999;
  assert_int_equal(lens_proc_uid(getpid(), &u), 0);
  assert_int_equal(u, geteuid());
  assert_true(lens_proc_ns(0, "pid") > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_dir),        cmocka_unit_test(test_dir_created_private),
      cmocka_unit_test(test_dir_refusals),       cmocka_unit_test(test_dir_other_owner),
      cmocka_unit_test(test_create_never_follows), cmocka_unit_test(test_read_refusals),
      cmocka_unit_test(test_process_identity),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
