/* `nccl-lens export` on hand-built traces: valid JSON (parsed by python3's
 * json module), the expected number of each kind of Chrome event, exact
 * microsecond timestamps with ns precision, and PXN across two files. */
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
  snprintf(out_json, sizeof out_json, "%s/out.json", cli_tmpdir());
  sample_trace_write(sample);
  return 0;
}
static int teardown(void **state) {
  (void)state;
  cli_cleanup();
  return 0;
}

/* Counts "ph/cat" pairs, checks b/e balance and that every event has ts. */
static const char *COUNT_PY =
    "import json,sys,collections\n"
    "d=json.load(open(sys.argv[1]))\n"
    "c=collections.Counter()\n"
    "for e in d['traceEvents']:\n"
    "  assert 'ph' in e and 'pid' in e\n"
    "  if e['ph']!='M': assert isinstance(e['ts'],(int,float))\n"
    "  c[e['ph']+'/'+e.get('cat',e.get('name'))]+=1\n"
    "for k in sorted(c): print(k, c[k])\n"
    "ops=[e for e in d['traceEvents'] if e['ph']=='b' and e['cat']=='op']\n"
    "print('completion', ' '.join(str(e['args']['completion_mono_ns']) for e in ops))\n"
    "print('procs', len([e for e in d['traceEvents'] if e['name']=='process_name']))\n"
    "print('files', len(d['otherData']['files']))\n";

static int count_of(const char *report, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "%s ", key);
  const char *p = strstr(report, pat);
  if (!p || (p != report && p[-1] != '\n')) return 0;
  return atoi(p + strlen(pat));
}

static void test_export_sample(void **state) {
  (void)state;
  struct cli_result r;
  const char *args[] = {"export", "--format", "chrome", sample, "-o", out_json, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "15 events"));
  char rep[4096];
  assert_int_equal(cli_python(COUNT_PY, out_json, rep, sizeof rep), 0);
  /* metadata: process name+sort; tracks with slices only: the app and proxy
   * threads, proxy state, GPU ch 1 (the third thread has only async
   * NetPlugin slices, so no thread track of its own) */
  assert_int_equal(count_of(rep, "M/process_name") + count_of(rep, "M/process_sort_index"), 2);
  assert_int_equal(count_of(rep, "M/thread_name"), 4);
  assert_int_equal(count_of(rep, "b/op"), 2); /* Coll + P2p in flight */
  assert_int_equal(count_of(rep, "e/op"), 2);
  /* the enqueue part (start -> stop) nested in its operation, same id */
  assert_int_equal(count_of(rep, "b/Coll"), 1);
  assert_int_equal(count_of(rep, "e/P2p"), 1);
  assert_int_equal(count_of(rep, "X/KernelCh"), 1);
  assert_int_equal(count_of(rep, "b/ProxyOp"), 1);
  assert_int_equal(count_of(rep, "b/ProxyStep"), 4); /* the step and its 3 phases */
  assert_int_equal(count_of(rep, "e/ProxyStep"), 4);
  assert_int_equal(count_of(rep, "b/NetPlugin"), 1);
  assert_int_equal(count_of(rep, "X/ProxyCtrl"), 5); /* event + 4 states */
  /* proxy state track: Active level 95..1000300 with Append and Sleep windows inside */
  assert_int_equal(count_of(rep, "X/ProxyState"), 3);
  assert_int_equal(count_of(rep, "X/GroupApi"), 1);
  assert_int_equal(count_of(rep, "X/CollApi"), 1);
  assert_int_equal(count_of(rep, "X/P2pApi"), 1);
  assert_int_equal(count_of(rep, "X/KernelLaunch"), 1);
  assert_int_equal(count_of(rep, "X/Group"), 1);
  assert_int_equal(count_of(rep, "X/CeColl") + count_of(rep, "X/CeSync") + count_of(rep, "X/CeBatch"), 3);
  /* Coll completes with its ProxyOp stop (1000150 ns); P2p has no children: its stop */
  assert_non_null(strstr(rep, "completion 1000150 223"));
  assert_int_equal(count_of(rep, "procs"), 1);
  /* ts in us with ns precision: the Coll starts at 150 ns, lasts 50 ns */
  char raw[65536];
  FILE *f = fopen(out_json, "r");
  size_t n = fread(raw, 1, sizeof raw - 1, f);
  raw[n] = 0;
  fclose(f);
  /* the process's id is synthetic (above PID_MAX_LIMIT); the thread keeps its real tid */
  assert_non_null(strstr(raw, "\"name\":\"AllReduce\",\"cat\":\"Coll\",\"pid\":4194305,\"tid\":11,\"ts\":0.150,"
                              "\"id2\":{\"local\":\"0x6\"}"));
  assert_non_null(strstr(raw, "{\"ph\":\"e\",\"name\":\"AllReduce\",\"cat\":\"Coll\",\"pid\":4194305,\"tid\":11,\"ts\":0.200,"));
  assert_non_null(strstr(raw, "\"name\":\"rank 1 of 4 (world) · nodeA pid 4242\""));
  assert_non_null(strstr(raw, "\"name\":\"r1 proxy · ncclProxy (tid 12)\""));
  assert_non_null(strstr(raw, "\"algo\":\"Ring\""));
  assert_non_null(strstr(raw, "\"payload_hex\":\"0102030405"));
}

static void test_export_escapes_and_stdout(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/odd.lens", cli_tmpdir());
  struct tb *t = tb_open(path, LENS_PRODUCER_PLUGIN);
  tb_session(t, 0, 7, "host\"with\\quotes\n\x01\xff", 6);
  tb_comm(t, 1, 2, 0, 1, 1, 0, "na\"me\t\xc3\xa9");
  tb_thread(t, 1, 3, LENS_ROLE_APP, "th\"r", -1, UINT32_MAX);
  tb_string(t, 1, "All\"Re\\duce\x02");
  struct lens_p_coll c = {.func = 1, .count = 1};
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_COLL, LENS_ID_MAKE(LENS_T_COLL, 1, 1), 0, 1, 5, 0, 0, &c, sizeof c);
  tb_close(t); /* never stopped */
  struct cli_result r;
  const char *args[] = {"export", path, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  FILE *f = fopen(out_json, "w");
  fputs(r.out, f);
  fclose(f);
  char rep[4096];
  assert_int_equal(cli_python(COUNT_PY, out_json, rep, sizeof rep), 0);
  assert_int_equal(count_of(rep, "b/op"), 1);
  assert_non_null(strstr(r.out, "no_stop"));
}

static void test_export_pxn_two_files(void **state) {
  (void)state;
  char a[128], b[128];
  snprintf(a, sizeof a, "%s/a.lens", cli_tmpdir());
  snprintf(b, sizeof b, "%s/b.lens", cli_tmpdir());
  uint64_t coll = LENS_ID_MAKE(LENS_T_COLL, 1, 1), op = LENS_ID_REMOTE | LENS_ID_MAKE(LENS_T_PROXY_OP, 1, 1);
  struct tb *t = tb_open(a, LENS_PRODUCER_PLUGIN);
  tb_session(t, 0, 100, "n", 6);
  tb_comm(t, 1, 9, 0, 2, 1, 0, "w");
  tb_thread(t, 1, 101, LENS_ROLE_APP, "app", -1, UINT32_MAX);
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_COLL, coll, 0, 1, 10, 0, 0, NULL, 0);
  tb_stop(t, coll, 20);
  tb_close(t);
  t = tb_open(b, LENS_PRODUCER_PLUGIN);
  tb_session(t, 0, 200, "n", 6);
  tb_comm(t, 1, 9, 1, 2, 1, 0, "w");
  tb_thread(t, 1, 201, LENS_ROLE_PROXY, "proxy", 1, 0);
  struct lens_p_proxy_op po = {.pid = 100, .channel = 3};
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_PROXY_OP, op, coll, 0xdead, 30, 0, LENS_START_F_REMOTE, &po, sizeof po);
  tb_stop(t, op, 7000);
  tb_close(t);
  struct cli_result r;
  const char *args[] = {"export", a, b, "-o", out_json, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  char rep[4096];
  assert_int_equal(cli_python(COUNT_PY, out_json, rep, sizeof rep), 0);
  assert_int_equal(count_of(rep, "procs"), 2);
  assert_int_equal(count_of(rep, "files"), 2);
  assert_non_null(strstr(rep, "completion 7000")); /* completed by the other process's ProxyOp */
}

/* A probe trace whose samples belong to the sample's proxy thread (tid 12:
 * the builder writes outer tid = tid + 100000, outer pid = pid + 100000). */
static void test_export_starvation(void **state) {
  (void)state;
  char probe[128];
  snprintf(probe, sizeof probe, "%s/probe.lens", cli_tmpdir());
  struct tb *t = tb_open(probe, LENS_PRODUCER_SCHED);
  tb_session(t, 0, 99, "nodeA", 0);
  struct lens_sched_sample s[3] = {
      {.start_mono_ns = 170, .end_mono_ns = 5170, .kind = LENS_SCHED_RUNQ_WAIT, .host_pid = S_PID + 100000,
       .host_tid = 100012, .culprit_pid = 66, .culprit_tid = 67, .culprit_comm = "hog"},
      {.start_mono_ns = 6000, .end_mono_ns = 7000, .kind = LENS_SCHED_PREEMPT, .host_pid = S_PID + 100000,
       .host_tid = 100012},
      {.start_mono_ns = 100, .end_mono_ns = 900, .kind = LENS_SCHED_RUNQ_WAIT, .host_pid = 1, .host_tid = 2}};
  tb_sched(t, s, 3);
  tb_close(t);
  struct cli_result r;
  const char *args[] = {"export", sample, probe, "-o", out_json, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  char rep[4096];
  assert_int_equal(cli_python(COUNT_PY, out_json, rep, sizeof rep), 0);
  assert_int_equal(count_of(rep, "X/sched"), 2); /* the third sample is another thread's */
  assert_int_equal(count_of(rep, "files"), 2);
  const char *sargs[] = {"summary", "--json", sample, probe, NULL};
  assert_int_equal(cli_run(&r, sargs), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "\"starvation\":{"));
  const char *acc = strstr(r.out, "\"accuracy\":{");
  assert_non_null(acc);
  const char *st = strstr(acc, "\"starved\":");
  assert_non_null(st);
  long in_summary = atol(st + strlen("\"starved\":"));
  /* validate flags the same KernelCh starved (it ran no starvation analysis: 0). */
  const char *vargs[] = {"validate", "--json", sample, probe, NULL};
  assert_int_equal(cli_run(&r, vargs), 0);
  st = strstr(r.out, "\"starved\":");
  assert_non_null(st);
  long in_validate = atol(st + strlen("\"starved\":"));
  printf("starved: %ld KernelCh in validate, %ld events in summary\n", in_validate, in_summary);
  assert_true(in_validate > 0);
  assert_true(in_validate <= in_summary);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_export_sample),
      cmocka_unit_test(test_export_escapes_and_stdout),
      cmocka_unit_test(test_export_pxn_two_files),
      cmocka_unit_test(test_export_starvation),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
