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

#endif
