/* The reader never crashes and never reads past what it was given: cuts at
 * every offset of a small valid file, single bit flips everywhere, random
 * bytes, and random chunks that pass their CRC (so the record parsers, not
 * the framing, must reject them). Run it under ASan. The bulk columnar
 * reader (columns.h) reads every one of these files too, and must agree
 * with the model on what it read: the same cut, the same STARTs, the same
 * unreadable records, references in range. Packed chunks (EVENTS_PACKED,
 * varint and zstd) with damaged streams under valid CRCs check that the
 * columns' own walk of the varint stream (common/lens_unpack.h, no fixed
 * records) loses exactly the records the model's unpack loses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <zstd.h>

#include "lens_chunk.h"
#include "lens_pack.h"
#include "reader/columns.h"
#include "reader_test_util.h"
#include "sample_trace.h"
#include "trace_builder.h"

static uint8_t *orig;
static size_t orig_len;
static char sample[128], work[128];

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static int setup(void **state) {
  (void)state;
  sample_trace_write(rt_path(sample, sizeof sample, "sample.lens"));
  orig = tb_read_file(sample, &orig_len);
  rt_path(work, sizeof work, "work.lens");
  return 0;
}
static int teardown(void **state) {
  (void)state;
  free(orig);
  rt_cleanup();
  return 0;
}

/* The columns of the file just loaded into m (NULL: the model refused it). */
static void cols_agree(const char *path, const struct lens_model *m) {
  struct lens_cols *c = lens_cols_new();
  assert_non_null(c);
  char err[256] = "";
  int rc = lens_cols_read(c, path, err, sizeof err);
  if (!m) {
    assert_int_equal(rc, -1);
    assert_true(err[0] != 0);
    lens_cols_free(c);
    return;
  }
  assert_int_equal(rc, 0);
  assert_int_equal(c->files[0].truncated_bytes, m->files[0].truncated_bytes);
  assert_int_equal(!c->files[0].truncation, !m->files[0].truncation);
  assert_int_equal(c->files[0].lost_chunks, m->files[0].lost_chunks);
  assert_int_equal(c->files[0].damaged_bytes, m->files[0].damaged_bytes);
  assert_int_equal(c->files[0].damaged_chunks, m->files[0].damaged_chunks);
  assert_int_equal(lens_cols_events(c), m->n_events);
  assert_int_equal(c->files[0].bad_records, m->bad_records);
  for (unsigned t = 0; t < LENS_T_COUNT; t++)
    for (size_t i = 0; i < c->t[t].n; i++) {
      int64_t p = c->t[t].parent[i];
      if (p != LENS_COL_NONE) assert_true(LENS_COL_REF_INDEX(p) < c->t[LENS_COL_REF_TYPE(p)].n);
      assert_true(c->t[t].thread[i] < c->n_threads);
      assert_true(c->t[t].comm[i] < (int32_t)c->n_comms);
    }
  lens_cols_free(c);
}

/* Ends of complete chunks, walked with the framing rules. */
static size_t chunk_ends(size_t *ends, size_t max) {
  size_t n = 0, off = sizeof(struct lens_file_hdr);
  while (off < orig_len && n < max) {
    struct lens_chunk_hdr h;
    memcpy(&h, orig + off, sizeof h);
    off += sizeof h + h.payload_len + lens_chunk_padding(h.payload_len);
    ends[n++] = off;
  }
  return n;
}

static void test_cut_at_every_offset(void **state) {
  (void)state;
  size_t ends[256];
  size_t n_ends = chunk_ends(ends, 256);
  assert_int_equal(ends[n_ends - 1], orig_len);
  size_t prev_events = 0;
  for (size_t cut = 0; cut <= orig_len; cut++) {
    tb_write_file(work, orig, cut);
    char err[256] = "";
    struct lens_model *m = rt_load1(work, err, sizeof err);
    cols_agree(work, m);
    if (cut < sizeof(struct lens_file_hdr)) {
      assert_null(m);
      assert_true(err[0] != 0);
      continue;
    }
    assert_non_null(m);
    size_t good = sizeof(struct lens_file_hdr);
    for (size_t i = 0; i < n_ends && ends[i] <= cut; i++) good = ends[i];
    assert_int_equal(m->files[0].truncated_bytes, cut - good);
    if (cut == good) assert_null(m->files[0].truncation);
    else assert_non_null(m->files[0].truncation);
    assert_true(m->n_events >= prev_events); /* more bytes never lose events */
    prev_events = m->n_events;
    assert_int_equal(m->files[0].clean_end, cut == orig_len);
    lens_model_free(m);
  }
  assert_int_equal(prev_events, 15);
}

static void test_bit_flips(void **state) {
  (void)state;
  size_t ends[256];
  size_t n_ends = chunk_ends(ends, 256);
  uint8_t *buf = malloc(orig_len);
  for (size_t i = 0; i < orig_len; i++) {
    memcpy(buf, orig, orig_len);
    buf[i] ^= (uint8_t)(1u << (rnd() % 8));
    tb_write_file(work, buf, orig_len);
    char err[256];
    struct lens_model *m = rt_load1(work, err, sizeof err);
    cols_agree(work, m);
    if (i < sizeof(struct lens_file_hdr) && i < 16) {
      assert_null(m); /* magic, version or header size broken */
      continue;
    }
    if (m) {
      /* A flip inside a chunk costs that chunk (CRC): skipped as damaged, the
       * chunks after it read; only a flip in the last chunk's header, with no
       * valid header after it, is a cut there. Only padding is unchecked. */
      const struct lens_file *f = &m->files[0];
      if (i >= sizeof(struct lens_file_hdr)) {
        size_t start = sizeof(struct lens_file_hdr), k = 0;
        while (ends[k] <= i) start = ends[k++];
        size_t whole = ends[k] - start;
        if (f->damaged_bytes) {
          assert_int_equal(f->damaged_bytes, whole);
          assert_int_equal(f->damaged_chunks, 1);
          assert_int_equal(f->truncated_bytes, 0);
          assert_null(f->truncation);
        } else if (f->truncated_bytes) {
          assert_int_equal(k, n_ends - 1); /* the last chunk: nothing to resynchronise on */
          assert_int_equal(f->truncated_bytes, whole);
        } else {
          assert_int_equal(m->n_events, 15); /* padding */
          assert_null(f->truncation);
        }
        assert_int_equal(f->lost_chunks, 0);
      }
      assert_true(m->n_events <= 15);
      lens_model_free(m);
    }
  }
  free(buf);
}

static void test_random_bytes(void **state) {
  (void)state;
  uint8_t buf[4096];
  for (int round = 0; round < 300; round++) {
    size_t len = rnd() % sizeof buf;
    for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)rnd();
    if (round & 1 && len >= 64) memcpy(buf, orig, 64); /* valid header, garbage after */
    tb_write_file(work, buf, len);
    char err[256];
    struct lens_model *m = rt_load1(work, err, sizeof err);
    cols_agree(work, m);
    if (!(round & 1)) assert_null(m);
    if (m) {
      assert_int_equal(m->n_events, 0);
      assert_int_equal(m->files[0].truncated_bytes, len - 64);
      lens_model_free(m);
    }
  }
}

/* Chunks with valid framing and CRC but random payloads and types; a mix of
 * real chunks from the sample so records refer to each other. */
static void test_random_valid_chunks(void **state) {
  (void)state;
  for (int round = 0; round < 300; round++) {
    struct tb *t = tb_open(work, round % 3 == 0 ? LENS_PRODUCER_SCHED : LENS_PRODUCER_PLUGIN);
    if (round % 2) sample_trace_session(t, 0, S_PID, "nodeA");
    int n = 1 + (int)(rnd() % 12);
    for (int c = 0; c < n; c++) {
      uint8_t p[600];
      uint32_t len = (uint32_t)(rnd() % sizeof p);
      for (uint32_t i = 0; i < len; i++) p[i] = (uint8_t)rnd();
      uint16_t type = (uint16_t)(1 + rnd() % 13);
      if (type == LENS_CHUNK_EVENTS && len >= 8) {
        /* plausible record headers so parsing goes deep */
        uint32_t count = (uint32_t)(rnd() % 8), slot = (uint32_t)(rnd() % 4);
        memcpy(p, &slot, 4);
        memcpy(p + 4, &count, 4);
        for (uint32_t off = 8; off + 8 <= len;) {
          uint16_t sz = (uint16_t)(8 * (1 + rnd() % 16));
          p[off] = (uint8_t)sz;
          p[off + 1] = (uint8_t)(sz >> 8);
          p[off + 2] = (uint8_t)(1 + rnd() % 3);
          p[off + 3] = (uint8_t)(rnd() % 16);
          if (rnd() % 2 && off + 24 <= len) { /* id and parent from the sample */
            uint64_t ids[3] = {S_COLL, S_OP, S_STEP};
            memcpy(p + off + 8, &ids[rnd() % 3], 8);
            memcpy(p + off + 16, &ids[rnd() % 3], 8);
          }
          off += sz;
        }
      }
      tb_raw_chunk(t, type, p, len);
    }
    tb_close(t);
    char err[256];
    struct lens_model *m = rt_load1(work, err, sizeof err);
    cols_agree(work, m);
    assert_non_null(m);
    assert_int_equal(m->files[0].truncated_bytes, 0);
    for (size_t i = 0; i < m->n_events; i++) {
      const struct lens_event *e = &m->events[i];
      assert_true(e->parent < (int32_t)m->n_events);
      assert_true(e->first_state + e->n_states <= m->n_states);
      assert_true(e->thread >= 0 && e->thread < (int32_t)m->n_threads);
      assert_true(e->comm < (int32_t)m->n_comms);
      /* walking children terminates and stays in range */
      int guard = 0;
      for (int32_t k = e->first_child; k >= 0 && guard < 100000; k = m->events[k].next_sibling, guard++)
        assert_true(k < (int32_t)m->n_events);
      int src;
      (void)lens_event_completion(m, e, &src);
      (void)lens_event_bytes(m, e);
    }
    lens_model_free(m);
  }
}


/* ---- packed chunks ---- */

struct buf { uint8_t *p; size_t len, cap; };
static void put(struct buf *b, const void *p, size_t len) {
  if (b->len + len > b->cap) {
    b->cap = (b->len + len) * 2;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  memcpy(b->p + b->len, p, len);
  b->len += len;
}
static void put_chunk(struct buf *b, uint16_t type, uint32_t session, uint64_t seq, const void *p, uint32_t len) {
  struct lens_chunk_hdr h;
  static const uint8_t zero[8];
  lens_chunk_hdr_init(&h, type, session, seq, p, len);
  put(b, &h, sizeof h);
  put(b, p, len);
  put(b, zero, lens_chunk_padding(len));
}

/* The sample with every EVENTS chunk packed (zstd: each stream in a zstd
 * frame). Damage, applied to the packed chunk number `which` (-1: none):
 * the stream's byte `at` xor `x` (before zstd), or, with at past the
 * stream, its count raised by x, or its raw_bytes lowered by x. Returns the
 * number of packed chunks and the stream length of chunk `which`. */
static int packed_sample(struct buf *out, int zstd, int which, size_t at, uint8_t x, size_t *stream_len) {
  out->len = 0;
  put(out, orig, sizeof(struct lens_file_hdr));
  int k = 0;
  for (size_t off = sizeof(struct lens_file_hdr); off < orig_len;) {
    struct lens_chunk_hdr h;
    memcpy(&h, orig + off, sizeof h);
    const uint8_t *p = orig + off + sizeof h;
    off += sizeof h + h.payload_len + lens_chunk_padding(h.payload_len);
    if (h.type != LENS_CHUNK_EVENTS) {
      put_chunk(out, h.type, h.session, h.seq, p, h.payload_len);
      continue;
    }
    struct lens_events_hdr eh;
    memcpy(&eh, p, sizeof eh);
    size_t raw = h.payload_len - sizeof eh, cap = lens_pack_bound(raw);
    uint8_t *stream = malloc(cap), *z = malloc(ZSTD_compressBound(cap) + sizeof(struct lens_packed_hdr));
    struct lens_pack_enc *e = malloc(sizeof *e);
    lens_pack_begin(e, stream, cap);
    for (size_t r = sizeof eh; r < h.payload_len;) {
      const struct lens_rec_hdr *rh = (const void *)(p + r);
      lens_pack_rec(e, rh);
      r += rh->size;
    }
    assert_false(e->overflow);
    size_t len = lens_pack_len(e, stream);
    struct lens_packed_hdr ph = {eh.slot, e->count, e->raw_bytes, (uint32_t)len, LENS_PACK_CODEC_VARINT, 0};
    if (k == which) {
      *stream_len = len;
      if (at < len) stream[at] ^= x;
      else if (at == len) ph.count += x;
      else ph.raw_bytes = ph.raw_bytes > x ? ph.raw_bytes - x : 0;
    }
    size_t body = len;
    if (zstd) {
      body = ZSTD_compress(z + sizeof ph, ZSTD_compressBound(cap), stream, len, 1);
      assert_false(ZSTD_isError(body));
      ph.codec = LENS_PACK_CODEC_ZSTD;
    } else {
      memcpy(z + sizeof ph, stream, len);
    }
    memcpy(z, &ph, sizeof ph);
    put_chunk(out, LENS_CHUNK_EVENTS_PACKED, h.session, h.seq, z, (uint32_t)(sizeof ph + body));
    free(stream), free(z), free(e);
    k++;
  }
  return k;
}

static void test_packed_damaged(void **state) {
  (void)state;
  struct buf b = {0};
  size_t len = 0, runs = 0, lost = 0;
  for (int zstd = 0; zstd < 2; zstd++) {
    /* Undamaged: the 15 events, nothing unreadable, in both readers. */
    int n = packed_sample(&b, zstd, -1, 0, 0, &len);
    assert_true(n >= 2);
    tb_write_file(work, b.p, b.len);
    char err[256];
    struct lens_model *m = rt_load1(work, err, sizeof err);
    assert_non_null(m);
    assert_int_equal(m->n_events, 15);
    assert_int_equal(m->bad_records, 0);
    cols_agree(work, m);
    lens_model_free(m);
    /* Every byte of every stream, a few flips each; then counts and sizes. */
    for (int which = 0; which < n; which++) {
      packed_sample(&b, zstd, which, 0, 0, &len);
      for (size_t at = 0; at < len + 2; at++)
        for (int f = 0; f < (at < len ? 3 : 2); f++) {
          uint8_t x = at < len ? (uint8_t)(f == 0 ? 0x80 : f == 1 ? 0x01 : 1 + rnd() % 255) : (uint8_t)(8 << f);
          packed_sample(&b, zstd, which, at, x, &len);
          tb_write_file(work, b.p, b.len);
          m = rt_load1(work, err, sizeof err);
          assert_non_null(m);
          cols_agree(work, m);
          runs++;
          lost += m->bad_records > 0;
          lens_model_free(m);
        }
    }
  }
  print_message("%zu damaged packed traces, %zu with unreadable records, columns and model agree on all\n", runs,
                lost);
  assert_true(lost > 0); /* the damage reached the decoder's checks */
  free(b.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cut_at_every_offset),
      cmocka_unit_test(test_bit_flips),
      cmocka_unit_test(test_random_bytes),
      cmocka_unit_test(test_random_valid_chunks),
      cmocka_unit_test(test_packed_damaged),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
