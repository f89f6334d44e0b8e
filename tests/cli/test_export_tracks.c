/* `nccl-lens export` (the per-trace Chrome/Perfetto JSON) on replayed jobs:
 * the demo's 2 x 2 `all` workload and a 2 x 4 `all` run, checked by
 * export_check.py the way Perfetto reads the file:
 *   - complete slices nest on every track (pid, tid), to the ns; async pairs
 *     nest per process-scoped id, ends closing the innermost begin;
 *   - every declared track has slices and every slice a declared track;
 *   - process names list the ranks and host, track names carry rank(s);
 *   - ids: processes and synthetic tracks at or above 4194304 (PID_MAX_LIMIT,
 *     above every real pid/tid), no tid shared between processes or equal to
 *     a process's pid.
 * Run it against another binary with LENS_CLI_BIN=... (how the failures
 * before the change were counted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"

#define PLUGIN LENS_BUILD_DIR "/lib/libnccl-profiler-lens.so"
#define CHECKER LENS_SOURCE_DIR "/tests/cli/export_check.py"

static int teardown(void **state) {
  (void)state;
  cli_cleanup();
  return 0;
}

static long figure(const char *rep, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "%s ", key);
  for (const char *p = rep; (p = strstr(p, pat)); p++)
    if (p == rep || p[-1] == '\n') return atol(p + strlen(pat));
  fail_msg("no '%s' in the checker's report:\n%s", key, rep);
  return -1;
}

static void check_file(const char *json, char *rep, size_t len) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "python3 '%s' '%s' 2>&1", CHECKER, json);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(rep, 1, len - 1, p);
  rep[n] = 0;
  int st = pclose(p);
  if (st) fail_msg("checker failed:\n%s", rep);
  printf("%s", rep);
}

/* Replays `all` at nodes x rpn, exports it, checks it; returns the report. */
static void replay_export_check(const char *nodes, const char *rpn, char *rep, size_t len) {
  char dir[160], json[160];
  snprintf(dir, sizeof dir, "%s/traces-%sx%s", cli_tmpdir(), nodes, rpn);
  snprintf(json, sizeof json, "%s/export-%sx%s.json", cli_tmpdir(), nodes, rpn);
  struct cli_result r;
  const char *rargs[] = {"replay", "--plugin", PLUGIN, "--scenario", "all", "--nodes", nodes, "--ranks-per-node", rpn,
                         "--out", dir, "--quiet", NULL};
  assert_int_equal(cli_run(&r, rargs), 0);
  if (r.status) fail_msg("replay: %s", r.err);
  const char *xargs[] = {"export", "--format", "chrome", dir, "-o", json, NULL};
  assert_int_equal(cli_run(&r, xargs), 0);
  if (r.status) fail_msg("export: %s", r.err);
  check_file(json, rep, len);
}

/* Nesting, tracks, names and ids, whatever was selected. */
static void assert_well_formed_sel(const char *rep) {
  assert_int_equal(figure(rep, "x_violations"), 0);
  assert_int_equal(figure(rep, "async_violations"), 0);
  assert_int_equal(figure(rep, "empty_tracks"), 0);
  assert_int_equal(figure(rep, "unnamed_tracks"), 0);
  assert_int_equal(figure(rep, "unranked_tracks"), 0);
  assert_int_equal(figure(rep, "unranked_procs"), 0);
  assert_int_equal(figure(rep, "id_collisions"), 0);
  assert_int_equal(figure(rep, "small_pids"), 0);
}

static void assert_well_formed(const char *rep) {
  assert_true(figure(rep, "x_slices") > 1000);
  assert_true(figure(rep, "async_pairs") > 1000);
  assert_int_equal(figure(rep, "x_violations"), 0);
  assert_int_equal(figure(rep, "async_violations"), 0);
  assert_true(figure(rep, "tracks") > 0);
  assert_int_equal(figure(rep, "empty_tracks"), 0);
  assert_int_equal(figure(rep, "unnamed_tracks"), 0);
  assert_int_equal(figure(rep, "dup_tracks"), 0);
  assert_int_equal(figure(rep, "unranked_tracks"), 0);
  assert_int_equal(figure(rep, "unranked_procs"), 0);
  assert_int_equal(figure(rep, "id_collisions"), 0);
  assert_int_equal(figure(rep, "small_pids"), 0);
}

/* The demo's workload: 2 processes of 2 ranks, one app thread each driving
 * both ranks (grouped Send/Recv overlap on it), p2p pairs sharing GPU timers. */
static void test_demo_workload(void **state) {
  (void)state;
  static char rep[16384];
  replay_export_check("2", "2", rep, sizeof rep);
  assert_well_formed(rep);
  assert_int_equal(figure(rep, "procs"), 2);
  assert_true(figure(rep, "lanes") > 0); /* the overlapping work went to lanes, not away */
  /* "ranks 0,1 of 4 (replay-world) · host pid N" */
  assert_non_null(strstr(rep, "process ranks 0,1 of 4 ("));
  assert_non_null(strstr(rep, "process ranks 2,3 of 4 ("));
  assert_non_null(strstr(rep, " pid "));
  assert_non_null(strstr(rep, "track r0,1 app"));
}

static void test_all_2x4(void **state) {
  (void)state;
  static char rep[16384];
  replay_export_check("2", "4", rep, sizeof rep);
  assert_well_formed(rep);
  assert_int_equal(figure(rep, "procs"), 2);
  assert_non_null(strstr(rep, "process ranks 0-3 of 8 ("));
}

/* Selection: --types keeps only the chosen event types (exactly their
 * slices, every other kind gone, still well formed); a bad type is an error
 * naming the valid ones, and so is --types with the job timeline. Uses the
 * demo workload's traces. */
static void export_selected(const char *const *sel, const char *name, char *rep, size_t len, long *bytes) {
  char dir[160], json[160];
  snprintf(dir, sizeof dir, "%s/traces-2x2", cli_tmpdir());
  snprintf(json, sizeof json, "%s/%s.json", cli_tmpdir(), name);
  const char *args[16] = {"export", "--format", "chrome", "-o", json};
  int n = 5;
  for (int i = 0; sel[i]; i++) args[n++] = sel[i];
  args[n++] = dir;
  args[n] = NULL;
  struct cli_result r;
  assert_int_equal(cli_run(&r, args), 0);
  if (r.status) fail_msg("export %s: %s", name, r.err);
  check_file(json, rep, len);
  FILE *f = fopen(json, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *bytes = ftell(f);
  fclose(f);
}

static long count_of(const char *rep, const char *what) {
  char key[64];
  snprintf(key, sizeof key, "count %s", what);
  const char *p = strstr(rep, key);
  return p ? atol(p + strlen(key) + 1) : 0;
}

static void test_selection(void **state) {
  (void)state;
  static char all[16384], kch[16384], ops[16384];
  long b_all, b_kch, b_ops;
  const char *none[] = {NULL};
  export_selected(none, "sel-all", all, sizeof all, &b_all);
  long k = count_of(all, "X/KernelCh"), o = count_of(all, "b/op");
  assert_true(k > 100 && o > 100);
  assert_true(count_of(all, "b/ProxyOp") > 0 && count_of(all, "X/CollApi") > 0);

  const char *t1[] = {"--types", "kernelch", NULL};
  export_selected(t1, "sel-kch", kch, sizeof kch, &b_kch);
  assert_well_formed_sel(kch);
  assert_int_equal(count_of(kch, "X/KernelCh"), k); /* every one of them ... */
  assert_int_equal(figure(kch, "x_slices"), k);    /* ... and nothing else */
  assert_int_equal(figure(kch, "async_pairs"), 0);

  const char *t2[] = {"--types", "coll,p2p", NULL};
  export_selected(t2, "sel-ops", ops, sizeof ops, &b_ops);
  assert_well_formed_sel(ops);
  assert_int_equal(count_of(ops, "b/op"), o);
  assert_int_equal(figure(ops, "async_pairs"), 2 * o); /* each with its enqueue nested */
  assert_int_equal(figure(ops, "x_slices"), 0);
  assert_int_equal(count_of(ops, "b/ProxyOp"), 0);

  printf("bytes: all %ld, --types kernelch %ld, --types coll,p2p %ld\n", b_all, b_kch, b_ops);
  assert_true(b_kch < b_all / 2 && b_ops < b_all);

  struct cli_result r;
  char dir[160];
  snprintf(dir, sizeof dir, "%s/traces-2x2", cli_tmpdir());
  const char *bad[] = {"export", "--format", "chrome", "--types", "coll,bogus", dir, NULL};
  assert_int_equal(cli_run(&r, bad), 0);
  assert_true(r.status == 1 || r.status == 2); /* a usage error (2 once every command says so) */
  assert_non_null(strstr(r.err, "bogus"));
  assert_non_null(strstr(r.err, "kernelch")); /* the valid names */
  const char *job[] = {"export", "--format", "job", "--types", "coll", dir, NULL};
  assert_int_equal(cli_run(&r, job), 0);
  assert_true(r.status == 1 || r.status == 2); /* a usage error (2 once every command says so) */
}

/* The merged job timeline (--format job) of the real plugin's 2 x 4 `all`
 * traces reads as a timeline: every track names a real rank (PXN ProxyOps,
 * whose communicator the recording process does not hold, go to their proxy
 * thread's GPU's rank, not "rank -1"), ProxyOps are on a track per channel
 * and direction ("rank 0 proxy recv ch 0"), and work that overlaps is on
 * "lane N" of its track. Before: 6 "rank -1" tracks, and up to 32
 * "(overlapping)" lanes on one "rank 0 proxy" track. */
static const char *const TIMELINE_PY =
    "import json,sys,re,collections\n"
    "d=json.load(open(sys.argv[1]))\n"
    "n=[e['args']['name'] for e in d['traceEvents'] if e['ph']=='M' and e['name']=='thread_name']\n"
    "print('tracks',len(n))\n"
    "print('unranked',sum(1 for x in n if not re.match(r'rank \\d+ ',x)))\n"
    "print('overlapping',sum('overlapping' in x for x in n))\n"
    "print('proxy_untyped',sum(1 for x in n if ' proxy' in x and not re.search(r' proxy (send|recv) ch \\d+',x)))\n"
    "print('proxy_channel_tracks',sum(1 for x in n if re.search(r' proxy (send|recv) ch \\d+, pid \\d+$',x)))\n"
    "pxn=[e for e in d['traceEvents'] if e['ph']=='X' and '(PXN' in e['name']]\n"
    "print('pxn_slices',len(pxn))\n"
    "print('pxn_unranked',sum(1 for e in pxn if e['args']['rank']<0))\n";

static void test_job_timeline_readable(void **state) {
  (void)state;
  char dir[160], json[160];
  snprintf(dir, sizeof dir, "%s/traces-2x4", cli_tmpdir());
  snprintf(json, sizeof json, "%s/job-2x4.json", cli_tmpdir());
  struct cli_result r;
  const char *a[] = {"export", "--format", "job", "-o", json, dir, NULL};
  assert_int_equal(cli_run(&r, a), 0);
  if (r.status) fail_msg("export --format job: %s", r.err);
  char rep[1024];
  assert_int_equal(cli_python(TIMELINE_PY, json, rep, sizeof rep), 0);
  printf("%s", rep);
  assert_true(figure(rep, "tracks") > 50);
  assert_int_equal(figure(rep, "unranked"), 0);
  assert_int_equal(figure(rep, "overlapping"), 0);
  assert_int_equal(figure(rep, "proxy_untyped"), 0);
  assert_true(figure(rep, "proxy_channel_tracks") >= 8); /* 8 ranks, at least one channel track each */
  assert_int_equal(figure(rep, "pxn_unranked"), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_demo_workload),
      cmocka_unit_test(test_all_2x4),
      cmocka_unit_test(test_selection),
      cmocka_unit_test(test_job_timeline_readable),
  };
  return cmocka_run_group_tests(tests, NULL, teardown);
}
