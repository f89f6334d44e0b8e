#include "lens_chunk.h"

#include <string.h>

/* lens_crc32c lives in lens_crc32c.c (hardware CRC when the CPU has it). */

void lens_chunk_hdr_init(struct lens_chunk_hdr *h, uint16_t type, uint32_t session, uint64_t seq,
                         const void *payload, uint32_t payload_len) {
  memset(h, 0, sizeof(*h));
  h->magic = LENS_CHUNK_MAGIC;
  h->type = type;
  h->payload_len = payload_len;
  h->payload_crc = lens_crc32c(0, payload, payload_len);
  h->seq = seq;
  h->session = session;
  h->hdr_crc = lens_crc32c(0, h, offsetof(struct lens_chunk_hdr, hdr_crc));
}

int lens_chunk_hdr_check(const struct lens_chunk_hdr *h) {
  if (h->magic != LENS_CHUNK_MAGIC) return -1;
  if (h->hdr_crc != lens_crc32c(0, h, offsetof(struct lens_chunk_hdr, hdr_crc))) return -1;
  return 0;
}

int lens_chunk_payload_check(const struct lens_chunk_hdr *h, const void *payload) {
  return lens_crc32c(0, payload, h->payload_len) == h->payload_crc ? 0 : -1;
}

void lens_file_hdr_init(struct lens_file_hdr *fh, uint32_t producer, uint64_t created_real_ns) {
  memset(fh, 0, sizeof(*fh));
  memcpy(fh->magic, LENS_FILE_MAGIC, 8);
  fh->format_version = LENS_FORMAT_VERSION;
  fh->hdr_size = sizeof(*fh);
  fh->producer = producer;
  fh->created_real_ns = created_real_ns;
}

int lens_file_hdr_check(const struct lens_file_hdr *fh) {
  if (memcmp(fh->magic, LENS_FILE_MAGIC, 8) != 0) return -1;
  if (fh->format_version != LENS_FORMAT_VERSION || fh->hdr_size != sizeof(*fh)) return -1;
  return 0;
}
