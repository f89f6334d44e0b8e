#include "crc32c_fast.h"

#include <string.h>

#include "lens_chunk.h"

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len) {
  uint64_t c = ~crc;
  while (len && ((uintptr_t)p & 7)) {
    c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    len--;
  }
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
    p += 8;
    len -= 8;
  }
  while (len--) c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
  return ~(uint32_t)c;
}
#endif

uint32_t lens_crc32c_fast(uint32_t crc, const void *data, size_t len) {
#if defined(__x86_64__)
  static int have = -1;
  if (have < 0) {
    __builtin_cpu_init();
    have = __builtin_cpu_supports("sse4.2") ? 1 : 0;
  }
  if (have) return crc_hw(crc, data, len);
#endif
  return lens_crc32c(crc, data, len);
}

void lens_chunk_hdr_init_fast(struct lens_chunk_hdr *h, uint16_t type, uint32_t session, uint64_t seq,
                              const void *payload, uint32_t payload_len) {
  memset(h, 0, sizeof *h);
  h->magic = LENS_CHUNK_MAGIC;
  h->type = type;
  h->payload_len = payload_len;
  h->payload_crc = lens_crc32c_fast(0, payload, payload_len);
  h->seq = seq;
  h->session = session;
  h->hdr_crc = lens_crc32c_fast(0, h, offsetof(struct lens_chunk_hdr, hdr_crc));
}
