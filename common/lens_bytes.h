/* A growable byte buffer for building a record in memory (a cache key, a
 * memo entry): appends never fail on their own, the buffer remembers that
 * memory ran out, and the caller checks once at the end. */
#ifndef NCCL_LENS_BYTES_H
#define NCCL_LENS_BYTES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct lens_bytes {
  uint8_t *p;
  size_t n, cap;
  int oom; /* an append found no memory: p holds what came before it */
};

static inline void lens_bytes_put(struct lens_bytes *b, const void *v, size_t len) {
  if (b->oom || !len) return;
  if (len > SIZE_MAX / 2 - b->n) {
    b->oom = 1;
    return;
  }
  if (b->n + len > b->cap) {
    size_t c = b->cap ? b->cap * 2 : 256;
    while (c < b->n + len) c *= 2;
    uint8_t *q = realloc(b->p, c);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q, b->cap = c;
  }
  memcpy(b->p + b->n, v, len);
  b->n += len;
}

#endif
