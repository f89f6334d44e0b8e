/* Every command on bad input: one line on stderr, a non-zero exit, never a
 * crash. A trace cut short is still read (exit 0) with one warning line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "sample_trace.h"
#include "trace_builder.h"

static char sample[128], cut[128], garbage[128], empty[128], dirpath[128];

static int setup(void **state) {
  (void)state;
  const char *d = cli_tmpdir();
  snprintf(sample, sizeof sample, "%s/sample.lens", d);
  snprintf(cut, sizeof cut, "%s/cut.lens", d);
  snprintf(garbage, sizeof garbage, "%s/garbage.lens", d);
  snprintf(empty, sizeof empty, "%s/empty.lens", d);
  snprintf(dirpath, sizeof dirpath, "%s", d);
  sample_trace_write(sample);
  size_t len;
  uint8_t *b = tb_read_file(sample, &len);
  tb_write_file(cut, b, len - 37);
  for (size_t i = 0; i < len; i++) b[i] = (uint8_t)(i * 131 + 7);
  tb_write_file(garbage, b, len);
  tb_write_file(empty, b, 0);
  free(b);
  return 0;
}
static int teardown(void **state) {
  (void)state;
  cli_cleanup();
  return 0;
}

static void expect_error(const char *const *args) {
  struct cli_result r;
  assert_int_equal(cli_run(&r, args), 0);
  if (r.status == 0 || r.status >= 126 || r.err_lines != 1)
    fprintf(stderr, "args[0]=%s args[1]=%s: status %d stderr <%s>\n", args[0], args[1] ? args[1] : "", r.status,
            r.err);
  assert_int_not_equal(r.status, 0);
  assert_true(r.status < 126); /* not killed by a signal, not exec failure */
  assert_int_equal(r.err_lines, 1);
  assert_non_null(strstr(r.err, "nccl-lens"));
}

static void test_bad_inputs(void **state) {
  (void)state;
  const char *missing = "/nonexistent/none.lens";
  const char *cmds[] = {"export", "summary"};
  for (int c = 0; c < 2; c++) {
    const char *a1[] = {cmds[c], missing, NULL};
    expect_error(a1);
    const char *a2[] = {cmds[c], garbage, NULL};
    expect_error(a2);
    const char *a3[] = {cmds[c], empty, NULL};
    expect_error(a3);
    const char *a4[] = {cmds[c], "--bogus", sample, NULL};
    expect_error(a4);
    const char *a5[] = {cmds[c], NULL};
    expect_error(a5);
    const char *a6[] = {cmds[c], dirpath, NULL};
    expect_error(a6);
    const char *a7[] = {cmds[c], sample, "-o", NULL};
    expect_error(a7);
    const char *a8[] = {cmds[c], sample, missing, NULL}; /* one bad file among good ones */
    expect_error(a8);
  }
  const char *f1[] = {"export", "--format", "svg", sample, NULL};
  expect_error(f1);
  const char *f2[] = {"export", sample, "-o", "/nonexistent/dir/out.json", NULL};
  expect_error(f2);
  const char *f3[] = {"summary", "--min-wait-us", "-5", sample, NULL};
  expect_error(f3);
  const char *d1[] = {"demo", "--bogus", NULL};
  expect_error(d1);
  const char *d2[] = {"demo", "--out", NULL};
  expect_error(d2);
}

static void test_cut_trace_is_read_with_warning(void **state) {
  (void)state;
  const char *cmds[] = {"export", "summary"};
  for (int c = 0; c < 2; c++) {
    struct cli_result r;
    const char *args[] = {cmds[c], cut, NULL};
    assert_int_equal(cli_run(&r, args), 0);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.err_lines, 1);
    assert_non_null(strstr(r.err, "cut short"));
  }
}

/* A write error must not delete what -o points at unless it is a regular
 * file export created: as root, unlinking /dev/full once removed the device. */
static void test_write_error_keeps_non_regular_output(void **state) {
  (void)state;
  struct stat st;
  if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) skip();
  char link[512];
  snprintf(link, sizeof link, "%s/to-dev-full.json", cli_tmpdir());
  unlink(link);
  assert_int_equal(symlink("/dev/full", link), 0);
  const char *args[] = {"export", sample, "-o", link, NULL};
  expect_error(args);
  struct stat lst;
  assert_int_equal(lstat(link, &lst), 0); /* the link is still there */
  assert_true(S_ISLNK(lst.st_mode));
  assert_int_equal(stat("/dev/full", &st), 0); /* and so is the device */
  assert_true(S_ISCHR(st.st_mode));
  unlink(link);
}

static void test_help(void **state) {
  (void)state;
  const char *cmds[] = {"export", "summary", "demo"};
  for (int c = 0; c < 3; c++) {
    struct cli_result r;
    const char *args[] = {cmds[c], "--help", NULL};
    assert_int_equal(cli_run(&r, args), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "usage: nccl-lens"));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_inputs),
      cmocka_unit_test(test_cut_trace_is_read_with_warning),
      cmocka_unit_test(test_write_error_keeps_non_regular_output),
      cmocka_unit_test(test_help),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
