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

int live_read_page(const char *path, struct lens_live_page *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size != sizeof(struct lens_live_page)) {
    close(fd);
    return -1;
  }
  const struct lens_live_page *m = mmap(NULL, sizeof *m, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return -1;
  int rc = -1;
  if (m->magic == LENS_LIVE_MAGIC && m->version == LENS_LIVE_VERSION && m->size == sizeof *m) {
    for (int tries = 0; tries < 100 && rc != 0; tries++) {
      uint64_t s1 = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
      if (s1 & 1) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
        continue;
      }
      /* Only what the writer has filled: the series in use; recent[] whole. */
      memcpy(out, m, offsetof(struct lens_live_page, series));
      uint32_t n = out->n_series <= LENS_LIVE_SERIES ? out->n_series : LENS_LIVE_SERIES;
      memcpy(out->series, m->series, n * sizeof m->series[0]);
      memcpy(out->recent, m->recent, sizeof m->recent);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (__atomic_load_n(&m->seq, __ATOMIC_RELAXED) == s1) {
        out->n_series = n;
        if (out->n_comms > LENS_LIVE_COMMS) out->n_comms = LENS_LIVE_COMMS;
        rc = 0;
      }
    }
  }
  munmap((void *)m, sizeof *m);
  return rc;
}

static uint64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int live_read_dir(const char *dir, unsigned keep_s, struct live_set *out) {
  memset(out, 0, sizeof *out);
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : -1;
  size_t cap = 0;
  struct dirent *e;
  uint64_t now = real_ns();
  while ((e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || strcmp(end, ".live") != 0 || pid <= 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct lens_live_page *p = malloc(sizeof *p);
    if (!p) break;
    int alive = kill((pid_t)pid, 0) == 0 || errno == EPERM;
    if (live_read_page(path, p) != 0 || p->pid != (uint32_t)pid ||
        (!alive || p->state == LENS_LIVE_FINISHED ? now - p->updated_real_ns > (uint64_t)keep_s * 1000000000ull
                                                  : 0)) {
      free(p);
      continue;
    }
    if (out->n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      struct live_proc *np = realloc(out->procs, nc * sizeof *np);
      if (!np) {
        free(p);
        break;
      }
      out->procs = np;
      cap = nc;
    }
    out->procs[out->n++] = (struct live_proc){p, alive && p->state != LENS_LIVE_FINISHED};
  }
  closedir(d);
  return 0;
}

void live_set_free(struct live_set *s) {
  for (size_t i = 0; i < s->n; i++) free(s->procs[i].page);
  free(s->procs);
  memset(s, 0, sizeof *s);
}
