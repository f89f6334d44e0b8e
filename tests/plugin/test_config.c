/* NCCL_LENS_* parsing: good values are taken, every bad value falls back to
 * its default with exactly one WARN line (PROFILE subsystem) naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config_parse.h"
#include "log.h"
#include "log_internal.h"
#include "plugin_driver.h"

static const char *k_vars[] = {"NCCL_LENS_DISABLE", "NCCL_LENS_OUTPUT_DIR", "NCCL_LENS_EVENT_MASK",
                               "NCCL_LENS_BUFFER_SIZE", "NCCL_LENS_MAX_THREADS", "NCCL_LENS_WRITER_PERIOD_US",
                               "NCCL_LENS_TSC", "NCCL_LENS_NVTX", "NCCL_LENS_CUPTI", "NCCL_LENS_REGISTRY_DIR",
                               "NCCL_LENS_COMPRESS", "NCCL_LENS_ZSTD_LEVEL"};

static int setup(void **state) {
  for (size_t i = 0; i < sizeof k_vars / sizeof k_vars[0]; i++) unsetenv(k_vars[i]);
  lens_log_set_logger(test_logger);
  test_log_clear();
  return 0;
}

static void test_defaults(void **state) {
  struct lens_config c;
  assert_int_equal(lens_config_parse(&c), 0);
  assert_int_equal(c.disable, 0);
  assert_string_equal(c.out_dir, ".");
  assert_int_equal(c.event_mask, 0x7F7E);
  assert_int_equal(c.event_mask & LENS_EV_NET_PLUGIN, 0);
  assert_int_equal(c.buffer_bytes, 4u << 20);
  assert_int_equal(c.max_threads, 128);
  assert_int_equal(c.writer_period_us, 10000);
  assert_int_equal(c.use_tsc, 1);
  assert_int_equal(c.nvtx, 1);
  assert_int_equal(c.cupti, LENS_CUPTI_OFF);
  assert_string_equal(c.registry_dir, ""); /* per user, resolved by the writer (lens_registry_default_dir) */
  assert_int_equal(c.live, 1);
  assert_int_equal(c.live_period_ms, 500);
  assert_int_equal(c.dump_interval_s, 60);
  assert_int_equal(c.compress, LENS_COMPRESS_ZSTD);
  assert_int_equal(c.zstd_level, -1);
  assert_int_equal(test_log_count("nccl-lens"), 0);
}

/* NCCL_LENS_ZSTD_LEVEL: zstd's levels, negative ("fast") ones included,
 * within -50..19; anything else keeps -1 and is logged once. */
static void test_zstd_level(void **state) {
  struct lens_config c;
  const char *good[] = {"-50", "-7", "-1", "0", "1", "3", "19", "3 ", " -1 ", "-0"};
  const int want[] = {-50, -7, -1, 0, 1, 3, 19, 3, -1, 0};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    setenv("NCCL_LENS_ZSTD_LEVEL", good[i], 1);
    assert_int_equal(lens_config_parse(&c), 0);
    assert_int_equal(c.zstd_level, want[i]);
  }
  const char *bad[] = {"-51", "20", "", "1x", "fast", "99999999999999999999", "+3", "--1", "- 1", "0x3", "-"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    test_log_clear();
    setenv("NCCL_LENS_ZSTD_LEVEL", bad[i], 1);
    assert_int_equal(lens_config_parse(&c), 1);
    assert_int_equal(c.zstd_level, -1);
    assert_int_equal(test_log_count("NCCL_LENS_ZSTD_LEVEL"), 1);
  }
  assert_int_equal(test_log_count("nccl-lens"), 1);
}

static void test_good_values(void **state) {
  struct lens_config c;
  setenv("NCCL_LENS_DISABLE", "1", 1);
  setenv("NCCL_LENS_OUTPUT_DIR", "/dev/shm/x", 1);
  setenv("NCCL_LENS_EVENT_MASK", "coll,KernelCh, proxyop", 1);
  setenv("NCCL_LENS_BUFFER_SIZE", "3M", 1);
  setenv("NCCL_LENS_MAX_THREADS", "0x40", 1);
  setenv("NCCL_LENS_WRITER_PERIOD_US", "500", 1);
  setenv("NCCL_LENS_TSC", "0", 1);
  setenv("NCCL_LENS_NVTX", "off", 1);
  setenv("NCCL_LENS_CUPTI", "on", 1);
  setenv("NCCL_LENS_REGISTRY_DIR", "/run/lens", 1);
  assert_int_equal(lens_config_parse(&c), 0);
  assert_int_equal(c.disable, 1);
  assert_string_equal(c.out_dir, "/dev/shm/x");
  assert_int_equal(c.event_mask, LENS_EV_COLL | LENS_EV_KERNEL_CH | LENS_EV_PROXY_OP);
  assert_int_equal(c.buffer_bytes, 4u << 20); /* rounded up to a power of two */
  assert_int_equal(c.max_threads, 64);
  assert_int_equal(c.writer_period_us, 500);
  assert_int_equal(c.use_tsc, 0);
  assert_int_equal(c.nvtx, 0);
  assert_int_equal(c.cupti, LENS_CUPTI_ON);
  assert_string_equal(c.registry_dir, "/run/lens");
  assert_int_equal(test_log_count("nccl-lens"), 0);
}

static void test_mask_forms(void **state) {
  int m;
  assert_int_equal(lens_parse_mask("all", &m), 0);
  assert_int_equal(m, 0x7FFF);
  assert_int_equal(lens_parse_mask("default", &m), 0);
  assert_int_equal(m, 0x7F7E);
  assert_int_equal(lens_parse_mask("4095", &m), 0);
  assert_int_equal(m, 4095);
  assert_int_equal(lens_parse_mask("0x80", &m), 0);
  assert_int_equal(m, 0x80);
  assert_int_equal(lens_parse_mask("default,netplugin", &m), 0);
  assert_int_equal(m, 0x7FFE);
  /* KernelPhase (v7, bit 15): never in the default or "all", only when asked; it brings KernelCh. */
  assert_false(0x7F7E & LENS_EV_KERNEL_PHASE);
  assert_int_equal(lens_parse_mask("default,kernelphase", &m), 0);
  assert_int_equal(m, 0x7F7E | 0x8000);
  assert_int_equal(lens_parse_mask("coll,kernelphase", &m), 0);
  assert_int_equal(m, 0x2 | 0x40 | 0x8000);
  /* README's production mask for NCCL 2.31.2 (KernelCh costs the GPU there, NCCL #2355): default less KernelCh */
  assert_int_equal(lens_parse_mask("groupapi,collapi,p2papi,kernellaunch,coll,p2p,proxyop,proxystep,proxyctrl,"
                                   "cecoll,cesync,cebatch", &m), 0);
  assert_int_equal(m, 0x7F7E & ~LENS_EV_KERNEL_CH);
  assert_int_equal(m, 0x7F3E);
  assert_int_equal(lens_parse_mask("0xFFFF", &m), 0);
  assert_int_equal(m, 0xFFFF);
  assert_int_equal(lens_parse_mask("coll,bogus", &m), -1);
  assert_int_equal(lens_parse_mask("0x", &m), -1);
  assert_int_equal(lens_parse_mask("12abc", &m), -1);
  assert_int_equal(lens_parse_mask("0x10000", &m), -1);
  assert_int_equal(lens_parse_mask("", &m), -1);
  uint64_t s;
  assert_int_equal(lens_parse_size("64K", &s), 0);
  assert_int_equal(s, 65536);
  assert_int_equal(lens_parse_size("1GiB", &s), 0);
  assert_int_equal(s, 1ull << 30);
  assert_int_equal(lens_parse_size("4MB", &s), 0);
  assert_int_equal(s, 4ull << 20);
  assert_int_equal(lens_parse_size("4X", &s), -1);
  assert_int_equal(lens_parse_size("-1", &s), -1);
}

static void test_bad_values_use_defaults_and_log_once_each(void **state) {
  struct lens_config c;
  setenv("NCCL_LENS_DISABLE", "maybe", 1);
  setenv("NCCL_LENS_EVENT_MASK", "colll", 1);
  setenv("NCCL_LENS_BUFFER_SIZE", "16K", 1); /* below the minimum */
  setenv("NCCL_LENS_MAX_THREADS", "0", 1);
  setenv("NCCL_LENS_WRITER_PERIOD_US", "ten", 1);
  setenv("NCCL_LENS_TSC", "2", 1);
  setenv("NCCL_LENS_NVTX", "", 1);
  setenv("NCCL_LENS_CUPTI", "sometimes", 1);
  setenv("NCCL_LENS_OUTPUT_DIR", "", 1);
  assert_int_equal(lens_config_parse(&c), 9);
  assert_int_equal(c.disable, 0);
  assert_int_equal(c.event_mask, 0x7F7E);
  assert_int_equal(c.buffer_bytes, 4u << 20);
  assert_int_equal(c.max_threads, 128);
  assert_int_equal(c.writer_period_us, 10000);
  assert_int_equal(c.use_tsc, 1);
  assert_int_equal(c.nvtx, 1);
  assert_int_equal(c.cupti, LENS_CUPTI_OFF);
  assert_string_equal(c.out_dir, ".");
  const char *names[] = {"NCCL_LENS_DISABLE", "NCCL_LENS_EVENT_MASK", "NCCL_LENS_BUFFER_SIZE",
                         "NCCL_LENS_MAX_THREADS", "NCCL_LENS_WRITER_PERIOD_US", "NCCL_LENS_TSC",
                         "NCCL_LENS_NVTX=", "NCCL_LENS_CUPTI", "NCCL_LENS_OUTPUT_DIR"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) assert_int_equal(test_log_count(names[i]), 1);
  /* WARN level, PROFILE subsystem (0x4000) */
  assert_int_equal(test_log_count("2 4000 nccl-lens: bad value"), 9);
}

/* NCCL_LENS_DEBUG takes the usual boolean words, and a line never carries a
 * newline from a quoted value (it would forge a second log line). */
static void test_debug_values_and_one_line(void **state) {
  (void)state;
  lens_log(LENS_LOG_WARN, "value \"%s\"", "a\nnccl-lens: FORGED");
  assert_int_equal(test_log_count("value \"a?nccl-lens: FORGED\""), 1);
  lens_log_set_logger(NULL); /* before NCCL's logger: stderr, only when NCCL_LENS_DEBUG is on */
  char path[] = "/tmp/lens-test-debug-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  setenv("NCCL_LENS_DEBUG", "off", 1);
  lens_log(LENS_LOG_WARN, "line-off");
  setenv("NCCL_LENS_DEBUG", "FALSE", 1);
  lens_log(LENS_LOG_WARN, "line-false");
  setenv("NCCL_LENS_DEBUG", "garbage", 1);
  lens_log(LENS_LOG_WARN, "line-garbage");
  lens_log(LENS_LOG_WARN, "line-garbage-2");
  setenv("NCCL_LENS_DEBUG", "on", 1);
  lens_log(LENS_LOG_WARN, "line-on %s", "x\nFORGED");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char buf[4096];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  unlink(path);
  buf[n > 0 ? n : 0] = 0;
  unsetenv("NCCL_LENS_DEBUG");
  assert_null(strstr(buf, "line-off"));
  assert_null(strstr(buf, "line-false"));
  assert_null(strstr(buf, "line-garbage"));
  assert_non_null(strstr(buf, "NCCL_LENS_DEBUG: 'garbage' is not one of"));
  assert_null(strstr(strstr(buf, "is not one of") + 1, "is not one of")); /* said once */
  assert_non_null(strstr(buf, "line-on x?FORGED\n"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_defaults, setup),
      cmocka_unit_test_setup(test_good_values, setup),
      cmocka_unit_test_setup(test_zstd_level, setup),
      cmocka_unit_test_setup(test_mask_forms, setup),
      cmocka_unit_test_setup(test_bad_values_use_defaults_and_log_once_each, setup),
      cmocka_unit_test_setup(test_debug_values_and_one_line, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
