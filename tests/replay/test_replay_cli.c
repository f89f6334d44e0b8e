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

/* What a scenario cannot honour is refused (exit 2, one line of at most 120 columns), never run as
 * something else: before, --straggler 4 of 4 ranks ran rank 1, ce ran v5 (exit 0, its error
 * twice), net-* and hang-proxy on one node injected nothing. */
static void unhonoured_options(void **state) {
  (void)state;
  static const struct {
    const char *args, *says;
  } cases[] = {
      {"--scenario job-late-app --nodes 2 --straggler 4", "--straggler 4 is not a rank of the 4 ranks (0..3)"},
      {"--scenario job-slow-launch --straggler 2", "--straggler 2 is not a rank of the 2 ranks"},
      {"--scenario allreduce --straggler 1", "--straggler is for job-* scenarios"},
      {"--scenario job-starved-proxy --straggler 1", "job-starved-proxy always starves"},
      {"--scenario ce", "scenario ce needs --api 6, 7 or auto"},
      {"--scenario ce --api 5", "scenario ce needs --api 6, 7 or auto"},
      {"--scenario net-slow-link", "scenario net-slow-link needs --nodes 2+"},
      {"--scenario net-even --nodes 1", "scenario net-even needs --nodes 2"},
      {"--scenario hang-proxy", "scenario hang-proxy needs --nodes 2"},
      {"--scenario job-slow-link", "scenario job-slow-link needs --nodes 2"},
      {"--scenario hang-missing --ranks-per-node 1", "scenario hang-missing needs 2 ranks"},
  };
  char dir[] = "/tmp/lens-replay-cli-XXXXXX";
  assert_non_null(mkdtemp(dir));
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[512], out[4096];
    snprintf(args, sizeof args, "--plugin rec --iters 1 --hang-exit-after 0.1 --out %s %s", dir, cases[i].args);
    int rc = run(args, out, sizeof out);
    if (rc != 2 || !strstr(out, cases[i].says)) fprintf(stderr, "replay %s: exit %d, <%s>\n", cases[i].args, rc, out);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(out, cases[i].says));
    assert_int_equal(strchr(out, '\n') - out + 1, (long)strlen(out)); /* one line */
    assert_true(strlen(out) <= 121);
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(name_rule), cmocka_unit_test(bad_options),
                                     cmocka_unit_test(unhonoured_options)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
