/* Shared by the fuzz targets: the readers take paths (they read, map or
 * stat files), so each input is written to one file of a private temporary
 * directory, rewritten for every input. Output goes to /dev/null. */
#ifndef NCCL_LENS_FUZZ_UTIL_H
#define NCCL_LENS_FUZZ_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lens_chunk.h"
#include "nccl-lens/trace_format.h"

static char fuzz_dir[256];
static char fuzz_files[4][512]; /* written into it, removed with it at exit */

static void fuzz_cleanup(void) {
  for (int i = 0; i < 4; i++)
    if (fuzz_files[i][0]) unlink(fuzz_files[i]);
  if (fuzz_dir[0]) rmdir(fuzz_dir);
}

/* The directory, made once (under $TMPDIR, else /dev/shm when there, else /tmp). */
static inline const char *fuzz_tmpdir(void) {
  if (fuzz_dir[0]) return fuzz_dir;
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(fuzz_dir, sizeof fuzz_dir, "%s/lens-fuzz-XXXXXX", base);
  if (!mkdtemp(fuzz_dir)) {
    perror("mkdtemp");
    abort();
  }
  atexit(fuzz_cleanup);
  return fuzz_dir;
}

/* name in the directory holds exactly data[0..size). Returns the path (static). */
static inline const char *fuzz_write(const char *name, const uint8_t *data, size_t size) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", fuzz_tmpdir(), name);
  for (int i = 0; i < 4; i++) {
    if (!strcmp(fuzz_files[i], path)) break;
    if (!fuzz_files[i][0]) {
      snprintf(fuzz_files[i], sizeof fuzz_files[i], "%s", path);
      break;
    }
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    perror(path);
    abort();
  }
  for (size_t off = 0; off < size;) {
    ssize_t w = write(fd, data + off, size - off);
    if (w <= 0) {
      perror("write");
      abort();
    }
    off += (size_t)w;
  }
  close(fd);
  return path;
}

/* Chunk and section CRCs recomputed over what the input holds, so that a
 * mutation reaches the parsers instead of failing its CRC (the fixed copy is
 * what a writer of those bytes would have written). A chunk or section that
 * claims more bytes than remain ends the walk as it ends the reader's; past
 * a chunk without its magic the walk goes on at the next 8-byte aligned
 * magic, as the reader resynchronises on the next valid header (so the
 * chunks after a broken one reach the parsers too). */
static inline void fuzz_fix_trace_crcs(uint8_t *d, size_t n) {
  size_t off = sizeof(struct lens_file_hdr);
  struct lens_chunk_hdr h;
  while (off <= n && n - off >= sizeof h) {
    memcpy(&h, d + off, sizeof h);
    if (h.magic != LENS_CHUNK_MAGIC) {
      off += 8;
      continue;
    }
    if (h.payload_len > n - off - sizeof h) break;
    h.payload_crc = lens_crc32c(0, d + off + sizeof h, h.payload_len);
    h.hdr_crc = lens_crc32c(0, &h, offsetof(struct lens_chunk_hdr, hdr_crc));
    memcpy(d + off, &h, sizeof h);
    off += sizeof h + h.payload_len + lens_chunk_padding(h.payload_len);
  }
}
static inline void fuzz_fix_part_crcs(uint8_t *d, size_t n) {
  struct { uint32_t tag, crc; uint64_t count, len; } s;
  size_t off = 32; /* the partial's header */
  while (off <= n && n - off >= sizeof s) {
    memcpy(&s, d + off, sizeof s);
    if (s.len > n - off - sizeof s) break;
    s.crc = lens_crc32c(0, d + off + sizeof s, (size_t)s.len);
    memcpy(d + off, &s, sizeof s);
    if (!s.tag) break;
    off += sizeof s + (size_t)s.len;
  }
}

static inline FILE *fuzz_devnull(void) {
  static FILE *f;
  if (!f && !(f = fopen("/dev/null", "w"))) abort();
  return f;
}

#endif
