#define _GNU_SOURCE
#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "counters.h"
#include "lens_chunk.h"
#include "log.h"
#include "recorder.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_fd = -1;
static uint64_t g_end;      /* file size after the last good chunk */
static uint64_t g_seq;      /* next chunk number in the file */
static uint32_t g_session;  /* session number being written */
/* Chunks the writer got through, written or not (a failed write returns
 * too), dumps included: what a finalize waiting for the writer watches to
 * tell a slow file system from a stalled one. Read without g_mu, which a
 * write blocked in the kernel holds. */
static _Atomic uint64_t g_progress;
static uint64_t g_chunks;   /* chunks written this session */
static char g_path[PATH_MAX];
static int g_err_once, g_nofile_once, g_removed_once;
static char g_dir[PATH_MAX], g_host[64];
static int g_file_pid, g_renamed;
static uint64_t g_lost_bytes; /* in trace files removed under us */
static int create_trace(void);
static int reopen_own(const char *dir, const char *host, int pid);
static int g_own_ok; /* the file this process created, to continue in a later session */
static dev_t g_own_dev;
static ino_t g_own_ino;

static int mkdir_p(const char *dir) {
  char tmp[PATH_MAX];
  if (strlen(dir) >= sizeof tmp) return -1;
  strcpy(tmp, dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* The first 8-byte aligned offset in [from, size) whose chunk header checks
 * and whose payload fits the file, as the reader resynchronises
 * (tools/reader/chunk_stream.c); size if none. Read in blocks: this runs
 * once, when a later session reopens the file, never on the hot path. */
static uint64_t next_good_header(int fd, uint64_t from, uint64_t size) {
  static uint8_t blk[64 * 1024 + sizeof(struct lens_chunk_hdr)]; /* lock held */
  struct lens_chunk_hdr h;
  for (uint64_t base = from; base + sizeof h <= size; base += 64 * 1024) {
    ssize_t got = pread(fd, blk, sizeof blk, (off_t)base);
    if (got < (ssize_t)sizeof h) break;
    for (size_t k = 0; k + sizeof h <= (size_t)got && k < 64 * 1024; k += 8) {
      memcpy(&h, blk + k, sizeof h);
      if (h.magic != LENS_CHUNK_MAGIC || lens_chunk_hdr_check(&h) != 0) continue;
      uint64_t at = base + k;
      if ((uint64_t)h.payload_len + lens_chunk_padding(h.payload_len) <= size - at - sizeof h) return at;
    }
  }
  return size;
}

/* Walk the chunk headers of this process's file of an earlier session: next
 * seq, last session, and where the last complete chunk ends. A header that
 * fails its check (a flipped bit on disk) is stepped over to the next good
 * one, as the reader does: only a torn tail after the last good chunk is cut
 * by the caller, never the good chunks behind a damaged one. */
static void scan_existing(int fd, uint64_t size, int *had_chunks, uint32_t *max_session) {
  struct lens_file_hdr fh;
  *had_chunks = 0;
  *max_session = 0;
  g_seq = 0;
  g_end = 0;
  if (size < sizeof fh || pread(fd, &fh, sizeof fh, 0) != (ssize_t)sizeof fh || lens_file_hdr_check(&fh) != 0)
    return; /* not ours or empty: caller rewrites from 0 */
  uint64_t off = sizeof fh, end = off;
  while (off + sizeof(struct lens_chunk_hdr) <= size) {
    struct lens_chunk_hdr h;
    if (pread(fd, &h, sizeof h, (off_t)off) != (ssize_t)sizeof h) break;
    uint64_t next = off + sizeof h + h.payload_len + lens_chunk_padding(h.payload_len);
    if (lens_chunk_hdr_check(&h) != 0) {
      off = next_good_header(fd, off + 8, size);
      continue;
    }
    if (next > size) break; /* the torn tail */
    *had_chunks = 1;
    if (h.session > *max_session) *max_session = h.session;
    if (h.seq + 1 > g_seq) g_seq = h.seq + 1;
    end = off = next;
  }
  g_end = end;
}

/* The file header, written when the file is new, and retried before every
 * chunk until it is in: a disk that is full when the trace is opened and has
 * room later must not leave chunks behind no header (lock held). */
static int ensure_header(void) {
  if (g_end != 0) return 0;
  struct lens_file_hdr fh;
  lens_file_hdr_init(&fh, LENS_PRODUCER_PLUGIN, lens_real_ns());
  ssize_t w = write(g_fd, &fh, sizeof fh);
  if (w == (ssize_t)sizeof fh) {
    g_end = sizeof fh;
    return 0;
  }
  if (w > 0 && ftruncate(g_fd, 0) != 0) {
  }
  return -1;
}

/* Recorder mode (recorder.h): chunks go to the in-memory store; a dump
 * writes them to <dir>/nccl-lens-<host>-<pid>-dump<N>.lens. */
static int g_mem;             /* the open session writes to the store */
static uint32_t g_mem_sessions, g_dumps;
static char g_mem_dir[512], g_mem_host[64];
static int g_mem_pid;

static int mem_open(const char *dir, const char *host, int pid) {
  g_session = g_mem_sessions++;
  g_mem = 1;
  g_path[0] = 0;
  snprintf(g_mem_dir, sizeof g_mem_dir, "%s", dir);
  snprintf(g_mem_host, sizeof g_mem_host, "%s", host);
  g_mem_pid = pid;
  pthread_mutex_unlock(&g_mu);
  return 0;
}

int lens_tf_open(const char *dir, const char *host, int pid) {
  pthread_mutex_lock(&g_mu);
  g_chunks = 0;
  if (lens_rec_on() && g_fd < 0) return mem_open(dir, host, pid);
  if (g_fd >= 0) { /* still open: a new session in the same file */
    g_session++;
    pthread_mutex_unlock(&g_mu);
    return 0;
  }
  if (reopen_own(dir, host, pid) == 0) { /* this process's file of an earlier session: append */
    pthread_mutex_unlock(&g_mu);
    return 0;
  }
  snprintf(g_dir, sizeof g_dir, "%s", dir);
  snprintf(g_host, sizeof g_host, "%s", host);
  g_file_pid = pid;
  int fd = create_trace();
  if (fd < 0) {
    int e = errno;
    g_path[0] = 0;
    pthread_mutex_unlock(&g_mu);
    lens_log_once(&g_nofile_once, LENS_LOG_WARN,
                  "nccl-lens: cannot create the trace file in \"%s\" (%s); recording without a file", dir,
                  strerror(e));
    return -1;
  }
  g_fd = fd;
  g_session = 0;
  g_seq = 0;
  g_end = 0;
  if (ensure_header() != 0) atomic_fetch_add(&lens_cnt.write_errors, 1); /* retried before each chunk */
  pthread_mutex_unlock(&g_mu);
  if (g_renamed) lens_log(LENS_LOG_INFO, "nccl-lens: a file of that name existed; writing the trace to %s", g_path);
  return 0;
}

/* A later session of this process (after the last finalize, NCCL may init
 * again) continues the file this process created: the same path, opened
 * without O_CREAT and O_NOFOLLOW, and only if it is still the very inode we
 * created (a regular file with one link). Lock held. 0 = reopened. */
static int reopen_own(const char *dir, const char *host, int pid) {
  if (!g_own_ok || !g_path[0] || strcmp(dir, g_dir) || strcmp(host, g_host) || pid != g_file_pid) return -1;
  int fd = open(g_path, O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0) return -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_dev != g_own_dev ||
      st.st_ino != g_own_ino) {
    close(fd);
    return -1;
  }
  int had = 0;
  uint32_t maxs = 0;
  scan_existing(fd, (uint64_t)st.st_size, &had, &maxs);
  if (g_end < (uint64_t)st.st_size && ftruncate(fd, (off_t)g_end) != 0) {
    /* keep going: the reader stops at the torn chunk */
  }
  g_fd = fd;
  g_session = had ? maxs + 1 : 0;
  if (g_end == 0) {
    g_seq = 0;
    if (ensure_header() != 0) atomic_fetch_add(&lens_cnt.write_errors, 1);
  }
  return 0;
}

/* The trace is always a new file: O_CREAT|O_EXCL|O_NOFOLLOW, so a link or
 * file someone put in a shared output directory is never followed or
 * truncated. A name that exists (another process of this pid, a planted
 * link) gets a suffix: nccl-lens-<host>-<pid>.<n>.lens. Lock held. */
static int create_trace(void) {
  char file[PATH_MAX];
  if (mkdir_p(g_dir) != 0) return -1;
  g_renamed = 0;
  for (int k = 0; k < 1000; k++) {
    int n = k ? snprintf(file, sizeof file, "%s/nccl-lens-%s-%d.%d.lens", g_dir, g_host, g_file_pid, k)
              : snprintf(file, sizeof file, "%s/nccl-lens-%s-%d.lens", g_dir, g_host, g_file_pid);
    if (n < 0 || n >= (int)sizeof file) return errno = ENAMETOOLONG, -1;
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      struct stat st;
      g_own_ok = fstat(fd, &st) == 0;
      g_own_dev = st.st_dev, g_own_ino = st.st_ino;
      g_renamed = k > 0;
      if (!realpath(file, g_path)) snprintf(g_path, sizeof g_path, "%s", file);
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  return errno = EEXIST, -1;
}

/* Someone removed the trace (rm -rf of the output directory): everything
 * written to it is gone with the inode. Noticed by the writer every 100 ms:
 * logged once with what was lost, and a new file started (directory made
 * again), into which the writer sends the session's metadata again. */
int lens_tf_check_removed(void) {
  pthread_mutex_lock(&g_mu);
  struct stat st;
  if (g_mem || g_fd < 0 || fstat(g_fd, &st) != 0 || st.st_nlink != 0) {
    pthread_mutex_unlock(&g_mu);
    return 0;
  }
  uint64_t lost = g_end, chunks = g_seq;
  g_lost_bytes += lost;
  char old[PATH_MAX];
  snprintf(old, sizeof old, "%s", g_path);
  close(g_fd);
  g_fd = create_trace();
  g_seq = 0;
  g_end = 0;
  int e = errno;
  if (g_fd >= 0 && ensure_header() != 0) atomic_fetch_add(&lens_cnt.write_errors, 1);
  pthread_mutex_unlock(&g_mu);
  if (g_fd >= 0)
    lens_log_once(&g_removed_once, LENS_LOG_WARN,
                  "nccl-lens: the trace file %s was removed while recording (its directory deleted?): %llu bytes in "
                  "%llu chunks written to it are lost; recording goes on in %s",
                  old, (unsigned long long)lost, (unsigned long long)chunks, g_path);
  else
    lens_log_once(&g_removed_once, LENS_LOG_WARN,
                  "nccl-lens: the trace file %s was removed while recording: %llu bytes lost, and a new one cannot "
                  "be created (%s); recording without a file",
                  old, (unsigned long long)lost, strerror(e));
  return 1;
}

uint64_t lens_tf_lost_bytes(void) { return g_lost_bytes; }

uint32_t lens_tf_session(void) {
  pthread_mutex_lock(&g_mu);
  uint32_t s = g_session;
  pthread_mutex_unlock(&g_mu);
  return s;
}

/* The 32-byte header for a payload whose CRC is already known (the framing
 * of common/lens_chunk.h: hdr_crc covers the 28 bytes before it). */
static void chunk_hdr(struct lens_chunk_hdr *h, uint16_t type, uint32_t len, uint32_t payload_crc) {
  h->magic = LENS_CHUNK_MAGIC;
  h->type = type;
  h->flags = 0;
  h->payload_len = len;
  h->payload_crc = payload_crc;
  h->seq = g_seq;
  h->session = g_session;
  h->hdr_crc = lens_crc32c(0, h, offsetof(struct lens_chunk_hdr, hdr_crc));
}

static int write_parts(uint16_t type, const struct iovec *parts, int n) {
  static const uint8_t zeros[8];
  if (n < 0 || n > 4) return -1;
  /* The payload CRC needs no lock: compute it before taking the mutex. */
  uint32_t crc = 0, len = 0;
  for (int i = 0; i < n; i++) {
    crc = lens_crc32c(crc, parts[i].iov_base, parts[i].iov_len);
    len += (uint32_t)parts[i].iov_len;
  }
  pthread_mutex_lock(&g_mu);
  if (g_mem) {
    int rc = lens_rec_store(type, g_session, parts, n);
    g_chunks += rc == 0;
    pthread_mutex_unlock(&g_mu);
    return rc;
  }
  if (g_fd < 0) {
    pthread_mutex_unlock(&g_mu);
    atomic_fetch_add_explicit(&lens_cnt.write_errors, 1, memory_order_relaxed);
    return -1;
  }
  if (ensure_header() != 0) {
    g_seq++; /* the lost chunk leaves a gap in the numbers: the reader counts it */
    atomic_fetch_add_explicit(&lens_cnt.write_errors, 1, memory_order_relaxed);
    pthread_mutex_unlock(&g_mu);
    lens_log_once(&g_err_once, LENS_LOG_WARN, "nccl-lens: writing the header of %s failed; dropping data, counted",
                  g_path);
    return -1;
  }
  struct lens_chunk_hdr h;
  chunk_hdr(&h, type, len, crc);
  struct iovec iov[6];
  iov[0] = (struct iovec){&h, sizeof h};
  for (int i = 0; i < n; i++) iov[1 + i] = parts[i];
  int niov = 1 + n;
  uint32_t pad = lens_chunk_padding(len);
  if (pad) iov[niov++] = (struct iovec){(void *)zeros, pad};
  size_t total = sizeof h + len + pad;
  ssize_t w = writev(g_fd, iov, niov);
  if (w != (ssize_t)total) {
    int e = w < 0 ? errno : ENOSPC;
    /* Cut a partial chunk so later chunks stay readable. */
    if (w > 0 && ftruncate(g_fd, (off_t)g_end) != 0) {
    }
    /* Its number is used up all the same: a reader sees the gap and counts
     * the loss even when the DROPS and FINI that would report it fail too. */
    g_seq++;
    atomic_fetch_add_explicit(&lens_cnt.write_errors, 1, memory_order_relaxed);
    pthread_mutex_unlock(&g_mu);
    lens_log_once(&g_err_once, LENS_LOG_WARN, "nccl-lens: writing %s failed (%s); dropping data, counted",
                  g_path, strerror(e));
    return -1;
  }
  g_end += total;
  g_seq++;
  g_chunks++;
  pthread_mutex_unlock(&g_mu);
  return 0;
}

int lens_tf_write_parts(uint16_t type, const struct iovec *parts, int n) {
  int rc = write_parts(type, parts, n);
  atomic_fetch_add_explicit(&g_progress, 1, memory_order_release);
  return rc;
}

int lens_tf_in_store(void) { return g_mem; }

uint64_t lens_tf_progress(void) { return atomic_load_explicit(&g_progress, memory_order_acquire); }

int lens_tf_write(uint16_t type, const void *payload, uint32_t len) {
  struct iovec part = {(void *)payload, len};
  return lens_tf_write_parts(type, &part, len ? 1 : 0);
}

uint64_t lens_tf_chunks(void) {
  pthread_mutex_lock(&g_mu);
  uint64_t c = g_chunks;
  pthread_mutex_unlock(&g_mu);
  return c;
}

void lens_tf_close(void) {
  pthread_mutex_lock(&g_mu);
  if (g_mem) {
    g_mem = 0;
    lens_rec_clear();
  }
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
  pthread_mutex_unlock(&g_mu);
}

const char *lens_tf_path(void) { return g_path; }

struct dump_ctx {
  int fd, failed;
  uint64_t seq, end;                         /* next chunk number; file size after the last whole chunk */
  uint64_t total, skip_left, skipped, skipped_chunks;
};

/* Event chunks may be left out, oldest first, when the disk cannot hold the
 * whole store; metadata (session, communicators, strings) never. */
static int dump_skippable(uint16_t type) {
  return type == LENS_CHUNK_EVENTS || type == LENS_CHUNK_EVENTS_PACKED || type == LENS_CHUNK_CUPTI;
}

static uint64_t dump_chunk_bytes(uint32_t len) { return sizeof(struct lens_chunk_hdr) + len + lens_chunk_padding(len); }

static void dump_size(void *ctx, uint16_t type, uint32_t session, const void *payload, uint32_t len) {
  (void)type, (void)session, (void)payload;
  ((struct dump_ctx *)ctx)->total += dump_chunk_bytes(len);
}

static void dump_write(struct dump_ctx *d, uint16_t type, uint32_t session, const void *payload, uint32_t len) {
  static const uint8_t zeros[8];
  struct lens_chunk_hdr h;
  lens_chunk_hdr_init(&h, type, session, d->seq++, payload, len);
  uint32_t pad = lens_chunk_padding(len);
  struct iovec iov[3] = {{&h, sizeof h}, {(void *)payload, len}, {(void *)zeros, pad}};
  ssize_t w = writev(d->fd, iov, 3);
  atomic_fetch_add_explicit(&g_progress, 1, memory_order_release);
  if (w != (ssize_t)(sizeof h + len + pad)) {
    d->failed = 1;
    if (ftruncate(d->fd, (off_t)d->end) != 0) { /* a torn chunk stays: readers stop there */
    }
    return;
  }
  d->end += sizeof h + len + pad;
}

static void dump_chunk(void *ctx, uint16_t type, uint32_t session, const void *payload, uint32_t len) {
  struct dump_ctx *d = ctx;
  if (d->failed) return;
  if (d->skip_left && dump_skippable(type)) {
    uint64_t b = dump_chunk_bytes(len);
    d->skip_left = b >= d->skip_left ? 0 : d->skip_left - b;
    d->skipped += b;
    d->skipped_chunks++;
    return;
  }
  dump_write(d, type, session, payload, len);
}

/* Writes the store to a new file (O_EXCL|O_NOFOLLOW: never over anything
 * that is there). When the file system has less room than the store, the
 * oldest event chunks are left out so that the newest (those around the
 * hang) fit, and a NOTE at the end says how much; a write that still fails
 * leaves the file cut at its last whole chunk. */
int lens_tf_dump(char *path, size_t cap) {
  pthread_mutex_lock(&g_mu);
  int fd = -1;
  if (g_mem && mkdir_p(g_mem_dir) == 0) {
    for (int k = 0; k < 1000 && fd < 0; k++) {
      if (snprintf(path, cap, "%s/nccl-lens-%s-%d-dump%u.lens", g_mem_dir, g_mem_host, g_mem_pid, g_dumps++) >=
          (int)cap)
        break;
      fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0 && errno != EEXIST) break;
    }
  }
  struct dump_ctx d = {fd, fd < 0, 0, 0, 0, 0, 0, 0};
  uint64_t avail = 0;
  if (fd >= 0) {
    lens_rec_foreach(dump_size, &d);
    struct statvfs vs;
    uint64_t need = d.total + sizeof(struct lens_file_hdr) + 4096; /* + the NOTE */
    if (fstatvfs(fd, &vs) == 0) {
      avail = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
      uint64_t margin = avail / 8 < (64u << 10) ? avail / 8 : (64u << 10); /* blocks and metadata */
      if (need + margin > avail) d.skip_left = need + margin - avail;
    }
    struct lens_file_hdr fh;
    lens_file_hdr_init(&fh, LENS_PRODUCER_PLUGIN, lens_real_ns());
    d.failed = write(fd, &fh, sizeof fh) != (ssize_t)sizeof fh;
    d.end = sizeof fh;
    lens_rec_foreach(dump_chunk, &d);
    if (d.skipped && !d.failed) {
      struct {
        struct lens_note_hdr h;
        char t[300];
      } note;
      int n = snprintf(note.t, sizeof note.t,
                       "nccl-lens recorder dump: the file system had %llu bytes free for %llu; the oldest %llu event "
                       "chunks (%llu bytes) were left out so that the newest fit",
                       (unsigned long long)avail, (unsigned long long)d.total, (unsigned long long)d.skipped_chunks,
                       (unsigned long long)d.skipped);
      if (n < 0) n = 0;
      if (n >= (int)sizeof note.t) n = (int)sizeof note.t - 1;
      note.h = (struct lens_note_hdr){lens_mono_ns(), LENS_LOG_WARN, (uint32_t)n};
      dump_write(&d, LENS_CHUNK_NOTE, g_session, &note, (uint32_t)(sizeof note.h + (size_t)n));
    }
    if (close(fd) != 0) d.failed = 1;
  }
  pthread_mutex_unlock(&g_mu);
  if (d.skipped)
    lens_log(LENS_LOG_WARN, "nccl-lens: recorder dump %s: %llu bytes free, the oldest %llu bytes of events left out",
             path, (unsigned long long)avail, (unsigned long long)d.skipped);
  if (d.failed) {
    atomic_fetch_add_explicit(&lens_cnt.write_errors, 1, memory_order_relaxed);
    lens_log_once(&g_err_once, LENS_LOG_WARN,
                  "nccl-lens: writing the recorder's dump %s failed after %llu bytes (kept up to the last whole chunk)",
                  fd >= 0 ? path : g_mem_dir, (unsigned long long)d.end);
    return -1;
  }
  return 0;
}

void lens_tf_reset_after_fork(void) {
  pthread_mutex_init(&g_mu, NULL);
  g_mem = 0; /* the store is the parent's: the child's writer starts empty */
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
  g_path[0] = 0;
  g_own_ok = 0; /* the parent's file: the child creates its own */
}
