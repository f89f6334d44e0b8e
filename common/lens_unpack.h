/* The one decoder of the packed form (lens_pack.h, layout in lens_pack.c):
 * a cursor over one chunk's varint stream that gives back one record at a
 * time as its fields, with the predictors applied. lens_unpack (fixed
 * records, for the general model) and the columnar reader (straight into
 * its columns, tools/reader/columns.c) both read through it, so they accept
 * and refuse the same streams record for record. Inline: the caller's loop
 * and this one fold into one, and the fields stay in registers instead of
 * going through a fixed record in memory.
 *
 * Every read is bounds-checked (traces are input): a malformed record ends
 * the chunk (lens_unpack_next returns 0 from then on). */
#ifndef NCCL_LENS_COMMON_UNPACK_H
#define NCCL_LENS_COMMON_UNPACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lens_pack.h"

/* The tag byte's kind (tag >> 6) and a START's header-field mask. */
enum { LENS_PK_RAW = 0, LENS_PK_START = 1, LENS_PK_STOP = 2, LENS_PK_STATE = 3 };
enum { LENS_PK_M_AUX = 1, LENS_PK_M_PARENT = 2, LENS_PK_M_CTX = 4, LENS_PK_M_RANK = 8, LENS_PK_M_RESERVED = 16 };

static inline uint64_t lens_pk_zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t lens_pk_unzz(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }
/* Ids are predicted with their type bits cleared, so ids of different
 * types from one thread's sequence stay close. */
static inline uint64_t lens_pk_norm_id(uint64_t id, unsigned type) { return id ^ ((uint64_t)type << 56); }

struct lens_unpack_cur {
  const uint8_t *p, *end;
  size_t room; /* bytes of fixed records still allowed (the chunk's raw_bytes) */
  int bad;
  struct lens_pack_pred pred;
};

/* One record. kind: LENS_REC_START, _STOP, _STATE as decoded, or 0: a RAW
 * record, its fixed form at raw (size bytes, in the stream). size: the
 * record's bytes in fixed form. */
struct lens_unpacked {
  unsigned kind, type;
  uint32_t size;
  uint64_t id, ts;
  uint32_t aux;                   /* START: header aux; STATE: the state */
  uint64_t parent, ctx;           /* START */
  int32_t rank;                   /* START */
  uint32_t reserved;              /* START: tid_slot_reserved */
  const uint32_t *payload;        /* START: pbytes bytes, valid until the next record of this type */
  uint32_t pbytes;                /* START */
  uint64_t arg;                   /* STATE */
  uint32_t has_args;              /* STATE */
  uint32_t repeats, max_gap;      /* STATE run (size 56), else 0 */
  uint64_t last_ts;               /* STATE run */
  const uint8_t *raw;             /* RAW */
};

static inline void lens_unpack_init(struct lens_unpack_cur *c, const void *body, size_t len, size_t room) {
  c->p = body;
  c->end = (const uint8_t *)body + len;
  c->room = room;
  c->bad = 0;
  memset(&c->pred, 0, sizeof c->pred);
}

static inline uint64_t lens_pk_get_slow(struct lens_unpack_cur *c) {
  uint64_t v = 0;
  for (unsigned s = 0; s < 64; s += 7) {
    if (c->p >= c->end) {
      c->bad = 1;
      return 0;
    }
    uint8_t b = *c->p++;
    v |= (uint64_t)(b & 0x7F) << s;
    if (!(b & 0x80)) return v;
  }
  c->bad = 1; /* longer than 10 bytes */
  return 0;
}

/* Most values are one byte (deltas of predicted fields): that is one test.
 * A longer one (a timestamp's delta: 2-3 bytes) is read as one 8-byte word
 * without a branch per byte: its end is the first byte without the high
 * bit, the bytes after it are masked off, and the 7-bit groups are closed
 * up in three shift-and-mask steps. A loop of a byte per iteration
 * mispredicted its exit on most timestamps. With 8 bytes or more left the
 * word cannot run past the end; 9- and 10-byte values and the end of the
 * stream take the checked loop. */
static inline __attribute__((always_inline)) uint64_t lens_pk_get(struct lens_unpack_cur *c) {
  if (__builtin_expect(c->end - c->p >= 8, 1)) {
    uint64_t x;
    memcpy(&x, c->p, 8); /* little-endian: the first byte lowest */
    if (__builtin_expect(!(x & 0x80), 1)) {
      c->p++;
      return x & 0x7F;
    }
    uint64_t ends = ~x & 0x8080808080808080ull;
    if (__builtin_expect(ends != 0, 1)) {
      unsigned n = ((unsigned)__builtin_ctzll(ends) >> 3) + 1; /* bytes, 2..8 */
      x &= (ends ^ (ends - 1)) & 0x7F7F7F7F7F7F7F7Full;    /* n bytes' 7-bit groups */
      x = (x & 0x007F007F007F007Full) | ((x & 0x7F007F007F007F00ull) >> 1);
      x = (x & 0x00003FFF00003FFFull) | ((x & 0x3FFF00003FFF0000ull) >> 2);
      x = (x & 0x000000000FFFFFFFull) | ((x & 0x0FFFFFFF00000000ull) >> 4);
      c->p += n;
      return x;
    }
  }
  return lens_pk_get_slow(c);
}

/* A rank's zigzag delta, its low 32 bits (the writer's delta of two int32 ranks). */
static inline uint64_t lens_pk_get_rank_delta(struct lens_unpack_cur *c) { return (uint64_t)lens_pk_unzz(lens_pk_get(c)); }

/* The next record into *r: 1, or 0 at the end of the stream or at a
 * malformed record (or one that would pass the room left). Always inlined:
 * called, *r goes through memory and the caller waits on its loads. */
static inline __attribute__((always_inline)) int lens_unpack_next(struct lens_unpack_cur *c, struct lens_unpacked *r) {
  if (c->bad || c->p >= c->end) return 0;
  struct lens_pack_pred *p = &c->pred;
  uint8_t tag = *c->p++;
  unsigned kind = tag >> 6, type = (tag >> 2) & 0xF, fl = tag & 3;
  r->type = type;
  if (kind == LENS_PK_RAW) {
    uint64_t size = lens_pk_get(c);
    uint16_t hs;
    if (c->bad || size < sizeof(struct lens_rec_hdr) || size > (uint64_t)(c->end - c->p) || size > c->room)
      goto bad;
    memcpy(&hs, c->p, 2);
    if (hs != size) goto bad; /* the record's own size must agree */
    r->kind = 0;
    r->raw = c->p;
    r->size = (uint32_t)size;
    r->type = c->p[3];
    c->p += size;
    c->room -= size;
    return 1;
  }
  uint64_t id = (uint64_t)lens_pk_unzz(lens_pk_get(c)) + p->id;
  uint64_t ts = (uint64_t)lens_pk_unzz(lens_pk_get(c)) + p->ts;
  if (c->bad) goto bad;
  p->id = id;
  p->ts = ts;
  r->id = lens_pk_norm_id(id, type);
  r->ts = ts;
  if (kind == LENS_PK_STOP) {
    if (fl || c->room < sizeof(struct lens_rec_stop)) goto bad;
    r->kind = LENS_REC_STOP;
    r->size = sizeof(struct lens_rec_stop);
    r->aux = 0;
    r->arg = 0;
    r->has_args = r->repeats = 0;
    c->room -= sizeof(struct lens_rec_stop);
    return 1;
  }
  if (kind == LENS_PK_STATE) {
    uint64_t aux = lens_pk_get(c), arg = 0;
    if (fl & 1) {
      uint64_t *pa = &p->arg[aux & 63];
      arg = (uint64_t)lens_pk_unzz(lens_pk_get(c)) + *pa;
      *pa = arg;
    }
    uint64_t rep = 0, last_ts = 0, gap = 0;
    size_t size = sizeof(struct lens_rec_state);
    if (fl & 2) {
      rep = lens_pk_get(c);
      last_ts = ts + (uint64_t)lens_pk_unzz(lens_pk_get(c));
      gap = lens_pk_get(c);
      size = sizeof(struct lens_rec_state_run);
      if (!rep || rep > UINT32_MAX || gap > UINT32_MAX) goto bad;
    }
    if (c->bad || aux > UINT32_MAX || c->room < size) goto bad;
    r->kind = LENS_REC_STATE;
    r->size = (uint32_t)size;
    r->aux = (uint32_t)aux;
    r->arg = arg;
    r->has_args = fl & 1;
    r->repeats = (uint32_t)rep;
    r->max_gap = (uint32_t)gap;
    r->last_ts = last_ts;
    c->room -= size;
    return 1;
  }
  /* START */
  /* the word count checked before it is scaled: a huge one must not wrap to a small size */
  uint64_t pwords = (fl & 1) ? 0 : lens_pk_get(c);
  if (pwords > 4 * LENS_PACK_MAX_PAYLOAD_WORDS / 8) goto bad;
  uint64_t pbytes = (fl & 1) ? lens_pack_std_payload(type) : pwords * 8;
  if (c->bad || pbytes > 4 * LENS_PACK_MAX_PAYLOAD_WORDS || sizeof(struct lens_rec_start) + pbytes > c->room) goto bad;
  uint32_t reserved = 0;
  if (!(fl & 2)) {
    if (c->p >= c->end) goto bad;
    uint8_t mask = *c->p++;
    if (mask & LENS_PK_M_AUX) {
      uint64_t a = lens_pk_get(c);
      if (a > UINT32_MAX) goto bad;
      p->start_aux = (uint32_t)a;
    }
    if (mask & LENS_PK_M_PARENT) p->parent[type] += (uint64_t)lens_pk_unzz(lens_pk_get(c));
    if (mask & LENS_PK_M_CTX) p->ctx += (uint64_t)lens_pk_unzz(lens_pk_get(c));
    /* the rank's delta added modulo 2^32 (unsigned: a forged delta must not overflow) */
    if (mask & LENS_PK_M_RANK) p->rank = (int32_t)((uint32_t)p->rank + (uint32_t)lens_pk_get_rank_delta(c));
    if (mask & LENS_PK_M_RESERVED) {
      uint64_t v = lens_pk_get(c);
      if (v > UINT32_MAX) goto bad;
      reserved = (uint32_t)v;
    }
    if (c->bad || (mask & ~31u)) goto bad;
  }
  uint32_t nw = (uint32_t)(pbytes / 4), *prev = p->payload[type];
  uint64_t changed = lens_pk_get(c);
  if (c->bad || (nw < 64 && (changed >> nw))) goto bad;
  /* Only the words that changed: one bit each, lowest first. */
  while (changed) {
    unsigned i = (unsigned)__builtin_ctzll(changed);
    changed &= changed - 1;
    prev[i] += (uint32_t)lens_pk_unzz(lens_pk_get(c));
  }
  if (c->bad) goto bad;
  r->kind = LENS_REC_START;
  r->size = (uint32_t)(sizeof(struct lens_rec_start) + pbytes);
  r->aux = p->start_aux;
  r->parent = p->parent[type];
  r->ctx = p->ctx;
  r->rank = p->rank;
  r->reserved = reserved;
  r->payload = prev;
  r->pbytes = (uint32_t)pbytes;
  c->room -= r->size;
  return 1;
bad:
  c->bad = 1;
  return 0;
}

static inline void lens_pk_put64(uint8_t *o, uint64_t v) { memcpy(o, &v, 8); }
/* A lens_rec_hdr as one little-endian word: size, kind, type, aux. */
static inline uint64_t lens_pk_hdr64(size_t size, unsigned kind, unsigned type, uint32_t aux) {
  return (uint64_t)size | (uint64_t)kind << 16 | (uint64_t)type << 24 | (uint64_t)aux << 32;
}

/* A record from lens_unpack_next in its fixed form at o (r->size bytes):
 * lens_unpack writes every record so, a window's load (tools/reader/packed.c)
 * only those it builds. Each field written where it goes: a record built on
 * the stack and copied out stalled on every copy (its bytes were stored in
 * pieces and loaded whole), a sixth of the decoding. */
static inline __attribute__((always_inline)) void lens_unpacked_write(const struct lens_unpacked *r, uint8_t *o) {
  switch (r->kind) {
  case LENS_REC_STOP:
    lens_pk_put64(o, lens_pk_hdr64(r->size, LENS_REC_STOP, r->type, 0));
    lens_pk_put64(o + 8, r->id);
    lens_pk_put64(o + 16, r->ts);
    break;
  case LENS_REC_STATE:
    lens_pk_put64(o, lens_pk_hdr64(r->size, LENS_REC_STATE, r->type, r->aux));
    lens_pk_put64(o + 8, r->id);
    lens_pk_put64(o + 16, r->ts);
    lens_pk_put64(o + 24, r->arg);
    lens_pk_put64(o + 32, (uint64_t)r->has_args); /* reserved 0 */
    if (r->repeats) {
      lens_pk_put64(o + 40, r->last_ts);
      lens_pk_put64(o + 48, (uint64_t)r->repeats | (uint64_t)r->max_gap << 32);
    }
    break;
  case LENS_REC_START:
    lens_pk_put64(o, lens_pk_hdr64(r->size, LENS_REC_START, r->type, r->aux));
    lens_pk_put64(o + 8, r->id);
    lens_pk_put64(o + 16, r->parent);
    lens_pk_put64(o + 24, r->ctx);
    lens_pk_put64(o + 32, r->ts);
    lens_pk_put64(o + 40, (uint64_t)(uint32_t)r->rank | (uint64_t)r->reserved << 32);
    /* Word by word: payloads are a few 8-byte words, and a memcpy of a
     * variable size became a `rep movsq` whose start-up cost was a fifth
     * of the unpacking. */
    for (uint32_t k = 0; k < r->pbytes; k += 8) {
      uint64_t w;
      memcpy(&w, (const uint8_t *)r->payload + k, 8);
      lens_pk_put64(o + sizeof(struct lens_rec_start) + k, w);
    }
    break;
  default: memcpy(o, r->raw, r->size); break;
  }
}

#endif
