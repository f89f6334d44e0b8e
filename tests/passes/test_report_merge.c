/* The report's own numbers as map and merge (tools/report/report_model.h):
 * a generated job of two hosts read host group by host group through the
 * pass driver (1 and 2 threads), each group mapped and the parts merged,
 * gives what the map of one model of every trace gives: the same process
 * spans, the same arrival rows per (comm_id, rank) (a host is one group:
 * same-host ranks are compared in both), the same proxy-thread rows
 * (renumbered into the skeleton), KernelCh and notice-lag figures, and every
 * Coll/P2p start found again from a job row's (proc, group event index). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>

#include "reader_test_util.h"

#include "cli/passes.h"
#include "export/load_traces.h"
#include "report/report_model.h"

static char dir[256];
static char *paths[16];
static size_t n_paths;

static int by_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int setup(void **state) {
  (void)state;
  rt_path(dir, sizeof dir, "gj");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s/bin/lens-gen-job -o %s --ranks 8 --hosts 2 --events 20000 >/dev/null 2>&1",
           LENS_BUILD_DIR, dir);
  if (system(cmd) != 0) return -1;
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *de;
  while ((de = readdir(d)) && n_paths < 16)
    if (strstr(de->d_name, ".lens")) {
      char p[512];
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      paths[n_paths++] = strdup(p);
    }
  closedir(d);
  qsort(paths, n_paths, sizeof *paths, by_str);
  return n_paths == 8 ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  for (size_t i = 0; i < n_paths; i++) free(paths[i]);
  rt_cleanup();
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Every start the report holds, sorted; each one found again by the lookup a job row makes. */
static uint64_t *starts_of(const struct lens_report *r, size_t *n) {
  size_t k = r->group_first[r->n_groups];
  uint64_t *v = malloc((k + 1) * sizeof *v);
  assert_non_null(v);
  for (size_t g = 0; g < r->n_groups; g++)
    for (size_t i = r->group_first[g]; i < r->group_first[g + 1]; i++) {
      v[i] = r->starts[i].start_ns;
      if (r->group_proc[g] >= r->group_proc[g + 1]) continue; /* a group without processes */
      struct lens_job_rank rk = {.proc = (int32_t)r->group_proc[g], .event = (int32_t)r->starts[i].event};
      uint64_t s = 0;
      assert_int_equal(lens_report_rank_start(r, &rk, &s), 1);
      assert_int_equal(s, r->starts[i].start_ns);
      if (i + 1 < r->group_first[g + 1] && r->starts[i + 1].event > r->starts[i].event + 1) {
        rk.event = (int32_t)r->starts[i].event + 1; /* not a Coll/P2p: no start */
        assert_int_equal(lens_report_rank_start(r, &rk, &s), 0);
      }
      rk.event = -1; /* a row reduced without its event: no start */
      assert_int_equal(lens_report_rank_start(r, &rk, &s), 0);
    }
  qsort(v, k, sizeof *v, cmp_u64);
  *n = k;
  return v;
}

/* Whether thread a of model ma is thread b of mb: the same host, pid and tid (-1: none). */
static int same_thread(const struct lens_model *ma, int32_t a, const struct lens_model *mb, int32_t b) {
  if (a < 0 || b < 0) return a == b;
  const struct lens_thread *x = &ma->threads[a], *y = &mb->threads[b];
  const struct lens_proc *px = &ma->procs[x->proc], *py = &mb->procs[y->proc];
  return x->tid == y->tid && px->pid == py->pid && !strcmp(px->host, py->host);
}

static void test_merged_groups_equal_one_model(void **state) {
  (void)state;
  struct lens_load_opts lo = {.no_progress = 1};
  struct lens_model *one = lens_cli_load("test", (const char *const *)paths, n_paths, &lo);
  assert_non_null(one);
  struct lens_model *one_skel = lens_model_skeleton_new();
  assert_non_null(one_skel);
  struct lens_model_base b0;
  assert_int_equal(lens_model_skeleton_add(one_skel, one, &b0), 0);
  struct lens_report_part *p0 = lens_report_pass_map(one, NULL);
  assert_non_null(p0);
  lens_model_free(one); /* the partial owns what it keeps */
  struct lens_report want;
  memset(&want, 0, sizeof want);
  assert_int_equal(lens_report_merge(&want, one_skel, &p0, 1, &b0), 0);
  lens_report_pass_free(p0);
  size_t n_want_starts;
  uint64_t *want_starts = starts_of(&want, &n_want_starts);
  assert_true(want.n_late >= 8); /* every rank compared with the others of its host */
  assert_true(n_want_starts > 0 && want.kernel_ch > 0);

  for (long th = 1; th <= 2; th++) {
    char *argv[18] = {"test"};
    for (size_t i = 0; i < n_paths; i++) argv[1 + i] = paths[i];
    struct lens_trace_cli c;
    assert_int_equal(lens_trace_cli_parse("test", (int)n_paths + 1, argv, &c, NULL, NULL, NULL, NULL), 0);
    struct lens_pass p = {.map = lens_report_pass_map, .free = lens_report_pass_free, .needs = LENS_PASS_STEPS};
    struct lens_passes_opts o = {.threads = th, .no_progress = 1};
    struct lens_passes_out out;
    assert_int_equal(lens_passes_run("test", &c, &p, 1, &o, &out), 0);
    assert_int_equal(out.n_groups, 2); /* one per host */
    struct lens_report got;
    memset(&got, 0, sizeof got);
    assert_int_equal(lens_report_merge(&got, out.skel, (struct lens_report_part *const *)out.parts, out.n_groups,
                                       out.bases), 0);

    /* process spans, matched by pid and host */
    assert_int_equal(got.n_procs, want.n_procs);
    for (size_t i = 0; i < got.n_procs; i++) {
      size_t k = 0;
      while (k < want.n_procs && !(one_skel->procs[k].pid == out.skel->procs[i].pid &&
                                   !strcmp(one_skel->procs[k].host, out.skel->procs[i].host)))
        k++;
      assert_true(k < want.n_procs);
      assert_int_equal(got.procs[i].first_ns, want.procs[k].first_ns);
      assert_int_equal(got.procs[i].last_ns, want.procs[k].last_ns);
      assert_true(got.procs[i].last_ns > got.procs[i].first_ns);
    }
    /* arrival rows: sorted by (comm_id, rank) in both */
    assert_int_equal(got.n_late, want.n_late);
    for (size_t i = 0; i < got.n_late; i++) {
      const struct lens_rep_late *g = &got.late[i], *w = &want.late[i];
      assert_int_equal(g->comm_id, w->comm_id);
      assert_int_equal(g->rank, w->rank);
      assert_string_equal(g->comm_name, w->comm_name);
      assert_int_equal(g->n, w->n);
      assert_int_equal(g->sum_ns, w->sum_ns);
      assert_int_equal(g->max_ns, w->max_ns);
      assert_int_equal(g->last_n, w->last_n);
      assert_int_equal(g->same_thread_n, w->same_thread_n);
      assert_true(same_thread(out.skel, g->thread, one_skel, w->thread));
    }
    /* proxy-thread rows, renumbered into the skeleton */
    assert_int_equal(got.n_starve, want.n_starve);
    assert_true(got.n_starve > 0);
    for (size_t i = 0; i < got.n_starve; i++) {
      const struct lens_rep_starve *g = &got.starve[i];
      assert_true(g->thread >= 0 && (size_t)g->thread < out.skel->n_threads);
      size_t k = 0;
      while (k < want.n_starve && !same_thread(one_skel, want.starve[k].thread, out.skel, g->thread)) k++;
      assert_true(k < want.n_starve);
      assert_int_equal(g->kernel_ch, want.starve[k].kernel_ch);
      assert_int_equal(g->proxy, want.starve[k].proxy);
      assert_int_equal(g->kernel_ch_starved, want.starve[k].kernel_ch_starved);
      assert_int_equal(g->starved_ns, want.starve[k].starved_ns);
    }
    /* each thread once (a group's rows rebased into the skeleton, not onto another group's threads) */
    for (size_t i = 0; i < got.n_starve; i++)
      for (size_t k = 0; k < i; k++) assert_true(got.starve[i].thread != got.starve[k].thread);
    /* every operation compared has one last rank: 4 ranks a host, each in every operation */
    uint64_t ops = 0, lasts = 0;
    for (size_t i = 0; i < got.n_late; i++) ops += got.late[i].n, lasts += got.late[i].last_n;
    assert_true(ops > 0);
    assert_int_equal(lasts * 4, ops);
    assert_int_equal(got.kernel_ch, want.kernel_ch);
    assert_int_equal(got.kernel_ch_starved, want.kernel_ch_starved);
    assert_int_equal(got.lag_n, want.lag_n);
    assert_int_equal(got.lag_sum_ns, want.lag_sum_ns);
    assert_int_equal(got.lag_max_ns, want.lag_max_ns);
    assert_memory_equal(got.lag_hist, want.lag_hist, sizeof got.lag_hist);
    uint64_t hist_n = 0;
    for (int b = 0; b < LENS_REPORT_LAG_BINS; b++) hist_n += got.lag_hist[b];
    assert_int_equal(hist_n, got.lag_n);
    assert_int_equal(got.n_sched, want.n_sched);
    assert_int_equal(got.n_kernels, want.n_kernels);
    size_t n_got_starts;
    uint64_t *got_starts = starts_of(&got, &n_got_starts);
    assert_int_equal(n_got_starts, n_want_starts);
    assert_memory_equal(got_starts, want_starts, n_got_starts * sizeof *got_starts);
    free(got_starts);
    lens_report_free(&got);
    lens_passes_free(&p, &out);
    lens_trace_cli_free(&c);
  }
  free(want_starts);
  lens_report_free(&want);
  lens_model_free(one_skel);
}

/* A process's span does not depend on the order of its events: a start of 0
 * (a damaged or hostile record) is its earliest start whether it comes first
 * or last (0 once meant "no start yet", so an event after it replaced it). */
static void test_span_start_zero_any_order(void **state) {
  (void)state;
  for (int order = 0; order < 2; order++) {
    struct lens_proc procs[2];
    struct lens_event ev[3];
    memset(procs, 0, sizeof procs);
    memset(ev, 0, sizeof ev);
    uint64_t starts[3] = {500, 0, 300};
    for (int i = 0; i < 3; i++) {
      int k = order ? 2 - i : i;
      ev[k].type = LENS_T_GROUP;
      ev[k].proc = 0;
      ev[k].thread = -1;
      ev[k].comm = -1;
      ev[k].parent = -1;
      ev[k].start_mono_ns = starts[i];
      ev[k].stop_mono_ns = starts[i] + 100;
    }
    struct lens_model m;
    memset(&m, 0, sizeof m);
    m.procs = procs;
    m.n_procs = 2; /* the second process has no event: its span stays 0, 0 */
    m.events = ev;
    m.n_events = 3;
    struct lens_report_part *part = lens_report_pass_map(&m, NULL);
    assert_non_null(part);
    struct lens_model_base base = {0};
    struct lens_report r;
    memset(&r, 0, sizeof r);
    assert_int_equal(lens_report_merge(&r, &m, &part, 1, &base), 0); /* merge reads the skeleton's n_procs */
    assert_int_equal(r.n_procs, 2);
    assert_int_equal(r.procs[0].first_ns, 0);
    assert_int_equal(r.procs[0].last_ns, 600);
    assert_int_equal(r.procs[1].first_ns, 0);
    assert_int_equal(r.procs[1].last_ns, 0);
    lens_report_free(&r);
    lens_report_pass_free(part);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_merged_groups_equal_one_model),
      cmocka_unit_test(test_span_start_zero_any_order),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
