/* nccl-lens job on torch.profiler (Kineto) traces alone, against the
 * replay's ground truth (docs/kineto-import.md): `replay --kineto DIR`
 * writes each simulated rank's Kineto file from the driver's own record;
 * `nccl-lens job --json DIR` reads only those. For job-none, job-late-app,
 * job-slow-launch and job-gpu-busy on 2 processes ("hosts") x 2 ranks:
 * every instance matched on every rank by process group and Seq, the
 * execution within 1 % or 2 us and every wait within 2 us of the truth, the
 * injected straggler named with the cause that really made it late in
 * >= 99 % of the instances where it was last (>= 90 % on a loaded machine),
 * no straggler named where none was; and the hosts' wall clocks (node 1's
 * written 1.5 ms off) placed by the matched kernels' ends within their
 * bound of the truth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "job_truth.h"
#include "kineto_job.h"
#include "mini_json.h"

static uint64_t pg_of_set(int set) {
  char name[16];
  snprintf(name, sizeof name, "%d", set); /* the replay names process group s "s", as PyTorch numbers them */
  return lens_kineto_pg_comm_id(name);
}
/* The 2023 layout has no process group names: the importer keys by stream (13 + set in the replay). */
static uint64_t stream_of_set(int set) {
  char name[32];
  snprintf(name, sizeof name, "stream %d", 13 + set);
  return lens_kineto_pg_comm_id(name);
}
static int layout_2023; /* run(): --kineto-layout 2023 */

/* The job view's host offsets against the truth: rank r's file is on node
 * r / rpn, whose wall clock was written node x 1.5 ms off; every placed
 * host's offset (job - its clock) is minus that, less the reference's. */
static void check_hosts(const char *job_json, int rpn) {
  struct mj *j = mj_parse_file(job_json);
  assert_non_null(j);
  const struct mj *hosts = mj_get(j, "hosts");
  assert_non_null(hosts);
  int64_t ref_err = -1;
  for (size_t i = 0; i < hosts->n; i++) {
    const struct mj *h = mj_at(hosts, i);
    if (strcmp(mj_str(h, "source"), "reference")) continue;
    ref_err = (atoi(mj_str(h, "host") + strlen("kineto-rank")) / rpn) * 1500000LL;
  }
  assert_true(ref_err >= 0);
  size_t placed = 0;
  for (size_t i = 0; i < hosts->n; i++) {
    const struct mj *h = mj_at(hosts, i);
    int rank = atoi(mj_str(h, "host") + strlen("kineto-rank"));
    int64_t want = ref_err - (rank / rpn) * 1500000LL;
    int64_t got = mj_int(h, "offset_ns", INT64_MIN), bound = mj_int(h, "bound_ns", -1);
    fprintf(stderr, "  %s: offset %lld ns (truth %lld), bound %lld ns, %s\n", mj_str(h, "host"), (long long)got,
            (long long)want, (long long)bound, mj_str(h, "source"));
    assert_true(bound >= 0);
    assert_true(llabs(got - want) <= bound);
    if (!strcmp(mj_str(h, "source"), "sync points") || !strcmp(mj_str(h, "source"), "reference")) placed++;
  }
  assert_int_equal(placed, hosts->n); /* every host placed by the kernels' ends, not the wall clock alone */
  mj_free(j);
}

static void run(const char *sc, int iters, struct job_check *c) {
  char dir[256], kin[300], extra[400], tp[300], jp[400];
  lens_test_tmpdir(dir, sizeof dir, "kineto");
  snprintf(kin, sizeof kin, "%s/kineto", dir);
  snprintf(extra, sizeof extra, "--kineto %s%s", kin, layout_2023 ? " --kineto-layout 2023" : "");
  /* 20 ms late: above a loaded machine's scheduling noise (as test_job_replay) */
  assert_int_equal(job_run_replay_with(dir, sc, 2, 2, iters, 20000, extra), 0);
  snprintf(tp, sizeof tp, "%s/truth.json", dir);
  job_truth_comm_of_set = layout_2023 ? stream_of_set : pg_of_set;
  job_truth_host_clock_spans = 1; /* Kineto's spans are on the host clock (CUPTI-mapped) */
  assert_int_equal(job_check_dir(kin, tp, NULL, c), 0);
  fprintf(stderr, "%s: %zu instances, %zu matched, exec ok %zu, waits ok %zu, last=injected %zu named %zu "
                  "(as injected %zu, unknown %zu), quiet %zu named %zu, top straggler %d\n",
          sc, c->instances, c->matched, c->exec_ok, c->wait_ok, c->truth_last_x, c->named_right, c->injected_named,
          c->undecided, c->quiet, c->quiet_named, c->top_straggler);
  assert_true(c->instances >= (size_t)(2 * iters));
  assert_int_equal(c->matched, c->instances);
  assert_int_equal(c->exec_ok, c->instances);
  assert_int_equal(c->wait_ok, c->instances);
  assert_int_equal(c->quiet_named, 0); /* no straggler named where none was */
  snprintf(jp, sizeof jp, "%s/job.json", kin);
  struct mj *j = mj_parse_file(jp);
  assert_non_null(j);
  const struct mj *k = mj_get(j, "kineto");
  assert_non_null(k);
  assert_int_equal(mj_int(k, "files", 0), 4);
  /* 2024: every kernel carried Seq; 2023: none did, all matched by order, and no rank's count differs */
  assert_int_equal(mj_int(k, "by_order", -1), layout_2023 ? mj_int(k, "kernels", -2) : 0);
  assert_int_equal(mj_int(k, "uneven_comms", -1), 0);
  assert_int_equal(mj_int(k, "no_launch", -1), 0);
  assert_int_equal(mj_int(k, "no_api", -1), 0);
  mj_free(j);
  check_hosts(jp, 2);
  lens_test_rmtree(dir);
}

static void arrival_cause(const char *sc) {
  struct job_check c;
  int quiet = job_machine_quiet();
  run(sc, quiet ? 100 : 12, &c);
  assert_true(job_injection_held(&c)); /* the simulation injected what it says (job_truth.h) */
  assert_int_equal(c.top_straggler, c.straggler);
  assert_int_equal(c.excess_off, 0);
  assert_int_equal(c.undecided, 0); /* CUPTI-mapped kernel starts decide every case */
  assert_true(c.named_right * 10 >= c.truth_last_x * 9);
  if (quiet && job_machine_quiet()) assert_true(c.named_right * 100 >= c.truth_last_x * 99);
}

static void test_late_app(void **s) { (void)s, arrival_cause("job-late-app"); }
static void test_slow_launch(void **s) { (void)s, arrival_cause("job-slow-launch"); }
static void test_gpu_busy(void **s) { (void)s, arrival_cause("job-gpu-busy"); }
/* The pre-2024 layout (epoch µs, no collective args, no Seq, record_param_comms
 * linked only by enclosing the launch on its thread): matched by stream and
 * order, the same answers within the µs resolution. */
static void test_slow_launch_2023(void **s) {
  (void)s;
  layout_2023 = 1;
  arrival_cause("job-slow-launch");
  layout_2023 = 0;
}
static void test_late_app_2023(void **s) {
  (void)s;
  layout_2023 = 1;
  arrival_cause("job-late-app");
  layout_2023 = 0;
}

static void test_none(void **s) {
  (void)s;
  struct job_check c;
  run("job-none", 12, &c);
  /* run() asserted no straggler named where the true waits were below half
   * the threshold. A loaded machine (or TSan's slower threads) can make every
   * instance's true wait larger than that: then nothing here was quiet, and
   * the claim went untested rather than failed (as test_job_replay). */
  if (job_machine_quiet())
    assert_true(c.quiet > 0);
  else if (!c.quiet)
    fprintf(stderr, "job-none: no instance quiet on this machine; \"none named where none was\" untested here\n");
  assert_int_equal(c.truth_last_x, 0);
}

/* Two ranks' Kineto files of one AllReduce process group, written here: rank
 * 1's window starts one collective later (it misses the first). With Seq
 * the instances pair right; without, order pairs them wrongly and the
 * report says so (uneven_comms). */
static void write_rank(const char *dir, int rank, int first, int n, int with_seq) {
  char path[400];
  snprintf(path, sizeof path, "%s/rank-%d.json", dir, rank);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "{\"schemaVersion\":1,\"distributedInfo\":{\"rank\":%d,\"world_size\":2},"
             "\"baseTimeNanoseconds\":1767189312000000000,\"traceEvents\":[",
          rank);
  for (int i = first; i < first + n; i++) {
    long ts = 1000000 + i * 10000L + (rank ? 300 : 0); /* rank 1 arrives 300 us late: its span is the shortest */
    long dur = rank ? 100 : 400;
    fprintf(f, "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_RING_LL(x)\",\"pid\":%d,"
               "\"tid\":7,\"ts\":%ld,\"dur\":%ld,\"args\":{\"correlation\":%d,\"Process Group Name\":\"0\","
               "\"Group size\":2",
            i == first ? "" : ",", rank, ts, dur + i, i + 1);
    if (with_seq) fprintf(f, ",\"Seq\":%d", i + 1);
    fputs("}}", f);
  }
  fputs("]}", f);
  fclose(f);
}

static void order_case(int with_seq) {
  char dir[256], cmd[1024], jp[400];
  lens_test_tmpdir(dir, sizeof dir, "kineto-order");
  write_rank(dir, 0, 0, 4, with_seq);
  write_rank(dir, 1, 1, 3, with_seq);
  snprintf(jp, sizeof jp, "%s/out.json", dir);
  snprintf(cmd, sizeof cmd, "%s/bin/nccl-lens job --json -o %s %s", LENS_BUILD_DIR, jp, dir);
  assert_int_equal(system(cmd), 0);
  struct mj *j = mj_parse_file(jp);
  assert_non_null(j);
  const struct mj *k = mj_get(j, "kineto");
  assert_int_equal(mj_int(k, "by_seq", -1), with_seq ? 7 : 0);
  assert_int_equal(mj_int(k, "by_order", -1), with_seq ? 0 : 7);
  assert_int_equal(mj_int(k, "uneven_comms", -1), with_seq ? 0 : 1);
  const struct mj *m = mj_get(j, "matched");
  assert_int_equal(mj_int(m, "all", -1), 3);
  assert_int_equal(mj_int(m, "one", -1), 1);
  /* with Seq every pair is one collective: rank 1 last by 300 us, execution its span */
  const struct mj *cs = mj_get(j, "collectives");
  for (size_t i = 0; with_seq && i < cs->n; i++) {
    const struct mj *c = mj_at(cs, i);
    if (mj_int(c, "ranks_seen", 0) != 2) continue;
    int64_t seq = mj_int(c, "seq", -1);
    assert_int_equal(mj_int(c, "last_rank", -1), 1);
    assert_int_equal(mj_int(c, "exec_ns", -1), (100 + (seq - 1)) * 1000);
    assert_int_equal(mj_int(c, "max_wait_ns", -1), 300000);
  }
  mj_free(j);
  lens_test_rmtree(dir);
}

static void test_order_vs_seq(void **s) {
  (void)s;
  order_case(1);
  order_case(0);
}

/* Kineto files beside the plugin's traces (one directory holding both, as
 * when NCCL_LENS_OUTPUT_DIR is torch.profiler's): the Kineto files are left
 * out, said once on stderr, and the answer is the traces' alone. Both read
 * at once counted every collective twice (two communicator ids for one). */
static void test_mixed_dir(void **s) {
  (void)s;
  char dir[256], extra[300], cmd[4096], p[400];
  lens_test_tmpdir(dir, sizeof dir, "kmix");
  snprintf(extra, sizeof extra, "--kineto %s", dir); /* rank-R.json beside the .lens files */
  assert_int_equal(job_run_replay_with(dir, "job-late-app", 2, 2, 6, 20000, extra), 0);
  snprintf(cmd, sizeof cmd,
           "%s/bin/nccl-lens job --json -o %s/mixed.json %s 2>%s/mixed.err && "
           "%s/bin/nccl-lens job --json -o %s/lens.json %s/*.lens 2>/dev/null && "
           "%s/bin/nccl-lens job --json -o %s/kin.json %s/rank-0.json %s/rank-1.json %s/rank-2.json %s/rank-3.json "
           "2>/dev/null",
           LENS_BUILD_DIR, dir, dir, dir, LENS_BUILD_DIR, dir, dir, LENS_BUILD_DIR, dir, dir, dir, dir, dir);
  assert_int_equal(system(cmd), 0);
  int64_t n[3];
  const char *names[3] = {"mixed", "lens", "kin"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s.json", dir, names[i]);
    struct mj *j = mj_parse_file(p);
    assert_non_null(j);
    n[i] = mj_int(mj_get(j, "matched"), "all", -1);
    /* the mixed run read no Kineto file; the Kineto run did */
    assert_true((mj_get(j, "kineto") != NULL) == (i == 2));
    mj_free(j);
  }
  fprintf(stderr, "mixed directory: %lld instances (traces alone %lld, Kineto alone %lld)\n", (long long)n[0],
          (long long)n[1], (long long)n[2]);
  assert_true(n[1] >= 12);
  assert_int_equal(n[0], n[1]);
  assert_int_equal(n[2], n[1]); /* the same collectives either way: twice as many were counted mixed */
  snprintf(p, sizeof p, "%s/mixed.err", dir);
  FILE *f = fopen(p, "r");
  assert_non_null(f);
  char line[512] = "";
  int said = 0;
  while (fgets(line, sizeof line, f)) said += strstr(line, "4 Kineto files left out") != NULL;
  fclose(f);
  assert_int_equal(said, 1);
  lens_test_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_order_vs_seq),
      cmocka_unit_test(test_mixed_dir),
      cmocka_unit_test(test_none),
      cmocka_unit_test(test_late_app),
      cmocka_unit_test(test_slow_launch),
      cmocka_unit_test(test_gpu_busy),
      cmocka_unit_test(test_slow_launch_2023),
      cmocka_unit_test(test_late_app_2023),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
