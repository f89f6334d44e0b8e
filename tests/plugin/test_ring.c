/* The per-thread ring: filling it drops and counts (never blocks), the next
 * START that fits says so, and records round-trip through wrap-around. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "clock.h"
#include "crc32c_fast.h"
#include "lens_chunk.h"
#include "core_fixture.h"
#include "trace_walk.h"
#include "tslot.h"
#include "nccl-lens/nccl_profiler_abi.h"
#include "writer.h"

extern lens_nccl_profiler_v5_t ncclProfiler_v5;

#define RING (64 * 1024)
#define STEP_REC 56 /* START header 48 + ProxyStep payload 8 */

static void *start_step(int step) {
  lens_nccl_descr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_PROXY_STEP;
  d.parentObj = (void *)0x10;
  d.proxyStep.step = step;
  void *h = NULL;
  assert_int_equal(ncclProfiler_v5.startEvent(NULL, &h, &d), 0);
  return h;
}

static void test_fill_to_full_counts_and_never_blocks(void **state) {
  const int fit = RING / STEP_REC, tries = 5000;
  uint64_t t0 = lens_mono_ns();
  for (int i = 0; i < tries; i++) assert_non_null(start_step(i)); /* a handle even when dropped */
  uint64_t dt = lens_mono_ns() - t0;
  assert_true(dt < 200ull * 1000 * 1000); /* 5000 calls, nothing waited */
  struct lens_drops d = fix_drops();
  assert_int_equal(d.ring_full, tries - fit);
  fix_drain_and_load();
  assert_int_equal(fix_nrecs, fit);
  for (int i = 0; i < fit; i++) {
    assert_int_equal(fix_hdr(i)->kind, LENS_REC_START);
    assert_int_equal(fix_hdr(i)->type, LENS_T_PROXY_STEP);
    const struct lens_p_proxy_step *p = (const void *)(fix_start(i) + 1);
    assert_int_equal(p->step, i); /* the first ones were kept, in order */
    assert_int_equal(fix_start(i)->h.aux & LENS_START_F_DROPPED_BEFORE, 0);
  }
  /* the next START that fits carries the mark */
  void *h = start_step(99999);
  fix_drain_and_load();
  int k = fix_find_start((uint64_t)(uintptr_t)h);
  assert_true(k >= 0);
  assert_true(fix_start(k)->h.aux & LENS_START_F_DROPPED_BEFORE);
  /* ...and only that one */
  void *h2 = start_step(100000);
  fix_drain_and_load();
  k = fix_find_start((uint64_t)(uintptr_t)h2);
  assert_true(k >= 0);
  assert_int_equal(fix_start(k)->h.aux & LENS_START_F_DROPPED_BEFORE, 0);
}

static void test_wraparound_round_trip(void **state) {
  lens_nccl_state_args_v5_t a;
  uint64_t before = fix_drops().ring_full;
  int base = 200000;
  /* 5 x 900 records of 3 kinds: crosses the end of the 64 KiB ring several times */
  for (int round = 0; round < 5; round++) {
    for (int i = 0; i < 300; i++) {
      void *h = start_step(base + round * 300 + i);
      a.proxyStep.transSize = (size_t)(round * 300 + i);
      ncclProfiler_v5.recordEventState(h, LENS_ST_PROXY_STEP_SEND_WAIT, &a);
      ncclProfiler_v5.stopEvent(h);
    }
    while (lens_writer_drain_once() > 0) {
    }
  }
  assert_int_equal(fix_drops().ring_full, before);
  fix_drain_and_load();
  /* find the first of ours and check every later one in order */
  int first = -1;
  for (int i = 0; i < fix_nrecs && first < 0; i++)
    if (fix_hdr(i)->kind == LENS_REC_START && ((const struct lens_p_proxy_step *)(fix_start(i) + 1))->step == base)
      first = i;
  assert_true(first >= 0);
  assert_int_equal(fix_nrecs - first, 1500 * 3);
  uint64_t prev_ts = 0;
  for (int n = 0; n < 1500; n++) {
    const struct lens_rec_start *s = fix_start(first + 3 * n);
    const struct lens_rec_state *st = (const void *)fix_recs[first + 3 * n + 1].bytes;
    const struct lens_rec_stop *sp = (const void *)fix_recs[first + 3 * n + 2].bytes;
    assert_int_equal(s->h.kind, LENS_REC_START);
    assert_int_equal(((const struct lens_p_proxy_step *)(s + 1))->step, base + n);
    assert_int_equal(st->h.kind, LENS_REC_STATE);
    assert_int_equal(st->id, s->id);
    assert_int_equal(st->arg, (uint64_t)n);
    assert_int_equal(st->h.aux, LENS_ST_PROXY_STEP_SEND_WAIT);
    assert_int_equal(sp->h.kind, LENS_REC_STOP);
    assert_int_equal(sp->id, s->id);
    assert_true(s->ts >= prev_ts && st->ts >= s->ts && sp->ts >= st->ts);
    prev_ts = sp->ts;
  }
  /* converted to CLOCK_MONOTONIC: close to now, not raw TSC ticks */
  uint64_t now = lens_mono_ns();
  assert_true(prev_ts <= now + 1000000 && prev_ts > now - 10ull * 1000000000ull);
}

/* Records that straddle the end of the ring leave the writer as ONE EVENTS
 * chunk written straight from the ring in two spans: the chunk passes the
 * shared CRC checks, holds exactly the records, in order, converted in
 * place (CLOCK_MONOTONIC ts), and the ring is free again. Two ways to wrap:
 * a PAD fills the end of the buffer, or a record ends exactly there. */
static void wrap_case(int gap_mod80, int base) {
  struct lens_tslot *s = lens_tls_cur.slot;
  assert_non_null(s);
  int n = 0;
  /* head ~2 KiB before the end of the buffer... */
  while (RING - (atomic_load(&s->prod.head) & (RING - 1)) > 2048) {
    ncclProfiler_v5.stopEvent(start_step(base + n++));
    if (n % 64 == 0) fix_drain_and_load();
  }
  /* ...at a gap that pairs of 56 + 24 bytes fill exactly (0 mod 80) or not */
  void *stale = start_step(base - 1);
  while ((RING - (atomic_load(&s->prod.head) & (RING - 1))) % 80 != (uint64_t)gap_mod80)
    ncclProfiler_v5.stopEvent(stale); /* 24 bytes each */
  fix_drain_and_load();
  struct trace_tally before, after;
  assert_int_equal(trace_walk(fix_path, &before), 0);
  int first_new = fix_nrecs;
  uint64_t h0 = atomic_load(&s->prod.head);
  void *hs[100];
  for (int i = 0; i < 100; i++) {
    hs[i] = start_step(base + n + i);
    ncclProfiler_v5.stopEvent(hs[i]);
  }
  assert_true((h0 & (RING - 1)) + 100 * (STEP_REC + 24) > RING); /* it did wrap */
  uint64_t pad = atomic_load(&s->prod.head) - h0 - 100 * (STEP_REC + 24);
  if (gap_mod80 == 0)
    assert_int_equal(pad, 0);
  else
    assert_true(pad > 0);
  uint64_t moved = lens_writer_drain_once();
  assert_int_equal(atomic_load(&s->tail), atomic_load(&s->prod.head)); /* all consumed in one pass */
  assert_int_equal(moved, 100 * (STEP_REC + 24) + pad);
  assert_int_equal(trace_walk(fix_path, &after), 0);
  assert_int_equal(after.bad_tail_bytes, 0);
  assert_int_equal(after.seq_gaps, 0);
  assert_int_equal(after.by_type[LENS_CHUNK_EVENTS] + after.by_type[LENS_CHUNK_EVENTS_PACKED] -
                       before.by_type[LENS_CHUNK_EVENTS] - before.by_type[LENS_CHUNK_EVENTS_PACKED],
                   1);
  assert_int_equal(after.records - before.records, 200);
  assert_int_equal(after.ts_nonmono, 0);
  fix_drain_and_load();
  assert_int_equal(fix_nrecs - first_new, 200);
  uint64_t now = lens_mono_ns();
  for (int i = 0; i < 100; i++) {
    const struct lens_rec_start *st = fix_start(first_new + 2 * i);
    const struct lens_rec_stop *sp = (const void *)fix_recs[first_new + 2 * i + 1].bytes;
    assert_int_equal(st->h.kind, LENS_REC_START);
    assert_int_equal(st->id, (uint64_t)(uintptr_t)hs[i]);
    assert_int_equal(((const struct lens_p_proxy_step *)(st + 1))->step, base + n + i);
    assert_int_equal(sp->h.kind, LENS_REC_STOP);
    assert_int_equal(sp->id, st->id);
    assert_true(st->ts <= sp->ts && sp->ts <= now && sp->ts > now - 10ull * 1000000000ull);
  }
}

static void test_wrapped_records_make_one_valid_chunk(void **state) {
  wrap_case(0, 300000);  /* the 100th-or-so record ends exactly at the end */
  wrap_case(40, 400000); /* a PAD fills the end */
}

/* The writer's hardware CRC must be the shared definition, bit for bit. */
static void test_fast_crc_matches_shared_crc(void **state) {
  uint8_t buf[1031];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof buf; i++) {
    x = x * 1103515245u + 12345u;
    buf[i] = (uint8_t)(x >> 16);
  }
  for (size_t off = 0; off < 9; off++)
    for (size_t len = 0; len < 300; len += 7)
      assert_int_equal(lens_crc32c_fast(0, buf + off, len), lens_crc32c(0, buf + off, len));
  assert_int_equal(lens_crc32c_fast(0, "123456789", 9), 0xE3069283u); /* CRC-32C check value */
  struct lens_chunk_hdr h;
  lens_chunk_hdr_init_fast(&h, LENS_CHUNK_NOTE, 3, 9, buf, sizeof buf);
  assert_int_equal(lens_chunk_hdr_check(&h), 0);
  assert_int_equal(lens_chunk_payload_check(&h, buf), 0);
}

static int group_setup(void **state) {
  fix_setup(4, RING);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fill_to_full_counts_and_never_blocks),
      cmocka_unit_test(test_wraparound_round_trip),
      cmocka_unit_test(test_wrapped_records_make_one_valid_chunk),
      cmocka_unit_test(test_fast_crc_matches_shared_crc),
  };
  return cmocka_run_group_tests(tests, group_setup, NULL);
}
