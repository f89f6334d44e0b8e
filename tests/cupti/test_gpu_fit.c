/* The GPU clock fit and the accuracy flags on a synthetic run with a known
 * GPU clock (offset ~1.7e18 ns, drift 23.7 ppm): with CUPTI kernel records
 * the mapping must be right within 1 us and the drift within 1 ppm; without
 * CUPTI (notice times only) the bias is the least polling delay. Every
 * injected anomaly must be flagged, and nothing else. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/analyses.h"
#include "analysis/gpu/gpu_analysis.h"
#include "synth.h"

#define BAD (LENS_ACC_OUTSIDE_KERNEL | LENS_ACC_RING_OVERRUN | LENS_ACC_STOP_BEFORE_START | LENS_ACC_SHARED_TIMER | \
             LENS_ACC_NO_KERNEL_RECORD | LENS_ACC_NO_CLOCK_MAP)

/* Worst |mapped - true| over clean KernelCh, and the drift error of every map. */
static void check_mapping(struct synth *s, double max_err_ns, double min_bias_ns, double max_bias_ns,
                          double max_drift_err_ppm) {
  struct lens_model *m = &s->m;
  double worst = 0, lo = 1e18, hi = -1e18;
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH || s->expect_flags[i]) continue;
    assert_true(e->acc.gpu_start_mono_ns != 0);
    assert_int_equal(e->acc.time_source, LENS_TS_GPU_PTIMER);
    double d0 = (double)((int64_t)e->acc.gpu_start_mono_ns - s->true_start[i]);
    double d1 = (double)((int64_t)e->acc.gpu_stop_mono_ns - s->true_stop[i]);
    for (int k = 0; k < 2; k++) {
      double d = k ? d1 : d0;
      if (fabs(d) > worst) worst = fabs(d);
      if (d < lo) lo = d;
      if (d > hi) hi = d;
    }
    assert_true(e->acc.notice_lag_ns >= 0); /* never noticed before it happened */
    n++;
  }
  double expect_slope = 1.0 / (1.0 + s->o.drift_ppm * 1e-6);
  double drift_err = 0;
  for (size_t i = 0; i < m->n_clock_maps; i++) {
    double e = fabs(m->clock_maps[i].slope - expect_slope) * 1e6;
    if (e > drift_err) drift_err = e;
    /* The map's own double offset agrees with the exact map to ~1 us. */
    const struct lens_clock_map *c = &m->clock_maps[i];
    double via_double = c->offset_ns + c->slope * (double)c->gpu_from;
    assert_true(fabs(via_double - (double)lens_gpu_map_ns(m, (int32_t)i, c->gpu_from)) < 2048);
  }
  printf("  %zu KernelCh: mapped - true in [%.0f, %.0f] ns (worst %.0f ns); %zu maps, drift error %.4f ppm, "
         "bound %.0f ns\n",
         n, lo, hi, worst, m->n_clock_maps, drift_err, m->n_clock_maps ? m->clock_maps[0].error_bound_ns : -1.0);
  assert_true(n > 0);
  assert_true(worst <= max_err_ns);
  assert_true(lo >= min_bias_ns && hi <= max_bias_ns);
  assert_true(drift_err <= max_drift_err_ppm);
}

static void check_flags(struct synth *s) {
  struct lens_model *m = &s->m;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH && e->type != LENS_T_KERNEL_LAUNCH) continue;
    uint32_t want = s->expect_flags[i];
    if ((e->acc.flags & want) != want || (!want && (e->acc.flags & BAD)))
      fail_msg("event %zu (%s): flags %#x, expected %#x", i, e->type == LENS_T_KERNEL_CH ? "KernelCh" : "launch",
               e->acc.flags, want);
  }
}

static void test_cupti_fit(void **state) {
  (void)state;
  struct synth_opts o;
  synth_default(&o);
  struct synth s;
  assert_int_equal(synth_build(&s, &o), 0);
  char err[256];
  assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
  const struct lens_gpu_report *r = lens_gpu_report_get(&s.m);
  assert_non_null(r);
  assert_true(r->cupti_available);
  assert_int_equal(r->kernels_joined, (size_t)o.launches);
  assert_int_equal(r->foreign_ext_ids, 0);
  assert_true(s.m.n_clock_maps >= 3); /* 3 s of run, refitted per second */
  for (size_t i = 0; i < s.m.n_clock_maps; i++) assert_int_equal(s.m.clock_maps[i].source, LENS_TS_CUPTI);
  check_mapping(&s, 1000, -1000, 1000, 1.0);
  check_flags(&s);
  lens_gpu_release(&s.m);
  synth_free(&s);
}

static void test_notice_fit(void **state) {
  (void)state;
  struct synth_opts o;
  synth_default(&o);
  o.with_cupti = 0;
  struct synth s;
  assert_int_equal(synth_build(&s, &o), 0);
  char err[256];
  assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
  for (size_t i = 0; i < s.m.n_clock_maps; i++) assert_int_equal(s.m.clock_maps[i].source, LENS_TS_GPU_PTIMER);
  /* Mapped times sit late by about the least polling delay (3 us here),
   * never early by more than the timer tick. */
  check_mapping(&s, o.min_lag_ns + 2000, -100, o.min_lag_ns + 2000, 2.0);
  lens_gpu_release(&s.m);
  synth_free(&s);
}

/* A short real run: one collective, so one CUPTI kernel per GPU. Its
 * bounds fix the offset (slope 1) within a few us; notice times would give
 * a map of milliseconds. */
static void test_one_kernel_gives_a_cupti_map(void **state) {
  (void)state;
  struct synth_opts o;
  synth_default(&o);
  o.launches = 1;
  struct synth s;
  assert_int_equal(synth_build(&s, &o), 0);
  char err[256];
  assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
  assert_int_equal(s.m.n_clock_maps, 1);
  const struct lens_clock_map *c = &s.m.clock_maps[0];
  printf("  one kernel: source %s, slope %.9f, bound %.0f ns\n", lens_time_source_name(c->source), c->slope,
         c->error_bound_ns);
  assert_int_equal(c->source, LENS_TS_CUPTI);
  assert_true(c->slope == 1.0);
  assert_true(c->error_bound_ns <= 2000); /* channels sit 200-2000 ns inside their 20 us kernel */
  /* Every channel inside its kernel, placed within the bound (+ a tick). */
  check_mapping(&s, c->error_bound_ns + 64, -c->error_bound_ns - 64, c->error_bound_ns + 64, 100.0);
  check_flags(&s);
  lens_gpu_release(&s.m);
  synth_free(&s);
}

/* A 2 us kernel joined to ~17 us of channels: flagged, not absorbed into the
 * map's bound (alone, and among good kernels). */
static void test_contradictory_join_flagged(void **state) {
  (void)state;
  for (int launches = 1; launches <= 200; launches += 199) {
    struct synth_opts o;
    synth_default(&o);
    o.launches = launches;
    o.anomaly_at[0] = SYN_SHORT_KERNEL, o.anomaly_launch[0] = launches / 2;
    o.n_anomalies = 1;
    struct synth s;
    assert_int_equal(synth_build(&s, &o), 0);
    char err[256];
    assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
    const struct lens_gpu_report *r = lens_gpu_report_get(&s.m);
    assert_int_equal(r->kernels_contradict, 1);
    check_flags(&s); /* its channels: outside_kernel */
    for (size_t i = 0; i < s.m.n_clock_maps; i++) {
      printf("  %d launches: map %zu source %s bound %.0f ns\n", launches, i,
             lens_time_source_name(s.m.clock_maps[i].source), s.m.clock_maps[i].error_bound_ns);
      if (s.m.clock_maps[i].source == LENS_TS_CUPTI) assert_true(s.m.clock_maps[i].error_bound_ns <= 2000);
    }
    lens_gpu_release(&s.m);
    synth_free(&s);
  }
}

static void test_anomalies_flagged(void **state) {
  (void)state;
  struct synth_opts o;
  synth_default(&o);
  enum synth_anomaly kinds[] = {SYN_OUTSIDE_KERNEL, SYN_OVERRUN, SYN_NO_KERNEL, SYN_STOP_BEFORE_START, SYN_P2P_PAIR};
  int at[] = {100, 700, 1300, 1900, 2500};
  for (int i = 0; i < 5; i++) o.anomaly_at[i] = kinds[i], o.anomaly_launch[i] = at[i];
  o.n_anomalies = 5;
  o.foreign_ext_ids = 2;
  struct synth s;
  assert_int_equal(synth_build(&s, &o), 0);
  char err[256];
  assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
  const struct lens_gpu_report *r = lens_gpu_report_get(&s.m);
  assert_int_equal(r->foreign_ext_ids, 2);
  size_t foreign_kernels = 0;
  for (size_t k = 0; k < s.m.n_kernels; k++) foreign_kernels += (r->kernel_flags[k] & LENS_GPU_K_FOREIGN_EXT_ID) != 0;
  assert_int_equal(foreign_kernels, 2);
  assert_int_equal(r->launches_no_kernel, 1);
  assert_int_equal(r->kernels_joined, (size_t)o.launches - 1);
  check_flags(&s);
  /* The fit shrugs the anomalies off. */
  check_mapping(&s, 1000, -1000, 1000, 1.0);
  lens_gpu_release(&s.m);
  synth_free(&s);
}

/* A stop timer from a later item (the start the item's own: an overrun the
 * ring can give, start and stop read at different polls) maps after the host
 * saw the stop: flagged ring_overrun, whatever else it is (issue 26 item 5). */
static void test_stop_after_its_notice_flagged(void **state) {
  (void)state;
  struct synth_opts o;
  synth_default(&o);
  struct synth s;
  assert_int_equal(synth_build(&s, &o), 0);
  size_t seen = 0, victim = 0;
  for (size_t i = 0; i < s.m.n_events && !victim; i++)
    if (s.m.events[i].type == LENS_T_KERNEL_CH && ++seen == 400) victim = i;
  assert_true(victim > 0);
  s.m.events[victim].p.kernel_ch.stop_gpu_ns += 200000; /* a later item's stop, 200 us on */
  char err[256];
  assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
  const struct lens_event *e = &s.m.events[victim];
  printf("  notice lag %lld ns, flags %#x\n", (long long)e->acc.notice_lag_ns, e->acc.flags);
  assert_true(e->acc.notice_lag_ns < -100000);
  assert_true(e->acc.flags & LENS_ACC_RING_OVERRUN);
  size_t others = 0;
  for (size_t i = 0; i < s.m.n_events; i++)
    if (i != victim && s.m.events[i].type == LENS_T_KERNEL_CH && (s.m.events[i].acc.flags & LENS_ACC_RING_OVERRUN))
      others++;
  assert_int_equal(others, 0);
  lens_gpu_release(&s.m);
  synth_free(&s);
}

static void test_graph_join(void **state) {
  (void)state;
  for (int missing = 0; missing < 2; missing++) {
    struct synth_opts o;
    synth_default(&o);
    o.launches = 1000;
    o.graph_nodes = 3;
    o.graph_replays = 50;
    o.graph_captures_missing = missing;
    struct synth s;
    assert_int_equal(synth_build(&s, &o), 0);
    char err[256];
    assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
    const struct lens_gpu_report *r = lens_gpu_report_get(&s.m);
    assert_int_equal(r->kernels_graph, 150);
    assert_int_equal(r->kernels_joined, 1000);
    if (!missing) {
      /* Node order by first replay = capture order: node k <-> k-th capture. */
      assert_string_equal(r->graph_join, "graph node");
      assert_int_equal(r->kernels_graph_joined, 150);
      int32_t prev_start = -1;
      for (size_t i = 0; i < s.m.n_events; i++) {
        const struct lens_event *e = &s.m.events[i];
        if (e->type != LENS_T_KERNEL_LAUNCH || !(e->flags & LENS_EVF_GRAPH)) continue;
        assert_true(e->acc.cupti_kernel >= 0);
        const struct lens_kernel *k = &s.m.kernels[e->acc.cupti_kernel];
        assert_true(k->graph_id == 5 && k->launch_event == (int32_t)i);
        assert_true((int32_t)(k->start_mono_ns % 1000000000) > prev_start); /* later capture, later node */
        prev_start = (int32_t)(k->start_mono_ns % 1000000000);
        assert_int_equal(e->acc.flags & LENS_ACC_NO_KERNEL_RECORD, 0);
      }
    } else {
      assert_string_equal(r->graph_join, "KernelCh only");
      assert_int_equal(r->kernels_graph_joined, 0);
    }
    /* Replayed channels are mapped through the clock map either way. */
    check_mapping(&s, 1000, -1000, 1000, 1.0);
    lens_gpu_release(&s.m);
    synth_free(&s);
  }
}

/* A model freed without lens_gpu_release, and a new one at the same
 * address: nothing of the old one (its --cupti-buffer data) carries over. */
static void test_stale_state_not_reused(void **state) {
  (void)state;
  struct synth_opts o;
  synth_default(&o);
  o.launches = 50;
  struct synth s;
  assert_int_equal(synth_build(&s, &o), 0);
  char path[] = "/tmp/lens-cupti-buf-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, s.cupti, s.cupti_len), (ssize_t)s.cupti_len);
  close(fd);
  s.m.cupti = NULL, s.m.n_cupti = 0; /* the records only come from the file */
  char err[256];
  assert_int_equal(lens_model_add_cupti_file(&s.m, path, err, sizeof(err)), 0);
  assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
  assert_int_equal(lens_gpu_report_get(&s.m)->kernels_joined, 50);
  /* "Free" and "reload": same struct address, new event array. */
  free(s.m.kernels), free(s.m.clock_maps);
  s.m.kernels = NULL, s.m.clock_maps = NULL, s.m.n_kernels = s.m.n_clock_maps = 0;
  struct lens_event *copy = malloc(s.m.n_events * sizeof(*copy));
  memcpy(copy, s.m.events, s.m.n_events * sizeof(*copy));
  free(s.m.events);
  s.m.events = copy;
  assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
  assert_int_equal(lens_gpu_report_get(&s.m)->kernels_joined, 0);
  assert_int_equal(s.m.n_kernels, 0);
  lens_gpu_release(&s.m);
  unlink(path);
  synth_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cupti_fit),
      cmocka_unit_test(test_notice_fit),
      cmocka_unit_test(test_one_kernel_gives_a_cupti_map),
      cmocka_unit_test(test_contradictory_join_flagged),
      cmocka_unit_test(test_anomalies_flagged),
      cmocka_unit_test(test_stop_after_its_notice_flagged),
      cmocka_unit_test(test_graph_join),
      cmocka_unit_test(test_stale_state_not_reused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
