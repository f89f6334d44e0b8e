/* Temporary directories for tests (lens_test_tmp.h). Compiled into every
 * test by lens_add_test, so the feature macros nftw needs are set here and
 * not in each test's includes. */
#define _GNU_SOURCE
#include "lens_test_tmp.h"

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

int lens_test_rmtree(const char *dir) {
  nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  return access(dir, F_OK) == 0 ? -1 : 0;
}

#define MAX_TMP 64
static char tmp_dirs[MAX_TMP][PATH_MAX];
static int tmp_n;
static pid_t tmp_owner;

static void cleanup(void) {
  if (getpid() != tmp_owner) return; /* a forked child exiting */
  const char *keep = getenv("LENS_TEST_KEEP");
  if (keep && strcmp(keep, "0") != 0) return;
  for (int i = 0; i < tmp_n; i++) lens_test_rmtree(tmp_dirs[i]);
  tmp_n = 0;
}

void lens_test_tmpdir(char *out, size_t cap, const char *tag) {
  snprintf(out, cap, "/tmp/lens-test-%s-XXXXXX", tag);
  if (!mkdtemp(out)) abort();
  if (tmp_owner != getpid()) { /* first use in this process */
    tmp_owner = getpid();
    tmp_n = 0;
    atexit(cleanup);
  }
  if (tmp_n < MAX_TMP) snprintf(tmp_dirs[tmp_n++], PATH_MAX, "%s", out);
}
