/* See trace_index.h. */
#include "trace_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_stream.h"
#include "lens_chunk.h"
#include "reader_priv.h"

/* Room for n + more elements of *arr (lens_vec_reserve): 0, or -1 out of memory. */
#define GROW(arr, n, cap, more) lens_vec_reserve((void **)&(arr), &(cap), (n) + (more), sizeof *(arr))

/* An INDEX payload against the events chunk e it follows: 1 taken, 0 bad,
 * -1 no memory. */
static int take_index(struct lens_trace_index *ix, size_t *cap_touch, size_t *cap_open, size_t *cap_drained,
                      size_t *cap_ids, size_t e, const uint8_t *p, uint32_t len) {
  struct lens_chunk_ix *c = &ix->c[e];
  struct lens_index_hdr h;
  if (len < sizeof h) return 0;
  memcpy(&h, p, sizeof h);
  size_t at = sizeof h, touch_bytes = (size_t)h.n_touch * sizeof(struct lens_index_touch);
  if (h.slot != c->slot || h.records != c->records || h.first_ts > h.last_ts || h.start_lo > h.start_hi ||
      (h.start_lo == 0) != (h.start_hi == 0) || len - at < touch_bytes)
    return 0;
  struct lens_index_open o = {0};
  size_t drained_bytes = 0, ids_bytes = 0;
  if (h.flags & LENS_INDEX_F_OPEN) {
    size_t oat = at + touch_bytes;
    if (len - oat < sizeof o) return 0;
    memcpy(&o, p + oat, sizeof o);
    drained_bytes = (size_t)o.n_slots * sizeof(struct lens_index_drained);
    ids_bytes = (size_t)o.n_open * sizeof(uint64_t);
    if ((len - oat - sizeof o) < drained_bytes || (len - oat - sizeof o - drained_bytes) < ids_bytes) return 0;
  }
  if (ix->n_touch + h.n_touch > UINT32_MAX) return 0; /* lens_chunk_ix.touch is 32 bits: a forged file */
  if (GROW(ix->touch, ix->n_touch, *cap_touch, h.n_touch)) return -1;
  c->touch = (uint32_t)ix->n_touch;
  c->n_touch = h.n_touch;
  if (touch_bytes) memcpy(ix->touch + ix->n_touch, p + at, touch_bytes); /* none: the array may not be made yet */
  ix->n_touch += h.n_touch;
  c->flags |= LENS_CIX_INDEXED | ((h.flags & LENS_INDEX_F_TOUCH_ANY) ? LENS_CIX_TOUCH_ANY : 0);
  c->types = h.types;
  c->first_ts = h.first_ts, c->last_ts = h.last_ts;
  c->start_lo = h.start_lo, c->start_hi = h.start_hi;
  ix->indexed++;
  if (!(h.flags & LENS_INDEX_F_OPEN)) return 1;
  if (GROW(ix->open, ix->n_open, *cap_open, 1) || GROW(ix->drained, ix->n_drained, *cap_drained, o.n_slots) ||
      GROW(ix->ids, ix->n_ids, *cap_ids, o.n_open))
    return -1;
  const uint8_t *q = p + at + touch_bytes + sizeof o;
  if (drained_bytes) memcpy(ix->drained + ix->n_drained, q, drained_bytes);
  if (ids_bytes) memcpy(ix->ids + ix->n_ids, q + drained_bytes, ids_bytes);
  ix->open[ix->n_open++] = (struct lens_open_ix){o.taken_mono_ns, c->session, o.flags, e,
                                                 ix->n_drained, o.n_slots, ix->n_ids, o.n_open};
  ix->n_drained += o.n_slots;
  ix->n_ids += o.n_open;
  return 1;
}

int lens_trace_index_read(const char *path, struct lens_trace_index *ix, char *err, size_t err_len) {
  memset(ix, 0, sizeof *ix);
  struct lens_cstream s;
  if (lens_cstream_open(&s, path, 1 << 20, err, err_len)) return -1;
  size_t cap = 0, cap_touch = 0, cap_open = 0, cap_drained = 0, cap_ids = 0;
  long last = -1; /* the events chunk the previous valid chunk was, else -1 */
  struct lens_chunk_hdr h;
  const uint8_t *p;
  int r;
  while ((r = lens_cstream_next(&s, &h, &p, err, err_len)) == 1) {
    uint64_t bytes = sizeof h + h.payload_len + lens_chunk_padding(h.payload_len);
    uint64_t off = s.buf_off + s.pos - bytes;
    if ((h.type == LENS_CHUNK_EVENTS || h.type == LENS_CHUNK_EVENTS_PACKED) &&
        h.payload_len >= sizeof(struct lens_events_hdr)) {
      if (GROW(ix->c, ix->n, cap, 1)) goto oom;
      struct lens_events_hdr eh;
      memcpy(&eh, p, sizeof eh);
      ix->c[ix->n] = (struct lens_chunk_ix){.offset = off, .seq = h.seq, .bytes = (uint32_t)bytes,
                                            .session = h.session, .slot = eh.slot, .records = eh.count};
      ix->event_bytes += bytes;
      last = (long)ix->n++;
      continue;
    }
    if (h.type == LENS_CHUNK_INDEX) {
      ix->index_bytes += bytes;
      /* its events chunk is the one numbered just before it, in its session, not yet indexed */
      if (last < 0 || ix->c[last].seq + 1 != h.seq || ix->c[last].session != h.session ||
          (ix->c[last].flags & LENS_CIX_INDEXED)) {
        ix->bad++;
      } else {
        int t = take_index(ix, &cap_touch, &cap_open, &cap_drained, &cap_ids, (size_t)last, p, h.payload_len);
        if (t < 0) goto oom;
        if (!t) ix->bad++;
      }
    }
    last = -1;
  }
  lens_cstream_close(&s);
  if (r < 0) {
    lens_trace_index_free(ix);
    return -1;
  }
  return 0;
oom:
  lens_cstream_close(&s);
  lens_trace_index_free(ix);
  snprintf(err, err_len, "%s: out of memory reading its index", path);
  return -1;
}

void lens_trace_index_free(struct lens_trace_index *ix) {
  free(ix->c), free(ix->touch), free(ix->open), free(ix->drained), free(ix->ids);
  memset(ix, 0, sizeof *ix);
}

void lens_trace_index_touches(const struct lens_trace_index *ix, uint32_t session, uint32_t slot, uint64_t seq,
                              void (*fn)(void *ctx, size_t chunk), void *ctx) {
  for (size_t i = 0; i < ix->n; i++) {
    const struct lens_chunk_ix *c = &ix->c[i];
    if (c->session != session) continue;
    int hit = !(c->flags & LENS_CIX_INDEXED) || (c->flags & LENS_CIX_TOUCH_ANY);
    for (uint32_t t = 0; !hit && t < c->n_touch; t++) {
      const struct lens_index_touch *x = &ix->touch[c->touch + t];
      hit = x->slot == slot && seq >= x->seq_lo && seq <= x->seq_hi;
    }
    if (hit) fn(ctx, i);
  }
}
