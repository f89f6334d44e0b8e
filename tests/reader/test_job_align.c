/* Host alignment (tools/analysis/job/job_align.h) on synthetic hosts whose true
 * offsets are known: coarse REALTIME placements with NTP errors inside their
 * bounds, and sync points built the way a real job gives them (each rank's
 * end bracketed by its launch + span below and its proxy's notice above,
 * with random launch and polling delays). The aligned offset must be within
 * the bound of the truth, and near it where the sync points are many. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/job/job_align.h"

#define NH 4
#define RPH 2 /* ranks per host */

struct world {
  int64_t true_off[NH];   /* job = mono + true_off */
  struct lens_align a;
  struct lens_align_host hosts[NH];
  struct lens_align_point *p;
  size_t np;
};

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

/* Hosts seconds apart, REALTIME placements off by up to 2 ms with a 3 ms
 * bound (host 2 unsynced: 16 s). */
static void make_hosts(struct world *w, uint64_t seed) {
  memset(w, 0, sizeof *w);
  const char *names[NH] = {"h0", "h1", "h2", "h3"};
  for (int h = 0; h < NH; h++) {
    w->true_off[h] = 1700000000000000000LL - (int64_t)(h + 1) * 1000000000000LL + (int64_t)(rnd(&seed) % 1000);
    struct lens_align_host *x = &w->hosts[h];
    x->host = names[h];
    x->boot_id = "";
    x->has_clock = 1;
    x->ref_mono_ns = (uint64_t)(1700000000500000000LL - w->true_off[h]); /* where the points are */
    x->drift_ppm = 0;
    x->drift_err_ppm = 1.0;
    x->coarse_bound_ns = h == 2 ? 16000000000ULL : 3000000;
    x->coarse_offset_ns = w->true_off[h] + (int64_t)(rnd(&seed) % 4000001) - 2000000;
  }
  w->a.hosts = w->hosts;
  w->a.n_hosts = NH;
}

/* n instances; each ends at job time T on every rank (within spread/2);
 * rank ends bracketed by launch (1..60 us before the kernel start, min
 * 1 us on the last arrival) and notice (2..50 us after the end). */
static void make_points(struct world *w, size_t n, uint64_t spread, uint64_t seed) {
  w->p = calloc(n * NH, sizeof *w->p);
  w->np = 0;
  int64_t T = 1700000000500000000LL;
  for (size_t i = 0; i < n; i++, T += 3000000) {
    int last = (int)(rnd(&seed) % (NH * RPH));
    for (int h = 0; h < NH; h++) {
      uint64_t lo = 0, hi = UINT64_MAX;
      for (int r = 0; r < RPH; r++) {
        int64_t end = T + (int64_t)(rnd(&seed) % (spread / 2 + 1)) - w->true_off[h]; /* host mono */
        uint64_t launch_lat = h * RPH + r == last ? 1000 + rnd(&seed) % 2000 : 1000 + rnd(&seed) % 60000;
        uint64_t notice = 2000 + rnd(&seed) % 48000;
        /* launch + span = the end - the launch's latency */
        uint64_t l = (uint64_t)end - launch_lat, u = (uint64_t)end + notice;
        if (l > lo) lo = l;
        if (u < hi) hi = u;
      }
      w->p[w->np++] = (struct lens_align_point){i, h, lo, hi};
    }
  }
}

/* The true error of each host against the reference, the same time base. */
static void check(struct world *w, uint64_t max_err) {
  int ref = w->a.ref;
  assert_true(ref >= 0);
  for (int h = 0; h < NH; h++) {
    const struct lens_align_host *x = &w->hosts[h];
    int64_t want = w->true_off[h] - w->true_off[ref] + w->hosts[ref].offset_ns;
    int64_t err = x->offset_ns - want;
    uint64_t ae = (uint64_t)(err < 0 ? -err : err);
    fprintf(stderr, "  %s: %s, error %lld ns, bound %llu ns\n", x->host, lens_align_source_name(x->source),
            (long long)err, (unsigned long long)x->bound_ns);
    assert_true(ae <= x->bound_ns);
    assert_true(ae <= max_err);
  }
}

static void test_sync_points_refine(void **s) {
  (void)s;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    struct world w;
    make_hosts(&w, seed * 7919);
    make_points(&w, 200, 4000, seed);
    struct lens_align_opts o = {.end_spread_ns = 5000};
    assert_int_equal(lens_align_resolve(&w.a, w.p, w.np, &o), 0);
    assert_int_equal(w.a.sync_dropped, 0);
    for (int h = 0; h < NH; h++)
      if (h != w.a.ref) {
        assert_int_equal(w.hosts[h].source, LENS_ALIGN_SYNC);
        assert_true(w.hosts[h].bound_ns < 20000);
      }
    check(&w, 10000);
    free(w.p);
  }
}

static void test_realtime_alone_holds(void **s) {
  (void)s;
  struct world w;
  make_hosts(&w, 42);
  assert_int_equal(lens_align_resolve(&w.a, NULL, 0, NULL), 0);
  /* the reference is a tight host; the unsynced one is placed within 16 s + 3 ms */
  assert_true(w.a.ref != 2);
  assert_int_equal(w.hosts[2].source, LENS_ALIGN_REALTIME);
  assert_true(w.hosts[2].bound_ns >= 16000000000ULL);
  check(&w, UINT64_MAX);
}

static void test_sync_only(void **s) {
  (void)s;
  struct world w;
  make_hosts(&w, 5);
  make_points(&w, 100, 4000, 5);
  struct lens_align_opts o = {.sync_only = 1};
  assert_int_equal(lens_align_resolve(&w.a, w.p, w.np, &o), 0);
  check(&w, 10000);
  free(w.p);
}

/* Ends really spread 300 us apart: 5 us contradicts, the spread is doubled
 * until the points agree, and the bound still holds. */
static void test_wider_spread_found(void **s) {
  (void)s;
  struct world w;
  make_hosts(&w, 9);
  make_points(&w, 100, 600000, 9);
  assert_int_equal(lens_align_resolve(&w.a, w.p, w.np, NULL), 0);
  assert_int_equal(w.a.sync_dropped, 0);
  assert_true(w.a.end_spread_ns > 5000);
  check(&w, UINT64_MAX);
  free(w.p);
}

/* A contradiction no spread explains (a host's ends 50 ms off in half the
 * instances: a broken clock): the sync points are dropped, REALTIME holds. */
static void test_contradiction_dropped(void **s) {
  (void)s;
  struct world w;
  make_hosts(&w, 11);
  make_points(&w, 50, 4000, 11);
  for (size_t i = 0; i < w.np; i++)
    if (w.p[i].host == 1 && w.p[i].inst % 2) w.p[i].lo += 50000000, w.p[i].hi += 50000000;
  assert_int_equal(lens_align_resolve(&w.a, w.p, w.np, NULL), 0);
  assert_int_equal(w.a.sync_dropped, 1);
  for (int h = 0; h < NH; h++) assert_true(w.hosts[h].source != LENS_ALIGN_SYNC);
  check(&w, UINT64_MAX);
  free(w.p);
}

/* The solver alone: a chain h0 - h1 - h2 constrains h2 through h1. */
static void test_solver_paths(void **s) {
  (void)s;
  int64_t ub[9];
  for (int i = 0; i < 9; i++) ub[i] = INT64_MAX;
  ub[1 * 3 + 0] = 110, ub[0 * 3 + 1] = -90;  /* x1 - x0 in [90, 110] */
  ub[2 * 3 + 1] = 20, ub[1 * 3 + 2] = 10;    /* x2 - x1 in [-10, 20] */
  int64_t lo[3], hi[3];
  assert_int_equal(lens_align_solve(3, ub, 0, lo, hi), 0);
  assert_int_equal(lo[1], 90);
  assert_int_equal(hi[1], 110);
  assert_int_equal(lo[2], 80);
  assert_int_equal(hi[2], 130);
  ub[0 * 3 + 2] = -200; /* x0 - x2 <= -200: x2 - x0 >= 200 contradicts <= 130 */
  assert_int_equal(lens_align_solve(3, ub, 0, lo, hi), -1);
}

int main(void) {
  const struct CMUnitTest t[] = {
      cmocka_unit_test(test_solver_paths),          cmocka_unit_test(test_sync_points_refine),
      cmocka_unit_test(test_realtime_alone_holds),  cmocka_unit_test(test_sync_only),
      cmocka_unit_test(test_wider_spread_found),    cmocka_unit_test(test_contradiction_dropped),
  };
  return cmocka_run_group_tests(t, NULL, NULL);
}
