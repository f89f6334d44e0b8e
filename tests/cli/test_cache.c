/* The CLI's private cache (tools/cli/cache.c): an entry comes back only for
 * the same inputs, byte for byte; a changed input, another key under the
 * same name, a damaged entry are misses; the directory must be the user's
 * own (not a link, not writable by others, not another user's) or nothing
 * is read or written there; a link or another user's file planted under an
 * entry's name is never followed nor read; past its limit the least
 * recently used entries go. Each case runs in a child process: the cache
 * opens its directory once a process. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cache.h"
#include "lens_test_attack.h"
#include "lens_test_tmp.h"

static int failures;
#define CHECK(c, ...)                                       \
  do {                                                      \
    if (!(c)) {                                             \
      fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__);  \
      fprintf(stderr, __VA_ARGS__);                         \
      fprintf(stderr, "\n");                                \
      return 1;                                             \
    }                                                       \
  } while (0)

static char root[512], input[600], dir[600];

static void write_file(const char *path, const char *data) {
  FILE *f = fopen(path, "w");
  if (f) fputs(data, f), fclose(f);
}

static int key(struct lens_cache_key *k) {
  const char *p[1] = {input};
  return lens_cache_key_make("gpu", p, 1, k);
}

/* Runs fn in a child with the cache directory d; its verdict. */
static void in_child(const char *name, int (*fn)(void), const char *d) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("NCCL_LENS_CACHE_DIR", d, 1);
    setenv("NCCL_LENS_CACHE_MIN_BYTES", "0", 1);
    unsetenv("NCCL_LENS_CACHE");
    _exit(fn());
  }
  int st = 0;
  waitpid(pid, &st, 0);
  int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  printf("%-28s %s\n", name, ok ? "ok" : "FAILED");
  failures += !ok;
}

static int entry_path(char *out, size_t len, const struct lens_cache_key *k) {
  return snprintf(out, len, "%s/%s", dir, k->name) >= (int)len ? -1 : 0;
}

static int roundtrip(void) {
  struct lens_cache_key k;
  CHECK(key(&k) == 0, "no key");
  size_t len = 1;
  CHECK(!lens_cache_get(&k, &len), "a hit before any store");
  CHECK(lens_cache_put(&k, "memo bytes", 10) == 0, "store failed");
  struct stat st;
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "directory mode %o", st.st_mode & 0777);
  char ep[1024];
  CHECK(!entry_path(ep, sizeof ep, &k) && stat(ep, &st) == 0 && (st.st_mode & 0777) == 0600, "entry mode");
  char *got = lens_cache_get(&k, &len);
  CHECK(got && len == 10 && !memcmp(got, "memo bytes", 10), "not the bytes stored");
  free(got);
  /* The input appended to: another key, another name; the old entry unread. */
  FILE *f = fopen(input, "a");
  fputs("more", f);
  fclose(f);
  struct lens_cache_key k2;
  CHECK(key(&k2) == 0 && strcmp(k.name, k2.name) && !lens_cache_get(&k2, &len), "a changed input hit");
  /* The old entry's bytes under the new name (another key inside): a miss. */
  char ep2[1024];
  CHECK(!entry_path(ep2, sizeof ep2, &k2) && link(ep, ep2) == 0 && unlink(ep) == 0, "rename failed");
  CHECK(!lens_cache_get(&k2, &len), "an entry of another key hit");
  /* A damaged entry (its last data byte): a miss. */
  CHECK(lens_cache_put(&k2, "other data", 10) == 0, "store failed");
  int fd = open(ep2, O_RDWR);
  CHECK(fd >= 0 && lseek(fd, -1, SEEK_END) > 0 && write(fd, "X", 1) == 1, "damage failed");
  close(fd);
  CHECK(!lens_cache_get(&k2, &len), "a damaged entry hit");
  lens_cache_key_free(&k);
  lens_cache_key_free(&k2);
  return 0;
}

static int unusable(void) { /* the directory is not ours alone: no key, nothing written */
  struct lens_cache_key k;
  CHECK(key(&k) != 0, "a key in a directory not our own");
  return 0;
}

static int off_and_small(void) {
  struct lens_cache_key k;
  setenv("NCCL_LENS_CACHE_MIN_BYTES", "1000000", 1);
  CHECK(key(&k) != 0, "a key for inputs under the minimum");
  setenv("NCCL_LENS_CACHE_MIN_BYTES", "0", 1);
  CHECK(key(&k) == 0, "no key");
  lens_cache_key_free(&k);
  lens_cache_disable(1);
  CHECK(key(&k) != 0, "a key with the cache disabled");
  lens_cache_disable(0);
  const char *p[1] = {"/dev/null"};
  CHECK(lens_cache_key_make("gpu", p, 1, &k) != 0, "a key for an input that is no regular file");
  char gone[700]; /* an unlinked file still open (a spooled input): another file every run */
  snprintf(gone, sizeof gone, "%s/spooled", root);
  write_file(gone, "spooled trace");
  int fd = open(gone, O_RDONLY);
  unlink(gone);
  char fdp[64];
  snprintf(fdp, sizeof fdp, "/proc/self/fd/%d", fd);
  p[0] = fdp;
  CHECK(fd >= 0 && lens_cache_key_make("gpu", p, 1, &k) != 0, "a key for an unlinked (spooled) input");
  close(fd);
  return 0;
}

static char victim_path[700];
static int planted(void) { /* a link and another user's file under entries' names */
  struct lens_cache_key k;
  CHECK(key(&k) == 0, "no key");
  char ep[1024];
  entry_path(ep, sizeof ep, &k);
  CHECK(symlink(victim_path, ep) == 0, "symlink: %s", strerror(errno));
  size_t len;
  CHECK(!lens_cache_get(&k, &len), "read through a link");
  CHECK(lens_cache_put(&k, "mine", 4) == 0, "store over a link failed");
  struct stat st;
  CHECK(lstat(ep, &st) == 0 && S_ISREG(st.st_mode), "the link is still there");
  char *got = lens_cache_get(&k, &len);
  CHECK(got && len == 4, "own entry not read back");
  free(got);
  CHECK(lens_attack_give(ep) == 0, "chown failed");
  CHECK(!lens_cache_get(&k, &len), "another user's entry read");
  lens_cache_key_free(&k);
  return 0;
}

static int evicts(void) {
  struct lens_cache_key k;
  CHECK(key(&k) == 0, "no key");
  char p[1024];
  snprintf(p, sizeof p, "%s/unrelated.txt", dir); /* not an entry's name: left alone */
  write_file(p, "x");
  for (int i = 0; i < LENS_CACHE_MAX_ENTRIES + 100; i++) {
    snprintf(p, sizeof p, "%s/gpu-old%05d.lcache", dir, i);
    write_file(p, "x");
    struct timeval tv[2] = {{1000000 + i, 0}, {1000000 + i, 0}}; /* older with a lower number */
    utimes(p, tv);
  }
  CHECK(lens_cache_put(&k, "new", 3) == 0, "store failed");
  int left = 0, oldest_left = 0, newest_left = 0;
  for (int i = 0; i < LENS_CACHE_MAX_ENTRIES + 100; i++) {
    snprintf(p, sizeof p, "%s/gpu-old%05d.lcache", dir, i);
    if (access(p, F_OK) == 0) left++, oldest_left |= i == 0, newest_left |= i == LENS_CACHE_MAX_ENTRIES + 99;
  }
  snprintf(p, sizeof p, "%s/unrelated.txt", dir);
  CHECK(left == LENS_CACHE_MAX_ENTRIES * 3 / 4 && !oldest_left && newest_left && access(p, F_OK) == 0,
        "%d old entries left (%d), oldest %d, newest %d", left, LENS_CACHE_MAX_ENTRIES * 3 / 4, oldest_left,
        newest_left);
  size_t len;
  char *got = lens_cache_get(&k, &len);
  CHECK(got && len == 3, "the new entry is gone");
  free(got);
  lens_cache_key_free(&k);
  return 0;
}

int main(void) {
  lens_test_tmpdir(root, sizeof root, "cache");
  snprintf(input, sizeof input, "%s/trace.lens", root);
  write_file(input, "a trace");
  snprintf(victim_path, sizeof victim_path, "%s/victim", root);
  struct lens_victim v;
  lens_victim_make(&v, victim_path);

  snprintf(dir, sizeof dir, "%s/cache", root);
  in_child("store, hit, misses", roundtrip, dir);
  in_child("off, small, not a file", off_and_small, dir);

  snprintf(dir, sizeof dir, "%s/open", root);
  mkdir(dir, 0777);
  chmod(dir, 0777);
  in_child("writable by others", unusable, dir);
  snprintf(dir, sizeof dir, "%s/link", root);
  char target[700];
  snprintf(target, sizeof target, "%s/cache", root);
  if (symlink(target, dir)) failures++;
  in_child("a symbolic link", unusable, dir);
  snprintf(dir, sizeof dir, "%s/theirs", root);
  mkdir(dir, 0700);
  if (geteuid() == 0 && !lens_attack_give(dir)) in_child("another user's", unusable, dir);

  snprintf(dir, sizeof dir, "%s/plant", root);
  if (geteuid() == 0) in_child("planted link and file", planted, dir);
  if (!lens_victim_intact(&v)) {
    fprintf(stderr, "FAIL: the file a planted link named was changed\n");
    failures++;
  }
  snprintf(dir, sizeof dir, "%s/evict", root);
  in_child("least recently used go", evicts, dir);
  printf("%d failure(s)\n", failures);
  return failures != 0;
}
