/* The registry directory (regdir.h). Writer thread only. */
#define _GNU_SOURCE
#include "regdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lens_registry_text.h"
#include "lens_safe_fs.h"
#include "log.h"
#include "nccl-lens/live.h"

static int g_fd = -1;
static char g_path[512];
static int g_fail_once;

int lens_regdir_open(const char *configured) {
  lens_regdir_close();
  int explicit_dir = configured && *configured;
  if (explicit_dir)
    snprintf(g_path, sizeof g_path, "%s", configured);
  else if (lens_registry_default_dir(g_path, sizeof g_path) != 0)
    g_path[0] = 0;
  char why[256] = "path too long";
  int fd = g_path[0] ? lens_dir_open(g_path, 1, geteuid(), explicit_dir ? LENS_DIR_SHARED_STICKY : LENS_DIR_PRIVATE,
                                     why, sizeof why)
                     : -1;
  if (fd < 0) {
    lens_log_once(&g_fail_once, LENS_LOG_WARN,
                  "nccl-lens: not using the registry directory %s: %s; running without thread registry, live page "
                  "and dump requests (docs/security.md)",
                  g_path, why);
    g_path[0] = 0;
    return -1;
  }
  g_fd = fd;
  return 0;
}

int lens_regdir_fd(void) { return g_fd; }
const char *lens_regdir_path(void) { return g_path; }

void lens_regdir_close(void) {
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
}

static uint64_t now_real_s(void) { return (uint64_t)time(NULL); }

/* "<digits><suffix>" -> pid, else 0. */
static long name_pid(const char *name, const char *suffix) {
  char *end;
  long p = strtol(name, &end, 10);
  if (end == name || p <= 0 || strcmp(end, suffix) != 0) return 0;
  return p;
}

/* Whether a process with this pid runs and, if start_ticks is known, is the one
 * that wrote the file. Our own pid namespace only. */
static int same_process_runs(long pid, uint64_t start_ticks) {
  uint64_t t = lens_proc_start_ticks((int)pid);
  if (!t) return 0;
  return !start_ticks || t == start_ticks;
}

/* A .reg file: its pidns and start lines (registry.h), read by the parser
 * `nccl-lens sched` uses (lens_registry_text.h). 1 = stale. */
static int reg_stale(int dfd, const char *name, long pid, uint64_t self_ns) {
  char buf[4096], why[64];
  struct lens_registry_id id;
  if (lens_file_read_text(dfd, name, geteuid(), buf, sizeof buf, why, sizeof why) < 0) return 0;
  if (lens_registry_parse_id(buf, &id) || !id.has_pidns || !id.has_start)
    return 0; /* written by an older plugin or another namespace: not ours to judge */
  if (id.pidns != self_ns) return 0;
  return !same_process_runs(pid, id.start_ticks);
}

/* A .live page: its process's identity from the header. 1 = stale. */
static int live_stale(int dfd, const char *name, long pid, uint64_t self_ns, const struct stat *lst) {
  if (now_real_s() < (uint64_t)lst->st_mtime + 600) return 0; /* the agent still shows a finished page a while */
  struct stat st;
  int fd = lens_file_open_read(dfd, name, geteuid(), sizeof(struct lens_live_page), &st, NULL, 0);
  if (fd < 0) return 0;
  struct lens_live_page h;
  ssize_t n = lens_read_upto(fd, &h, offsetof(struct lens_live_page, host));
  close(fd);
  if (n != (ssize_t)offsetof(struct lens_live_page, host) || h.magic != LENS_LIVE_MAGIC) return 0;
  if (h.version != LENS_LIVE_VERSION) return !same_process_runs(pid, 0); /* an older page: by pid alone */
  if (h.pidns != self_ns) return 0;
  return !same_process_runs(pid, h.proc_start_ticks);
}

int lens_regdir_sweep(void) {
  if (g_fd < 0) return 0;
  int dfd = openat(g_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return 0;
  DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return 0;
  }
  uint64_t self_ns = lens_proc_ns(0, "pid");
  long self = (long)getpid();
  int removed = 0, scanned = 0;
  struct dirent *e;
  while ((e = readdir(d)) && scanned++ < 100000) {
    const char *n = e->d_name;
    struct stat lst;
    if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]))) continue;
    if (fstatat(g_fd, n, &lst, AT_SYMLINK_NOFOLLOW) != 0 || lst.st_uid != geteuid()) continue;
    long pid;
    int stale = 0;
    size_t len = strlen(n);
    if (n[0] == '.' && len > 4 && !strcmp(n + len - 4, ".tmp")) {
      stale = now_real_s() > (uint64_t)lst.st_mtime + 60; /* a writer that died between create and rename */
    } else if ((pid = name_pid(n, ".reg"))) {
      stale = pid != self && S_ISREG(lst.st_mode) && reg_stale(g_fd, n, pid, self_ns);
    } else if ((pid = name_pid(n, ".live"))) {
      stale = pid != self && S_ISREG(lst.st_mode) && live_stale(g_fd, n, pid, self_ns, &lst);
    } else if ((pid = name_pid(n, ".dump"))) {
      /* A request older than a minute was never taken: its process is gone,
       * or the pid was reused by a process that must not act on it. */
      stale = now_real_s() > (uint64_t)lst.st_mtime + 60;
    }
    if (stale && unlinkat(g_fd, n, 0) == 0) removed++;
  }
  closedir(d);
  return removed;
}
