/* EVENTS_PACKED chunks (NCCL_LENS_COMPRESS=packed|zstd): unzstd, unpack
 * into the fixed records of an EVENTS chunk (common/lens_pack.c), then read
 * them as one (records.c), so nothing after this file knows the difference.
 * The buffers are the builder's, reused from chunk to chunk. */
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "lens_pack.h"
#include "reader_priv.h"

/* Sizes a writer never exceeds by far (its chunks hold at most 256 KiB of
 * fixed records); larger claims are malformed input, not a reason to
 * allocate. */
#define LENS_UNPACK_MAX (64u << 20)

static int grow(uint8_t **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  uint8_t *n = realloc(*buf, need);
  if (!n) return -1;
  *buf = n;
  *cap = need;
  return 0;
}

int lens_read_packed_chunk(struct lens_builder *b, const struct lens_chunk_hdr *hp, const uint8_t *p, uint32_t len) {
  struct lens_packed_hdr ph;
  if (len < sizeof ph) {
    b->m->bad_records++;
    return 0;
  }
  memcpy(&ph, p, sizeof ph);
  const uint8_t *body = p + sizeof ph;
  size_t body_len = len - sizeof ph;
  if (ph.raw_bytes > LENS_UNPACK_MAX || ph.body_bytes > LENS_UNPACK_MAX ||
      (ph.codec != LENS_PACK_CODEC_VARINT && ph.codec != LENS_PACK_CODEC_ZSTD)) {
    b->m->bad_records += ph.count;
    return 0;
  }
  if (ph.codec == LENS_PACK_CODEC_ZSTD) {
    if (grow(&b->unzstd, &b->cap_unzstd, ph.body_bytes ? ph.body_bytes : 1)) return lens_builder_oom(b);
    /* One context for the load: ZSTD_decompress makes and frees one per call. */
    if (!b->dctx && !(b->dctx = ZSTD_createDCtx())) return lens_builder_oom(b);
    size_t got = ZSTD_decompressDCtx(b->dctx, b->unzstd, ph.body_bytes, body, body_len);
    if (ZSTD_isError(got) || got != ph.body_bytes) {
      b->m->bad_records += ph.count;
      return 0;
    }
    body = b->unzstd;
    body_len = got;
  }
  struct lens_events_hdr eh = {ph.slot, 0};
  if (grow(&b->unpack, &b->cap_unpack, sizeof eh + (size_t)ph.raw_bytes)) return lens_builder_oom(b);
  size_t out_len = 0;
  eh.count = lens_unpack(body, body_len, ph.count, b->unpack + sizeof eh, ph.raw_bytes, &out_len);
  b->m->bad_records += ph.count - eh.count; /* the records after a malformed one */
  memcpy(b->unpack, &eh, sizeof eh);
  return lens_read_events_chunk(b, hp, b->unpack, (uint32_t)(sizeof eh + out_len));
}

void lens_packed_release(struct lens_builder *b) {
  free(b->unpack);
  free(b->unzstd);
  ZSTD_freeDCtx(b->dctx);
  b->dctx = NULL;
  b->unpack = b->unzstd = NULL;
  b->cap_unpack = b->cap_unzstd = 0;
}
