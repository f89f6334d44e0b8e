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

#include "log.h"
#include "nccl-lens/registry.h"
#include "tslot.h"

static char g_dir[512];
static char g_path[PATH_MAX];
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

void lens_registry_begin(const char *dir, int pid, const char *trace_path) {
  snprintf(g_dir, sizeof g_dir, "%s", dir);
  snprintf(g_trace, sizeof g_trace, "%s", trace_path ? trace_path : "");
  g_pid = pid;
  snprintf(g_path, sizeof g_path, "%s/%d.reg", g_dir, pid);
  g_active = 1;
}

static void mkdir_p(const char *dir) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(tmp, 0777);
      *p = '/';
    }
  mkdir(tmp, 0777);
}

void lens_registry_write(void) {
  if (!g_active) return;
  mkdir_p(g_dir);
  char tmp[PATH_MAX + 32];
  snprintf(tmp, sizeof tmp, "%s/.%d.reg.tmp", g_dir, g_pid);
  FILE *f = fopen(tmp, "we");
  if (!f) {
    lens_log_once(&g_fail_once, LENS_LOG_WARN, "nccl-lens: cannot write the thread registry %s (%s)", tmp,
                  strerror(errno));
    return;
  }
  fprintf(f, "%s %d\npid %d\nnspid", LENS_REGISTRY_MAGIC, LENS_REGISTRY_VERSION, g_pid);
  uint32_t ids[8];
  int n = read_nspid("/proc/self/status", ids, 8);
  if (n == 0) fprintf(f, " %d", g_pid);
  for (int i = 0; i < n; i++) fprintf(f, " %u", ids[i]);
  fprintf(f, "\ntrace %s\n", g_trace);
  for (uint32_t i = 0; lens_slots.slots && i < lens_slots.n; i++) {
    struct lens_tslot *s = &lens_slots.slots[i];
    if (atomic_load_explicit(&s->state, memory_order_acquire) != LENS_SLOT_ACTIVE || !s->announced) continue;
    int32_t rank = atomic_load_explicit(&s->proxy_rank, memory_order_relaxed);
    uint32_t ci = atomic_load_explicit(&s->proxy_comm_index, memory_order_relaxed);
    fprintf(f, "thread %u %u %x %d %d\n", s->tid, s->ann_outer_tid,
            atomic_load_explicit(&s->roles, memory_order_relaxed), rank, ci == UINT32_MAX ? -1 : (int)ci);
  }
  int bad = ferror(f);
  if (fclose(f) != 0 || bad || rename(tmp, g_path) != 0) {
    unlink(tmp);
    lens_log_once(&g_fail_once, LENS_LOG_WARN, "nccl-lens: cannot write the thread registry %s", g_path);
  }
}

void lens_registry_remove(void) {
  if (!g_active) return;
  unlink(g_path);
  g_active = 0;
}
