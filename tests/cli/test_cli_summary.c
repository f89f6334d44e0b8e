/* `nccl-lens summary` numbers for the sample trace, whose bytes and times are
 * known: 1 MiB AllReduce completing 1 ms after its Coll started, 30 ns after
 * its kernel's launch (NCCL starts Coll after the launch; completion counts
 * from the launch): 1000030 ns -> 1.048545 GB/s;
 * enqueue = Coll stop (200) - CollApi start (110) = 90 ns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "sample_trace.h"
#include "trace_builder.h"

static char sample[128], out_json[128];

static int setup(void **state) {
  (void)state;
  snprintf(sample, sizeof sample, "%s/sample.lens", cli_tmpdir());
  snprintf(out_json, sizeof out_json, "%s/summary.json", cli_tmpdir());
  sample_trace_write(sample);
  return 0;
}
static int teardown(void **state) {
  (void)state;
  cli_cleanup();
  return 0;
}

static const char *ROW_PY =
    "import json,sys\n"
    "d=json.load(open(sys.argv[1]))\n"
    "c=d['communicators'][0]\n"
    "r=[o for o in c['ops'] if o['func']=='AllReduce'][0]\n"
    "print('name', c['name'], 'nranks', c['nranks'])\n"
    "print('count', r['count'], 'bytes', r['bytes'], 'bucket', r['size_bucket'])\n"
    "print('algbw %.6f' % r['algbw_gbps'])\n"
    "print('enqueue', r['enqueue']['avg_ns'], 'completion', r['completion']['avg_ns'])\n"
    "print('gpu_channel', r['gpu_channel']['sum_ns'], 'proxy', r['proxy']['ops'], r['proxy']['steps'], "
    "r['proxy']['bytes'])\n"
    "p=d['proxy_threads'][0]\n"
    "print('proxy_thread', p['tid'], p['ops'], p['steps'], p['bytes'], p['sleep_ns'], p['active_ns'])\n"
    "x=d['drops']\n"
    "print('drops', x['processes'][0]['ring_full'], x['processes'][0]['blob_queue_full'], x['orphan_stops'], "
    "x['truncated_bytes'])\n";

static void test_summary_json_numbers(void **state) {
  (void)state;
  struct cli_result r;
  const char *args[] = {"summary", "--json", sample, "-o", out_json, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  char rep[4096];
  assert_int_equal(cli_python(ROW_PY, out_json, rep, sizeof rep), 0);
  assert_non_null(strstr(rep, "name world nranks 4"));
  assert_non_null(strstr(rep, "count 1 bytes 1048576 bucket 1-2 MiB"));
  assert_non_null(strstr(rep, "algbw 1.048545"));
  assert_non_null(strstr(rep, "enqueue 90 completion 1000030"));
  /* channel GPU time: the pTimer difference (5000 ns) or the mapped one, which preserves it */
  assert_non_null(strstr(rep, "gpu_channel 5000 proxy 1 1 4096"));
  /* Sleep from 1000200 to the ProxyCtrl stop 1000300; the Active level from 95 until the Sleep
   * cuts it at 1000200 (asleep is not active: the shares partition the thread's time) */
  assert_non_null(strstr(rep, "proxy_thread 12 1 1 4096 100 1000105"));
  assert_non_null(strstr(rep, "drops 3 9 0 0"));
}

static void test_summary_text(void **state) {
  (void)state;
  struct cli_result r;
  const char *args[] = {"summary", sample, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "communicator world"));
  const char *row = strstr(r.out, "AllReduce");
  assert_non_null(row);
  assert_non_null(strstr(row, " 1.05\n")); /* GB/s (the column head), 3 significant digits */
  assert_non_null(strstr(r.out, "algbw GB/s"));
  assert_non_null(strstr(row, "1000.030/1000.030"));
  assert_non_null(strstr(r.out, "all 1 files intact"));
}

/* Two ops in the same row: bandwidth is total bytes over total completion time. */
static void test_summary_aggregates(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/two.lens", cli_tmpdir());
  struct tb *t = tb_open(path, LENS_PRODUCER_PLUGIN);
  tb_session(t, 0, 1, "h", 6);
  tb_comm(t, 1, 5, 0, 2, 1, 0, "w");
  tb_thread(t, 1, 2, LENS_ROLE_APP | LENS_ROLE_PROXY, "t", 0, 0);
  tb_string(t, 1, "AllGather");
  tb_string(t, 2, "ncclInt8");
  struct lens_p_proxy_op po = {.pid = 1};
  tb_events_begin(t, 1);
  for (int i = 0; i < 2; i++) {
    uint64_t c = LENS_ID_MAKE(LENS_T_COLL, 1, 10 + i), o = LENS_ID_MAKE(LENS_T_PROXY_OP, 1, 20 + i);
    struct lens_p_coll pc = {.func = 1, .datatype = 2, .count = i ? 3000000 : 2000000};
    uint64_t t0 = 1000000u * (uint64_t)(i + 1);
    tb_start(t, LENS_T_COLL, c, 0, 1, t0, 0, 0, &pc, sizeof pc);
    tb_stop(t, c, t0 + 100);
    tb_start(t, LENS_T_PROXY_OP, o, c, 1, t0 + 10, 0, 0, &po, sizeof po);
    tb_stop(t, o, t0 + (i ? 3000 : 2000)); /* 2 MB in 2 us, 3 MB in 3 us: 1000 GB/s */
  }
  tb_close(t);
  struct cli_result r;
  const char *args[] = {"summary", "--json", path, "-o", out_json, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  char rep[4096];
  assert_int_equal(cli_python("import json,sys\nd=json.load(open(sys.argv[1]))\n"
                              "r=d['communicators'][0]['ops']\n"
                              "print(len(r), r[0]['count'], r[0]['bytes'], '%.3f' % r[0]['algbw_gbps'], "
                              "r[0]['completion']['max_ns'], r[0]['enqueue']['avg_ns'], r[0]['size_bucket'])\n",
                              out_json, rep, sizeof rep),
                   0);
  /* both are 2^20..2^22 bytes: 2 MB -> bucket 20 (1-2 MiB), 3 MB -> bucket 21 (2-4 MiB): two rows */
  assert_int_equal(atoi(rep), 2);
  assert_non_null(strstr(rep, " 1 2000000 1000.000 2000 100 1-2 MiB"));
}

/* A job of 4 hosts (lens-gen-job: 16 ranks, one world communicator, one
 * AllReduce row), read host group by host group and merged: the numbers of
 * the generator's truth, the communicator's ranks from every host joined,
 * the job view's headline; diff of the job against itself: no change. */
static void test_summary_many_hosts(void **state) {
  (void)state;
  char dir[256], cmd[768];
  snprintf(dir, sizeof dir, "%s/gj", cli_tmpdir());
  snprintf(cmd, sizeof cmd, "%s/bin/lens-gen-job -o %s --ranks 16 --hosts 4 --events 40000 >/dev/null 2>&1",
           LENS_BUILD_DIR, dir);
  assert_int_equal(system(cmd), 0);
  struct cli_result r;
  const char *args[] = {"summary", "--json", dir, "-o", out_json, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  char truth[300], rep[4096];
  snprintf(truth, sizeof truth, "%s/truth.json", dir);
  char py[1024];
  snprintf(py, sizeof py,
           "import json,sys\nd=json.load(open(sys.argv[1]))\nt=json.load(open('%s'))\n"
           "c=d['communicators']\nn=sum(o['count'] for o in c[0]['ops'])\n"
           "print('events', d['events']==t['events'], 'comms', len(c), 'seen', c[0]['ranks_seen']==t['ranks'],"
           " 'nranks', c[0]['nranks']==t['ranks'], 'ops', n==t['instances']*t['ranks'],"
           " 'procs', d['processes']==t['ranks'], 'files', len(d['files'])==t['ranks'],"
           " 'proxies', len(d['proxy_threads'])>0, 'hosts', len(d['hosts'])==t['hosts'])\n",
           truth);
  assert_int_equal(cli_python(py, out_json, rep, sizeof rep), 0);
  assert_string_equal(rep, "events True comms 1 seen True nranks True ops True procs True files True proxies True "
                           "hosts True\n");
  const char *text[] = {"summary", dir, NULL};
  assert_int_equal(cli_run(&r, text), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "nccl-lens summary: the job")); /* the job view leads: 16 ranks loaded */
  assert_non_null(strstr(r.out, "(id 0x5ca1ab1e00000001, 16 ranks, 16 seen)"));
  const char *d[] = {"diff", dir, dir, NULL};
  assert_int_equal(cli_run(&r, d), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "no change"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_summary_json_numbers),
      cmocka_unit_test(test_summary_text),
      cmocka_unit_test(test_summary_aggregates),
      cmocka_unit_test(test_summary_many_hosts),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
