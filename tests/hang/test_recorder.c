/* NCCL_LENS_MODE=recorder through the replay: a healthy run writes no file;
 * in each hang scenario every process dumps on its own (the watchdog,
 * NCCL_LENS_HANG_TIMEOUT=1) within timeout + 1 s of the hang, and the dump
 * gives `nccl-lens hang` the ground truth's stuck collective and missing
 * rank; `nccl-lens dump --all` makes a process that is not (yet) hung dump. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>

#include "lensread.h"
#include "cli/format.h"
#include "mini_json.h"
#include "../lens_test_tmp.h"
#include "../lens_test_file.h"

static size_t lens_files(const char *dir, char names[][600], size_t cap) {
  size_t n = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *de;
  while ((de = readdir(d)) && n < cap)
    if (strstr(de->d_name, ".lens")) snprintf(names[n++], 600, "%s/%s", dir, de->d_name);
  closedir(d);
  return n;
}

static void test_healthy_writes_nothing(void **s) {
  (void)s;
  char dir[300], names[8][600];
  lens_test_tmpdir(dir, sizeof dir, "rec-ok");
  assert_int_equal(lens_test_sh("NCCL_LENS_MODE=recorder NCCL_LENS_HANG_TIMEOUT=1 NCCL_LENS_REGISTRY_DIR=%s %s/bin/nccl-lens "
                      "replay --quiet --scenario allreduce --nodes 2 --out %s",
                      dir, LENS_BUILD_DIR, dir),
                   0);
  assert_int_equal(lens_files(dir, names, 8), 0);
}

static void check_watchdog(const char *scenario) {
  char dir[300], names[8][600];
  lens_test_tmpdir(dir, sizeof dir, scenario);
  assert_int_equal(lens_test_sh("NCCL_LENS_MODE=recorder NCCL_LENS_HANG_TIMEOUT=1 NCCL_LENS_REGISTRY_DIR=%s %s/bin/nccl-lens "
                      "replay --quiet --scenario %s --nodes 2 --hang-exit-after 3.5 --out %s --truth %s/truth.json",
                      dir, LENS_BUILD_DIR, scenario, dir, dir),
                   0);
  /* hang exits 3 on a stuck collective (docs/hang.md) */
  int st = lens_test_sh("%s/bin/nccl-lens hang --json -o %s/hang.json %s", LENS_BUILD_DIR, dir, dir);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 3);
  size_t n = lens_files(dir, names, 8);
  assert_int_equal(n, 2); /* one dump per process, none at the kill */
  char tp[600];
  snprintf(tp, sizeof tp, "%s/truth.json", dir);
  struct mj *truth = mj_parse_file(tp);
  assert_non_null(truth);
  const struct mj *procs = mj_get(truth, "processes");
  for (size_t i = 0; i < n; i++) {
    const char *p[1] = {names[i]};
    char err[256];
    struct lens_model *m = lens_model_load(p, 1, err, sizeof err, NULL);
    if (!m) fail_msg("%s: %s", names[i], err);
    assert_int_equal(m->n_procs, 1);
    const struct mj *hang = NULL;
    for (size_t k = 0; k < procs->n; k++)
      if (mj_uint(mj_at(procs, k), "pid", 0) == m->procs[0].pid) hang = mj_get(mj_at(procs, k), "hang");
    assert_non_null(hang);
    int dumped = 0;
    for (size_t k = 0; k < m->n_notes; k++) {
      if (!strstr(m->notes[k].text, "hang watchdog")) continue;
      int64_t after = (int64_t)m->notes[k].at_mono_ns - mj_int(hang, "start_ns", 0);
      assert_true(after >= 1000000000LL && after <= 2000000000LL); /* timeout .. timeout + 1 s */
      dumped = 1;
    }
    assert_true(dumped);
    lens_model_free(m);
  }
  snprintf(tp, sizeof tp, "%s/hang.json", dir);
  struct mj *h = mj_parse_file(tp);
  assert_non_null(h);
  const struct mj *th = mj_get(mj_at(procs, 0), "hang"), *cs = mj_get(h, "communicators");
  int found = 0;
  for (size_t i = 0; i < cs->n; i++) {
    const struct mj *c = mj_at(cs, i);
    const char *id = mj_str(c, "comm_id"); /* a string "0x...", as in the other views */
    assert_non_null(id);
    assert_true(id[0] == '0' && id[1] == 'x');
    if (strtoull(id, NULL, 16) != strtoull(mj_str(th, "comm_id"), NULL, 16)) continue;
    found = 1;
    assert_int_equal(mj_int(c, "stuck_seq", -1), mj_int(th, "seq", -2));
    int64_t miss = mj_int(th, "missing_rank", -1);
    assert_int_equal(mj_get(c, "missing_ranks")->n, miss >= 0 ? 1 : 0);
    if (miss >= 0) assert_int_equal(mj_at(mj_get(c, "missing_ranks"), 0)->i, miss);
  }
  assert_true(found);
  /* hang says what the files are: two dumps of the watchdog, nothing evicted */
  const struct mj *dumps = mj_get(h, "recorder_dumps");
  assert_non_null(dumps);
  assert_int_equal(dumps->n, 1);
  assert_non_null(strstr(mj_str(mj_at(dumps, 0), "why"), "hang watchdog"));
  assert_int_equal(mj_int(mj_at(dumps, 0), "dumps", -1), 2);
  assert_int_equal(mj_int(mj_at(dumps, 0), "evicting", -1), 0);
  mj_free(h);
  mj_free(truth);
}

/* The dump NOTE's reading (tools/cli/format.c): the writer's wording, the
 * eviction counts, and anything else refused. */
static void test_dump_note_parse(void **s) {
  (void)s;
  struct lens_dump_note d;
  assert_int_equal(lens_parse_dump_note("nccl-lens recorder dump: hang watchdog: no progress (store: 10 bytes, peak "
                                        "10, bound 64; 25 chunks, 3 evicted with 120 event records)", &d), 1);
  assert_string_equal(d.why, "hang watchdog: no progress");
  assert_int_equal(d.have_counts, 1);
  assert_int_equal(d.evicted_chunks, 3);
  assert_int_equal(d.evicted_records, 120);
  assert_int_equal(lens_parse_dump_note("nccl-lens recorder dump: user request", &d), 1); /* no counts */
  assert_string_equal(d.why, "user request");
  assert_int_equal(d.have_counts, 0);
  assert_int_equal(d.evicted_chunks, 0);
  assert_int_equal(lens_parse_dump_note("nccl-lens: recorder dump (x): /tmp/a.lens", &d), 0);
  assert_int_equal(lens_parse_dump_note(NULL, &d), 0);
  char long_why[600] = "nccl-lens recorder dump: ";
  memset(long_why + strlen(long_why), 'x', 400);
  assert_int_equal(lens_parse_dump_note(long_why, &d), 1);
  assert_int_equal(strlen(d.why), sizeof d.why - 1); /* cut to fit */
  assert_int_equal(lens_parse_dump_note("nccl-lens recorder dump: a (store: junk; 5 chunks, x evicted with y event)", &d), 1);
  assert_int_equal(d.have_counts, 0);
}

static void test_watchdog_missing(void **s) { (void)s; check_watchdog("hang-missing"); }
static void test_watchdog_proxy(void **s) { (void)s; check_watchdog("hang-proxy"); }
static void test_watchdog_graph(void **s) { (void)s; check_watchdog("hang-graph"); }

/* How many of the dump's notes say text; its event count in *events. */
static int notes_saying(const char *path, const char *text, size_t *events) {
  const char *p[1] = {path};
  char err[256];
  struct lens_model *m = lens_model_load(p, 1, err, sizeof err, NULL);
  assert_non_null(m);
  int n = 0;
  for (size_t k = 0; k < m->n_notes; k++) n += strstr(m->notes[k].text, text) != NULL;
  if (events) *events = m->n_events;
  lens_model_free(m);
  return n;
}

/* A user's request: the watchdog's timeout is far away; `dump --all` asks.
 * It asks once both processes have registered (up to 60 s), not after a
 * fixed 1.5 s: on a loaded machine the replay's processes may not have
 * started by then, and `dump --all` finds nobody. The second after that
 * lets them record some work; the hang keeps them alive 5 s after it. */
static void test_dump_request(void **s) {
  (void)s;
  char dir[300], names[8][600];
  lens_test_tmpdir(dir, sizeof dir, "rec-req");
  assert_int_equal(lens_test_sh("export NCCL_LENS_MODE=recorder NCCL_LENS_HANG_TIMEOUT=600 NCCL_LENS_REGISTRY_DIR=%s;"
                      " %s/bin/nccl-lens replay --quiet --scenario hang-missing --nodes 2 --hang-exit-after 5 --out %s &"
                      " i=0; while [ $(ls %s | grep -c '[.]reg$') -lt 2 ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done;"
                      " sleep 1; %s/bin/nccl-lens dump --all --wait-s 10 > %s/dump.txt; rc=$?; wait; exit $rc",
                      dir, LENS_BUILD_DIR, dir, dir, LENS_BUILD_DIR, dir),
                   0);
  size_t n = lens_files(dir, names, 8);
  assert_int_equal(n, 2);
  for (size_t i = 0; i < n; i++) {
    size_t events = 0;
    assert_true(notes_saying(names[i], "user request", &events) >= 1);
    assert_true(events > 0);
  }
}

/* The recorder replaying job-late-app with rank 1 20 ms late, dumps into dir. */
static void replay_late_rank(const char *dir, unsigned slow_ms) {
  assert_int_equal(lens_test_sh("NCCL_LENS_MODE=recorder NCCL_LENS_SLOW_MS=%u NCCL_LENS_REGISTRY_DIR=%s %s/bin/nccl-lens "
                      "replay --quiet --scenario job-late-app --nodes 2 --ranks-per-node 2 --iters 4 --delay-us 20000 "
                      "--out %s",
                      slow_ms, dir, LENS_BUILD_DIR, dir),
                   0);
}

/* A collective slower than NCCL_LENS_SLOW_MS: rank 1 calls 20 ms late, so
 * the others' kernels span > 20 ms on their GPUs; every process dumps once,
 * saying why. A threshold above every span dumps nothing. */
static void test_slow_collective(void **s) {
  (void)s;
  char dir[300], names[8][600];
  lens_test_tmpdir(dir, sizeof dir, "rec-slow");
  replay_late_rank(dir, 10);
  size_t n = lens_files(dir, names, 8);
  assert_int_equal(n, 2);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(notes_saying(names[i], "slow collective", NULL), 1); /* once: at most one such dump a minute */
  char dir2[300];
  lens_test_tmpdir(dir2, sizeof dir2, "rec-notslow");
  replay_late_rank(dir2, 60000);
  assert_int_equal(lens_files(dir2, names, 8), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_healthy_writes_nothing), cmocka_unit_test(test_watchdog_missing),
      cmocka_unit_test(test_watchdog_proxy),          cmocka_unit_test(test_watchdog_graph),
      cmocka_unit_test(test_dump_request),           cmocka_unit_test(test_slow_collective),
      cmocka_unit_test(test_dump_note_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
