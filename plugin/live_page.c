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

#include "live.h"
#include "log.h"

static struct lens_live_page *g_map;
static uint64_t g_recent_copied;
static int g_fail_once;

int lens_live_page_open(const char *dir, int pid) {
  lens_live_page_close();
  char path[PATH_MAX], tmp[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%d.live", dir, pid) >= (int)sizeof path) return -1;
  snprintf(tmp, sizeof tmp, "%s/.%d.live.tmp", dir, pid);
  mkdir(dir, 01777); /* as the registry: shared by every user's jobs */
  int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ftruncate(fd, sizeof(struct lens_live_page)) != 0) goto fail;
  void *m = mmap(NULL, sizeof(struct lens_live_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) goto fail;
  g_map = m;
  g_map->magic = LENS_LIVE_MAGIC;
  g_map->version = LENS_LIVE_VERSION;
  g_map->size = sizeof(struct lens_live_page);
  if (rename(tmp, path) != 0) goto fail; /* readers never see a page without its header */
  close(fd);
  g_recent_copied = 0;
  return 0;
fail:
  lens_log_once(&g_fail_once, LENS_LOG_WARN, "nccl-lens: cannot create the live page %s (%s); no live metrics", path,
                strerror(errno));
  if (fd >= 0) close(fd);
  unlink(tmp);
  lens_live_page_close();
  return -1;
}

void lens_live_page_publish(const struct lens_live_page *p) {
  if (!g_map) return;
  uint64_t s = __atomic_load_n(&g_map->seq, __ATOMIC_RELAXED);
  __atomic_store_n(&g_map->seq, s + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  size_t head = offsetof(struct lens_live_page, series) - offsetof(struct lens_live_page, pid);
  memcpy(&g_map->pid, &p->pid, head);
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
