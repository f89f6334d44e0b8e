/* Trace inputs that are not plain .lens files: "-" (standard input, plain or
 * gzip) and NAME.gz (gzip or zlib). Readers read traces by pread from files
 * they open by name, and may read one more than once; so each such input is
 * spooled, bounded, into a sealed anonymous memory file (memfd_create) that
 * every reader opens as /proc/self/fd/N: a regular file whose bytes cannot
 * change while it is read. */
#ifndef NCCL_LENS_TRACE_INPUT_H
#define NCCL_LENS_TRACE_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes one spooled input may hold (decompressed): it lives in
 * memory. Beyond it: an error line saying to decompress to a file. The
 * environment's NCCL_LENS_INPUT_MAX_MB (1..1048576) replaces it. */
#define LENS_TRACE_SPOOL_MAX (4ull << 30)
uint64_t lens_trace_input_max(void);

/* 1 when path is an input to spool: "-" or a name ending in ".gz", but
 * not ".json.gz" (a Kineto trace: its importer reads gzip itself). */
int lens_trace_input_needs_spool(const char *path);

/* Spools path ("-": standard input) into a sealed memfd of at most max_bytes:
 * gzip/zlib data is inflated (a .gz name must hold it; standard input is
 * inflated when it starts with the gzip magic). Returns the memfd (O_CLOEXEC)
 * and its openable name in fd_path, or -1 with one line in err (not gzip
 * data, a truncated or corrupt stream, over the limit, standard input a
 * terminal, a read error). */
int lens_trace_input_spool(const char *path, uint64_t max_bytes, char *fd_path, size_t fd_path_len, char *err,
                           size_t err_len);

#endif
