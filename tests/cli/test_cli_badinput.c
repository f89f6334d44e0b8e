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
#include <sys/wait.h>
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

/* A torch.profiler (Kineto) trace handed to a command that reads .lens
 * traces: one line that says what it looks like and which commands read it,
 * from the whole load (summary), the window's (--since) and the streamed
 * reader (hang); plain JSON and its gzip. */
static void test_json_input_names_its_readers(void **state) {
  (void)state;
  char json[512], gz[512], cmd[1200];
  snprintf(json, sizeof json, "%s/rank0.json", dirpath);
  snprintf(gz, sizeof gz, "%s/rank0.json.gz", dirpath);
  static const char text[] = "\n {\"schemaVersion\": 1, \"deviceProperties\": [], \"distributedInfo\": "
                             "{\"rank\": 0, \"world_size\": 2}, \"traceEvents\": []}\n";
  tb_write_file(json, (const uint8_t *)text, sizeof text - 1);
  snprintf(cmd, sizeof cmd, "gzip -c '%s' > '%s'", json, gz);
  assert_int_equal(system(cmd), 0);
  const char *a1[] = {"summary", json, NULL}, *a2[] = {"summary", "--since", "1ms", json, NULL},
             *a3[] = {"hang", json, NULL}, *a4[] = {"summary", gz, NULL};
  const char *const *args[] = {a1, a2, a3, a4};
  for (int i = 0; i < 4; i++) {
    struct cli_result r;
    expect_error(args[i]);
    assert_int_equal(cli_run(&r, args[i]), 0);
    if (!strstr(r.err, "nccl-lens job")) fprintf(stderr, "case %d: <%s>\n", i, r.err);
    assert_non_null(strstr(r.err, "not a .lens trace"));
    assert_non_null(strstr(r.err, i == 3 ? "gzip" : "JSON"));
    assert_non_null(strstr(r.err, "torch.profiler"));
    assert_non_null(strstr(r.err, "nccl-lens job"));
  }
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

/* Silent failures (issue 9): output that never arrived, a replay that could
 * not write, a file that holds only its header. */
static int sh_status(const char *cmd, char *err, size_t len) {
  char full[2048], ef[256];
  snprintf(ef, sizeof ef, "%s/sh-stderr.txt", cli_tmpdir());
  snprintf(full, sizeof full, "%s 2>%s", cmd, ef);
  int st = system(full);
  FILE *f = fopen(ef, "r");
  size_t n = f ? fread(err, 1, len - 1, f) : 0;
  err[n] = 0;
  if (f) fclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_stdout_full_fails(void **state) {
  (void)state;
  struct stat st;
  if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) skip();
  const char *cmds[] = {"summary", "validate", "report", "job", "net", "hang", "export"};
  for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
    char cmd[1024], err[4096];
    snprintf(cmd, sizeof cmd, "%s/bin/nccl-lens %s %s%s >/dev/full", LENS_BUILD_DIR, cmds[c], sample,
             !strcmp(cmds[c], "export") ? " -o -" : "");
    int rc = sh_status(cmd, err, sizeof err);
    if (rc == 0 || !strstr(err, "write error")) fprintf(stderr, "%s: rc %d stderr <%s>\n", cmds[c], rc, err);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(err, "write error"));
  }
}

static void test_replay_out_unwritable(void **state) {
  (void)state;
  char cmd[1024], err[4096];
  snprintf(cmd, sizeof cmd, "%s/bin/nccl-lens replay --out /etc/passwd/x --quiet >/dev/null", LENS_BUILD_DIR);
  int rc = sh_status(cmd, err, sizeof err);
  assert_int_not_equal(rc, 0);
  assert_non_null(strstr(err, "/etc/passwd/x"));
  /* and a good --out is named in the summary line */
  char out[256], line[512];
  snprintf(out, sizeof out, "%s/replay-out/a/b", cli_tmpdir());
  snprintf(cmd, sizeof cmd, "%s/bin/nccl-lens replay --out %s > %s/replay.txt", LENS_BUILD_DIR, out, cli_tmpdir());
  assert_int_equal(sh_status(cmd, err, sizeof err), 0);
  snprintf(line, sizeof line, "%s/replay.txt", cli_tmpdir());
  FILE *f = fopen(line, "r");
  assert_non_null(f);
  char text[4096];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = 0;
  fclose(f);
  snprintf(line, sizeof line, "traces in %s", out);
  assert_non_null(strstr(text, line));
}

/* Bad traces read on several threads at once (one host group each): one
 * error line, the first file's in input order, however the threads race.
 * Before the pass driver kept each group's lines to say them in order, two
 * groups failing together each printed their line, about one run in two. */
static void test_many_bad_files_one_error(void **state) {
  (void)state;
  char d[256], p[300];
  snprintf(d, sizeof d, "%s/manybad", dirpath);
  assert_int_equal(mkdir(d, 0755), 0);
  uint8_t junk[3000];
  for (int i = 0; i < 8; i++) {
    for (size_t k = 0; k < sizeof junk; k++) junk[k] = (uint8_t)(k * 131 + (size_t)i * 17 + 7);
    snprintf(p, sizeof p, "%s/bad%d.lens", d, i);
    tb_write_file(p, junk, i == 7 ? 0 : sizeof junk);
  }
  const char *cmds[] = {"summary", "net", "job"};
  for (size_t c = 0; c < sizeof cmds / sizeof *cmds; c++)
    for (int run = 0; run < 6; run++) {
      struct cli_result r;
      const char *a[] = {cmds[c], d, NULL};
      assert_int_equal(cli_run(&r, a), 0);
      if (r.err_lines != 1 || !strstr(r.err, "bad0.lens"))
        fprintf(stderr, "%s (run %d): status %d stderr <%s>\n", cmds[c], run, r.status, r.err);
      assert_int_equal(r.status, 1);
      assert_int_equal(r.err_lines, 1);
      assert_non_null(strstr(r.err, "bad0.lens"));
    }
}

static void test_header_only_warns(void **state) {
  (void)state;
  char hdr[256];
  snprintf(hdr, sizeof hdr, "%s/header-only.lens", cli_tmpdir());
  size_t len;
  uint8_t *b = tb_read_file(sample, &len);
  tb_write_file(hdr, b, 64);
  free(b);
  const char *cmds[] = {"summary", "validate"};
  for (int c = 0; c < 2; c++) {
    struct cli_result r;
    const char *args[] = {cmds[c], hdr, NULL};
    assert_int_equal(cli_run(&r, args), 0);
    assert_non_null(strstr(r.err, "holds a header and nothing else"));
    if (!c) {
      assert_null(strstr(r.out, "files intact"));
      assert_non_null(strstr(r.out, "holds its header only"));
    }
  }
}

/* The plugin's WARN lines reach the user through the trace: summary and
 * report show them, as one line each whatever the value quoted. */
static void test_plugin_warn_shown(void **state) {
  (void)state;
  char cmd[4096], err[4096], dir[256];
  snprintf(dir, sizeof dir, "%s/warn-run", cli_tmpdir());
  snprintf(cmd, sizeof cmd,
           "NCCL_LENS_MODE=\"$(printf 'bogus\\nFORGED')\" %s/bin/nccl-lens replay --out %s --quiet && "
           "%s/bin/nccl-lens summary %s > %s/s.txt && %s/bin/nccl-lens report %s > %s/r.md",
           LENS_BUILD_DIR, dir, LENS_BUILD_DIR, dir, dir, LENS_BUILD_DIR, dir, dir);
  assert_int_equal(sh_status(cmd, err, sizeof err), 0);
  const char *files[] = {"s.txt", "r.md"};
  for (int i = 0; i < 2; i++) {
    char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    size_t len;
    char *t = (char *)tb_read_file(p, &len);
    assert_non_null(t);
    t = realloc(t, len + 1);
    t[len] = 0;
    assert_non_null(strstr(t, i ? "## Plugin messages" : "plugin messages"));
    assert_non_null(strstr(t, "bad value NCCL_LENS_MODE=\"bogus?FORGED\""));
    assert_null(strstr(t, "\nFORGED"));
    free(t);
  }
}

/* -o into a directory that does not exist: said before loading, with the reason. */
static void test_bad_output_dir_before_loading(void **state) {
  (void)state;
  struct cli_result r;
  const char *a2[] = {"summary", "/nonexistent/none.lens", "-o", "/nonexistent/dir/out.txt", NULL};
  assert_int_equal(cli_run(&r, a2), 0);
  assert_int_not_equal(r.status, 0);
  assert_int_equal(r.err_lines, 1);
  /* the output is refused first: the missing trace is never opened */
  assert_non_null(strstr(r.err, "cannot write /nonexistent/dir/out.txt: No such file or directory"));
}

/* Every command that reads traces: -o that names a directory (or whose directory is missing) is
 * "cannot write", exit 1, one line; -o '' is a usage error, exit 2. validate exited 0 after it. */
static void test_output_unwritable_every_command(void **state) {
  (void)state;
  const char *cmds[] = {"summary", "report", "export", "job", "net", "hang", "validate", "diff"};
  char missing_dir[256], other[256];
  snprintf(missing_dir, sizeof missing_dir, "%s/no-such-dir/out.txt", dirpath);
  snprintf(other, sizeof other, "%s/other.lens", dirpath); /* diff's second run */
  sample_trace_write(other);
  for (size_t k = 0; k < sizeof cmds / sizeof *cmds; k++) {
    const char *outs[] = {dirpath, missing_dir};
    for (size_t o = 0; o < 2; o++) {
      struct cli_result r;
      const char *a[] = {cmds[k], "-o", outs[o], sample, strcmp(cmds[k], "diff") ? NULL : other, NULL};
      assert_int_equal(cli_run(&r, a), 0);
      if (r.status != 1 || r.err_lines != 1 || !strstr(r.err, "cannot write"))
        fprintf(stderr, "%s -o %s: status %d stderr <%s>\n", cmds[k], outs[o], r.status, r.err);
      assert_int_equal(r.status, 1);
      assert_int_equal(r.err_lines, 1);
      assert_non_null(strstr(r.err, "cannot write"));
    }
    struct cli_result r;
    const char *e[] = {cmds[k], "-o", "", sample, strcmp(cmds[k], "diff") ? NULL : other, NULL};
    assert_int_equal(cli_run(&r, e), 0);
    if (r.status != 2 || r.err_lines != 1)
      fprintf(stderr, "%s -o '': status %d stderr <%s>\n", cmds[k], r.status, r.err);
    assert_int_equal(r.status, 2);
    assert_int_equal(r.err_lines, 1);
  }
  const char *const empty_out[][5] = {{"sched", "--pid", "1", "--out", ""}, {"demo", "--out", "", NULL},
                                      {"replay", "--out", "", NULL}};
  for (size_t k = 0; k < sizeof empty_out / sizeof *empty_out; k++) {
    const char *a[6] = {0};
    memcpy(a, empty_out[k], sizeof empty_out[k]);
    struct cli_result r;
    assert_int_equal(cli_run(&r, a), 0);
    assert_int_equal(r.status, 2);
    assert_int_equal(r.err_lines, 1);
  }
}

/* Replay children end as processes do, also with --no-finalize: the plugin's at-exit pass runs (no
 * registry file left behind, every trace ends cleanly). */
static void test_replay_children_exit_cleanly(void **state) {
  (void)state;
  char cmd[4096], err[4096], dir[256];
  snprintf(dir, sizeof dir, "%s/children", cli_tmpdir());
  snprintf(cmd, sizeof cmd,
           "NCCL_LENS_REGISTRY_DIR=%s/reg %s/bin/nccl-lens replay --nodes 2 --no-finalize --out %s --quiet && "
           "test -z \"$(ls %s/reg/*.reg 2>/dev/null)\" && %s/bin/nccl-lens summary %s > %s/s.txt && "
           "grep -q 'all 2 files intact' %s/s.txt && ! grep -q 'no clean end' %s/s.txt",
           dir, LENS_BUILD_DIR, dir, dir, LENS_BUILD_DIR, dir, dir, dir, dir);
  assert_int_equal(sh_status(cmd, err, sizeof err), 0);
}

static void test_version_everywhere(void **state) {
  (void)state;
  const char *cmds[] = {"export", "summary", "validate", "report", "job", "net", "hang", "replay", "agent", "top"};
  for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
    struct cli_result r;
    const char *args[] = {cmds[c], "--version", NULL};
    assert_int_equal(cli_run(&r, args), 0);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "nccl-lens "));
  }
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
      cmocka_unit_test(test_json_input_names_its_readers),
      cmocka_unit_test(test_cut_trace_is_read_with_warning),
      cmocka_unit_test(test_write_error_keeps_non_regular_output),
      cmocka_unit_test(test_help),
      cmocka_unit_test(test_stdout_full_fails),
      cmocka_unit_test(test_replay_out_unwritable),
      cmocka_unit_test(test_header_only_warns),
      cmocka_unit_test(test_many_bad_files_one_error),
      cmocka_unit_test(test_version_everywhere),
      cmocka_unit_test(test_plugin_warn_shown),
      cmocka_unit_test(test_bad_output_dir_before_loading),
      cmocka_unit_test(test_output_unwritable_every_command),
      cmocka_unit_test(test_replay_children_exit_cleanly),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
