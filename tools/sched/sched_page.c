/* See sched_page.h. */
#define _GNU_SOURCE
#include "sched_page.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct lens_sched_page_thread *thread_of(struct lens_sched_page *p, uint32_t pid, uint32_t tid) {
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].tid == tid && p->t[i].pid == pid) return &p->t[i];
  struct lens_sched_page_thread *e;
  if (p->n < LENS_SCHED_PAGE_THREADS) {
    e = &p->t[p->n++];
  } else { /* full: the thread whose last sample is oldest (most likely gone) makes room */
    e = &p->t[0];
    for (size_t i = 1; i < p->n; i++)
      if (p->t[i].last_ns < e->last_ns) e = &p->t[i];
    p->evicted++;
  }
  memset(e, 0, sizeof *e);
  e->pid = pid;
  e->tid = tid;
  return e;
}

void lens_sched_page_add(struct lens_sched_page *p, const struct lens_sched_sample *s, uint32_t roles) {
  struct lens_sched_page_thread *e = thread_of(p, s->host_pid, s->host_tid);
  uint64_t d = s->end_mono_ns > s->start_mono_ns ? s->end_mono_ns - s->start_mono_ns : 0;
  e->ns_tid = s->ns_tid;
  if (roles) e->roles = roles;
  e->last_ns = s->end_mono_ns;
  switch (s->kind) {
  case LENS_SCHED_RUNQ_WAIT: e->runq_ns += d, e->runq_waits++; break;
  case LENS_SCHED_PREEMPT: e->preempt_ns += d, e->preempt_waits++; break;
  case LENS_SCHED_OFFCPU: e->offcpu_ns += d, e->sleeps++; break;
  default: break;
  }
}

int lens_sched_page_write(const struct lens_sched_page *p, const char *dir, uint64_t min_wait_ns) {
  char path[4096], tmp[4200], host[256] = "unknown";
  int pid = (int)getpid();
  if (snprintf(path, sizeof path, "%s/%d.sched", dir, pid) >= (int)sizeof path) return errno = ENAMETOOLONG, -1;
  snprintf(tmp, sizeof tmp, "%s/.%d.sched.tmp", dir, pid);
  gethostname(host, sizeof host - 1);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  mkdir(dir, 01777); /* as the plugin's registry */
  FILE *f = fopen(tmp, "we");
  if (!f) return -1;
  fprintf(f, "%s\nhost %s\npid %d\nupdated_real_ns %llu\nmin_wait_ns %llu\n", LENS_SCHED_PAGE_MAGIC, host, pid,
          (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
          (unsigned long long)min_wait_ns);
  for (size_t i = 0; i < p->n; i++) {
    const struct lens_sched_page_thread *e = &p->t[i];
    fprintf(f, "thread %u %u %u %u %llu %llu %llu %llu %llu %llu\n", e->pid, e->tid, e->ns_tid, e->roles,
            (unsigned long long)e->runq_ns, (unsigned long long)e->runq_waits, (unsigned long long)e->preempt_ns,
            (unsigned long long)e->preempt_waits, (unsigned long long)e->offcpu_ns, (unsigned long long)e->sleeps);
  }
  int bad = ferror(f);
  if (fclose(f) != 0) bad = 1;
  if (bad || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    errno = e;
    return -1;
  }
  return 0;
}

/* n unsigned decimal fields after prefix, each at most its max, and nothing
 * else on the line: 1, or 0. By hand, not sscanf: its %u and %llu on a
 * number past the type are undefined behaviour (C11 7.21.6.2), and a page is
 * any file in the directory. */
static int fields(const char *line, const char *prefix, uint64_t *v, const uint64_t *max, int n) {
  size_t pl = strlen(prefix);
  if (strncmp(line, prefix, pl)) return 0;
  const char *p = line + pl;
  for (int i = 0; i < n; i++) {
    while (*p == ' ') p++;
    if (*p < '0' || *p > '9') return 0;
    uint64_t x = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
      unsigned d = (unsigned)(*p - '0');
      if (x > (max[i] - d) / 10) return 0;
      x = x * 10 + d;
    }
    v[i] = x;
  }
  while (*p == ' ' || *p == '\n' || *p == '\r') p++;
  return *p == 0;
}

int lens_sched_page_read(const char *path, struct lens_sched_page *out, uint32_t *writer_pid,
                         uint64_t *updated_real_ns) {
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  char line[512];
  int ok = fgets(line, sizeof line, f) && !strncmp(line, LENS_SCHED_PAGE_MAGIC, strlen(LENS_SCHED_PAGE_MAGIC));
  out->n = 0;
  out->evicted = 0;
  *writer_pid = 0;
  *updated_real_ns = 0;
  static const uint64_t max_thread[10] = {UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT64_MAX,
                                          UINT64_MAX,  UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
  static const uint64_t max_pid[1] = {UINT32_MAX}, max_u64[1] = {UINT64_MAX};
  while (ok && fgets(line, sizeof line, f)) {
    uint64_t v[10];
    if (fields(line, "thread ", v, max_thread, 10)) {
      if (out->n == LENS_SCHED_PAGE_THREADS) continue;
      struct lens_sched_page_thread e;
      memset(&e, 0, sizeof e);
      e.pid = (uint32_t)v[0], e.tid = (uint32_t)v[1], e.ns_tid = (uint32_t)v[2], e.roles = (uint32_t)v[3];
      e.runq_ns = v[4], e.runq_waits = v[5], e.preempt_ns = v[6], e.preempt_waits = v[7], e.offcpu_ns = v[8],
      e.sleeps = v[9];
      out->t[out->n++] = e;
    } else if (fields(line, "pid ", v, max_pid, 1)) {
      *writer_pid = (uint32_t)v[0];
    } else if (fields(line, "updated_real_ns ", v, max_u64, 1)) {
      *updated_real_ns = v[0];
    }
  }
  fclose(f);
  return ok ? 0 : -1;
}

const char *lens_sched_page_role_name(uint32_t roles) {
  if ((roles & LENS_ROLE_PROXY) && (roles & LENS_ROLE_PROFILER)) return "proxy,profiler";
  if (roles & LENS_ROLE_PROXY) return "proxy";
  if (roles & LENS_ROLE_PROFILER) return "profiler";
  return "";
}
