/* `nccl-lens summary` numbers for the sample trace, whose bytes and times are
 * known: 1 MiB AllReduce completing 1 ms after its Coll started, 30 ns after
 * its kernel's launch (NCCL starts Coll after the launch; completion counts
 * from the launch): 1000030 ns; enqueue = Coll stop (200) - CollApi start
 * (110) = 90 ns. It is one rank of four: the job view decomposes nothing, so
 * there is no algbw ("-"): bytes over a completion time would count the
 * rank's wait for its peers as work. */
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
    "print('algbw %.6f exec_tasks %d' % (r['algbw_gbps'], r['exec_tasks']))\n"
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
  assert_non_null(strstr(rep, "algbw 0.000000 exec_tasks 0")); /* 0 with no task decomposed: unknown */
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
  const char *head = strstr(r.out, "algbw GB/s");
  assert_non_null(head);
  const char *row = strstr(head, "AllReduce");
  assert_non_null(row);
  const char *eol = strchr(row, '\n');
  assert_non_null(eol);
  char line[512];
  snprintf(line, sizeof line, "%.*s", (int)(eol - row), row);
  size_t n = strlen(line);
  assert_true(n > 2 && !strcmp(line + n - 2, " -")); /* nothing decomposed: no algbw (not 1.05 = bytes / completion) */
  assert_non_null(strstr(line, "1000.030/1000.030"));
  assert_non_null(strstr(r.out, "all 1 files intact"));
}

/* Two AllGathers of one row (2.2 MB and 3 MB a rank: nccl-tests sizes 4.4 and 6 MB, 4-8 MiB) on both ranks of a
 * communicator; rank 1 starts each 50 us after rank 0 and both end
 * together, rank 1 after 2 us (the first) and 4 us (the second). The job
 * view's execution is the span of the rank that started last (2 and 4 us);
 * algbw is every task's nccl-tests size (an AllGather's: 2 ranks x its
 * count) over its instance's execution, summed over the row: (2 x 4.4 MB +
 * 2 x 6 MB) / (2 x 2 us + 2 x 4 us) = 1733.333 GB/s, not the mean of the two
 * ops' 2200 and 1500, and not bytes over the completion times, which hold
 * rank 0's 50 us wait. */
static void test_summary_aggregates(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/two.lens", cli_tmpdir());
  struct tb *t = tb_open(path, LENS_PRODUCER_PLUGIN);
  tb_session(t, 0, 1, "h", 6);
  tb_comm(t, 1, 5, 0, 2, 1, 0, "w");
  tb_comm(t, 2, 5, 1, 2, 1, 1, "w");
  tb_thread(t, 1, 2, LENS_ROLE_APP | LENS_ROLE_PROXY, "t0", 0, 0);
  tb_thread(t, 2, 3, LENS_ROLE_APP | LENS_ROLE_PROXY, "t1", 1, 1);
  tb_string(t, 1, "AllGather");
  tb_string(t, 2, "ncclInt8");
  struct lens_p_proxy_op po = {.pid = 1};
  for (int i = 0; i < 2; i++)
    for (int rank = 0; rank < 2; rank++) {
      tb_events_begin(t, (uint32_t)rank + 1);
      uint64_t c = LENS_ID_MAKE(LENS_T_COLL, 1, 10 + 2 * i + rank);
      uint64_t o = LENS_ID_MAKE(LENS_T_PROXY_OP, 1, 20 + 2 * i + rank);
      struct lens_p_coll pc = {.func = 1, .datatype = 2, .count = i ? 3000000 : 2200000, .seq = (uint64_t)i};
      uint64_t t0 = 1000000u * (uint64_t)(i + 1), end = t0 + 50000 + (i ? 4000 : 2000);
      uint64_t start = t0 + (rank ? 50000 : 0);
      tb_start(t, LENS_T_COLL, c, 0, (uint64_t)rank + 1, start, rank, 0, &pc, sizeof pc);
      tb_stop(t, c, start + 100);
      tb_start(t, LENS_T_PROXY_OP, o, c, (uint64_t)rank + 1, start, rank, 0, &po, sizeof po);
      tb_stop(t, o, end);
      tb_flush(t);
    }
  tb_close(t);
  struct cli_result r;
  const char *args[] = {"summary", "--json", path, "-o", out_json, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  char rep[4096];
  assert_int_equal(cli_python("import json,sys\nd=json.load(open(sys.argv[1]))\n"
                              "r=d['communicators'][0]['ops']\n"
                              "print(len(r), r[0]['count'], r[0]['exec_tasks'], r[0]['exec_bytes'], r[0]['exec_ns'], "
                              "'%.3f' % r[0]['algbw_gbps'], r[0]['completion']['max_ns'], r[0]['size_bucket'])\n",
                              out_json, rep, sizeof rep),
                   0);
  printf("%s", rep);
  /* one row of four tasks, each decomposed; completion keeps rank 0's wait (54 us) */
  assert_non_null(strstr(rep, "1 4 4 20800000 12000 1733.333 54000 4-8 MiB"));
  const char *text[] = {"summary", path, NULL};
  assert_int_equal(cli_run(&r, text), 0);
  const char *head = strstr(r.out, "algbw GB/s"); /* the per-op table, after the job's */
  assert_non_null(head);
  const char *row = strstr(head, "AllGather");
  assert_non_null(row);
  const char *eol = strchr(row, '\n');
  assert_non_null(eol);
  printf("%.*s\n", (int)(eol - row), row);
  assert_true(eol - row > 5 && !strncmp(eol - 5, " 1733", 5)); /* an integer from 1000 (lens_fmt_gbps) */
}

/* The replay's job-late-app (2 x 2 ranks), one rank 20 ms late on every
 * AllReduce: the other three wait for it, and their completion times hold
 * that wait. summary's algbw is the job view's (the execution of the rank
 * that started last): per (func, size) its rows give the job row's busbw /
 * the nccl-tests factor (2(n-1)/n = 1.5 for an AllReduce of 4), and are far
 * above bytes / completion time. It printed bytes / completion (0.09 GB/s
 * against the job's 22 GB/s on the golden trace). */
static const char *LATE_PY =
    "import json,sys\n"
    "s=json.load(open(sys.argv[1]))\n"
    "j=json.load(open(sys.argv[1].replace('summary.json','job.json')))\n"
    "ok=0; n=0\n"
    "for c in s['communicators']:\n"
    "  by={}\n"
    "  for o in c['ops']: by.setdefault((o['func'],o['size_log2']),[]).append(o)\n"
    "  for r in j['rows']:\n"
    "    if r['comm_id']!=c['comm_id'] or r['func']!='AllReduce': continue\n"
    "    o=by[(r['func'],r['size_log2'])]\n"
    "    if len(o)!=1: print('rows of', r['size_log2'], len(o)); continue\n"
    "    o=o[0]; alg=o['algbw_gbps']; want=r['busbw_gbps']/1.5\n"
    "    comp=o['completed_bytes']/o['completion']['sum_ns']; tasks=o.get('exec_tasks')\n"
    "    good=r['decomposed']==r['count']>0 and tasks==o['count']==4*r['count'] and abs(alg-want)<=0.01*want "
    "and comp*5<alg\n"
    "    n+=1; ok+=good\n"
    "    print(r['size_log2'], 'algbw %.4g' % alg, 'job busbw/1.5 %.4g' % want, 'bytes/completion %.4g' % comp, "
    "'tasks', tasks, 'of', o['count'], 'ok' if good else 'BAD')\n"
    "print('rows_ok', n>0 and ok==n)\n";

static void test_late_app_algbw_is_execution(void **state) {
  (void)state;
  char dir[300], sj[320], jj[320], rep[4096];
  snprintf(dir, sizeof dir, "%s/late", cli_tmpdir());
  snprintf(sj, sizeof sj, "%s/summary.json", cli_tmpdir());
  snprintf(jj, sizeof jj, "%s/job.json", cli_tmpdir());
  struct cli_result r;
  const char *rp[] = {"replay", "--scenario", "job-late-app", "--nodes", "2", "--ranks-per-node", "2", "--iters", "4",
                      "--delay-us", "20000", "--out", dir, "--quiet", NULL};
  assert_int_equal(cli_run(&r, rp), 0);
  if (r.status) fail_msg("replay: %s", r.err);
  const char *sa[] = {"summary", "--json", dir, "-o", sj, NULL}, *ja[] = {"job", "--json", dir, "-o", jj, NULL};
  assert_int_equal(cli_run(&r, sa), 0);
  assert_int_equal(r.status, 0);
  assert_int_equal(cli_run(&r, ja), 0);
  assert_int_equal(r.status, 0);
  assert_int_equal(cli_python(LATE_PY, sj, rep, sizeof rep), 0);
  printf("%s", rep);
  assert_non_null(strstr(rep, "rows_ok True"));
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
  /* algbw from the execution, its tasks' ranks found across the 4 host groups: every task decomposed, and the
   * job row's busbw over the AllReduce factor of 16 ranks (2 x 15 / 16) */
  char jj[300];
  snprintf(jj, sizeof jj, "%s/gj-job.json", cli_tmpdir());
  const char *ja[] = {"job", "--json", dir, "-o", jj, NULL};
  assert_int_equal(cli_run(&r, ja), 0);
  assert_int_equal(r.status, 0);
  snprintf(py, sizeof py,
           "import json,sys\nd=json.load(open(sys.argv[1]))\nj=json.load(open('%s'))\n"
           "o=d['communicators'][0]['ops']; w=j['rows']\n"
           "print(len(o), len(w), o[0]['exec_tasks']==o[0]['count']==16*w[0]['decomposed'],"
           " abs(o[0]['algbw_gbps']-w[0]['busbw_gbps']/1.875)<1e-6*o[0]['algbw_gbps'])\n",
           jj);
  assert_int_equal(cli_python(py, out_json, rep, sizeof rep), 0);
  assert_string_equal(rep, "1 1 True True\n");
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
      cmocka_unit_test(test_late_app_algbw_is_execution),
      cmocka_unit_test(test_summary_many_hosts),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
