/* See chunk_stream.h. */
#include "chunk_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c_x3.h"
#include "file_read.h"
#include "lens_chunk.h"

/* Makes at least need bytes from pos on available in the buffer (fewer at
 * the end of the file). Moves the unread tail to the front, grows the buffer
 * for a chunk bigger than it, then reads. 0, or -1 (err set). */
static int fill(struct lens_cstream *s, size_t need, char *err, size_t err_len) {
  if (s->len - s->pos >= need || s->eof) return 0;
  if (s->pos) {
    memmove(s->buf, s->buf + s->pos, s->len - s->pos);
    s->buf_off += s->pos;
    s->len -= s->pos;
    s->pos = 0;
  }
  if (need > s->cap) {
    uint8_t *n = realloc(s->buf, need);
    if (!n) {
      snprintf(err, err_len, "out of memory reading a trace chunk of %zu bytes", need);
      return -1;
    }
    s->buf = n;
    s->cap = need;
  }
  while (s->len < need && !s->eof) {
    ssize_t r = pread(s->fd, s->buf + s->len, s->cap - s->len, (off_t)(s->buf_off + s->len));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      snprintf(err, err_len, "cannot read trace: %s", strerror(errno));
      return -1;
    }
    if (r == 0) s->eof = 1; /* shrank or ended: what is there is what we read */
    s->len += (size_t)r;
    s->bytes += (uint64_t)r;
  }
  return 0;
}

static int check_header(struct lens_cstream *s, const char *path, char *err, size_t err_len);

int lens_cstream_open(struct lens_cstream *s, const char *path, size_t block, char *err, size_t err_len) {
  memset(s, 0, sizeof *s);
  s->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
  struct stat st;
  if (s->fd < 0 || fstat(s->fd, &st)) {
    snprintf(err, err_len, "cannot open trace %s: %s", path, strerror(errno));
    lens_cstream_close(s);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, err_len, "trace %s is not a regular file", path);
    lens_cstream_close(s);
    return -1;
  }
  s->size = (uint64_t)st.st_size;
  s->cap = block < 65536 ? 65536 : block;
  s->buf = malloc(s->cap);
  if (!s->buf) {
    snprintf(err, err_len, "out of memory");
    lens_cstream_close(s);
    return -1;
  }
  if (fill(s, sizeof s->fh, err, err_len)) {
    lens_cstream_close(s);
    return -1;
  }
  return check_header(s, path, err, err_len);
}

int lens_cstream_open_mem(struct lens_cstream *s, const uint8_t *bytes, size_t size, const char *name, char *err,
                          size_t err_len) {
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->borrowed = 1;
  s->buf = (uint8_t *)bytes; /* read, never written: fill returns at once (eof) */
  s->cap = s->len = size;
  s->size = size;
  s->eof = 1;
  return check_header(s, name, err, err_len);
}

/* The file header, once its bytes are in: 0, or -1 (err set, s closed). */
static int check_header(struct lens_cstream *s, const char *path, char *err, size_t err_len) {
  if (s->len < sizeof s->fh) {
    snprintf(err, err_len, "%s is not a .lens trace (%zu bytes, shorter than the file header)", path, s->len);
    lens_cstream_close(s);
    return -1;
  }
  memcpy(&s->fh, s->buf, sizeof s->fh);
  if (memcmp(s->fh.magic, LENS_FILE_MAGIC, 8) != 0) {
    snprintf(err, err_len, "%s is not a .lens trace (%s)", path, lens_not_trace_why(s->buf, sizeof s->fh));
    lens_cstream_close(s);
    return -1;
  }
  if (lens_file_hdr_check(&s->fh)) {
    snprintf(err, err_len, "%s: unsupported trace format version %u (this reader knows %u)", path,
             s->fh.format_version, LENS_FORMAT_VERSION);
    lens_cstream_close(s);
    return -1;
  }
  s->pos = sizeof s->fh;
  return 0;
}

/* Where the file ends for this walk: its size when opened (as the general
 * loader reads it), or less if it shrank since. */
static uint64_t file_end(const struct lens_cstream *s) {
  uint64_t got = s->buf_off + s->len;
  return s->eof && got < s->size ? got : s->size;
}

/* The walk ends at file offset at: what follows is reported as cut. */
static int stop_at(struct lens_cstream *s, const char *why, uint64_t at) {
  s->truncation = why;
  uint64_t end = file_end(s);
  s->truncated_bytes = end > at ? end - at : 0; /* bytes after the last valid chunk */
  return 0;
}

static int stop(struct lens_cstream *s, const char *why) { return stop_at(s, why, s->buf_off + s->pos); }

/* A valid header numbered seq: a jump from the number expected is chunks the
 * writer could not write (disk full) that its own DROPS chunk may not have
 * survived, or, right after a skipped bad header, chunks the damage took. */
static void number(struct lens_cstream *s, uint64_t seq) {
  if (seq > s->expect_seq) {
    if (s->resynced) s->damaged_chunks += seq - s->expect_seq;
    else s->lost_chunks += seq - s->expect_seq;
  }
  s->resynced = 0;
  s->expect_seq = seq + 1;
}

/* The header at pos fails its check: moves pos to the next 8-byte aligned
 * offset whose header checks and whose payload fits the file, counting the
 * bytes passed as damaged. 1 found, 0 none (pos back where it was: the rest
 * is a cut tail), -1 read error (err set). */
static int resync(struct lens_cstream *s, char *err, size_t err_len) {
  uint64_t from = s->buf_off + s->pos;
  struct lens_chunk_hdr h;
  for (;;) {
    s->pos += 8;
    if (fill(s, sizeof h, err, err_len)) return -1;
    uint64_t at = s->buf_off + s->pos, end = file_end(s);
    if (at >= end || end - at < sizeof h || s->len - s->pos < sizeof h) break;
    uint32_t magic;
    memcpy(&magic, s->buf + s->pos, sizeof magic);
    if (magic != LENS_CHUNK_MAGIC) continue;
    memcpy(&h, s->buf + s->pos, sizeof h);
    if (lens_chunk_hdr_check(&h)) continue;
    if ((uint64_t)h.payload_len + lens_chunk_padding(h.payload_len) > end - at - sizeof h) continue;
    s->damaged_bytes += at - from;
    s->resynced = 1;
    return 1;
  }
  return 0; /* none: the caller ends the walk where the bad header is (stop_at) */
}

int lens_cstream_next(struct lens_cstream *s, struct lens_chunk_hdr *h, const uint8_t **payload, char *err,
                      size_t err_len) {
  for (;;) {
    if (fill(s, sizeof *h, err, err_len)) return -1;
    uint64_t at = s->buf_off + s->pos, end = file_end(s), avail = end > at ? end - at : 0;
    if (!avail) return stop(s, NULL);
    if (avail < sizeof *h) return stop(s, "file ends inside a chunk header");
    memcpy(h, s->buf + s->pos, sizeof *h);
    if (lens_chunk_hdr_check(h)) {
      int r = resync(s, err, err_len);
      if (r < 0) return -1;
      if (!r) return stop_at(s, "chunk header fails its check (magic or CRC)", at);
      continue;
    }
    size_t need = sizeof *h + (size_t)h->payload_len + lens_chunk_padding(h->payload_len);
    /* Checked before reading: no buffer grown for a length the file cannot hold. */
    if (need > avail) return stop(s, "file ends inside a chunk payload");
    if (fill(s, need, err, err_len)) return -1;
    if (s->len - s->pos < need) return stop(s, "file ends inside a chunk payload"); /* it shrank */
    const uint8_t *p = s->buf + s->pos + sizeof *h;
    s->pos += need;
    number(s, h->seq);
    /* lens_chunk_payload_check's test, three streams at a time (a tenth of the floor's time, docs/scale.md).
     * A bad payload under a good header: exactly this chunk is lost. */
    if (lens_crc32c_x3(0, p, h->payload_len) != h->payload_crc) {
      s->damaged_bytes += need;
      s->damaged_chunks++;
      continue;
    }
    *payload = p;
    return 1;
  }
}

void lens_cstream_close(struct lens_cstream *s) {
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  if (!s->borrowed) free(s->buf);
  s->buf = NULL;
}
