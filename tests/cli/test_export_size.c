/* `nccl-lens export` read host group by host group (issue 23), on a job of 4
 * hosts (lens-gen-job: 16 ranks, so 4 groups; its tids repeat across hosts,
 * so the chrome export rewrites them) and on the demo's replayed 2 x 2 `all`:
 *   - every format's file is the same byte for byte on 1 and on 2 threads;
 *   - a document over the limit (NCCL_LENS_EXPORT_MAX_BYTES, here a third of
 *     the real size, so the test stays small) is not written: exit status 4,
 *     stderr says the size it would have and what fits; the groups after
 *     the spool passed the limit are measured, not spooled ("about");
 *   - --force writes it anyway, the same bytes as without a limit;
 *   - --split writes pieces OUT.1.json ... each under the limit, each valid
 *     JSON, every event of the whole document in exactly one
 *     (split_check.py); without -o it is a usage error;
 *   - the job timeline's JSON is bounded the same way (test_job_size). */
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

#define PLUGIN LENS_BUILD_DIR "/lib/libnccl-profiler-lens.so"
#define CHECKER LENS_SOURCE_DIR "/tests/cli/split_check.py"

static char traces[256], job[256];

static int setup(void **state) {
  (void)state;
  snprintf(job, sizeof job, "%s/gj", cli_tmpdir());
  char cmd[600];
  snprintf(cmd, sizeof cmd, "%s/bin/lens-gen-job -o %s --ranks 16 --hosts 4 --events 40000 >/dev/null 2>&1",
           LENS_BUILD_DIR, job);
  if (system(cmd)) return -1;
  snprintf(traces, sizeof traces, "%s/traces", cli_tmpdir());
  struct cli_result r;
  const char *a[] = {"replay", "--plugin", PLUGIN, "--scenario", "all", "--nodes", "2", "--ranks-per-node", "2",
                     "--out", traces, "--quiet", NULL};
  if (cli_run(&r, a) || r.status) {
    fprintf(stderr, "replay: %s\n", r.err);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  cli_cleanup();
  return 0;
}

static char *slurp(const char *path, long *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)*len + 1);
  if (b && fread(b, 1, (size_t)*len, f) != (size_t)*len) {
    free(b);
    b = NULL;
  }
  fclose(f);
  return b;
}

/* The file at path holds exactly the n bytes of want. */
static void assert_same_file(const char *path, const char *want, long n) {
  long got;
  char *x = slurp(path, &got);
  assert_non_null(x);
  assert_int_equal(got, n);
  assert_int_equal(memcmp(want, x, (size_t)n), 0);
  free(x);
}

static void export_to(const char *out, const char *threads, struct cli_result *r) {
  const char *a[] = {"export", "--format", "chrome", "--threads", threads, "-o", out, traces, NULL};
  assert_int_equal(cli_run(r, a), 0);
}

/* --format F of the 4-host job on 1 and on 2 threads: the same bytes. */
static void same_on_threads(const char *format) {
  char one[300], two[300];
  snprintf(one, sizeof one, "%s/%s-1", cli_tmpdir(), format);
  snprintf(two, sizeof two, "%s/%s-2", cli_tmpdir(), format);
  struct cli_result r;
  const char *a[] = {"export", "--format", format, "--threads", "1", "-o", one, job, NULL};
  assert_int_equal(cli_run(&r, a), 0);
  if (r.status) fail_msg("export --format %s: %s", format, r.err);
  a[4] = "2", a[6] = two;
  assert_int_equal(cli_run(&r, a), 0);
  assert_int_equal(r.status, 0);
  long n1, n2;
  char *x = slurp(one, &n1), *y = slurp(two, &n2);
  assert_non_null(x);
  assert_non_null(y);
  assert_true(n1 > 10000);
  assert_int_equal(n1, n2);
  assert_int_equal(memcmp(x, y, (size_t)n1), 0);
  free(x);
  free(y);
}

static void test_threads(void **state) {
  (void)state;
  same_on_threads("chrome");
  same_on_threads("job");
  same_on_threads("perfetto");
  /* The chrome export of several hosts is well formed: no tid of two processes. */
  char one[300], cmd[700], rep[4096];
  snprintf(one, sizeof one, "%s/chrome-1", cli_tmpdir());
  snprintf(cmd, sizeof cmd, "python3 '%s/tests/cli/export_check.py' '%s'", LENS_SOURCE_DIR, one);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(rep, 1, sizeof rep - 1, p);
  rep[n] = 0;
  assert_int_equal(pclose(p), 0);
  assert_non_null(strstr(rep, "\nid_collisions 0\n"));
  assert_non_null(strstr(rep, "\nx_violations 0\n"));
  assert_non_null(strstr(rep, "\nprocs 16\n"));
  /* The size is known exactly before writing, rewritten tids included: a
   * limit of the file's size writes it, one byte less does not. */
  long size;
  char *x = slurp(one, &size), lim[32], out[300];
  assert_non_null(x);
  free(x);
  snprintf(out, sizeof out, "%s/exact.json", cli_tmpdir());
  struct cli_result r;
  const char *a[] = {"export", "-o", out, job, NULL};
  snprintf(lim, sizeof lim, "%ld", size);
  setenv("NCCL_LENS_EXPORT_MAX_BYTES", lim, 1);
  assert_int_equal(cli_run(&r, a), 0);
  assert_int_equal(r.status, 0);
  snprintf(lim, sizeof lim, "%ld", size - 1);
  setenv("NCCL_LENS_EXPORT_MAX_BYTES", lim, 1);
  assert_int_equal(cli_run(&r, a), 0);
  assert_int_equal(r.status, 4);
  unsetenv("NCCL_LENS_EXPORT_MAX_BYTES");
}

/* A spooled input (NAME.gz) is named as given in its group's model: each
 * format still finds its group's place among the inputs. */
static void test_gz_input(void **state) {
  (void)state;
  char cmd[900], gz[300], out[300];
  snprintf(gz, sizeof gz, "%s/host0.lens.gz", cli_tmpdir());
  snprintf(cmd, sizeof cmd, "gzip -c %s/nccl-lens-gen-host000-10000.lens > %s", job, gz);
  assert_int_equal(system(cmd), 0);
  static const char *const formats[] = {"chrome", "job", "perfetto"};
  for (int k = 0; k < 3; k++) {
    snprintf(out, sizeof out, "%s/gz.%s", cli_tmpdir(), formats[k]);
    struct cli_result r;
    const char *a[] = {"export", "--format", formats[k], "-o", out, gz, NULL};
    assert_int_equal(cli_run(&r, a), 0);
    if (r.status) fail_msg("export --format %s of a .gz: %s", formats[k], r.err);
    assert_non_null(strstr(r.out, "wrote "));
  }
}

static long figure(const char *rep, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "%s ", key);
  for (const char *p = rep; (p = strstr(p, pat)); p++)
    if (p == rep || p[-1] == '\n') return atol(p + strlen(pat));
  fail_msg("no '%s' in the checker's report:\n%s", key, rep);
  return -1;
}

static void test_size_and_split(void **state) {
  (void)state;
  char one[300], two[300], big[300], forced[300], split[300];
  snprintf(one, sizeof one, "%s/one.json", cli_tmpdir());
  snprintf(two, sizeof two, "%s/two.json", cli_tmpdir());
  snprintf(big, sizeof big, "%s/big.json", cli_tmpdir());
  snprintf(forced, sizeof forced, "%s/forced.json", cli_tmpdir());
  snprintf(split, sizeof split, "%s/piece.json", cli_tmpdir());
  struct cli_result r;
  unsetenv("NCCL_LENS_EXPORT_MAX_BYTES");

  /* 1 and 2 threads: the same file. */
  export_to(one, "1", &r);
  assert_int_equal(r.status, 0);
  export_to(two, "2", &r);
  assert_int_equal(r.status, 0);
  long n1, n2;
  char *a = slurp(one, &n1), *b = slurp(two, &n2);
  assert_non_null(a);
  assert_non_null(b);
  assert_true(n1 > 100000);
  assert_int_equal(n1, n2);
  assert_int_equal(memcmp(a, b, (size_t)n1), 0);
  free(b);

  /* Over the limit: refused, nothing written, the size said. */
  long limit = n1 / 3;
  char lim[32];
  snprintf(lim, sizeof lim, "%ld", limit);
  setenv("NCCL_LENS_EXPORT_MAX_BYTES", lim, 1);
  export_to(big, "2", &r);
  assert_int_equal(r.status, 4);
  struct stat st;
  assert_int_not_equal(stat(big, &st), 0);
  assert_non_null(strstr(r.err, "would be"));
  assert_non_null(strstr(r.err, "--split"));
  assert_non_null(strstr(r.err, "--force"));
  char kb[32];
  snprintf(kb, sizeof kb, "%.1f MB", (double)n1 / 1e6);
  if (n1 < 1000000) snprintf(kb, sizeof kb, "%.1f kB", (double)n1 / 1e3);
  assert_non_null(strstr(r.err, kb)); /* the size it would have: exactly the file's */
  /* The 4-host job on one thread under a 1-byte limit: the first group
   * spooled holds more than the limit, so the other three are only
   * measured, never written to the spool (a refused 9.5 GB export spooled
   * all of it first), and the size is "about" (their rewritten tids are not
   * read back). */
  setenv("NCCL_LENS_EXPORT_MAX_BYTES", "1", 1);
  const char *ja[] = {"export", "--format", "chrome", "--threads", "1", "-o", big, job, NULL};
  assert_int_equal(cli_run(&r, ja), 0);
  assert_int_equal(r.status, 4);
  assert_int_not_equal(stat(big, &st), 0);
  assert_non_null(strstr(r.err, "would be about"));
  setenv("NCCL_LENS_EXPORT_MAX_BYTES", lim, 1);

  /* --force: written anyway, the same document. */
  const char *fa[] = {"export", "--force", "-o", forced, traces, NULL};
  assert_int_equal(cli_run(&r, fa), 0);
  assert_int_equal(r.status, 0);
  assert_same_file(forced, a, n1);
  free(a);

  /* --split: pieces under the limit covering every event once. */
  const char *sa[] = {"export", "--split", "-o", split, traces, NULL};
  assert_int_equal(cli_run(&r, sa), 0);
  if (r.status) fail_msg("export --split: %s", r.err);
  char cmd[2048];
  int o = snprintf(cmd, sizeof cmd, "python3 '%s' %ld '%s'", CHECKER, limit, one);
  int pieces = 0;
  for (int k = 1; k < 64; k++) {
    char p[320];
    snprintf(p, sizeof p, "%s/piece.%d.json", cli_tmpdir(), k);
    if (stat(p, &st)) break;
    o += snprintf(cmd + o, sizeof cmd - (size_t)o, " '%s'", p);
    pieces++;
  }
  assert_true(pieces >= 3);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char rep[4096];
  size_t n = fread(rep, 1, sizeof rep - 1, p);
  rep[n] = 0;
  assert_int_equal(pclose(p), 0);
  printf("%s", rep);
  assert_int_equal(figure(rep, "pieces"), pieces);
  assert_int_equal(figure(rep, "over_limit"), 0);
  assert_int_equal(figure(rep, "invalid"), 0);
  assert_true(figure(rep, "events") > 1000);
  assert_int_equal(figure(rep, "missing"), 0);
  assert_int_equal(figure(rep, "extra"), 0);
  assert_int_equal(figure(rep, "split_ok"), pieces);

  /* --split needs files to write. */
  const char *na[] = {"export", "--split", traces, NULL};
  assert_int_equal(cli_run(&r, na), 0);
  assert_int_equal(r.status, 2);
  unsetenv("NCCL_LENS_EXPORT_MAX_BYTES");
}

/* The job timeline's JSON (--format job) is bounded as the chrome export's
 * is: its size known exactly before it is written (a limit of its size
 * writes it, one byte less refuses it: exit 4, no file, the size, the window
 * that fits, --format perfetto and --force said; under a limit the first
 * group passes, the others counted, not spooled: the same exact size); --force writes the same
 * bytes over the limit; Perfetto's protobuf is never refused and takes no
 * --force. */
static void test_job_size(void **state) {
  (void)state;
  char whole[300], out[300], lim[32];
  snprintf(whole, sizeof whole, "%s/timeline.json", cli_tmpdir());
  snprintf(out, sizeof out, "%s/timeline-2.json", cli_tmpdir());
  struct cli_result r;
  unsetenv("NCCL_LENS_EXPORT_MAX_BYTES");
  const char *a[] = {"export", "--format", "job", "-o", whole, job, NULL};
  assert_int_equal(cli_run(&r, a), 0);
  assert_int_equal(r.status, 0);
  long size;
  char *x = slurp(whole, &size);
  assert_non_null(x);
  assert_true(size > 10000);
  a[4] = out;
  snprintf(lim, sizeof lim, "%ld", size);
  setenv("NCCL_LENS_EXPORT_MAX_BYTES", lim, 1);
  assert_int_equal(cli_run(&r, a), 0);
  assert_int_equal(r.status, 0);
  assert_same_file(out, x, size);
  unlink(out);
  snprintf(lim, sizeof lim, "%ld", size - 1);
  setenv("NCCL_LENS_EXPORT_MAX_BYTES", lim, 1);
  assert_int_equal(cli_run(&r, a), 0);
  assert_int_equal(r.status, 4);
  struct stat st;
  assert_int_not_equal(stat(out, &st), 0);
  assert_non_null(strstr(r.err, "JSON would be"));
  assert_non_null(strstr(r.err, "--since/--until window of about"));
  assert_non_null(strstr(r.err, "--format perfetto"));
  assert_non_null(strstr(r.err, "--force"));
  char exact[64];
  snprintf(exact, sizeof exact, "(%ld bytes)", size);
  assert_non_null(strstr(r.err, exact));
  /* A limit the first group passes: the rest are counted as drawn, not
   * spooled, and the size said is still the exact one, on 1 and 2 threads. */
  setenv("NCCL_LENS_EXPORT_MAX_BYTES", "1000", 1);
  for (int t = 1; t <= 2; t++) {
    const char *c1[] = {"export", "--format", "job", "--threads", t == 1 ? "1" : "2", "-o", out, job, NULL};
    assert_int_equal(cli_run(&r, c1), 0);
    assert_int_equal(r.status, 4);
    assert_non_null(strstr(r.err, exact));
    assert_int_not_equal(stat(out, &st), 0);
  }
  /* --force over a third of the size: the same bytes */
  snprintf(lim, sizeof lim, "%ld", size / 3);
  setenv("NCCL_LENS_EXPORT_MAX_BYTES", lim, 1);
  const char *f[] = {"export", "--format", "job", "--force", "-o", out, job, NULL};
  assert_int_equal(cli_run(&r, f), 0);
  assert_int_equal(r.status, 0);
  assert_same_file(out, x, size);
  free(x);
  /* Perfetto: not refused under the same limit; --force is not its option */
  snprintf(out, sizeof out, "%s/timeline.pftrace", cli_tmpdir());
  const char *p[] = {"export", "--format", "perfetto", "-o", out, job, NULL};
  assert_int_equal(cli_run(&r, p), 0);
  assert_int_equal(r.status, 0);
  const char *pf[] = {"export", "--format", "perfetto", "--force", "-o", out, job, NULL};
  assert_int_equal(cli_run(&r, pf), 0);
  assert_int_equal(r.status, 2);
  unsetenv("NCCL_LENS_EXPORT_MAX_BYTES");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads), cmocka_unit_test(test_gz_input),
                                     cmocka_unit_test(test_size_and_split), cmocka_unit_test(test_job_size)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
