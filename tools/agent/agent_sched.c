/* The sched pages (tools/sched/sched_page.h) that `nccl-lens sched` writes
 * beside the live pages: per watched proxy/profiler thread, the time it
 * waited for a CPU. Read whole at each refresh; a page whose sched process
 * is gone is kept --keep seconds after its last update, like a live page. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_model.h"

void agent_sched_refresh(struct agent_model *m, const char *dir, unsigned keep_s) {
  m->n_sched = 0;
  DIR *d = opendir(dir);
  if (!d) return;
  static struct lens_sched_page page; /* 400 KiB: not on the stack; the agent refreshes under its mutex */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (end == e->d_name || strcmp(end, ".sched") != 0 || pid <= 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    uint32_t writer;
    uint64_t updated;
    if (lens_sched_page_read(path, &page, &writer, &updated) != 0) continue;
    int alive = kill((pid_t)pid, 0) == 0 || errno == EPERM;
    if (!alive && now - updated > (uint64_t)keep_s * 1000000000ull) continue;
    struct lens_sched_page_thread *t = realloc(m->sched, (m->n_sched + page.n + 1) * sizeof *t);
    if (!t) break;
    m->sched = t;
    memcpy(m->sched + m->n_sched, page.t, page.n * sizeof *t);
    m->n_sched += page.n;
  }
  closedir(d);
}
