/* See lens_pack_chunk.h. */
#include "lens_pack_chunk.h"

void lens_pack_chunk(const struct lens_pack_enc *e, const void *stream, uint32_t slot, ZSTD_CCtx *zc,
                     int zstd_level, void *zbuf, size_t zcap, struct lens_packed_hdr *ph, const void **body,
                     size_t *body_len) {
  size_t len = lens_pack_len(e, stream);
  *ph = (struct lens_packed_hdr){slot, e->count, e->raw_bytes, (uint32_t)len, LENS_PACK_CODEC_VARINT, 0};
  *body = stream;
  *body_len = len;
  if (!zc || !zbuf) return;
  size_t z = ZSTD_compressCCtx(zc, zbuf, zcap, stream, len, zstd_level);
  if (!ZSTD_isError(z) && z < len) { /* else the varint stream as it is: zstd would only add */
    ph->codec = LENS_PACK_CODEC_ZSTD;
    *body = zbuf;
    *body_len = z;
  }
}
