/* See trace_size.h. */
#include "trace_size.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lens_chunk.h"
#include "nccl-lens/trace_format.h"

uint64_t lens_trace_fixed_bytes(const char *path, uint64_t limit) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    close(fd);
    return 0;
  }
  uint64_t size = (uint64_t)st.st_size, sum = 0, off = sizeof(struct lens_file_hdr);
  struct lens_file_hdr fh;
  if (size < off || pread(fd, &fh, sizeof fh, 0) != (ssize_t)sizeof fh || lens_file_hdr_check(&fh)) {
    close(fd);
    return size;
  }
  sum = off;
  uint8_t b[sizeof(struct lens_chunk_hdr) + sizeof(struct lens_packed_hdr)];
  while (off < size && sum <= limit) {
    struct lens_chunk_hdr h;
    ssize_t got = pread(fd, b, sizeof b, (off_t)off);
    if (got < (ssize_t)sizeof h) break;
    memcpy(&h, b, sizeof h);
    uint64_t whole = sizeof h + (uint64_t)h.payload_len + lens_chunk_padding(h.payload_len);
    if (lens_chunk_hdr_check(&h) || whole > size - off) break;
    if (h.type == LENS_CHUNK_EVENTS_PACKED && h.payload_len >= sizeof(struct lens_packed_hdr) &&
        got == (ssize_t)sizeof b) {
      struct lens_packed_hdr ph;
      memcpy(&ph, b + sizeof h, sizeof ph);
      sum += sizeof h + sizeof(struct lens_events_hdr) + ph.raw_bytes; /* the EVENTS chunk it stands for */
    } else {
      sum += whole;
    }
    off += whole;
  }
  if (off < size && sum <= limit) sum += size - off; /* the rest as it is */
  close(fd);
  return sum;
}
