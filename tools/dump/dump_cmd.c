/* nccl-lens dump PID...|--all [--registry-dir DIR] [--wait-s N]: asks
 * processes running the plugin in recorder mode (NCCL_LENS_MODE=recorder)
 * to write their flight recorder now. A request is a file
 * <registry_dir>/<pid>.dump that the plugin's writer thread polls and
 * removes: no signal, which NCCL or the application may own. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "lens_safe_fs.h"
#include "nccl-lens/registry.h"
#include "sched/sched_targets.h"

#define CMD "dump"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens dump [--registry-dir DIR] [--wait-s N] PID...|--all\n"
             "  Asks processes recording with NCCL_LENS_MODE=recorder to write their flight recorder as a .lens\n"
             "  file (in their NCCL_LENS_OUTPUT_DIR) now. --all: every process registered in the registry\n"
             "  directory (--registry-dir, else NCCL_LENS_REGISTRY_DIR, default\n"
             "  " LENS_REGISTRY_DEFAULT_DESC ").\n"
             "  The request <pid>.dump goes into each process's own registry directory as it sees it\n"
             "  (--registry-dir, else its NCCL_LENS_REGISTRY_DIR or per-user default), which must belong to\n"
             "  the process's user (or be sticky and owned by root). Waits up to --wait-s seconds (5) for each\n"
             "  process to take the request; exit status 1 if one did not or was refused.\n");
}

#define MAX_PIDS 256
#define SCAN_MAX 16384 /* registry directory entries looked at by --all */

/* One process asked to dump: the request goes into its registry directory
 * as it sees it (/proc/<pid>/root + its NCCL_LENS_REGISTRY_DIR or per-user
 * default), named by its own pid there. */
struct target {
  long pid;         /* ours */
  uint32_t ns_pid;  /* its own (the name it polls for) */
  uid_t uid;        /* its effective uid: the directory's owner, the request's */
  int dfd;          /* the checked directory, -1: refused */
  char name[32];    /* <ns_pid>.dump */
  char dir[PATH_MAX];
};

/* Opens the target's registry directory and creates its request there.
 * The directory must belong to the target's user (or be a sticky shared
 * one owned by root): root's `dump` never writes where another user could
 * have pointed it. The request is created O_EXCL|O_NOFOLLOW, so a planted
 * link or file is never opened, and given to the target's user (the
 * plugin accepts requests of its own euid or root). 0, or 1 after one line. */
static int request(struct target *t, const char *registry_dir) {
  char why[256];
  t->dfd = -1;
  if (lens_proc_uid((int)t->pid, &t->uid) != 0 || lens_sched_ns_pid((int)t->pid, &t->ns_pid) != 0)
    return lens_cli_error(CMD, "no process with pid %ld", t->pid);
  lens_sched_registry_dir((int)t->pid, registry_dir, t->dir, sizeof t->dir);
  snprintf(t->name, sizeof t->name, "%u.dump", t->ns_pid);
  int dfd = lens_dir_open(t->dir, 0, t->uid, LENS_DIR_SHARED_STICKY, why, sizeof why);
  if (dfd < 0)
    return lens_cli_error(CMD, "not asking pid %ld: its registry directory %s: %s", t->pid, t->dir, why);
  int fd = lens_file_create_excl(dfd, t->name, 0600);
  if (fd < 0 && errno == EEXIST) {
    /* A request of an earlier `dump` not taken yet is fine; anything else
     * there (a link, a FIFO, someone else's file) is not ours to reuse. */
    struct stat st;
    if (fstatat(dfd, t->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        (st.st_uid == t->uid || st.st_uid == 0)) {
      t->dfd = dfd;
      return 0;
    }
    close(dfd);
    return lens_cli_error(CMD, "not asking pid %ld: %s/%s exists and is not a request", t->pid, t->dir, t->name);
  }
  if (fd < 0) {
    int e = errno;
    close(dfd);
    return lens_cli_error(CMD, "cannot write %s/%s: %s", t->dir, t->name, strerror(e));
  }
  if (geteuid() != t->uid && fchown(fd, t->uid, (gid_t)-1) != 0) {
    int e = errno;
    close(fd);
    unlinkat(dfd, t->name, 0);
    close(dfd);
    return lens_cli_error(CMD, "cannot give %s/%s to uid %u: %s", t->dir, t->name, (unsigned)t->uid, strerror(e));
  }
  close(fd);
  t->dfd = dfd;
  return 0;
}

/* The plugin removes the request when it takes it. Judged without
 * following anything (a link there is not a request either). */
static int taken(const struct target *t) {
  struct stat st;
  return fstatat(t->dfd, t->name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
}

/* --all: pids of the registry files in dir. The directory is checked
 * (lens_dir_open: a private directory of its owner, or a sticky one owned by
 * root); a pid is taken only from a regular <pid>.reg owned by that
 * process's euid and by the directory's owner (in a root-owned sticky
 * directory, by the process's euid), of a process that exists. Returns the
 * number found, or -1 after one line. */
static int scan_all(const char *dir, long *pids, int max) {
  char why[256];
  int dfd = lens_dir_open(dir, 0, LENS_ANY_UID, LENS_DIR_SHARED_STICKY, why, sizeof why);
  if (dfd < 0) return lens_cli_error(CMD, "cannot use %s: %s", dir, why), -1;
  struct stat dst;
  DIR *d = fstat(dfd, &dst) == 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    int e = errno;
    close(dfd);
    return lens_cli_error(CMD, "cannot read %s: %s", dir, strerror(e)), -1;
  }
  int shared = (dst.st_mode & S_ISVTX) && dst.st_uid == 0;
  struct dirent *de;
  int n = 0, entries = 0;
  while ((de = readdir(d)) && n < max && entries++ < SCAN_MAX) {
    const char *c = de->d_name;
    long p = 0;
    for (; *c >= '0' && *c <= '9' && p <= 0x3fffffff; c++) p = p * 10 + (*c - '0');
    if (c == de->d_name || p <= 0 || p > 0x3fffffff || strcmp(c, ".reg") != 0) continue;
    struct stat st;
    uid_t uid;
    if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) continue;
    if (lens_proc_uid((int)p, &uid) != 0) continue; /* stale: its process is gone */
    if (st.st_uid != uid || (!shared && st.st_uid != dst.st_uid)) continue;
    pids[n++] = p;
  }
  closedir(d);
  return n;
}

int lens_cmd_dump(int argc, char **argv) {
  const char *list_dir = getenv("NCCL_LENS_REGISTRY_DIR"), *registry_dir = NULL;
  static char dflt_dir[512];
  if (!list_dir || !*list_dir) {
    lens_registry_default_dir(dflt_dir, sizeof dflt_dir);
    list_dir = dflt_dir;
  }
  long pids[MAX_PIDS];
  int n = 0, all = 0;
  double wait_s = 5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    char *end;
    int r;
    if (lens_opt_flag(a, "--help", 'h')) {
      usage(stdout);
      return 0;
    } else if (lens_opt_flag(a, "--all", 0)) {
      all = 1;
    } else if ((r = lens_opt_val(CMD, &i, argc, argv, "--registry-dir", 0, "a directory", &v))) {
      if (r < 0) return 2;
      list_dir = registry_dir = v;
    } else if ((r = lens_opt_val(CMD, &i, argc, argv, "--wait-s", 0, "seconds", &v))) {
      if (r < 0 || lens_opt_num(v, 0, 3600, &wait_s))
        return r < 0 ? 2 : lens_cli_usage(CMD, "--wait-s wants seconds 0..3600, not '%s'", v);
    } else if (a[0] == '-') {
      return lens_cli_usage(CMD, "unknown option '%s'", a);
    } else {
      errno = 0;
      long p = strtol(a, &end, 10);
      if (*end || p <= 0 || p > 0x3fffffff || errno) return lens_cli_usage(CMD, "'%s' is not a pid", a);
      if (n == MAX_PIDS) return lens_cli_usage(CMD, "at most %d pids", MAX_PIDS);
      pids[n++] = p;
    }
  }
  if (all) {
    int found = scan_all(list_dir, pids + n, MAX_PIDS - n);
    if (found < 0) return 1;
    n += found;
  }
  if (!n && !all) return lens_cli_usage(CMD, "no pid given");
  if (!n) return lens_cli_error(CMD, "no process registered in %s", list_dir);
  static struct target tg[MAX_PIDS];
  int rc = 0, asked = 0;
  for (int i = 0; i < n; i++) {
    tg[i].pid = pids[i];
    if (request(&tg[i], registry_dir) != 0) rc = 1;
    else asked++;
  }
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int left = asked; left;) {
    left = 0;
    for (int i = 0; i < n; i++) left += tg[i].dfd >= 0 && !taken(&tg[i]);
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (!left || (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= wait_s) break;
    usleep(20000);
  }
  for (int i = 0; i < n; i++) {
    if (tg[i].dfd < 0) continue; /* said above */
    int ok = taken(&tg[i]);
    printf("pid %ld: %s\n", tg[i].pid, ok ? "dump requested, taken" : "request not taken (not in recorder mode, or gone)");
    rc |= !ok;
    close(tg[i].dfd);
  }
  return rc;
}
