/* ProxySteps folded into their ProxyOp (LENS_LOAD_FOLD_STEPS) give the
 * summary map and the hang diagnosis the answers a full load gives: on
 * every committed replay scenario of the golden test (tests/golden/traces/)
 * and on a crafted trace with a re-posted step, a step whose parent is
 * missing, steps whose parent is 0, an unfinished step with state runs, a
 * step on another thread than its op, a thread that records steps only, a
 * NetPlugin under a step, a graph-captured ancestor, a dup stop, remote and
 * dropped-near marks. Compared field by field: the summary (events, flag
 * counts, rows with their proxy steps and bytes, proxy threads in their
 * order), the hang report (stuck ops' waits, proxy threads' last records),
 * and per ProxyOp and thread what the reader folded against what the full
 * model's step events say. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_test_util.h"
#include "golden_sets.h"
#include "trace_builder.h"

#include "analysis/hang/hang_analysis.h"
#include "analysis/job/job.h"
#include "analysis/summary/summary_analysis.h"
#include "cli/filter.h"
#include "export/load_traces.h"

static int failures;
static size_t steps_seen;      /* step events of the full loads: what was folded */
static uint64_t superseded_seen; /* of them, superseded (re-posted) */
static const char *where;
#define CHECK(c)                                                                   \
  do {                                                                             \
    if (!(c)) {                                                                    \
      fprintf(stderr, "FAIL %s: %s (line %d)\n", where, #c, __LINE__);              \
      failures++;                                                                  \
    }                                                                              \
  } while (0)
#define EQ(a, b) CHECK((a) == (b))

static int streq0(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static void stat_eq(const struct lens_stat *a, const struct lens_stat *b) {
  EQ(a->n, b->n);
  EQ(a->sum, b->sum);
  EQ(a->max, b->max);
}

static void summary_eq(const struct lens_summary *a, const struct lens_summary *b) {
  EQ(a->events, b->events);
  for (int k = 0; k < 32; k++) {
    EQ(a->evf_counts[k], b->evf_counts[k]);
    EQ(a->acc_counts[k], b->acc_counts[k]);
  }
  for (int k = 0; k < 3; k++) EQ(a->time_source[k], b->time_source[k]);
  EQ(a->kernel_ch, b->kernel_ch);
  EQ(a->analyses_ran, b->analyses_ran);
  EQ(a->n_groups, b->n_groups);
  for (size_t i = 0; i < a->n_groups && i < b->n_groups; i++) {
    EQ(a->groups[i].comm_id, b->groups[i].comm_id);
    CHECK(streq0(a->groups[i].name, b->groups[i].name));
    EQ(a->groups[i].nranks, b->groups[i].nranks);
    EQ(a->groups[i].ranks_seen, b->groups[i].ranks_seen);
  }
  EQ(a->n_rows, b->n_rows);
  for (size_t i = 0; i < a->n_rows && i < b->n_rows; i++) {
    const struct lens_sum_row *x = &a->rows[i], *y = &b->rows[i];
    EQ(x->group, y->group);
    CHECK(streq0(x->func, y->func) && streq0(x->algo, y->algo) && streq0(x->proto, y->proto));
    CHECK(streq0(x->kernel_variant, y->kernel_variant));
    EQ(x->user_tag, y->user_tag);
    EQ(x->bucket, y->bucket);
    EQ(x->count, y->count);
    EQ(x->bytes, y->bytes);
    stat_eq(&x->enqueue, &y->enqueue);
    stat_eq(&x->completion, &y->completion);
    EQ(x->completed_bytes, y->completed_bytes);
    stat_eq(&x->gpu_channel, &y->gpu_channel);
    EQ(x->proxy_ops, y->proxy_ops);
    EQ(x->proxy_steps, y->proxy_steps);
    EQ(x->proxy_bytes, y->proxy_bytes);
    EQ(x->graph, y->graph);
  }
  EQ(a->n_ce_rows, b->n_ce_rows);
  for (size_t i = 0; i < a->n_ce_rows && i < b->n_ce_rows; i++) {
    const struct lens_sum_ce_row *x = &a->ce_rows[i], *y = &b->ce_rows[i];
    EQ(x->group, y->group);
    CHECK(streq0(x->func, y->func) && streq0(x->sync_strategy, y->sync_strategy));
    EQ(x->count, y->count);
    EQ(x->bytes, y->bytes);
    stat_eq(&x->enqueue, &y->enqueue);
    stat_eq(&x->ce, &y->ce);
    stat_eq(&x->sync, &y->sync);
    stat_eq(&x->batch, &y->batch);
    EQ(x->batch_bytes, y->batch_bytes);
    EQ(x->batch_ops, y->batch_ops);
  }
  EQ(a->n_proxies, b->n_proxies);
  for (size_t i = 0; i < a->n_proxies && i < b->n_proxies; i++) {
    const struct lens_sum_proxy *x = &a->proxies[i], *y = &b->proxies[i];
    EQ(x->thread, y->thread); /* the same threads in the same order */
    EQ(x->ops, y->ops);
    EQ(x->steps, y->steps);
    EQ(x->bytes, y->bytes);
    for (int k = 0; k < 4; k++) EQ(x->state_ns[k], y->state_ns[k]);
    EQ(x->first_ns, y->first_ns);
    EQ(x->last_ns, y->last_ns);
    EQ(x->span_ns, y->span_ns);
  }
}

static void wait_eq(const struct lens_hang_wait *x, const struct lens_hang_wait *y) {
  EQ(x->rank, y->rank);
  EQ(x->peer, y->peer);
  EQ(x->channel, y->channel);
  EQ(x->step, y->step);
  EQ(x->state, y->state);
  EQ(x->is_send, y->is_send);
  EQ(x->step_started, y->step_started);
  EQ(x->state_since_ns, y->state_since_ns);
  EQ(x->state_last_ns, y->state_last_ns);
  EQ(x->state_repeats, y->state_repeats);
  EQ(x->proc, y->proc);
  EQ(x->thread, y->thread);
}

static void hang_eq(const struct lens_hang_report *a, const struct lens_hang_report *b) {
  EQ(a->n_comms, b->n_comms);
  EQ(a->n_stuck_comms, b->n_stuck_comms);
  EQ(a->n_frozen, b->n_frozen);
  for (size_t k = 0; k < a->n_comms && k < b->n_comms; k++) {
    const struct lens_hang_comm *x = &a->comms[k], *y = &b->comms[k];
    EQ(x->comm_id, y->comm_id);
    CHECK(!strcmp(x->name, y->name));
    EQ(x->nranks, y->nranks);
    EQ(x->n_funcs, y->n_funcs);
    for (size_t f = 0; f < x->n_funcs && f < y->n_funcs; f++) CHECK(!strcmp(x->funcs[f], y->funcs[f]));
    EQ(x->stuck, y->stuck);
    EQ(x->stuck_func, y->stuck_func);
    EQ(x->stuck_seq, y->stuck_seq);
    for (int32_t r = 0; r < x->nranks && x->nranks == y->nranks; r++) {
      const struct lens_hang_rank *p = &x->ranks[r], *q = &y->ranks[r];
      EQ(p->rank, q->rank);
      EQ(p->proc, q->proc);
      EQ(p->entered, q->entered);
      EQ(p->stuck, q->stuck);
      for (int f = 0; f < LENS_HANG_MAX_FUNCS; f++) {
        EQ(p->last_started[f], q->last_started[f]);
        EQ(p->last_completed[f], q->last_completed[f]);
      }
    }
    EQ(x->n_missing, y->n_missing);
    for (size_t i = 0; i < x->n_missing && i < y->n_missing; i++) EQ(x->missing[i], y->missing[i]);
    EQ(x->n_untraced, y->n_untraced);
    for (size_t i = 0; i < x->n_untraced && i < y->n_untraced; i++) EQ(x->untraced[i], y->untraced[i]);
    EQ(x->n_waiting, y->n_waiting);
    for (size_t i = 0; i < x->n_waiting && i < y->n_waiting; i++) wait_eq(&x->waiting[i], &y->waiting[i]);
    EQ(x->n_kch, y->n_kch);
    for (size_t i = 0; i < x->n_kch && i < y->n_kch; i++) {
      EQ(x->kch[i].rank, y->kch[i].rank);
      EQ(x->kch[i].channel, y->kch[i].channel);
      EQ(x->kch[i].proc, y->kch[i].proc);
      EQ(x->kch[i].start_ns, y->kch[i].start_ns);
    }
  }
  EQ(a->n_proxies, b->n_proxies);
  for (size_t i = 0; i < a->n_proxies && i < b->n_proxies; i++) {
    const struct lens_hang_proxy *x = &a->proxies[i], *y = &b->proxies[i];
    EQ(x->proc, y->proc);
    EQ(x->thread, y->thread);
    EQ(x->rank, y->rank);
    EQ(x->last_record_ns, y->last_record_ns);
    EQ(x->trace_end_ns, y->trace_end_ns);
    EQ(x->recording, y->recording);
    EQ(x->frozen, y->frozen);
    EQ(x->waiting_only, y->waiting_only);
    EQ(x->blocked_rank, y->blocked_rank);
    EQ(x->blocked_channel, y->blocked_channel);
    EQ(x->blocked_step, y->blocked_step);
  }
}

/* The latest time a step event reached: start, stop, its states' records. */
static uint64_t step_last(const struct lens_model *m, const struct lens_event *s) {
  uint64_t t = s->start_mono_ns > s->stop_mono_ns ? s->start_mono_ns : s->stop_mono_ns;
  for (uint32_t i = 0; i < s->n_states; i++) {
    const struct lens_state_ev *x = &m->states[s->first_state + i];
    if (x->ts_mono_ns > t) t = x->ts_mono_ns;
    if (x->last_mono_ns > t) t = x->last_mono_ns;
  }
  return t;
}

static uint64_t step_bytes(const struct lens_model *m, const struct lens_event *s) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < s->n_states; i++) {
    const struct lens_state_ev *x = &m->states[s->first_state + i];
    if (x->has_args && (x->state == 9 || x->state == 11)) b = x->arg;
  }
  return b;
}

/* What the reader folded, against the full model's step events: per
 * ProxyOp its lens_folded_op, per thread its folded_* fields. */
static void folded_eq_events(const struct lens_model *full, const struct lens_model *fold) {
  EQ(fold->n_events + fold->folded_steps, full->n_events);
  uint64_t flags[32] = {0};
  for (size_t i = 0; i < full->n_events; i++) {
    const struct lens_event *e = &full->events[i];
    if (e->type == LENS_T_PROXY_STEP)
      for (int k = 0; k < 32; k++) flags[k] += e->flags >> k & 1u;
  }
  for (int k = 0; k < 32; k++) EQ(fold->folded_evf_counts[k], flags[k]);
  /* every event but the steps: the same flags (a NetPlugin under a step too) */
  for (size_t i = 0, j = 0; i < full->n_events; i++) {
    const struct lens_event *e = &full->events[i];
    if (e->type == LENS_T_PROXY_STEP) continue;
    int32_t f = lens_model_find_in_session(fold, e->proc, e->session, e->id);
    CHECK(f >= 0);
    if (f < 0) continue;
    const struct lens_event *g = &fold->events[f];
    EQ(g->flags, e->flags);
    EQ(g->stop_mono_ns, e->stop_mono_ns);
    j++;
    if (e->type != LENS_T_PROXY_OP) continue;
    struct lens_folded_op w = {0};
    for (int32_t c = e->first_child; c >= 0; c = full->events[c].next_sibling) {
      const struct lens_event *s = &full->events[c];
      if (s->type != LENS_T_PROXY_STEP || (s->flags & LENS_EVF_SUPERSEDED)) continue;
      w.steps++;
      w.bytes += step_bytes(full, s);
      if (s->stop_mono_ns) {
        if (s->p.proxy_step.step + 1 > w.next_step) w.next_step = s->p.proxy_step.step + 1;
        continue;
      }
      if (w.has_wait && s->p.proxy_step.step >= w.wait_step) continue;
      w.has_wait = 1, w.wait_step = s->p.proxy_step.step, w.wait_thread = s->thread;
      w.wait_start_ns = s->start_mono_ns;
      w.wait_state = 0, w.wait_since_ns = w.wait_last_ns = s->start_mono_ns, w.wait_repeats = 0;
      if (!s->n_states) continue;
      const struct lens_state_ev *st = &full->states[s->first_state];
      uint32_t n = s->n_states, k = n;
      w.wait_state = st[n - 1].state;
      while (k > 0 && st[k - 1].state == w.wait_state) {
        k--;
        w.wait_repeats += st[k].count ? st[k].count : 1;
      }
      w.wait_since_ns = st[k].ts_mono_ns;
      w.wait_last_ns = st[n - 1].last_mono_ns > st[n - 1].ts_mono_ns ? st[n - 1].last_mono_ns : st[n - 1].ts_mono_ns;
    }
    uint32_t at = g->p.proxy_op.folded_op;
    CHECK(at <= fold->n_folded_ops);
    if (!w.steps) {
      EQ(at, 0);
      continue;
    }
    CHECK(at > 0);
    if (!at || at > fold->n_folded_ops) continue;
    const struct lens_folded_op *o = &fold->folded_ops[at - 1];
    EQ(o->steps, w.steps);
    EQ(o->bytes, w.bytes);
    EQ(o->next_step, w.next_step);
    EQ(o->has_wait, w.has_wait);
    if (!w.has_wait) continue;
    EQ(o->wait_step, w.wait_step);
    EQ(o->wait_thread, w.wait_thread);
    EQ(o->wait_start_ns, w.wait_start_ns);
    EQ(o->wait_state, w.wait_state);
    EQ(o->wait_since_ns, w.wait_since_ns);
    EQ(o->wait_last_ns, w.wait_last_ns);
    EQ(o->wait_repeats, w.wait_repeats);
  }
  EQ(fold->n_threads, full->n_threads);
  for (size_t t = 0; t < full->n_threads && t < fold->n_threads; t++) {
    uint64_t starts = 0, steps = 0, bytes = 0, first = UINT64_MAX, last = 0;
    for (size_t i = 0; i < full->n_events; i++) {
      const struct lens_event *s = &full->events[i];
      if (s->type != LENS_T_PROXY_STEP || s->thread != (int32_t)t) continue;
      starts++;
      if (s->start_mono_ns < first) first = s->start_mono_ns;
      uint64_t l = step_last(full, s);
      if (l > last) last = l;
      if (s->flags & LENS_EVF_SUPERSEDED) continue;
      steps++;
      bytes += step_bytes(full, s);
    }
    const struct lens_thread *th = &fold->threads[t];
    EQ(th->folded_starts, starts);
    EQ(th->folded_steps, steps);
    EQ(th->folded_bytes, bytes);
    EQ(th->folded_first_ns, starts ? first : 0);
    EQ(th->folded_last_ns, last);
  }
}

/* The summary map and hang report of two models are equal. */
static void maps_eq(const struct lens_model *full, const struct lens_model *fold, int analyses_ran) {
  struct lens_summary a, b;
  CHECK(lens_summary_map(full, &a, analyses_ran) == 0);
  CHECK(lens_summary_map(fold, &b, analyses_ran) == 0);
  summary_eq(&a, &b);
  lens_summary_free(&a);
  lens_summary_free(&b);
  struct lens_hang_report x, y;
  CHECK(lens_hang_analyze(full, &x) == 0);
  CHECK(lens_hang_analyze(fold, &y) == 0);
  hang_eq(&x, &y);
  lens_hang_free(&x);
  lens_hang_free(&y);
}

/* The job's map of two models: what it reads of the steps (each op's
 * stopped steps and their first and last stop: the link pace; step 1's
 * one-way evidence: the pairs) gives the same instances and pairs. */
static void job_eq(const struct lens_model *full, const struct lens_model *fold) {
  struct lens_job a, b;
  CHECK(lens_job_build(full, &a, 0) == 0);
  CHECK(lens_job_build(fold, &b, 0) == 0);
  EQ(a.n_insts, b.n_insts);
  for (size_t i = 0; i < a.n_insts && i < b.n_insts; i++) {
    const struct lens_job_inst *x = &a.insts[i], *y = &b.insts[i];
    EQ(x->comm_id, y->comm_id);
    EQ(x->seq, y->seq);
    EQ(x->exec_ns, y->exec_ns);
    EQ(x->max_wait_ns, y->max_wait_ns);
    EQ(x->cause, y->cause);
    EQ(x->cause_rank, y->cause_rank);
    EQ(x->cause_peer, y->cause_peer);
    EQ(x->link_snd, y->link_snd);
    EQ(x->link_rcv, y->link_rcv);
    CHECK(x->link_ratio == y->link_ratio);
    EQ(x->link_on_net, y->link_on_net);
  }
  EQ(a.n_oneway, b.n_oneway);
  for (size_t i = 0; i < a.n_oneway && i < b.n_oneway; i++) {
    EQ(a.oneway[i].sent_ns, b.oneway[i].sent_ns);
    EQ(a.oneway[i].recv_ns, b.oneway[i].recv_ns);
  }
  EQ(a.oneway_ambiguous, b.oneway_ambiguous);
  lens_job_free(&a);
  lens_job_free(&b);
}

static size_t steps_of(const struct lens_model *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) n += m->events[i].type == LENS_T_PROXY_STEP;
  return n;
}

/* ---- under a selection ---- */

static size_t selections_run, selections_partial; /* partial: kept some steps and left some out */

/* A group loaded as the pass driver loads it under the selection f: with a
 * time window built at load (window != 0 and --since/--until), then the
 * selection applied as to one group (LENS_FILTER_PART); the steps as
 * events (fold 0) or folded and counted by the selection (LENS_LOAD_FOLD_LATER).
 * kept/total: the tally's, the events a window did not build counted as
 * the driver counts them. */
static struct lens_model *selected(const char *const *paths, size_t n, const struct lens_filter *f, int fold,
                                   int window, uint64_t *kept, uint64_t *total) {
  struct lens_load_opts o = {.no_progress = 1, .no_notes = 1};
  if (fold) o.load_flags = LENS_LOAD_FOLD_STEPS | LENS_LOAD_FOLD_LATER;
  struct lens_load_window win = {.have_since = f->have_since, .have_until = f->have_until, .since_ns = f->since_ns,
                                 .until_ns = f->until_ns};
  if (window && (f->have_since || f->have_until)) o.window = &win;
  struct lens_model *m = lens_cli_load("test", paths, n, &o);
  CHECK(m != NULL);
  if (!m) return NULL;
  if (fold) CHECK(m->steps_folded && steps_of(m) == 0);
  uint8_t comm_hit[8] = {0}, func_hit[8] = {0};
  struct lens_filter_tally t = {.comm_hit = comm_hit, .func_hit = func_hit};
  uint64_t built = m->n_events + m->n_pending_steps;
  int rc = lens_filter_apply_ex("test", f, m, LENS_FILTER_PART, &t);
  CHECK(rc == 0);
  EQ(m->n_pending_steps, 0); /* counted or gone */
  if (o.window) t.total += win.events_total - built;
  *kept = t.kept, *total = t.total;
  if (rc) {
    lens_model_free(m);
    return NULL;
  }
  return m;
}

/* The selection f on the trace set: the folded loads (whole, and windowed)
 * give the summary map, the hang report and the kept-event count of the
 * unfolded whole load. */
static void selection(const char *name, const char *what, const char *const *paths, size_t n,
                      const struct lens_filter *f) {
  char w[256];
  snprintf(w, sizeof w, "%s %s", name, what);
  where = w;
  uint64_t kept, total, k2, t2;
  struct lens_model *ref = selected(paths, n, f, 0, 0, &kept, &total);
  if (!ref) return;
  selections_run++;
  size_t steps = steps_of(ref);
  for (int window = 0; window < 2; window++) {
    struct lens_model *fold = selected(paths, n, f, 1, window, &k2, &t2);
    if (!fold) continue;
    EQ(k2, kept);
    EQ(t2, total);
    EQ(fold->folded_steps, steps);
    maps_eq(ref, fold, 1);
    job_eq(ref, fold);
    lens_model_free(fold);
  }
  lens_model_free(ref);
  where = name;
}

/* Every selection of the brief on one trace set: a window in the middle of
 * the trace, one holding everything, an empty one, one communicator, rank
 * 0, AllReduce, and a communicator's rank 0 in the middle window. */
static void selections(const char *name, const char *const *paths, size_t n) {
  char err[256];
  struct lens_model *m = lens_model_load_ex(paths, n, 0, err, sizeof err, NULL);
  if (!m) return;
  uint64_t all_steps = steps_of(m);
  struct golden_selections sel;
  golden_selections_of(m, &sel);
  lens_model_free(m);
  for (size_t k = 0; k < GOLDEN_N_SELECTIONS; k++) {
    if (!sel.used[k]) continue;
    selection(name, sel.what[k], paths, n, &sel.f[k]);
    /* the steps a selection kept, against the trace's: some kept and some left out */
    uint64_t kept, total;
    struct lens_model *ref = selected(paths, n, &sel.f[k], 0, 0, &kept, &total);
    if (!ref) continue;
    size_t st = steps_of(ref);
    selections_partial += st > 0 && st < all_steps;
    lens_model_free(ref);
  }
}

/* One trace set, loaded both ways: by the reader alone, and as the CLI
 * loads a group (with its analyses) when it holds no probe trace (a probe's
 * group is never folded: the starvation analysis marks steps). */
static void compare(const char *name, const char *const *paths, size_t n) {
  char err[256];
  where = name;
  struct lens_model *full = lens_model_load_ex(paths, n, 0, err, sizeof err, NULL);
  struct lens_model *fold = lens_model_load_ex(paths, n, LENS_LOAD_FOLD_STEPS, err, sizeof err, NULL);
  CHECK(full && fold);
  if (!full || !fold) {
    lens_model_free(full), lens_model_free(fold);
    return;
  }
  steps_seen += steps_of(full);
  superseded_seen += fold->folded_evf_counts[__builtin_ctz(LENS_EVF_SUPERSEDED)];
  EQ(steps_of(fold), 0);
  folded_eq_events(full, fold);
  maps_eq(full, fold, 0);
  int probe = full->n_sched > 0;
  lens_model_free(full);
  lens_model_free(fold);
  if (probe) return;
  struct lens_load_opts fo = {.no_progress = 1, .no_notes = 1}, so = fo;
  so.load_flags = LENS_LOAD_FOLD_STEPS;
  full = lens_cli_load("test", paths, n, &fo);
  fold = lens_cli_load("test", paths, n, &so);
  CHECK(full && fold);
  if (full && fold) maps_eq(full, fold, 1), job_eq(full, fold);
  lens_model_free(full);
  lens_model_free(fold);
  selections(name, paths, n);
}

static void scenario(const char *name, const char *dir, const char *const *paths, size_t n, void *ctx) {
  (void)dir, (void)ctx;
  if (n) compare(name, paths, n);
}

/* ---- the crafted trace ---- */

#define CTX 0xC0ull
#define SEND_PEER_WAIT 20

static void crafted(void) {
  char path[128];
  where = "crafted";
  struct tb *t = tb_open(rt_path(path, sizeof path, "fold.lens"), LENS_PRODUCER_TEST);
  tb_session(t, 0, 100, "nodeA", 6);
  tb_comm(t, CTX, 0x77, 0, 2, 1, 0, "world");
  tb_thread(t, 1, 101, LENS_ROLE_APP, "app", -1, UINT32_MAX);
  tb_thread(t, 2, 555, LENS_ROLE_PROXY, "proxy", 0, 0);
  tb_thread(t, 3, 556, LENS_ROLE_PROXY, "proxy2", 0, 0); /* records steps only */
  tb_string(t, 1, "AllReduce");
  tb_string(t, 2, "ncclFloat32");
  uint64_t api_a = LENS_ID_MAKE(LENS_T_COLL_API, 1, 1), coll_a = LENS_ID_MAKE(LENS_T_COLL, 1, 2);
  uint64_t api_b = LENS_ID_MAKE(LENS_T_COLL_API, 1, 3), coll_b = LENS_ID_MAKE(LENS_T_COLL, 1, 4);
  uint64_t op_a = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 1), op_b = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 2);
  uint64_t a0 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 10), a0r = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 11);
  uint64_t a1 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 12), net = LENS_ID_MAKE(LENS_T_NET_PLUGIN, 2, 13);
  uint64_t b0 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 20), b1 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 3, 21);
  uint64_t b2 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 3, 22), lost = LENS_ID_MAKE(LENS_T_PROXY_STEP, 3, 23);
  uint64_t noparent = LENS_ID_MAKE(LENS_T_PROXY_STEP, 3, 24), remote = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 25);
  struct lens_p_coll_api ca_graph = {.func = 1, .count = 256, .datatype = 2, .graph_captured = 1};
  struct lens_p_coll_api ca = {.func = 1, .count = 256, .datatype = 2};
  struct lens_p_coll ca_coll = {.seq = 1, .func = 1, .count = 256, .datatype = 2, .n_channels = 1};
  struct lens_p_coll cb_coll = {.seq = 2, .func = 1, .count = 256, .datatype = 2, .n_channels = 1};
  struct lens_p_proxy_op po = {.pid = 100, .peer = 1, .n_steps = 3, .chunk_size = 1024, .is_send = 1, .channel = 0};
  struct lens_p_proxy_step s0 = {.step = 0}, s1 = {.step = 1}, s2 = {.step = 2}, s3 = {.step = 3};

  /* the thread that records steps only: its first step (parent never read) starts before anything */
  tb_events_begin(t, 3);
  tb_start(t, LENS_T_PROXY_STEP, lost, LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 99), CTX, 5, 0, 0, &s0, sizeof s0);
  tb_stop(t, lost, 6);
  tb_start(t, LENS_T_PROXY_STEP, noparent, 0, CTX, 7, 0, LENS_START_F_DROPPED_BEFORE, &s0, sizeof s0);
  tb_flush(t);

  tb_events_begin(t, 1);
  tb_start(t, LENS_T_COLL_API, api_a, 0, CTX, 10, 0, 0, &ca_graph, sizeof ca_graph);
  tb_start(t, LENS_T_COLL, coll_a, api_a, CTX, 11, 0, 0, &ca_coll, sizeof ca_coll);
  tb_stop(t, coll_a, 12);
  tb_stop(t, api_a, 13);
  tb_start(t, LENS_T_COLL_API, api_b, 0, CTX, 100, 0, 0, &ca, sizeof ca);
  tb_start(t, LENS_T_COLL, coll_b, api_b, CTX, 101, 0, 0, &cb_coll, sizeof cb_coll);
  tb_stop(t, coll_b, 102);
  tb_stop(t, api_b, 103);
  tb_flush(t);

  tb_events_begin(t, 2);
  tb_start(t, LENS_T_PROXY_OP, op_a, coll_a, CTX, 20, 0, 0, &po, sizeof po);
  tb_start(t, LENS_T_PROXY_STEP, a0, op_a, CTX, 21, 0, 0, &s0, sizeof s0);
  tb_state(t, a0, 9, 22, 111, 1);
  tb_start(t, LENS_T_PROXY_STEP, a0r, op_a, CTX, 23, 0, 0, &s0, sizeof s0); /* re-posted: a0 superseded */
  tb_state(t, a0r, 9, 24, 1000, 1);
  tb_stop(t, a0r, 25);
  tb_start(t, LENS_T_PROXY_STEP, a1, op_a, CTX, 26, 0, 0, &s1, sizeof s1);
  tb_start(t, LENS_T_NET_PLUGIN, net, a1, CTX, 27, 0, 0, NULL, 0); /* under a step: graph through it */
  tb_state(t, a1, 11, 28, 2000, 1);
  tb_state(t, a1, 11, 29, 0, 0); /* no args: the bytes stay 2000 */
  tb_stop(t, a1, 30);
  tb_stop(t, a1, 31); /* dup stop */
  tb_stop(t, a0, 32);
  tb_stop(t, op_a, 33);
  tb_start(t, LENS_T_PROXY_OP, op_b, coll_b, CTX, 110, 0, 0, &po, sizeof po); /* never stopped: coll_b stuck */
  tb_start(t, LENS_T_PROXY_STEP, b0, op_b, CTX, 111, 0, 0, &s0, sizeof s0);
  tb_state(t, b0, 9, 112, 4096, 1);
  tb_stop(t, b0, 113);
  tb_start(t, LENS_T_PROXY_STEP, remote, op_b, CTX, 114, 0, LENS_START_F_REMOTE, &s3, sizeof s3);
  tb_flush(t);

  /* op_b's step 1 on the other proxy thread, never stopped, cycling in SendPeerWait */
  tb_events_begin(t, 3);
  tb_start(t, LENS_T_PROXY_STEP, b1, op_b, CTX, 120, 0, 0, &s1, sizeof s1);
  tb_state(t, b1, 9, 121, 64, 1);
  tb_state(t, b1, SEND_PEER_WAIT, 130, 0, 0);
  tb_state_run(t, b1, SEND_PEER_WAIT, 131, 0, 0, 150, 3, 10); /* folds into the entry before it */
  tb_state_run(t, b1, SEND_PEER_WAIT, 151, 7, 1, 170, 2, 10); /* another arg: a new entry of the same run */
  tb_start(t, LENS_T_PROXY_STEP, b2, op_b, CTX, 160, 0, 0, &s2, sizeof s2); /* a higher step: not the wait */
  tb_state(t, b2, SEND_PEER_WAIT, 175, 0, 0);
  tb_flush(t);
  tb_close(t);

  /* a second process of the host: a PXN ProxyOp whose parent value is a
   * step of the first process (no writer does it; the flags must still be
   * a full load's), and a step of its own under it */
  char path2[128];
  struct tb *t2 = tb_open(rt_path(path2, sizeof path2, "fold-pxn.lens"), LENS_PRODUCER_TEST);
  tb_session(t2, 0, 200, "nodeA", 6);
  tb_comm(t2, CTX, 0x77, 1, 2, 1, 0, "world");
  tb_thread(t2, 2, 655, LENS_ROLE_PROXY, "proxy", 1, 0);
  uint64_t pxn_op = LENS_ID_REMOTE | LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 1);
  uint64_t pxn_step = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 2);
  tb_events_begin(t2, 2);
  tb_start(t2, LENS_T_PROXY_OP, pxn_op, b0, CTX, 115, 0, LENS_START_F_REMOTE, &po, sizeof po);
  tb_start(t2, LENS_T_PROXY_STEP, pxn_step, pxn_op, CTX, 116, 0, 0, &s0, sizeof s0);
  tb_stop(t2, pxn_step, 117);
  tb_stop(t2, pxn_op, 118);
  tb_flush(t2);
  tb_close(t2);
  const char *p2[2] = {path, path2};
  compare("crafted pxn", p2, 2);
  const char *p[1] = {path};
  compare("crafted", p, 1);
  where = "crafted";
  /* what the crafted trace must show, on the folded load */
  char err[256];
  struct lens_model *m = lens_model_load_ex(p, 1, LENS_LOAD_FOLD_STEPS, err, sizeof err, NULL);
  CHECK(m != NULL);
  if (!m) return;
  EQ(m->folded_steps, 9);
  EQ(m->folded_evf_counts[__builtin_ctz(LENS_EVF_SUPERSEDED)], 1);
  EQ(m->folded_evf_counts[__builtin_ctz(LENS_EVF_PARENT_MISSING)], 1); /* lost's; noparent's parent is 0 */
  EQ(m->folded_evf_counts[__builtin_ctz(LENS_EVF_DUP_STOP)], 1);
  EQ(m->folded_evf_counts[__builtin_ctz(LENS_EVF_REMOTE)], 1);
  EQ(m->folded_evf_counts[__builtin_ctz(LENS_EVF_DROPPED_NEAR)], 1);
  EQ(m->folded_evf_counts[__builtin_ctz(LENS_EVF_GRAPH)], 3); /* a0, a0r, a1 under the graph-captured api_a */
  EQ(m->folded_evf_counts[__builtin_ctz(LENS_EVF_NO_STOP)], 4); /* noparent, remote, b1, b2 */
  const struct lens_event *n = rt_ev(m, 0, net);
  CHECK(n && n->parent == -1 && !(n->flags & LENS_EVF_PARENT_MISSING) && (n->flags & LENS_EVF_GRAPH));
  struct lens_summary s;
  CHECK(lens_summary_map(m, &s, 0) == 0);
  uint64_t steps = 0, bytes = 0;
  for (size_t i = 0; i < s.n_rows; i++) steps += s.rows[i].proxy_steps, bytes += s.rows[i].proxy_bytes;
  EQ(steps, 6); /* a0r a1 | b0 remote b1 b2 */
  EQ(bytes, 1000 + 2000 + 4096 + 64);
  EQ(s.n_proxies, 2);
  if (s.n_proxies == 2) {
    EQ(m->threads[s.proxies[0].thread].tid, 556); /* its first step starts first */
    EQ(s.proxies[0].steps, 4);                    /* lost noparent b1 b2 */
    EQ(s.proxies[1].steps, 4);                    /* a0r a1 b0 remote */
  }
  EQ(s.events, m->n_events + 9);
  lens_summary_free(&s);
  struct lens_hang_report h;
  CHECK(lens_hang_analyze(m, &h) == 0);
  EQ(h.n_stuck_comms, 1);
  if (h.n_comms == 1 && h.comms[0].n_waiting == 1) {
    const struct lens_hang_wait *w = &h.comms[0].waiting[0];
    EQ(w->step, 1);
    EQ(w->step_started, 1);
    EQ(m->threads[w->thread].tid, 556); /* the step's thread, not the op's */
    EQ(w->state, SEND_PEER_WAIT);
    EQ(w->state_since_ns, 130);
    EQ(w->state_last_ns, 170);
    EQ(w->state_repeats, 1 + 3 + 2);
  } else {
    CHECK(!"one comm with one waiting op");
  }
  for (size_t i = 0; i < h.n_proxies; i++)
    if (m->threads[h.proxies[i].thread].tid == 556) EQ(h.proxies[i].last_record_ns, 175);
  EQ(h.n_proxies, 2);
  lens_hang_free(&h);
  lens_model_free(m);
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : LENS_SOURCE_DIR "/tests/golden/traces";
  crafted();
  long sets = golden_sets_each(root, scenario, NULL);
  if (sets < 0) return 1;
  size_t n = (size_t)sets;
  rt_cleanup();
  if (steps_seen < 10000) {
    fprintf(stderr, "FAIL: only %zu steps folded over every trace set\n", steps_seen);
    failures++;
  }
  if (superseded_seen < 5) { /* the crafted trace's one and the golden traces' re-posted recv steps */
    fprintf(stderr, "FAIL: only %" PRIu64 " superseded steps folded\n", superseded_seen);
    failures++;
  }
  if (selections_partial < 40) { /* the selections must leave steps out, not keep all or none */
    fprintf(stderr, "FAIL: only %zu of %zu selections kept some steps and left some out\n", selections_partial,
            selections_run);
    failures++;
  }
  if (n < 20) {
    fprintf(stderr, "FAIL: %zu scenarios under %s, expected the golden test's\n", n, root);
    failures++;
  }
  fprintf(stderr, "%zu scenarios and a crafted trace compared folded against full (%zu selections, %zu partial): "
                  "%d failures\n", n, selections_run, selections_partial, failures);
  return failures ? 1 : 0;
}
