/* Map/reduce of the job view (docs/scale.md): `nccl-lens job --partial -o
 * FILE` per trace (or per host), then `nccl-lens job` over the partial files,
 * gives byte for byte the JSON of one run over every trace -- on a replay
 * (job-late-app, 2 processes) and on a small synthetic job (lens-gen-job,
 * 4 hosts), where every injected straggler must also be named with its
 * cause. Partial files mix with traces; a damaged partial is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "job_truth.h"
#include "mini_json.h"
#include "../lens_test_file.h"

/* Partial files carry the job's records, not the hang analysis: its JSON
 * "hang" is null from them, and from traces the traces' answer, here
 * always "nothing stuck" (no scenario of this test hangs): that one value
 * is made null before the comparison. */
static void drop_hang(const char *path) {
  assert_int_equal(lens_test_sh("sed -i 's/\"hang\":{\"stuck\":false,\"stuck_communicators\":0,"
                                "\"communicators\":\\[\\]}/\"hang\":null/' %s", path), 0);
}

static void assert_same_file(const char *a, const char *b) {
  drop_hang(a);
  drop_hang(b);
  size_t la, lb;
  char *x = lens_test_slurp(a, &la), *y = lens_test_slurp(b, &lb);
  assert_non_null(x);
  assert_non_null(y);
  assert_true(la > 100);
  if (la != lb || memcmp(x, y, la)) fprintf(stderr, "differ: %s (%zu bytes) and %s (%zu bytes)\n", a, la, b, lb);
  assert_int_equal(la, lb);
  assert_memory_equal(x, y, la);
  free(x);
  free(y);
}

#define LENS LENS_BUILD_DIR "/bin/nccl-lens"

/* traces in dir/t; partials of the groups named by globs into dir/p; checks
 * single == merged, and single == traces mixed with a partial. */
static void same_answer(const char *dir, const char *const *globs, size_t n) {
  /* --stream: the same map and reduce as a run over traces above 1 GiB */
  assert_int_equal(lens_test_sh("%s job --json --stream -o %s/single.json %s/t", LENS, dir, dir), 0);
  assert_int_equal(lens_test_sh("mkdir -p %s/p", dir), 0);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(lens_test_sh("%s job --partial -o %s/p/part%zu.lensjob %s/t/%s", LENS, dir, i, dir, globs[i]), 0);
  assert_int_equal(lens_test_sh("%s job --json -o %s/merged.json %s/p", LENS, dir, dir), 0);
  char a[512], b[512];
  snprintf(a, sizeof a, "%s/single.json", dir);
  snprintf(b, sizeof b, "%s/merged.json", dir);
  assert_same_file(a, b);
  /* a partial where its traces would be, beside the other traces */
  char fixed[256];
  size_t k = 0;
  for (const char *c = globs[0]; *c && k + 1 < sizeof fixed; c++)
    if (*c != '*') fixed[k++] = *c;
  fixed[k] = 0;
  assert_int_equal(lens_test_sh("%s job --json -o %s/mixed.json %s/p/part0.lensjob $(ls %s/t/*.lens | grep -v -F '%s')", LENS, dir,
                      dir, dir, fixed),
                   0);
  snprintf(b, sizeof b, "%s/mixed.json", dir);
  assert_same_file(a, b);
}

/* dir/name parsed as JSON (NULL if it is not). */
static struct mj *json_in(const char *dir, const char *name) {
  char p[400];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return mj_parse_file(p);
}

static void test_replay(void **s) {
  (void)s;
  char dir[256];
  lens_test_tmpdir(dir, sizeof dir, "jobpart");
  char t[300];
  snprintf(t, sizeof t, "%s/t", dir);
  assert_int_equal(lens_test_sh("mkdir -p %s", t), 0);
  assert_int_equal(job_run_replay(t, "job-late-app", 2, 2, 6, 20000), 0);
  assert_int_equal(lens_test_sh("rm -f %s/truth.json", t), 0);
  /* one partial per process trace */
  assert_int_equal(lens_test_sh("test $(ls %s/*.lens | wc -l) -eq 2", t), 0);
  assert_int_equal(lens_test_sh("cd %s && ls *.lens | head -1 > ../first && ls *.lens | tail -1 > ../second", t), 0);
  char first[256] = "", second[256] = "", p[400];
  size_t l;
  snprintf(p, sizeof p, "%s/first", dir);
  char *x = lens_test_slurp(p, &l);
  assert_non_null(x);
  snprintf(first, sizeof first, "*%s", strtok(x, "\n"));
  free(x);
  snprintf(p, sizeof p, "%s/second", dir);
  x = lens_test_slurp(p, &l);
  assert_non_null(x);
  snprintf(second, sizeof second, "*%s", strtok(x, "\n"));
  free(x);
  const char *globs[] = {first, second};
  same_answer(dir, globs, 2);
  /* a damaged partial is refused, with one line */
  assert_int_equal(lens_test_sh("cp %s/p/part0.lensjob %s/bad.lensjob && printf 'X' | dd of=%s/bad.lensjob bs=1 seek=200 "
                      "conv=notrunc 2>/dev/null",
                      dir, dir, dir),
                   0);
  assert_int_not_equal(lens_test_sh("%s job -o /dev/null %s/bad.lensjob 2>/dev/null", LENS, dir), 0);
  /* and one cut short (read from its mapping: the end of the map, not past it) */
  assert_int_equal(lens_test_sh("head -c 300 %s/p/part0.lensjob > %s/short.lensjob", dir, dir), 0);
  assert_int_not_equal(lens_test_sh("%s job -o /dev/null %s/short.lensjob 2>/dev/null", LENS, dir), 0);
  lens_test_rmtree(dir);
}

static void test_synthetic(void **s) {
  (void)s;
  char dir[256];
  lens_test_tmpdir(dir, sizeof dir, "jobpart");
  assert_int_equal(lens_test_sh("%s/bin/lens-gen-job -o %s/t --ranks 16 --hosts 4 --events 300000 --stragglers 4 --seed 7 "
                      ">/dev/null && mv %s/t/truth.json %s/",
                      LENS_BUILD_DIR, dir, dir, dir),
                   0);
  const char *globs[] = {"*host000*", "*host001*", "*host002*", "*host003*"};
  same_answer(dir, globs, 4);
  /* every injected straggler named last with its cause */
  struct mj *truth = json_in(dir, "truth.json"), *job = json_in(dir, "merged.json");
  assert_non_null(truth);
  assert_non_null(job);
  const struct mj *st = mj_get(truth, "stragglers"), *co = mj_get(job, "collectives");
  assert_non_null(st);
  assert_non_null(co);
  size_t found = 0, n = 0;
  for (const struct mj *x; (x = mj_at(st, n)); n++) {
    int64_t seq = mj_int(x, "seq", -1), rank = mj_int(x, "rank", -2);
    for (size_t i = 0; mj_at(co, i); i++) {
      const struct mj *c = mj_at(co, i);
      if (mj_int(c, "seq", -3) != seq) continue;
      const char *cause = mj_str(c, "cause");
      if (mj_int(c, "last_rank", -4) == rank && cause && !strcmp(cause, "late_app_call")) found++;
    }
  }
  assert_int_equal(n, 4);
  assert_int_equal(found, n);
  /* and no other instance names one */
  size_t named = 0;
  for (size_t i = 0; mj_at(co, i); i++) {
    const char *cause = mj_str(mj_at(co, i), "cause");
    named += cause && strcmp(cause, "none");
  }
  assert_int_equal(named, n);
  mj_free(truth);
  mj_free(job);
  lens_test_rmtree(dir);
}

/* Copy-engine collectives (API v6) are counted by the map and carried in the
 * partial file (section 11), so the streamed and merged runs say what the
 * single model says: a streamed run used to print no CE note (the records
 * had none) and its JSON "ce_collectives": null. */
static void test_copy_engine(void **s) {
  (void)s;
  char dir[256];
  lens_test_tmpdir(dir, sizeof dir, "jobpart");
  assert_int_equal(lens_test_sh("%s replay --scenario ce --api 6 --nodes 2 --iters 5 --out %s/t --quiet >/dev/null", LENS,
                                dir),
                   0);
  assert_int_equal(lens_test_sh("%s job --json -o %s/one.json %s/t", LENS, dir, dir), 0);
  const char *globs[] = {"*"};
  same_answer(dir, globs, 1); /* streamed == merged == mixed, byte for byte */
  struct mj *one = json_in(dir, "one.json"), *merged = json_in(dir, "merged.json");
  assert_non_null(one);
  assert_non_null(merged);
  const struct mj *a = mj_get(one, "ce_collectives"), *b = mj_get(merged, "ce_collectives");
  assert_non_null(a);
  assert_non_null(b);
  fprintf(stderr, "ce collectives: one model %lld, merged %lld\n", (long long)mj_int(a, "count", -1),
          (long long)mj_int(b, "count", -1));
  assert_true(mj_int(a, "count", 0) > 0);
  assert_int_equal(mj_int(a, "count", -1), mj_int(b, "count", -2));
  assert_int_equal(mj_int(a, "host_enqueue_ns", -1), mj_int(b, "host_enqueue_ns", -2));
  /* and the streamed text says it */
  assert_int_equal(lens_test_sh("%s job --stream -o %s/stream.txt %s/t && grep -q 'copy-engine (CE) collectives' "
                                "%s/stream.txt",
                                LENS, dir, dir, dir),
                   0);
  mj_free(one);
  mj_free(merged);
  lens_test_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_replay), cmocka_unit_test(test_synthetic),
                                     cmocka_unit_test(test_copy_engine)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
