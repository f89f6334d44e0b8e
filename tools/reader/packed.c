/* EVENTS_PACKED chunks (NCCL_LENS_COMPRESS=packed|zstd): header checks and
 * unzstd (lens_unpack_body, for both readers), then for the general model
 * an unpack into the fixed records of an EVENTS chunk (common/lens_pack.c),
 * read as one (records.c), so nothing after this file knows the
 * difference; the columnar reader decodes the varint stream itself
 * (common/lens_unpack.h). The buffers are the reader's, reused from chunk
 * to chunk. */
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "lens_pack.h"
#include "lens_unpack.h"
#include "reader_priv.h"


static int grow(uint8_t **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  uint8_t *n = realloc(*buf, need);
  if (!n) return -1;
  *buf = n;
  *cap = need;
  return 0;
}

int lens_unpack_body(struct lens_unpacker *u, const uint8_t *p, uint32_t len, uint64_t *bad,
                     struct lens_packed_hdr *ph, const uint8_t **body, size_t *body_len) {
  if (len < sizeof *ph) {
    (*bad)++;
    return 0;
  }
  memcpy(ph, p, sizeof *ph);
  *body = p + sizeof *ph;
  *body_len = len - sizeof *ph;
  if (ph->raw_bytes > LENS_UNPACK_MAX || ph->body_bytes > LENS_UNPACK_MAX ||
      (ph->codec != LENS_PACK_CODEC_VARINT && ph->codec != LENS_PACK_CODEC_ZSTD)) {
    *bad += ph->count;
    return 0;
  }
  if (ph->codec == LENS_PACK_CODEC_ZSTD) {
    if (grow(&u->unzstd, &u->cap_unzstd, ph->body_bytes ? ph->body_bytes : 1)) return -1;
    /* One context for the load: ZSTD_decompress makes and frees one per
     * call, which cost as much as the decompression of a chunk of a few KiB. */
    if (!u->dctx && !(u->dctx = ZSTD_createDCtx())) return -1;
    size_t got = ZSTD_decompressDCtx(u->dctx, u->unzstd, ph->body_bytes, *body, *body_len);
    if (ZSTD_isError(got) || got != ph->body_bytes) {
      *bad += ph->count;
      return 0;
    }
    *body = u->unzstd;
    *body_len = got;
  }
  return 1;
}

int lens_unpack_chunk(struct lens_unpacker *u, const uint8_t *p, uint32_t len, uint64_t *bad, const uint8_t **out,
                      uint32_t *out_len) {
  struct lens_packed_hdr ph;
  const uint8_t *body;
  size_t body_len;
  int r = lens_unpack_body(u, p, len, bad, &ph, &body, &body_len);
  if (r <= 0) return r;
  struct lens_events_hdr eh = {ph.slot, 0};
  if (grow(&u->unpack, &u->cap_unpack, sizeof eh + (size_t)ph.raw_bytes)) return -1;
  size_t got = 0;
  eh.count = lens_unpack(body, body_len, ph.count, u->unpack + sizeof eh, ph.raw_bytes, &got);
  *bad += ph.count - eh.count; /* the records after a malformed one */
  memcpy(u->unpack, &eh, sizeof eh);
  *out = u->unpack;
  *out_len = (uint32_t)(sizeof eh + got);
  return 1;
}

int lens_read_packed_chunk(struct lens_builder *b, const struct lens_chunk_hdr *hp, const uint8_t *p, uint32_t len) {
  const uint8_t *ev;
  uint32_t ev_len;
  int r = lens_unpack_chunk(&b->unpacker, p, len, &b->m->bad_records, &ev, &ev_len);
  if (r < 0) return lens_builder_oom(b);
  return r ? lens_read_events_chunk(b, hp, ev, ev_len) : 0;
}

/* A window's scan (window.c) reads the decoder's fields straight into its
 * hooks, without writing fixed records and parsing them again (a third of
 * its time). The hooks get what lens_read_events_chunk gives them when it
 * reads lens_unpack_chunk's records, record for record: a RAW record (its
 * fixed form in the stream) is read as one, and a record whose size is not
 * a multiple of 8 ends the chunk there as it ends lens_read_events_chunk's
 * walk. Decoded STARTs, STOPs and STATEs are well formed by construction
 * (lens_unpack_next), and their fields are the ones lens_unpack writes. */
/* A window's packed chunk opened: its header copied, its varint stream
 * unzstd'd, a cursor on it. 1, 0 (nothing to read: counted bad) or -1. */
static int open_packed(struct lens_builder *b, const struct lens_chunk_hdr *hp, const uint8_t *p, uint32_t len,
                       struct lens_chunk_hdr *h, struct lens_packed_hdr *ph, struct lens_unpack_cur *c) {
  memcpy(h, hp, sizeof *h);
  const uint8_t *body;
  size_t body_len;
  int r = lens_unpack_body(&b->unpacker, p, len, &b->m->bad_records, ph, &body, &body_len);
  if (r <= 0) return r < 0 ? lens_builder_oom(b) : 0;
  lens_unpack_init(c, body, body_len, ph->raw_bytes);
  return 1;
}

/* The window's hook for one decoded START, STOP or STATE record, given as
 * lens_read_events_chunk would give it: lens_win_start or lens_win_pend's
 * answer; a START of an unknown type answers unknown (the scan takes none,
 * the build passes it on to be counted as the reader counts it). */
static int win_ask(struct lens_builder *b, uint32_t session, int32_t thread, const struct lens_unpacked *u,
                   int unknown) {
  if (u->kind != LENS_REC_START)
    return u->kind == LENS_REC_STATE ? lens_win_pend(b, session, u->kind, u->id, u->ts, u->aux, u->arg, u->has_args)
                                     : lens_win_pend(b, session, u->kind, u->id, u->ts, 0, 0, 0);
  if (u->type >= LENS_T_COUNT) return unknown;
  struct lens_rec_start s = {.h = {.size = (uint16_t)u->size, .kind = LENS_REC_START, .type = (uint8_t)u->type,
                                   .aux = u->aux},
                             .id = u->id, .parent = u->parent, .context = u->ctx, .ts = u->ts, .rank = u->rank};
  return lens_win_start(b, session, thread, &s, (const uint8_t *)u->payload, u->pbytes);
}

int lens_scan_packed_chunk(struct lens_builder *b, const struct lens_chunk_hdr *hp, const uint8_t *p, uint32_t len) {
  struct lens_chunk_hdr h;
  struct lens_packed_hdr ph;
  struct lens_unpack_cur c;
  uint64_t starts0 = b->win_starts, pends0 = b->win_pends, bad0 = b->m->bad_records;
  int r = open_packed(b, hp, p, len, &h, &ph, &c);
  if (r < 0) return r;
  /* What the load counts bad here: what the scan counted (the header,
   * unzstd, RAW records), the STARTs of an unknown type, and from a record
   * whose size is not a multiple of 8 (or the first that does not decode)
   * to the end (lens_build_packed_chunk's two counts add up to that). */
  uint64_t extra = 0;
  if (r) {
    /* its thread as the load finds it (the scan's threads are then the load's) */
    int32_t thread = lens_chunk_thread(b, h.session, ph.slot);
    if (thread < 0) return lens_builder_oom(b);
    struct lens_unpacked u = {0}; /* every field set by lens_unpack_next before a use; said for the compiler */
    uint32_t n = 0;
    for (; n < ph.count && lens_unpack_next(&c, &u); n++) {
      if (u.size < sizeof(struct lens_rec_hdr) || (u.size & 7)) break;
      if (u.kind == LENS_REC_START && u.type >= LENS_T_COUNT) extra++;
      int w = u.kind == 0 ? lens_read_record(b, h.session, thread, u.raw, u.size) : win_ask(b, h.session, thread, &u, 0);
      if (w < 0) return -1;
    }
    extra += ph.count - n;
  }
  return lens_win_chunk_scanned(b, starts0, pends0, b->m->bad_records - bad0 + extra, r);
}

/* A window's load: a chunk the decisions keep nothing of (no START built,
 * every STOP/STATE record dropped) is not decoded again: its records are
 * counted as read, its bad records are the scan's count and its thread is
 * found as a read finds it (a placeholder made if no THREAD chunk names it).
 * In another chunk the records it leaves out are decoded (their numbers are
 * the window's) but not written out as fixed records nor read again; those
 * it builds or keeps are written and read as lens_read_packed_chunk reads
 * them. The bad records counted are the same: those after a malformed one
 * (lens_unpack_chunk's), and from a record whose size is not a multiple of
 * 8 to the end (lens_read_events_chunk's). */
int lens_build_packed_chunk(struct lens_builder *b, const struct lens_chunk_hdr *hp, const uint8_t *p, uint32_t len) {
  struct lens_chunk_hdr h;
  struct lens_packed_hdr ph;
  struct lens_unpack_cur c;
  uint64_t skip_bad;
  int opened;
  if (lens_win_chunk_skip(b, &skip_bad, &opened)) {
    /* Nothing of it is kept: not decoded again. What the read of it leaves
     * in the model all the same: its bad records, its thread. */
    b->m->bad_records += skip_bad;
    if (!opened) return 0;
    memcpy(&h, hp, sizeof h);
    memcpy(&ph, p, sizeof ph); /* opened: at least a header's bytes */
    return lens_chunk_thread(b, h.session, ph.slot) < 0 ? lens_builder_oom(b) : 0;
  }
  int r = open_packed(b, hp, p, len, &h, &ph, &c);
  if (r <= 0) return r;
  int32_t thread = lens_chunk_thread(b, h.session, ph.slot);
  if (thread < 0) return lens_builder_oom(b);
  /* One decoded record in fixed form: at most a START with the largest payload. */
  uint64_t rec[(sizeof(struct lens_rec_start) + 4 * LENS_PACK_MAX_PAYLOAD_WORDS) / 8 + 1];
  struct lens_unpacked u = {0}; /* every field set by lens_unpack_next before a use; said for the compiler */
  uint32_t n = 0, end = UINT32_MAX;
  for (; n < ph.count && lens_unpack_next(&c, &u); n++) {
    if (end != UINT32_MAX) continue; /* past the end of the walk: counted below */
    if (u.size < sizeof(struct lens_rec_hdr) || (u.size & 7)) {
      end = n;
      continue;
    }
    if (u.kind == 0) {
      if (lens_read_record(b, h.session, thread, u.raw, u.size)) return -1;
      continue;
    }
    int w = win_ask(b, h.session, thread, &u, 1);
    if (w < 0) return -1;
    if (!w) continue;
    lens_unpacked_write(&u, (uint8_t *)rec);
    if (lens_build_record(b, h.session, thread, (const uint8_t *)rec, u.size)) return -1;
  }
  b->m->bad_records += ph.count - n;
  if (end != UINT32_MAX) b->m->bad_records += n - end;
  return 0;
}

void lens_unpacker_release(struct lens_unpacker *u) {
  free(u->unpack);
  free(u->unzstd);
  ZSTD_freeDCtx(u->dctx);
  *u = (struct lens_unpacker){0};
}

void lens_packed_release(struct lens_builder *b) { lens_unpacker_release(&b->unpacker); }
