/* One EVENTS_PACKED chunk from a finished encoder (lens_pack.h): its
 * header, and its body as the varint stream or, with zstd, one zstd frame
 * of it when that is smaller. The plugin's writer and lens-gen-job (the
 * synthetic traces of docs/scale.md) both write chunks through this, so the
 * benchmarks read what the plugin writes. */
#ifndef NCCL_LENS_COMMON_PACK_CHUNK_H
#define NCCL_LENS_COMMON_PACK_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include <zstd.h>

#include "lens_pack.h"

/* The most bytes of fixed records, with their 8-byte lens_events_hdr, that
 * the writer puts in one EVENTS or EVENTS_PACKED chunk (also at most half a
 * ring): what a busy thread's chunk holds. */
#define LENS_EVENTS_CHUNK_MAX (256 * 1024)
/* zstd's fastest level of the normal range: at 10 M events/s the writer
 * has about 50 ns an event. */
#define LENS_ZSTD_LEVEL 1

/* Fills *ph for slot and points *body at what follows it in the chunk:
 * stream[0..lens_pack_len) as it is, or its zstd frame in zbuf[0..zcap)
 * when zc is not NULL and the frame is smaller. Never fails: a zstd error
 * leaves the stream as it is. */
void lens_pack_chunk(const struct lens_pack_enc *e, const void *stream, uint32_t slot, ZSTD_CCtx *zc, void *zbuf,
                     size_t zcap, struct lens_packed_hdr *ph, const void **body, size_t *body_len);

#endif
