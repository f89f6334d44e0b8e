/* Numbers people read in summary and report (issue 9, "other wrong or
 * unclear numbers"), on a hand-built trace whose values are known:
 *  - algbw in GB/s to 3 significant digits (0.00102, not 0.001), from the job
 *    view's execution; "-" when it decomposed no operation of the row (one
 *    rank of two recorded), never bytes over a completion time;
 *  - the header counts communicators, not the ranks' inits;
 *  - the straggler hint's operation count is the row's when every op has a
 *    completion time, and says how many of the row's have one otherwise;
 *  - a rank late because one thread launches several ranks one after the
 *    other is called launch order, not compute imbalance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "trace_builder.h"

static char trace[128];

/* One process, two ranks of communicator 5. On rank 0: 22 AllReduces of
 * 1 KiB, 20 of which complete (a ProxyOp stops) 1 ms after their start but
 * one at 100 ms, and 2 never do; 3 AllGathers that never complete. */
static void write_trace(const char *path) {
  struct tb *t = tb_open(path, LENS_PRODUCER_PLUGIN);
  tb_session(t, 0, 1, "h", 6);
  tb_comm(t, 1, 5, 0, 2, 1, 0, "world");
  tb_comm(t, 2, 5, 1, 2, 1, 1, "world");
  tb_thread(t, 1, 2, LENS_ROLE_APP | LENS_ROLE_PROXY, "t", 0, 0);
  tb_string(t, 1, "AllReduce");
  tb_string(t, 2, "ncclInt8");
  tb_string(t, 3, "AllGather");
  struct lens_p_proxy_op po = {.pid = 1};
  tb_events_begin(t, 1);
  uint64_t t0 = 1000000;
  for (int i = 0; i < 25; i++, t0 += 200000000) {
    uint64_t c = LENS_ID_MAKE(LENS_T_COLL, 1, 10 + i), o = LENS_ID_MAKE(LENS_T_PROXY_OP, 1, 100 + i);
    struct lens_p_coll pc = {.func = i < 22 ? 1 : 3, .datatype = 2, .count = 1024, .seq = (uint64_t)i};
    tb_start(t, LENS_T_COLL, c, 0, 1, t0, 0, 0, &pc, sizeof pc);
    tb_stop(t, c, t0 + 100);
    if (i >= 20) continue; /* no completion */
    tb_start(t, LENS_T_PROXY_OP, o, c, 1, t0 + 10, 0, 0, &po, sizeof po);
    tb_stop(t, o, t0 + (i == 7 ? 100000000 : 1000000));
  }
  tb_close(t);
}

static int setup(void **state) {
  (void)state;
  snprintf(trace, sizeof trace, "%s/numbers.lens", cli_tmpdir());
  write_trace(trace);
  return 0;
}
static int teardown(void **state) {
  (void)state;
  cli_cleanup();
  return 0;
}

static const char *row_of(const char *out, const char *func) {
  const char *r = strstr(out, func);
  while (r && r[-1] != ' ') r = strstr(r + 1, func);
  return r;
}

static void test_summary_numbers(void **state) {
  (void)state;
  static struct cli_result r;
  const char *args[] = {"summary", trace, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  /* Only rank 0 recorded: the job view decomposes nothing, so no algbw; it
   * was 20 KiB over 119 ms of completion (0.000172), waits included. */
  const char *ar = row_of(r.out, "AllReduce");
  assert_non_null(ar);
  const char *eol = strchr(ar, '\n');
  char line[512];
  snprintf(line, sizeof line, "%.*s", (int)(eol - ar), ar);
  assert_non_null(strstr(line, "5950.000/100000.000")); /* the completion stays: a latency, wait included */
  assert_true(strlen(line) > 2 && !strcmp(line + strlen(line) - 2, " -"));
  assert_null(strstr(line, "0.000172"));
  /* no AllGather completed: no bandwidth to state */
  const char *ag = row_of(r.out, "AllGather");
  assert_non_null(ag);
  eol = strchr(ag, '\n');
  snprintf(line, sizeof line, "%.*s", (int)(eol - ag), ag);
  assert_non_null(strstr(line, "       - ")); /* the completion and algbw columns */
  assert_null(strstr(line, " 0.000 "));
  /* two inits of one communicator */
  assert_non_null(strstr(r.out, "1 communicator (2 rank inits),"));
}

/* Both ranks of a 1 KiB collective (count 1024 of ncclInt8 per rank, as
 * NCCL reports AllGather: its send count); rank 1 starts 1 ms after rank 0
 * and both end 1 ms after rank 1 started: execution 1 ms. */
static void write_small(const char *path, const char *func) {
  struct tb *t = tb_open(path, LENS_PRODUCER_PLUGIN);
  tb_session(t, 0, 1, "h", 6);
  tb_comm(t, 1, 5, 0, 2, 1, 0, "world");
  tb_comm(t, 2, 5, 1, 2, 1, 1, "world");
  tb_thread(t, 1, 2, LENS_ROLE_APP | LENS_ROLE_PROXY, "t0", 0, 0);
  tb_thread(t, 2, 3, LENS_ROLE_APP | LENS_ROLE_PROXY, "t1", 1, 1);
  tb_string(t, 1, func);
  tb_string(t, 2, "ncclInt8");
  struct lens_p_proxy_op po = {.pid = 1};
  for (int rank = 0; rank < 2; rank++) {
    tb_events_begin(t, (uint32_t)rank + 1);
    uint64_t c = LENS_ID_MAKE(LENS_T_COLL, 1, 10 + rank), o = LENS_ID_MAKE(LENS_T_PROXY_OP, 1, 20 + rank);
    struct lens_p_coll pc = {.func = 1, .datatype = 2, .count = 1024, .seq = 0};
    uint64_t start = 1000000 + (rank ? 1000000 : 0);
    tb_start(t, LENS_T_COLL, c, 0, (uint64_t)rank + 1, start, rank, 0, &pc, sizeof pc);
    tb_stop(t, c, start + 100);
    tb_start(t, LENS_T_PROXY_OP, o, c, (uint64_t)rank + 1, start, rank, 0, &po, sizeof po);
    tb_stop(t, o, 3000000);
    tb_flush(t);
  }
  tb_close(t);
}

/* The last column of summary's per-op row of func: its algbw. */
static void summary_algbw(const char *path, const char *func, char *out, size_t len) {
  static struct cli_result r;
  const char *args[] = {"summary", path, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  const char *head = strstr(r.out, "algbw GB/s"); /* the per-op table, after the job's */
  assert_non_null(head);
  const char *row = row_of(head, func);
  assert_non_null(row);
  const char *eol = strchr(row, '\n'), *sp = eol;
  while (sp > row && sp[-1] != ' ') sp--;
  snprintf(out, len, "%.*s", (int)(eol - sp), sp);
}

/* 1024 B / 1 ms = 0.001024 GB/s, printed to 3 significant digits (bytes
 * over the ranks' completion times, 2 and 1 ms, gave 0.000683: rank 0's
 * wait as work). */
static void test_small_algbw(void **state) {
  (void)state;
  char path[160], bw[32];
  snprintf(path, sizeof path, "%s/small.lens", cli_tmpdir());
  write_small(path, "AllReduce");
  summary_algbw(path, "AllReduce", bw, sizeof bw);
  assert_string_equal(bw, "0.00102");
}

/* algbw is nccl-tests' size over the execution, in every view: an
 * AllGather's size is what each rank receives, its send count times the
 * ranks (2 KiB here), so 2048 B / 1 ms = 0.00205 GB/s, and the job view's
 * busbw is that times (n-1)/n = 0.00102. Summary divided one rank's send
 * count (0.00102, half the AllGather's algbw, and equal to its busbw). */
static void test_allgather_algbw_is_nccl_tests(void **state) {
  (void)state;
  char path[160], bw[32], rep[256];
  snprintf(path, sizeof path, "%s/small-ag.lens", cli_tmpdir());
  write_small(path, "AllGather");
  summary_algbw(path, "AllGather", bw, sizeof bw);
  assert_string_equal(bw, "0.00205");
  char json[200];
  snprintf(json, sizeof json, "%s/small-ag-job.json", cli_tmpdir());
  struct cli_result r;
  const char *args[] = {"job", "--json", "-o", json, path, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  int py = cli_python("import json,sys\n"
                      "i=json.load(open(sys.argv[1]))['collectives'][0]\n"
                      "print('%.5f %d' % (i['busbw_gbps'], i['bytes']))\n",
                      json, rep, sizeof rep);
  assert_int_equal(py, 0);
  assert_string_equal(rep, "0.00102 2048\n");
}

static void test_straggler_count(void **state) {
  (void)state;
  static struct cli_result r;
  const char *args[] = {"report", trace, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  const char *h = strstr(r.out, "**Stragglers: AllReduce");
  assert_non_null(h);
  assert_non_null(strstr(h, "over the 20 of 22 operations that have a completion time"));
  assert_non_null(strstr(r.out, "| 22 |")); /* the row's count */
}

/* Ranks 0 and 1 of one communicator; rank 0 starts each collective 82 us
 * after rank 1. one_thread: both ranks' Colls come from one thread (a
 * process driving two GPUs launches them one after the other). */
static void write_launch_order(const char *path, int one_thread) {
  struct tb *t = tb_open(path, LENS_PRODUCER_PLUGIN);
  tb_session(t, 0, 1, "h", 6);
  tb_comm(t, 1, 5, 0, 2, 1, 0, "world");
  tb_comm(t, 2, 5, 1, 2, 1, 1, "world");
  tb_thread(t, 1, 21, LENS_ROLE_APP, "app", 0, 0);
  tb_thread(t, 2, 22, LENS_ROLE_APP, "app2", 0, 0);
  tb_string(t, 1, "AllReduce");
  tb_string(t, 2, "ncclFloat32");
  for (int i = 0; i < 10; i++) {
    uint64_t t0 = 1000000 + (uint64_t)i * 10000000;
    for (int rank = 1; rank >= 0; rank--) {
      tb_events_begin(t, one_thread || rank == 1 ? 1 : 2);
      uint64_t c = LENS_ID_MAKE(LENS_T_COLL, 1, 10 + 2 * i + rank), ts = t0 + (rank ? 0 : 82000);
      struct lens_p_coll pc = {.func = 1, .datatype = 2, .count = 1024, .seq = (uint64_t)i};
      tb_start(t, LENS_T_COLL, c, 0, rank ? 2 : 1, ts, 0, 0, &pc, sizeof pc);
      tb_stop(t, c, ts + 1000);
      tb_flush(t);
    }
  }
  tb_close(t);
}

/* One rank's AllReduces whose host enqueue (Coll start -> stop) takes
 * enq_us and whose completion (-> its ProxyOp's stop) comp_us. */
static void write_enqueue(const char *path, uint64_t enq_us, uint64_t comp_us) {
  struct tb *t = tb_open(path, LENS_PRODUCER_PLUGIN);
  tb_session(t, 0, 1, "h", 6);
  tb_comm(t, 1, 5, 0, 1, 1, 0, "world");
  tb_thread(t, 1, 2, LENS_ROLE_APP | LENS_ROLE_PROXY, "t0", 0, 0);
  tb_string(t, 1, "AllReduce");
  tb_string(t, 2, "ncclInt8");
  struct lens_p_proxy_op po = {.pid = 1};
  tb_events_begin(t, 1);
  for (int i = 0; i < 8; i++) {
    uint64_t ts = 1000000 + (uint64_t)i * 10000000;
    uint64_t c = LENS_ID_MAKE(LENS_T_COLL, 1, 10 + i), o = LENS_ID_MAKE(LENS_T_PROXY_OP, 1, 40 + i);
    struct lens_p_coll pc = {.func = 1, .datatype = 2, .count = 1024, .seq = (uint64_t)i};
    tb_start(t, LENS_T_COLL, c, 0, 1, ts, 0, 0, &pc, sizeof pc);
    tb_start(t, LENS_T_PROXY_OP, o, c, 1, ts + 1000, 0, 0, &po, sizeof po);
    tb_stop(t, o, ts + comp_us * 1000);
    tb_stop(t, c, ts + enq_us * 1000);
  }
  tb_flush(t);
  tb_close(t);
}

/* Launch-bound needs the enqueue clearly longer than the completion (1.25x):
 * 0.6 % apart (229.6 against 228.3 us on a 1,024-rank job) was called
 * launch-bound. */
static void test_launch_bound_margin(void **state) {
  (void)state;
  static struct cli_result r;
  char path[160];
  const uint64_t enq[] = {110, 200}, comp = 100;
  for (int k = 0; k < 2; k++) {
    snprintf(path, sizeof path, "%s/enqueue%d.lens", cli_tmpdir(), k);
    write_enqueue(path, enq[k], comp);
    const char *args[] = {"report", path, NULL};
    assert_int_equal(cli_run(&r, args), 0);
    assert_int_equal(r.status, 0);
    const char *h = strstr(r.out, "is launch-bound**");
    if (k == 0) {
      assert_null(h);
    } else {
      assert_non_null(h);
      assert_non_null(strstr(h, "2.0x the"));
    }
  }
}

static void test_late_rank_launch_order(void **state) {
  (void)state;
  static struct cli_result r;
  char path[160];
  for (int one = 0; one < 2; one++) {
    snprintf(path, sizeof path, "%s/order%d.lens", cli_tmpdir(), one);
    write_launch_order(path, one);
    const char *args[] = {"report", path, NULL};
    assert_int_equal(cli_run(&r, args), 0);
    assert_int_equal(r.status, 0);
    const char *h = strstr(r.out, "**Rank 0 of world");
    assert_non_null(h);
    const char *eol = strchr(h, '\n');
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)(eol ? eol - h : 1000), h);
    assert_non_null(strstr(line, "82"));
    if (one) { /* launch order, not imbalance */
      assert_non_null(strstr(line, "one thread (tid 21 of h:1)"));
      assert_non_null(strstr(line, "not compute imbalance"));
    } else {
      assert_non_null(strstr(line, "compute imbalance"));
      assert_null(strstr(line, "one thread"));
    }
  }
}

/* The text tables fit 120 columns unless --wide asks for every column. */
static void test_summary_fits_120(void **state) {
  (void)state;
  static struct cli_result r;
  for (int wide = 0; wide < 2; wide++) {
    const char *args[] = {"summary", trace, wide ? "--wide" : NULL, NULL};
    assert_int_equal(cli_run(&r, args), 0);
    assert_int_equal(r.status, 0);
    size_t longest = 0;
    for (const char *l = r.out; *l;) {
      const char *e = strchr(l, '\n');
      size_t n = e ? (size_t)(e - l) : strlen(l);
      if (n > longest) longest = n;
      l += n + (e != NULL);
    }
    if (!wide) {
      assert_true(longest <= 120);
      assert_null(strstr(r.out, "ch GPU avg us"));
    } else {
      assert_true(longest > 120);
      assert_non_null(strstr(r.out, "proxy ops/steps/bytes"));
      assert_non_null(strstr(r.out, "ch GPU avg us"));
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_summary_numbers),
      cmocka_unit_test(test_small_algbw),
      cmocka_unit_test(test_allgather_algbw_is_nccl_tests),
      cmocka_unit_test(test_straggler_count),
      cmocka_unit_test(test_late_rank_launch_order),
      cmocka_unit_test(test_launch_bound_margin),
      cmocka_unit_test(test_summary_fits_120),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
