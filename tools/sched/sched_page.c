/* See sched_page.h. */
#define _GNU_SOURCE
#include "sched_page.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lens_safe_fs.h"

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

/* Appends to a growing buffer; the page is formatted in memory and written
 * whole by lens_file_replace (no stdio on a path in a shared directory). */
struct outbuf { char *p; size_t len, cap; int failed; };
static void out_printf(struct outbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct outbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->failed = 1;
      return;
    }
    if ((size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    }
    size_t nc = b->cap * 2 + (size_t)n + 1;
    char *np = realloc(b->p, nc);
    if (!np) {
      b->failed = 1;
      return;
    }
    b->p = np, b->cap = nc;
  }
}

int lens_sched_page_open_dir(const char *dir, int explicit_dir, char *why, size_t why_len) {
  /* Created 0700 when missing; a site's shared directory must be sticky and
   * owned by root or us (lens_safe_fs.h): never a link, never another
   * user's directory, since sched runs as root. */
  return lens_dir_open(dir, 1, geteuid(), explicit_dir ? LENS_DIR_SHARED_STICKY : LENS_DIR_PRIVATE, why,
                       why_len);
}

int lens_sched_page_write(const struct lens_sched_page *p, int dirfd, uint64_t min_wait_ns) {
  char name[64], host[256] = "unknown";
  int pid = (int)getpid();
  snprintf(name, sizeof name, "%d.sched", pid);
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  for (char *c = host; *c; c++) /* one token on its line, whatever the hostname holds */
    if (*c <= ' ' || *c == 0x7f) *c = '_';
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct outbuf b = {malloc(65536), 0, 65536, 0};
  if (!b.p) return errno = ENOMEM, -1;
  out_printf(&b, "%s\nhost %s\npid %d\nupdated_real_ns %llu\nmin_wait_ns %llu\n", LENS_SCHED_PAGE_MAGIC, host, pid,
             (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
             (unsigned long long)min_wait_ns);
  size_t n = p->n <= LENS_SCHED_PAGE_THREADS ? p->n : LENS_SCHED_PAGE_THREADS;
  for (size_t i = 0; i < n; i++) {
    const struct lens_sched_page_thread *e = &p->t[i];
    out_printf(&b, "thread %u %u %u %u %llu %llu %llu %llu %llu %llu\n", e->pid, e->tid, e->ns_tid, e->roles,
               (unsigned long long)e->runq_ns, (unsigned long long)e->runq_waits, (unsigned long long)e->preempt_ns,
               (unsigned long long)e->preempt_waits, (unsigned long long)e->offcpu_ns, (unsigned long long)e->sleeps);
  }
  int rc = -1;
  if (b.failed)
    errno = ENOMEM;
  else if (b.len > LENS_SCHED_PAGE_MAX_BYTES)
    errno = EFBIG;
  else /* 0644: an agent of another user may read it where a site shares the directory */
    rc = lens_file_replace(dirfd, name, 0644, b.p, b.len);
  int e = errno;
  free(b.p);
  errno = e;
  return rc;
}

/* A decimal number and nothing else up to the next space or end of line:
 * no sign, no overflow (a page is only as trustworthy as its owner). */
static int strict_u64(const char **s, uint64_t *v) {
  const char *p = *s;
  while (*p == ' ') p++;
  if (*p < '0' || *p > '9') return -1;
  uint64_t x = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned d = (unsigned)(*p - '0');
    if (x > (UINT64_MAX - d) / 10) return -1;
    x = x * 10 + d;
  }
  if (*p != ' ' && *p != '\n' && *p != 0) return -1;
  *s = p;
  *v = x;
  return 0;
}
static int strict_u32(const char **s, uint32_t *v) {
  uint64_t x;
  if (strict_u64(s, &x) != 0 || x > UINT32_MAX) return -1;
  *v = (uint32_t)x;
  return 0;
}
/* The rest of the line must be empty. */
static int line_end(const char *p) {
  while (*p == ' ') p++;
  return *p == '\n' || *p == 0 ? 0 : -1;
}

int lens_sched_page_parse(const char *text, struct lens_sched_page *out, uint32_t *writer_pid,
                          uint64_t *updated_real_ns) {
  out->n = 0;
  out->evicted = 0;
  *writer_pid = 0;
  *updated_real_ns = 0;
  size_t ml = strlen(LENS_SCHED_PAGE_MAGIC);
  if (strncmp(text, LENS_SCHED_PAGE_MAGIC, ml) != 0 || (text[ml] != '\n' && text[ml] != 0)) return -1;
  for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    const char *p = line;
    if (!strncmp(p, "thread ", 7)) {
      p += 7;
      struct lens_sched_page_thread e;
      memset(&e, 0, sizeof e);
      uint64_t *v[6] = {&e.runq_ns, &e.runq_waits, &e.preempt_ns, &e.preempt_waits, &e.offcpu_ns, &e.sleeps};
      int bad = strict_u32(&p, &e.pid) || strict_u32(&p, &e.tid) || strict_u32(&p, &e.ns_tid) ||
                strict_u32(&p, &e.roles);
      for (int i = 0; i < 6 && !bad; i++) bad = strict_u64(&p, v[i]);
      if (bad || line_end(p) || out->n == LENS_SCHED_PAGE_THREADS) continue; /* a bad line, not a bad page */
      out->t[out->n++] = e;
    } else if (!strncmp(p, "pid ", 4)) {
      p += 4;
      uint32_t w;
      if (strict_u32(&p, &w) == 0 && line_end(p) == 0) *writer_pid = w;
    } else if (!strncmp(p, "updated_real_ns ", 16)) {
      p += 16;
      uint64_t u;
      if (strict_u64(&p, &u) == 0 && line_end(p) == 0) *updated_real_ns = u;
    }
  }
  return 0;
}

int lens_sched_page_read_at(int dirfd, const char *name, struct lens_sched_page *out, uint32_t *writer_pid,
                            uint64_t *updated_real_ns, char *why, size_t why_len) {
  struct stat st;
  int fd = lens_file_open_read(dirfd, name, LENS_ANY_UID, LENS_SCHED_PAGE_MAX_BYTES, &st, why, why_len);
  if (fd < 0) return -1;
  /* sched runs as root; a reader of our own may have written it too. A page
   * of anyone else is a forgery: its counters would become metrics. */
  if (st.st_uid != 0 && st.st_uid != geteuid()) {
    if (why && why_len) snprintf(why, why_len, "owned by uid %u, neither root nor %u", (unsigned)st.st_uid,
                                 (unsigned)geteuid());
    close(fd);
    return errno = EPERM, -1;
  }
  char *text = malloc(LENS_SCHED_PAGE_MAX_BYTES + 1);
  if (!text) {
    close(fd);
    return errno = ENOMEM, -1;
  }
  ssize_t n = lens_read_upto(fd, text, LENS_SCHED_PAGE_MAX_BYTES);
  close(fd);
  int rc = -1;
  if (n < 0) {
    if (why && why_len) snprintf(why, why_len, "cannot read it");
  } else {
    text[n] = 0;
    rc = lens_sched_page_parse(text, out, writer_pid, updated_real_ns);
    if (rc != 0 && why && why_len) snprintf(why, why_len, "not a sched page");
  }
  free(text);
  return rc;
}

int lens_sched_page_read(const char *path, struct lens_sched_page *out, uint32_t *writer_pid,
                         uint64_t *updated_real_ns) {
  return lens_sched_page_read_at(AT_FDCWD, path, out, writer_pid, updated_real_ns, NULL, 0);
}

const char *lens_sched_page_role_name(uint32_t roles) {
  if ((roles & LENS_ROLE_PROXY) && (roles & LENS_ROLE_PROFILER)) return "proxy,profiler";
  if (roles & LENS_ROLE_PROXY) return "proxy";
  if (roles & LENS_ROLE_PROFILER) return "profiler";
  return "";
}
