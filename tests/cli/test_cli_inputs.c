/* Traces that are not plain files (issue 26, item 18): TRACE.lens.gz and
 * "-" (standard input, plain or gzip) read as the plain trace is, by every
 * command that reads traces; a truncated or non-gzip .gz, an input over
 * NCCL_LENS_INPUT_MAX_MB and "-" twice give one error line, never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli_run.h"
#include "sample_trace.h"
#include "trace_builder.h"

#define CLI LENS_BUILD_DIR "/bin/nccl-lens"

static const char *d;

/* sh -c cmd: its exit status (128 + signal when killed). */
static int sh(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  int st = system(cmd);
  assert_int_not_equal(st, -1);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int setup(void **state) {
  (void)state;
  d = cli_tmpdir();
  char p[256];
  snprintf(p, sizeof p, "%s/t.lens", d);
  sample_trace_write(p);
  return sh("cd %s && gzip -c t.lens > t.lens.gz && head -c $(( $(wc -c < t.lens.gz) / 2 )) t.lens.gz > cut.lens.gz && "
            "cp t.lens plain.gz && head -c 3000000 /dev/zero | gzip -c > big.lens.gz", d);
}

static int teardown(void **state) {
  (void)state;
  cli_cleanup();
  return 0;
}

/* summary of the .gz, of the plain trace on standard input and of the .gz on
 * standard input: the same bytes as of the plain trace (text and JSON but
 * for the file's name). */
static void test_same_summary(void **state) {
  (void)state;
  assert_int_equal(sh("cd %s && %s summary t.lens > a.txt 2>/dev/null && test -s a.txt", d, CLI), 0);
  assert_int_equal(sh("cd %s && %s summary t.lens.gz > b.txt && cmp a.txt b.txt", d, CLI), 0);
  assert_int_equal(sh("cd %s && cat t.lens | %s summary - > c.txt && cmp a.txt c.txt", d, CLI), 0);
  assert_int_equal(sh("cd %s && %s summary - < t.lens.gz > e.txt && cmp a.txt e.txt", d, CLI), 0);
  /* JSON names the input as the user did */
  assert_int_equal(sh("cd %s && %s summary --json t.lens | sed 's/\"path\":\"t.lens\"/P/' > a.json && "
                      "%s summary --json t.lens.gz | sed 's/\"path\":\"t.lens.gz\"/P/' > b.json && cmp a.json b.json && "
                      "%s summary --json - < t.lens | sed 's/\"path\":\"-\"/P/' > c.json && cmp a.json c.json && "
                      "grep -q P a.json", d, CLI, CLI, CLI), 0);
}

/* Every command that reads traces takes both forms. */
static void test_every_command(void **state) {
  (void)state;
  const char *cmds[] = {"summary", "net", "hang", "validate", "report", "export", "job"};
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
    assert_int_equal(sh("cd %s && %s %s -o /dev/null t.lens.gz 2>/dev/null", d, CLI, cmds[i]), 0);
    assert_int_equal(sh("cd %s && %s %s -o /dev/null - < t.lens 2>/dev/null", d, CLI, cmds[i]), 0);
  }
  assert_int_equal(sh("cd %s && %s diff t.lens.gz - < t.lens > /dev/null", d, CLI), 0);
}

static void one_error(const char *args, const char *stdin_file, int status, const char *needle) {
  int st = sh("cd %s && %s %s < %s > /dev/null 2> err.txt", d, CLI, args, stdin_file);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s/err.txt", d);
  FILE *f = fopen(cmd, "r");
  assert_non_null(f);
  char buf[2048];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  int lines = 0;
  for (char *p = buf; *p; p++) lines += *p == '\n';
  fprintf(stderr, "%s: %d: %s", args, st, buf);
  assert_int_equal(st, status);
  assert_int_equal(lines, 1);
  assert_non_null(strstr(buf, needle));
  assert_null(strstr(buf, "/proc/self/fd")); /* named as the user named it */
}

static void test_bad_inputs(void **state) {
  (void)state;
  one_error("summary cut.lens.gz", "/dev/null", 1, "cut.lens.gz: truncated compressed data");
  one_error("validate - ", "cut.lens.gz", 1, "standard input: truncated compressed data");
  one_error("summary plain.gz", "/dev/null", 1, "plain.gz: not gzip or zlib data");
  one_error("summary -", "/dev/null", 1, "- is not a .lens trace");
  one_error("summary - -", "/dev/null", 2, "given twice");
  assert_int_equal(setenv("NCCL_LENS_INPUT_MAX_MB", "1", 1), 0);
  one_error("summary big.lens.gz", "/dev/null", 1, "big.lens.gz: more than 1 MiB decompressed");
  one_error("summary -", "big.lens.gz", 1, "standard input: more than 1 MiB decompressed");
  assert_int_equal(unsetenv("NCCL_LENS_INPUT_MAX_MB"), 0);
  one_error("summary big.lens.gz", "/dev/null", 1, "big.lens.gz is not a .lens trace"); /* under the default */
}

/* The load's notes and warnings name a spooled input as given: a copy read
 * once, a cut trace inside a whole .gz. */
static void test_notes_name_inputs(void **state) {
  (void)state;
  assert_int_equal(sh("cd %s && head -c $(( $(wc -c < t.lens) - 37 )) t.lens | gzip -c > cutin.lens.gz", d), 0);
  assert_int_equal(sh("cd %s && %s summary t.lens t.lens.gz > /dev/null 2> n1.txt && "
                      "grep -q 'note: t.lens.gz is a copy of the trace in t.lens: read once' n1.txt && "
                      "%s summary cutin.lens.gz > /dev/null 2> n2.txt && grep -q 'warning: cutin.lens.gz is cut short' n2.txt && "
                      "%s summary --json - t.lens < t.lens 2> n3.txt | grep -q '\"path\":\"-\"' && "
                      "! grep -q /proc/self/fd n1.txt n2.txt n3.txt", d, CLI, CLI, CLI), 0);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_same_summary), cmocka_unit_test(test_every_command),
                                 cmocka_unit_test(test_bad_inputs), cmocka_unit_test(test_notes_name_inputs)};
  return cmocka_run_group_tests(t, setup, teardown);
}
