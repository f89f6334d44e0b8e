/* Truncated and corrupted CUPTI buffers through libcupti's walker and the
 * whole join: every truncation length and random bit flips. Each must give a
 * clear error (or clean records) and never a crash; run under ASan in the
 * sanitizer build. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cupti_activity.h>

#include "analysis/analyses.h"
#include "analysis/gpu/gpu_analysis.h"
#include "analysis/gpu/gpu_walk.h"
#include "synth.h"

#define LAUNCH_BYTES (sizeof(CUpti_ActivityExternalCorrelation) + sizeof(CUpti_ActivityAPI) + sizeof(CUpti_ActivityKernel10))

static void small_run(struct synth *s) {
  struct synth_opts o;
  synth_default(&o);
  o.launches = 20;
  assert_int_equal(synth_build(s, &o), 0);
  assert_int_equal(s->cupti_len, 20 * LAUNCH_BYTES);
}

static int is_boundary(size_t len) {
  size_t r = len % LAUNCH_BYTES;
  return r == 0 || r == sizeof(CUpti_ActivityExternalCorrelation) ||
         r == sizeof(CUpti_ActivityExternalCorrelation) + sizeof(CUpti_ActivityAPI);
}

static void test_every_truncation(void **state) {
  (void)state;
  struct synth s;
  small_run(&s);
  size_t full = s.cupti_len;
  size_t prev_joined = 0;
  for (size_t len = 0; len <= full; len++) {
    s.blob.len = len;
    char err[256];
    assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
    const struct lens_gpu_report *r = lens_gpu_report_get(&s.m);
    if (is_boundary(len)) {
      if (r->blob_errors) fail_msg("len %zu: unexpected error: %s", len, r->cupti_note);
    } else {
      if (r->blob_errors != 1 || !r->cupti_note[0]) fail_msg("len %zu: cut not reported", len);
    }
    /* Everything before the cut is still used, and only that. */
    assert_true(r->kernels_joined <= (len / LAUNCH_BYTES) + 1);
    assert_true(r->kernels_joined >= prev_joined);
    prev_joined = r->kernels_joined;
  }
  assert_int_equal(prev_joined, 20);
  lens_gpu_release(&s.m);
  synth_free(&s);
}

static void test_bit_flips(void **state) {
  (void)state;
  struct synth s;
  small_run(&s);
  uint8_t *orig = malloc(s.cupti_len);
  memcpy(orig, s.cupti, s.cupti_len);
  unsigned seed = 7;
  size_t errors = 0;
  for (int it = 0; it < 3000; it++) {
    memcpy(s.cupti, orig, s.cupti_len);
    int flips = 1 + it % 8;
    for (int f = 0; f < flips; f++) {
      seed = seed * 1103515245u + 12345u;
      size_t bit = (seed >> 4) % (s.cupti_len * 8);
      s.cupti[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    char err[256];
    assert_int_equal(lens_analyze_gpu(&s.m, err, sizeof(err)), 0);
    const struct lens_gpu_report *r = lens_gpu_report_get(&s.m);
    errors += r->blob_errors;
    assert_true(r->kernels_joined <= 20);
    for (size_t k = 0; k < s.m.n_kernels; k++) /* joins point at real launches */
      if (s.m.kernels[k].launch_event >= 0)
        assert_int_equal(s.m.events[s.m.kernels[k].launch_event].type, LENS_T_KERNEL_LAUNCH);
  }
  printf("  3000 corrupted buffers: %zu walk errors reported, no crash\n", errors);
  assert_true(errors > 0); /* flipped kinds must be noticed */
  free(orig);
  lens_gpu_release(&s.m);
  synth_free(&s);
}

/* Straight walker checks: garbage and odd sizes never read past the end. */
static void test_walker_garbage(void **state) {
  (void)state;
  uint8_t buf[4096];
  unsigned seed = 99;
  size_t n;
  char err[256];
  for (int it = 0; it < 2000; it++) {
    size_t len = (size_t)(it % 600);
    for (size_t i = 0; i < len; i++) seed = seed * 1103515245u + 12345u, buf[i] = (uint8_t)(seed >> 16);
    /* Plausible kinds now and then, so the walker goes deeper. */
    if (len >= 4) memcpy(buf, &(uint32_t){(it % 3) ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION}, 4);
    int rc = lens_gpu_walk(buf, len, NULL, NULL, &n, err, sizeof(err));
    assert_true(rc == LENS_GPU_WALK_OK || rc == LENS_GPU_WALK_CORRUPT);
    if (rc == LENS_GPU_WALK_CORRUPT) assert_true(strlen(err) > 10);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_truncation),
      cmocka_unit_test(test_bit_flips),
      cmocka_unit_test(test_walker_garbage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
