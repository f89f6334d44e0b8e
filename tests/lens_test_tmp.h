/* Temporary directories for tests: made under /tmp and removed when the
 * process that made them exits (not its forked children, which share the
 * list), unless LENS_TEST_KEEP=1 asks to keep them for a look after a
 * failure. Removal walks the tree itself (nftw, no shell, never following
 * links). */
#ifndef NCCL_LENS_TESTS_TMP_H
#define NCCL_LENS_TESTS_TMP_H

#define _GNU_SOURCE
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int lens_test_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

/* Removes dir and everything below it; 0 when it is gone. */
static inline int lens_test_rmtree(const char *dir) {
  nftw(dir, lens_test_rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return access(dir, F_OK) == 0 ? -1 : 0;
}

#define LENS_TEST_MAX_TMP 64
static char lens_test_tmp_dirs[LENS_TEST_MAX_TMP][PATH_MAX];
static int lens_test_tmp_n;
static pid_t lens_test_tmp_owner;

static void lens_test_tmp_cleanup(void) {
  if (getpid() != lens_test_tmp_owner) return; /* a forked child exiting */
  const char *keep = getenv("LENS_TEST_KEEP");
  if (keep && strcmp(keep, "0") != 0) return;
  for (int i = 0; i < lens_test_tmp_n; i++) lens_test_rmtree(lens_test_tmp_dirs[i]);
  lens_test_tmp_n = 0;
}

/* Makes /tmp/lens-test-<tag>-XXXXXX into out; aborts when it cannot. */
static inline void lens_test_tmpdir(char *out, size_t cap, const char *tag) {
  snprintf(out, cap, "/tmp/lens-test-%s-XXXXXX", tag);
  if (!mkdtemp(out)) abort();
  if (lens_test_tmp_owner != getpid()) { /* first use in this process */
    lens_test_tmp_owner = getpid();
    lens_test_tmp_n = 0;
    atexit(lens_test_tmp_cleanup);
  }
  if (lens_test_tmp_n < LENS_TEST_MAX_TMP) snprintf(lens_test_tmp_dirs[lens_test_tmp_n++], PATH_MAX, "%s", out);
}

#endif
