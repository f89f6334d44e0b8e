#define _GNU_SOURCE
#include "registry_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lens_safe_fs.h"
#include "log.h"
#include "regdir.h"
#include "nccl-lens/registry.h"
#include "tslot.h"

static char g_name[64];
static uint64_t g_start_ticks, g_pidns;
static char g_trace[PATH_MAX];
static int g_pid;
static int g_active;
static int g_fail_once;

/* Reads the NSpid line; writes its fields (outermost first) into out. */
static int read_nspid(const char *status_path, uint32_t *out, int cap) {
  FILE *f = fopen(status_path, "re");
  if (!f) return 0;
  char line[256];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "NSpid:", 6) != 0) continue;
    char *p = line + 6, *end;
    while (n < cap) {
      unsigned long v = strtoul(p, &end, 10);
      if (end == p) break;
      out[n++] = (uint32_t)v;
      p = end;
    }
    break;
  }
  fclose(f);
  return n;
}

uint32_t lens_outer_id(const char *status_path, uint32_t fallback) {
  uint32_t ids[8];
  return read_nspid(status_path, ids, 8) > 0 ? ids[0] : fallback;
}

void lens_registry_begin(int pid, const char *trace_path) {
  snprintf(g_trace, sizeof g_trace, "%s", trace_path ? trace_path : "");
  g_pid = pid;
  snprintf(g_name, sizeof g_name, "%d.reg", pid);
  g_active = lens_regdir_fd() >= 0;
  g_start_ticks = lens_proc_start_ticks((int)getpid());
  g_pidns = lens_proc_ns(0, "pid");
}

/* The file is built in memory, then written to a fresh O_EXCL temporary and
 * renamed into place (lens_file_replace): a planted link or FIFO is never
 * opened. 0600: sched (root) reads it; nobody else needs to. */
void lens_registry_write(void) {
  if (!g_active) return;
  int dfd = lens_regdir_fd();
  if (dfd < 0) return;
  static char buf[LENS_REGISTRY_MAX_BYTES];
  size_t len = 0;
#define PUT(...)                                                                                                   \
  do {                                                                                                             \
    int n_ = snprintf(buf + len, sizeof buf - len, __VA_ARGS__);                                                   \
    if (n_ < 0 || (size_t)n_ >= sizeof buf - len) goto full;                                                       \
    len += (size_t)n_;                                                                                             \
  } while (0)
  PUT("%s %d\npid %d\nstart %llu\npidns %llu\nnspid", LENS_REGISTRY_MAGIC, LENS_REGISTRY_VERSION, g_pid,
      (unsigned long long)g_start_ticks, (unsigned long long)g_pidns);
  uint32_t ids[8];
  int n = read_nspid("/proc/self/status", ids, 8);
  if (n == 0) PUT(" %d", g_pid);
  for (int i = 0; i < n; i++) PUT(" %u", ids[i]);
  PUT("\ntrace %s\n", g_trace);
  for (uint32_t i = 0; lens_slots.slots && i < lens_slots.n; i++) {
    struct lens_tslot *s = &lens_slots.slots[i];
    if (atomic_load_explicit(&s->state, memory_order_acquire) != LENS_SLOT_ACTIVE || !s->announced) continue;
    int32_t rank = atomic_load_explicit(&s->proxy_rank, memory_order_relaxed);
    uint32_t ci = atomic_load_explicit(&s->proxy_comm_index, memory_order_relaxed);
    PUT("thread %u %u %x %d %d\n", s->tid, s->ann_outer_tid, atomic_load_explicit(&s->roles, memory_order_relaxed),
        rank, ci == UINT32_MAX ? -1 : (int)ci);
  }
#undef PUT
full:
  if (lens_file_replace(dfd, g_name, 0600, buf, len) != 0)
    lens_log_once(&g_fail_once, LENS_LOG_WARN, "nccl-lens: cannot write the thread registry %s/%s (%s)",
                  lens_regdir_path(), g_name, strerror(errno));
}

void lens_registry_remove(void) {
  if (!g_active) return;
  int dfd = lens_regdir_fd();
  if (dfd >= 0) unlinkat(dfd, g_name, 0);
  g_active = 0;
}
