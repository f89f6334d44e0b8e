/* Joins the reader does at load time: duplicate and orphan stops, records
 * read before their START's chunk (file order kept), superseded
 * ProxySteps, PXN parents across two process files, several sessions in one
 * file, graph marks, and drops summed over sessions; a parent's first child
 * of a type, with and without the memo a pass keeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "reader_test_util.h"
#include "sample_trace.h"
#include "trace_builder.h"

#define CTX 0xAAull
static const struct lens_p_proxy_op OP_PAYLOAD = {.pid = 100, .peer = 1, .n_steps = 2, .chunk_size = 8, .is_send = 1};

static struct tb *open_proc(const char *name, uint32_t pid, char *path, size_t len) {
  struct tb *t = tb_open(rt_path(path, len, name), LENS_PRODUCER_TEST);
  tb_session(t, 0, pid, "nodeA", 6);
  tb_comm(t, CTX, 0x77, (int)(pid % 10), 2, 1, 0, "c");
  tb_thread(t, 1, pid + 1, LENS_ROLE_APP | LENS_ROLE_PROXY, "t", 0, 0);
  return t;
}

static void test_dup_and_orphan_stops(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = open_proc("dup.lens", 100, path, sizeof path);
  uint64_t a = LENS_ID_MAKE(LENS_T_COLL_API, 1, 1);
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_COLL_API, a, 0, CTX, 10, 0, 0, NULL, 0);
  tb_stop(t, a, 20);
  tb_stop(t, a, 30); /* second stop: stale handle */
  tb_stop(t, LENS_ID_MAKE(LENS_T_COLL, 1, 99), 40);               /* never started */
  tb_state(t, LENS_ID_MAKE(LENS_T_PROXY_STEP, 1, 98), 8, 41, 0, 0); /* never started */
  tb_stop(t, 0, 42);                                               /* NULL NetPlugin handle */
  tb_close(t);
  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  assert_int_equal(m->n_events, 1);
  assert_true(m->events[0].flags & LENS_EVF_DUP_STOP);
  assert_false(m->events[0].flags & LENS_EVF_NO_STOP);
  assert_int_equal(m->events[0].stop_mono_ns, 20);
  assert_int_equal(m->orphan_stops, 2);
  lens_model_free(m);
}

static void test_stop_before_start_chunk_and_no_stop(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = open_proc("order.lens", 100, path, sizeof path);
  tb_thread(t, 2, 555, LENS_ROLE_PROXY, "p", 0, 0);
  uint64_t op = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 1), op2 = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 2);
  tb_events_begin(t, 1);
  tb_stop(t, op, 50); /* its START sits in a later chunk of another thread */
  tb_flush(t);
  tb_events_begin(t, 2);
  tb_start(t, LENS_T_PROXY_OP, op, 0, CTX, 10, 0, 0, &OP_PAYLOAD, sizeof OP_PAYLOAD);
  tb_start(t, LENS_T_PROXY_OP, op2, 0, CTX, 11, 0, LENS_START_F_DROPPED_BEFORE, &OP_PAYLOAD, sizeof OP_PAYLOAD);
  tb_close(t);
  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  assert_int_equal(m->orphan_stops, 0);
  const struct lens_event *a = rt_ev(m, 0, op), *b = rt_ev(m, 0, op2);
  assert_int_equal(a->stop_mono_ns, 50);
  assert_false(a->flags & LENS_EVF_NO_STOP);
  assert_true(b->flags & LENS_EVF_NO_STOP);
  assert_true(b->flags & LENS_EVF_DROPPED_NEAR);
  assert_int_equal(m->threads[a->thread].tid, 555);
  assert_false(m->files[0].clean_end);
  lens_model_free(m);
}

/* Records are applied chunk by chunk (records.c, lens_apply_chunk): those
 * read before their START's chunk wait for the end of the file, and so do
 * the later records of the same id, so an event's states stay in file order
 * and its first STOP in the file is the one kept. */
static void test_records_before_start_keep_file_order(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = open_proc("carry.lens", 100, path, sizeof path);
  tb_thread(t, 2, 555, LENS_ROLE_PROXY, "p", 0, 0);
  uint64_t op = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 1), op2 = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 2);
  tb_events_begin(t, 1);
  tb_state(t, op, 1, 20, 0, 0); /* before its START's chunk */
  tb_stop(t, op, 50);
  tb_stop(t, LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 9), 51); /* never started */
  tb_flush(t);
  tb_events_begin(t, 2);
  tb_start(t, LENS_T_PROXY_OP, op, 0, CTX, 10, 0, 0, &OP_PAYLOAD, sizeof OP_PAYLOAD);
  tb_state(t, op, 2, 30, 0, 0); /* after: must still come second */
  tb_stop(t, op, 60);           /* a second STOP: the first in the file stays */
  tb_start(t, LENS_T_PROXY_OP, op2, 0, CTX, 11, 0, 0, &OP_PAYLOAD, sizeof OP_PAYLOAD);
  tb_flush(t);
  tb_events_begin(t, 1);
  tb_state(t, op, 3, 40, 0, 0);
  tb_state(t, op2, 4, 45, 0, 0);
  tb_stop(t, op2, 70);
  tb_close(t);
  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  assert_int_equal(m->orphan_stops, 1);
  const struct lens_event *a = rt_ev(m, 0, op), *b = rt_ev(m, 0, op2);
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal(a->stop_mono_ns, 50);
  assert_true(a->flags & LENS_EVF_DUP_STOP);
  assert_int_equal(a->n_states, 3);
  for (uint32_t k = 0; k < 3; k++) {
    assert_int_equal(m->states[a->first_state + k].state, k + 1);
    assert_int_equal(m->states[a->first_state + k].ts_mono_ns, 20 + 10 * k);
  }
  assert_int_equal(b->stop_mono_ns, 70);
  assert_false(b->flags & LENS_EVF_DUP_STOP);
  assert_int_equal(b->n_states, 1);
  assert_int_equal(m->states[b->first_state].state, 4);
  lens_model_free(m);
}

static void test_superseded_step(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = open_proc("steps.lens", 100, path, sizeof path);
  uint64_t op = LENS_ID_MAKE(LENS_T_PROXY_OP, 1, 1);
  uint64_t s1 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 1, 2), s2 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 1, 3);
  uint64_t s3 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 1, 4);
  struct lens_p_proxy_step st0 = {.step = 0}, st1 = {.step = 1};
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_PROXY_OP, op, 0, CTX, 10, 0, 0, &OP_PAYLOAD, sizeof OP_PAYLOAD);
  tb_start(t, LENS_T_PROXY_STEP, s1, op, CTX, 20, 0, 0, &st0, sizeof st0);
  tb_start(t, LENS_T_PROXY_STEP, s2, op, CTX, 30, 0, 0, &st0, sizeof st0); /* recv step re-posted */
  tb_start(t, LENS_T_PROXY_STEP, s3, op, CTX, 40, 0, 0, &st1, sizeof st1);
  tb_stop(t, s2, 50);
  tb_stop(t, s3, 60);
  tb_stop(t, op, 70);
  tb_close(t);
  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  assert_true(rt_ev(m, 0, s1)->flags & LENS_EVF_SUPERSEDED);
  assert_false(rt_ev(m, 0, s2)->flags & LENS_EVF_SUPERSEDED);
  assert_false(rt_ev(m, 0, s3)->flags & LENS_EVF_SUPERSEDED);
  lens_model_free(m);
}

/* LENS_LOAD_FOLD_STEPS: no ProxyStep becomes an event; each ProxyOp counts
 * the steps the full model links under it with a stop, and their first and
 * last stop, as the full model's children give them. */
static void test_fold_steps(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = open_proc("fold.lens", 100, path, sizeof path);
  tb_thread(t, 2, 555, LENS_ROLE_PROXY, "p", 0, 0);
  uint64_t op = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 1), op2 = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 2);
  uint64_t step[8], net = LENS_ID_MAKE(LENS_T_NET_PLUGIN, 2, 50);
  for (int i = 0; i < 8; i++) step[i] = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 10 + i);
  struct lens_p_proxy_step st0 = {.step = 0}, st1 = {.step = 1}, st2 = {.step = 2};
  tb_events_begin(t, 1);
  tb_stop(t, step[5], 95); /* its START comes in a later chunk */
  tb_flush(t);
  tb_events_begin(t, 2);
  tb_start(t, LENS_T_PROXY_OP, op, 0, CTX, 10, 0, 0, &OP_PAYLOAD, sizeof OP_PAYLOAD);
  tb_start(t, LENS_T_PROXY_OP, op2, 0, CTX, 11, 0, 0, &OP_PAYLOAD, sizeof OP_PAYLOAD);
  tb_start(t, LENS_T_PROXY_STEP, step[0], op, CTX, 20, 0, 0, &st0, sizeof st0);
  tb_start(t, LENS_T_PROXY_STEP, step[1], op, CTX, 21, 0, 0, &st0, sizeof st0); /* re-posted: both count */
  tb_start(t, LENS_T_PROXY_STEP, step[2], op, CTX, 22, 0, 0, &st1, sizeof st1); /* never stopped */
  tb_start(t, LENS_T_PROXY_STEP, step[3], op, CTX, 23, 0, 0, &st2, sizeof st2); /* stopped twice: first kept */
  tb_start(t, LENS_T_PROXY_STEP, step[4], op2, CTX, 24, 0, 0, &st0, sizeof st0);
  tb_start(t, LENS_T_PROXY_STEP, step[5], op2, CTX, 25, 0, 0, &st1, sizeof st1);
  tb_start(t, LENS_T_PROXY_STEP, step[6], LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 99), CTX, 26, 0, 0, &st0,
           sizeof st0); /* its op was never read */
  tb_start(t, LENS_T_PROXY_STEP, step[7], 0, CTX, 27, 0, 0, &st0, sizeof st0);
  tb_start(t, LENS_T_NET_PLUGIN, net, step[0], CTX, 28, 0, 0, NULL, 0);
  tb_state(t, step[0], 9 /* SendWait */, 29, 0, 0);
  tb_stop(t, step[0], 40);
  tb_stop(t, step[1], 30);
  tb_stop(t, step[3], 80);
  tb_stop(t, step[3], 200);
  tb_stop(t, step[4], 60);
  tb_stop(t, step[6], 61);
  tb_stop(t, step[7], 62);
  tb_stop(t, op, 300);
  tb_stop(t, op2, 301);
  tb_close(t);
  const char *p[1] = {path};
  struct lens_model *full = lens_model_load(p, 1, err, sizeof err, NULL);
  struct lens_model *fold = lens_model_load_ex(p, 1, LENS_LOAD_FOLD_STEPS, err, sizeof err, NULL);
  assert_non_null(full);
  assert_non_null(fold);
  assert_false(full->steps_folded);
  assert_true(fold->steps_folded);
  size_t steps = 0;
  for (size_t i = 0; i < full->n_events; i++) steps += full->events[i].type == LENS_T_PROXY_STEP;
  assert_int_equal(steps, 8);
  assert_int_equal(fold->n_events, full->n_events - steps);
  for (size_t i = 0; i < fold->n_events; i++) assert_int_not_equal(fold->events[i].type, LENS_T_PROXY_STEP);
  assert_int_equal(fold->orphan_stops, full->orphan_stops); /* a folded step's stop is no orphan */
  assert_int_equal(fold->n_states, full->n_states - 1);      /* the step's state is not kept */
  assert_null(rt_ev(fold, 0, step[0]));                      /* a step's id finds nothing */
  const uint64_t ops[2] = {op, op2};
  const uint32_t want_k[2] = {3, 2}; /* the full model's stopped children, by hand */
  for (int k = 0; k < 2; k++) {
    const struct lens_event *a = rt_ev(full, 0, ops[k]), *b = rt_ev(fold, 0, ops[k]);
    assert_non_null(a);
    assert_non_null(b);
    uint64_t lo = UINT64_MAX, hi = 0, n = 0;
    for (int32_t c = a->first_child; c >= 0; c = full->events[c].next_sibling) {
      const struct lens_event *x = &full->events[c];
      if (x->type != LENS_T_PROXY_STEP || !x->stop_mono_ns) continue;
      lo = x->stop_mono_ns < lo ? x->stop_mono_ns : lo;
      hi = x->stop_mono_ns > hi ? x->stop_mono_ns : hi;
      n++;
    }
    assert_int_equal(n, want_k[k]);
    assert_int_equal(b->p.proxy_op.folded_stops, n);
    assert_int_equal(b->p.proxy_op.folded_stop_lo, lo);
    assert_int_equal(b->p.proxy_op.folded_stop_hi, hi);
    assert_int_equal(b->stop_mono_ns, a->stop_mono_ns);
    assert_int_equal(a->p.proxy_op.folded_stops, 0); /* only a folding load fills them */
  }
  /* The NetPlugin under a step: linked in the full model, parentless folded,
   * its flags those of the full model (its parent is not missing). */
  assert_true(rt_ev(full, 0, net)->parent >= 0);
  assert_int_equal(rt_ev(fold, 0, net)->parent, -1);
  assert_false(rt_ev(fold, 0, net)->flags & LENS_EVF_PARENT_MISSING);
  assert_int_equal(rt_ev(fold, 0, net)->flags, rt_ev(full, 0, net)->flags);
  lens_model_free(full);
  lens_model_free(fold);
}

/* Process 100 owns the Coll; process 200 (same host) runs its network proxy
 * op (PXN): ProxyOp REMOTE with pid 100 and parent = 100's Coll id; its step
 * has parent = 200's own ProxyOp id. */
static void write_pxn(char *pa, char *pb, size_t len) {
  uint64_t coll = LENS_ID_MAKE(LENS_T_COLL, 1, 1);
  struct tb *a = open_proc("pxn-a.lens", 100, pa, len);
  tb_events_begin(a, 1);
  tb_start(a, LENS_T_COLL, coll, 0, CTX, 10, 0, 0, NULL, 0);
  tb_stop(a, coll, 20);
  tb_close(a);
  struct tb *b = open_proc("pxn-b.lens", 200, pb, len);
  uint64_t op = LENS_ID_REMOTE | LENS_ID_MAKE(LENS_T_PROXY_OP, 1, 1);
  uint64_t step = LENS_ID_REMOTE | LENS_ID_MAKE(LENS_T_PROXY_STEP, 1, 2);
  uint64_t local_coll = LENS_ID_MAKE(LENS_T_COLL, 1, 3); /* same id value as A's coll: must not be taken */
  (void)local_coll;
  struct lens_p_proxy_step s0 = {0};
  tb_events_begin(b, 1);
  tb_start(b, LENS_T_COLL, coll, 0, CTX, 5, 0, 0, NULL, 0); /* B's own Coll with A's id value */
  tb_stop(b, coll, 6);
  tb_start(b, LENS_T_PROXY_OP, op, coll, 0xFFFF0000ull, 30, 0, LENS_START_F_REMOTE, &OP_PAYLOAD, sizeof OP_PAYLOAD);
  tb_start(b, LENS_T_PROXY_STEP, step, op, 0xFFFF0000ull, 35, 0, 0, &s0, sizeof s0);
  tb_stop(b, step, 40);
  tb_stop(b, op, 500);
  tb_close(b);
}

static void test_pxn_across_files(void **state) {
  (void)state;
  char pa[128], pb[128], err[256];
  write_pxn(pa, pb, sizeof pa);
  const char *paths[2] = {pa, pb};
  struct lens_model *m = lens_model_load(paths, 2, err, sizeof err, NULL);
  assert_non_null(m);
  uint64_t coll = LENS_ID_MAKE(LENS_T_COLL, 1, 1), op = LENS_ID_REMOTE | LENS_ID_MAKE(LENS_T_PROXY_OP, 1, 1);
  int32_t ci = lens_model_find(m, 0, coll), oi = lens_model_find(m, 1, op);
  assert_true(ci >= 0 && oi >= 0);
  const struct lens_event *o = &m->events[oi], *c = &m->events[ci];
  assert_int_equal(c->proc, 0);
  assert_int_equal(o->proc, 1);
  assert_true(o->flags & LENS_EVF_REMOTE);
  assert_int_equal(o->parent, ci);
  assert_false(o->flags & LENS_EVF_PARENT_MISSING);
  assert_int_equal(o->comm, c->comm); /* the originator's communicator */
  assert_int_equal(m->comms[o->comm].proc, 0);
  assert_int_equal(c->first_child, oi);
  const struct lens_event *s = rt_ev(m, 1, LENS_ID_REMOTE | LENS_ID_MAKE(LENS_T_PROXY_STEP, 1, 2));
  assert_int_equal(s->parent, oi); /* stays with its ProxyOp in process 200 */
  assert_int_equal(s->comm, c->comm);
  int src;
  assert_int_equal(lens_event_completion(m, c, &src), 500);
  lens_model_free(m);

  /* Without the originator's file the parent is missing, never a wrong match. */
  m = rt_load1(pb, err, sizeof err);
  assert_non_null(m);
  o = rt_ev(m, 0, op);
  assert_int_equal(o->parent, -1);
  assert_true(o->flags & LENS_EVF_PARENT_MISSING);
  lens_model_free(m);
}

static void test_multi_session(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = tb_open(rt_path(path, sizeof path, "sessions.lens"), LENS_PRODUCER_PLUGIN);
  sample_trace_session(t, 0, S_PID, "nodeA");
  sample_trace_session(t, 1, S_PID, "nodeA"); /* same ids again, after a re-dlopen */
  tb_close(t);
  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  assert_int_equal(m->files[0].n_sessions, 2);
  assert_int_equal(m->n_procs, 1);
  assert_int_equal(m->n_events, 30);
  assert_int_equal(m->n_comms, 2);
  assert_int_equal(m->n_threads, 6);
  assert_int_equal(m->orphan_stops, 0);
  int32_t c0 = lens_model_find_in_session(m, 0, 0, S_COLL), c1 = lens_model_find_in_session(m, 0, 1, S_COLL);
  assert_true(c0 >= 0 && c1 >= 0 && c0 != c1);
  int32_t o1 = lens_model_find_in_session(m, 0, 1, S_OP);
  assert_int_equal(m->events[o1].parent, c1);
  assert_int_equal(m->events[o1].session, 1);
  assert_int_equal(m->events[c1].comm, m->events[o1].comm);
  assert_int_not_equal(m->events[c0].comm, m->events[c1].comm);
  for (size_t i = 0; i < m->n_events; i++) assert_false(m->events[i].flags & LENS_EVF_DUP_STOP);
  assert_int_equal(m->procs[0].drops.ring_full, 6); /* 3 per session */
  assert_true(m->files[0].clean_end);
  lens_model_free(m);
}

static void test_graph_marks(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = open_proc("graph.lens", 100, path, sizeof path);
  tb_thread(t, 2, 777, LENS_ROLE_HOSTCB, "cb", -1, UINT32_MAX);
  uint64_t ga = LENS_ID_MAKE(LENS_T_GROUP_API, 1, 1), ca = LENS_ID_MAKE(LENS_T_COLL_API, 1, 2);
  uint64_t ca2 = LENS_ID_MAKE(LENS_T_COLL_API, 1, 3);
  struct lens_p_group_api g = {.graph_captured = 1, .group_depth = 1};
  struct lens_p_coll_api c = {.count = 1, .graph_captured = 1}, c2 = {.count = 1};
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_GROUP_API, ga, 0, CTX, 10, 0, 0, &g, sizeof g);
  tb_start(t, LENS_T_COLL_API, ca, ga, CTX, 11, 0, 0, &c, sizeof c);
  tb_stop(t, ca, 12);
  tb_stop(t, ga, 13);
  tb_start(t, LENS_T_COLL_API, ca2, 0, CTX, 14, 0, 0, &c2, sizeof c2);
  tb_stop(t, ca2, 15);
  tb_flush(t);
  tb_events_begin(t, 2); /* graph replays, long after the CollApi stopped */
  uint64_t r1 = LENS_ID_MAKE(LENS_T_COLL, 2, 1), r2 = LENS_ID_MAKE(LENS_T_COLL, 2, 2);
  uint64_t k = LENS_ID_MAKE(LENS_T_COLL, 2, 3), op = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 4);
  tb_start(t, LENS_T_COLL, r1, ca, CTX, 1000, 0, 0, NULL, 0);
  tb_start(t, LENS_T_PROXY_OP, op, r1, CTX, 1001, 0, 0, &OP_PAYLOAD, sizeof OP_PAYLOAD);
  tb_stop(t, r1, 1002);
  tb_start(t, LENS_T_COLL, r2, ca, CTX, 2000, 0, 0, NULL, 0);
  tb_stop(t, r2, 2001);
  tb_start(t, LENS_T_COLL, k, ca2, CTX, 3000, 0, 0, NULL, 0);
  tb_stop(t, k, 3001);
  tb_close(t);
  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  assert_true(rt_ev(m, 0, ga)->flags & LENS_EVF_GRAPH);
  assert_true(rt_ev(m, 0, ca)->flags & LENS_EVF_GRAPH);
  assert_true(rt_ev(m, 0, r1)->flags & LENS_EVF_GRAPH);
  assert_true(rt_ev(m, 0, r2)->flags & LENS_EVF_GRAPH);
  assert_true(rt_ev(m, 0, op)->flags & LENS_EVF_GRAPH);
  assert_false(rt_ev(m, 0, k)->flags & LENS_EVF_GRAPH);
  assert_false(rt_ev(m, 0, ca2)->flags & LENS_EVF_GRAPH);
  assert_int_equal(m->events[rt_ev(m, 0, r2)->parent].id, ca);
  assert_string_equal(m->threads[rt_ev(m, 0, r1)->thread].name, "cb");
  lens_model_free(m);
}

static void test_probe_file(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = tb_open(rt_path(path, sizeof path, "probe.lens"), LENS_PRODUCER_SCHED);
  tb_session(t, 0, 9, "nodeA", 0);
  struct lens_sched_sample s[2] = {{.start_mono_ns = 10, .end_mono_ns = 30, .kind = LENS_SCHED_RUNQ_WAIT,
                                    .host_pid = 5, .host_tid = 6, .culprit_comm = "stress"},
                                   {.start_mono_ns = 40, .end_mono_ns = 50, .kind = LENS_SCHED_PREEMPT}};
  tb_sched(t, s, 2);
  struct lens_sched_hist h = {.host_tid = 6, .kind = 1, .buckets = {[3] = 7}};
  tb_sched_hist(t, &h);
  tb_close(t);
  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  assert_int_equal(m->n_procs, 0);
  assert_int_equal(m->n_sched, 2);
  assert_int_equal(m->sched[0].s.end_mono_ns, 30);
  assert_string_equal(m->sched[0].s.culprit_comm, "stress");
  assert_int_equal(m->sched[1].s.kind, LENS_SCHED_PREEMPT);
  assert_int_equal(m->n_sched_hist, 1);
  assert_int_equal(m->sched_hist[0].buckets[3], 7);
  lens_model_free(m);
}

/* lens_first_child_of_type against a walk of the children, every parent and
 * type asked in event order with one memo (as a pass asks), then again out of
 * order, then every pair of parents (18 events: some share a memo slot), and
 * the bounds. */
static int32_t walk_first(const struct lens_model *m, int32_t p, int32_t type) {
  for (int32_t c = m->events[p].first_child; c >= 0; c = m->events[c].next_sibling)
    if (m->events[c].type == type) return c;
  return -1;
}

static void test_first_child_of_type(void **state) {
  (void)state;
  char path[128], err[256];
  struct tb *t = open_proc("first_child.lens", 100, path, sizeof path);
  tb_events_begin(t, 1);
  uint64_t seq = 1, ts = 10;
  for (int g = 0; g < 3; g++) { /* groups of 0, 4 and 8 API calls, each call's launch after all of them */
    uint64_t grp = LENS_ID_MAKE(LENS_T_GROUP_API, 1, seq++);
    tb_start(t, LENS_T_GROUP_API, grp, 0, CTX, ts++, 0, 0, NULL, 0);
    for (int k = 0; k < 4 * g; k++) {
      uint64_t api = LENS_ID_MAKE(LENS_T_COLL_API, 1, seq++);
      tb_start(t, LENS_T_COLL_API, api, grp, CTX, ts++, 0, 0, NULL, 0);
      tb_stop(t, api, ts++);
    }
    for (int k = 0; k < g; k++) {
      uint64_t l = LENS_ID_MAKE(LENS_T_KERNEL_LAUNCH, 1, seq++);
      tb_start(t, LENS_T_KERNEL_LAUNCH, l, grp, CTX, ts++, 0, 0, NULL, 0);
      tb_stop(t, l, ts++);
    }
    tb_stop(t, grp, ts++);
  }
  tb_close(t);
  struct lens_model *m = rt_load1(path, err, sizeof err);
  assert_non_null(m);
  assert_int_equal(m->n_events, 3 + 12 + 3);
  int32_t types[] = {LENS_T_KERNEL_LAUNCH, LENS_T_COLL_API, LENS_T_GROUP_API};
  struct lens_child_memo memo = LENS_CHILD_MEMO_INIT;
  size_t found = 0;
  for (int round = 0; round < 2; round++) /* in order (memo hits), then each parent once per type (misses) */
    for (size_t i = 0; i < m->n_events; i++)
      for (int k = 0; k < 3; k++)
        for (int again = 0; again < (round ? 1 : 3); again++) {
          int32_t p = (int32_t)(round ? m->n_events - 1 - i : i);
          int32_t want = walk_first(m, p, types[k]);
          assert_int_equal(lens_first_child_of_type(m, p, types[k], &memo), want);
          assert_int_equal(lens_first_child_of_type(m, p, types[k], NULL), want);
          found += want >= 0;
        }
  assert_int_equal(found, 2 * 2 * (3 + 1)); /* groups 2 and 3 hold a launch and a call: 3 asks each, then 1 */
  for (size_t i = 0; i < m->n_events; i++) /* every pair of parents, one type: those sharing a slot too */
    for (size_t j = 0; j < m->n_events; j++)
      for (int k = 0; k < 2; k++) {
        int32_t p = (int32_t)(k ? j : i);
        assert_int_equal(lens_first_child_of_type(m, p, LENS_T_KERNEL_LAUNCH, &memo),
                         walk_first(m, p, LENS_T_KERNEL_LAUNCH));
      }
  for (size_t i = 0; i < m->n_events; i++)
    if (m->events[i].type == LENS_T_GROUP_API && m->events[i].first_child >= 0) {
      int32_t c = lens_first_child_of_type(m, (int32_t)i, LENS_T_KERNEL_LAUNCH, &memo);
      assert_true(c >= 0);
      assert_int_equal(m->events[c].type, LENS_T_KERNEL_LAUNCH);
      assert_int_equal(m->events[c].parent, (int32_t)i);
      assert_true(m->events[m->events[i].first_child].type == LENS_T_COLL_API); /* the walk had calls to pass */
    }
  assert_int_equal(lens_first_child_of_type(m, -1, LENS_T_KERNEL_LAUNCH, &memo), -1);
  assert_int_equal(lens_first_child_of_type(m, (int32_t)m->n_events, LENS_T_KERNEL_LAUNCH, &memo), -1);
  lens_model_free(m);
}

static void test_errors(void **state) {
  (void)state;
  char path[128], err[256];
  const char *none = "/nonexistent/x.lens";
  assert_null(rt_load1(none, err, sizeof err));
  assert_non_null(strstr(err, "cannot open"));
  tb_write_file(rt_path(path, sizeof path, "text.lens"), "hello world, this is not a trace at all, no no no no no no "
                                                          "no no no no no", 70);
  assert_null(rt_load1(path, err, sizeof err));
  assert_non_null(strstr(err, "not a .lens trace"));
  assert_null(strchr(err, '\n'));
  assert_null(lens_model_load(NULL, 0, err, sizeof err, NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dup_and_orphan_stops), cmocka_unit_test(test_stop_before_start_chunk_and_no_stop),
      cmocka_unit_test(test_records_before_start_keep_file_order),
      cmocka_unit_test(test_superseded_step),      cmocka_unit_test(test_fold_steps),
      cmocka_unit_test(test_pxn_across_files),
      cmocka_unit_test(test_multi_session),        cmocka_unit_test(test_graph_marks),
      cmocka_unit_test(test_probe_file),           cmocka_unit_test(test_errors),
      cmocka_unit_test(test_first_child_of_type),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rt_cleanup();
  return rc;
}
