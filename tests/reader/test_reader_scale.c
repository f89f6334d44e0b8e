/* Scale: a trace of many events (default 300k; LENS_READER_SCALE_EVENTS=N for
 * more) loads with every parent resolved; prints the load rate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <time.h>

#include "reader_test_util.h"
#include "trace_builder.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_scale(void **state) {
  (void)state;
  const char *env = getenv("LENS_READER_SCALE_EVENTS");
  size_t target = env ? strtoull(env, NULL, 10) : 300000;
  size_t ops = target / 4 ? target / 4 : 1; /* Coll + ProxyOp + 2 steps each */
  char path[128], err[256];
  struct tb *t = tb_open(rt_path(path, sizeof path, "big.lens"), LENS_PRODUCER_TEST);
  tb_session(t, 0, 1, "h", 6);
  tb_comm(t, 0xC, 1, 0, 2, 1, 0, "w");
  tb_thread(t, 1, 2, LENS_ROLE_APP, "app", -1, UINT32_MAX);
  tb_thread(t, 2, 3, LENS_ROLE_PROXY, "proxy", 0, 0);
  struct lens_p_proxy_op po = {.pid = 1, .n_steps = 2};
  double t0 = now_s();
  for (size_t i = 0; i < ops; i += 4096) {
    size_t end = i + 4096 < ops ? i + 4096 : ops;
    tb_events_begin(t, 1);
    for (size_t k = i; k < end; k++) {
      uint64_t c = LENS_ID_MAKE(LENS_T_COLL, 1, k + 1);
      tb_start(t, LENS_T_COLL, c, 0, 0xC, 1000 * k, 0, 0, NULL, 0);
      tb_stop(t, c, 1000 * k + 10);
    }
    tb_events_begin(t, 2);
    for (size_t k = i; k < end; k++) {
      uint64_t c = LENS_ID_MAKE(LENS_T_COLL, 1, k + 1), o = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 3 * k + 1);
      tb_start(t, LENS_T_PROXY_OP, o, c, 0xC, 1000 * k + 5, 0, 0, &po, sizeof po);
      for (int s = 0; s < 2; s++) {
        uint64_t st = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 3 * k + 2 + s);
        struct lens_p_proxy_step ps = {.step = s};
        tb_start(t, LENS_T_PROXY_STEP, st, o, 0xC, 1000 * k + 6 + s, 0, 0, &ps, sizeof ps);
        tb_state(t, st, 8, 1000 * k + 7 + s, 0, 1);
        tb_stop(t, st, 1000 * k + 8 + s);
      }
      tb_stop(t, o, 1000 * k + 20);
    }
    tb_flush(t);
  }
  tb_close(t);
  double t1 = now_s();
  struct lens_model *m = rt_load1(path, err, sizeof err);
  double t2 = now_s();
  assert_non_null(m);
  assert_int_equal(m->n_events, ops * 4);
  assert_int_equal(m->n_states, ops * 2);
  size_t unresolved = 0;
  for (size_t i = 0; i < m->n_events; i++) unresolved += m->events[i].parent_raw && m->events[i].parent < 0;
  assert_int_equal(unresolved, 0);
  int src;
  assert_int_equal(lens_event_completion(m, &m->events[0], &src), 20);
  printf("scale: %zu events written in %.2f s, loaded in %.3f s (%.1f M events/s)\n", m->n_events, t1 - t0, t2 - t1,
         m->n_events / (t2 - t1) / 1e6);
  lens_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_scale)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rt_cleanup();
  return rc;
}
