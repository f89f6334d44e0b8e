/* A tool without the payload and counters extensions (the injection told so
 * by NVTX_INJ_NO_PAYLOAD=1 / NVTX_INJ_NO_COUNTERS=1, set by ctest): ranges
 * still open and close with plain calls, no payload is attached, and the
 * KernelCh lag becomes a mark instead of a counter sample. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nvtx_check.h"
#include "nvtx_emit.h"
#include "nvtx_fakes.h"

#define CTX 0x1000ull

static void test_fallbacks(void **state) {
  setenv("NVTX_INJECTION64_PATH", NVTX_INJECT_PATH, 1);
  fake_comm_add(CTX, 3, 8, "c");
  lens_nvtx_setup();
  assert_int_equal(lens_nvtx_active, 1);
  assert_false(lens_nvtx_g.payload_ok);
  assert_false(lens_nvtx_g.counters_ok);
  const struct nvtx_inject_log *L = nvtx_log_if_loaded(NVTX_INJECT_PATH);
  assert_non_null(L);
  int dom = nvtx_domain_index(L, LENS_NVTX_DOMAIN);
  assert_true(dom >= 0);

  struct fake_rec r;
  /* a launch: pushed without payload */
  uint64_t kl = fake_id(LENS_T_KERNEL_LAUNCH, 1);
  struct lens_p_kernel_launch kp = {0, 0};
  lens_nvtx_on_start(fake_rec(&r, LENS_T_KERNEL_LAUNCH, kl, 0, CTX, 0, &kp, sizeof(kp)));
  lens_nvtx_on_stop(kl);
  /* a proxy op with a step: plain end */
  struct lens_p_proxy_op op = {1, 2, 1, 65536, 1, 5, {0}};
  uint64_t o = fake_id(LENS_T_PROXY_OP, 1);
  lens_nvtx_on_start(fake_rec(&r, LENS_T_PROXY_OP, o, 0, CTX, 3, &op, sizeof(op)));
  lens_nvtx_on_stop(o);
  /* KernelCh stop noticed 5 ms late (after a first sample that sets the offset) */
  uint64_t off = 1000000000000ull;
  for (int i = 0; i < 2; i++) {
    uint64_t now = lens_nvtx_mono_ns();
    struct lens_p_kernel_ch kc = {now + off, 7, {0}};
    uint64_t ch = fake_id(LENS_T_KERNEL_CH, 1);
    lens_nvtx_on_start(fake_rec(&r, LENS_T_KERNEL_CH, ch, 0, CTX, 0, &kc, sizeof(kc)));
    lens_nvtx_on_state(ch, 22, now + off - (i ? 5000000 : 0), 1);
    lens_nvtx_on_stop(ch);
  }

  int pushes = 0, ends = 0, lag_marks = 0, payloads = 0, samples = 0;
  for (uint64_t i = 0; i < L->count; i++) {
    const struct nvtx_ev *e = &L->ev[i];
    if (e->domain != dom) continue;
    if (e->schema_id) payloads++;
    if (e->kind == NVTX_EV_PUSH) {
      pushes++;
      assert_string_equal(e->msg, "NCCL kernel (r3/8)");
    }
    if (e->kind == NVTX_EV_END) ends++;
    if (e->kind == NVTX_EV_COUNTER_SAMPLE) samples++;
    if (e->kind == NVTX_EV_MARK && e->category == LENS_NVTX_CAT_KERNEL_CH) {
      lag_marks++;
      assert_int_equal(e->schema_id, 0); /* no payload extension: the text says it all */
      long us = -1;
      assert_int_equal(sscanf(e->msg, "KernelCh ch7 lag %ld us", &us), 1);
      if (lag_marks == 1) assert_true(us >= 0 && us < 20000); /* only the read skew of one callback */
      if (lag_marks == 2) assert_true(us >= 4000 && us < 5000 + 100000); /* 5 ms late (less read skew) */
    }
  }
  assert_int_equal(pushes, 1);
  assert_int_equal(ends, 1);
  assert_int_equal(lag_marks, 2);
  assert_int_equal(payloads, 0);
  assert_int_equal(samples, 0);
  struct nvtx_range_stats st;
  char err[256];
  if (nvtx_check_ranges(L, dom, &st, err, sizeof(err))) fail_msg("%s", err);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_fallbacks)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
