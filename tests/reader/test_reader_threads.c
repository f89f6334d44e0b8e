/* Thread slots recycled by the plugin: when a thread exits, the writer drains
 * its ring, frees the slot, and the next thread to claim it is announced by a
 * new THREAD chunk (same slot, another tid) before any of its EVENTS. Every
 * event must stay with the thread that recorded it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "reader_test_util.h"
#include "trace_builder.h"

#define CTX 0xAAull

static void one_event(struct tb *t, uint32_t slot, uint64_t seq, uint64_t ts) {
  uint64_t id = LENS_ID_MAKE(LENS_T_GROUP_API, slot, seq);
  tb_events_begin(t, slot);
  tb_start(t, LENS_T_GROUP_API, id, 0, CTX, ts, 0, 0, NULL, 0);
  tb_stop(t, id, ts + 5);
  tb_flush(t);
}

static const struct lens_thread *thread_of(const struct lens_model *m, uint32_t slot, uint64_t seq) {
  const struct lens_event *e = rt_ev(m, 0, LENS_ID_MAKE(LENS_T_GROUP_API, slot, seq));
  assert_non_null(e);
  assert_true(e->thread >= 0 && (size_t)e->thread < m->n_threads);
  return &m->threads[e->thread];
}

static void test_recycled_slot(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = tb_open(rt_path(path, sizeof path, "recycle.lens"), LENS_PRODUCER_TEST);
  tb_session(t, 0, 100, "nodeA", 6);
  tb_comm(t, CTX, 0x77, 0, 2, 1, 0, "c");
  tb_thread(t, 3, 500, LENS_ROLE_APP, "first", -1, UINT32_MAX);
  tb_thread(t, 4, 700, LENS_ROLE_APP, "other", -1, UINT32_MAX);
  one_event(t, 3, 1, 10);
  one_event(t, 4, 1, 11);
  /* Same owner, roles changed: re-announced, still one thread. */
  tb_thread(t, 3, 500, LENS_ROLE_APP | LENS_ROLE_PROXY, "first", 0, 0);
  one_event(t, 3, 2, 20);
  /* tid 500 exited; its last EVENTS came above. tid 600 takes slot 3. */
  tb_thread(t, 3, 600, LENS_ROLE_APP, "second", -1, UINT32_MAX);
  one_event(t, 3, 3, 30);
  one_event(t, 4, 2, 31);
  /* And again: tid 500's number reused by a third owner. */
  tb_thread(t, 3, 500, LENS_ROLE_APP, "third", -1, UINT32_MAX);
  one_event(t, 3, 4, 40);
  tb_close(t);

  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  assert_int_equal(m->n_threads, 4); /* first, other, second, third */
  const struct lens_thread *a1 = thread_of(m, 3, 1), *a2 = thread_of(m, 3, 2);
  const struct lens_thread *b = thread_of(m, 3, 3), *c = thread_of(m, 3, 4);
  assert_ptr_equal(a1, a2);
  assert_int_equal(a1->tid, 500);
  assert_string_equal(a1->name, "first");
  assert_int_equal(a1->roles, LENS_ROLE_APP | LENS_ROLE_PROXY); /* the latest announcement of that owner */
  assert_int_equal(b->tid, 600);
  assert_string_equal(b->name, "second");
  assert_int_equal(b->slot, 3);
  assert_int_equal(c->tid, 500);
  assert_string_equal(c->name, "third");
  assert_true(a1 != c && b != c && a1 != b);
  /* The other slot is untouched by slot 3's turnover. */
  assert_ptr_equal(thread_of(m, 4, 1), thread_of(m, 4, 2));
  assert_int_equal(thread_of(m, 4, 2)->tid, 700);
  lens_model_free(m);
}

/* STOPs of an exited thread's events may sit in its last EVENTS chunk after
 * the slot changed hands in a later chunk: the join is by id, not thread. */
static void test_recycled_slot_late_stop(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = tb_open(rt_path(path, sizeof path, "recycle2.lens"), LENS_PRODUCER_TEST);
  tb_session(t, 0, 100, "nodeA", 6);
  tb_thread(t, 1, 500, LENS_ROLE_APP, "old", -1, UINT32_MAX);
  uint64_t a = LENS_ID_MAKE(LENS_T_GROUP_API, 1, 1);
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_GROUP_API, a, 0, 0, 10, 0, 0, NULL, 0);
  tb_flush(t);
  tb_events_begin(t, 1);
  tb_stop(t, a, 15);
  tb_flush(t);
  tb_thread(t, 1, 501, LENS_ROLE_APP, "new", -1, UINT32_MAX);
  one_event(t, 1, 2, 20);
  /* Events for a slot never announced: kept together on a placeholder. */
  one_event(t, 9, 1, 25);
  tb_close(t);
  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  const struct lens_event *e = rt_ev(m, 0, a);
  assert_non_null(e);
  assert_int_equal(e->stop_mono_ns, 15);
  assert_int_equal(m->threads[e->thread].tid, 500);
  assert_int_equal(thread_of(m, 1, 2)->tid, 501);
  assert_int_equal(thread_of(m, 9, 1)->tid, 0);
  assert_int_equal(thread_of(m, 9, 1)->slot, 9);
  assert_int_equal(m->n_threads, 3);
  lens_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_recycled_slot), cmocka_unit_test(test_recycled_slot_late_stop)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rt_cleanup();
  return rc;
}
