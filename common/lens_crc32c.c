/* CRC-32C (Castagnoli, reflected 0x82F63B78) for every writer and the reader.
 * On x86-64 CPUs with SSE4.2 the crc32 instruction does 8 bytes at a time;
 * elsewhere a 256-entry table. Both give the same value (tests/reader
 * test_crc32c checks them against each other). The choice is made once, at
 * the first call; no hot path (NCCL callback) ever computes a CRC. */
#include <string.h>

#include "crc32c_fast.h"
#include "lens_chunk.h"

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

uint32_t lens_crc32c_table(uint32_t crc, const void *data, size_t len) {
  /* Building twice concurrently is harmless: both write the same values. */
  if (!__atomic_load_n(&crc_table_ready, __ATOMIC_ACQUIRE)) crc_table_build();
  const uint8_t *p = data;
  crc = ~crc;
  while (len--) crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

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

/* -1 not probed yet, 0 no, 1 yes. Racing first calls probe twice, same answer. */
static int have_hw = -1;

int lens_crc32c_hw_available(void) {
  int h = __atomic_load_n(&have_hw, __ATOMIC_RELAXED);
  if (h < 0) {
    __builtin_cpu_init();
    h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    __atomic_store_n(&have_hw, h, __ATOMIC_RELAXED);
  }
  return h;
}
#else
int lens_crc32c_hw_available(void) { return 0; }
#endif

uint32_t lens_crc32c(uint32_t crc, const void *data, size_t len) {
#if defined(__x86_64__)
  if (lens_crc32c_hw_available()) return crc_hw(crc, data, len);
#endif
  return lens_crc32c_table(crc, data, len);
}

/* Kept for the plugin's writer, which calls them by these names. */
uint32_t lens_crc32c_fast(uint32_t crc, const void *data, size_t len) { return lens_crc32c(crc, data, len); }

void lens_chunk_hdr_init_fast(struct lens_chunk_hdr *h, uint16_t type, uint32_t session, uint64_t seq,
                              const void *payload, uint32_t payload_len) {
  lens_chunk_hdr_init(h, type, session, seq, payload, payload_len);
}
