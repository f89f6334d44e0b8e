/* The load-time window (lens_model_load_window, tools/reader/window.c) must
 * leave, after the selection, exactly the model a full load leaves after
 * the same selection: for every committed replay scenario of the golden
 * test (tests/golden/traces/) and windows tiny, 1 %, half, everything,
 * empty, since- or until-only and one inside the longest ProxyOp, the same
 * events in the same order with the same fields, payloads (strings by
 * value), accuracy, states, parents and children, the same orphan and bad
 * record counts, threads, CUPTI kernels and GPU clock maps. The GPU
 * analysis runs (linked) on both, before the selection, as the CLI runs it.
 * And the window must prune: a tiny window builds fewer events than the
 * trace holds, and, without CUPTI evidence, fewer KernelLaunches and fewer
 * KernelCh (the GPU analysis reads every KernelCh as the scan's columns,
 * m->kch_cols, not as events). Plus a
 * crafted PXN pair (the replay's PXN parents are in no file): a ProxyOp in
 * the window whose parent Coll, in the other process,
 * is not, in both file orders (the parent's file decided before or after);
 * and damaged copies of a trace (chunks failing their CRC, a cut tail). And
 * every scenario again packed anew with RAW records among its records and
 * now and then one of a size no reader steps over, and a few with bytes of
 * their varint streams garbled (the window's scan and load read packed
 * chunks through their own paths, lens_scan_packed_chunk and
 * lens_build_packed_chunk). And the same on fresh traces written with INDEX
 * chunks (fresh_sets: the window's plan leaves chunks unread there, some
 * read light for the KernelCh columns), whose every window's columns must
 * equal the window's read whole, row by row; a PXN parent the plan left
 * unread (pxn_pair_planned: read again without plans). */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "cli/filter.h"
#include "lens_chunk.h"
#include "lens_pack.h"

#include <zstd.h>
#include "analyses.h"
#include "cli/cache.h"
#include "export/load_traces.h"
#include "gpu/gpu_analysis.h"
#include "reader_test_util.h"
#include "golden_sets.h"
#include "trace_builder.h"

static int failures;
#define CHECK(c, ...)                                \
  do {                                               \
    if (!(c)) {                                      \
      fprintf(stderr, "FAIL %s: ", ctx);             \
      fprintf(stderr, __VA_ARGS__);                  \
      fprintf(stderr, "\n");                         \
      failures++;                                    \
      return;                                        \
    }                                                \
  } while (0)

static int same_str(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

/* The payload's strings compared by value, then zeroed so the rest compares as bytes. */
static int same_payload(int type, struct lens_payload a, struct lens_payload b) {
  const char **pa[5] = {0}, **pb[5] = {0};
  int n = 0;
#define S(f) (pa[n] = (const char **)&a.f, pb[n] = (const char **)&b.f, n++)
  switch (type) {
  case LENS_T_COLL_API: S(coll_api.func), S(coll_api.datatype); break;
  case LENS_T_P2P_API: S(p2p_api.func), S(p2p_api.datatype); break;
  case LENS_T_COLL: S(coll.func), S(coll.datatype), S(coll.algo), S(coll.proto), S(coll.kernel_variant); break;
  case LENS_T_P2P: S(p2p.func), S(p2p.datatype); break;
  case LENS_T_KERNEL_PHASE: S(kernel_phase.name); break;
  case LENS_T_CE_COLL: S(ce_coll.func), S(ce_coll.datatype), S(ce_coll.sync_strategy); break;
  default: break;
  }
#undef S
  for (int i = 0; i < n; i++) {
    if (!same_str(*pa[i], *pb[i])) return 0;
    *pa[i] = *pb[i] = NULL;
  }
  return !memcmp(&a, &b, sizeof a);
}

static void compare(const char *ctx, const struct lens_model *f, const struct lens_model *w) {
  CHECK(f->n_events == w->n_events, "%zu events, window load %zu", f->n_events, w->n_events);
  CHECK(f->n_states == w->n_states, "%zu states, window load %zu", f->n_states, w->n_states);
  CHECK(f->orphan_stops == w->orphan_stops, "orphans %" PRIu64 " vs %" PRIu64, f->orphan_stops, w->orphan_stops);
  CHECK(f->bad_records == w->bad_records, "bad records %" PRIu64 " vs %" PRIu64, f->bad_records, w->bad_records);
  CHECK(f->n_threads == w->n_threads && f->n_procs == w->n_procs && f->n_comms == w->n_comms, "tables differ");
  for (size_t i = 0; i < f->n_threads; i++)
    CHECK(!memcmp(&f->threads[i], &w->threads[i], sizeof f->threads[i]), "thread %zu differs", i);
  for (size_t i = 0; i < f->n_events; i++) {
    const struct lens_event *a = &f->events[i], *b = &w->events[i];
    CHECK(a->id == b->id && a->parent_raw == b->parent_raw && a->context == b->context &&
              a->start_mono_ns == b->start_mono_ns && a->stop_mono_ns == b->stop_mono_ns && a->type == b->type &&
              a->rank == b->rank && a->proc == b->proc && a->thread == b->thread && a->comm == b->comm &&
              a->parent == b->parent && a->first_child == b->first_child && a->next_sibling == b->next_sibling &&
              a->flags == b->flags && a->session == b->session && a->first_state == b->first_state &&
              a->n_states == b->n_states,
          "event %zu (%s id 0x%" PRIx64 ") differs: flags 0x%x/0x%x parent %d/%d comm %d/%d stop %" PRIu64
          "/%" PRIu64,
          i, lens_type_name(a->type), a->id, a->flags, b->flags, a->parent, b->parent, a->comm, b->comm,
          a->stop_mono_ns, b->stop_mono_ns);
    CHECK(same_payload(a->type, a->p, b->p), "event %zu (%s) payload differs", i, lens_type_name(a->type));
    CHECK(!memcmp(&a->acc, &b->acc, sizeof a->acc), "event %zu (%s) accuracy differs", i, lens_type_name(a->type));
  }
  for (size_t i = 0; i < f->n_states; i++)
    CHECK(!memcmp(&f->states[i], &w->states[i], sizeof f->states[i]), "state %zu differs", i);
  CHECK(f->n_kernels == w->n_kernels, "%zu CUPTI kernels vs %zu", f->n_kernels, w->n_kernels);
  for (size_t i = 0; i < f->n_kernels; i++)
    CHECK(f->kernels[i].launch_event == w->kernels[i].launch_event &&
              f->kernels[i].start_mono_ns == w->kernels[i].start_mono_ns,
          "kernel %zu differs", i);
  CHECK(f->n_clock_maps == w->n_clock_maps, "%zu clock maps vs %zu", f->n_clock_maps, w->n_clock_maps);
  for (size_t i = 0; i < f->n_clock_maps; i++)
    CHECK(!memcmp(&f->clock_maps[i], &w->clock_maps[i], sizeof f->clock_maps[i]), "clock map %zu differs", i);
}

static uint64_t pruned_scenarios, pruned_launches, pruned_kch;
/* windows loaded with a GPU memo; of them, with sequence flags (from the memo) on a KernelCh kept */
static uint64_t memo_windows, memo_fewer_kch, memo_seq_flagged;
static uint64_t unread_windows, unread_chunks, replanned; /* windows whose plan left chunks unread (INDEX chunks) */
static uint64_t light_windows; /* windows with KernelCh columns whose plan left chunks unread */

static size_t count_type(const struct lens_model *m, int type) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) n += m->events[i].type == type;
  return n;
}

static void one(const char *scen, const char *const *paths, size_t n, const char *name, int have_since, uint64_t since,
                int have_until, uint64_t until) {
  char ctx[256];
  snprintf(ctx, sizeof ctx, "%s, window %s (since %s%" PRIu64 ", until %s%" PRIu64 ")", scen, name,
           have_since ? "" : "-", since, have_until ? "" : "-", until);
  struct lens_filter flt = {.have_since = have_since, .have_until = have_until, .since_ns = since, .until_ns = until};
  struct lens_load_opts full_o = {.no_progress = 1, .no_notes = 1};
  struct lens_model *f = lens_cli_load("test", paths, n, &full_o); /* (stores the files' GPU memo: main) */
  struct lens_load_window win = {.have_since = have_since, .have_until = have_until, .since_ns = since,
                                 .until_ns = until};
  struct lens_load_opts win_o = {.no_progress = 1, .no_notes = 1, .window = &win};
  lens_cache_disable(1); /* the window's own reads: every KernelCh, light where the plan leaves it out */
  struct lens_model *w = lens_cli_load("test", paths, n, &win_o);
  lens_cache_disable(0);
  /* And with the GPU memo the full load stored: its KernelCh only, the
   * maps and sequence flags from the memo. */
  struct lens_load_window mwin = win;
  struct lens_load_opts memo_o = {.no_progress = 1, .no_notes = 1, .window = &mwin};
  struct lens_model *mw = lens_cli_load("test", paths, n, &memo_o);
  if (!f || !w || !mw) {
    fprintf(stderr, "FAIL %s: load failed\n", ctx);
    failures++;
  } else {
    size_t total = f->n_events, built = w->n_events;
    /* Without CUPTI evidence the KernelLaunches outside the window are not
     * built for the GPU analysis (the answer must still be the same). */
    if (!strcmp(name, "tiny") && count_type(w, LENS_T_KERNEL_LAUNCH) < count_type(f, LENS_T_KERNEL_LAUNCH))
      pruned_launches++;
    if (!strcmp(name, "tiny") && count_type(w, LENS_T_KERNEL_CH) < count_type(f, LENS_T_KERNEL_CH)) pruned_kch++;
    if (win.events_total != total) {
      fprintf(stderr, "FAIL %s: events_total %" PRIu64 ", the trace holds %zu\n", ctx, win.events_total, total);
      failures++;
    }
    size_t mw_kch = count_type(mw, LENS_T_KERNEL_CH), f_kch = count_type(f, LENS_T_KERNEL_CH);
    if (lens_filter_apply("test", &flt, f, LENS_FILTER_PART) || lens_filter_apply("test", &flt, w, LENS_FILTER_PART) ||
        lens_filter_apply("test", &flt, mw, LENS_FILTER_PART)) {
      fprintf(stderr, "FAIL %s: selection failed\n", ctx);
      failures++;
    } else {
      compare(ctx, f, w);
      char mctx[300];
      snprintf(mctx, sizeof mctx, "%s, GPU memo", ctx);
      compare(mctx, f, mw);
      if (mwin.kch_no_light) {
        memo_windows++;
        memo_fewer_kch += mw_kch < f_kch;
        for (size_t i = 0; i < mw->n_events; i++)
          if (mw->events[i].acc.flags & (LENS_ACC_NON_MONOTONIC | LENS_ACC_SHARED_TIMER)) {
            memo_seq_flagged++;
            break;
          }
      }
      if (!strcmp(name, "tiny") && built < total) pruned_scenarios++;
      unread_windows += win.chunks_unread > 0, unread_chunks += win.chunks_unread, replanned += win.replanned;
      printf("%-18s %-10s total %6zu built %6zu kept %6zu unread chunks %3" PRIu64 "%s\n", scen, name, total, built,
             f->n_events, win.chunks_unread, win.replanned ? " (read again without plans)" : "");
    }
  }
  lens_model_free(f);
  lens_model_free(w);
  lens_model_free(mw);
  /* The KernelCh columns (the GPU maps' input) of the window read by its
   * plan against those of the window read whole: the same, row by row, and
   * never refused by the events built (that would read it again, silently
   * right). */
  struct lens_load_window pc = {.have_since = have_since, .have_until = have_until, .since_ns = since,
                                .until_ns = until, .kch_columns = 1, .keep_types_parent = 1u << LENS_T_KERNEL_CH,
                                .keep_types_if = 1u << LENS_T_KERNEL_CH | 1u << LENS_T_KERNEL_LAUNCH,
                                .keep_types_cupti = 1u << LENS_T_KERNEL_LAUNCH | 1u << LENS_T_COLL | 1u << LENS_T_P2P};
  struct lens_load_window wc = pc;
  wc.no_plan = 1;
  char err[256];
  f = lens_model_load_window(paths, n, 0, &wc, err, sizeof err, NULL);
  w = lens_model_load_window(paths, n, 0, &pc, err, sizeof err, NULL);
  if (!f || !w) {
    fprintf(stderr, "FAIL %s, columns: load failed\n", ctx);
    failures++;
  } else if (pc.columns_refused || f->n_kch_cols != w->n_kch_cols ||
             (f->n_kch_cols && memcmp(f->kch_cols, w->kch_cols, f->n_kch_cols * sizeof *f->kch_cols))) {
    size_t r = 0;
    while (r < f->n_kch_cols && r < w->n_kch_cols && !memcmp(&f->kch_cols[r], &w->kch_cols[r], sizeof *f->kch_cols))
      r++;
    fprintf(stderr, "FAIL %s, columns: %zu rows read whole, %zu planned (%" PRIu64 " chunks unread%s), first differing %zu\n",
            ctx, f->n_kch_cols, w->n_kch_cols, pc.chunks_unread, pc.columns_refused ? ", refused" : "", r);
    failures++;
  } else {
    light_windows += pc.chunks_unread > 0 && f->n_kch_cols;
  }
  lens_model_free(f);
  lens_model_free(w);
  /* The reader alone, nothing kept whole for an analysis: the ancestors a
   * PXN ProxyOp needs in another process are then asked of it. */
  struct lens_load_window raw = win;
  raw.keep_types = raw.keep_types_if = raw.keep_types_cupti = raw.keep_types_parent = 0;
  f = lens_model_load_ex(paths, n, 0, err, sizeof err, NULL);
  w = lens_model_load_window(paths, n, 0, &raw, err, sizeof err, NULL);
  strncat(ctx, ", reader only", sizeof ctx - strlen(ctx) - 1);
  if (!f || !w || lens_filter_apply("test", &flt, f, LENS_FILTER_PART) ||
      lens_filter_apply("test", &flt, w, LENS_FILTER_PART)) {
    fprintf(stderr, "FAIL %s: load or selection failed\n", ctx);
    failures++;
  } else {
    compare(ctx, f, w);
    unread_windows += raw.chunks_unread > 0, unread_chunks += raw.chunks_unread, replanned += raw.replanned;
  }
  lens_model_free(f);
  lens_model_free(w);
}

/* Windows relative to the scenario's extent (its host's first start to the
 * last start), and one inside its longest ProxyOp. */
static void scenario(const char *scen, const char *const *paths, size_t n) {
  if (!n) return;
  struct lens_load_opts o = {.no_progress = 1};
  struct lens_model *m = lens_cli_load("test", paths, n, &o);
  if (!m) {
    fprintf(stderr, "FAIL %s: does not load\n", scen);
    failures++;
    return;
  }
  uint64_t lo = UINT64_MAX, hi = 0, op_s = 0, op_len = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->start_mono_ns && e->start_mono_ns < lo) lo = e->start_mono_ns;
    if (e->start_mono_ns > hi) hi = e->start_mono_ns;
  }
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type == LENS_T_PROXY_OP && e->stop_mono_ns > e->start_mono_ns &&
        e->stop_mono_ns - e->start_mono_ns > op_len)
      op_len = e->stop_mono_ns - e->start_mono_ns, op_s = e->start_mono_ns - lo;
  }
  lens_model_free(m);
  uint64_t span = hi > lo && lo != UINT64_MAX ? hi - lo : 1;
  const char *const *p = paths;
  one(scen, p, n, "tiny", 1, span / 2, 1, span / 2 + 1000);
  one(scen, p, n, "1%", 1, span / 2, 1, span / 2 + span / 100);
  one(scen, p, n, "half", 1, span / 4, 1, span / 4 + span / 2);
  one(scen, p, n, "everything", 1, 0, 1, UINT64_C(1) << 50);
  one(scen, p, n, "empty", 1, span * 2, 1, span * 3);
  one(scen, p, n, "since-only", 1, span - span / 10, 0, 0);
  one(scen, p, n, "until-only", 0, 0, 1, span / 10);
  one(scen, p, n, "until-0", 0, 0, 1, 0);
  if (op_len > 4) one(scen, p, n, "in-proxyop", 1, op_s + op_len / 3, 1, op_s + op_len / 3 + op_len / 4);
}

#define CTX 0xAAull
/* Process 200 of the PXN pairs, on nodeA: its session, communicator and
 * proxy thread (slot 1), its events chunks indexed when index; its PXN
 * ProxyOp (for process 100) and the op's step. */
#define PXN_OP (LENS_ID_REMOTE | LENS_ID_MAKE(LENS_T_PROXY_OP, 1, 1))
#define PXN_STEP (LENS_ID_REMOTE | LENS_ID_MAKE(LENS_T_PROXY_STEP, 1, 2))
static const struct lens_p_proxy_op pxn_opp = {.pid = 100, .peer = 1, .n_steps = 1, .chunk_size = 8, .is_send = 1};
static const struct lens_p_proxy_step pxn_s0;
static struct tb *pxn_proxy_process(const char *path, int index) {
  struct tb *b = tb_open(path, LENS_PRODUCER_TEST);
  if (index) tb_index(b);
  tb_session(b, 0, 200, "nodeA", 6);
  tb_comm(b, CTX, 0x88, 1, 2, 1, 0, "d");
  tb_thread(b, 1, 201, LENS_ROLE_PROXY, "p", 1, 0);
  return b;
}

/* Process 100 holds GroupApi > CollApi > Coll (5..20); process 200 (same
 * host) runs its PXN ProxyOp (30..500, REMOTE, pid 100, parent = the Coll's
 * id) with a step, and a Coll of its own with the same id value. */
static void pxn_pair(void) {
  char pa[128], pb[128];
  uint64_t gapi = LENS_ID_MAKE(LENS_T_GROUP_API, 1, 1), capi = LENS_ID_MAKE(LENS_T_COLL_API, 1, 2);
  uint64_t coll = LENS_ID_MAKE(LENS_T_COLL, 1, 3);
  struct tb *a = tb_open(rt_path(pa, sizeof pa, "pxn-a.lens"), LENS_PRODUCER_TEST);
  tb_session(a, 0, 100, "nodeA", 6);
  tb_comm(a, CTX, 0x77, 0, 2, 1, 0, "c");
  tb_thread(a, 1, 101, LENS_ROLE_APP, "t", 0, 0);
  tb_events_begin(a, 1);
  tb_start(a, LENS_T_GROUP_API, gapi, 0, CTX, 5, 0, 0, NULL, 0);
  tb_start(a, LENS_T_COLL_API, capi, gapi, CTX, 6, 0, 0, NULL, 0);
  tb_start(a, LENS_T_COLL, coll, capi, CTX, 7, 0, 0, NULL, 0);
  tb_stop(a, coll, 20);
  tb_stop(a, capi, 21);
  tb_stop(a, gapi, 22);
  tb_close(a);
  struct tb *b = pxn_proxy_process(rt_path(pb, sizeof pb, "pxn-b.lens"), 0);
  const uint64_t op = PXN_OP, step = PXN_STEP;
  tb_events_begin(b, 1);
  tb_start(b, LENS_T_COLL, coll, 0, CTX, 8, 0, 0, NULL, 0);
  tb_stop(b, coll, 9);
  tb_start(b, LENS_T_PROXY_OP, op, coll, 0xFFFF0000ull, 30, 0, LENS_START_F_REMOTE, &pxn_opp, sizeof pxn_opp);
  tb_start(b, LENS_T_PROXY_STEP, step, op, 0xFFFF0000ull, 35, 0, 0, &pxn_s0, sizeof pxn_s0);
  tb_stop(b, step, 40);
  tb_stop(b, op, 500);
  tb_close(b);
  const char *ab[2] = {pa, pb}, *ba[2] = {pb, pa};
  one("pxn-pair a,b", ab, 2, "op-only", 1, 200, 0, 0);
  one("pxn-pair b,a", ba, 2, "op-only", 1, 200, 0, 0);
  one("pxn-pair a,b", ab, 2, "until-0", 0, 0, 1, 0);
  /* The ProxyOp kept and its remote ancestors built: its communicator is its parent's. */
  struct lens_load_window win = {.have_since = 1, .since_ns = 200};
  char err[256];
  struct lens_model *m = lens_model_load_window(ab, 2, 0, &win, err, sizeof err, NULL);
  struct lens_filter flt = {.have_since = 1, .since_ns = 200};
  const char *ctx = "pxn-pair";
  if (!m || lens_filter_apply("test", &flt, m, LENS_FILTER_PART)) {
    fprintf(stderr, "FAIL pxn-pair: load\n");
    failures++;
    lens_model_free(m);
    return;
  }
  int32_t i = lens_model_find(m, 1, op);
  /* A scheduler probe beside them: the starvation analysis reads every
   * event, so lens_cli_load loads the whole trace after all (and says so
   * in events_total), and the selection still leaves the same model. */
  char pp[128];
  struct tb *pr = tb_open(rt_path(pp, sizeof pp, "probe.lens"), LENS_PRODUCER_SCHED);
  tb_session(pr, 0, 300, "nodeA", 0);
  struct lens_sched_sample smp = {.start_mono_ns = 25, .end_mono_ns = 45, .host_pid = 200, .host_tid = 201};
  tb_sched(pr, &smp, 1);
  tb_close(pr);
  const char *abp[3] = {pa, pb, pp};
  struct lens_load_window pw = {.have_since = 1, .since_ns = 200};
  struct lens_load_opts po = {.no_progress = 1, .no_notes = 1, .window = &pw};
  struct lens_model *pm = lens_cli_load("test", abp, 3, &po);
  if (!pm || !pm->n_sched || pm->n_events != 6 || pw.events_total != 6) {
    fprintf(stderr, "FAIL pxn-pair + probe: a window with scheduler samples was not loaded whole (%zu events)\n",
            pm ? pm->n_events : 0);
    failures++;
  }
  lens_model_free(pm);
  one("pxn-pair + probe", abp, 3, "op-only", 1, 200, 0, 0);
  if (i < 0 || m->events[i].comm < 0 || m->comms[m->events[i].comm].comm_id != 0x77 ||
      (m->events[i].flags & LENS_EVF_PARENT_MISSING)) {
    fprintf(stderr, "FAIL %s: the PXN ProxyOp lost its parent's communicator\n", ctx);
    failures++;
  }
  lens_model_free(m);
}

/* The PXN pair again, written with INDEX chunks, so that the window's
 * plan leaves the Coll's chunk in process 100 unread (its STARTs stop long
 * before the window; the file's earliest START is in another chunk):
 * process 200's ProxyOp in the window asks for that Coll, and the window is
 * read again without plans (replanned), with the full load's answer. The
 * times are milliseconds: an open set counts 1 ms or more before the
 * window. */
static void pxn_pair_planned(void) {
  char pa[128], pb[128];
  const uint64_t ms = 1000000;
  uint64_t gapi = LENS_ID_MAKE(LENS_T_GROUP_API, 1, 1), capi = LENS_ID_MAKE(LENS_T_COLL_API, 1, 2);
  uint64_t coll = LENS_ID_MAKE(LENS_T_COLL, 1, 3);
  struct tb *a = tb_open(rt_path(pa, sizeof pa, "pxn-plan-a.lens"), LENS_PRODUCER_TEST);
  tb_index(a);
  tb_session(a, 0, 100, "nodeA", 6);
  tb_comm(a, CTX, 0x77, 0, 2, 1, 0, "c");
  tb_thread(a, 1, 101, LENS_ROLE_APP, "t", 0, 0);
  tb_thread(a, 2, 102, LENS_ROLE_APP, "u", 0, 0);
  for (uint64_t i = 1; i <= 4; i++) { /* slot 2: the earliest START, then now and then an open set */
    tb_events_begin(a, 2);
    uint64_t g = LENS_ID_MAKE(LENS_T_GROUP_API, 2, i), at = i == 1 ? ms / 2 : i * 10 * ms;
    tb_start(a, LENS_T_GROUP_API, g, 0, CTX, at, 0, 0, NULL, 0);
    tb_stop(a, g, at + 1000);
    if (i == 1) { /* slot 1: the Coll, long before the window */
      tb_events_begin(a, 1);
      tb_start(a, LENS_T_GROUP_API, gapi, 0, CTX, 1 * ms, 0, 0, NULL, 0);
      tb_start(a, LENS_T_COLL_API, capi, gapi, CTX, 2 * ms, 0, 0, NULL, 0);
      tb_start(a, LENS_T_COLL, coll, capi, CTX, 3 * ms, 0, 0, NULL, 0);
      tb_stop(a, coll, 4 * ms);
      tb_stop(a, capi, 4 * ms + 1);
      tb_stop(a, gapi, 4 * ms + 2);
    }
  }
  tb_close(a);
  struct tb *b = pxn_proxy_process(rt_path(pb, sizeof pb, "pxn-plan-b.lens"), 1);
  const uint64_t op = PXN_OP, step = PXN_STEP;
  tb_events_begin(b, 1);
  tb_start(b, LENS_T_PROXY_OP, op, coll, 0xFFFF0000ull, 60 * ms, 0, LENS_START_F_REMOTE, &pxn_opp, sizeof pxn_opp);
  tb_start(b, LENS_T_PROXY_STEP, step, op, 0xFFFF0000ull, 61 * ms, 0, 0, &pxn_s0, sizeof pxn_s0);
  tb_stop(b, step, 62 * ms);
  tb_stop(b, op, 63 * ms);
  tb_close(b);
  const char *ab[2] = {pa, pb}, *ba[2] = {pb, pa};
  uint64_t before = replanned;
  one("pxn-pair planned a,b", ab, 2, "op-only", 1, 55 * ms, 0, 0);
  one("pxn-pair planned b,a", ba, 2, "op-only", 1, 55 * ms, 0, 0);
  if (replanned - before != 4) { /* both orders, both loads (kept types and the reader alone) */
    fprintf(stderr, "FAIL pxn-pair planned: read again without plans %" PRIu64 " times of 4\n", replanned - before);
    failures++;
  }
  /* A window the Coll is in: planned, nothing asked that it left out. */
  before = replanned;
  uint64_t unread = unread_windows;
  one("pxn-pair planned a,b", ab, 2, "coll", 1, 2 * ms, 1, 3 * ms);
  if (replanned != before || unread_windows == unread) {
    fprintf(stderr, "FAIL pxn-pair planned: the Coll's window read again %" PRIu64 ", left chunks unread %" PRIu64
            "\n", replanned - before, unread_windows - unread);
    failures++;
  }
}

/* Damaged copies (bytes flipped past the file header: chunks skipped for
 * their CRC, a cut tail): the window load must still leave what the full
 * load leaves. */
static void damaged(const char *root) {
  char src[1024], dst[128], other[1024];
  snprintf(src, sizeof src, "%s/all/node0.lens", root);
  snprintf(other, sizeof other, "%s/all/node1.lens", root);
  size_t len;
  uint8_t *orig = tb_read_file(src, &len);
  if (!orig || len < 4096) {
    fprintf(stderr, "FAIL damaged: no %s\n", src);
    failures++;
    free(orig);
    return;
  }
  srand(7);
  for (int k = 0; k < 12; k++) {
    uint8_t *b = malloc(len);
    memcpy(b, orig, len);
    for (int j = 0; j < 1 + k % 4; j++) b[64 + (size_t)rand() % (len - 64)] ^= (uint8_t)(1 + rand() % 255);
    size_t cut = k % 3 == 2 ? len - (size_t)rand() % (len / 2) : len;
    tb_write_file(rt_path(dst, sizeof dst, "damaged.lens"), b, cut);
    free(b);
    const char *p[2] = {dst, other};
    char name[32];
    snprintf(name, sizeof name, "damaged-%d", k);
    one(name, p, 2, "1%", 1, 5000000, 1, 5100000);
    one(name, p, 2, "half", 1, 2000000, 1, 12000000);
  }
  free(orig);
}

/* A copy of trace src whose event chunks (EVENTS, or EVENTS_PACKED as the
 * plugin writes them by default) are packed again (the varint stream, no
 * zstd) with two changes the packer writes as RAW records: every 7th STOP
 * gets aux 1 (the reader ignores a STOP's aux), and every 3rd chunk a
 * 12-byte record before its last two (not a multiple of 8: every reader
 * ends that chunk there, counting the rest as bad records). garble != 0:
 * in about one chunk in three one byte of the varint stream changed
 * (seeded by garble; the chunk's CRC made good again), so that the decoder
 * meets malformed records. 0, or -1. */
/* Whether repack adds records of an odd size (the fresh sets' copies add none: their INDEX chunks, copied, must
 * still match their chunks' counts, so that the window plans them with RAW records among their records). */
static int repack_odd = 1;

static int repack(const char *src, const char *dst, uint64_t *odd_records, unsigned garble) {
  size_t len;
  uint8_t *in = tb_read_file(src, &len);
  FILE *f = in && len >= sizeof(struct lens_file_hdr) ? fopen(dst, "wb") : NULL;
  if (!f) {
    free(in);
    return -1;
  }
  fwrite(in, sizeof(struct lens_file_hdr), 1, f);
  static struct lens_pack_enc e;
  static const uint8_t zero[8];
  int rc = 0;
  size_t off = sizeof(struct lens_file_hdr), chunks = 0, stops = 0;
  while (len - off >= sizeof(struct lens_chunk_hdr)) {
    struct lens_chunk_hdr h;
    memcpy(&h, in + off, sizeof h);
    size_t need = h.payload_len + lens_chunk_padding(h.payload_len);
    if (need > len - off - sizeof h) break;
    const uint8_t *p = in + off + sizeof h;
    off += sizeof h + need;
    /* The chunk's fixed records: as they are, or unpacked. */
    struct lens_events_hdr eh;
    struct lens_packed_hdr ph;
    uint8_t *recs = NULL, *stream = NULL;
    size_t n_recs = 0;
    if (h.type == LENS_CHUNK_EVENTS && h.payload_len >= sizeof eh) {
      memcpy(&eh, p, sizeof eh);
      n_recs = h.payload_len - sizeof eh;
      recs = malloc(n_recs + 8);
      memcpy(recs, p + sizeof eh, n_recs);
    } else if (h.type == LENS_CHUNK_EVENTS_PACKED && h.payload_len >= sizeof ph) {
      memcpy(&ph, p, sizeof ph);
      const uint8_t *body = p + sizeof ph;
      size_t body_len = h.payload_len - sizeof ph;
      if (ph.codec == LENS_PACK_CODEC_ZSTD) {
        stream = malloc(ph.body_bytes + 1);
        body_len = ZSTD_decompress(stream, ph.body_bytes, body, body_len);
        body = stream;
        if (ZSTD_isError(body_len)) rc = -1;
      }
      recs = malloc(ph.raw_bytes + 8);
      eh = (struct lens_events_hdr){ph.slot, 0};
      if (!rc) eh.count = lens_unpack(body, body_len, ph.count, recs, ph.raw_bytes, &n_recs);
    } else {
      fwrite(p - sizeof h, sizeof h + need, 1, f);
      continue;
    }
    free(stream);
    size_t cap = lens_pack_bound(n_recs + 16);
    struct lens_packed_hdr nph = {.slot = eh.slot, .codec = LENS_PACK_CODEC_VARINT};
    uint8_t *out = malloc(sizeof nph + cap);
    uint64_t *rec = malloc(1u << 16), odd_rec[2] = {0}; /* aligned room for a record (at most 64 KiB) */
    lens_pack_begin(&e, out + sizeof nph, cap);
    size_t at = 0;
    for (uint32_t i = 0; i < eh.count && n_recs - at >= sizeof(struct lens_rec_hdr); i++) {
      struct lens_rec_hdr rh;
      memcpy(&rh, recs + at, sizeof rh);
      if (rh.size < sizeof rh || rh.size > n_recs - at) break;
      memcpy(rec, recs + at, rh.size);
      at += rh.size;
      struct lens_rec_hdr *r = (struct lens_rec_hdr *)rec;
      if (r->kind == LENS_REC_STOP && ++stops % 7 == 0) r->aux = 1;
      lens_pack_rec(&e, r);
      if (repack_odd && chunks % 3 == 1 && i + 3 == eh.count) {
        struct lens_rec_hdr odd = {.size = 12, .kind = LENS_REC_STOP};
        memcpy(odd_rec, &odd, sizeof odd);
        lens_pack_rec(&e, (const struct lens_rec_hdr *)odd_rec);
        (*odd_records)++;
      }
    }
    chunks++;
    size_t body_len = lens_pack_len(&e, out + sizeof nph);
    if (garble && body_len && (garble = garble * 1103515245u + 12345u) % 3 == 0)
      out[sizeof nph + (garble >> 8) % body_len] ^= (uint8_t)(1 + (garble >> 16) % 255);
    nph.count = e.count;
    nph.raw_bytes = (uint32_t)e.raw_bytes;
    nph.body_bytes = (uint32_t)lens_pack_len(&e, out + sizeof nph);
    memcpy(out, &nph, sizeof nph);
    uint32_t plen = (uint32_t)sizeof nph + nph.body_bytes;
    struct lens_chunk_hdr nh;
    lens_chunk_hdr_init(&nh, LENS_CHUNK_EVENTS_PACKED, h.session, h.seq, out, plen);
    fwrite(&nh, sizeof nh, 1, f);
    fwrite(out, plen, 1, f);
    fwrite(zero, lens_chunk_padding(plen), 1, f);
    if (e.overflow) rc = -1;
    free(out);
    free(rec);
    free(recs);
  }
  fclose(f);
  free(in);
  return rc;
}

/* scenario() on a packed copy of the scenario's traces. */
static uint64_t odd_records;
static void packed_scenario(const char *dir, const char *scen, unsigned garble) {
  char out[512], name[256], src[2048], dst[1024];
  snprintf(name, sizeof name, "packed-%s-%u", scen, garble);
  rt_path(out, sizeof out, name);
  mkdir(out, 0700);
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l <= 5 || strcmp(de->d_name + l - 5, ".lens")) continue;
    snprintf(src, sizeof src, "%s/%s", dir, de->d_name);
    snprintf(dst, sizeof dst, "%s/%s", out, de->d_name);
    if (repack(src, dst, &odd_records, garble)) {
      fprintf(stderr, "FAIL %s: cannot repack %s\n", name, src);
      failures++;
    }
  }
  closedir(d);
  if (garble) snprintf(name, sizeof name, "%s garbled %u", scen, garble);
  else snprintf(name, sizeof name, "%s packed", scen);
  char *paths[GOLDEN_SET_MAX_FILES];
  size_t n = golden_set_files(out, paths, GOLDEN_SET_MAX_FILES);
  scenario(name, (const char *const *)paths, n);
  for (size_t i = 0; i < n; i++) free(paths[i]);
}

/* A crafted trace of one process (session 0, one communicator, an
 * application thread on slot 1), to be filled with events and closed. */
static struct tb *crafted_open(char *plain, size_t len, const char *file, uint32_t pid, const char *host,
                               uint64_t comm_id, const char *comm) {
  struct tb *t = tb_open(rt_path(plain, len, file), LENS_PRODUCER_TEST);
  tb_session(t, 0, pid, host, 6);
  tb_comm(t, CTX, comm_id, 0, 1, 1, 0, comm);
  tb_thread(t, 1, pid + 1, LENS_ROLE_APP, "t", 0, 0);
  return t;
}

/* The crafted trace packed anew (repack: its event chunks as EVENTS_PACKED,
 * odd records among them). 0, or -1 counted as a failure. */
static int crafted_packed(const char *ctx, const char *plain, char *packed, size_t len, const char *file) {
  uint64_t odd = 0;
  if (!repack(plain, rt_path(packed, len, file), &odd, 0)) return 0;
  fprintf(stderr, "FAIL %s: cannot repack\n", ctx);
  failures++;
  return -1;
}

/* The load skips a packed chunk the scan's decisions keep nothing of
 * (lens_win_chunk_skip): what a read of it leaves in the model all the
 * same must stay. One process, its event chunks packed by repack():
 *   0 (slot 1): GroupApi 10..11 (the origin, kept), Coll K starts 1100 (in the window)
 *   1 (slot 2, no THREAD chunk: its placeholder thread is made by this chunk
 *     alone): two Colls 20..50 and, from repack, a record of an odd size
 *     before the last two (3 bad records): skipped
 *   2 (slot 1): a Coll 60..70 and K's STOP at 1500: read (K's stop)
 *   3 (slot 1): a Coll 80..90 and a START of an unknown type (a bad record): skipped
 *   4 (slot 1): a STOP of an id never started (an orphan) and a Coll (and
 *     repack's odd record after the first: 3 bad records): read
 * Window: since 1000, until 2000 after the origin. The windowed model after
 * the selection must be the full one's (K's stop, the bad records, the
 * orphan, the threads: compare()), and exactly chunks 1 and 3 skipped. */
static void skip_chunks(void) {
  const char *ctx = "skip-chunks";
  char plain[128], packed[128];
  struct tb *t = crafted_open(plain, sizeof plain, "skip-plain.lens", 400, "nodeS", 0x99, "s");
  uint64_t g = LENS_ID_MAKE(LENS_T_GROUP_API, 1, 1), k = LENS_ID_MAKE(LENS_T_COLL, 1, 2);
  uint64_t c[6];
  for (int i = 0; i < 6; i++) c[i] = LENS_ID_MAKE(LENS_T_COLL, 1, 10 + (uint64_t)i);
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_GROUP_API, g, 0, CTX, 10, 0, 0, NULL, 0);
  tb_stop(t, g, 11);
  tb_start(t, LENS_T_COLL, k, 0, CTX, 1100, 0, 0, NULL, 0);
  tb_events_begin(t, 2);
  tb_start(t, LENS_T_COLL, c[0], 0, CTX, 20, 0, 0, NULL, 0);
  tb_stop(t, c[0], 30);
  tb_start(t, LENS_T_COLL, c[1], 0, CTX, 40, 0, 0, NULL, 0);
  tb_stop(t, c[1], 50);
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_COLL, c[2], 0, CTX, 60, 0, 0, NULL, 0);
  tb_stop(t, c[2], 70);
  tb_stop(t, k, 1500);
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_COLL, c[3], 0, CTX, 80, 0, 0, NULL, 0);
  tb_stop(t, c[3], 90);
  tb_start(t, LENS_T_COUNT + 3, c[4], 0, CTX, 85, 0, 0, NULL, 0);
  tb_events_begin(t, 1);
  tb_stop(t, LENS_ID_MAKE(LENS_T_COLL, 1, 99), 95);
  tb_start(t, LENS_T_COLL, c[5], 0, CTX, 96, 0, 0, NULL, 0);
  tb_stop(t, c[5], 97);
  tb_close(t);
  if (crafted_packed(ctx, plain, packed, sizeof packed, "skip-packed.lens")) return;
  const char *p[1] = {packed};
  one(ctx, p, 1, "middle", 1, 1000, 1, 2000);
  /* The trace holds what the skip must keep, and the skip happened. */
  char err[256];
  struct lens_model *f = lens_model_load_ex(p, 1, 0, err, sizeof err, NULL);
  struct lens_load_window win = {.have_since = 1, .since_ns = 1000, .have_until = 1, .until_ns = 2000};
  struct lens_model *w = lens_model_load_window(p, 1, 0, &win, err, sizeof err, NULL);
  if (!f || !w) {
    fprintf(stderr, "FAIL %s: load failed\n", ctx);
    failures++;
  } else {
    int32_t ki = lens_model_find(w, 0, k);
    if (f->bad_records != 7 || f->orphan_stops != 1 || f->n_threads != 2 || ki < 0 ||
        w->events[ki].stop_mono_ns != 1500 || win.chunks_skipped != 2) {
      fprintf(stderr,
              "FAIL %s: %" PRIu64 " bad records (7), %" PRIu64 " orphans (1), %zu threads (2), K %s, "
              "%" PRIu64 " chunks skipped (2)\n",
              ctx, f->bad_records, f->orphan_stops, f->n_threads, ki < 0 ? "not built" : "built",
              win.chunks_skipped);
      failures++;
    }
    if (w) {
      /* The window's own model, before any selection, counts the same. */
      if (w->bad_records != f->bad_records || w->orphan_stops != f->orphan_stops || w->n_threads != f->n_threads) {
        fprintf(stderr, "FAIL %s: the window's load counts differently\n", ctx);
        failures++;
      }
    }
  }
  lens_model_free(f);
  lens_model_free(w);
}

/* A KernelCh whose records come before its START in the file (crafted: a
 * writer keeps a channel's records on one thread, in order): chunk 1 holds
 * a KernelChStop (22) and the STOP of K, chunk 2 K's START, chunk 3 another
 * KernelChStop of K. The load carries chunk 1's records to the end of the
 * file, and with them every later record of K (chunk 3's), and applies
 * them there in file order: K's stop pTimer and stop notice are chunk 1's
 * (5000 at 300). The window leaves K out, and the row the scan makes of it
 * for the GPU analysis (m->kch_cols) must hold what the full load's event
 * holds. Packed and unpacked. */
static void kch_records_first(void) {
  const char *ctx = "kch-records-first";
  char plain[128], packed[128];
  struct tb *t = crafted_open(plain, sizeof plain, "kchfirst-plain.lens", 402, "nodeK", 0x9a, "k");
  tb_thread(t, 2, 404, LENS_ROLE_PROXY, "proxy", 0, 0);
  uint64_t c = LENS_ID_MAKE(LENS_T_COLL, 1, 1), k = LENS_ID_MAKE(LENS_T_KERNEL_CH, 2, 1);
  uint64_t late = LENS_ID_MAKE(LENS_T_COLL, 1, 2);
  struct lens_p_coll pc = {.launch_id = 77};
  struct lens_p_kernel_ch pk = {.start_gpu_ns = 4000, .channel = 3};
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_COLL, c, 0, CTX, 100, 0, 0, &pc, sizeof pc);
  tb_stop(t, c, 110);
  tb_events_begin(t, 2);
  tb_state(t, k, 22, 300, 5000, 1);
  tb_stop(t, k, 310);
  tb_events_begin(t, 2);
  tb_start(t, LENS_T_KERNEL_CH, k, c, CTX, 200, 0, 0, &pk, sizeof pk);
  tb_events_begin(t, 2);
  tb_state(t, k, 22, 400, 6000, 1);
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_COLL, late, 0, CTX, 5000, 0, 0, &pc, sizeof pc); /* the window's */
  tb_stop(t, late, 5010);
  tb_close(t);
  if (crafted_packed(ctx, plain, packed, sizeof packed, "kchfirst-packed.lens")) return;
  const char *files[2] = {plain, packed};
  for (int i = 0; i < 2; i++) {
    const char *p[1] = {files[i]};
    struct lens_load_opts full_o = {.no_progress = 1, .no_notes = 1};
    struct lens_model *f = lens_cli_load("test", p, 1, &full_o);
    /* the window's load as the CLI asks it, its columns kept (lens_cli_load frees them after the GPU analysis) */
    struct lens_load_window win = {.have_since = 1, .since_ns = 4800, .have_until = 1, .until_ns = 5000,
                                   .keep_types_parent = 1u << LENS_T_KERNEL_CH, .kch_columns = 1};
    char err[256];
    struct lens_model *w = lens_model_load_window(p, 1, 0, &win, err, sizeof err, NULL);
    int32_t fk = f ? lens_model_find(f, 0, k) : -1;
    const struct lens_kch_col *row = NULL;
    for (size_t r = 0; w && r < w->n_kch_cols; r++)
      if (w->kch_cols[r].id == k) row = &w->kch_cols[r];
    if (fk < 0 || !row || lens_model_find(w, 0, k) >= 0) {
      fprintf(stderr, "FAIL %s (%s): K %s in the full load, its row %s, %s in the window's\n", ctx,
              i ? "packed" : "plain", fk < 0 ? "missing" : "found", row ? "made" : "missing",
              w && lens_model_find(w, 0, k) >= 0 ? "built" : "not built");
      failures++;
    } else {
      const struct lens_event *e = &f->events[fk];
      uint64_t notice = lens_gpu_kch_stop_notice(f, e);
      if (e->p.kernel_ch.stop_gpu_ns != 5000 || notice != 300 || row->stop_gpu != e->p.kernel_ch.stop_gpu_ns ||
          row->stop_notice != notice || row->start_gpu != 4000 || row->channel != 3 || row->launch_id != 77) {
        fprintf(stderr,
                "FAIL %s (%s): full load stop pTimer %" PRIu64 " notice %" PRIu64 " (5000, 300); the row's %" PRIu64
                " %" PRIu64 ", start %" PRIu64 ", channel %d, launch %" PRIu64 "\n",
                ctx, i ? "packed" : "plain", e->p.kernel_ch.stop_gpu_ns, notice, row->stop_gpu, row->stop_notice,
                row->start_gpu, row->channel, row->launch_id);
        failures++;
      }
    }
    lens_model_free(f);
    lens_model_free(w);
  }
}

/* One golden trace set: its windows, its packed copy, and for a few
 * scenarios malformed packed streams (CRC good), a few seeds. */
static void memo_refused(const char *const *paths, size_t n);
static void golden_set(const char *name, const char *dir, const char *const *paths, size_t n, void *ctx) {
  (void)ctx;
  scenario(name, paths, n);
  if (!strcmp(name, "all")) memo_refused(paths, n);
  packed_scenario(dir, name, 0);
  if (!strcmp(name, "all") || !strcmp(name, "overrun") || !strcmp(name, "pxn"))
    for (unsigned seed = 1; seed <= 4; seed++) packed_scenario(dir, name, seed);
}

/* Fresh traces, written with INDEX chunks (the committed golden traces
 * predate them): with those the window reads only the chunks its plan
 * names (window.c, plan_files), and the answers must not change. Replay
 * scenarios long enough for many chunks a thread (zstd, fixed records, PXN
 * parents, ring overruns: those files are read whole, a killed hang), and
 * lens-gen-job's jobs in both KernelCh layouts with short frames. Each set
 * must have a window whose plan left chunks unread (but overrun's). */
static void fresh_sets(void) {
  static const struct { const char *name, *env, *cmd; int unread; } r[] = {
      {"plan-all", "", "replay --quiet --scenario all --nodes 2 --ranks-per-node 2 --iters 12", 1},
      {"plan-fixed", "NCCL_LENS_COMPRESS=none", "replay --quiet --scenario all --nodes 2 --iters 6", 1},
      {"plan-pxn", "", "replay --quiet --scenario pxn --nodes 2 --ranks-per-node 2 --iters 12", 1},
      {"plan-graph", "", "replay --quiet --scenario graph --nodes 2 --iters 12", 1},
      {"plan-phases", "", "replay --quiet --scenario phases --nodes 2 --iters 12", 1},
      {"plan-overrun", "", "replay --quiet --scenario overrun --nodes 2 --iters 4", 0},
      {"plan-hang-proxy", "", "replay --quiet --scenario hang-proxy --nodes 2 --iters 6 --hang-exit-after 1", 0},
      {"plan-gen", "", "gen --ranks 8 --hosts 2 --events 200000 --frame-ms 5", 1},
      {"plan-gen-2.31", "", "gen --ranks 8 --hosts 2 --events 200000 --frame-ms 5 --profiler-thread", 1},
  };
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
    char dir[256], cmd[1024];
    rt_path(dir, sizeof dir, r[i].name);
    if (!strncmp(r[i].cmd, "gen ", 4))
      snprintf(cmd, sizeof cmd, "%s/bin/lens-gen-job -o %s %s >/dev/null 2>&1", LENS_BUILD_DIR, dir, r[i].cmd + 4);
    else
      snprintf(cmd, sizeof cmd, "%s %s/bin/nccl-lens %s --out %s >/dev/null 2>&1", r[i].env, LENS_BUILD_DIR,
               r[i].cmd, dir);
    int rc = system(cmd);
    if (!strncmp(r[i].name, "plan-hang", 9) ? rc == -1 : rc != 0) {
      fprintf(stderr, "FAIL %s: %s exited %d\n", r[i].name, cmd, rc);
      failures++;
      continue;
    }
    char *paths[GOLDEN_SET_MAX_FILES];
    size_t n = golden_set_files(dir, paths, GOLDEN_SET_MAX_FILES);
    uint64_t before = unread_windows;
    scenario(r[i].name, (const char *const *)paths, n);
    if (r[i].unread && unread_windows == before) {
      fprintf(stderr, "FAIL %s: no window's plan left a chunk unread (%zu files)\n", r[i].name, n);
      failures++;
    }
    printf("%s: %" PRIu64 " windows left chunks unread\n", r[i].name, unread_windows - before);
    if (i < 2) { /* packed anew, RAW records among them (STOPs with an aux no packed record holds) */
      before = unread_windows;
      repack_odd = 0;
      packed_scenario(dir, r[i].name, 0);
      repack_odd = 1;
      if (unread_windows == before) {
        fprintf(stderr, "FAIL %s packed: no window's plan left a chunk unread\n", r[i].name);
        failures++;
      }
    }
    for (size_t k = 0; k < n; k++) free(paths[k]);
  }
}

/* A memo that is not the model's (another process's pid, cut short, a
 * thread's slot changed) is refused (1), never applied. */
static void memo_refused(const char *const *paths, size_t n) {
  const char *ctx = "GPU memo refused";
  struct lens_load_opts o = {.no_progress = 1, .no_notes = 1};
  lens_cache_disable(1);
  struct lens_model *m = lens_cli_load("test", paths, n, &o);
  lens_cache_disable(0);
  void *blob = NULL;
  size_t len = 0;
  char err[256];
  if (!m || lens_gpu_memo_save(m, &blob, &len) != 0 || !m->n_clock_maps) {
    fprintf(stderr, "FAIL %s: no memo of a trace with clock maps\n", ctx);
    failures++;
    lens_model_free(m);
    free(blob);
    return;
  }
  uint8_t *b = blob;
  int whole = lens_analyze_gpu_memo(m, b, len, err, sizeof err);
  int cut = lens_analyze_gpu_memo(m, b, len - 1, err, sizeof err);
  uint32_t pid; /* the first process's pid, after the 24-byte header */
  memcpy(&pid, b + 24, 4);
  pid ^= 1;
  memcpy(b + 24, &pid, 4);
  int other_pid = lens_analyze_gpu_memo(m, b, len, err, sizeof err);
  pid ^= 1;
  memcpy(b + 24, &pid, 4);
  uint32_t slot; /* the first map's thread slot: after the pids, the map's int32 thread */
  size_t at = 24 + 4 * m->n_procs + 4;
  memcpy(&slot, b + at, 4);
  slot += 1;
  memcpy(b + at, &slot, 4);
  int other_slot = lens_analyze_gpu_memo(m, b, len, err, sizeof err);
  if (whole != 0 || cut != 1 || other_pid != 1 || other_slot != 1) {
    fprintf(stderr, "FAIL %s: its own memo %d (0), cut %d, another pid %d, another slot %d (1 each)\n", ctx, whole, cut,
            other_pid, other_slot);
    failures++;
  }
  printf("GPU memo of %zu clock maps, %zu bytes: refused when cut, of another pid or thread\n", m->n_clock_maps, len);
  free(blob);
  lens_model_free(m);
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : LENS_SOURCE_DIR "/tests/golden/traces";
  /* Every full load stores its files' GPU memo in a cache of the test's
   * own, however small the files; every window is loaded with and without. */
  char cache_dir[256];
  setenv("NCCL_LENS_CACHE_DIR", rt_path(cache_dir, sizeof cache_dir, "gpu-cache"), 1);
  setenv("NCCL_LENS_CACHE_MIN_BYTES", "0", 1);
  unsetenv("NCCL_LENS_CACHE");
  if (golden_sets_each(root, golden_set, NULL) < 0) return 1;
  pxn_pair();
  pxn_pair_planned();
  skip_chunks();
  kch_records_first();
  damaged(root);
  if (argc <= 1) fresh_sets();
  rt_cleanup();
  if (!odd_records) {
    fprintf(stderr, "FAIL: the packed copies hold no record of an odd size\n");
    failures++;
  }
  if (!pruned_launches) {
    fprintf(stderr, "FAIL: no scenario's tiny window left out a KernelLaunch\n");
    failures++;
  }
  if (!pruned_kch) {
    fprintf(stderr, "FAIL: no scenario's tiny window left out a KernelCh\n");
    failures++;
  }
  if (argc <= 1 && !light_windows) {
    fprintf(stderr, "FAIL: no planned window had KernelCh columns\n");
    failures++;
  }
  if (!memo_windows || !memo_fewer_kch || !memo_seq_flagged) {
    fprintf(stderr, "FAIL: %" PRIu64 " windows loaded with a GPU memo, %" PRIu64 " of them with fewer KernelCh, %" PRIu64
            " with sequence flags from it (each must be some)\n", memo_windows, memo_fewer_kch, memo_seq_flagged);
    failures++;
  }
  if (!pruned_scenarios) {
    fprintf(stderr, "FAIL: no scenario's tiny window built fewer events than its trace holds\n");
    failures++;
  }
  printf("%" PRIu64 " window(s) loaded with a GPU memo, %" PRIu64 " of them with fewer KernelCh than the trace, %" PRIu64
         " with sequence flags from it\n", memo_windows, memo_fewer_kch, memo_seq_flagged);
  printf("%d failure(s); %" PRIu64 " scenario(s) pruned by a tiny window, %" PRIu64 " of their KernelLaunches, %" PRIu64
         " of their KernelCh; %" PRIu64 " window(s) left %" PRIu64 " chunk(s) unread, %" PRIu64
         " read again without plans; %" PRIu64 " planned window(s) with KernelCh columns\n",
         failures, pruned_scenarios, pruned_launches, pruned_kch, unread_windows, unread_chunks, replanned,
         light_windows);
  return failures != 0;
}
