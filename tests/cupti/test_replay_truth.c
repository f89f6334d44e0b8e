/* Against the replay driver's ground truth: `nccl-lens replay` runs the real
 * plugin with simulated GPUs (per-rank clock offset and drift, known kernel
 * spans); we then build the CUPTI activity buffer a GPU machine would have
 * produced for that run (real CUPTI record structs; ext ids = the trace's
 * KernelLaunch ids, kernel start/end = the truth's kernel span) and check
 * that the analysis recovers each GPU's clock within 1 us and 1 ppm, maps
 * every channel within 1 us, and flags the overruns the driver injected. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>

#include <cmocka.h>
#include <cupti_activity.h>
#include <cupti_driver_cbid.h>

#include "analysis/analyses.h"
#include "analysis/gpu/gpu_analysis.h"
#include "truth_json.h"
#include "../lens_test_tmp.h"

static char dir[256];

struct run {
  struct truth t;
  struct lens_model *m;
};

static void replay(struct run *r, const char *scenario, int iters) {
  char cmd[1024], tp[512];
  snprintf(cmd, sizeof(cmd), "rm -rf %s/*; %s/bin/nccl-lens replay --scenario %s --iters %d --truth %s/truth.json --out %s --quiet",
           dir, LENS_BUILD_DIR, scenario, iters, dir, dir);
  assert_int_equal(system(cmd), 0);
  snprintf(tp, sizeof(tp), "%s/truth.json", dir);
  assert_int_equal(truth_load(&r->t, tp), 0);
  const char *paths[16];
  char names[16][512];
  size_t n = 0;
  DIR *d = opendir(dir);
  struct dirent *de;
  while ((de = readdir(d)) && n < 16)
    if (strstr(de->d_name, ".lens")) {
      snprintf(names[n], sizeof(names[n]), "%s/%s", dir, de->d_name);
      paths[n] = names[n];
      n++;
    }
  closedir(d);
  assert_true(n >= 1);
  char err[512];
  r->m = lens_model_load(paths, n, err, sizeof(err), NULL);
  if (!r->m) fail_msg("load: %s", err);
}

static int event_rank(const struct lens_model *m, const struct lens_event *e) {
  if (e->comm >= 0) return m->comms[e->comm].rank;
  if (e->thread >= 0) return m->threads[e->thread].proxy_rank;
  return -1;
}

/* The CUPTI buffer for the run: one ext-corr + API + kernel per launch. */
static size_t write_cupti(struct run *r, const char *path) {
  struct lens_model *m = r->m;
  size_t cap = 1 << 16, len = 0, launches = 0;
  uint8_t *b = calloc(1, cap);
  uint32_t corr = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_LAUNCH) continue;
    int rank = event_rank(m, e);
    /* The op whose launch bracket is nearest (the plugin's clock read and
     * the driver's bracket are a few hundred ns apart). */
    const struct truth_op *op = NULL;
    int64_t best = 100000;
    for (size_t j = 0; j < r->t.n_ops; j++) {
      const struct truth_op *o = &r->t.ops[j];
      int64_t d = llabs(o->launch_start - (int64_t)e->start_mono_ns);
      if (o->rank == rank && o->kernel_start && d < best) best = d, op = o;
    }
    if (!op) continue;
    if (len + 512 > cap) b = realloc(b, cap *= 2);
    memset(b + len, 0, 512);
    CUpti_ActivityExternalCorrelation *x = (void *)(b + len);
    x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    x->externalId = e->id;
    x->correlationId = ++corr;
    len += sizeof(*x);
    CUpti_ActivityAPI *a = (void *)(b + len);
    a->kind = CUPTI_ACTIVITY_KIND_DRIVER;
    a->cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
    a->start = (uint64_t)op->launch_start;
    a->end = (uint64_t)op->launch_end;
    a->correlationId = corr;
    len += sizeof(*a);
    CUpti_ActivityKernel10 *k = (void *)(b + len);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->start = (uint64_t)op->kernel_start;
    k->end = (uint64_t)op->kernel_end;
    k->correlationId = corr;
    k->deviceId = (uint32_t)rank;
    len += sizeof(*k);
    launches++;
  }
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, len, f), len);
  fclose(f);
  free(b);
  return launches;
}

/* The truth entry of a KernelCh: same rank, channel and timers, nearest
 * notice time (an overrun item and the item it read share timers). */
static const struct truth_kch *truth_of(const struct run *r, const struct lens_event *e) {
  int rank = event_rank(r->m, e);
  const struct truth_kch *best = NULL;
  int64_t best_d = INT64_MAX;
  for (size_t j = 0; j < r->t.n_kch; j++) {
    const struct truth_kch *k = &r->t.kch[j];
    if (k->rank != rank || k->channel != e->p.kernel_ch.channel || k->start_ptimer != e->p.kernel_ch.start_gpu_ns ||
        k->stop_ptimer != e->p.kernel_ch.stop_gpu_ns)
      continue;
    int64_t d = llabs(k->notice_start_ns - (int64_t)e->start_mono_ns);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

#define BAD (LENS_ACC_OUTSIDE_KERNEL | LENS_ACC_RING_OVERRUN | LENS_ACC_STOP_BEFORE_START | LENS_ACC_SHARED_TIMER | \
             LENS_ACC_NON_MONOTONIC)

/* Checks maps and channels; returns worst |mapped - true| over clean channels. */
static double check(struct run *r, int with_cupti, size_t *overruns_flagged, size_t *overruns, size_t *false_pos) {
  struct lens_model *m = r->m;
  double worst = 0;
  size_t n = 0;
  *overruns_flagged = *overruns = *false_pos = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH || !e->p.kernel_ch.stop_gpu_ns) continue;
    const struct truth_kch *k = truth_of(r, e);
    if (!k) continue;
    if (getenv("DEBUG_MATCH") && (k->overrun || (e->acc.flags & BAD)))
      fprintf(stderr, "kch rank %d ch %d op %d overrun %d flags %#x start %llu stop %llu true %lld..%lld mapped %llu..%llu notice %llu\n", k->rank, k->channel, k->op,
              k->overrun, e->acc.flags, (unsigned long long)k->start_ptimer, (unsigned long long)k->stop_ptimer, (long long)k->true_start_ns,
              (long long)k->true_stop_ns, (unsigned long long)e->acc.gpu_start_mono_ns, (unsigned long long)e->acc.gpu_stop_mono_ns, (unsigned long long)e->start_mono_ns);
    if (k->overrun) {
      (*overruns)++;
      *overruns_flagged += (e->acc.flags & BAD) != 0;
      continue;
    }
    if (e->acc.flags & BAD) {
      (*false_pos)++;
      continue;
    }
    assert_true(e->acc.gpu_start_mono_ns != 0);
    double d = fabs((double)((int64_t)e->acc.gpu_start_mono_ns - k->true_start_ns));
    double d2 = fabs((double)((int64_t)e->acc.gpu_stop_mono_ns - k->true_stop_ns));
    if (d2 > d) d = d2;
    if (d > worst) worst = d;
    n++;
  }
  assert_true(n > 0);
  /* Each map against its rank's simulated clock. */
  for (size_t i = 0; i < m->n_clock_maps; i++) {
    const struct lens_clock_map *c = &m->clock_maps[i];
    assert_int_equal(c->source, with_cupti ? LENS_TS_CUPTI : LENS_TS_GPU_PTIMER);
    const struct truth_rank *tr = NULL;
    for (size_t j = 0; j < r->t.n_ranks; j++)
      if (r->t.ranks[j].rank == c->rank) tr = &r->t.ranks[j];
    assert_non_null(tr);
    double scale = 1.0 + tr->gpu_drift_ppm * 1e-6;
    for (int end = 0; end < 2; end++) {
      uint64_t g = end ? c->gpu_to : c->gpu_from;
      double truth = (double)(int64_t)(g - (uint64_t)tr->gpu_offset_ns) / scale;
      double got = (double)lens_gpu_map_ns(m, (int32_t)i, g);
      if (with_cupti && fabs(got - truth) > 1000) fail_msg("map %zu rank %d: off by %.0f ns", i, c->rank, got - truth);
    }
    const struct lens_gpu_report *rep = lens_gpu_report_get(m);
    if (with_cupti && !rep->segs[i].slope_fixed) {
      double drift_err = fabs(c->slope - 1.0 / scale) * 1e6;
      if (drift_err > 1.0) fail_msg("map %zu rank %d: drift off by %.3f ppm", i, c->rank, drift_err);
    }
  }
  return worst;
}

static void test_allreduce_recovers_clocks(void **st) {
  (void)st;
  struct run r;
  replay(&r, "allreduce", 200);
  char bp[512], err[512];
  snprintf(bp, sizeof(bp), "%s/cupti.buf", dir);
  size_t launches = write_cupti(&r, bp);
  assert_true(launches > 100);
  /* Without CUPTI first: notice times only. */
  assert_int_equal(lens_analyze_gpu(r.m, err, sizeof(err)), 0);
  size_t of, o, fp;
  double worst_notice = check(&r, 0, &of, &o, &fp);
  assert_int_equal(lens_model_add_cupti_file(r.m, bp, err, sizeof(err)), 0);
  assert_int_equal(lens_analyze_gpu(r.m, err, sizeof(err)), 0);
  const struct lens_gpu_report *rep = lens_gpu_report_get(r.m);
  assert_int_equal(rep->kernels_joined, launches);
  double worst = check(&r, 1, &of, &o, &fp);
  printf("  replay allreduce: %zu launches; worst mapped error with CUPTI %.0f ns, notice-only %.0f ns; %zu maps\n",
         launches, worst, worst_notice, r.m->n_clock_maps);
  for (size_t i = 0; i < r.m->n_clock_maps; i++)
    printf("    map rank %d: %u points, slope-1 %+.3f ppm%s, bound %.0f ns\n", r.m->clock_maps[i].rank,
           r.m->clock_maps[i].n_points, (r.m->clock_maps[i].slope - 1) * 1e6,
           rep->segs[i].slope_fixed ? " (span too short: fixed)" : "", r.m->clock_maps[i].error_bound_ns);
  assert_int_equal(fp, 0);
  assert_true(worst <= 1000);
  lens_gpu_release(r.m);
  lens_model_free(r.m);
  truth_free(&r.t);
}

static void test_overrun_flagged(void **st) {
  (void)st;
  struct run r;
  replay(&r, "overrun", 3);
  char bp[512], err[512];
  snprintf(bp, sizeof(bp), "%s/cupti.buf", dir);
  write_cupti(&r, bp);
  assert_int_equal(lens_model_add_cupti_file(r.m, bp, err, sizeof(err)), 0);
  assert_int_equal(lens_analyze_gpu(r.m, err, sizeof(err)), 0);
  size_t flagged, overruns, fp;
  check(&r, 1, &flagged, &overruns, &fp);
  printf("  replay overrun: %zu overrun channels, %zu flagged; %zu clean channels flagged\n", overruns, flagged, fp);
  assert_true(overruns > 0);
  assert_int_equal(flagged, overruns);
  lens_gpu_release(r.m);
  lens_model_free(r.m);
  truth_free(&r.t);
}

/* removed when the test exits (lens_test_tmp.h) */
static int setup(void **st) {
  (void)st;
  lens_test_tmpdir(dir, sizeof dir, "cupti-replay");
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_allreduce_recovers_clocks),
      cmocka_unit_test(test_overrun_flagged),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
