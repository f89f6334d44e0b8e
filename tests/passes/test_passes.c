/* The pass driver (tools/cli/passes.h) that every command reads a job
 * through: traces grouped by host, one model per group, partials in input
 * order whatever the thread count, a skeleton with every group's tables
 * renumbered, and the selection's names checked across the groups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "reader_test_util.h"
#include "sample_trace.h"
#include "trace_builder.h"

#include "cli/passes.h"

static char a1[128], b1[128], a2[128];

static int setup(void **state) {
  (void)state;
  /* Two processes of host nodeA (given first and last) and one of nodeB. */
  sample_trace_write_as(rt_path(a1, sizeof a1, "a1.lens"), S_PID, "nodeA");
  sample_trace_write_as(rt_path(b1, sizeof b1, "b1.lens"), S_PID + 1, "nodeB");
  sample_trace_write_as(rt_path(a2, sizeof a2, "a2.lens"), S_PID + 2, "nodeA");
  return 0;
}
static int teardown(void **state) {
  (void)state;
  rt_cleanup();
  return 0;
}

/* A partial: the group's events and the pid of its first process. */
struct count { uint64_t events, procs; uint32_t first_pid; };
static void *count_map(struct lens_model *m, void *ctx) {
  (void)ctx;
  struct count *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->events = m->n_events;
  c->procs = m->n_procs;
  c->first_pid = m->n_procs ? m->procs[0].pid : 0;
  return c;
}

static void run(const char **paths, size_t n, long threads, const char *comm, struct lens_passes_out *out, int want_rc) {
  char *argv[8];
  int argc = 0;
  argv[argc++] = "test";
  if (comm) argv[argc++] = "--comm", argv[argc++] = (char *)comm;
  for (size_t i = 0; i < n; i++) argv[argc++] = (char *)paths[i];
  struct lens_trace_cli c;
  assert_int_equal(lens_trace_cli_parse("test", argc, argv, &c, NULL, NULL, NULL, NULL), 0);
  struct lens_pass p = {.map = count_map, .needs = LENS_PASS_STEPS};
  struct lens_passes_opts o = {.threads = threads, .no_progress = 1};
  assert_int_equal(lens_passes_run("test", &c, &p, 1, &o, out), want_rc);
  lens_trace_cli_free(&c);
}

static void test_groups_by_host_in_input_order(void **state) {
  (void)state;
  const char *paths[3] = {a1, b1, a2};
  char err[256];
  struct lens_model *one = lens_model_load(paths, 3, err, sizeof err, NULL);
  assert_non_null(one);
  for (long th = 1; th <= 2; th++) {
    struct lens_passes_out out;
    run(paths, 3, th, NULL, &out, 0);
    struct lens_pass p = {.map = count_map};
    assert_int_equal(out.n_groups, 2);
    assert_string_equal(out.hosts[0], "nodeA");
    assert_string_equal(out.hosts[1], "nodeB");
    const struct count *g0 = out.parts[0], *g1 = out.parts[1];
    assert_int_equal(g0->procs, 2);
    assert_int_equal(g1->procs, 1);
    assert_int_equal(g0->first_pid, S_PID);
    assert_int_equal(g1->first_pid, S_PID + 1);
    /* Every event read once, as by one model of the three. */
    assert_int_equal(g0->events + g1->events, one->n_events);
    assert_int_equal(out.events, one->n_events);
    /* The skeleton: every table of both groups, no event, renumbered. */
    const struct lens_model *s = out.skel;
    assert_int_equal(s->n_events, 0);
    assert_int_equal(s->n_files, one->n_files);
    assert_int_equal(s->n_procs, one->n_procs);
    assert_int_equal(s->n_comms, one->n_comms);
    assert_int_equal(s->n_threads, one->n_threads);
    assert_int_equal(out.bases[0].proc, 0);
    assert_int_equal(out.bases[1].proc, 2);
    assert_int_equal(s->procs[out.bases[1].proc].pid, S_PID + 1);
    assert_string_equal(s->procs[2].host, "nodeB");
    for (size_t i = 0; i < s->n_comms; i++) {
      assert_true(s->comms[i].proc >= 0 && (size_t)s->comms[i].proc < s->n_procs);
      assert_int_equal(s->comms[i].comm_id, S_COMM_ID);
    }
    for (size_t i = 0; i < s->n_threads; i++) assert_true((size_t)s->threads[i].proc < s->n_procs);
    for (size_t i = 0; i < s->n_procs; i++) {
      assert_true(s->procs[i].file >= 0 && (size_t)s->procs[i].file < s->n_files);
      assert_non_null(s->files[s->procs[i].file].path);
    }
    lens_passes_free(&p, &out);
  }
  lens_model_free(one);
}

static void test_selection_names_checked_over_groups(void **state) {
  (void)state;
  const char *paths[3] = {a1, b1, a2};
  struct lens_pass p = {.map = count_map};
  struct lens_passes_out out;
  run(paths, 3, 2, "0xabcdef", &out, 0); /* held by every group */
  lens_passes_free(&p, &out);
  run(paths, 3, 2, "0x1234", &out, 2); /* by none: the usage error of one model */
  lens_passes_free(&p, &out);
}

/* The plugin writes a CLOCK chunk before its first SESSION: the host is
 * that SESSION's all the same; a trace without one has none. */
static void test_host_after_clock_chunk(void **state) {
  (void)state;
  char c1[128], h[64];
  uint8_t clock[176] = {0};
  struct tb *t = tb_open(rt_path(c1, sizeof c1, "c1.lens"), LENS_PRODUCER_PLUGIN);
  tb_raw_chunk(t, LENS_CHUNK_CLOCK, clock, sizeof clock);
  tb_raw_chunk(t, LENS_CHUNK_CLOCK, clock, 5); /* an odd length: the next header is padded to 8 */
  sample_trace_session(t, 0, S_PID + 3, "nodeB");
  tb_close(t);
  int probe = -1;
  lens_pass_trace_host(c1, h, sizeof h, &probe);
  assert_string_equal(h, "nodeB");
  assert_int_equal(probe, 0);
  t = tb_open(c1, LENS_PRODUCER_SCHED);
  tb_raw_chunk(t, LENS_CHUNK_CLOCK, clock, sizeof clock);
  tb_close(t);
  lens_pass_trace_host(c1, h, sizeof h, &probe);
  assert_string_equal(h, "");
  assert_int_equal(probe, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groups_by_host_in_input_order),
      cmocka_unit_test(test_selection_names_checked_over_groups),
      cmocka_unit_test(test_host_after_clock_chunk),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
