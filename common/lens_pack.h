/* The packed form of event records (LENS_CHUNK_EVENTS_PACKED, see
 * include/nccl-lens/trace_format.h and docs/trace-format.md): the fixed
 * records of one EVENTS chunk as a stream of varints, each field predicted
 * from the one before it in the same chunk (delta timestamps, ids as deltas
 * from the previous id, payload words as deltas from the previous record of
 * the same type, fields equal to their prediction left out). Lossless: the
 * decoder gives back the fixed records byte for byte, so every reader of
 * fixed records reads packed ones unchanged. Each chunk decodes on its own
 * (the predictors start from zero), so a cut trace or an evicted recorder
 * chunk loses nothing beyond itself.
 *
 * One encoder per writer thread; no allocation, no lock, no syscall. */
#ifndef NCCL_LENS_COMMON_PACK_H
#define NCCL_LENS_COMMON_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

#define LENS_PACK_MAX_PAYLOAD_WORDS 64 /* u32 words after struct lens_rec_start: 256 bytes */

struct lens_pack_pred {
  uint64_t ts, id, ctx;
  int32_t rank;
  uint32_t start_aux;
  uint64_t parent[LENS_T_COUNT];
  uint64_t arg[64]; /* STATE arg by state value & 63 */
  uint32_t payload[LENS_T_COUNT][LENS_PACK_MAX_PAYLOAD_WORDS];
};

struct lens_pack_enc {
  struct lens_pack_pred p;
  uint8_t *out, *end; /* output cursor and its limit */
  uint32_t count;      /* records encoded */
  uint32_t raw_bytes;  /* their size in fixed form */
  int overflow;        /* output too small: the chunk must be written in fixed form */
};

/* Payload bytes of the START records the plugin writes for an event type
 * (0 for an unknown type or one without payload). */
extern const uint16_t lens_pack_std_payload_bytes[LENS_T_COUNT];
static inline uint32_t lens_pack_std_payload(unsigned type) {
  return type < LENS_T_COUNT ? lens_pack_std_payload_bytes[type] : 0;
}

/* Bytes the packed form of fixed records totalling raw_bytes can take at most. */
static inline size_t lens_pack_bound(size_t raw_bytes) { return 2 * raw_bytes + 64; }

/* Starts a chunk: out[0..cap) receives the varint stream. */
void lens_pack_begin(struct lens_pack_enc *e, void *out, size_t cap);
/* Appends one record in fixed file form (ts in CLOCK_MONOTONIC, strings
 * interned); its h.size bytes are read. */
void lens_pack_rec(struct lens_pack_enc *e, const struct lens_rec_hdr *h);
/* Bytes of varint stream written so far. */
static inline size_t lens_pack_len(const struct lens_pack_enc *e, const void *out) {
  return (size_t)(e->out - (const uint8_t *)out);
}

/* Decodes count records from body[0..body_len) into out[0..out_cap) in
 * fixed form. Returns the records decoded; *out_len = their bytes. Stops
 * at the first malformed record (never reads or writes out of bounds). */
uint32_t lens_unpack(const void *body, size_t body_len, uint32_t count, void *out, size_t out_cap, size_t *out_len);

#endif
