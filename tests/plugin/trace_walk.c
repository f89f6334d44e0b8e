#include "trace_walk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "lens_chunk.h"
#include "lens_pack.h"

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
  if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = n > 0 ? (size_t)n : 0;
  return b;
}

typedef void (*rec_fn)(const struct lens_rec_hdr *, uint32_t, void *);

/* The fixed records of an EVENTS payload (lens_events_hdr + records). */
static void walk_records(const uint8_t *p, size_t payload_len, uint32_t session, struct trace_tally *t, rec_fn fn,
                         void *arg) {
  const struct lens_events_hdr *eh = (const void *)p;
  size_t q = sizeof *eh;
  uint64_t prev_ts = 0;
  for (uint32_t i = 0; i < eh->count && q + sizeof(struct lens_rec_hdr) <= payload_len; i++) {
    const struct lens_rec_hdr *r = (const void *)(p + q);
    if (r->size < 8 || q + r->size > payload_len) break;
    uint64_t ts = 0;
    t->records++;
    if (r->kind == LENS_REC_START) {
      t->starts++;
      if (r->type < LENS_T_COUNT) t->starts_by_type[r->type]++;
      ts = ((const struct lens_rec_start *)r)->ts;
    } else if (r->kind == LENS_REC_STOP) {
      t->stops++;
      ts = ((const struct lens_rec_stop *)r)->ts;
    } else if (r->kind == LENS_REC_STATE) {
      t->states++;
      ts = ((const struct lens_rec_state *)r)->ts;
    }
    if (ts < prev_ts) t->ts_nonmono++;
    prev_ts = ts;
    if (ts > t->last_ts) t->last_ts = ts;
    if (ts < t->first_ts) t->first_ts = ts;
    if (fn) fn(r, session, arg);
    q += r->size;
  }
}

/* An EVENTS_PACKED payload as an EVENTS payload in a malloc'd *out (NULL
 * when it does not decode in full); returns its length. */
static size_t unpack_chunk(const uint8_t *p, size_t len, uint8_t **out) {
  struct lens_packed_hdr ph;
  *out = NULL;
  if (len < sizeof ph) return 0;
  memcpy(&ph, p, sizeof ph);
  const uint8_t *body = p + sizeof ph;
  uint8_t *unz = NULL;
  if (ph.codec == LENS_PACK_CODEC_ZSTD) {
    unz = malloc(ph.body_bytes + 1);
    if (!unz || ZSTD_decompress(unz, ph.body_bytes, body, len - sizeof ph) != ph.body_bytes) {
      free(unz);
      return 0;
    }
    body = unz;
  } else if (ph.codec != LENS_PACK_CODEC_VARINT || ph.body_bytes != len - sizeof ph) {
    return 0;
  }
  uint8_t *f = malloc(sizeof(struct lens_events_hdr) + ph.raw_bytes);
  size_t flen = 0;
  struct lens_events_hdr eh = {ph.slot, ph.count};
  if (f && lens_unpack(body, ph.body_bytes, ph.count, f + sizeof eh, ph.raw_bytes, &flen) == ph.count &&
      flen == ph.raw_bytes) {
    memcpy(f, &eh, sizeof eh);
    *out = f;
  } else {
    free(f);
  }
  free(unz);
  return sizeof eh + flen;
}

static int walk(const char *path, struct trace_tally *t, rec_fn fn, void *arg) {
  size_t len;
  uint8_t *b = slurp(path, &len);
  if (!b) return -1;
  memset(t, 0, sizeof *t);
  t->first_ts = UINT64_MAX;
  if (len < sizeof(struct lens_file_hdr) || lens_file_hdr_check((const struct lens_file_hdr *)b) != 0) {
    free(b);
    return -1;
  }
  t->ok_header = 1;
  size_t off = sizeof(struct lens_file_hdr);
  uint64_t expect_seq = 0;
  uint8_t seen[1024] = {0};
  while (off + sizeof(struct lens_chunk_hdr) <= len) {
    const struct lens_chunk_hdr *h = (const void *)(b + off);
    if (lens_chunk_hdr_check(h) != 0) break;
    size_t next = off + sizeof *h + h->payload_len + lens_chunk_padding(h->payload_len);
    if (next > len) break;
    const uint8_t *p = b + off + sizeof *h;
    if (lens_chunk_payload_check(h, p) != 0) break;
    if (h->seq != expect_seq) t->seq_gaps++;
    expect_seq = h->seq + 1;
    t->chunks++;
    if (h->type < 16) t->by_type[h->type]++;
    if (h->session < sizeof seen && !seen[h->session]) {
      seen[h->session] = 1;
      t->sessions++;
    }
    if (h->session > t->max_session) t->max_session = h->session;
    if (h->type == LENS_CHUNK_SESSION && h->payload_len >= sizeof(struct lens_session))
      t->last_session_api = ((const struct lens_session *)p)->nccl_api_version;
    if (h->type == LENS_CHUNK_FINI && h->payload_len >= sizeof(struct lens_fini)) {
      uint32_t r = ((const struct lens_fini *)p)->reason;
      if (r < 3) t->fini_reason[r]++;
    }
    if (h->type == LENS_CHUNK_DROPS && h->payload_len >= sizeof(struct lens_drops))
      memcpy(&t->last_drops, p, sizeof t->last_drops);
    if (h->type == LENS_CHUNK_EVENTS && h->payload_len >= sizeof(struct lens_events_hdr))
      walk_records(p, h->payload_len, h->session, t, fn, arg);
    if (h->type == LENS_CHUNK_EVENTS_PACKED) {
      /* the same records, packed (common/lens_pack.c): unpack, then as above */
      uint8_t *fixed = NULL;
      size_t flen = unpack_chunk(p, h->payload_len, &fixed);
      if (fixed) walk_records(fixed, flen, h->session, t, fn, arg);
      else t->bad_packed++;
      free(fixed);
    }
    off = next;
  }
  t->bad_tail_bytes = len - off;
  free(b);
  return 0;
}

int trace_walk(const char *path, struct trace_tally *t) { return walk(path, t, NULL, NULL); }

int trace_for_each_record(const char *path, rec_fn fn, void *arg) {
  struct trace_tally t;
  return walk(path, &t, fn, arg);
}
