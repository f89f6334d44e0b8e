/* See file_read.h. */
#include "file_read.h"
#include "reader_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "a named pipe";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISDIR(m)) return "a directory";
  return "not a plain file";
}

int lens_read_regular_file(const char *path, uint64_t max_bytes, const char *what, uint8_t **data, size_t *len,
                           char *err, size_t err_len) {
  *data = NULL;
  *len = 0;
  /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(err, err_len, "cannot open %s %s: %s", what, path, strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st)) {
    snprintf(err, err_len, "cannot open %s %s: %s", what, path, strerror(errno));
    close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, err_len, "%s %s is not a regular file (%s)", what, path, kind_of(st.st_mode));
    close(fd);
    return -1;
  }
  uint64_t size = (uint64_t)st.st_size;
  if (size > max_bytes) {
    snprintf(err, err_len, "%s %s is %llu MiB, more than the %llu MiB this reader takes", what, path,
             (unsigned long long)(size >> 20), (unsigned long long)(max_bytes >> 20));
    close(fd);
    return -1;
  }
  uint8_t *buf = malloc(size ? (size_t)size : 1);
  if (buf) lens_hugepage_hint(buf, (size_t)size);
  if (!buf) {
    snprintf(err, err_len, "out of memory reading %s %s (%llu bytes)", what, path, (unsigned long long)size);
    close(fd);
    return -1;
  }
  size_t got = 0;
  while (got < size) {
    ssize_t r = pread(fd, buf + got, (size_t)(size - got), (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      snprintf(err, err_len, "cannot read %s %s: %s", what, path, strerror(errno));
      free(buf);
      close(fd);
      return -1;
    }
    if (r == 0) break; /* shrank since fstat: what is there is what we read */
    got += (size_t)r;
  }
  close(fd);
  *data = buf;
  *len = got;
  return 0;
}

const char *lens_not_trace_why(const uint8_t *head, size_t n) {
  size_t i = 0;
  while (i < n && i < 64 && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) i++;
  if (i < n && (head[i] == '{' || head[i] == '['))
    return "bad magic: JSON, a torch.profiler (Kineto) trace? nccl-lens job reads those, and export --format kineto "
           "merges a run's traces into them";
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b)
    return "bad magic: gzip-compressed; a .json.gz torch.profiler (Kineto) trace is read by nccl-lens job and "
           "export --format kineto";
  return "bad magic";
}
