/* A run of packed step values (net_links.c: time in ns << 10 | a 10-bit
 * tag: size class and starved bit), kept compact in a net partial: the
 * partials of every host group are alive together until the merge, and at
 * 8 bytes a step they were a quarter of report's peak on a 10^8-event job
 * (docs/scale.md). Lossless.
 *
 * Each value: varint(delta of its time from the previous one's << 1 | the
 * tag changed), then the tag in 2 bytes when it changed. A link's steps are
 * sorted by time: the deltas are small, the tag repeats, about a byte a
 * step. Any order round-trips (deltas wrap modulo 2^54); a run starts from
 * time 0 and no tag. The bytes are only ever written by the encoder of the
 * same process (no file holds them). */
#ifndef NCCL_LENS_NET_STEP_RUNS_H
#define NCCL_LENS_NET_STEP_RUNS_H

#include <stddef.h>
#include <stdint.h>

#define LENS_NET_STEP_NS_BITS 54
#define LENS_NET_STEP_NS_MASK ((UINT64_C(1) << LENS_NET_STEP_NS_BITS) - 1)
#define LENS_NET_STEP_TAG_NONE 0xffffu /* before a run's first value: no 10-bit tag equals it */

struct lens_net_steps_cursor { uint64_t ns; unsigned tag; };

static inline void lens_net_steps_start(struct lens_net_steps_cursor *c) {
  c->ns = 0;
  c->tag = LENS_NET_STEP_TAG_NONE;
}

static inline size_t lens_net_steps_varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

/* Bytes x takes after the cursor's value; advances the cursor. */
static inline size_t lens_net_steps_len(struct lens_net_steps_cursor *c, uint64_t x) {
  uint64_t ns = x >> 10;
  unsigned tag = (unsigned)(x & 1023u);
  uint64_t code = ((ns - c->ns) & LENS_NET_STEP_NS_MASK) << 1 | (tag != c->tag);
  size_t n = lens_net_steps_varint_len(code) + (tag != c->tag ? 2 : 0);
  c->ns = ns, c->tag = tag;
  return n;
}

/* Writes x at out (room for lens_net_steps_len bytes); returns the end. */
static inline uint8_t *lens_net_steps_put(struct lens_net_steps_cursor *c, uint64_t x, uint8_t *out) {
  uint64_t ns = (x >> 10) & LENS_NET_STEP_NS_MASK;
  unsigned tag = (unsigned)(x & 1023u);
  int changed = tag != c->tag;
  uint64_t code = ((ns - c->ns) & LENS_NET_STEP_NS_MASK) << 1 | (uint64_t)changed;
  while (code >= 0x80) *out++ = (uint8_t)(code | 0x80), code >>= 7;
  *out++ = (uint8_t)code;
  if (changed) *out++ = (uint8_t)tag, *out++ = (uint8_t)(tag >> 8);
  c->ns = ns, c->tag = tag;
  return out;
}

/* Reads the value after the cursor's into *x; returns where the next begins. */
static inline const uint8_t *lens_net_steps_get(struct lens_net_steps_cursor *c, const uint8_t *q, uint64_t *x) {
  uint64_t code = 0;
  int shift = 0;
  for (;;) {
    uint8_t b = *q++;
    code |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80) || shift >= 56) break;
    shift += 7;
  }
  c->ns = (c->ns + (code >> 1)) & LENS_NET_STEP_NS_MASK;
  if (code & 1) c->tag = (unsigned)(q[0] | q[1] << 8) & 1023u, q += 2;
  *x = c->ns << 10 | c->tag;
  return q;
}

#endif
