/* Numbers people read in summary and report (issue 9, "other wrong or
 * unclear numbers"), on a hand-built trace whose values are known:
 *  - algbw in units that fit (172 kB/s, not 0.000 GB/s), "-" when no
 *    operation of the row completed;
 *  - the header counts communicators, not the ranks' inits;
 *  - the straggler hint's operation count is the row's when every op has a
 *    completion time, and says how many of the row's have one otherwise. */
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
  /* 20 KiB over 119 ms of completion: 172 kB/s */
  const char *ar = row_of(r.out, "AllReduce");
  assert_non_null(ar);
  const char *eol = strchr(ar, '\n');
  char line[512];
  snprintf(line, sizeof line, "%.*s", (int)(eol - ar), ar);
  assert_non_null(strstr(line, "172 kB/s"));
  assert_null(strstr(line, " 0.000 "));
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_summary_numbers),
      cmocka_unit_test(test_straggler_count),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
