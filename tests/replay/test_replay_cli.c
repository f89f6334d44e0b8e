/* The `nccl-lens replay` command: NCCL's name rule (a bare name X loads
 * libnccl-profiler-X.so through the library path), exit status 2 and one
 * line for bad options, 1 for a plugin that cannot be loaded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

static int run(const char *args, char *out, size_t outlen) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "LD_LIBRARY_PATH=%s/lib %s/bin/nccl-lens replay %s 2>&1", LENS_BUILD_DIR, LENS_BUILD_DIR,
           args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, outlen - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void name_rule(void **state) {
  (void)state;
  char out[4096];
  assert_int_equal(run("--plugin rec --scenario sendrecv --iters 1", out, sizeof out), 0);
  assert_non_null(strstr(out, "plugin API v5"));
  assert_int_equal(run("--plugin rec --api 4 --iters 1", out, sizeof out), 0);
  assert_non_null(strstr(out, "plugin API v4"));
}

static void bad_options(void **state) {
  (void)state;
  char out[4096];
  assert_int_equal(run("--plugin rec --nodes abc", out, sizeof out), 2);
  assert_non_null(strstr(out, "nccl-lens replay: --nodes"));
  assert_int_equal(strchr(out, '\n') - out + 1, (long)strlen(out)); /* one line */
  assert_int_equal(run("--plugin rec --scenario nope", out, sizeof out), 2);
  assert_int_equal(run("--plugin rec --bogus", out, sizeof out), 2);
  assert_int_equal(run("--plugin no-such-plugin-here", out, sizeof out), 1);
  assert_int_equal(run("--help", out, sizeof out), 0);
  assert_non_null(strstr(out, "--scenario"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(name_rule), cmocka_unit_test(bad_options)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
