/* Reading an input file whole, safely: only regular files (a named pipe would
 * block for ever, /dev/zero never ends), bounded, and with pread rather than
 * mmap, so a file that shrinks while it is read (a live trace the plugin
 * truncates after a partial write) gives fewer bytes, never SIGBUS. */
#ifndef NCCL_LENS_FILE_READ_H
#define NCCL_LENS_FILE_READ_H

#include <stddef.h>
#include <stdint.h>

/* Reads up to max_bytes of a regular file into a malloc'd buffer (*data,
 * *len; *len may be less than the size at open when the file shrank).
 * Returns 0, or -1 with one line in err ("X is not a regular file (a named
 * pipe)", "X is 5 GiB, more than the 1 GiB limit", "cannot open X: reason"). */
int lens_read_regular_file(const char *path, uint64_t max_bytes, const char *what, uint8_t **data, size_t *len,
                           char *err, size_t err_len);

/* Why a file whose first bytes (head, n of them) are not a trace's header is
 * not one, for "X is not a .lens trace (...)": "bad magic", or, for JSON or
 * gzip, what it likely is and which commands read it (a torch.profiler
 * trace handed to summary is the common mistake). */
const char *lens_not_trace_why(const uint8_t *head, size_t n);

#endif
