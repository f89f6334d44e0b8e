/* A trace's chunks one at a time, through one reused buffer (bulk reading,
 * columns.h): the file is read in blocks with pread instead of whole into a
 * fresh allocation, so a file of any size costs a few MiB and no page
 * faults after the first block. Same checks as the general loader (load.c):
 * the file header, then each chunk's header CRC, length and payload CRC. A
 * chunk whose payload fails its CRC is skipped (its header, valid, says how
 * long it is); a header that fails its check is skipped by scanning forward,
 * 8 bytes at a time, to the next header that checks and whose payload fits
 * the file. Both are counted as damage (damaged_bytes, damaged_chunks), as
 * lens_file's are. A file cut short (a header or a payload past its end, or
 * a bad header with no valid one after it) is read up to its last whole
 * chunk, and the bytes after it are reported as cut, as
 * lens_file.truncated_bytes and .truncation are. */
#ifndef NCCL_LENS_READER_CHUNK_STREAM_H
#define NCCL_LENS_READER_CHUNK_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

struct lens_cstream {
  int fd;
  uint64_t size; /* the file's size when opened */
  struct lens_file_hdr fh;
  uint8_t *buf;
  size_t cap;          /* buffer bytes */
  size_t len, pos;     /* bytes held, and where the next chunk starts in them */
  uint64_t buf_off;    /* file offset of buf[0] */
  int eof;             /* pread returned 0: the file ends at buf_off + len */
  int borrowed;        /* buf is the caller's bytes (lens_cstream_open_mem): never read into nor freed */
  uint64_t expect_seq; /* the next chunk number the writer gave */
  int resynced;        /* a bad header was skipped: the next chunk's number gap is damage, not loss */
  /* Results, complete once lens_cstream_next has returned 0. */
  uint64_t lost_chunks;     /* gaps in the chunk numbers (chunks the writer could not write) */
  uint64_t truncated_bytes; /* bytes after the last whole, valid chunk */
  uint64_t damaged_bytes;   /* bytes skipped inside the file: chunks failing a CRC */
  uint64_t damaged_chunks;  /* chunks those bytes held (from the chunk numbers) */
  const char *truncation;   /* why the walk stopped early, NULL when it did not */
  uint64_t bytes;           /* bytes read from the file */
};

/* Opens path and checks its file header. 0, or -1 with a line in err (not a
 * regular file, unreadable, not a .lens trace, another format version). */
int lens_cstream_open(struct lens_cstream *s, const char *path, size_t block, char *err, size_t err_len);
/* The same walk over bytes already read (size of them, name for the
 * messages): the bytes stay the caller's, valid until the close. */
int lens_cstream_open_mem(struct lens_cstream *s, const uint8_t *bytes, size_t size, const char *name, char *err,
                          size_t err_len);
/* The next valid chunk: 1 with *h and *payload (valid until the next call),
 * 0 at the end (truncation set when cut), -1 on a read error or no memory
 * (err set). */
int lens_cstream_next(struct lens_cstream *s, struct lens_chunk_hdr *h, const uint8_t **payload, char *err,
                      size_t err_len);
void lens_cstream_close(struct lens_cstream *s);

#endif
