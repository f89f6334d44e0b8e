/* The plugin against the replay's ground truth for an NCCL 2.31.2 run
 * (`nccl-lens replay --api auto --scenario all`: ncclProfiler_v7 is picked
 * first; tagged calls, symmetric kernels, a RAS mask override that turns
 * KernelPhase on after init, the profiler thread reporting KernelCh). Every
 * event type the truth knows of is checked against what the plugin recorded,
 * then the Chrome export, summary and report are checked for every tag,
 * variant and KernelPhase pTimer, with 0 drops. */
#include <dirent.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "../nvtx/mini_json.h"
#include "lensread.h"
#include "nccl-lens/nccl_profiler_abi.h"
#include "../lens_test_file.h"

static char g_dir[256];
static struct mj *g_truth;
static const struct mj *g_proc;
static struct lens_model *g_m;
static char g_trace[512];

static int setup(void **state) {
  (void)state;
  lens_test_tmpdir(g_dir, sizeof g_dir, "v7replay");
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "%s/bin/nccl-lens replay --api auto --scenario all --iters 2 --truth %s/truth.json --out %s --quiet",
           LENS_BUILD_DIR, g_dir, g_dir);
  if (system(cmd) != 0) return -1;
  char tp[512];
  snprintf(tp, sizeof tp, "%s/truth.json", g_dir);
  g_truth = mj_parse_file(tp);
  if (!g_truth) return -1;
  g_proc = mj_at(mj_get(g_truth, "processes"), 0);
  DIR *d = opendir(g_dir);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strstr(de->d_name, ".lens")) snprintf(g_trace, sizeof g_trace, "%s/%s", g_dir, de->d_name);
  if (d) closedir(d);
  const char *paths[1] = {g_trace};
  char err[256];
  g_m = lens_model_load(paths, 1, err, sizeof err, NULL);
  return g_m && g_proc ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  lens_model_free(g_m);
  mj_free(g_truth);
  lens_test_rmtree(g_dir);
  return 0;
}

static const char *nz(const char *s) { return s ? s : ""; }

/* commId hex string of a truth comm index. */
static uint64_t comm_id_of(int comm) {
  const struct mj *c = mj_at(mj_get(g_proc, "comms"), (size_t)comm);
  const char *h = c ? mj_str(c, "commId") : NULL;
  return h ? strtoull(h, NULL, 16) : 0;
}

/* A key of what a Coll/P2p carried: comm, rank, func, tag, variant, algo, proto. */
static void key_of(char *k, size_t n, uint64_t comm_id, int rank, const char *func, uint64_t tag, const char *variant,
                   const char *algo, const char *proto) {
  snprintf(k, n, "%" PRIx64 "|%d|%s|%" PRIu64 "|%s|%s|%s", comm_id, rank, nz(func), tag, nz(variant), nz(algo),
           nz(proto));
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The plugin ran as NCCL 2.31.2 saw it: v7, the version in SESSION, user tags
 * read, nothing dropped or unreadable. */
static void test_session_and_drops(void **state) {
  (void)state;
  assert_int_equal(mj_int(g_proc, "api", 0), 7);
  assert_int_equal(mj_int(g_proc, "nccl_version", 0), 23102);
  assert_int_equal(g_m->n_procs, 1);
  const struct lens_proc *p = &g_m->procs[0];
  assert_int_equal(p->nccl_api_version, 7);
  assert_int_equal(p->lib_version, 23102);
  assert_int_equal(p->lib_kind, LENS_LIB_NCCL);
  assert_true(p->lib_flags & LENS_LIB_F_USER_TAGS);
  assert_int_equal(p->drops.ring_full, 0);
  assert_int_equal(p->drops.no_thread_slot, 0);
  assert_int_equal(g_m->bad_records, 0);
  assert_int_equal(mj_int(g_proc, "truth_drops", -1), 0);
}

/* Coll and P2p: the multiset of (comm, rank, func, tag, variant, algo, proto)
 * the driver emitted equals the one recorded. */
static void test_tasks_match_truth(void **state) {
  (void)state;
  const struct mj *ops = mj_get(g_proc, "ops");
  size_t cap = ops->n + g_m->n_events + 1;
  char **want = calloc(cap, sizeof *want), **got = calloc(cap, sizeof *got);
  size_t nw = 0, ng = 0, tagged = 0, sym = 0;
  for (size_t i = 0; i < ops->n; i++) {
    const struct mj *o = mj_at(ops, i);
    if (!mj_get(o, "emitted") || !mj_get(o, "emitted")->num) continue;
    int p2p = !strcmp(nz(mj_str(o, "kind")), "p2p");
    char k[256];
    uint64_t tag = mj_uint(o, "userTag", 0);
    key_of(k, sizeof k, comm_id_of((int)mj_int(o, "comm", -1)), (int)mj_int(o, "rank", -1), mj_str(o, "func"), tag,
           p2p ? NULL : mj_str(o, "kernelVariant"), p2p ? NULL : mj_str(o, "algo"), p2p ? NULL : mj_str(o, "proto"));
    want[nw++] = strdup(k);
    tagged += tag != 0;
    sym += mj_str(o, "kernelVariant") != NULL;
  }
  for (size_t i = 0; i < g_m->n_events; i++) {
    const struct lens_event *e = &g_m->events[i];
    if ((e->type != LENS_T_COLL && e->type != LENS_T_P2P) || e->comm < 0) continue;
    const struct lens_comm *c = &g_m->comms[e->comm];
    char k[256];
    if (e->type == LENS_T_COLL) {
      key_of(k, sizeof k, c->comm_id, c->rank, e->p.coll.func, e->p.coll.user_tag, e->p.coll.kernel_variant,
             e->p.coll.algo, e->p.coll.proto);
      assert_int_equal(e->p.coll.is_sym_coll, e->p.coll.kernel_variant != NULL);
    } else {
      key_of(k, sizeof k, c->comm_id, c->rank, e->p.p2p.func, e->p.p2p.user_tag, NULL, NULL, NULL);
    }
    got[ng++] = strdup(k);
  }
  assert_true(tagged > 0);
  assert_true(sym > 0);
  assert_int_equal(ng, nw);
  qsort(want, nw, sizeof *want, cmp_str);
  qsort(got, ng, sizeof *got, cmp_str);
  for (size_t i = 0; i < nw; i++) {
    if (strcmp(want[i], got[i])) fail_msg("task %zu: truth %s, trace %s", i, want[i], got[i]);
    free(want[i]);
    free(got[i]);
  }
  free(want);
  free(got);
}

/* CollApi/P2pApi: every tagged call's API event carries its tag (the tagged
 * scenarios run eagerly, one API event per op). */
static void test_api_tags_match_truth(void **state) {
  (void)state;
  const struct mj *ops = mj_get(g_proc, "ops");
  uint64_t want[2][4] = {{0}}, got[2][4] = {{0}}; /* [coll/p2p][tag 0..3] */
  for (size_t i = 0; i < ops->n; i++) {
    const struct mj *o = mj_at(ops, i);
    uint64_t tag = mj_uint(o, "userTag", 0);
    if (!tag || tag > 3) continue;
    want[!strcmp(nz(mj_str(o, "kind")), "p2p")][tag]++;
  }
  for (size_t i = 0; i < g_m->n_events; i++) {
    const struct lens_event *e = &g_m->events[i];
    uint64_t tag = lens_event_user_tag(e);
    if (!tag) continue;
    assert_true(tag <= 3);
    if (e->type == LENS_T_COLL_API) got[0][tag]++;
    if (e->type == LENS_T_P2P_API) got[1][tag]++;
  }
  for (int k = 0; k < 2; k++)
    for (int t = 1; t <= 3; t++) assert_int_equal(got[k][t], want[k][t]);
  assert_true(want[0][1] && want[0][2] && want[0][3] && want[1][2]);
}

static int cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static int64_t truth_profiler_tid(int rank) {
  const struct mj *ranks = mj_get(g_proc, "ranks");
  for (size_t i = 0; i < ranks->n; i++)
    if (mj_int(mj_at(ranks, i), "rank", -1) == rank) return mj_int(mj_at(ranks, i), "profiler_tid", 0);
  return 0;
}

/* KernelCh: one per pseudo-op started, each on the profiler thread the truth
 * names, with the pTimers given; that thread has the profiler role, never the
 * proxy role, and no ProxyOp/ProxyStep/ProxyCtrl. */
static void test_kernel_ch_on_profiler_thread(void **state) {
  (void)state;
  const struct mj *kch = mj_get(g_proc, "kernel_ch");
  size_t started = 0;
  uint64_t *want = calloc(kch->n + 1, sizeof *want), *got = calloc(g_m->n_events + 1, sizeof *got);
  size_t nw = 0, ng = 0;
  for (size_t i = 0; i < kch->n; i++) {
    const struct mj *k = mj_at(kch, i);
    if (!mj_get(k, "started")->num) continue;
    started++;
    assert_string_equal(mj_str(k, "reporter"), "profiler");
    assert_int_equal(mj_int(k, "proxy_tid", -1), truth_profiler_tid((int)mj_int(k, "rank", -1)));
    want[nw++] = mj_uint(k, "start_ptimer", 0) ^ (mj_uint(k, "stop_ptimer", 0) << 1);
  }
  for (size_t i = 0; i < g_m->n_events; i++) {
    const struct lens_event *e = &g_m->events[i];
    const struct lens_thread *th = &g_m->threads[e->thread];
    if (e->type == LENS_T_KERNEL_CH) {
      assert_true(th->roles & LENS_ROLE_PROFILER);
      assert_false(th->roles & LENS_ROLE_PROXY);
      got[ng++] = e->p.kernel_ch.start_gpu_ns ^ (e->p.kernel_ch.stop_gpu_ns << 1);
    }
    if (e->type == LENS_T_PROXY_OP || e->type == LENS_T_PROXY_STEP || e->type == LENS_T_PROXY_CTRL)
      assert_false(th->roles & LENS_ROLE_PROFILER);
  }
  assert_true(started > 0);
  assert_int_equal(ng, started);
  qsort(want, nw, sizeof *want, cmp);
  qsort(got, ng, sizeof *got, cmp);
  assert_memory_equal(want, got, nw * sizeof *want);
  free(want);
  free(got);
}

/* KernelPhase: exactly the phases the driver reported (after the RAS
 * override), each with both pTimers, name and id, under a KernelCh of the
 * same thread. */
static void test_kernel_phases_match_truth(void **state) {
  (void)state;
  const struct mj *ph = mj_get(g_proc, "kernel_phase");
  assert_non_null(ph);
  assert_true(ph->n > 0);
  uint64_t *want = calloc(ph->n + 1, sizeof *want), *got = calloc(g_m->n_events + 1, sizeof *got);
  size_t ng = 0;
  static const char *const names[3] = {"initial_sync", "compute", "final_sync"};
  for (size_t i = 0; i < ph->n; i++) {
    const struct mj *p = mj_at(ph, i);
    want[i] = mj_uint(p, "start_ptimer", 0) * 3 + mj_uint(p, "stop_ptimer", 0) * 7 + (uint64_t)mj_int(p, "phase", 0);
  }
  for (size_t i = 0; i < g_m->n_events; i++) {
    const struct lens_event *e = &g_m->events[i];
    if (e->type != LENS_T_KERNEL_PHASE) continue;
    int id = e->p.kernel_phase.phase_id;
    assert_true(id >= 0 && id < 3);
    assert_string_equal(e->p.kernel_phase.name, names[id]);
    assert_true(e->p.kernel_phase.stop_gpu_ns > e->p.kernel_phase.start_gpu_ns);
    assert_true(e->parent >= 0);
    const struct lens_event *k = &g_m->events[e->parent];
    assert_int_equal(k->type, LENS_T_KERNEL_CH);
    assert_int_equal(k->thread, e->thread);
    assert_int_equal(k->p.kernel_ch.channel, e->p.kernel_phase.channel);
    got[ng++] = e->p.kernel_phase.start_gpu_ns * 3 + e->p.kernel_phase.stop_gpu_ns * 7 + (uint64_t)id;
  }
  assert_int_equal(ng, ph->n);
  qsort(want, ph->n, sizeof *want, cmp);
  qsort(got, ng, sizeof *got, cmp);
  assert_memory_equal(want, got, ng * sizeof *want);
  /* The override came through RAS after init, and was undone. */
  const struct mj *mc = mj_get(g_proc, "mask_changes");
  int ras_on = 0, ras_off = 0;
  for (size_t i = 0; mc && i < mc->n; i++) {
    const struct mj *c = mj_at(mc, i);
    if (strcmp(nz(mj_str(c, "via")), "ras")) continue;
    if (mj_int(c, "new", 0) & LENS_EV_KERNEL_PHASE) ras_on++;
    else ras_off++;
  }
  assert_true(ras_on >= 1 && ras_off >= 1);
  free(want);
  free(got);
}

/* Chrome export, summary and report: every tag name, every variant, every
 * KernelPhase pTimer; the export's op names say "AllReduce, backward". */
static void test_views_show_tags_variants_phases(void **state) {
  (void)state;
  char cmd[1600], out[512];
  const char *views[3] = {"export", "summary", "report"};
  char *text[3];
  for (int v = 0; v < 3; v++) {
    snprintf(out, sizeof out, "%s/%s.out", g_dir, views[v]);
    snprintf(cmd, sizeof cmd, "%s/bin/nccl-lens %s --tag-names 1:forward,2:backward,3:optimizer -o %s %s",
             LENS_BUILD_DIR, views[v], out, g_trace);
    assert_int_equal(system(cmd), 0);
    text[v] = lens_test_slurp(out, NULL);
    assert_non_null(text[v]);
  }
  const char *names[3] = {"forward", "backward", "optimizer"};
  for (int v = 0; v < 3; v++)
    for (int t = 0; t < 3; t++) {
      char want[64];
      snprintf(want, sizeof want, "AllReduce, %s", names[t]);
      if (t == 0) snprintf(want, sizeof want, "AllGather, %s", names[t]);
      if (!strstr(text[v], want)) fail_msg("%s lacks '%s'", views[v], want);
    }
  /* variants: full names in the export, the algorithm part in summary/report */
  const struct mj *ops = mj_get(g_proc, "ops");
  for (size_t i = 0; i < ops->n; i++) {
    const char *kv = mj_str(mj_at(ops, i), "kernelVariant");
    if (!kv) continue;
    char quoted[96], sym[96];
    snprintf(quoted, sizeof quoted, "\"kernel_variant\":\"%s\"", kv);
    snprintf(sym, sizeof sym, "sym %s", strchr(kv, '_') + 1);
    assert_non_null(strstr(text[0], quoted));
    assert_non_null(strstr(text[1], sym));
    assert_non_null(strstr(text[2], sym));
  }
  const struct mj *ph = mj_get(g_proc, "kernel_phase");
  for (size_t i = 0; i < ph->n; i++) {
    char a[64], b[64];
    snprintf(a, sizeof a, "\"start_ptimer_gpu_ns\":%" PRIu64, mj_uint(mj_at(ph, i), "start_ptimer", 0));
    snprintf(b, sizeof b, "\"stop_ptimer_gpu_ns\":%" PRIu64, mj_uint(mj_at(ph, i), "stop_ptimer", 0));
    if (!strstr(text[0], a) || !strstr(text[0], b)) fail_msg("export lacks phase %zu's pTimers", i);
  }
  for (int v = 0; v < 3; v++) free(text[v]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_session_and_drops),
      cmocka_unit_test(test_tasks_match_truth),
      cmocka_unit_test(test_api_tags_match_truth),
      cmocka_unit_test(test_kernel_ch_on_profiler_thread),
      cmocka_unit_test(test_kernel_phases_match_truth),
      cmocka_unit_test(test_views_show_tags_variants_phases),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
