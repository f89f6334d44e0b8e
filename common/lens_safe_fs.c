/* Files in directories other users may touch (lens_safe_fs.h). */
#define _GNU_SOURCE
#include "lens_safe_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void say(char *why, size_t len, const char *fmt, ...) {
  if (!why || !len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, len, fmt, ap);
  va_end(ap);
}

int lens_registry_default_dir(char *out, size_t len) {
  return lens_registry_dir_for(getenv("XDG_RUNTIME_DIR"), geteuid(), out, len);
}

int lens_registry_dir_for(const char *x, uid_t uid, char *out, size_t len) {
  int n;
  if (x && x[0] == '/')
    n = snprintf(out, len, "%s/nccl-lens", x);
  else
    n = snprintf(out, len, "/tmp/nccl-lens-%u", (unsigned)uid);
  return n < 0 || (size_t)n >= len ? -1 : 0;
}

int lens_dir_check(int dirfd, uid_t owner, enum lens_dir_policy policy, char *why, size_t why_len) {
  struct stat st;
  if (fstat(dirfd, &st) != 0) {
    say(why, why_len, "cannot stat it (%s)", strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    say(why, why_len, "not a directory");
    return errno = ENOTDIR, -1;
  }
  int shared_ok = policy == LENS_DIR_SHARED_STICKY && (st.st_mode & S_ISVTX) && (st.st_uid == 0 || st.st_uid == owner);
  if (owner != LENS_ANY_UID && st.st_uid != owner && !shared_ok) {
    say(why, why_len, "owned by uid %u, not %u", (unsigned)st.st_uid, (unsigned)owner);
    return errno = EPERM, -1;
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !shared_ok) {
    say(why, why_len, "writable by %s (mode %04o)%s", (st.st_mode & S_IWOTH) ? "others" : "its group",
        (unsigned)(st.st_mode & 07777),
        policy == LENS_DIR_SHARED_STICKY ? "; a shared directory must be sticky and owned by root or you" : "");
    return errno = EPERM, -1;
  }
  return 0;
}

/* An intermediate component is trusted if no one but root or `owner` can
 * change what it holds: owned by one of them, and group/other-writable only
 * when sticky (like /tmp). */
static int parent_ok(int fd, uid_t owner, const char *name, char *why, size_t why_len) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -1;
  if (st.st_uid != 0 && st.st_uid != owner && owner != LENS_ANY_UID) {
    say(why, why_len, "its parent %s is owned by uid %u", name, (unsigned)st.st_uid);
    return errno = EPERM, -1;
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
    say(why, why_len, "its parent %s is writable by others and not sticky", name);
    return errno = EPERM, -1;
  }
  return 0;
}

int lens_dir_open(const char *path, int create, uid_t owner, enum lens_dir_policy policy, char *why,
                  size_t why_len) {
  if (!path || !*path) {
    say(why, why_len, "empty path");
    return errno = EINVAL, -1;
  }
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
    say(why, why_len, "path too long");
    return errno = ENAMETOOLONG, -1;
  }
  /* Walk component by component from / (or the working directory), so that
   * no symbolic link planted by another user is followed on the way. */
  int fd = open(buf[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    say(why, why_len, "%s", strerror(errno));
    return -1;
  }
  char *save = NULL;
  char *c = strtok_r(buf, "/", &save);
  if (!c) { /* "/" itself */
    if (lens_dir_check(fd, owner, policy, why, why_len) == 0) return fd;
    close(fd);
    return -1;
  }
  while (c) {
    char *next = strtok_r(NULL, "/", &save);
    int last = next == NULL;
    if (!strcmp(c, ".")) {
      if (last) break;
      c = next;
      continue;
    }
    if (!strcmp(c, "..")) {
      say(why, why_len, "'..' in the path");
      close(fd);
      return errno = EINVAL, -1;
    }
    if (last && create && mkdirat(fd, c, 0700) != 0 && errno != EEXIST) {
      say(why, why_len, "cannot create it (%s)", strerror(errno));
      close(fd);
      return -1;
    }
    struct stat lst;
    if (fstatat(fd, c, &lst, AT_SYMLINK_NOFOLLOW) != 0) {
      say(why, why_len, "%s: %s", c, strerror(errno));
      close(fd);
      return -1;
    }
    if (S_ISLNK(lst.st_mode)) {
      /* The directory itself never; a parent only if root or the owner made
       * the link (what fs.protected_symlinks would allow them). */
      if (last || (lst.st_uid != 0 && lst.st_uid != owner)) {
        say(why, why_len, last ? "a symbolic link" : "its parent %s is a symbolic link owned by uid %u", c,
            (unsigned)lst.st_uid);
        close(fd);
        return errno = ELOOP, -1;
      }
    }
    int nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | (last ? O_NOFOLLOW : 0));
    close(fd);
    if (nfd < 0) {
      say(why, why_len, "%s: %s", c, strerror(errno));
      return -1;
    }
    fd = nfd;
    if (!last && parent_ok(fd, owner, c, why, why_len) != 0) {
      close(fd);
      return -1;
    }
    c = next;
  }
  if (lens_dir_check(fd, owner, policy, why, why_len) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int lens_tmp_create(int dirfd, const char *stem, mode_t mode, char *tmp_name, size_t tmp_len) {
  static unsigned counter;
  for (int tries = 0; tries < 16; tries++) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    if (snprintf(tmp_name, tmp_len, ".%s.%d.%u.%lx.tmp", stem, (int)getpid(), n, (unsigned long)ts.tv_nsec) >=
        (int)tmp_len)
      return errno = ENAMETOOLONG, -1;
    int fd = openat(dirfd, tmp_name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) {
      fchmod(fd, mode); /* exactly mode, whatever the umask */
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  return errno = EEXIST, -1;
}

int lens_tmp_commit(int dirfd, const char *tmp_name, const char *name) {
  if (renameat(dirfd, tmp_name, dirfd, name) == 0) return 0;
  int e = errno;
  unlinkat(dirfd, tmp_name, 0);
  return errno = e, -1;
}

int lens_file_replace(int dirfd, const char *name, mode_t mode, const void *data, size_t len) {
  char tmp[512];
  int fd = lens_tmp_create(dirfd, name, mode, tmp, sizeof tmp);
  if (fd < 0) return -1;
  const char *p = data;
  size_t done = 0;
  while (done < len) {
    ssize_t n = write(fd, p + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      close(fd);
      unlinkat(dirfd, tmp, 0);
      return errno = e, -1;
    }
    done += (size_t)n;
  }
  if (close(fd) != 0) {
    int e = errno;
    unlinkat(dirfd, tmp, 0);
    return errno = e, -1;
  }
  return lens_tmp_commit(dirfd, tmp, name);
}

int lens_file_create_excl(int dirfd, const char *name, mode_t mode) {
  int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0) fchmod(fd, mode);
  return fd;
}

int lens_file_open_read(int dirfd, const char *name, uid_t owner, off_t max_size, struct stat *st, char *why,
                        size_t why_len) {
  struct stat local;
  if (!st) st = &local;
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    say(why, why_len, errno == ELOOP ? "a symbolic link" : "%s", strerror(errno));
    return -1;
  }
  const char *bad = NULL;
  int e = EPERM;
  if (fstat(fd, st) != 0)
    bad = "cannot stat it", e = errno;
  else if (!S_ISREG(st->st_mode))
    bad = "not a regular file", e = EINVAL;
  else if (st->st_nlink != 1)
    bad = "has more than one link";
  else if (owner != LENS_ANY_UID && st->st_uid != owner)
    bad = "owned by another user";
  else if (max_size >= 0 && st->st_size > max_size)
    bad = "larger than expected", e = EFBIG;
  if (bad) {
    if (st->st_uid != owner && owner != LENS_ANY_UID && !strcmp(bad, "owned by another user"))
      say(why, why_len, "owned by uid %u, not %u", (unsigned)st->st_uid, (unsigned)owner);
    else
      say(why, why_len, "%s", bad);
    close(fd);
    return errno = e, -1;
  }
  return fd;
}

ssize_t lens_read_upto(int fd, void *buf, size_t cap) {
  size_t got = 0;
  while (got < cap) {
    ssize_t n = pread(fd, (char *)buf + got, cap - got, (off_t)got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return got ? (ssize_t)got : -1;
    if (n == 0) break;
    got += (size_t)n;
  }
  return (ssize_t)got;
}

ssize_t lens_file_read_text(int dirfd, const char *name, uid_t owner, char *buf, size_t cap, char *why,
                            size_t why_len) {
  if (cap < 2) return errno = EINVAL, -1;
  struct stat st;
  int fd = lens_file_open_read(dirfd, name, owner, (off_t)cap - 1, &st, why, why_len);
  if (fd < 0) return -1;
  ssize_t n = lens_read_upto(fd, buf, cap - 1);
  close(fd);
  if (n < 0) {
    say(why, why_len, "cannot read it");
    return -1;
  }
  buf[n] = 0;
  return n;
}

/* Reads a small /proc file (NUL-terminated); bytes or -1. */
static ssize_t proc_read(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = lens_read_upto(fd, buf, cap - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return n;
}

uint64_t lens_proc_start_ticks(int pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  if (pid <= 0 || proc_read(path, buf, sizeof buf) <= 0) return 0;
  /* comm (field 2) may hold spaces and parentheses: fields resume after the last ')'. */
  char *p = strrchr(buf, ')');
  if (!p) return 0;
  p++;
  if (p[0] == ' ' && (p[1] == 'Z' || p[1] == 'X')) return 0; /* a zombie or dead task has ended */
  for (int field = 3; field < 22; field++) {
    p = strchr(p + 1, ' ');
    if (!p) return 0;
  }
  return strtoull(p + 1, NULL, 10);
}

int lens_proc_uid(int pid, uid_t *uid) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  if (pid <= 0 || proc_read(path, buf, sizeof buf) <= 0) return -1;
  const char *l = strstr(buf, "\nUid:");
  if (!l) return -1;
  char *end;
  strtoul(l + 5, &end, 10); /* real */
  const char *e = end;
  unsigned long v = strtoul(e, &end, 10); /* effective: the owner of what the process creates */
  if (end == e) return -1;
  *uid = (uid_t)v;
  return 0;
}

uint64_t lens_proc_ns(int pid, const char *kind) {
  char path[96];
  struct stat st;
  if (pid > 0)
    snprintf(path, sizeof path, "/proc/%d/ns/%s", pid, kind);
  else
    snprintf(path, sizeof path, "/proc/self/ns/%s", kind);
  return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}
