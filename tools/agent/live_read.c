/* Live pages -> consistent copies (live_read.h). */
#define _GNU_SOURCE
#include "live_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const struct lens_live_page *map_page(const char *path, dev_t *dev, ino_t *ino) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size != sizeof(struct lens_live_page)) {
    close(fd);
    return NULL;
  }
  const struct lens_live_page *m = mmap(NULL, sizeof *m, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return NULL;
  if (m->magic != LENS_LIVE_MAGIC || m->version != LENS_LIVE_VERSION || m->size != sizeof *m) {
    munmap((void *)m, sizeof *m);
    return NULL;
  }
  *dev = st.st_dev, *ino = st.st_ino;
  return m;
}

/* Copies what changed since *have under the seqlock; 0 ok. */
static int copy_page(const struct lens_live_page *m, struct lens_live_page *out, uint64_t *have) {
  for (int tries = 0; tries < 100; tries++) {
    uint64_t s1 = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
    if (s1 & 1) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
      continue;
    }
    memcpy(out, m, offsetof(struct lens_live_page, series));
    uint32_t n = out->n_series <= LENS_LIVE_SERIES ? out->n_series : LENS_LIVE_SERIES;
    memcpy(out->series, m->series, n * sizeof m->series[0]);
    uint64_t total = out->recent_total, from = *have;
    if (from > total || total - from > LENS_LIVE_RECENT) from = total > LENS_LIVE_RECENT ? total - LENS_LIVE_RECENT : 0;
    for (uint64_t i = from; i < total; i++) out->recent[i % LENS_LIVE_RECENT] = m->recent[i % LENS_LIVE_RECENT];
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&m->seq, __ATOMIC_RELAXED) == s1) {
      out->n_series = n;
      if (out->n_comms > LENS_LIVE_COMMS) out->n_comms = LENS_LIVE_COMMS;
      *have = total;
      return 0;
    }
  }
  return -1;
}

int live_read_page(const char *path, struct lens_live_page *out) {
  dev_t dev;
  ino_t ino;
  const struct lens_live_page *m = map_page(path, &dev, &ino);
  if (!m) return -1;
  uint64_t have = 0;
  int rc = copy_page(m, out, &have);
  munmap((void *)m, sizeof *m);
  return rc;
}

static uint64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void proc_drop(struct live_proc *p) {
  if (p->map) munmap((void *)p->map, sizeof *p->map);
  free(p->page);
  memset(p, 0, sizeof *p);
}

static struct live_proc *proc_for(struct live_set *s, uint32_t pid) {
  for (size_t i = 0; i < s->n; i++)
    if (s->procs[i].page && s->procs[i].page->pid == pid) return &s->procs[i];
  if (s->n == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 16;
    struct live_proc *np = realloc(s->procs, nc * sizeof *np);
    if (!np) return NULL;
    s->procs = np;
    s->cap = nc;
  }
  struct live_proc *p = &s->procs[s->n];
  memset(p, 0, sizeof *p);
  p->page = calloc(1, sizeof *p->page);
  if (!p->page) return NULL;
  p->page->pid = pid;
  s->n++;
  return p;
}

int live_read_dir(const char *dir, unsigned keep_s, struct live_set *s) {
  for (size_t i = 0; i < s->n; i++) s->procs[i].seen = 0;
  DIR *d = opendir(dir);
  if (!d) {
    live_set_free(s);
    return errno == ENOENT ? 0 : -1;
  }
  struct dirent *e;
  uint64_t now = real_ns();
  while ((e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || strcmp(end, ".live") != 0 || pid <= 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    struct live_proc *p = proc_for(s, (uint32_t)pid);
    if (!p) break;
    if (p->map && (p->dev != st.st_dev || p->ino != st.st_ino)) { /* a new file: a new process with this pid */
      munmap((void *)p->map, sizeof *p->map);
      p->map = NULL;
    }
    if (!p->map) {
      p->map = map_page(path, &p->dev, &p->ino);
      p->recent_have = 0;
    }
    int alive = kill((pid_t)pid, 0) == 0 || errno == EPERM;
    if (!p->map || copy_page(p->map, p->page, &p->recent_have) != 0 || p->page->pid != (uint32_t)pid ||
        (!alive || p->page->state == LENS_LIVE_FINISHED ? now - p->page->updated_real_ns > (uint64_t)keep_s * 1000000000ull
                                                        : 0)) {
      continue; /* not seen: dropped below */
    }
    p->alive = alive && p->page->state != LENS_LIVE_FINISHED;
    p->seen = 1;
  }
  closedir(d);
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (!s->procs[i].seen) {
      proc_drop(&s->procs[i]);
      continue;
    }
    s->procs[k++] = s->procs[i];
  }
  s->n = k;
  return 0;
}

void live_set_free(struct live_set *s) {
  for (size_t i = 0; i < s->n; i++) proc_drop(&s->procs[i]);
  free(s->procs);
  memset(s, 0, sizeof *s);
}
