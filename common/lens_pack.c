/* Packed event records (lens_pack.h). One record:
 *   tag byte = kind << 6 | type << 2 | flags
 *   kind 0 RAW:   varint size, then the fixed record's size bytes (anything
 *                 the forms below cannot hold exactly)
 *   kind 2 STOP:  id, ts                       (size 24, aux 0)
 *   kind 3 STATE: id, ts, varint state, [arg]  (size 40, reserved 0,
 *                 has_args 0 or 1 = flag bit 0, arg 0 when has_args is 0);
 *                 flag bit 1: a run (lens_rec_state_run, size 56), then
 *                 varint repeats, zigzag last_ts - ts, varint max_gap_ns
 *   kind 1 START: id, ts, [varint payload words / 2 unless flag bit 0],
 *                 [mask byte unless flag bit 1, then the header fields it
 *                 names], varint payload change mask, changed words
 * id: zigzag delta of (id ^ type << 56) from the previous record's; ts:
 * zigzag delta from the previous record's; everything else: zigzag delta
 * from the previous value of that field (payload words: of the previous
 * START of the same type). Zigzag keeps small negative deltas short. */
#include "lens_pack.h"

#include <string.h>

/* Payload bytes of the START records the plugin writes, by type (flag bit
 * 0 says the record has this size and saves a byte). */
static const uint16_t std_payload[LENS_T_COUNT] = {
    [LENS_T_GROUP] = sizeof(struct lens_p_group),
    [LENS_T_COLL] = sizeof(struct lens_p_coll),
    [LENS_T_P2P] = sizeof(struct lens_p_p2p),
    [LENS_T_PROXY_OP] = sizeof(struct lens_p_proxy_op),
    [LENS_T_PROXY_STEP] = sizeof(struct lens_p_proxy_step),
    [LENS_T_PROXY_CTRL] = 0,
    [LENS_T_KERNEL_CH] = sizeof(struct lens_p_kernel_ch),
    [LENS_T_NET_PLUGIN] = sizeof(struct lens_p_net_plugin),
    [LENS_T_GROUP_API] = sizeof(struct lens_p_group_api),
    [LENS_T_COLL_API] = sizeof(struct lens_p_coll_api),
    [LENS_T_P2P_API] = sizeof(struct lens_p_p2p_api),
    [LENS_T_KERNEL_LAUNCH] = sizeof(struct lens_p_kernel_launch),
    [LENS_T_CE_COLL] = sizeof(struct lens_p_ce_coll),
    [LENS_T_CE_SYNC] = sizeof(struct lens_p_ce_sync),
    [LENS_T_CE_BATCH] = sizeof(struct lens_p_ce_batch),
    [LENS_T_KERNEL_PHASE] = sizeof(struct lens_p_kernel_phase),
};

uint32_t lens_pack_std_payload(unsigned type) { return type < LENS_T_COUNT ? std_payload[type] : 0; }

enum { K_RAW = 0, K_START = 1, K_STOP = 2, K_STATE = 3 };
enum { M_AUX = 1, M_PARENT = 2, M_CTX = 4, M_RANK = 8, M_RESERVED = 16 };

static inline uint64_t zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t unzz(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }
static inline uint64_t norm_id(uint64_t id, unsigned type) { return id ^ ((uint64_t)type << 56); }

static inline uint8_t *put(uint8_t *o, uint64_t v) {
  while (v >= 0x80) {
    *o++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *o++ = (uint8_t)v;
  return o;
}

void lens_pack_begin(struct lens_pack_enc *e, void *out, size_t cap) {
  memset(&e->p, 0, sizeof e->p);
  e->out = out;
  e->end = (uint8_t *)out + cap;
  e->count = 0;
  e->raw_bytes = 0;
  e->overflow = 0;
}

static uint8_t *raw(uint8_t *o, const struct lens_rec_hdr *h) {
  *o++ = K_RAW << 6;
  o = put(o, h->size);
  memcpy(o, h, h->size);
  return o + h->size;
}

static uint8_t *enc_start(struct lens_pack_pred *p, uint8_t *o, const struct lens_rec_start *r) {
  unsigned type = r->h.type;
  uint32_t pbytes = r->h.size - (uint32_t)sizeof *r;
  uint32_t nw = pbytes / 4;
  uint8_t mask = 0;
  if (r->h.aux != p->start_aux) mask |= M_AUX;
  if (r->parent != p->parent[type]) mask |= M_PARENT;
  if (r->context != p->ctx) mask |= M_CTX;
  if (r->rank != p->rank) mask |= M_RANK;
  if (r->tid_slot_reserved) mask |= M_RESERVED;
  unsigned std = pbytes == std_payload[type];
  *o++ = (uint8_t)(K_START << 6 | type << 2 | (mask == 0) << 1 | std);
  uint64_t id = norm_id(r->id, type);
  o = put(o, zz((int64_t)(id - p->id)));
  o = put(o, zz((int64_t)(r->ts - p->ts)));
  p->id = id;
  p->ts = r->ts;
  if (!std) o = put(o, pbytes / 8);
  if (mask) {
    *o++ = mask;
    if (mask & M_AUX) o = put(o, r->h.aux);
    if (mask & M_PARENT) o = put(o, zz((int64_t)(r->parent - p->parent[type])));
    if (mask & M_CTX) o = put(o, zz((int64_t)(r->context - p->ctx)));
    if (mask & M_RANK) o = put(o, zz((int64_t)r->rank - (int64_t)p->rank));
    if (mask & M_RESERVED) o = put(o, r->tid_slot_reserved);
    p->start_aux = r->h.aux;
    p->parent[type] = r->parent;
    p->ctx = r->context;
    p->rank = r->rank;
  }
  const uint8_t *pl = (const uint8_t *)(r + 1);
  uint32_t *prev = p->payload[type];
  uint64_t changed = 0;
  uint32_t w[LENS_PACK_MAX_PAYLOAD_WORDS];
  for (uint32_t i = 0; i < nw; i++) {
    memcpy(&w[i], pl + 4 * i, 4);
    if (w[i] != prev[i]) changed |= 1ull << i;
  }
  o = put(o, changed);
  for (uint32_t i = 0; i < nw; i++) {
    if (!(changed >> i & 1)) continue;
    o = put(o, zz((int64_t)(int32_t)(w[i] - prev[i])));
    prev[i] = w[i];
  }
  return o;
}

void lens_pack_rec(struct lens_pack_enc *e, const struct lens_rec_hdr *h) {
  /* The worst case of any form is below 2 * size + 16 (lens_pack_bound). */
  if (e->overflow || (size_t)(e->end - e->out) < 2u * h->size + 16u) {
    e->overflow = 1;
    return;
  }
  struct lens_pack_pred *p = &e->p;
  uint8_t *o = e->out;
  unsigned type = h->type;
  if (type >= LENS_T_COUNT || h->size < sizeof *h || (h->size & 7)) {
    o = raw(o, h);
  } else if (h->kind == LENS_REC_STOP && h->size == sizeof(struct lens_rec_stop) && h->aux == 0) {
    const struct lens_rec_stop *r = (const void *)h;
    uint64_t id = norm_id(r->id, type);
    *o++ = (uint8_t)(K_STOP << 6 | type << 2);
    o = put(o, zz((int64_t)(id - p->id)));
    o = put(o, zz((int64_t)(r->ts - p->ts)));
    p->id = id;
    p->ts = r->ts;
  } else if (h->kind == LENS_REC_STATE &&
             (h->size == sizeof(struct lens_rec_state) || h->size == sizeof(struct lens_rec_state_run))) {
    const struct lens_rec_state *r = (const void *)h;
    const struct lens_rec_state_run *run = h->size == sizeof *run ? (const void *)h : NULL;
    if (r->reserved || r->has_args > 1 || (!r->has_args && r->arg) || (run && !run->repeats)) {
      o = raw(o, h);
    } else {
      uint64_t id = norm_id(r->id, type);
      *o++ = (uint8_t)(K_STATE << 6 | type << 2 | (run != NULL) << 1 | r->has_args);
      o = put(o, zz((int64_t)(id - p->id)));
      o = put(o, zz((int64_t)(r->ts - p->ts)));
      o = put(o, h->aux);
      p->id = id;
      p->ts = r->ts;
      if (r->has_args) {
        uint64_t *pa = &p->arg[h->aux & 63];
        o = put(o, zz((int64_t)(r->arg - *pa)));
        *pa = r->arg;
      }
      if (run) {
        o = put(o, run->repeats);
        o = put(o, zz((int64_t)(run->last_ts - r->ts)));
        o = put(o, run->max_gap_ns);
      }
    }
  } else if (h->kind == LENS_REC_START && h->size >= sizeof(struct lens_rec_start) &&
             h->size - sizeof(struct lens_rec_start) <= 4 * LENS_PACK_MAX_PAYLOAD_WORDS) {
    o = enc_start(p, o, (const struct lens_rec_start *)h);
  } else {
    o = raw(o, h);
  }
  e->out = o;
  e->count++;
  e->raw_bytes += h->size;
}

/* ---- decoding: every read and write is bounds-checked (traces are input) ---- */

struct rd {
  const uint8_t *p, *end;
  int bad;
};

static uint64_t get_slow(struct rd *r) {
  uint64_t v = 0;
  for (unsigned s = 0; s < 64; s += 7) {
    if (r->p >= r->end) {
      r->bad = 1;
      return 0;
    }
    uint8_t b = *r->p++;
    v |= (uint64_t)(b & 0x7F) << s;
    if (!(b & 0x80)) return v;
  }
  r->bad = 1; /* longer than 10 bytes */
  return 0;
}

/* Most values are one byte (deltas of predicted fields); with 10 bytes or
 * more left, a varint cannot run past the end, so no check per byte. */
static inline uint64_t get(struct rd *r) {
  if (__builtin_expect(r->end - r->p >= 10, 1)) {
    const uint8_t *q = r->p;
    uint64_t b = *q++;
    if (__builtin_expect(!(b & 0x80), 1)) {
      r->p = q;
      return b;
    }
    uint64_t v = b & 0x7F;
    for (unsigned s = 7; s < 64; s += 7) {
      b = *q++;
      v |= (b & 0x7F) << s;
      if (!(b & 0x80)) {
        r->p = q;
        return v;
      }
    }
    r->bad = 1; /* longer than 10 bytes */
    return 0;
  }
  return get_slow(r);
}

static inline void put64(uint8_t *o, uint64_t v) { memcpy(o, &v, 8); }
/* A lens_rec_hdr as one little-endian word: size, kind, type, aux. */
static inline uint64_t hdr64(size_t size, unsigned kind, unsigned type, uint32_t aux) {
  return (uint64_t)size | (uint64_t)kind << 16 | (uint64_t)type << 24 | (uint64_t)aux << 32;
}

uint32_t lens_unpack(const void *body, size_t body_len, uint32_t count, void *out, size_t out_cap, size_t *out_len) {
  static struct lens_pack_pred zero;
  struct lens_pack_pred p = zero;
  struct rd r = {body, (const uint8_t *)body + body_len, 0};
  uint8_t *o = out, *oend = (uint8_t *)out + out_cap;
  uint32_t n = 0;
  for (; n < count; n++) {
    if (r.p >= r.end) break;
    uint8_t tag = *r.p++;
    unsigned kind = tag >> 6, type = (tag >> 2) & 0xF, fl = tag & 3;
    if (kind == K_RAW) {
      uint64_t size = get(&r);
      if (r.bad || size < sizeof(struct lens_rec_hdr) || size > (uint64_t)(r.end - r.p) ||
          size > (uint64_t)(oend - o))
        break;
      memcpy(o, r.p, size);
      uint16_t hs;
      memcpy(&hs, o, 2);
      if (hs != size) break; /* the record's own size must agree */
      r.p += size;
      o += size;
      continue;
    }
    uint64_t id = (uint64_t)unzz(get(&r)) + p.id;
    uint64_t ts = (uint64_t)unzz(get(&r)) + p.ts;
    if (r.bad) break;
    p.id = id;
    p.ts = ts;
    id = norm_id(id, type);
    if (kind == K_STOP) {
      if (fl || (size_t)(oend - o) < sizeof(struct lens_rec_stop)) break;
      put64(o, hdr64(sizeof(struct lens_rec_stop), LENS_REC_STOP, type, 0));
      put64(o + 8, id);
      put64(o + 16, ts);
      o += sizeof(struct lens_rec_stop);
      continue;
    }
    if (kind == K_STATE) {
      uint64_t aux = get(&r), arg = 0;
      if (fl & 1) {
        uint64_t *pa = &p.arg[aux & 63];
        arg = (uint64_t)unzz(get(&r)) + *pa;
        *pa = arg;
      }
      uint64_t rep = 0, last_ts = 0, gap = 0;
      size_t size = sizeof(struct lens_rec_state);
      if (fl & 2) {
        rep = get(&r);
        last_ts = ts + (uint64_t)unzz(get(&r));
        gap = get(&r);
        size = sizeof(struct lens_rec_state_run);
        if (!rep || rep > UINT32_MAX || gap > UINT32_MAX) break;
      }
      if (r.bad || aux > UINT32_MAX || (size_t)(oend - o) < size) break;
      /* Written field by field where it goes: a record built on the stack
       * and copied out stalled on every copy (its bytes were stored in
       * pieces and loaded whole), a sixth of the decoding. */
      put64(o, hdr64(size, LENS_REC_STATE, type, (uint32_t)aux));
      put64(o + 8, id);
      put64(o + 16, ts);
      put64(o + 24, arg);
      put64(o + 32, (uint64_t)(fl & 1)); /* has_args, reserved 0 */
      if (fl & 2) {
        put64(o + 40, last_ts);
        put64(o + 48, rep | gap << 32);
      }
      o += size;
      continue;
    }
    /* START */
    uint64_t pbytes = (fl & 1) ? std_payload[type] : get(&r) * 8;
    if (r.bad || pbytes > 4 * LENS_PACK_MAX_PAYLOAD_WORDS || sizeof(struct lens_rec_start) + pbytes > (uint64_t)(oend - o))
      break;
    uint32_t reserved = 0;
    if (!(fl & 2)) {
      if (r.p >= r.end) break;
      uint8_t mask = *r.p++;
      if (mask & M_AUX) {
        uint64_t a = get(&r);
        if (a > UINT32_MAX) break;
        p.start_aux = (uint32_t)a;
      }
      if (mask & M_PARENT) p.parent[type] += (uint64_t)unzz(get(&r));
      if (mask & M_CTX) p.ctx += (uint64_t)unzz(get(&r));
      if (mask & M_RANK) p.rank = (int32_t)((int64_t)p.rank + unzz(get(&r)));
      if (mask & M_RESERVED) {
        uint64_t v = get(&r);
        if (v > UINT32_MAX) break;
        reserved = (uint32_t)v;
      }
      if (r.bad || (mask & ~31u)) break;
    }
    uint32_t nw = (uint32_t)(pbytes / 4), *prev = p.payload[type];
    uint64_t changed = get(&r);
    if (r.bad || (nw < 64 && (changed >> nw))) break;
    for (uint32_t i = 0; i < nw && !r.bad; i++)
      if (changed >> i & 1) prev[i] += (uint32_t)unzz(get(&r));
    if (r.bad) break;
    /* A lens_rec_start, field by field where it goes (as STATE above). */
    put64(o, hdr64(sizeof(struct lens_rec_start) + pbytes, LENS_REC_START, type, p.start_aux));
    put64(o + 8, id);
    put64(o + 16, p.parent[type]);
    put64(o + 24, p.ctx);
    put64(o + 32, ts);
    put64(o + 40, (uint64_t)(uint32_t)p.rank | (uint64_t)reserved << 32);
    memcpy(o + sizeof(struct lens_rec_start), prev, pbytes);
    o += sizeof(struct lens_rec_start) + pbytes;
  }
  *out_len = (size_t)(o - (uint8_t *)out);
  return n;
}
