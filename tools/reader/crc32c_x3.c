/* See crc32c_x3.h. */
#include "crc32c_x3.h"

#include <pthread.h>
#include <string.h>

#include "crc32c_fast.h"
#include "lens_chunk.h"

#if defined(__x86_64__)
/* Block lengths: a long one for big payloads, a short one for the rest
 * (zstd chunks are a few KiB). Each has a table that shifts a CRC state
 * over that many zero bytes, 4 KiB a table. */
#define LONG_LEN 8192
#define SHORT_LEN 256
static uint32_t zeros_long[4][256], zeros_short[4][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2"))) static uint32_t over_zeros(uint32_t state, size_t len) {
  uint64_t x = state;
  for (size_t i = 0; i < len / 8; i++) x = __builtin_ia32_crc32di(x, 0);
  return (uint32_t)x;
}

/* The shift is linear: its value for each of the 32 single-bit states,
 * then every byte value of every byte position as their XOR. */
static void build(uint32_t t[4][256], size_t len) {
  uint32_t bit[32];
  for (int i = 0; i < 32; i++) bit[i] = over_zeros(1u << i, len);
  for (int k = 0; k < 4; k++)
    for (int b = 0; b < 256; b++) {
      uint32_t v = 0;
      for (int i = 0; i < 8; i++)
        if (b >> i & 1) v ^= bit[8 * k + i];
      t[k][b] = v;
    }
}

static void build_tables(void) {
  build(zeros_long, LONG_LEN);
  build(zeros_short, SHORT_LEN);
}

static inline uint32_t shift(const uint32_t t[4][256], uint32_t c) {
  return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
}

static inline uint64_t ld(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* Blocks of 3 * len bytes: three streams, joined. */
#define BLOCKS(len, table)                                                 \
  while (n >= 3 * (len)) {                                                 \
    uint64_t c1 = 0, c2 = 0;                                               \
    for (const uint8_t *e = p + (len); p < e; p += 8) {                    \
      c0 = __builtin_ia32_crc32di(c0, ld(p));                              \
      c1 = __builtin_ia32_crc32di(c1, ld(p + (len)));                      \
      c2 = __builtin_ia32_crc32di(c2, ld(p + 2 * (len)));                  \
    }                                                                      \
    c0 = shift(table, (uint32_t)c0) ^ (uint32_t)c1;                        \
    c0 = shift(table, (uint32_t)c0) ^ (uint32_t)c2;                        \
    p += 2 * (len);                                                        \
    n -= 3 * (len);                                                        \
  }

__attribute__((target("sse4.2"))) static uint32_t crc_x3(uint32_t crc, const uint8_t *p, size_t n) {
  uint64_t c0 = (uint32_t)~crc;
  while (n && ((uintptr_t)p & 7)) {
    c0 = __builtin_ia32_crc32qi((uint32_t)c0, *p++);
    n--;
  }
  BLOCKS(LONG_LEN, zeros_long)
  BLOCKS(SHORT_LEN, zeros_short)
  for (; n >= 8; n -= 8, p += 8) c0 = __builtin_ia32_crc32di(c0, ld(p));
  while (n--) c0 = __builtin_ia32_crc32qi((uint32_t)c0, *p++);
  return ~(uint32_t)c0;
}

uint32_t lens_crc32c_x3(uint32_t crc, const void *data, size_t len) {
  if (len < 3 * SHORT_LEN || !lens_crc32c_hw_available()) return lens_crc32c(crc, data, len);
  pthread_once(&tables_once, build_tables);
  return crc_x3(crc, data, len);
}
#else
uint32_t lens_crc32c_x3(uint32_t crc, const void *data, size_t len) { return lens_crc32c(crc, data, len); }
#endif
