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
/* The writer's zstd frames (NCCL_LENS_COMPRESS=packed|zstd): a thread slot's
 * packed records stay in one open frame across the writer's passes until it
 * holds LENS_FRAME_STREAM_BYTES of varint stream (zstd's decompressed size)
 * or LENS_FRAME_RAW_MAX of fixed records, and at most about
 * LENS_FRAME_MAX_AGE_MS (writer.c writes every open frame that often). Chosen
 * by measurement (bench/scale/lens_frame_bench.c, docs/trace-format.md
 * "Frame size"): on the replay's `all` scenario, 64 KiB frames are about
 * 30 % smaller than one frame a writer pass (median 1 KiB) and decode 15 %
 * faster; 256 KiB gain little more and keep 4 times as many events in the
 * open frame, which is what a SIGKILL loses. */
#define LENS_FRAME_STREAM_BYTES (64 * 1024)
#define LENS_FRAME_RAW_MAX (2u << 20)
#define LENS_FRAME_MAX_AGE_MS 100
/* NCCL_LENS_ZSTD_LEVEL's default: zstd's first "fast" level. Against
 * level 1 it writes 13 % more bytes (replay `all`), its zstd costs the
 * writer 40 % less, and zstd decodes it 1.9-2.3 times faster: at level 1
 * zstd's own decoding was a quarter to a half of a reader's pass over the
 * columns (docs/scale.md, "zstd level"). Negative levels leave literals
 * without Huffman coding, which is most of what a small frame spends
 * decoding. */
#define LENS_ZSTD_LEVEL_DEFAULT (-1)
#define LENS_ZSTD_LEVEL_MIN (-50)
#define LENS_ZSTD_LEVEL_MAX 19

/* Fills *ph for slot and points *body at what follows it in the chunk:
 * stream[0..lens_pack_len) as it is, or its zstd frame (at zstd_level) in
 * zbuf[0..zcap) when zc is not NULL and the frame is smaller. Never fails:
 * a zstd error leaves the stream as it is. */
void lens_pack_chunk(const struct lens_pack_enc *e, const void *stream, uint32_t slot, ZSTD_CCtx *zc,
                     int zstd_level, void *zbuf, size_t zcap, struct lens_packed_hdr *ph, const void **body,
                     size_t *body_len);

#endif
