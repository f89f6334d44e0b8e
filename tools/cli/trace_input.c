/* See trace_input.h. */
#define _GNU_SOURCE
#include "cli/trace_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#define IN_BLOCK (1u << 20)

uint64_t lens_trace_input_max(void) {
  const char *e = getenv("NCCL_LENS_INPUT_MAX_MB");
  char *end;
  unsigned long long mb = e && *e ? strtoull(e, &end, 10) : 0;
  if (!e || !*e || *end || mb < 1 || mb > 1048576) return LENS_TRACE_SPOOL_MAX; /* unset or nonsense: the default */
  return (uint64_t)mb << 20;
}

int lens_trace_input_needs_spool(const char *path) {
  size_t n = strlen(path);
  /* x.json.gz is a Kineto trace, which its importer reads through zlib by its name (docs/kineto-import.md) */
  if (n > 8 && !strcasecmp(path + n - 8, ".json.gz")) return 0;
  return !strcmp(path, "-") || (n > 3 && !strcmp(path + n - 3, ".gz"));
}

static ssize_t read_some(int fd, uint8_t *buf, size_t len) {
  for (;;) {
    ssize_t r = read(fd, buf, len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) { /* a non-blocking pipe on stdin: wait for data */
      struct pollfd p = {.fd = fd, .events = POLLIN};
      if (poll(&p, 1, -1) >= 0 || errno == EINTR) continue;
    }
    return r;
  }
}

static int write_all(int fd, const uint8_t *buf, size_t len) {
  while (len) {
    ssize_t w = write(fd, buf, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    buf += w;
    len -= (size_t)w;
  }
  return 0;
}

/* Bytes of `in` into `out`, inflated when gz; 0, or -1 with err. `head`
 * holds the first bytes already read (to sniff the gzip magic). */
static int copy(int in, int out, int gz, const uint8_t *head, size_t n_head, uint64_t max, const char *name,
                char *err, size_t err_len) {
  uint8_t *ib = malloc(IN_BLOCK), *ob = malloc(IN_BLOCK);
  z_stream z;
  memset(&z, 0, sizeof z);
  int rc = -1, zr = Z_OK, zinit = 0;
  uint64_t read_bytes = 0, written = 0;
  if (!ib || !ob) {
    snprintf(err, err_len, "%s: out of memory", name);
    goto out;
  }
  if (gz) {
    if (inflateInit2(&z, 15 + 32) != Z_OK) { /* 15 + 32: gzip or zlib header, told apart */
      snprintf(err, err_len, "%s: cannot start zlib", name);
      goto out;
    }
    zinit = 1;
  }
  int ended = 0; /* gz: the last stream ended and no byte followed yet */
  for (;;) {
    ssize_t r;
    if (n_head) {
      memcpy(ib, head, n_head);
      r = (ssize_t)n_head;
      n_head = 0;
    } else {
      r = read_some(in, ib, IN_BLOCK);
    }
    if (r < 0) {
      snprintf(err, err_len, "cannot read %s: %s", name, strerror(errno));
      goto out;
    }
    if (r == 0) break;
    read_bytes += (uint64_t)r;
    if (!gz) {
      if (written + (uint64_t)r > max) goto too_big;
      if (write_all(out, ib, (size_t)r)) goto wfail;
      written += (uint64_t)r;
      continue;
    }
    z.next_in = ib;
    z.avail_in = (uInt)r;
    for (;;) {
      if (ended) { /* concatenated gzip members are one file (gzip -c a b) */
        if (!z.avail_in) break;
        if (inflateReset(&z) != Z_OK) break;
        ended = 0;
      }
      z.next_out = ob;
      z.avail_out = IN_BLOCK;
      zr = inflate(&z, Z_NO_FLUSH);
      if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
        snprintf(err, err_len, "%s: %s after %llu compressed bytes (%s)", name,
                 written == 0 && read_bytes <= IN_BLOCK ? "not gzip or zlib data" : "corrupt compressed data",
                 (unsigned long long)(read_bytes - z.avail_in), z.msg ? z.msg : "zlib error");
        goto out;
      }
      size_t got = IN_BLOCK - z.avail_out;
      if (written + got > max) goto too_big;
      if (got && write_all(out, ob, got)) goto wfail;
      written += got;
      if (zr == Z_STREAM_END) {
        ended = 1;
        continue;
      }
      if (z.avail_out && !z.avail_in) break; /* all output out: more input wanted */
      if (zr == Z_BUF_ERROR && !got) break;  /* no progress possible */
    }
  }
  if (gz && !ended) {
    snprintf(err, err_len, "%s: truncated compressed data: it ends after %llu bytes (%llu decompressed) without "
             "the end of its stream", name, (unsigned long long)read_bytes, (unsigned long long)written);
    goto out;
  }
  rc = 0;
  goto out;
too_big:
  snprintf(err, err_len, "%s: more than %llu MiB %s: decompress or copy it to a file and name that", name,
           (unsigned long long)(max >> 20), gz ? "decompressed" : "on standard input");
  goto out;
wfail:
  snprintf(err, err_len, "%s: cannot hold it in memory: %s", name, strerror(errno));
out:
  if (zinit) inflateEnd(&z);
  free(ib);
  free(ob);
  return rc;
}

int lens_trace_input_spool(const char *path, uint64_t max_bytes, char *fd_path, size_t fd_path_len, char *err,
                           size_t err_len) {
  int is_stdin = !strcmp(path, "-"), in = -1, gz = !is_stdin;
  const char *name = is_stdin ? "standard input" : path;
  uint8_t head[2];
  size_t n_head = 0;
  if (is_stdin) {
    if (isatty(STDIN_FILENO)) {
      snprintf(err, err_len, "'-' reads a trace from standard input, which is a terminal here");
      return -1;
    }
    in = STDIN_FILENO;
    while (n_head < sizeof head) { /* sniff: gzip data starts 1f 8b */
      ssize_t r = read_some(in, head + n_head, sizeof head - n_head);
      if (r < 0) {
        snprintf(err, err_len, "cannot read standard input: %s", strerror(errno));
        return -1;
      }
      if (r == 0) break;
      n_head += (size_t)r;
    }
    gz = n_head == 2 && head[0] == 0x1f && head[1] == 0x8b;
  } else {
    /* O_NONBLOCK: a FIFO named x.gz must not hang the open; it is read as a stream. */
    in = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (in < 0) {
      snprintf(err, err_len, "cannot open trace %s: %s", path, strerror(errno));
      return -1;
    }
    int fl = fcntl(in, F_GETFL);
    if (fl >= 0) fcntl(in, F_SETFL, fl & ~O_NONBLOCK);
  }
  int fd = memfd_create(is_stdin ? "nccl-lens-stdin" : "nccl-lens-gunzip", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    snprintf(err, err_len, "%s: cannot make a memory file to hold it: %s", name, strerror(errno));
    if (!is_stdin) close(in);
    return -1;
  }
  int r = copy(in, fd, gz, head, n_head, max_bytes, name, err, err_len);
  if (!is_stdin) close(in);
  /* Sealed: nothing, this process included, changes its bytes while readers read them. */
  if (!r && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    snprintf(err, err_len, "%s: cannot seal its memory file: %s", name, strerror(errno));
    r = -1;
  }
  if (r) {
    close(fd);
    return -1;
  }
  snprintf(fd_path, fd_path_len, "/proc/self/fd/%d", fd);
  return fd;
}
