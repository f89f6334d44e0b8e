/* The id table keyed by the writer's numbering (tools/reader/id_seq.c)
 * answers as the hash (reader_hash.c) on any ids: a writer's, sequences
 * that restart or jump, repeated ids (the latest put wins, wherever the
 * id lives), random 64-bit ids and values that fit no run (the hash
 * fallback), id 0; a hostile gap of 2^39 or a new slot per id costs
 * memory by the ids put, not by the numbers skipped; renumbering maps
 * every value as the model's loader maps the hash's. */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nccl-lens/trace_format.h"
#include "reader/id_seq.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { /* xorshift64*: the same ids every run */
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1Dull;
}

static int64_t get(struct lens_idseq *t, uint64_t scope, uint64_t id) {
  int64_t v;
  return lens_idseq_get(t, scope, id, &v) ? v : INT64_MIN;
}
static int64_t peek(const struct lens_idseq *t, uint64_t scope, uint64_t id) {
  int64_t v;
  return lens_idseq_peek(t, scope, id, &v) ? v : INT64_MIN;
}
static int64_t hget(const struct lens_hash *h, uint64_t scope, uint64_t id) {
  int64_t v;
  return lens_hash_get(h, scope, id, &v) ? v : INT64_MIN;
}

/* Several sessions and slots, STARTs interleaved across slots, each slot
 * counting its own, types mixed: all in runs (nothing in the hash), each
 * found, nothing else found, a few bytes an id. */
static void test_writer_ids(void **state) {
  (void)state;
  struct lens_idseq t = {0};
  const unsigned n_sess = 2, n_slots = 24, per = 5000;
  uint64_t seq[2][24] = {{0}};
  int64_t v = 0;
  for (unsigned i = 0; i < per * n_slots * n_sess; i++) {
    unsigned se = (unsigned)(rnd() % n_sess), sl = (unsigned)(rnd() % n_slots);
    uint64_t id = LENS_ID_MAKE(rnd() % LENS_T_COUNT, sl * 7 + 3, seq[se][sl]++);
    if (i % 3 == 0) id |= LENS_ID_REMOTE;
    assert_int_equal(lens_idseq_put(&t, se, id, v++), 0);
  }
  assert_int_equal(t.other.n, 0);
  assert_true(t.bytes < (size_t)v * 16 + 65536);
  /* again, from the same ids: each is where it was put */
  rng = 0x9E3779B97F4A7C15ull;
  memset(seq, 0, sizeof seq);
  v = 0;
  for (unsigned i = 0; i < per * n_slots * n_sess; i++) {
    unsigned se = (unsigned)(rnd() % n_sess), sl = (unsigned)(rnd() % n_slots);
    uint64_t id = LENS_ID_MAKE(rnd() % LENS_T_COUNT, sl * 7 + 3, seq[se][sl]++);
    if (i % 3 == 0) id |= LENS_ID_REMOTE;
    assert_int_equal(get(&t, se, id), v);
    assert_int_equal(peek(&t, se, id), v);
    assert_int_equal(get(&t, se + 5, id), INT64_MIN); /* another scope */
    assert_int_equal(get(&t, se, id ^ (1ull << 57)), INT64_MIN);   /* another top byte */
    v++;
  }
  assert_int_equal(get(&t, 0, LENS_ID_MAKE(0, 3, seq[0][0])), INT64_MIN); /* not started yet */
  lens_idseq_free(&t);
  assert_int_equal(t.bytes, 0);
  assert_int_equal(get(&t, 0, LENS_ID_MAKE(0, 3, 0)), INT64_MIN); /* empty, and usable again */
  assert_int_equal(lens_idseq_put(&t, 0, LENS_ID_MAKE(0, 3, 0), 9), 0);
  assert_int_equal(get(&t, 0, LENS_ID_MAKE(0, 3, 0)), 9);
  lens_idseq_free(&t);
}

/* A slot's sequence restarts (a writer started again): the new run's ids
 * answer with the new values, the old run's past the restart's reach keep
 * theirs; a drop in the writer's ring leaves holes that find nothing. */
static void test_restarts_and_holes(void **state) {
  (void)state;
  struct lens_idseq t = {0};
  for (uint64_t s = 0; s < 1500; s++) assert_int_equal(lens_idseq_put(&t, 1, LENS_ID_MAKE(4, 9, s), (int64_t)s), 0);
  for (uint64_t s = 0; s < 1000; s++)
    assert_int_equal(lens_idseq_put(&t, 1, LENS_ID_MAKE(4, 9, s), 100000 + (int64_t)s), 0);
  for (uint64_t s = 0; s < 1500; s++)
    assert_int_equal(get(&t, 1, LENS_ID_MAKE(4, 9, s)), s < 1000 ? 100000 + (int64_t)s : (int64_t)s);
  /* a gap within LENS_IDSEQ_GAP: holes; past it: a new run */
  assert_int_equal(lens_idseq_put(&t, 1, LENS_ID_MAKE(4, 9, 1000 + 40), 7), 0);
  assert_int_equal(lens_idseq_put(&t, 1, LENS_ID_MAKE(4, 9, 1040 + 1000), 8), 0);
  assert_int_equal(get(&t, 1, LENS_ID_MAKE(4, 9, 1040)), 7);
  assert_int_equal(get(&t, 1, LENS_ID_MAKE(4, 9, 1020)), 1020); /* a hole of the new run the old run holds */
  assert_int_equal(get(&t, 1, LENS_ID_MAKE(4, 9, 1499)), 1499);
  assert_int_equal(get(&t, 1, LENS_ID_MAKE(4, 9, 2040)), 8);
  assert_int_equal(get(&t, 1, LENS_ID_MAKE(4, 9, 2039)), INT64_MIN);
  assert_int_equal(t.other.n, 0);
  lens_idseq_free(&t);
}

/* The latest put of an id wins, in the same run, across runs, with an id
 * of another top byte at its number, and when it moves to the hash (runs
 * used up, a value wider than a run holds) or back from it. */
static void test_repeated_ids(void **state) {
  (void)state;
  struct lens_idseq t = {0};
  uint64_t a = LENS_ID_MAKE(2, 1, 10), b = LENS_ID_MAKE(3, 1, 10);
  assert_int_equal(lens_idseq_put(&t, 0, a, 1), 0);
  assert_int_equal(lens_idseq_put(&t, 0, a, 2), 0);
  assert_int_equal(get(&t, 0, a), 2);
  assert_int_equal(lens_idseq_put(&t, 0, b, 3), 0); /* same number, another id */
  assert_int_equal(get(&t, 0, a), 2);
  assert_int_equal(get(&t, 0, b), 3);
  assert_int_equal(lens_idseq_put(&t, 0, a, 4), 0);
  assert_int_equal(get(&t, 0, a), 4);
  assert_int_equal(get(&t, 0, b), 3);
  /* the same numbers again and again, the top byte alternating: a run
   * each until the slot has no more, then the hash, which must win */
  const int rounds = LENS_IDSEQ_MAX_RUNS + 2;
  for (int r = 0; r < rounds; r++)
    for (uint64_t s = 0; s < 12; s++)
      assert_int_equal(lens_idseq_put(&t, 0, LENS_ID_MAKE(2 + (r & 1), 1, s), r * 100 + (int64_t)s), 0);
  assert_true(t.other.n > 0);
  for (uint64_t s = 0; s < 12; s++) {
    assert_int_equal(get(&t, 0, LENS_ID_MAKE(2, 1, s)), (rounds - 2) * 100 + (int64_t)s);
    assert_int_equal(get(&t, 0, LENS_ID_MAKE(3, 1, s)), (rounds - 1) * 100 + (int64_t)s);
  }
  assert_int_equal(lens_idseq_put(&t, 0, a, 5), 0);
  assert_int_equal(get(&t, 0, a), 5);
  assert_int_equal(get(&t, 0, b), (rounds - 1) * 100 + 10);
  /* values no run holds: the hash, and the run's copy gone */
  uint64_t c = LENS_ID_MAKE(1, 2, 0);
  int64_t wide[] = {INT64_MAX, INT64_MIN + 1, (int64_t)INT32_MIN, (int64_t)INT32_MAX + 1, -5000000000000ll, -1, -2,
                    0, INT32_MAX};
  for (size_t i = 0; i < sizeof wide / sizeof *wide; i++) {
    assert_int_equal(lens_idseq_put(&t, 0, c, 17), 0);
    assert_int_equal(get(&t, 0, c), 17);
    assert_int_equal(lens_idseq_put(&t, 0, c, wide[i]), 0);
    assert_int_equal(get(&t, 0, c), wide[i]);
    assert_int_equal(peek(&t, 0, c), wide[i]);
  }
  /* id 0 is an id like any other */
  assert_int_equal(get(&t, 0, 0), INT64_MIN);
  assert_int_equal(lens_idseq_put(&t, 0, 0, 42), 0);
  assert_int_equal(get(&t, 0, 0), 42);
  assert_int_equal(get(&t, 1, 0), INT64_MIN);
  lens_idseq_free(&t);
}

/* Random 64-bit ids (a foreign producer's): each found with its value. */
static void test_random_ids(void **state) {
  (void)state;
  struct lens_idseq t = {0};
  enum { N = 200000 };
  uint64_t *ids = malloc(N * sizeof *ids);
  assert_non_null(ids);
  for (int i = 0; i < N; i++) {
    ids[i] = rnd();
    assert_int_equal(lens_idseq_put(&t, (uint64_t)i & 3, ids[i], i), 0);
  }
  for (int i = 0; i < N; i++) assert_int_equal(get(&t, (uint64_t)i & 3, ids[i]), i);
  for (int i = 0; i < N; i++) assert_int_equal(peek(&t, (uint64_t)i & 3, ids[i]), i);
  /* memory by the ids, not by their numbers or slots: under 200 bytes an id */
  assert_true(t.bytes < (size_t)N * 200);
  free(ids);
  lens_idseq_free(&t);
}

static size_t heap_used(void) {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

/* A hostile file: sequence numbers 2^39 apart, and just past the gap a run
 * fills: no allocation by the numbers skipped, memory a few hundred bytes
 * an id at most, by the table's count and by the heap's. */
static void test_hostile_gaps(void **state) {
  (void)state;
  struct lens_idseq t = {0};
  size_t before = heap_used();
  assert_int_equal(lens_idseq_put(&t, 0, LENS_ID_MAKE(0, 5, 0), 1), 0);
  assert_int_equal(lens_idseq_put(&t, 0, LENS_ID_MAKE(0, 5, 1ull << 39), 2), 0);
  assert_int_equal(lens_idseq_put(&t, 0, LENS_ID_MAKE(0, 5, (1ull << 39) + 1), 3), 0);
  assert_int_equal(get(&t, 0, LENS_ID_MAKE(0, 5, 0)), 1);
  assert_int_equal(get(&t, 0, LENS_ID_MAKE(0, 5, 1ull << 39)), 2);
  assert_int_equal(get(&t, 0, LENS_ID_MAKE(0, 5, (1ull << 39) + 1)), 3);
  assert_int_equal(get(&t, 0, LENS_ID_MAKE(0, 5, 1ull << 38)), INT64_MIN);
  assert_true(t.bytes < 4096);
  assert_true(heap_used() - before < 65536);
  enum { N = 100000 };
  uint64_t s = 0;
  for (int i = 0; i < N; i++) { /* jumps of 2^39 (new runs, then the hash) and of the gap plus one */
    s += i & 1 ? (1ull << 39) : LENS_IDSEQ_GAP + 1;
    assert_int_equal(lens_idseq_put(&t, 1, LENS_ID_MAKE(1, (unsigned)i & 7, s & 0xFFFFFFFFFFull), i), 0);
  }
  s = 0;
  for (int i = 0; i < N; i++) {
    s += i & 1 ? (1ull << 39) : LENS_IDSEQ_GAP + 1;
    assert_int_equal(get(&t, 1, LENS_ID_MAKE(1, (unsigned)i & 7, s & 0xFFFFFFFFFFull)), i);
  }
  /* ids just within the gap: each fills its holes, at most LENS_IDSEQ_GAP an id */
  for (int i = 0; i < N; i++)
    assert_int_equal(lens_idseq_put(&t, 2, LENS_ID_MAKE(1, 3, (uint64_t)i * (LENS_IDSEQ_GAP + 1)), i), 0);
  for (int i = 0; i < N; i++) assert_int_equal(get(&t, 2, LENS_ID_MAKE(1, 3, (uint64_t)i * (LENS_IDSEQ_GAP + 1))), i);
  /* runs' entries (5 bytes, doubled), the hash's (24, at most 3/8 full) and runs: under 100 bytes an id */
  const size_t per_id = 100, fixed = 2u << 20;
  assert_true(t.holes <= t.puts + 65536);
  assert_true(t.bytes < (size_t)(2 * N + 3) * per_id + fixed);
  assert_true(heap_used() - before < (size_t)(2 * N + 3) * per_id + fixed);
  /* a new slot and session for every id: the hash takes them past the budget */
  for (int i = 0; i < N; i++)
    assert_int_equal(lens_idseq_put(&t, 100 + (uint64_t)i, LENS_ID_MAKE(2, (unsigned)i, 0), i), 0);
  for (int i = 0; i < N; i++) assert_int_equal(get(&t, 100 + (uint64_t)i, LENS_ID_MAKE(2, (unsigned)i, 0)), i);
  assert_true(t.bytes < (size_t)(3 * N + 3) * per_id + fixed);
  assert_true(heap_used() - before < (size_t)(3 * N + 3) * per_id + fixed);
  lens_idseq_free(&t);
  assert_true(heap_used() - before < 65536);
}

/* An id from a mix a hostile or foreign file could give: a writer's next,
 * a restart, a jump, an earlier id again, a random id, id 0. */
struct gen { uint64_t seq[4][8]; uint64_t seen[4096]; size_t n_seen; };
static uint64_t next_id(struct gen *g, uint64_t *scope) {
  *scope = rnd() % 4;
  unsigned slot = (unsigned)(rnd() % 8), kind = (unsigned)(rnd() % 100);
  uint64_t *s = &g->seq[*scope][slot], id;
  if (kind < 60) id = LENS_ID_MAKE(rnd() % 3, slot, (*s)++);
  else if (kind < 64) id = LENS_ID_MAKE(rnd() % 3, slot, *s = rnd() % 50);     /* restart */
  else if (kind < 68) id = LENS_ID_MAKE(rnd() % 3, slot, *s += rnd() % 200);   /* jump */
  else if (kind < 70) id = LENS_ID_MAKE(rnd() % 3, slot, *s = rnd() & 0xFFFFFFFFFFull);
  else if (kind < 85 && g->n_seen) id = g->seen[rnd() % g->n_seen];             /* again */
  else if (kind < 97) id = rnd();
  else id = 0;
  g->seen[g->n_seen++ % 4096] = id;
  if (g->n_seen > 4096) g->n_seen = 4096;
  return id;
}

/* A random mix of puts and gets, the same on both tables: the same answer
 * to every get, and to every id at the end, and after renumbering. */
static void test_same_as_hash(void **state) {
  (void)state;
  struct lens_idseq t = {0};
  struct lens_hash h = {0};
  struct gen *g = calloc(1, sizeof *g);
  assert_non_null(g);
  enum { OPS = 400000, NV = 300000 };
  for (int i = 0; i < OPS; i++) {
    uint64_t scope, id = next_id(g, &scope);
    if (rnd() % 3) {
      int64_t v = rnd() % 50 ? (int64_t)(rnd() % NV) : rnd() % 2 ? -2 - (int64_t)(rnd() % 1000) : (int64_t)rnd();
      if (v == INT64_MIN) v = 0; /* the hash's empty mark */
      assert_int_equal(lens_idseq_put(&t, scope, id, v), 0);
      assert_int_equal(lens_hash_put(&h, scope, id, v), 0);
    }
    assert_int_equal(get(&t, scope, id), hget(&h, scope, id));
    uint64_t s2, other = next_id(g, &s2);
    assert_int_equal(peek(&t, s2, other), hget(&h, s2, other));
  }
  for (size_t x = 0; x < h.cap; x++) {
    const struct lens_hash_slot *e = &h.slots[x];
    if (e->value == INT64_MIN) continue;
    assert_int_equal(get(&t, e->scope, e->key), e->value);
  }
  /* renumbered as the loader renumbers the model's events */
  int32_t *inv = malloc(NV * sizeof *inv);
  assert_non_null(inv);
  for (int i = 0; i < NV; i++) inv[i] = rnd() % 10 ? (int32_t)(rnd() % NV) : -1;
  lens_idseq_renumber(&t, inv, NV);
  for (size_t x = 0; x < h.cap; x++) {
    struct lens_hash_slot *e = &h.slots[x];
    if (e->value == INT64_MIN) continue;
    int64_t want = e->value >= 0 && e->value < NV ? inv[e->value] : -1;
    assert_int_equal(peek(&t, e->scope, e->key), want);
  }
  free(inv);
  free(g);
  lens_hash_free(&h);
  lens_idseq_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_writer_ids),   cmocka_unit_test(test_restarts_and_holes),
      cmocka_unit_test(test_repeated_ids), cmocka_unit_test(test_random_ids),
      cmocka_unit_test(test_hostile_gaps), cmocka_unit_test(test_same_as_hash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
