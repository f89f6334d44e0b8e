#include "lens_chunk.h"

#include <string.h>

/* Table-driven CRC-32C (Castagnoli, reflected 0x82F63B78). Built once; the
 * table is only used off the hot path (writer thread, reader). */
static uint32_t crc_table[256];
static int crc_table_ready;

static void crc_table_build(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc_table[i] = c;
  }
  __atomic_store_n(&crc_table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t lens_crc32c(uint32_t crc, const void *data, size_t len) {
  /* Building twice concurrently is harmless: both write the same values. */
  if (!__atomic_load_n(&crc_table_ready, __ATOMIC_ACQUIRE)) crc_table_build();
  const uint8_t *p = data;
  crc = ~crc;
  while (len--) crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

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
