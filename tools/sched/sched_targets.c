/* Finding the threads to watch, from /proc. See sched_targets.h. */
#define _GNU_SOURCE
#include "sched/sched_targets.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lens_chunk.h"
#include "lens_safe_fs.h"
#include "nccl-lens/registry.h"
#include "lens_registry_text.h"
#include "nccl-lens/trace_format.h"

#define RETRANSLATE_NS 1000000000ull

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define PLUGIN_SO_NAME "libnccl-profiler-lens"

/* Reads up to len-1 bytes of a (small, /proc) file and NUL-terminates. Bytes read or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < len) {
    ssize_t n = read(fd, buf + got, len - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  buf[got] = 0;
  return (ssize_t)got;
}

/* First and last numbers of the "NSpid:" line (or "Pid:" on kernels without NSpid). */
static int status_nspid(const char *status_path, uint32_t *outer, uint32_t *inner) {
  char buf[4096];
  if (read_small(status_path, buf, sizeof buf) <= 0) return -1;
  const char *line = strstr(buf, "\nNSpid:");
  if (!line) line = strstr(buf, "\nPid:");
  if (!line) return -1;
  line = strchr(line, ':') + 1;
  const char *end = strchr(line, '\n');
  if (!end) end = line + strlen(line);
  uint32_t first = 0, last = 0;
  int n = 0;
  for (const char *p = line; p < end;) {
    char *q;
    unsigned long v = strtoul(p, &q, 10);
    if (q == p) {
      p++;
      continue;
    }
    if (n++ == 0) first = (uint32_t)v;
    last = (uint32_t)v;
    p = q;
  }
  if (!n) return -1;
  *outer = first;
  *inner = last;
  return 0;
}

int lens_sched_ns_pid(int host_pid, uint32_t *ns_pid) {
  char path[64];
  uint32_t outer;
  snprintf(path, sizeof path, "/proc/%d/status", host_pid);
  return status_nspid(path, &outer, ns_pid);
}

int lens_sched_maps_plugin(int host_pid) {
  char path[64], line[4096];
  snprintf(path, sizeof path, "/proc/%d/maps", host_pid);
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  int found = 0;
  while (!found && fgets(line, sizeof line, f))
    if (strstr(line, PLUGIN_SO_NAME)) found = 1;
  fclose(f);
  return found;
}

/* A variable ("NAME=") of the process's initial environment, if set and not empty. */
static int environ_var(int host_pid, const char *key, char *out, size_t len) {
  size_t kl = strlen(key);
  char path[64], buf[65536];
  snprintf(path, sizeof path, "/proc/%d/environ", host_pid);
  ssize_t n = read_small(path, buf, sizeof buf);
  for (ssize_t i = 0; i < n;) {
    const char *s = buf + i;
    size_t l = strnlen(s, (size_t)(n - i));
    if (l > kl && !memcmp(s, key, kl)) {
      snprintf(out, len, "%s", s + kl);
      return 0;
    }
    i += (ssize_t)l + 1;
  }
  return -1;
}

void lens_sched_registry_dir(int host_pid, const char *registry_dir, char *out, size_t len) {
  char dir[PATH_MAX];
  if (registry_dir)
    snprintf(dir, sizeof dir, "%s", registry_dir);
  else if (environ_var(host_pid, "NCCL_LENS_REGISTRY_DIR=", dir, sizeof dir) != 0) {
    /* The plugin's per-user default, as the target computes it (lens_safe_fs.h). */
    char xdg[PATH_MAX];
    uid_t uid = 0;
    int has_xdg = environ_var(host_pid, "XDG_RUNTIME_DIR=", xdg, sizeof xdg) == 0;
    lens_proc_uid(host_pid, &uid);
    lens_registry_dir_for(has_xdg ? xdg : NULL, uid, dir, sizeof dir);
  }
  /* Relative directories are relative to the target's cwd, as the plugin saw them. */
  if (dir[0] == '/')
    snprintf(out, len, "/proc/%d/root%s", host_pid, dir);
  else
    snprintf(out, len, "/proc/%d/cwd/%s", host_pid, dir);
}

#define TID_MAX 0x3fffffffull /* above any pid_max (2^22) */

void lens_sched_registry_path(int host_pid, uint32_t ns_pid, const char *registry_dir, char *out, size_t len) {
  char dir[PATH_MAX];
  lens_sched_registry_dir(host_pid, registry_dir, dir, sizeof dir);
  snprintf(out, len, "%s/%u.reg", dir, ns_pid);
}

int lens_sched_registry_matches(int host_pid, uint32_t ns_pid, const struct lens_registry_id *id, char *why,
                                size_t why_len) {
  uint64_t target_ns = lens_proc_ns(host_pid, "pid");
  if (id->has_pid && id->pid != ns_pid) {
    snprintf(why, why_len, "it names pid %u, but the process is pid %u in its namespace", id->pid, ns_pid);
    return -1;
  }
  if (id->has_pidns && target_ns && id->pidns != target_ns) {
    snprintf(why, why_len, "it names pid namespace %llu, but pid %d runs in %llu", (unsigned long long)id->pidns,
             host_pid, (unsigned long long)target_ns);
    return -1;
  }
  if (!id->has_start) return 0; /* written by a plugin before `start` existed */
  /* /proc/<pid>/stat's start time is shifted into the reader's time
   * namespace: the plugin's own reading and ours only compare within one. */
  uint64_t our_time = lens_proc_ns(0, "time"), its_time = lens_proc_ns(host_pid, "time");
  if (our_time != its_time) return 0;
  /* The registry's pid namespace is the target's (checked above, or unknown
   * for an old plugin: then both must be ours to compare anything). */
  if (!id->has_pidns && target_ns != lens_proc_ns(0, "pid")) return 0;
  uint64_t ticks = lens_proc_start_ticks(host_pid);
  if (ticks && ticks != id->start_ticks) {
    snprintf(why, why_len, "it was written by a process that started at tick %llu, not pid %d (tick %llu)",
             (unsigned long long)id->start_ticks, host_pid, (unsigned long long)ticks);
    return -1;
  }
  return 0;
}

/* Calls fn(ctx, host_tid, ns_tid) for every thread of the process. */
static int each_task(int host_pid, void (*fn)(void *, uint32_t, uint32_t), void *ctx) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", host_pid);
  DIR *d = opendir(path);
  if (!d) return -1;
  struct dirent *de;
  int n = 0, entries = 0;
  while ((de = readdir(d)) && entries++ < LENS_SCHED_MAX_TASKS) {
    if (!isdigit((unsigned char)de->d_name[0])) continue;
    char sp[320];
    uint32_t outer, inner;
    snprintf(sp, sizeof sp, "/proc/%d/task/%s/status", host_pid, de->d_name);
    if (status_nspid(sp, &outer, &inner) != 0) continue; /* thread just exited */
    fn(ctx, (uint32_t)strtoul(de->d_name, NULL, 10), inner);
    n++;
  }
  closedir(d);
  return n;
}

struct find_ctx { uint32_t ns_tid, host_tid; };
static void find_one(void *c, uint32_t host_tid, uint32_t ns_tid) {
  struct find_ctx *f = c;
  if (ns_tid == f->ns_tid) f->host_tid = host_tid;
}

uint32_t lens_sched_host_tid(int host_pid, uint32_t ns_tid) {
  struct find_ctx f = {ns_tid, 0};
  each_task(host_pid, find_one, &f);
  return f.host_tid;
}

/* ---- refresh: registry threads (proxy role) or all threads ---- */
struct reg_ctx {
  struct lens_sched_target *t;
  struct { uint32_t ns_tid, roles; } want[LENS_SCHED_MAX_TIDS];
  size_t n_want;
};
static void reg_thread(void *c, uint32_t tid, uint32_t outer_tid, uint32_t roles) {
  struct reg_ctx *r = c;
  (void)outer_tid; /* outermost as the plugin saw it; only our own /proc knows the host tid */
  if (!(roles & (LENS_ROLE_PROXY | LENS_ROLE_PROFILER)) || r->n_want >= LENS_SCHED_MAX_TIDS) return;
  for (size_t i = 0; i < r->n_want; i++)
    if (r->want[i].ns_tid == tid) {
      r->want[i].roles |= roles;
      return;
    }
  r->want[r->n_want].ns_tid = tid;
  r->want[r->n_want++].roles = roles;
}
static void reg_match(void *c, uint32_t host_tid, uint32_t ns_tid) {
  struct reg_ctx *r = c;
  struct lens_sched_target *t = r->t;
  for (size_t i = 0; i < r->n_want; i++)
    if (r->want[i].ns_tid == ns_tid && t->n_tids < LENS_SCHED_MAX_TIDS)
      t->tids[t->n_tids++] = (struct lens_sched_tid){host_tid, ns_tid, r->want[i].roles};
}
static void all_match(void *c, uint32_t host_tid, uint32_t ns_tid) {
  struct lens_sched_target *t = c;
  if (t->n_tids < LENS_SCHED_MAX_TIDS) t->tids[t->n_tids++] = (struct lens_sched_tid){host_tid, ns_tid, 0};
}

int lens_sched_target_refresh(struct lens_sched_target *t, const char *registry_dir, int all_threads, char *err,
                              size_t err_len) {
  uint64_t ticks = lens_proc_start_ticks(t->host_pid);
  if (!ticks || (t->start_ticks && ticks != t->start_ticks)) {
    snprintf(err, err_len, "process %d has exited", t->host_pid);
    t->n_tids = 0;
    return -1;
  }
  t->start_ticks = ticks;
  if (!t->ns_pid && lens_sched_ns_pid(t->host_pid, &t->ns_pid) != 0) {
    snprintf(err, err_len, "process %d has exited", t->host_pid);
    return -1;
  }
  if (all_threads) {
    t->n_tids = 0;
    t->has_registry = 0;
    if (each_task(t->host_pid, all_match, t) < 0) {
      snprintf(err, err_len, "process %d has exited", t->host_pid);
      return -1;
    }
    return (int)t->n_tids;
  }
  char dir[PATH_MAX - 32], name[32], why[256]; /* dir/name fits in reg_path */
  lens_sched_registry_dir(t->host_pid, registry_dir, dir, sizeof dir);
  snprintf(name, sizeof name, "%u.reg", t->ns_pid);
  snprintf(t->reg_path, sizeof t->reg_path, "%s/%s", dir, name);
  t->refused = 0;
  /* The registry is the target's to write and anyone's to plant: its
   * directory walked without following links and owned by the target's
   * user (or a root-owned sticky shared one); the file opened O_NONBLOCK (a
   * FIFO would stall us), regular, one link, bounded, owned by the target's
   * effective uid. */
  uid_t uid;
  if (lens_proc_uid(t->host_pid, &uid) != 0) {
    snprintf(err, err_len, "process %d has exited", t->host_pid);
    t->n_tids = 0;
    return -1;
  }
  static char text[LENS_REGISTRY_MAX_BYTES + 1]; /* one loader thread: static keeps the stack small */
  ssize_t len = -1;
  int dfd = lens_dir_open(dir, 0, uid, LENS_DIR_SHARED_STICKY, why, sizeof why);
  if (dfd >= 0) {
    len = lens_file_read_text(dfd, name, uid, text, sizeof text, why, sizeof why);
    close(dfd);
  }
  if (len < 0) {
    t->has_registry = 0;
    t->n_tids = 0;
    /* Missing is the normal case of a process not yet (or no longer)
     * publishing; anything else is a refusal the caller reports once. */
    t->refused = errno != ENOENT;
    snprintf(err, err_len, "%s for pid %d (%s: %s)", t->refused ? "registry refused" : "no nccl-lens registry found",
             t->host_pid, t->reg_path, why);
    return -1;
  }
  uint32_t crc = lens_crc32c(0, text, (size_t)len);
  uint64_t now = mono_ns();
  if (t->has_registry && crc == t->reg_crc && now - t->translated_mono_ns < RETRANSLATE_NS)
    return (int)t->n_tids;
  static struct reg_ctx r;
  r.t = t;
  r.n_want = 0;
  t->n_tids = 0;
  struct lens_registry_id id;
  if (lens_registry_parse_id(text, &id) < 0 || lens_registry_parse_threads(text, reg_thread, &r) < 0) {
    t->has_registry = 0;
    snprintf(err, err_len, "%s is not an nccl-lens registry", t->reg_path);
    return -1;
  }
  /* Not the target's own file (planted for a pid, or left by an earlier
   * process with the same pid): watching its tids would watch strangers. */
  if (lens_sched_registry_matches(t->host_pid, t->ns_pid, &id, why, sizeof why) != 0) {
    t->has_registry = 0;
    t->n_tids = 0;
    t->refused = 1;
    snprintf(err, err_len, "registry refused for pid %d (%s: %s)", t->host_pid, t->reg_path, why);
    return -1;
  }
  t->has_registry = 1;
  t->reg_crc = crc;
  t->translated_mono_ns = now;
  if (r.n_want) each_task(t->host_pid, reg_match, &r);
  return (int)t->n_tids;
}

int lens_sched_scan_registry_dir(const char *dir, void (*fn)(void *, int), void *ctx, char *why, size_t why_len) {
  /* Ours, or a sticky shared directory owned by root (or us): a directory
   * another user controls could hold anything under any name. */
  int dfd = lens_dir_open(dir, 0, geteuid(), LENS_DIR_SHARED_STICKY, why, why_len);
  if (dfd < 0) return -1;
  DIR *d = fdopendir(dfd);
  if (!d) {
    snprintf(why, why_len, "%s", strerror(errno));
    close(dfd);
    return -1;
  }
  struct dirent *de;
  int n = 0, entries = 0;
  /* Bounded: a directory stuffed with names costs one poll at most this much. */
  while ((de = readdir(d)) && entries++ < LENS_SCHED_SCAN_MAX) {
    const char *c = de->d_name;
    long pid = 0;
    for (; *c >= '0' && *c <= '9' && pid <= (long)TID_MAX; c++) pid = pid * 10 + (*c - '0');
    if (c == de->d_name || pid <= 0 || pid > (long)TID_MAX || strcmp(c, ".reg") != 0) continue;
    struct stat st;
    uid_t uid;
    /* A regular file of the process's own user; never a link, FIFO or another's file. */
    if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (lens_proc_uid((int)pid, &uid) != 0 || st.st_uid != uid) continue;
    if (lens_sched_maps_plugin((int)pid) != 1) continue; /* stale file, or a pid of another namespace */
    fn(ctx, (int)pid);
    n++;
  }
  closedir(d);
  return n;
}

int lens_sched_scan_plugin_procs(void (*fn)(void *, int), void *ctx) {
  DIR *d = opendir("/proc");
  if (!d) return -1;
  struct dirent *de;
  int self = getpid(), n = 0;
  while ((de = readdir(d))) {
    if (!isdigit((unsigned char)de->d_name[0])) continue;
    int pid = atoi(de->d_name);
    if (pid == self) continue;
    if (lens_sched_maps_plugin(pid) == 1) {
      fn(ctx, pid);
      n++;
    }
  }
  closedir(d);
  return n;
}
