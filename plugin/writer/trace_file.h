/* The .lens file: <out_dir>/nccl-lens-<host>-<pid>.lens, opened O_APPEND.
 * An existing file (a re-init in the same process) is scanned so chunk
 * numbers continue and the new session gets the next number; a torn tail
 * (a process killed mid-write) is cut so appended chunks stay readable.
 * Only the writer thread calls these (and unit tests, with no writer): no
 * NCCL thread ever waits on this file's I/O. All writes are whole chunks.
 * A chunk that fails still uses up its number, so losses show as gaps in
 * the chunk numbers even when the DROPS that counts them is lost too; the
 * file header is retried until it is written. Errors are counted and logged
 * once; never fatal. */
#ifndef NCCL_LENS_PLUGIN_TRACE_FILE_H
#define NCCL_LENS_PLUGIN_TRACE_FILE_H

#include <stdint.h>

/* Opens (mkdir -p when needed) and prepares a new session. 0 ok, -1 no file
 * (logged; writes then only count write_errors). */
int lens_tf_open(const char *dir, const char *host, int pid);
uint32_t lens_tf_session(void);
/* Writes one chunk. 0 ok, -1 failed (counted in write_errors). */
int lens_tf_write(uint16_t type, const void *payload, uint32_t len);
/* Writes one chunk whose payload is the concatenation of n parts (n <= 4),
 * e.g. an EVENTS header and the ring spans that hold the records, so the
 * writer never copies them. Same result and errors as lens_tf_write. */
struct iovec;
int lens_tf_write_parts(uint16_t type, const struct iovec *parts, int n);
/* Chunks written in the current session. */
uint64_t lens_tf_chunks(void);
/* 1 while the open session writes to the recorder's store, not a file. */
int lens_tf_in_store(void);
/* Chunk writes returned so far (any session, failed ones too), lock-free:
 * grows while the file system takes chunks, stands still while a write
 * blocks in the kernel. */
uint64_t lens_tf_progress(void);
void lens_tf_close(void);
const char *lens_tf_path(void); /* absolute path, "" when none */
/* Writer, every 100 ms: 1 when the trace file was found removed (a new one
 * was started: the caller sends the session's metadata again). */
int lens_tf_check_removed(void);
/* Bytes written to trace files that were removed under us. */
uint64_t lens_tf_lost_bytes(void);
/* Recorder mode: writes the store as <dir>/nccl-lens-<host>-<pid>-dump<N>.lens
 * (path returned). 0 ok, -1 failed (counted, logged once). */
#include <stddef.h>
int lens_tf_dump(char *path, size_t cap);
/* Fork child: forget the parent's descriptor without touching its file. */
void lens_tf_reset_after_fork(void);

#endif
