/* See trace_index.h. */
#include "trace_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_stream.h"
#include "lens_chunk.h"
#include "lens_utf8.h"
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

static int cmp_touch(const void *a, const void *b) {
  const struct lens_touch_ent *x = a, *y = b;
  if (x->session != y->session) return x->session < y->session ? -1 : 1;
  if (x->slot != y->slot) return x->slot < y->slot ? -1 : 1;
  if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
  return (x->chunk > y->chunk) - (x->chunk < y->chunk);
}

/* The lookup's tables (lens_trace_index_touches). 0, or -1 out of memory. */
static int sort_touches(struct lens_trace_index *ix) {
  size_t n = 0, na = 0;
  for (size_t i = 0; i < ix->n; i++) {
    const struct lens_chunk_ix *c = &ix->c[i];
    if (!(c->flags & LENS_CIX_INDEXED) || (c->flags & LENS_CIX_TOUCH_ANY)) na++;
    else n += c->n_touch;
  }
  ix->tsort = malloc((n ? n : 1) * sizeof *ix->tsort);
  ix->tany = malloc((na ? na : 1) * sizeof *ix->tany);
  if (!ix->tsort || !ix->tany) return -1;
  for (size_t i = 0; i < ix->n; i++) {
    const struct lens_chunk_ix *c = &ix->c[i];
    if (!(c->flags & LENS_CIX_INDEXED) || (c->flags & LENS_CIX_TOUCH_ANY)) {
      ix->tany[ix->n_tany++] = i;
      continue;
    }
    for (uint32_t t = 0; t < c->n_touch; t++) {
      const struct lens_index_touch *x = &ix->touch[c->touch + t];
      ix->tsort[ix->n_tsort++] = (struct lens_touch_ent){c->session, x->slot, x->seq_lo, x->seq_hi, 0, i};
    }
  }
  qsort(ix->tsort, ix->n_tsort, sizeof *ix->tsort, cmp_touch);
  for (size_t i = 0; i < ix->n_tsort; i++) {
    struct lens_touch_ent *e = &ix->tsort[i];
    e->hi_max = e->hi;
    if (i && e[-1].session == e->session && e[-1].slot == e->slot && e[-1].hi_max > e->hi_max)
      e->hi_max = e[-1].hi_max;
  }
  return 0;
}

static int read_stream(struct lens_cstream *s, const char *path, struct lens_trace_index *ix, char *err,
                       size_t err_len);

int lens_trace_index_read(const char *path, struct lens_trace_index *ix, char *err, size_t err_len) {
  memset(ix, 0, sizeof *ix);
  struct lens_cstream s;
  if (lens_cstream_open(&s, path, 1 << 20, err, err_len)) return -1;
  return read_stream(&s, path, ix, err, err_len);
}

int lens_trace_index_read_mem(const uint8_t *bytes, size_t size, const char *path, struct lens_trace_index *ix,
                              char *err, size_t err_len) {
  memset(ix, 0, sizeof *ix);
  struct lens_cstream s;
  if (lens_cstream_open_mem(&s, bytes, size, path, err, err_len)) return -1;
  return read_stream(&s, path, ix, err, err_len);
}

/* The walk of an opened stream, closed on return. */
static int read_stream(struct lens_cstream *s, const char *path, struct lens_trace_index *ix, char *err,
                       size_t err_len) {
  size_t cap = 0, cap_touch = 0, cap_open = 0, cap_drained = 0, cap_ids = 0;
  long last = -1; /* the events chunk the previous valid chunk was, else -1 */
  struct lens_chunk_hdr h;
  const uint8_t *p;
  int r;
  while ((r = lens_cstream_next(s, &h, &p, err, err_len)) == 1) {
    uint64_t bytes = sizeof h + h.payload_len + lens_chunk_padding(h.payload_len);
    uint64_t off = s->buf_off + s->pos - bytes;
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
    if (h.type == LENS_CHUNK_SESSION) { /* as the reader reads it: a short one zero-extended, the host cleaned */
      struct lens_session ss = {0};
      memcpy(&ss, p, h.payload_len < sizeof ss ? h.payload_len : sizeof ss);
      ix->session_flags |= ss.flags;
      if (!ix->has_session) {
        ix->has_session = 1;
        ix->pid = ss.pid;
        ss.host[sizeof ss.host - 1] = 0;
        lens_label_clean(ss.host, sizeof ss.host);
        memcpy(ix->host, ss.host, sizeof ix->host);
      }
    } else if (h.type == LENS_CHUNK_CUPTI) {
      ix->cupti_chunks++;
    } else if (h.type == LENS_CHUNK_DROPS) {
      struct lens_drops d = {0};
      memcpy(&d, p, h.payload_len < sizeof d ? h.payload_len : sizeof d);
      if (d.ring_full > ix->ring_full) ix->ring_full = d.ring_full;
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
  ix->producer = s->fh.producer;
  ix->payloads_checked = r == 0 && !s->damaged_bytes && !s->damaged_chunks;
  lens_cstream_close(s);
  if (r >= 0 && sort_touches(ix)) {
    lens_trace_index_free(ix);
    snprintf(err, err_len, "%s: out of memory reading its index", path);
    return -1;
  }
  if (r < 0) {
    lens_trace_index_free(ix);
    return -1;
  }
  return 0;
oom:
  lens_cstream_close(s);
  lens_trace_index_free(ix);
  snprintf(err, err_len, "%s: out of memory reading its index", path);
  return -1;
}

void lens_trace_index_free(struct lens_trace_index *ix) {
  free(ix->c), free(ix->touch), free(ix->open), free(ix->drained), free(ix->ids), free(ix->tsort), free(ix->tany);
  memset(ix, 0, sizeof *ix);
}

void lens_trace_index_touches(const struct lens_trace_index *ix, uint32_t session, uint32_t slot, uint64_t seq,
                              void (*fn)(void *ctx, size_t chunk), void *ctx) {
  for (size_t i = 0; i < ix->n_tany; i++)
    if (ix->c[ix->tany[i]].session == session) fn(ctx, ix->tany[i]);
  size_t lo = 0, hi = ix->n_tsort; /* the first touch past (session, slot, seq) */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct lens_touch_ent *e = &ix->tsort[mid];
    int before = e->session != session ? e->session < session : e->slot != slot ? e->slot < slot : e->lo <= seq;
    if (before) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo; i-- > 0;) {
    const struct lens_touch_ent *e = &ix->tsort[i];
    if (e->session != session || e->slot != slot || e->hi_max < seq) break;
    if (e->hi >= seq) fn(ctx, e->chunk);
  }
}
