/* See pb_write.h. */
#include "export/pb_write.h"

#include <stdlib.h>
#include <string.h>

void pb_reset(struct pb *p) { p->n = 0; }
void pb_free(struct pb *p) {
  free(p->b);
  memset(p, 0, sizeof *p);
}

static int room(struct pb *p, size_t k) {
  if (p->n + k <= p->cap) return 1;
  size_t c = p->cap ? p->cap : 256;
  while (c < p->n + k) c *= 2;
  uint8_t *nb = realloc(p->b, c);
  if (!nb) return p->oom = 1, 0;
  p->b = nb, p->cap = c;
  return 1;
}

static void raw_varint(struct pb *p, uint64_t v) {
  if (!room(p, 10)) return;
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    p->b[p->n++] = c | (v ? 0x80 : 0);
  } while (v);
}

void pb_varint(struct pb *p, uint32_t field, uint64_t v) {
  raw_varint(p, (uint64_t)field << 3 | 0);
  raw_varint(p, v);
}

void pb_sint(struct pb *p, uint32_t field, int64_t v) { pb_varint(p, field, (uint64_t)v); }

void pb_fixed64(struct pb *p, uint32_t field, uint64_t v) {
  raw_varint(p, (uint64_t)field << 3 | 1);
  if (!room(p, 8)) return;
  for (int i = 0; i < 8; i++) p->b[p->n++] = (uint8_t)(v >> (8 * i));
}

void pb_bytes(struct pb *p, uint32_t field, const void *d, size_t n) {
  raw_varint(p, (uint64_t)field << 3 | 2);
  raw_varint(p, n);
  if (!n || !room(p, n)) return;
  memcpy(p->b + p->n, d, n);
  p->n += n;
}

void pb_str(struct pb *p, uint32_t field, const char *s) { pb_bytes(p, field, s ? s : "", s ? strlen(s) : 0); }

void pb_msg(struct pb *p, uint32_t field, const struct pb *m) {
  if (m->oom) p->oom = 1;
  pb_bytes(p, field, m->b, m->n);
}
