/* The INDEX chunks (docs/trace-format.md, "The index") that the plugin's
 * writer and lens-gen-job write after each events chunk, checked against
 * the chunks they describe, decoded here record by record:
 * - every events chunk is indexed and no INDEX is refused (trace_index.h);
 * - its records count, time range (a folded run's last record included),
 *   START sequence range and event types are the chunk's;
 * - every STOP and STATE whose START is not in its chunk is covered by one
 *   of the chunk's touches (or the chunk says it may touch any id);
 * - every open set lists every event whose START it had drained (sequence
 *   number within drained[] of its slot) and whose STOP is more than 100 us
 *   after the set was taken, or never came: what a window's plan relies on;
 *   and no id it lists had stopped 50 ms before it was taken;
 * - the reader's window plan (window_plan.h) over those records, for 1 %
 *   and 5 % windows at a tenth, the middle and nine tenths of each file,
 *   with and without every KernelCh: every chunk holding a record of an
 *   event the window needs, or of an ancestor of one, is planned;
 * on the replay's traces (`all` zstd, packed and fixed; `overrun`; `pxn`;
 * `symmetric` and `phases` through API v7 and NCCL 2.31's profiler thread;
 * `hang-proxy`, a job killed in a hang) and on lens-gen-job's (both
 * layouts, fixed records). Then lens_openset alone: random STARTs and STOPs
 * (STOPs before their START included) against a plain
 * list (events past their slot's window, a slot that jumps ahead), and a
 * table of long-open events that fills says so. And a forged INDEX (a
 * record count or a touch count its chunk does not have) is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "lens_chunk.h"
#include "lens_index.h"
#include "lens_unpack.h"
#include "reader/chunk_stream.h"
#include "reader/trace_index.h"
#include "reader/window_plan.h"
#include "../lens_test_file.h"
#include "../lens_test_tmp.h"

struct rec {
  unsigned kind, type;
  uint64_t id, ts, last;
  uint64_t parent; /* a START's */
  uint32_t aux;    /* a START's flags */
};
struct ev {
  uint64_t id, start, stop;
  int stopped;
};

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* A job killed between an events chunk and its INDEX leaves that chunk unindexed. */
static size_t unindexed_allowed;

static struct rec *recs;
static size_t n_recs, cap_recs;
static struct ev *evs;
static size_t n_evs, cap_evs;
/* Every record of the file being checked, with its events chunk (the plan's check). */
struct frec {
  struct lens_wplan_rec r;
  uint32_t chunk;
};
static struct frec *all;
static size_t n_all, cap_all;

static void push_rec(unsigned kind, unsigned type, uint64_t id, uint64_t ts, uint64_t last, uint64_t parent,
                     uint32_t aux) {
  if (n_recs == cap_recs) {
    cap_recs = cap_recs ? cap_recs * 2 : 4096;
    recs = realloc(recs, cap_recs * sizeof *recs);
    assert_non_null(recs);
  }
  recs[n_recs++] = (struct rec){kind, type, id, ts, last > ts ? last : ts, parent, aux};
}

/* A fixed record's kind, type, id and time (EVENTS chunks, RAW packed records). */
static void fixed_rec(const uint8_t *p, uint32_t size) {
  struct lens_rec_hdr h;
  memcpy(&h, p, sizeof h);
  uint64_t id, ts, last = 0, parent = 0;
  memcpy(&id, p + 8, 8);
  if (h.kind == LENS_REC_START) memcpy(&ts, p + 32, 8), memcpy(&parent, p + 16, 8);
  else memcpy(&ts, p + 16, 8);
  if (h.kind == LENS_REC_STATE && size >= sizeof(struct lens_rec_state_run))
    memcpy(&last, p + offsetof(struct lens_rec_state_run, last_ts), 8);
  push_rec(h.kind, h.type, id, ts, last, parent, h.kind == LENS_REC_START ? h.aux : 0);
}

/* The records of one events chunk into recs (emptied first). */
static void decode(uint16_t type, const uint8_t *p, uint32_t len, ZSTD_DCtx *z) {
  n_recs = 0;
  if (type == LENS_CHUNK_EVENTS) {
    struct lens_events_hdr eh;
    memcpy(&eh, p, sizeof eh);
    size_t o = sizeof eh;
    for (uint32_t i = 0; i < eh.count; i++) {
      uint16_t size;
      memcpy(&size, p + o, 2);
      assert_true(size >= 24 && o + size <= len);
      fixed_rec(p + o, size);
      o += size;
    }
    return;
  }
  struct lens_packed_hdr ph;
  memcpy(&ph, p, sizeof ph);
  const uint8_t *body = p + sizeof ph;
  size_t blen = len - sizeof ph;
  uint8_t *zb = NULL;
  if (ph.codec == LENS_PACK_CODEC_ZSTD) {
    zb = malloc(ph.body_bytes ? ph.body_bytes : 1);
    assert_non_null(zb);
    size_t got = ZSTD_decompressDCtx(z, zb, ph.body_bytes, body, blen);
    assert_false(ZSTD_isError(got));
    body = zb, blen = got;
  }
  struct lens_unpack_cur cur;
  struct lens_unpacked r = {0};
  lens_unpack_init(&cur, body, blen, ph.raw_bytes);
  for (uint32_t i = 0; i < ph.count; i++) {
    assert_true(lens_unpack_next(&cur, &r));
    if (!r.kind) fixed_rec(r.raw, r.size);
    else
      push_rec(r.kind, r.type, r.id, r.ts, r.kind == LENS_REC_STATE && r.repeats ? r.last_ts : 0,
               r.kind == LENS_REC_START ? r.parent : 0, r.kind == LENS_REC_START ? r.aux : 0);
  }
  free(zb);
}

static long find_ev(uint64_t id) {
  for (size_t i = n_evs; i-- > 0;)
    if (evs[i].id == id) return (long)i;
  return -1;
}

static long find_key(uint64_t key) {
  for (size_t i = n_evs; i-- > 0;)
    if (LENS_INDEX_KEY(evs[i].id) == key) return (long)i;
  return -1;
}

struct file_stats {
  size_t files, chunks, opens, listed, touches, required;
  size_t plans, plan_chunks, plan_needed, plan_of; /* the window plans checked, their chunks, the exact ones, all */
};

/* ---- the reader's window plan (window_plan.h) with real records ---- */
struct chunk_list {
  size_t *first; /* per chunk: its records in all[] are all[first[k] .. first[k + 1]) */
  struct lens_wplan_rec *buf;
};
static int plan_decode(void *ctx, size_t k, const struct lens_wplan_rec **out, size_t *n) {
  struct chunk_list *c = ctx;
  size_t a = c->first[k], b = c->first[k + 1];
  for (size_t i = a; i < b; i++) c->buf[i - a] = all[i].r;
  *out = c->buf, *n = b - a;
  return 0;
}

/* key -> the latest START of it in all[] */
static uint64_t *km_k;
static long *km_v;
static size_t km_cap;
static size_t km_home(uint64_t k) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (km_cap - 1); }
static void by_key_build(void) {
  for (km_cap = 1024; km_cap < 2 * n_all + 2; km_cap *= 2) {
  }
  km_k = calloc(km_cap, sizeof *km_k), km_v = malloc(km_cap * sizeof *km_v);
  assert_true(km_k && km_v);
  for (size_t i = 0; i < n_all; i++) {
    if (all[i].r.kind != LENS_REC_START) continue;
    uint64_t k = LENS_INDEX_KEY(all[i].r.id) | LENS_ID_TAG;
    size_t h = km_home(k);
    while (km_k[h] && km_k[h] != k) h = (h + 1) & (km_cap - 1);
    km_k[h] = k, km_v[h] = (long)i;
  }
}
static long by_key(uint64_t id) { /* the START of id in all[] (the latest), -1 none */
  uint64_t k = LENS_INDEX_KEY(id) | LENS_ID_TAG;
  for (size_t h = km_home(k); km_k[h]; h = (h + 1) & (km_cap - 1))
    if (km_k[h] == k) return km_v[h];
  return -1;
}

/* Windows of 1 % and 5 % at a tenth, the middle and nine tenths of the file's span: every chunk holding a record
 * of an event the window needs (one that starts before its end and does not stop before its start), or of an
 * ancestor of one (of this process), is planned; with need_types KernelCh, every KernelCh's too. */
static void check_plans(const char *path, const struct lens_trace_index *ix, struct file_stats *st) {
  if (!n_all) return;
  uint64_t t0 = UINT64_MAX, t1 = 0;
  for (size_t i = 0; i < n_all; i++) {
    if (all[i].r.ts < t0) t0 = all[i].r.ts;
    if (all[i].r.ts > t1) t1 = all[i].r.ts;
  }
  struct chunk_list cl = {calloc(ix->n + 1, sizeof(size_t)), malloc(n_all * sizeof(struct lens_wplan_rec))};
  uint8_t *need = calloc(ix->n, 1), *in = calloc(ix->n, 1), *ev_need = calloc(n_all, 1);
  uint64_t *stop = malloc(n_all * sizeof *stop);
  long *start_of = malloc(n_all * sizeof *start_of), *parent_of = malloc(n_all * sizeof *parent_of);
  assert_true(cl.first && cl.buf && need && in && ev_need && stop && start_of && parent_of);
  for (size_t i = 0; i < n_all; i++) cl.first[all[i].chunk + 1]++;
  for (size_t k = 0; k < ix->n; k++) cl.first[k + 1] += cl.first[k];
  /* each record's START, each START's first STOP and parent */
  by_key_build();
  for (size_t i = 0; i < n_all; i++) stop[i] = UINT64_MAX, parent_of[i] = -1;
  for (size_t i = 0; i < n_all; i++) {
    start_of[i] = all[i].r.kind == LENS_REC_START ? (long)i : by_key(all[i].r.id);
    if (all[i].r.kind == LENS_REC_STOP && start_of[i] >= 0 && stop[start_of[i]] == UINT64_MAX)
      stop[start_of[i]] = all[i].r.ts;
    if (all[i].r.kind == LENS_REC_START && all[i].r.parent && !(all[i].r.flags & LENS_START_F_REMOTE))
      parent_of[i] = by_key(all[i].r.parent);
  }
  const double at[3] = {0.1, 0.5, 0.9}, width[2] = {0.01, 0.05};
  for (int gpu = 0; gpu < 2; gpu++)
    for (int a = 0; a < 3; a++)
      for (int w = 0; w < 2; w++) {
        uint64_t s = t0 + (uint64_t)(at[a] * (double)(t1 - t0)), u = s + (uint64_t)(width[w] * (double)(t1 - t0)) + 1;
        memset(need, 0, ix->n), memset(in, 0, ix->n), memset(ev_need, 0, n_all);
        for (size_t i = 0; i < n_all; i++) {
          const struct lens_wplan_rec *r = &all[i].r;
          if (r->kind != LENS_REC_START) continue;
          int n = (r->ts < u && stop[i] >= s) || (gpu && r->type == LENS_T_KERNEL_CH);
          for (long j = n ? (long)i : -1, depth = 0; j >= 0 && !ev_need[j] && depth < 64; depth++)
            ev_need[j] = 1, j = parent_of[j];
        }
        for (size_t i = 0; i < n_all; i++)
          if (start_of[i] >= 0 && ev_need[start_of[i]]) need[all[i].chunk] = 1;
        struct lens_wplan_opts o = {.since = s, .until = u, .need_types = gpu ? 1u << LENS_T_KERNEL_CH : 0, .need_margin = UINT64_MAX};
        struct lens_wplan_stats ps;
        assert_int_equal(lens_wplan_make(ix, &o, plan_decode, &cl, in, &ps), 0);
        size_t planned = 0, needed = 0;
        for (size_t k = 0; k < ix->n; k++) {
          planned += in[k], needed += need[k];
          if (need[k] && !in[k])
            fail_msg("%s: a window %.2f..%.2f%s needs chunk %zu (seq %llu), not planned", path, at[a],
                     at[a] + width[w], gpu ? " with every KernelCh" : "", k, (unsigned long long)ix->c[k].seq);
        }
        assert_int_equal(planned, ps.planned);
        st->plans++, st->plan_chunks += planned, st->plan_needed += needed, st->plan_of += ix->n;
      }
  free(cl.first), free(cl.buf), free(need), free(in), free(ev_need), free(stop), free(start_of), free(parent_of);
  free(km_k), free(km_v);
  km_k = NULL, km_v = NULL;
}

/* One trace: each INDEX against its chunk, then each open set against the events. */
static void check_file(const char *path, struct file_stats *st) {
  struct lens_trace_index ix;
  char err[512];
  if (lens_trace_index_read(path, &ix, err, sizeof err)) fail_msg("%s", err);
  if (ix.bad) fail_msg("%s: %zu INDEX chunks refused", path, ix.bad);
  if (ix.indexed + unindexed_allowed < ix.n) fail_msg("%s: %zu of %zu events chunks indexed", path, ix.indexed, ix.n);
  st->files++;
  struct lens_cstream s;
  if (lens_cstream_open(&s, path, 1 << 20, err, sizeof err)) fail_msg("%s", err);
  ZSTD_DCtx *z = ZSTD_createDCtx();
  assert_non_null(z);
  n_evs = 0, n_all = 0;
  size_t k = 0;
  struct lens_chunk_hdr h;
  const uint8_t *p;
  int r;
  while ((r = lens_cstream_next(&s, &h, &p, err, sizeof err)) == 1) {
    if (h.type != LENS_CHUNK_EVENTS && h.type != LENS_CHUNK_EVENTS_PACKED) continue;
    assert_true(k < ix.n);
    const struct lens_chunk_ix *c = &ix.c[k++];
    assert_int_equal(c->seq, h.seq);
    decode(h.type, p, h.payload_len, z);
    assert_int_equal(c->records, n_recs);
    for (size_t i = 0; i < n_recs; i++) {
      if (n_all == cap_all) {
        cap_all = cap_all ? cap_all * 2 : 65536;
        all = realloc(all, cap_all * sizeof *all);
        assert_non_null(all);
      }
      const struct rec *x = &recs[i];
      all[n_all++] = (struct frec){{(uint8_t)x->kind, (uint8_t)x->type, x->aux, x->id, x->ts, x->parent},
                                   (uint32_t)(k - 1)};
    }
    int indexed = (c->flags & LENS_CIX_INDEXED) != 0;
    uint64_t lo = 0, hi = 0, first = UINT64_MAX, last = 0;
    uint32_t types = 0;
    for (size_t i = 0; i < n_recs; i++) {
      const struct rec *x = &recs[i];
      if (x->ts < first) first = x->ts;
      if (x->last > last) last = x->last;
      types |= 1u << x->type;
      if (x->kind != LENS_REC_START) continue;
      uint64_t seq = LENS_ID_SEQ(x->id);
      assert_int_equal(LENS_ID_SLOT(x->id), c->slot);
      if (!hi || seq < lo) lo = seq;
      if (seq > hi) hi = seq;
      if (n_evs == cap_evs) {
        cap_evs = cap_evs ? cap_evs * 2 : 4096;
        evs = realloc(evs, cap_evs * sizeof *evs);
        assert_non_null(evs);
      }
      evs[n_evs++] = (struct ev){x->id, x->ts, 0, 0};
    }
    if (!indexed) goto stops;
    if (c->first_ts != first || c->last_ts != last)
      fail_msg("%s chunk %llu: index says %llu..%llu, records %llu..%llu", path, (unsigned long long)h.seq,
               (unsigned long long)c->first_ts, (unsigned long long)c->last_ts, (unsigned long long)first,
               (unsigned long long)last);
    assert_int_equal(c->start_lo, lo);
    assert_int_equal(c->start_hi, hi);
    assert_int_equal(c->types, types);
  stops:
    for (size_t i = 0; i < n_recs; i++) {
      const struct rec *x = &recs[i];
      if (x->kind == LENS_REC_START || !x->id) continue;
      if (x->kind == LENS_REC_STOP) {
        long e = find_ev(x->id);
        if (e >= 0 && !evs[e].stopped) evs[e].stopped = 1, evs[e].stop = x->ts;
      }
      uint32_t slot = LENS_ID_SLOT(x->id);
      uint64_t seq = LENS_ID_SEQ(x->id);
      if (!indexed || (slot == c->slot && hi && seq >= lo && seq <= hi)) continue; /* its START is here */
      int covered = (c->flags & LENS_CIX_TOUCH_ANY) != 0;
      for (uint32_t t = 0; !covered && t < c->n_touch; t++) {
        const struct lens_index_touch *u = &ix.touch[c->touch + t];
        covered = u->slot == slot && seq >= u->seq_lo && seq <= u->seq_hi;
      }
      if (!covered) fail_msg("%s chunk %llu: a record of id %llx is in no touch", path, (unsigned long long)h.seq,
                             (unsigned long long)x->id);
      st->touches++;
    }
  }
  assert_int_equal(r, 0);
  assert_int_equal(k, ix.n);
  lens_cstream_close(&s);
  ZSTD_freeDCtx(z);
  for (size_t o = 0; o < ix.n_open; o++) {
    const struct lens_open_ix *set = &ix.open[o];
    if (set->flags & LENS_INDEX_OPEN_F_INCOMPLETE) continue;
    st->opens++;
    const uint64_t *ids = ix.ids + set->ids;
    for (size_t i = 1; i < set->n_ids; i++) assert_true(ids[i - 1] < ids[i]);
    for (size_t i = 0; i < n_evs; i++) {
      const struct ev *e = &evs[i];
      uint64_t hi = 0;
      for (size_t d = 0; d < set->n_drained; d++)
        if (ix.drained[set->drained + d].slot == LENS_ID_SLOT(e->id)) hi = ix.drained[set->drained + d].seq_hi;
      /* 100 us: the TSC's conversion to MONOTONIC may put a STOP drained before the set a little after it */
      if (LENS_ID_SEQ(e->id) > hi || (e->stopped && e->stop <= set->taken_mono_ns + 100000ull)) continue;
      st->required++;
      uint64_t key = LENS_INDEX_KEY(e->id);
      if (!bsearch(&key, ids, set->n_ids, sizeof *ids, cmp_u64))
        fail_msg("%s: the open set taken at %llu misses %llx (start %llu, stop %llu%s)", path,
                 (unsigned long long)set->taken_mono_ns, (unsigned long long)e->id, (unsigned long long)e->start,
                 (unsigned long long)e->stop, e->stopped ? "" : ", never");
    }
    for (size_t i = 0; i < set->n_ids; i++) {
      long e = find_key(ids[i]);
      if (e >= 0 && evs[e].stopped && evs[e].stop + 50000000ull < set->taken_mono_ns)
        fail_msg("%s: the open set taken at %llu lists %llx, stopped at %llu", path,
                 (unsigned long long)set->taken_mono_ns, (unsigned long long)ids[i], (unsigned long long)evs[e].stop);
    }
    st->listed += set->n_ids;
  }
  st->chunks += ix.n;
  if (ix.indexed == ix.n) check_plans(path, &ix, st);
  lens_trace_index_free(&ix);
}

static void check_dir(const char *dir, const char *what, size_t min_opens) {
  char cmd[700], path[600];
  snprintf(cmd, sizeof cmd, "ls %s/*.lens", dir);
  FILE *ls = popen(cmd, "r");
  assert_non_null(ls);
  struct file_stats st = {0};
  while (fgets(path, sizeof path, ls)) {
    path[strcspn(path, "\n")] = 0;
    check_file(path, &st);
  }
  pclose(ls);
  printf("%s: %zu files, %zu events chunks, %zu touching records covered, %zu open sets (%zu ids, %zu required); "
         "%zu window plans: %zu chunks planned, %zu needed, of %zu\n",
         what, st.files, st.chunks, st.touches, st.opens, st.listed, st.required, st.plans, st.plan_chunks,
         st.plan_needed, st.plan_of);
  assert_true(st.files > 0 && st.chunks > 0);
  if (min_opens > 1) assert_true(st.required > 0); /* the open sets' check checked something */
  assert_true(st.opens >= min_opens);
}

static void replay(const char *name, const char *env, const char *args, size_t min_opens) {
  char dir[256], cmd[1024];
  lens_test_tmpdir(dir, sizeof dir, "trace-index");
  snprintf(cmd, sizeof cmd, "%s %s/bin/nccl-lens replay --quiet %s --out %s >/dev/null 2>&1", env, LENS_BUILD_DIR,
           args, dir);
  int rc = system(cmd);
  if (!strstr(args, "hang")) assert_int_equal(rc, 0);
  check_dir(dir, name, min_opens);
  lens_test_rmtree(dir);
}

static void test_replay_all(void **state) {
  (void)state;
  replay("all, zstd", "", "--scenario all --nodes 2 --ranks-per-node 2 --iters 20", 4);
  replay("all, packed", "NCCL_LENS_COMPRESS=packed", "--scenario all --nodes 2 --iters 5", 2);
  replay("all, fixed records", "NCCL_LENS_COMPRESS=none", "--scenario all --nodes 2 --iters 5", 2);
}

static void test_replay_more(void **state) {
  (void)state;
  replay("overrun", "", "--scenario overrun --nodes 2 --iters 10", 1);
  replay("pxn", "", "--scenario pxn --nodes 2 --ranks-per-node 2 --iters 10", 1);
  replay("symmetric, API v7", "", "--scenario symmetric --api auto --nodes 2 --iters 10", 1);
  replay("phases, API v7", "", "--scenario phases --api auto --nodes 2 --iters 10", 1);
  unindexed_allowed = 1;
  replay("hang-proxy, killed", "", "--scenario hang-proxy --nodes 2 --iters 3", 1);
  unindexed_allowed = 0;
}

static void gen(const char *name, const char *args) {
  char dir[256], cmd[1024];
  lens_test_tmpdir(dir, sizeof dir, "trace-index-gen");
  snprintf(cmd, sizeof cmd, "%s/bin/lens-gen-job -o %s --ranks 4 --hosts 2 --events 200000 %s >/dev/null",
           LENS_BUILD_DIR, dir, args);
  assert_int_equal(system(cmd), 0);
  check_dir(dir, name, 2);
  lens_test_rmtree(dir);
}

static void test_generator(void **state) {
  (void)state;
  gen("lens-gen-job", "");
  gen("lens-gen-job, profiler thread", "--profiler-thread");
  gen("lens-gen-job, fixed records", "--compress none");
  char dir[256], cmd[1024];
  lens_test_tmpdir(dir, sizeof dir, "trace-index-none");
  snprintf(cmd, sizeof cmd, "%s/bin/lens-gen-job -o %s --ranks 2 --hosts 1 --events 20000 --no-index >/dev/null",
           LENS_BUILD_DIR, dir);
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s/nccl-lens-gen-host000-10000.lens", dir);
  struct lens_trace_index ix;
  char err[256];
  assert_int_equal(lens_trace_index_read(cmd, &ix, err, sizeof err), 0);
  assert_true(ix.n > 0); /* an older trace: every chunk unindexed, nothing refused */
  assert_int_equal(ix.indexed, 0);
  assert_int_equal(ix.bad, 0);
  for (size_t k = 0; k < ix.n; k++) assert_false(ix.c[k].flags & LENS_CIX_INDEXED);
  lens_trace_index_free(&ix);
  lens_test_rmtree(dir);
}

/* A forged INDEX is refused, not believed: a copy of a real trace whose first INDEX says one record more than
 * its chunk holds, and another whose first INDEX claims more touches than its payload has, read with that
 * chunk unindexed (bad 1), every other chunk as before. */
static void forge(const char *from, const char *to, int how) {
  FILE *f = fopen(from, "rb");
  assert_non_null(f);
  static uint8_t buf[4 << 20];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  assert_true(n > sizeof(struct lens_file_hdr) && n < sizeof buf);
  size_t off = sizeof(struct lens_file_hdr);
  while (off + sizeof(struct lens_chunk_hdr) <= n) {
    struct lens_chunk_hdr h;
    memcpy(&h, buf + off, sizeof h);
    uint8_t *p = buf + off + sizeof h;
    if (h.type == LENS_CHUNK_INDEX) {
      struct lens_index_hdr ih;
      memcpy(&ih, p, sizeof ih);
      if (how == 0) ih.records++;
      else ih.n_touch = (uint16_t)(ih.n_touch + 1000);
      memcpy(p, &ih, sizeof ih);
      lens_chunk_hdr_init(&h, h.type, h.session, h.seq, p, h.payload_len);
      memcpy(buf + off, &h, sizeof h);
      break;
    }
    off += sizeof h + h.payload_len + lens_chunk_padding(h.payload_len);
  }
  f = fopen(to, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(buf, 1, n, f), n);
  fclose(f);
}

static void test_forged(void **state) {
  (void)state;
  char dir[256], cmd[1024], path[600], out[700];
  lens_test_tmpdir(dir, sizeof dir, "trace-index-forged");
  snprintf(cmd, sizeof cmd, "%s/bin/nccl-lens replay --quiet --scenario allreduce --nodes 1 --iters 2 --out %s",
           LENS_BUILD_DIR, dir);
  assert_int_equal(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "ls %s/*.lens | head -1", dir);
  FILE *ls = popen(cmd, "r");
  assert_non_null(fgets(path, sizeof path, ls));
  pclose(ls);
  path[strcspn(path, "\n")] = 0;
  struct lens_trace_index good, bad;
  char err[256];
  assert_int_equal(lens_trace_index_read(path, &good, err, sizeof err), 0);
  assert_int_equal(good.bad, 0);
  assert_true(good.indexed == good.n && good.n > 0);
  for (int how = 0; how < 2; how++) {
    snprintf(out, sizeof out, "%s/forged-%d.lens", dir, how);
    forge(path, out, how);
    assert_int_equal(lens_trace_index_read(out, &bad, err, sizeof err), 0);
    assert_int_equal(bad.n, good.n);
    assert_int_equal(bad.bad, 1);
    assert_int_equal(bad.indexed, good.n - 1);
    assert_false(bad.c[0].flags & LENS_CIX_INDEXED); /* the first events chunk's INDEX was the forged one */
    lens_trace_index_free(&bad);
  }
  lens_trace_index_free(&good);
  lens_test_rmtree(dir);
}

/* ---- lens_openset alone ---- */

static struct lens_rec_stop rec_of(unsigned kind, uint64_t id) {
  struct lens_rec_stop r = {.h = {.size = sizeof r, .kind = (uint8_t)kind, .type = LENS_ID_TYPE(id)}, .id = id};
  return r;
}

static size_t snapshot(struct lens_openset *o, uint64_t **ids, uint32_t *flags) {
  size_t cap = lens_openset_bound(o);
  uint8_t *buf = malloc(cap);
  assert_non_null(buf);
  size_t len = lens_openset_write(o, 1, buf, cap);
  assert_true(len >= sizeof(struct lens_index_open));
  struct lens_index_open h;
  memcpy(&h, buf, sizeof h);
  *flags = h.flags;
  *ids = malloc((h.n_open ? h.n_open : 1) * sizeof **ids);
  memcpy(*ids, buf + sizeof h + h.n_slots * sizeof(struct lens_index_drained), h.n_open * sizeof **ids);
  for (size_t i = 1; i < h.n_open; i++) assert_true((*ids)[i - 1] < (*ids)[i]);
  free(buf);
  return h.n_open;
}

/* Four slots, STARTs in sequence order per slot with gaps (lost STARTs), STOPs at random (some before their
 * START: a STOP drained first; some never: open for ever, past the window into the long-open table; a slot
 * that jumps far ahead): after every batch the open set is exactly the events started and not stopped. */
static void test_openset_random(void **state) {
  (void)state;
  struct lens_openset o;
  assert_int_equal(lens_openset_init(&o, 4), 0);
  enum { N = 40000 };
  static uint64_t id[N];
  static uint8_t started[N], stopped[N];
  uint64_t next_seq[4] = {1, 1, 1, 1};
  srand(7);
  for (int i = 0; i < N; i++) {
    int slot = i % 4;
    next_seq[slot] += 1 + (rand() % 16 == 0) + (i == N / 2 && slot == 3) * 3 * LENS_INDEX_WINDOW; /* gaps, a jump */
    id[i] = LENS_ID_MAKE(LENS_T_PROXY_STEP, slot, next_seq[slot]);
  }
  static int stop_at[N]; /* the START after which its STOP comes; -1 never */
  for (int i = 0; i < N; i++) stop_at[i] = rand() % 50 == 0 ? -1 : i + rand() % (rand() % 20 ? 200 : 20000);
  int next = 0, stop_next = 0;
  size_t long_open = 0;
  static int by_stop[N]; /* events in STOP order */
  for (int i = 0; i < N; i++) by_stop[i] = i;
  for (int i = 1; i < N; i++) { /* insertion by stop_at (never last) */
    int x = by_stop[i], j = i;
    long kx = stop_at[x] < 0 ? 1l << 40 : stop_at[x];
    while (j > 0 && (stop_at[by_stop[j - 1]] < 0 ? 1l << 40 : stop_at[by_stop[j - 1]]) > kx) by_stop[j] = by_stop[j - 1], j--;
    by_stop[j] = x;
  }
  for (int batch = 0; batch < 200; batch++) {
    for (int r = 0; r < 200 && next < N; r++) {
      int i = next++;
      if (rand() % 8 == 0 && stop_at[i] >= 0) { /* its STOP drained first */
        struct lens_rec_stop x = rec_of(LENS_REC_STOP, id[i]);
        lens_openset_add(&o, &x.h);
        stopped[i] = 1;
      }
      struct lens_rec_stop x = rec_of(LENS_REC_START, id[i]);
      lens_openset_add(&o, &x.h);
      started[i] = 1;
      long_open += stop_at[i] < 0;
      while (stop_next < N && stop_at[by_stop[stop_next]] >= 0 && stop_at[by_stop[stop_next]] <= i) {
        int e = by_stop[stop_next++];
        if (stopped[e]) continue;
        struct lens_rec_stop y = rec_of(LENS_REC_STOP, id[e]);
        lens_openset_add(&o, &y.h);
        stopped[e] = 1;
      }
    }
    uint64_t *ids;
    uint32_t flags;
    size_t n = snapshot(&o, &ids, &flags);
    assert_int_equal(flags, 0);
    size_t want = 0;
    for (int i = 0; i < next; i++)
      if (started[i] && !stopped[i]) {
        want++;
        uint64_t key = LENS_INDEX_KEY(id[i]);
        if (!bsearch(&key, ids, n, sizeof *ids, cmp_u64)) fail_msg("batch %d: event %d (%llx) missing", batch, i,
                                                                   (unsigned long long)id[i]);
      }
    assert_int_equal(n, want);
    free(ids);
  }
  assert_true(long_open > 100);
  assert_true(o.n > 0); /* some went past their window */
  lens_openset_free(&o);
}

static void test_openset_full(void **state) {
  (void)state;
  struct lens_openset o;
  assert_int_equal(lens_openset_init(&o, 1), 0);
  /* never stopped, and the window moves on: past 3/4 of the long-open table it cannot keep them */
  for (uint64_t s = 1; s <= LENS_INDEX_LONG_CAP + 2 * LENS_INDEX_WINDOW; s++) {
    struct lens_rec_stop x = rec_of(LENS_REC_START, LENS_ID_MAKE(LENS_T_PROXY_OP, 0, s));
    lens_openset_add(&o, &x.h);
  }
  uint64_t *ids;
  uint32_t flags;
  snapshot(&o, &ids, &flags);
  free(ids);
  assert_int_equal(flags, LENS_INDEX_OPEN_F_INCOMPLETE);
  lens_openset_reset(&o); /* a new session starts complete */
  size_t n0 = snapshot(&o, &ids, &flags);
  free(ids);
  assert_int_equal(n0, 0);
  lens_openset_free(&o);
  /* more open events than a set may list: none is written then, and one is again once fewer are open */
  assert_int_equal(lens_openset_init(&o, 8), 0);
  for (uint32_t slot = 0; slot < 8; slot++)
    for (uint64_t s = 1; s <= 3000; s++) {
      struct lens_rec_stop x = rec_of(LENS_REC_START, LENS_ID_MAKE(LENS_T_PROXY_STEP, slot, s));
      lens_openset_add(&o, &x.h);
    }
  size_t cap = lens_openset_bound(&o);
  uint8_t *buf = malloc(cap);
  assert_non_null(buf);
  assert_int_equal(lens_openset_write(&o, 1, buf, cap), 0);
  for (uint32_t slot = 0; slot < 8; slot++)
    for (uint64_t s = 1; s <= 1500; s++) {
      struct lens_rec_stop x = rec_of(LENS_REC_STOP, LENS_ID_MAKE(LENS_T_PROXY_STEP, slot, s));
      lens_openset_add(&o, &x.h);
    }
  assert_true(lens_openset_write(&o, 2, buf, cap) > 0);
  struct lens_index_open h;
  memcpy(&h, buf, sizeof h);
  assert_int_equal(h.n_open, 8 * 1500);
  assert_int_equal(h.n_slots, 8);
  free(buf);
  lens_openset_free(&o);
  assert_int_equal(lens_openset_init(&o, 1), 0);
  lens_openset_reset(&o);
  size_t n = snapshot(&o, &ids, &flags);
  free(ids);
  assert_int_equal(flags, 0);
  assert_int_equal(n, 0);
  lens_openset_free(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_openset_random), cmocka_unit_test(test_openset_full),
      cmocka_unit_test(test_replay_all),     cmocka_unit_test(test_replay_more),
      cmocka_unit_test(test_generator),     cmocka_unit_test(test_forged),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  free(recs), free(evs), free(all);
  return rc;
}
