/* The plugin's CUPTI session (the cupti folder) against the real libcupti (no GPU
 * driver here: it must step aside cleanly) and against a recording fake
 * libcupti (the order of calls, push/pop, buffers, give-back). One binary,
 * one scenario per run: CUPTI_TEST_MODE picks it (libcupti loads once per
 * process, so scenarios cannot share one). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cupti.h>

#include "cupti_fakes.h"
#include "hooks.h"

static int find_cupti(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  const char *b = strrchr(info->dlpi_name, '/');
  b = b ? b + 1 : info->dlpi_name;
  if (!strncmp(b, "libcupti", 8) || !strncmp(b, "libfake-cupti", 13)) *(int *)arg = 1;
  return 0;
}

static int cupti_mapped(void) {
  int found = 0;
  dl_iterate_phdr(find_cupti, &found);
  return found;
}

/* Degraded: one clear line, inactive, hooks harmless. */
/* again: the failure persists, so a second session steps aside silently. */
static void expect_stepped_aside_ex(const char *must_say, int again) {
  assert_int_equal(lens_cupti_active, 0);
  assert_int_equal(fake_log_lines, 1);
  assert_non_null(strstr(fake_last_log, "CUPTI off"));
  if (must_say && !strstr(fake_last_log, must_say)) fail_msg("log line lacks '%s': %s", must_say, fake_last_log);
  assert_int_equal(lens_cupti_launch_begin(0x8B00000000000001ull), 0);
  lens_cupti_launch_end(0);
  lens_cupti_teardown();
  lens_cupti_at_exit();
  assert_int_equal(fake_log_lines, 1); /* nothing more said */
  if (!again) return;
  lens_cupti_setup(); /* a second session: still one line */
  assert_int_equal(fake_log_lines, 1);
}

static void expect_stepped_aside(const char *must_say) { expect_stepped_aside_ex(must_say, 1); }

static void test_auto_no_driver(void **st) {
  (void)st;
  assert_false(cupti_mapped());
  lens_cupti_setup();
  expect_stepped_aside("cuptiSubscribe");
  assert_true(cupti_mapped()); /* it did try the real library */
}

static void test_off_never_loads(void **st) {
  (void)st;
  lens_cupti_setup();
  assert_int_equal(lens_cupti_active, 0);
  assert_int_equal(fake_log_lines, 0);
  assert_false(cupti_mapped());
  assert_int_equal(lens_cupti_launch_begin(0x8B00000000000001ull), 0);
  lens_cupti_teardown();
  assert_false(cupti_mapped());
}

static void test_bogus_path(void **st) {
  (void)st;
  lens_cupti_setup();
  expect_stepped_aside("NCCL_LENS_CUPTI_PATH");
  assert_false(cupti_mapped());
}

static void test_other_user_auto(void **st) {
  (void)st;
  lens_cupti_setup();
  expect_stepped_aside("CUDA_INJECTION64_PATH");
  assert_false(cupti_mapped()); /* stepped aside before touching CUPTI */
}

static void *fake(void) {
  void *h = dlopen(getenv("NCCL_LENS_CUPTI_PATH"), RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(h);
  return h;
}

static int calls_matching(void *h, const char *prefix) {
  int (*n)(void) = (int (*)(void))dlsym(h, "fake_cupti_n_calls");
  const char *(*at)(int) = (const char *(*)(int))dlsym(h, "fake_cupti_call");
  int c = 0;
  for (int i = 0; i < n(); i++) c += !strncmp(at(i), prefix, strlen(prefix));
  return c;
}

static int call_index(void *h, const char *text) {
  int (*n)(void) = (int (*)(void))dlsym(h, "fake_cupti_n_calls");
  const char *(*at)(int) = (const char *(*)(int))dlsym(h, "fake_cupti_call");
  for (int i = 0; i < n(); i++)
    if (!strcmp(at(i), text)) return i;
  return -1;
}

static void test_fake_full_session(void **st) {
  (void)st;
  lens_cupti_setup();
  assert_int_equal(lens_cupti_active, 1);
  void *h = fake();
  char buf[64];
  /* Subscribe first (the lock), clock before any kind, never KIND_KERNEL. */
  assert_int_equal(call_index(h, "cuptiSubscribe0"), 0);
  int ts = call_index(h, "cuptiActivityRegisterTimestampCallback0");
  snprintf(buf, sizeof(buf), "cuptiActivityEnable %d", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  int ck = call_index(h, buf);
  snprintf(buf, sizeof(buf), "cuptiActivityEnable %d", CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  int ec = call_index(h, buf);
  assert_true(ts > 0 && ck > ts && ec > ts);
  snprintf(buf, sizeof(buf), "cuptiActivityEnable %d", CUPTI_ACTIVITY_KIND_KERNEL);
  assert_int_equal(call_index(h, buf), -1);
  /* Every driver API, not per-call enabling: per-call gives no records when
   * CUPTI attaches after the CUDA context exists, as it does under NCCL. */
  snprintf(buf, sizeof(buf), "cuptiActivityEnable %d", CUPTI_ACTIVITY_KIND_DRIVER);
  assert_true(call_index(h, buf) > ts);
  assert_int_equal(calls_matching(h, "cuptiActivityEnable "), 3);
  assert_int_equal(calls_matching(h, "cuptiActivityEnableDriverApi"), 0);
  /* The clock CUPTI will use is CLOCK_MONOTONIC. */
  uint64_t (*now)(void) = (uint64_t(*)(void))dlsym(h, "fake_cupti_now");
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  uint64_t t = now();
  clock_gettime(CLOCK_MONOTONIC, &b);
  assert_true(t >= (uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec);
  assert_true(t <= (uint64_t)b.tv_sec * 1000000000ull + (uint64_t)b.tv_nsec);
  /* External id = the launch event id, kind CUSTOM2, popped at stop. */
  uint64_t id = 0x0B00010000000007ull;
  assert_int_equal(lens_cupti_launch_begin(id), id);
  snprintf(buf, sizeof(buf), "push(CUSTOM2) %ld", (long)id);
  assert_true(call_index(h, buf) > 0);
  lens_cupti_launch_end(id);
  snprintf(buf, sizeof(buf), "pop(CUSTOM2) %ld", (long)id);
  assert_true(call_index(h, buf) > 0);
  /* Give-back: flush, disable, forced flush, unsubscribe, in that order. */
  lens_cupti_teardown();
  assert_int_equal(lens_cupti_active, 0);
  int f0 = call_index(h, "cuptiActivityFlushAll 0");
  snprintf(buf, sizeof(buf), "cuptiActivityDisable %d", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  int dis = call_index(h, buf);
  snprintf(buf, sizeof(buf), "cuptiActivityFlushAll %d", CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  int ff = call_index(h, buf);
  int un = call_index(h, "cuptiUnsubscribe0");
  assert_true(f0 > 0 && dis > f0 && ff > dis && un > ff);
  assert_int_equal(calls_matching(h, "cuptiActivityDisable "), 3);
  /* Each flush handed back a buffer: written as a CUPTI chunk with its header. */
  assert_int_equal(fake_chunks, 2);
  const struct lens_cupti_hdr *hd = (const struct lens_cupti_hdr *)fake_chunk;
  assert_int_equal(fake_chunk_len, sizeof(*hd) + sizeof(CUpti_ActivityExternalCorrelation));
  assert_int_equal(hd->valid_bytes, sizeof(CUpti_ActivityExternalCorrelation));
  assert_int_equal(hd->cupti_api_version, 130001);
  assert_int_equal(hd->dropped_records, 3);
  assert_int_equal(fake_cupti_drops, 6);
  const CUpti_ActivityExternalCorrelation *x = (const void *)(fake_chunk + sizeof(*hd));
  assert_int_equal(x->externalId, 0xABCDEF);
  /* Hooks after teardown do nothing; a new session can take CUPTI again. */
  assert_int_equal(lens_cupti_launch_begin(id), 0);
  lens_cupti_setup();
  assert_int_equal(lens_cupti_active, 1);
  assert_int_equal(calls_matching(h, "cuptiSubscribe"), 2);
  lens_cupti_teardown();
}

static void test_fake_enable_fails(void **st) {
  (void)st;
  lens_cupti_setup();
  expect_stepped_aside_ex("cuptiActivityEnable", 0);
  void *h = fake();
  char buf[64];
  /* What succeeded was undone: the first kind disabled, CUPTI released. */
  snprintf(buf, sizeof(buf), "cuptiActivityDisable %d", CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  assert_true(call_index(h, buf) > 0);
  assert_true(call_index(h, "cuptiUnsubscribe0") > 0);
  assert_int_equal(calls_matching(h, "push"), 0);
}

static void test_fake_last_kind_fails(void **st) {
  (void)st;
  lens_cupti_setup();
  expect_stepped_aside_ex("cuptiActivityEnable", 0);
  void *h = fake();
  assert_int_equal(calls_matching(h, "cuptiActivityDisable "), 2); /* the two that worked */
  assert_true(call_index(h, "cuptiUnsubscribe0") > 0);
}

static void test_fake_held(void **st) {
  (void)st;
  lens_cupti_setup();
  expect_stepped_aside("another tool holds CUPTI");
  assert_int_equal(calls_matching(fake(), "cuptiActivityEnable"), 0);
}

static void test_fake_too_old(void **st) {
  (void)st;
  lens_cupti_setup();
  expect_stepped_aside("older than");
  assert_false(cupti_mapped()); /* closed again: nothing of ours was registered */
}

static void test_on_despite_other_user(void **st) {
  (void)st;
  lens_cupti_setup();
  assert_int_equal(lens_cupti_active, 1);
  lens_cupti_teardown();
}

int main(void) {
  const char *mode = getenv("CUPTI_TEST_MODE");
  static const struct {
    const char *mode;
    struct CMUnitTest t;
  } all[] = {
      {"auto_no_driver", cmocka_unit_test(test_auto_no_driver)},
      {"off", cmocka_unit_test(test_off_never_loads)},
      {"bogus_path", cmocka_unit_test(test_bogus_path)},
      {"other_user", cmocka_unit_test(test_other_user_auto)},
      {"fake_full", cmocka_unit_test(test_fake_full_session)},
      {"fake_enable_fails", cmocka_unit_test(test_fake_enable_fails)},
      {"fake_last_kind_fails", cmocka_unit_test(test_fake_last_kind_fails)},
      {"fake_held", cmocka_unit_test(test_fake_held)},
      {"fake_too_old", cmocka_unit_test(test_fake_too_old)},
      {"on_other_user", cmocka_unit_test(test_on_despite_other_user)},
  };
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    if (mode && !strcmp(mode, all[i].mode)) {
      struct CMUnitTest one[1] = {all[i].t};
      return _cmocka_run_group_tests(all[i].mode, one, 1, NULL, NULL);
    }
  fprintf(stderr, "CUPTI_TEST_MODE=%s: unknown scenario\n", mode ? mode : "(unset)");
  return 2;
}
