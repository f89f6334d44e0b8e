/* See spool.h. */
#include "cli/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

struct lens_spool_dir {
  char path[PATH_MAX];
  atomic_size_t made; /* files are named 0 .. made - 1 */
};

/* The spool directories of this process, also removed by a signal that
 * ends it (SIGINT, SIGTERM, SIGHUP, SIGPIPE: an export killed from the
 * terminal or piped into head), whose default action is then taken again.
 * Only signals left at their default are caught; SIGKILL cannot be. */
#define LIVE_MAX 8
static struct lens_spool_dir *_Atomic g_live[LIVE_MAX];
static const int g_fatal[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

/* path/k into p, without snprintf (async-signal-safe). */
static void file_path(char *p, size_t cap, const char *dir, size_t k) {
  size_t n = strlen(dir);
  char digits[24];
  int nd = 0;
  do digits[nd++] = (char)('0' + k % 10), k /= 10;
  while (k);
  if (n + 1 + (size_t)nd + 1 > cap) {
    p[0] = 0;
    return;
  }
  memcpy(p, dir, n);
  p[n++] = '/';
  while (nd) p[n++] = digits[--nd];
  p[n] = 0;
}

static void remove_files(const struct lens_spool_dir *d) {
  size_t n = atomic_load(&d->made);
  char p[PATH_MAX + 32];
  for (size_t i = 0; i < n; i++) {
    file_path(p, sizeof p, d->path, i);
    if (p[0]) unlink(p); /* ENOENT when removed early */
  }
  rmdir(d->path);
}

static void on_fatal(int sig) {
  int e = errno;
  for (size_t i = 0; i < LIVE_MAX; i++) {
    struct lens_spool_dir *d = atomic_exchange(&g_live[i], NULL);
    if (d) remove_files(d);
  }
  signal(sig, SIG_DFL);
  errno = e;
  raise(sig);
}

static void watch(struct lens_spool_dir *d) {
  static atomic_int installed;
  if (!atomic_exchange(&installed, 1))
    for (size_t i = 0; i < sizeof g_fatal / sizeof g_fatal[0]; i++) {
      struct sigaction old, sa;
      if (sigaction(g_fatal[i], NULL, &old) || old.sa_handler != SIG_DFL) continue; /* ignored or the command's own */
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = on_fatal;
      sigaction(g_fatal[i], &sa, NULL);
    }
  for (size_t i = 0; i < LIVE_MAX; i++) {
    struct lens_spool_dir *none = NULL;
    if (atomic_compare_exchange_strong(&g_live[i], &none, d)) return;
  }
}

static void unwatch(struct lens_spool_dir *d) {
  for (size_t i = 0; i < LIVE_MAX; i++) {
    struct lens_spool_dir *me = d;
    if (atomic_compare_exchange_strong(&g_live[i], &me, NULL)) return;
  }
}

struct lens_spool_dir *lens_spool_dir_new(const char *cmd, const char *near) {
  struct lens_spool_dir *d = calloc(1, sizeof *d);
  if (!d) return lens_cli_error(cmd, "out of memory"), NULL;
  char base[PATH_MAX];
  if (near && *near && strcmp(near, "-")) {
    const char *slash = strrchr(near, '/');
    if (!slash) snprintf(base, sizeof base, ".");
    else if (slash == near) snprintf(base, sizeof base, "/");
    else snprintf(base, sizeof base, "%.*s", (int)(slash - near), near);
  } else {
    const char *t = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s", t && *t ? t : "/tmp");
  }
  int w = snprintf(d->path, sizeof d->path, "%s/.nccl-lens-%s-XXXXXX", base, cmd);
  if (w < 0 || (size_t)w >= sizeof d->path || !mkdtemp(d->path)) {
    lens_cli_error(cmd, "cannot make a temporary directory in %s: %s", base,
                   w < 0 || (size_t)w >= sizeof d->path ? "name too long" : strerror(errno));
    free(d);
    return NULL;
  }
  watch(d);
  return d;
}

void lens_spool_dir_free(struct lens_spool_dir *d) {
  if (!d) return;
  unwatch(d);
  remove_files(d);
  free(d);
}

FILE *lens_spool_create(struct lens_spool_dir *d, char *name, size_t len) {
  size_t k = atomic_fetch_add(&d->made, 1);
  snprintf(name, len, "%zu", k);
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/%s", d->path, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "wb");
  if (!f) close(fd);
  return f;
}

FILE *lens_spool_open(const struct lens_spool_dir *d, const char *name) {
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/%s", d->path, name);
  int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "rb");
  if (!f) close(fd);
  return f;
}

void lens_spool_remove(const struct lens_spool_dir *d, const char *name) {
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/%s", d->path, name);
  unlink(p);
}
