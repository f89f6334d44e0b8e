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
#include "lens_unpack.h" /* the tag kinds, masks and zigzag, shared with the decoder */

#include <string.h>

/* Payload bytes of the START records the plugin writes, by type (flag bit
 * 0 says the record has this size and saves a byte). */
const uint16_t lens_pack_std_payload_bytes[LENS_T_COUNT] = {
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
  *o++ = LENS_PK_RAW << 6;
  o = put(o, h->size);
  memcpy(o, h, h->size);
  return o + h->size;
}

static uint8_t *enc_start(struct lens_pack_pred *p, uint8_t *o, const struct lens_rec_start *r) {
  unsigned type = r->h.type;
  uint32_t pbytes = r->h.size - (uint32_t)sizeof *r;
  uint32_t nw = pbytes / 4;
  uint8_t mask = 0;
  if (r->h.aux != p->start_aux) mask |= LENS_PK_M_AUX;
  if (r->parent != p->parent[type]) mask |= LENS_PK_M_PARENT;
  if (r->context != p->ctx) mask |= LENS_PK_M_CTX;
  if (r->rank != p->rank) mask |= LENS_PK_M_RANK;
  if (r->tid_slot_reserved) mask |= LENS_PK_M_RESERVED;
  unsigned std = pbytes == lens_pack_std_payload_bytes[type];
  *o++ = (uint8_t)(LENS_PK_START << 6 | type << 2 | (mask == 0) << 1 | std);
  uint64_t id = lens_pk_norm_id(r->id, type);
  o = put(o, lens_pk_zz((int64_t)(id - p->id)));
  o = put(o, lens_pk_zz((int64_t)(r->ts - p->ts)));
  p->id = id;
  p->ts = r->ts;
  if (!std) o = put(o, pbytes / 8);
  if (mask) {
    *o++ = mask;
    if (mask & LENS_PK_M_AUX) o = put(o, r->h.aux);
    if (mask & LENS_PK_M_PARENT) o = put(o, lens_pk_zz((int64_t)(r->parent - p->parent[type])));
    if (mask & LENS_PK_M_CTX) o = put(o, lens_pk_zz((int64_t)(r->context - p->ctx)));
    if (mask & LENS_PK_M_RANK) o = put(o, lens_pk_zz((int64_t)r->rank - (int64_t)p->rank));
    if (mask & LENS_PK_M_RESERVED) o = put(o, r->tid_slot_reserved);
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
    o = put(o, lens_pk_zz((int64_t)(int32_t)(w[i] - prev[i])));
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
    uint64_t id = lens_pk_norm_id(r->id, type);
    *o++ = (uint8_t)(LENS_PK_STOP << 6 | type << 2);
    o = put(o, lens_pk_zz((int64_t)(id - p->id)));
    o = put(o, lens_pk_zz((int64_t)(r->ts - p->ts)));
    p->id = id;
    p->ts = r->ts;
  } else if (h->kind == LENS_REC_STATE &&
             (h->size == sizeof(struct lens_rec_state) || h->size == sizeof(struct lens_rec_state_run))) {
    const struct lens_rec_state *r = (const void *)h;
    const struct lens_rec_state_run *run = h->size == sizeof *run ? (const void *)h : NULL;
    if (r->reserved || r->has_args > 1 || (!r->has_args && r->arg) || (run && !run->repeats)) {
      o = raw(o, h);
    } else {
      uint64_t id = lens_pk_norm_id(r->id, type);
      *o++ = (uint8_t)(LENS_PK_STATE << 6 | type << 2 | (run != NULL) << 1 | r->has_args);
      o = put(o, lens_pk_zz((int64_t)(id - p->id)));
      o = put(o, lens_pk_zz((int64_t)(r->ts - p->ts)));
      o = put(o, h->aux);
      p->id = id;
      p->ts = r->ts;
      if (r->has_args) {
        uint64_t *pa = &p->arg[h->aux & 63];
        o = put(o, lens_pk_zz((int64_t)(r->arg - *pa)));
        *pa = r->arg;
      }
      if (run) {
        o = put(o, run->repeats);
        o = put(o, lens_pk_zz((int64_t)(run->last_ts - r->ts)));
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

/* ---- decoding: lens_unpack.h's cursor, written out as fixed records ---- */

uint32_t lens_unpack(const void *body, size_t body_len, uint32_t count, void *out, size_t out_cap, size_t *out_len) {
  struct lens_unpack_cur c;
  struct lens_unpacked r;
  lens_unpack_init(&c, body, body_len, out_cap);
  uint8_t *o = out;
  uint32_t n = 0;
  /* Each record written field by field where it goes: a record built on
   * the stack and copied out stalled on every copy (its bytes were stored
   * in pieces and loaded whole), a sixth of the decoding. The cursor's room
   * (out_cap) guarantees the bytes. */
  for (; n < count && lens_unpack_next(&c, &r); n++) {
    lens_unpacked_write(&r, o);
    o += r.size;
  }
  *out_len = (size_t)(o - (uint8_t *)out);
  return n;
}
