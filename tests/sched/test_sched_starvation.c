/* lens_analyze_starvation on hand-built models: which events get flagged,
 * by how much, against which sample; then a randomized cross-check against a
 * brute-force overlap computation; then the printers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>

#include <cmocka.h>

#include "analysis/sched/starvation.h"
#include "analysis/analyses.h"

#define MAXN 4096
static struct lens_proc procs[2];
static struct lens_thread threads[4];
static struct lens_event events[MAXN];
static struct lens_sched sched[MAXN];
static struct lens_model model;

static void reset(void) {
  memset(procs, 0, sizeof procs);
  memset(threads, 0, sizeof threads);
  memset(events, 0, sizeof events);
  memset(sched, 0, sizeof sched);
  memset(&model, 0, sizeof model);
  model.procs = procs;
  model.threads = threads;
  model.events = events;
  model.sched = sched;
  /* proc 0: plain host process pid 100; thread 0 its proxy (tid 101), thread 1 an app thread (102). */
  procs[0] = (struct lens_proc){.pid = 100, .outer_pid = 100};
  threads[0] = (struct lens_thread){.proc = 0, .tid = 101, .outer_tid = 101, .roles = LENS_ROLE_PROXY,
                                    .proxy_rank = 3};
  threads[1] = (struct lens_thread){.proc = 0, .tid = 102, .outer_tid = 102, .roles = LENS_ROLE_APP};
  /* proc 1: in a container that only sees its own pid namespace: pid 7, proxy tid 8. */
  procs[1] = (struct lens_proc){.pid = 7, .outer_pid = 7};
  threads[2] = (struct lens_thread){.proc = 1, .tid = 8, .outer_tid = 8, .roles = LENS_ROLE_PROXY};
  model.n_procs = 2;
  model.n_threads = 3;
}

static void add_sample(uint32_t kind, uint32_t pid, uint32_t tid, uint32_t ns_tid, uint64_t a, uint64_t b,
                       uint32_t culprit, const char *comm) {
  struct lens_sched *s = &sched[model.n_sched++];
  s->s = (struct lens_sched_sample){.start_mono_ns = a, .end_mono_ns = b, .kind = kind, .host_pid = pid,
                                    .host_tid = tid, .ns_tid = ns_tid, .culprit_pid = culprit,
                                    .culprit_tid = culprit};
  snprintf(s->s.culprit_comm, sizeof s->s.culprit_comm, "%s", comm);
}

static int add_event(int type, int thread, uint64_t a, uint64_t b) {
  struct lens_event *e = &events[model.n_events];
  memset(e, 0, sizeof *e);
  e->type = type;
  e->thread = thread;
  e->proc = threads[thread].proc;
  e->start_mono_ns = a;
  e->stop_mono_ns = b;
  e->acc.sched_sample = -1;
  return (int)model.n_events++;
}

static void test_flags_and_amounts(void **state) {
  (void)state;
  reset();
  add_sample(LENS_SCHED_RUNQ_WAIT, 100, 101, 101, 1000, 2000, 200, "hog");  /* 0 */
  add_sample(LENS_SCHED_OFFCPU, 100, 101, 101, 3000, 4000, 0, "");        /* 1: a sleep, not starvation */
  add_sample(LENS_SCHED_PREEMPT, 100, 101, 101, 5000, 5500, 201, "hog2"); /* 2 */
  add_sample(LENS_SCHED_RUNQ_WAIT, 100, 102, 102, 1000, 2000, 200, "hog"); /* 3: app thread */
  add_sample(LENS_SCHED_RUNQ_WAIT, 5000, 5001, 8, 1000, 2000, 200, "hog"); /* 4: container proxy via ns tid */

  int step = add_event(LENS_T_PROXY_STEP, 0, 1500, 2500);
  int op = add_event(LENS_T_PROXY_OP, 0, 0, 10000);
  int kch_gpu = add_event(LENS_T_KERNEL_CH, 0, 2100, 2200);
  events[kch_gpu].acc.gpu_stop_mono_ns = 1800; /* GPU done at 1800, noticed at 2100..2200 */
  int kch = add_event(LENS_T_KERNEL_CH, 0, 2100, 2200);
  int kch_start = add_event(LENS_T_KERNEL_CH, 0, 2050, 2300);
  events[kch_start].acc.gpu_start_mono_ns = 1950; /* started on the GPU during the wait, noticed after */
  int step_gpu = add_event(LENS_T_PROXY_STEP, 0, 2100, 2200);
  events[step_gpu].acc.gpu_stop_mono_ns = 1800; /* GPU times mean nothing for a ProxyStep */
  int sleep_step = add_event(LENS_T_PROXY_STEP, 0, 3000, 4000);
  int coll = add_event(LENS_T_COLL, 0, 1000, 2000);
  int app_step = add_event(LENS_T_PROXY_STEP, 1, 1000, 2000);
  int nostop = add_event(LENS_T_PROXY_STEP, 0, 1200, 0);
  int ctr = add_event(LENS_T_PROXY_STEP, 2, 1900, 2100);

  long n = lens_analyze_starvation(&model, 0);
  assert_int_equal(n, 6);
  assert_true(events[kch_start].acc.flags & LENS_ACC_STARVED);
  assert_int_equal(events[kch_start].acc.starved_ns, 50);
  assert_false(events[step_gpu].acc.flags & LENS_ACC_STARVED);
  assert_true(events[step].acc.flags & LENS_ACC_STARVED);
  assert_int_equal(events[step].acc.starved_ns, 500);
  assert_int_equal(events[step].acc.sched_sample, 0);
  assert_true(events[op].acc.flags & LENS_ACC_STARVED);
  assert_int_equal(events[op].acc.starved_ns, 1000 + 500);
  assert_int_equal(events[op].acc.sched_sample, 0); /* the larger overlap */
  assert_true(events[kch_gpu].acc.flags & LENS_ACC_STARVED);
  assert_int_equal(events[kch_gpu].acc.starved_ns, 200);
  assert_false(events[kch].acc.flags & LENS_ACC_STARVED);
  assert_int_equal(events[kch].acc.sched_sample, -1);
  assert_false(events[sleep_step].acc.flags & LENS_ACC_STARVED);
  assert_false(events[coll].acc.flags & LENS_ACC_STARVED);
  assert_false(events[app_step].acc.flags & LENS_ACC_STARVED);
  assert_true(events[nostop].acc.flags & LENS_ACC_STARVED); /* instant inside a wait */
  assert_true(events[ctr].acc.flags & LENS_ACC_STARVED);
  assert_int_equal(events[ctr].acc.starved_ns, 100);
  assert_int_equal(events[ctr].acc.sched_sample, 4);

  /* min_wait drops the 500 ns preemption: the op keeps only the run-queue wait. */
  n = lens_analyze_starvation(&model, 600);
  assert_int_equal(n, 6);
  assert_int_equal(events[op].acc.starved_ns, 1000);
  /* ... and a threshold above every wait clears every flag set before. */
  n = lens_analyze_starvation(&model, 5000);
  assert_int_equal(n, 0);
  assert_false(events[step].acc.flags & LENS_ACC_STARVED);
  assert_int_equal(events[step].acc.starved_ns, 0);
}

/* KernelCh without GPU times: its window opens at the proxy's previous pass,
 * the last callback of thread 0 before the chain of callbacks (each within
 * 10 us of the next) that ends at the start notice. Brute force: O(n^2). */
static uint64_t prev_pass_brute(uint64_t start) {
  uint64_t cur = start;
  for (;;) {
    uint64_t latest = 0; /* latest callback before cur (or at it, other than cur itself) */
    int found = 0, at_cur = 0;
    for (size_t i = 0; i < model.n_events; i++) {
      if (events[i].thread != 0) continue;
      uint64_t ts[2] = {events[i].start_mono_ns, events[i].stop_mono_ns};
      for (int k = 0; k < 2; k++) {
        if (!ts[k] && k == 1) continue;
        if (ts[k] < cur && (!found || ts[k] > latest)) latest = ts[k], found = 1;
        if (ts[k] == cur) at_cur++;
      }
    }
    (void)at_cur;
    if (!found) return start;
    if (cur - latest > 10000) return latest < start ? latest : start;
    cur = latest;
  }
}

/* One wait under a ProxyOp, its ProxyStep and a KernelCh: each event is
 * flagged with the whole wait, but the thread was starved for it once. */
static void test_nested_events_count_the_wait_once(void **state) {
  (void)state;
  reset();
  add_sample(LENS_SCHED_RUNQ_WAIT, 100, 101, 101, 1000, 2000, 200, "hog");
  add_sample(LENS_SCHED_RUNQ_WAIT, 100, 101, 101, 9000, 9500, 200, "hog"); /* no event open: not counted */
  add_event(LENS_T_PROXY_OP, 0, 500, 3000);
  add_event(LENS_T_PROXY_STEP, 0, 600, 2900);
  add_event(LENS_T_PROXY_STEP, 0, 700, 2800);
  assert_int_equal(lens_analyze_starvation(&model, 0), 3);
  uint64_t sum = 0;
  for (size_t i = 0; i < model.n_events; i++) sum += events[i].acc.starved_ns;
  assert_int_equal(sum, 3000);
  assert_int_equal(threads[0].starved_ns, 1000);
  assert_int_equal(threads[1].starved_ns, 0);
}

/* Random non-overlapping waits per thread, random events; compare with brute force. */
static void test_random_against_brute_force(void **state) {
  (void)state;
  reset();
  srand(12345);
  for (int t = 0; t < 2; t++) {
    uint64_t at = 0;
    for (int i = 0; i < 800; i++) {
      at += 1 + (uint64_t)(rand() % 50000);
      uint64_t len = 1 + (uint64_t)(rand() % 30000);
      uint32_t kind = 1 + (uint32_t)(rand() % 3);
      add_sample(kind, 100, t ? 102 : 101, 0, at, at + len, 300 + (uint32_t)i, "x");
      at += len;
    }
  }
  for (int i = 0; i < 1500; i++) {
    /* ~1 callback per 7 us on each thread: passes both chain and break (10 us). */
    uint64_t a = (uint64_t)(rand() % 30000000), len = (uint64_t)(rand() % 20000);
    int type = (int[]){LENS_T_KERNEL_CH, LENS_T_PROXY_OP, LENS_T_PROXY_STEP, LENS_T_COLL}[rand() % 4];
    add_event(type, rand() % 2, a, rand() % 10 ? a + len : 0);
  }
  uint64_t min_wait = 7000;
  long n = lens_analyze_starvation(&model, min_wait);
  long expect = 0;
  int extended = 0;
  for (size_t i = 0; i < model.n_events; i++) {
    const struct lens_event *e = &events[i];
    uint64_t want = 0;
    int proxyish = e->type == LENS_T_KERNEL_CH || e->type == LENS_T_PROXY_OP || e->type == LENS_T_PROXY_STEP;
    if (proxyish && e->thread == 0) {
      uint64_t from = e->start_mono_ns, to = e->stop_mono_ns ? e->stop_mono_ns : e->start_mono_ns;
      if (e->type == LENS_T_KERNEL_CH) {
        uint64_t p = prev_pass_brute(from);
        extended += p < from;
        from = p;
      }
      for (size_t k = 0; k < model.n_sched; k++) {
        const struct lens_sched_sample *s = &sched[k].s;
        if (s->host_tid != 101 || s->kind == LENS_SCHED_OFFCPU) continue;
        if (s->end_mono_ns - s->start_mono_ns < min_wait) continue;
        uint64_t a = s->start_mono_ns > from ? s->start_mono_ns : from;
        uint64_t b = s->end_mono_ns < to ? s->end_mono_ns : to;
        if (b > a) want += b - a;
        else if (from == to && s->start_mono_ns <= from && from < s->end_mono_ns) want += 1;
      }
    }
    expect += want > 0;
    assert_int_equal(e->acc.starved_ns, want);
    assert_int_equal(!!(e->acc.flags & LENS_ACC_STARVED), want > 0);
  }
  assert_int_equal(n, expect);
  /* The thread's starved time: ns inside a wait and inside an event window, each counted once. */
  uint64_t span = 0;
  for (size_t k = 0; k < model.n_sched; k++)
    if (sched[k].s.end_mono_ns > span) span = sched[k].s.end_mono_ns;
  for (size_t i = 0; i < model.n_events; i++)
    if (events[i].stop_mono_ns > span) span = events[i].stop_mono_ns;
  unsigned char *in = calloc(span + 1, 1);
  assert_non_null(in);
  for (size_t i = 0; i < model.n_events; i++) {
    const struct lens_event *e = &events[i];
    if (e->thread != 0 || (e->type != LENS_T_KERNEL_CH && e->type != LENS_T_PROXY_OP && e->type != LENS_T_PROXY_STEP))
      continue;
    uint64_t from = e->type == LENS_T_KERNEL_CH ? prev_pass_brute(e->start_mono_ns) : e->start_mono_ns;
    uint64_t to = e->stop_mono_ns > e->start_mono_ns ? e->stop_mono_ns : e->start_mono_ns;
    for (uint64_t x = from; x < to; x++) in[x] = 1;
  }
  uint64_t union_ns = 0, sum_ns = 0;
  for (size_t k = 0; k < model.n_sched; k++) {
    const struct lens_sched_sample *s = &sched[k].s;
    if (s->host_tid != 101 || s->kind == LENS_SCHED_OFFCPU || s->end_mono_ns - s->start_mono_ns < min_wait) continue;
    for (uint64_t x = s->start_mono_ns; x < s->end_mono_ns; x++) union_ns += in[x], in[x] = 0;
  }
  free(in);
  for (size_t i = 0; i < model.n_events; i++)
    if (events[i].thread == 0) sum_ns += events[i].acc.starved_ns;
  printf("random: thread starved %" PRIu64 " ns (union), events' overlaps sum to %" PRIu64 " ns\n", threads[0].starved_ns,
         sum_ns);
  assert_int_equal(threads[0].starved_ns, union_ns);
  assert_true(union_ns > 0);
  printf("random: %ld of %zu events flagged, %d KernelCh windows opened at an earlier pass\n", expect,
         model.n_events, extended);
  assert_true(expect > 50); /* the draw must exercise both outcomes */
  assert_true(expect < (long)model.n_events - 50);
  assert_true(extended > 20);
}

static void test_printers(void **state) {
  (void)state;
  reset();
  add_sample(LENS_SCHED_RUNQ_WAIT, 100, 101, 101, 1000, 3000, 200, "hog\"q");
  add_sample(LENS_SCHED_PREEMPT, 100, 101, 101, 5000, 5500, 201, "yielder");
  add_sample(LENS_SCHED_RUNQ_WAIT, 100, 101, 101, 7000, 8500, 200, "hog\"q");
  add_event(LENS_T_PROXY_STEP, 0, 1500, 2500);
  lens_analyze_starvation(&model, 0);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  lens_print_starvation(f, &model);
  fclose(f);
  assert_non_null(strstr(buf, "tid 101"));
  assert_non_null(strstr(buf, "proxy of rank 3"));
  assert_non_null(strstr(buf, "waited 0.004 ms in 2 run-queue waits + 1 preemptions"));
  /* top culprit first: hog (3000 ns) before yielder (500 ns) */
  char *hog = strstr(buf, "hog\"q"), *y = strstr(buf, "yielder");
  assert_true(hog && y && hog < y);
  free(buf);
  buf = NULL;
  f = open_memstream(&buf, &len);
  lens_json_starvation(f, &model);
  fclose(f);
  assert_non_null(strstr(buf, "\"host_tid\":101"));
  assert_non_null(strstr(buf, "\"wait_ns\":4000"));
  assert_non_null(strstr(buf, "\"worst_wait_ns\":2000"));
  assert_non_null(strstr(buf, "\"comm\":\"hog\\\"q\""));
  assert_non_null(strstr(buf, "\"flagged_events\":1}"));
  free(buf);
}

/* Two host groups' reports gathered one after the other (the first model
 * reset before the second is read, as the pass driver frees it) and
 * merged: both threads, in order, with who they are kept from the first
 * model; samples and flagged events summed. */
static void test_gather_merge(void **state) {
  (void)state;
  struct lens_starvation a, b, all;
  memset(&all, 0, sizeof all);
  reset();
  add_sample(LENS_SCHED_RUNQ_WAIT, 100, 101, 101, 1000, 3000, 200, "hog");
  add_sample(LENS_SCHED_OFFCPU, 100, 101, 101, 4000, 9000, 0, "");
  add_event(LENS_T_PROXY_STEP, 0, 1500, 2500);
  lens_analyze_starvation(&model, 0);
  assert_int_equal(lens_starvation_gather(&model, &a), 0);
  reset();
  add_sample(LENS_SCHED_PREEMPT, 7, 8, 8, 2000, 2600, 300, "other");
  add_event(LENS_T_PROXY_STEP, 2, 2100, 2400);
  add_event(LENS_T_PROXY_STEP, 2, 2200, 2300);
  lens_analyze_starvation(&model, 0);
  assert_int_equal(lens_starvation_gather(&model, &b), 0);
  memset(threads, 0, sizeof threads); /* the models are gone */
  assert_int_equal(lens_starvation_merge(&all, &a), 0);
  assert_int_equal(lens_starvation_merge(&all, &b), 0);
  assert_int_equal(all.n_threads, 2);
  assert_int_equal(all.n_samples, 3);
  assert_int_equal(all.flagged_events, a.flagged_events + b.flagged_events);
  assert_int_equal(all.flagged_events, 3);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  lens_starvation_print_text(f, &all);
  fclose(f);
  assert_non_null(strstr(buf, "2 thread(s), 3 samples"));
  char *t101 = strstr(buf, "pid 100 tid 101 = plugin thread 101 of pid 100, proxy of rank 3");
  char *t8 = strstr(buf, "pid 7 tid 8 = plugin thread 8 of pid 7");
  assert_true(t101 && t8 && t101 < t8);
  assert_non_null(strstr(buf, "1 long sleeps; 1 events flagged starved"));
  assert_non_null(strstr(buf, "0 run-queue waits + 1 preemptions"));
  free(buf);
  buf = NULL;
  f = open_memstream(&buf, &len);
  lens_starvation_print_json(f, &all);
  fclose(f);
  assert_non_null(strstr(buf, "\"plugin_pid\":7,\"plugin_tid\":8,\"proxy_rank\":0"));
  assert_non_null(strstr(buf, "\"flagged_events\":3}"));
  free(buf);
  lens_starvation_free(&a);
  lens_starvation_free(&b);
  lens_starvation_free(&all);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flags_and_amounts),
      cmocka_unit_test(test_nested_events_count_the_wait_once),
      cmocka_unit_test(test_random_against_brute_force),
      cmocka_unit_test(test_printers),
      cmocka_unit_test(test_gather_merge),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
