/* See spool.h. */
#include "cli/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
  return d;
}

void lens_spool_dir_free(struct lens_spool_dir *d) {
  if (!d) return;
  size_t n = atomic_load(&d->made);
  char p[PATH_MAX + 32];
  for (size_t i = 0; i < n; i++) {
    snprintf(p, sizeof p, "%s/%zu", d->path, i);
    unlink(p); /* ENOENT when removed early */
  }
  rmdir(d->path);
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
