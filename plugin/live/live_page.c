/* The live page's file: created next to the registry, mapped shared, updated
 * in place under a seqlock (include/nccl-lens/live.h). Writer thread only.
 *
 * Only the parts that changed are copied at each publish (the header, the
 * series in use, the instances added since the last copy), so a page on a
 * disk-backed /tmp dirties a few pages per period, not the whole file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lens_safe_fs.h"
#include "live.h"
#include "log.h"
#include "regdir.h"

static struct lens_live_page *g_map;
static uint64_t g_recent_copied;
static int g_fail_once;

/* Created under a fresh name with O_EXCL|O_NOFOLLOW in the checked registry
 * directory (regdir.h), sized, mapped, given its header, then renamed into
 * place: nothing another user planted is ever opened, and readers never see
 * a page without its header. Mode 0644: the agent of another user may read
 * it where a site shares the directory (docs/security.md). */
int lens_live_page_open(int dirfd, int pid) {
  lens_live_page_close();
  char name[64], tmp[256];
  snprintf(name, sizeof name, "%d.live", pid);
  tmp[0] = 0;
  int fd = dirfd < 0 ? (errno = EBADF, -1) : lens_tmp_create(dirfd, name, 0644, tmp, sizeof tmp);
  if (fd < 0 || ftruncate(fd, sizeof(struct lens_live_page)) != 0) goto fail;
  void *m = mmap(NULL, sizeof(struct lens_live_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) goto fail;
  g_map = m;
  g_map->magic = LENS_LIVE_MAGIC;
  g_map->version = LENS_LIVE_VERSION;
  g_map->size = sizeof(struct lens_live_page);
  g_map->pid = (uint32_t)pid;
  g_map->proc_start_ticks = lens_proc_start_ticks((int)getpid());
  g_map->pidns = lens_proc_ns(0, "pid");
  if (lens_tmp_commit(dirfd, tmp, name) != 0) {
    tmp[0] = 0; /* removed by the commit */
    goto fail;
  }
  close(fd);
  g_recent_copied = 0;
  return 0;
fail:
  lens_log_once(&g_fail_once, LENS_LOG_WARN, "nccl-lens: cannot create the live page %s/%s (%s); no live metrics",
                lens_regdir_path(), name, strerror(errno));
  if (fd >= 0) close(fd);
  if (tmp[0] && dirfd >= 0) unlinkat(dirfd, tmp, 0);
  lens_live_page_close();
  return -1;
}

void lens_live_page_publish(const struct lens_live_page *p) {
  if (!g_map) return;
  uint64_t s = __atomic_load_n(&g_map->seq, __ATOMIC_RELAXED);
  __atomic_store_n(&g_map->seq, s + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  size_t head = offsetof(struct lens_live_page, series) - offsetof(struct lens_live_page, pid);
  uint64_t ticks = g_map->proc_start_ticks, ns = g_map->pidns; /* the process's identity, set at open */
  memcpy(&g_map->pid, &p->pid, head);
  g_map->proc_start_ticks = ticks, g_map->pidns = ns;
  memcpy(g_map->series, p->series, (size_t)p->n_series * sizeof p->series[0]);
  uint64_t from = g_recent_copied;
  if (p->recent_total - from > LENS_LIVE_RECENT) from = p->recent_total - LENS_LIVE_RECENT;
  for (uint64_t i = from; i < p->recent_total; i++) g_map->recent[i % LENS_LIVE_RECENT] = p->recent[i % LENS_LIVE_RECENT];
  g_recent_copied = p->recent_total;
  __atomic_store_n(&g_map->seq, s + 2, __ATOMIC_RELEASE);
}

void lens_live_page_close(void) {
  if (g_map) munmap(g_map, sizeof *g_map);
  g_map = NULL;
}
