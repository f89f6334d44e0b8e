/* Writing the probe's trace. See sched_trace.h. */
#define _GNU_SOURCE
#include "sched/sched_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lens_chunk.h"

uint64_t lens_sched_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t lens_sched_real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* One write() per chunk (header, payload, padding), so a kill cuts at most the last one. */
static void put_chunk(struct lens_sched_trace *t, uint16_t type, const void *payload, uint32_t len) {
  if (t->fd < 0) return;
  size_t total = sizeof(struct lens_chunk_hdr) + len + lens_chunk_padding(len);
  char stackbuf[4096];
  char *buf = total <= sizeof stackbuf ? stackbuf : malloc(total);
  if (!buf) {
    t->write_errors++;
    return;
  }
  struct lens_chunk_hdr h;
  lens_chunk_hdr_init(&h, type, 0, t->seq, payload, len);
  memcpy(buf, &h, sizeof h);
  memcpy(buf + sizeof h, payload, len);
  memset(buf + sizeof h + len, 0, lens_chunk_padding(len));
  if (write_all(t->fd, buf, total) == 0)
    t->seq++;
  else
    t->write_errors++;
  if (buf != stackbuf) free(buf);
}

int lens_sched_trace_open(struct lens_sched_trace *t, const char *dir, char *err, size_t err_len) {
  memset(t, 0, sizeof *t);
  t->fd = -1;
  char host[64] = "unknown";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  int n = snprintf(t->path, sizeof t->path, "%s/nccl-lens-sched-%s-%d.lens", dir ? dir : ".", host, (int)getpid());
  if (n < 0 || (size_t)n >= sizeof t->path) {
    snprintf(err, err_len, "output path too long");
    return -1;
  }
  /* sched runs as root, and its name is predictable: a link or FIFO planted
   * there fails the open instead of being followed or blocking it. */
  t->fd = open(t->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (t->fd < 0) {
    snprintf(err, err_len, "cannot create %s: %s", t->path, strerror(errno));
    return -1;
  }
  struct lens_session s;
  memset(&s, 0, sizeof s);
  s.pid = s.outer_pid = (uint32_t)getpid();
  s.start_mono_ns = lens_sched_mono_ns();
  s.start_real_ns = lens_sched_real_ns();
  s.ts_clock = LENS_CLOCK_MONOTONIC;  /* bpf_ktime_get_ns() */
  s.hot_clock = LENS_CLOCK_MONOTONIC;
  s.max_threads = 0;
  memcpy(s.host, host, sizeof s.host);
#ifdef LENS_VERSION
  snprintf(s.plugin_version, sizeof s.plugin_version, "sched %s", LENS_VERSION);
#endif
  struct lens_file_hdr fh;
  lens_file_hdr_init(&fh, LENS_PRODUCER_SCHED, s.start_real_ns);
  if (write_all(t->fd, &fh, sizeof fh) != 0) {
    snprintf(err, err_len, "cannot write %s: %s", t->path, strerror(errno));
    close(t->fd);
    t->fd = -1;
    return -1;
  }
  put_chunk(t, LENS_CHUNK_SESSION, &s, sizeof s);
  return 0;
}

void lens_sched_trace_flush(struct lens_sched_trace *t) {
  if (!t->n_pending) return;
  struct {
    struct lens_sched_hdr h;
    struct lens_sched_sample s[LENS_SCHED_BATCH];
  } *c = malloc(sizeof *c);
  if (!c) {
    t->write_errors++;
    t->n_pending = 0;
    return;
  }
  memset(&c->h, 0, sizeof c->h);
  c->h.count = t->n_pending;
  memcpy(c->s, t->pending, t->n_pending * sizeof(struct lens_sched_sample));
  put_chunk(t, LENS_CHUNK_SCHED, c,
            (uint32_t)(sizeof c->h + t->n_pending * sizeof(struct lens_sched_sample)));
  t->samples_written += t->n_pending;
  t->n_pending = 0;
  free(c);
}

void lens_sched_trace_add(struct lens_sched_trace *t, const struct lens_sched_sample *s) {
  t->pending[t->n_pending++] = *s;
  if (t->n_pending == LENS_SCHED_BATCH) lens_sched_trace_flush(t);
}

void lens_sched_trace_hist(struct lens_sched_trace *t, const struct lens_sched_hist *h) {
  put_chunk(t, LENS_CHUNK_SCHED_HIST, h, sizeof *h);
}

void lens_sched_trace_note(struct lens_sched_trace *t, uint32_t level, const char *text) {
  char buf[1024];
  struct lens_note_hdr h = {.at_mono_ns = lens_sched_mono_ns(), .level = level};
  size_t len = strnlen(text, sizeof buf - sizeof h);
  h.len = (uint32_t)len;
  memcpy(buf, &h, sizeof h);
  memcpy(buf + sizeof h, text, len);
  put_chunk(t, LENS_CHUNK_NOTE, buf, (uint32_t)(sizeof h + len));
}

void lens_sched_trace_drops(struct lens_sched_trace *t, uint64_t ring_full) {
  struct lens_drops d;
  memset(&d, 0, sizeof d);
  d.at_mono_ns = lens_sched_mono_ns();
  d.ring_full = ring_full;
  d.write_errors = t->write_errors;
  put_chunk(t, LENS_CHUNK_DROPS, &d, sizeof d);
}

void lens_sched_trace_close(struct lens_sched_trace *t, uint32_t reason) {
  if (t->fd < 0) return;
  lens_sched_trace_flush(t);
  struct lens_fini f;
  memset(&f, 0, sizeof f);
  f.at_mono_ns = lens_sched_mono_ns();
  f.events_written = t->samples_written;
  f.chunks_written = t->seq + 1;
  f.reason = reason;
  put_chunk(t, LENS_CHUNK_FINI, &f, sizeof f);
  close(t->fd);
  t->fd = -1;
}
