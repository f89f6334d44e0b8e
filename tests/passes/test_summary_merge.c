/* The summary as map and merge (tools/analysis/summary/summary_analysis.h):
 * a job read host group by host group through the pass driver, each group
 * mapped and the parts merged, gives the summary of one model of every
 * trace: the same communicators (one per comm_id and name, its inits from
 * both hosts counted), the same rows and numbers, the same proxy threads
 * (renumbered into the skeleton), counts and events; and every string is
 * the summary's own (the models are freed before it is read). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "reader_test_util.h"
#include "sample_trace.h"
#include "trace_builder.h"

#include "analysis/summary/summary_analysis.h"
#include "cli/passes.h"
#include "export/load_traces.h"

static char a1[128], b1[128], a2[128];

static int setup(void **state) {
  (void)state;
  /* Two processes of host nodeA (given first and last) and one of nodeB, on one communicator. */
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

static void *summary_map(struct lens_model *m, void *ctx) {
  (void)ctx;
  struct lens_summary *s = malloc(sizeof *s);
  if (s && lens_summary_map(m, s, 0)) free(s), s = NULL;
  return s;
}
static void summary_free(void *p) {
  lens_summary_free(p);
  free(p);
}

static int streq0(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static const struct lens_sum_row *find_row(const struct lens_summary *s, const struct lens_summary *of_s,
                                           const struct lens_sum_row *r) {
  const struct lens_sum_group *g = &of_s->groups[r->group];
  for (size_t i = 0; i < s->n_rows; i++) {
    const struct lens_sum_row *x = &s->rows[i];
    const struct lens_sum_group *xg = &s->groups[x->group];
    if (xg->comm_id == g->comm_id && streq0(xg->name, g->name) && streq0(x->func, r->func) &&
        streq0(x->algo, r->algo) && streq0(x->proto, r->proto) && streq0(x->kernel_variant, r->kernel_variant) &&
        x->bucket == r->bucket && x->user_tag == r->user_tag)
      return x;
  }
  return NULL;
}

static void stat_eq(const struct lens_stat *a, const struct lens_stat *b) {
  assert_int_equal(a->n, b->n);
  assert_int_equal(a->sum, b->sum);
  assert_int_equal(a->max, b->max);
}

static void test_merged_groups_equal_one_model(void **state) {
  (void)state;
  const char *paths[3] = {a1, b1, a2};
  /* One model of the three traces, loaded as a group is. */
  struct lens_load_opts lo = {.no_progress = 1};
  struct lens_model *one = lens_cli_load("test", paths, 3, &lo);
  assert_non_null(one);
  struct lens_summary want;
  assert_int_equal(lens_summary_build(one, &want, 0), 0);
  uint32_t want_pid[8], want_tid[8];
  assert_true(want.n_proxies > 0 && want.n_proxies <= 8);
  for (size_t i = 0; i < want.n_proxies; i++) {
    const struct lens_thread *t = &one->threads[want.proxies[i].thread];
    want_tid[i] = t->tid, want_pid[i] = one->procs[t->proc].pid;
  }
  lens_model_free(one); /* the summary owns what it prints */

  for (long th = 1; th <= 2; th++) {
    char *argv[5] = {"test", (char *)paths[0], (char *)paths[1], (char *)paths[2], NULL};
    struct lens_trace_cli c;
    assert_int_equal(lens_trace_cli_parse("test", 4, argv, &c, NULL, NULL, NULL, NULL), 0);
    struct lens_pass p = {.map = summary_map, .free = summary_free, .needs = LENS_PASS_STEPS};
    struct lens_passes_opts o = {.threads = th, .no_progress = 1};
    struct lens_passes_out out;
    assert_int_equal(lens_passes_run("test", &c, &p, 1, &o, &out), 0);
    assert_int_equal(out.n_groups, 2);
    struct lens_summary got;
    memset(&got, 0, sizeof got);
    for (size_t g = 0; g < out.n_groups; g++)
      assert_int_equal(lens_summary_merge(&got, out.parts[g], &out.bases[g]), 0);

    assert_int_equal(got.events, want.events);
    assert_int_equal(got.n_groups, want.n_groups);
    for (size_t g = 0; g < want.n_groups; g++) {
      assert_int_equal(got.groups[g].comm_id, want.groups[g].comm_id);
      assert_true(streq0(got.groups[g].name, want.groups[g].name));
      assert_int_equal(got.groups[g].nranks, want.groups[g].nranks);
      assert_int_equal(got.groups[g].ranks_seen, want.groups[g].ranks_seen);
    }
    assert_int_equal(got.groups[0].ranks_seen, 3); /* one communicator's inits on both hosts */
    assert_int_equal(got.n_rows, want.n_rows);
    assert_true(want.n_rows > 0);
    for (size_t i = 0; i < want.n_rows; i++) {
      const struct lens_sum_row *w = &want.rows[i], *r = find_row(&got, &want, w);
      assert_non_null(r);
      assert_int_equal(r->count, w->count);
      assert_int_equal(r->count % 3, 0); /* the same op on each of the three processes */
      assert_int_equal(r->bytes, w->bytes);
      stat_eq(&r->enqueue, &w->enqueue);
      stat_eq(&r->completion, &w->completion);
      stat_eq(&r->gpu_channel, &w->gpu_channel);
      assert_int_equal(r->completed_bytes, w->completed_bytes);
      assert_int_equal(r->proxy_ops, w->proxy_ops);
      assert_int_equal(r->proxy_steps, w->proxy_steps);
      assert_int_equal(r->proxy_bytes, w->proxy_bytes);
      assert_int_equal(r->graph, w->graph);
    }
    assert_int_equal(got.n_ce_rows, want.n_ce_rows);
    for (size_t i = 0; i < want.n_ce_rows; i++) {
      assert_int_equal(got.ce_rows[i].count, want.ce_rows[i].count);
      assert_true(streq0(got.ce_rows[i].func, want.ce_rows[i].func));
      stat_eq(&got.ce_rows[i].batch, &want.ce_rows[i].batch);
    }
    /* Proxy threads: the same ones (input order differs: nodeA's group comes first), their
     * thread indexes into the skeleton. */
    assert_int_equal(got.n_proxies, want.n_proxies);
    for (size_t i = 0; i < got.n_proxies; i++) {
      const struct lens_sum_proxy *x = &got.proxies[i];
      assert_true(x->thread >= 0 && (size_t)x->thread < out.skel->n_threads);
      const struct lens_thread *t = &out.skel->threads[x->thread];
      uint32_t pid = out.skel->procs[t->proc].pid;
      size_t k = 0;
      while (k < want.n_proxies && !(want_pid[k] == pid && want_tid[k] == t->tid)) k++;
      assert_true(k < want.n_proxies);
      const struct lens_sum_proxy *w = &want.proxies[k];
      assert_int_equal(x->ops, w->ops);
      assert_int_equal(x->steps, w->steps);
      assert_int_equal(x->bytes, w->bytes);
      assert_memory_equal(x->state_ns, w->state_ns, sizeof x->state_ns);
      assert_int_equal(x->span_ns, w->span_ns);
    }
    assert_memory_equal(got.acc_counts, want.acc_counts, sizeof got.acc_counts);
    assert_memory_equal(got.evf_counts, want.evf_counts, sizeof got.evf_counts);
    assert_memory_equal(got.time_source, want.time_source, sizeof got.time_source);
    assert_int_equal(got.kernel_ch, want.kernel_ch);
    lens_passes_free(&p, &out);
    lens_summary_free(&got);
    lens_trace_cli_free(&c);
  }
  lens_summary_free(&want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_merged_groups_equal_one_model),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
