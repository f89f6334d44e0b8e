/* libFuzzer target: a .lens trace (fixed, packed and zstd event chunks,
 * metadata chunks) through both readers and the job analysis, as
 * `nccl-lens job FILE` and `summary` take it: the general model
 * (lens_model_load, folded steps and not) with the GPU analysis and the
 * starvation merge as lens_cli_load runs them, the summary, the columnar
 * reader (lens_cols_read), the job view (map, reduce, causes), the host
 * alignment, and the reports printed to /dev/null; and the time-window
 * loader (lens_model_load_window) on a window taken from the input's last
 * bytes, with the GPU types kept as lens_cli_load keeps them, and again with the full load's GPU
 * memo (gpu_memo.c: no light reads; the same events, accuracy and clock maps, compared on loads without
 * plans: corpus/trace/window-memo-forged-index.lens hides records from a planned one). The chunks' CRCs are recomputed
 * first (fuzz_fix_trace_crcs). A sanitizer report, a crash or a
 * hang is a finding; a trace refused with a message is not.
 *
 * The folded loads (lensread.h, LENS_LOAD_FOLD_STEPS and _LATER) are
 * checked against what lensread.h says of them (fold_check below; a broken
 * relation aborts, a finding): the folded load against the full one, a
 * FOLD_LATER load folded whole against the folded load, a FOLD_LATER load
 * narrowed by keep arrays taken from the input's bytes in the order the
 * CLI's selection calls them (lens_model_keep, then lens_model_fold), with
 * its step facts (LENS_LOAD_STEP_FACTS, facts_check), and
 * the window's folded load under the CLI's --since/--until selection
 * (lens_filter_apply_ex) against a whole FOLD_LATER load under the same
 * selection, and that against the unfolded load under it; the same for
 * --func AllReduce (no window).
 *
 * The trace's INDEX chunks (trace_index.h) too: read, and asked where the
 * touches of ids taken from the input's bytes are, and a window planned
 * over them (window_plan.h: its START lookups); every
 * chunk it answers is one of the file's events chunks, its touches and
 * open sets within the arrays it read (index_check). */
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyses.h"
#include "cli/filter.h"
#include "columns.h"
#include "fuzz_util.h"
#include "job.h"
#include "job/job_print.h"
#include "job_align.h"
#include "lensread.h"
#include "summary/summary_model.h"
#include "summary/summary_print.h"
#include "trace_index.h"
#include "window_plan.h"

/* A relation lensread.h states that does not hold: a finding. */
#define FOLD_REQUIRE(cond)                                                                \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "fuzz_trace: fold check failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                            \
    }                                                                                     \
  } while (0)

#define EVF_BIT(f) (__builtin_ctz(f))

/* What lensread.h documents of a model whose steps are folded and counted
 * (LENS_LOAD_FOLD_STEPS, or FOLD_LATER after lens_model_fold): nothing
 * pending; each flag count at most the steps; a thread's steps (not
 * superseded) among its starts, the threads' starts among the model's
 * steps; each ProxyOp's folded_op 0 or an index of folded_ops, each
 * folded_ops entry one op's (and holding a step); the ops' folded steps
 * (superseded left out) and their stopped steps never more than the
 * model's steps that are so. */
static void fold_check(const struct lens_model *m) {
  FOLD_REQUIRE(m->steps_folded);
  FOLD_REQUIRE(!m->n_pending_steps && !m->pending_steps && !m->n_pending_children && !m->pending_children);
  uint64_t n = m->folded_steps;
  for (int k = 0; k < 32; k++) FOLD_REQUIRE(m->folded_evf_counts[k] <= n);
  uint64_t superseded = m->folded_evf_counts[EVF_BIT(LENS_EVF_SUPERSEDED)];
  uint64_t no_stop = m->folded_evf_counts[EVF_BIT(LENS_EVF_NO_STOP)];
  uint64_t starts = 0, th_steps = 0;
  for (size_t t = 0; t < m->n_threads; t++) {
    const struct lens_thread *th = &m->threads[t];
    FOLD_REQUIRE(th->folded_steps <= th->folded_starts);
    starts += th->folded_starts, th_steps += th->folded_steps;
  }
  FOLD_REQUIRE(starts <= n);
  FOLD_REQUIRE(th_steps <= n - superseded);
  uint8_t *owner = calloc(m->n_folded_ops ? m->n_folded_ops : 1, 1);
  if (!owner) return;
  uint64_t stops = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    FOLD_REQUIRE(e->type != LENS_T_PROXY_STEP);
    if (e->type != LENS_T_PROXY_OP) continue;
    uint32_t fo = e->p.proxy_op.folded_op;
    FOLD_REQUIRE(fo <= m->n_folded_ops);
    if (fo) {
      FOLD_REQUIRE(!owner[fo - 1]);
      owner[fo - 1] = 1;
    }
    stops += e->p.proxy_op.folded_stops;
    if (e->p.proxy_op.folded_stops) FOLD_REQUIRE(e->p.proxy_op.folded_stop_lo <= e->p.proxy_op.folded_stop_hi);
  }
  FOLD_REQUIRE(stops <= n - no_stop);
  uint64_t op_steps = 0;
  for (size_t k = 0; k < m->n_folded_ops; k++) {
    FOLD_REQUIRE(owner[k]);
    FOLD_REQUIRE(m->folded_ops[k].steps >= 1);
    op_steps += m->folded_ops[k].steps;
  }
  FOLD_REQUIRE(op_steps <= n - superseded);
  free(owner);
}

/* What lensread.h documents of the step facts (LENS_LOAD_STEP_FACTS) once
 * the steps are counted: one fact a counted step; its op -1 or a ProxyOp
 * event of the model; its process one of the model's; where its event
 * would sort within the events; each event under a step an event of the
 * model, its step -1 or a fact. */
static void facts_check(const struct lens_model *m) {
  FOLD_REQUIRE(m->n_step_facts == m->folded_steps);
  for (size_t i = 0; i < m->n_step_facts; i++) {
    const struct lens_step_fact *f = &m->step_facts[i];
    FOLD_REQUIRE(f->op == -1 || (f->op >= 0 && (size_t)f->op < m->n_events));
    if (f->op >= 0) FOLD_REQUIRE(m->events[f->op].type == LENS_T_PROXY_OP);
    FOLD_REQUIRE(f->proc >= 0 && (size_t)f->proc < m->n_procs);
    FOLD_REQUIRE(f->events_before <= m->n_events);
  }
  for (size_t i = 0; i < m->n_step_children; i++) {
    const struct lens_step_child *c = &m->step_children[i];
    FOLD_REQUIRE(c->event >= 0 && (size_t)c->event < m->n_events);
    FOLD_REQUIRE(c->step == -1 || (c->step >= 0 && (size_t)c->step < m->n_step_facts));
  }
}

/* A FOLD_LATER model before lens_model_fold: nothing counted yet, each
 * pending step's parent an event (or -1) and its parent_step a pending step
 * (or -1), each pending child's event an event (or -1). */
static void pending_check(const struct lens_model *m) {
  FOLD_REQUIRE(!m->folded_steps && !m->n_folded_ops);
  for (size_t i = 0; i < m->n_pending_steps; i++) {
    const struct lens_pending_step *ps = &m->pending_steps[i];
    FOLD_REQUIRE(ps->parent >= -1 && (ps->parent < 0 || (size_t)ps->parent < m->n_events));
    FOLD_REQUIRE(ps->parent_step >= -1 && (ps->parent_step < 0 || (size_t)ps->parent_step < m->n_pending_steps));
  }
  for (size_t i = 0; i < m->n_pending_children; i++) {
    const struct lens_pending_child *c = &m->pending_children[i];
    FOLD_REQUIRE(c->event >= -1 && (c->event < 0 || (size_t)c->event < m->n_events));
    FOLD_REQUIRE(c->step >= 0 && (size_t)c->step < m->n_pending_steps);
  }
  for (size_t t = 0; t < m->n_threads; t++) FOLD_REQUIRE(!m->threads[t].folded_starts);
}

/* A FOLD_LATER load folded whole counts as the folded load (lensread.h:
 * "those a folded load of a trace holding only the kept steps would give"). */
static void fold_same(const struct lens_model *a, const struct lens_model *b) {
  FOLD_REQUIRE(a->n_events == b->n_events && a->n_threads == b->n_threads);
  FOLD_REQUIRE(a->folded_steps == b->folded_steps);
  FOLD_REQUIRE(!memcmp(a->folded_evf_counts, b->folded_evf_counts, sizeof a->folded_evf_counts));
  FOLD_REQUIRE(a->n_folded_ops == b->n_folded_ops);
  if (a->n_folded_ops)
    FOLD_REQUIRE(!memcmp(a->folded_ops, b->folded_ops, a->n_folded_ops * sizeof *a->folded_ops));
  for (size_t t = 0; t < a->n_threads; t++) {
    const struct lens_thread *x = &a->threads[t], *y = &b->threads[t];
    FOLD_REQUIRE(x->folded_starts == y->folded_starts && x->folded_steps == y->folded_steps);
    FOLD_REQUIRE(x->folded_bytes == y->folded_bytes && x->folded_first_ns == y->folded_first_ns);
    FOLD_REQUIRE(x->folded_last_ns == y->folded_last_ns);
  }
  for (size_t i = 0; i < a->n_events; i++) {
    const struct lens_event *x = &a->events[i], *y = &b->events[i];
    FOLD_REQUIRE(x->type == y->type && x->id == y->id && x->flags == y->flags);
    if (x->type != LENS_T_PROXY_OP) continue;
    FOLD_REQUIRE(x->p.proxy_op.folded_stops == y->p.proxy_op.folded_stops);
    FOLD_REQUIRE(x->p.proxy_op.folded_op == y->p.proxy_op.folded_op);
    FOLD_REQUIRE(x->p.proxy_op.folded_stop_lo == y->p.proxy_op.folded_stop_lo);
    FOLD_REQUIRE(x->p.proxy_op.folded_stop_hi == y->p.proxy_op.folded_stop_hi);
    FOLD_REQUIRE(x->p.proxy_op.folded_oneway_ns == y->p.proxy_op.folded_oneway_ns);
    FOLD_REQUIRE(!memcmp(x->p.proxy_op.folded_phase_ns, y->p.proxy_op.folded_phase_ns,
                         sizeof x->p.proxy_op.folded_phase_ns));
  }
}

#define ID_MIX 0x9E3779B97F4A7C15ull

/* What the selection f keeps of the unfolded load: its events other than
 * ProxySteps, and its ProxySteps. 0, or -1 (refused, out of memory). */
static int selected(const char *const *paths, const struct lens_filter *f, uint64_t *events, uint64_t *steps) {
  char err[512];
  struct lens_model *m = lens_model_load_ex(paths, 1, 0, err, sizeof err, NULL);
  if (!m || lens_filter_apply_ex("fuzz", f, m, LENS_FILTER_PART, NULL)) {
    lens_model_free(m);
    return -1;
  }
  *events = *steps = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    if (m->events[i].type == LENS_T_PROXY_STEP) ++*steps;
    else ++*events;
  }
  lens_model_free(m);
  return 0;
}

/* Bit i of the input's bytes, cycling (an empty input: 1). */
static int input_bit(const uint8_t *data, size_t size, size_t i) {
  return size ? data[(i / 8) % size] >> (i % 8) & 1 : 1;
}

/* What the full load held of its ProxySteps, taken before any analysis. */
struct full_steps {
  int loaded;
  uint64_t events, steps, evf[32];
};
static void full_steps_of(const struct lens_model *m, struct full_steps *fs) {
  memset(fs, 0, sizeof *fs);
  fs->loaded = 1;
  fs->events = m->n_events;
  for (size_t i = 0; i < m->n_events; i++) {
    if (m->events[i].type != LENS_T_PROXY_STEP) continue;
    fs->steps++;
    for (int k = 0; k < 32; k++) fs->evf[k] += m->events[i].flags >> k & 1u;
  }
}

/* The folded loads of one input (paths), checked: folded, its
 * LENS_LOAD_FOLD_STEPS load (NULL: refused), before any analysis; full:
 * what its full load held; w0: the window the target asks for. */
static void fold_loads(const char *const *paths, const uint8_t *data, size_t size, const struct full_steps *full,
                       const struct lens_model *folded, const struct lens_load_window *w0) {
  char err[512];
  /* (1) the folded load: each folded step an event of the full load, with that event's flags */
  if (folded) fold_check(folded);
  if (full->loaded && folded) {
    FOLD_REQUIRE(folded->folded_steps == full->steps);
    FOLD_REQUIRE(folded->n_events + full->steps == full->events);
    FOLD_REQUIRE(!memcmp(folded->folded_evf_counts, full->evf, sizeof full->evf));
  }
  /* (2) FOLD_LATER folded whole: as the folded load */
  struct lens_model *m = lens_model_load_ex(paths, 1, LENS_LOAD_FOLD_STEPS | LENS_LOAD_FOLD_LATER, err, sizeof err,
                                            NULL);
  if (m) {
    pending_check(m);
    if (!lens_model_fold(m, NULL)) {
      fold_check(m);
      if (folded) fold_same(m, folded);
    }
    lens_model_free(m);
  }
  /* FOLD_LATER narrowed: events and steps kept by the input's bits, in the
   * selection's order (tools/cli/filter.c: lens_model_keep, then
   * lens_model_fold with the steps' keep flags) */
  m = lens_model_load_ex(paths, 1, LENS_LOAD_FOLD_STEPS | LENS_LOAD_FOLD_LATER | LENS_LOAD_STEP_FACTS, err,
                         sizeof err, NULL);
  if (m) {
    pending_check(m);
    size_t ne = m->n_events, ns = m->n_pending_steps;
    uint8_t *keep = malloc(ne ? ne : 1), *step_keep = malloc(ns ? ns : 1);
    uint64_t kept_steps = 0;
    if (keep && step_keep) {
      for (size_t i = 0; i < ne; i++) keep[i] = (uint8_t)input_bit(data, size, i * 7 + 3);
      for (size_t i = 0; i < ns; i++) kept_steps += step_keep[i] = (uint8_t)input_bit(data, size, i * 5 + 1);
      if (!lens_model_keep(m, keep)) {
        pending_check(m);
        FOLD_REQUIRE(m->n_pending_steps == ns);
        if (!lens_model_fold(m, step_keep)) {
          FOLD_REQUIRE(m->folded_steps == kept_steps);
          fold_check(m);
          facts_check(m);
        }
      }
    }
    free(keep);
    free(step_keep);
    lens_model_free(m);
  }
  /* (3) the window's folded load under the same --since/--until, against
   * a whole FOLD_LATER load under it: the same events (lensread.h, the
   * window), the same steps counted */
  struct lens_filter f = {.have_since = w0->have_since, .have_until = w0->have_until, .since_ns = w0->since_ns,
                          .until_ns = w0->until_ns};
  /* Planned from the input's INDEX chunks: what a plan leaves out is not read, so a forged index can hide events
   * from a window (not crash it): that load checked for its own invariants only, the equality without plans. */
  struct lens_load_window w = *w0;
  struct lens_model *wm = lens_model_load_window(paths, 1, LENS_LOAD_FOLD_STEPS | LENS_LOAD_FOLD_LATER, &w, err,
                                                 sizeof err, NULL);
  if (wm) {
    pending_check(wm);
    if (!lens_filter_apply_ex("fuzz", &f, wm, LENS_FILTER_PART, NULL)) fold_check(wm);
  }
  lens_model_free(wm);
  w = *w0;
  w.no_plan = 1;
  wm = lens_model_load_window(paths, 1, LENS_LOAD_FOLD_STEPS | LENS_LOAD_FOLD_LATER, &w, err, sizeof err, NULL);
  if (wm) {
    pending_check(wm);
    if (!lens_filter_apply_ex("fuzz", &f, wm, LENS_FILTER_PART, NULL)) fold_check(wm);
    else lens_model_free(wm), wm = NULL;
  }
  m = lens_model_load_ex(paths, 1, LENS_LOAD_FOLD_STEPS | LENS_LOAD_FOLD_LATER, err, sizeof err, NULL);
  if (m && lens_filter_apply_ex("fuzz", &f, m, LENS_FILTER_PART, NULL)) lens_model_free(m), m = NULL;
  if (m) fold_check(m);
  if (m && wm) {
    FOLD_REQUIRE(wm->n_events == m->n_events);
    FOLD_REQUIRE(wm->folded_steps == m->folded_steps);
    uint64_t sum_m = 0, sum_w = 0, xor_m = 0, xor_w = 0; /* the same ids (ties may sort apart) */
    for (size_t i = 0; i < m->n_events; i++) sum_m += m->events[i].id, xor_m ^= m->events[i].id * ID_MIX;
    for (size_t i = 0; i < wm->n_events; i++) sum_w += wm->events[i].id, xor_w ^= wm->events[i].id * ID_MIX;
    FOLD_REQUIRE(sum_m == sum_w && xor_m == xor_w);
  }
  lens_model_free(wm);
  /* the selection keeps each pending step on its event's test (lensread.h,
   * LENS_LOAD_FOLD_LATER): as many steps and other events as it keeps of
   * the unfolded load, under --since/--until and under --func (whose walk
   * to an operation goes through pending steps) */
  uint64_t events = 0, steps = 0;
  if (m && !selected(paths, &f, &events, &steps)) {
    FOLD_REQUIRE(m->n_events == events);
    FOLD_REQUIRE(m->folded_steps == steps);
  }
  lens_model_free(m);
  char fn[] = "AllReduce";
  char *funcs[1] = {fn};
  struct lens_filter ff = {.funcs = funcs, .n_funcs = 1};
  m = lens_model_load_ex(paths, 1, LENS_LOAD_FOLD_STEPS | LENS_LOAD_FOLD_LATER, err, sizeof err, NULL);
  if (m && lens_filter_apply_ex("fuzz", &ff, m, LENS_FILTER_PART, NULL)) lens_model_free(m), m = NULL;
  if (m) fold_check(m);
  if (m && !selected(paths, &ff, &events, &steps)) {
    FOLD_REQUIRE(m->n_events == events);
    FOLD_REQUIRE(m->folded_steps == steps);
  }
  lens_model_free(m);
}

/* LeakSanitizer's options, as nccl-lens sets them (tools/cli/main.c): at the
 * end of a run its tracer crashed now and then walking the main thread's
 * dynamic TLS ("Tracer caught signal 11", a finding with an empty input;
 * CI, 2026-11-29) once the GPU analysis had loaded libcupti. Our
 * thread-locals hold no heap pointer that outlives a call; libcupti's
 * per-thread state is not ours. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) { return "use_tls=0:print_suppressions=0"; }
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libcupti.so\n"; }

static void index_hit(void *ctx, size_t k) {
  FOLD_REQUIRE(k < ((const struct lens_trace_index *)ctx)->n);
}

/* A planned chunk's records for the fuzzer's plan: ids, parents and times from the input's bytes. */
struct plan_ctx {
  const uint8_t *data;
  size_t size;
  struct lens_wplan_rec r[8];
};
static int plan_decode(void *ctx, size_t chunk, const struct lens_wplan_rec **out, size_t *n) {
  struct plan_ctx *c = ctx;
  size_t k = 0;
  for (size_t off = (chunk * 24) % (c->size + 1); k < 8 && off + 24 <= c->size; off += 24, k++) {
    uint64_t v[3];
    memcpy(v, c->data + off, sizeof v);
    c->r[k] = (struct lens_wplan_rec){(uint8_t)(1 + v[0] % 3), (uint8_t)(v[0] >> 8 & 15), (uint32_t)(v[0] >> 16),
                                      v[1], v[2], v[0]};
  }
  *out = c->r, *n = k;
  return 0;
}

static void index_check(const char *path, const uint8_t *data, size_t size) {
  struct lens_trace_index ix;
  char err[256];
  if (lens_trace_index_read(path, &ix, err, sizeof err)) return;
  FOLD_REQUIRE(ix.indexed <= ix.n);
  for (size_t k = 0; k < ix.n; k++) {
    const struct lens_chunk_ix *c = &ix.c[k];
    FOLD_REQUIRE((size_t)c->touch + c->n_touch <= ix.n_touch);
    if (c->flags & LENS_CIX_INDEXED) FOLD_REQUIRE(c->first_ts <= c->last_ts && c->start_lo <= c->start_hi);
  }
  for (size_t i = 0; i < ix.n_open; i++) {
    const struct lens_open_ix *o = &ix.open[i];
    FOLD_REQUIRE(o->after_chunk < ix.n && o->drained + o->n_drained <= ix.n_drained && o->ids + o->n_ids <= ix.n_ids);
  }
  for (size_t off = 0; off + 8 <= size && off < 64 * 8; off += 8) { /* ids from the input's bytes */
    uint64_t id;
    memcpy(&id, data + off, 8);
    uint32_t session = (uint32_t)(id >> 60) & 3;
    lens_trace_index_touches(&ix, session, LENS_ID_SLOT(id), LENS_ID_SEQ(id), index_hit, &ix);
  }
  /* a window's plan from it (window_plan.h), each planned chunk "decoded" as the input's ids */
  if (ix.n) {
    uint8_t *in = calloc(ix.n, 1);
    struct plan_ctx pc = {.data = data, .size = size};
    uint64_t since = 0;
    if (size >= 16) memcpy(&since, data + 8, 8);
    struct lens_wplan_opts o = {.since = since,
                                .until = since + 1 + (since >> 7),
                                .need_types = 1u << LENS_T_KERNEL_CH,
                                .need_margin = (uint64_t)size << 20,
                                .step_siblings = 1};
    struct lens_wplan_stats st;
    if (in && lens_wplan_make(&ix, &o, plan_decode, &pc, in, &st) == 0) {
      size_t planned = 0;
      for (size_t k = 0; k < ix.n; k++) planned += in[k] != 0;
      FOLD_REQUIRE(planned == st.planned && st.decoded == st.planned);
    }
    free(in);
  }
  lens_trace_index_free(&ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20)) return -1; /* keep inputs small: the readers' limits are tested elsewhere */
  uint8_t *fixed = malloc(size ? size : 1);
  if (!fixed) return 0;
  memcpy(fixed, data, size);
  fuzz_fix_trace_crcs(fixed, size); /* the parsers, not the CRCs, see the mutations */
  const char *path = fuzz_write("in.lens", fixed, size);
  free(fixed);
  const char *paths[1] = {path};
  char err[512];
  index_check(path, data, size);
  /* A window from the input's last 8 bytes (0..~4 ms wide, 0..~16 ms in), as lens_cli_load asks for it. */
  uint64_t tail = 0;
  if (size >= 8) memcpy(&tail, data + size - 8, 8);
  struct lens_load_window w = {.have_since = 1, .have_until = (int)(tail & 1), .since_ns = (tail >> 1) % 16000000,
                               .until_ns = 0};
  w.until_ns = w.since_ns + (tail >> 25) % 4000000;
  w.keep_types_parent = 1u << LENS_T_KERNEL_CH;
  w.keep_types_cupti = 1u << LENS_T_KERNEL_LAUNCH | 1u << LENS_T_COLL | 1u << LENS_T_P2P;
  w.keep_types_if = 1u << LENS_T_KERNEL_CH | 1u << LENS_T_KERNEL_LAUNCH;
  w.kch_columns = 1; /* the KernelCh as the scan's columns (m->kch_cols), read by the GPU analysis below */
  struct full_steps full = {0};
  void *memo = NULL; /* the full load's GPU memo (gpu_memo.c), for the window below */
  size_t memo_len = 0;
  for (int fold = 0; fold < 2; fold++) {
    struct lens_model *m = lens_model_load_ex(paths, 1, fold ? LENS_LOAD_FOLD_STEPS : 0, err, sizeof err, NULL);
    if (!fold && m) full_steps_of(m, &full);
    if (fold) fold_loads(paths, data, size, &full, m, &w); /* before the analyses mark the events */
    if (!m) continue;
    /* as lens_cli_load: the GPU analysis (clock maps), the starvation merge */
    if (lens_analyze_gpu && !lens_analyze_gpu(m, err, sizeof err) && !fold && lens_gpu_memo_save &&
        lens_gpu_memo_save(m, &memo, &memo_len))
      free(memo), memo = NULL;
    if (lens_analyze_starvation && m->n_sched) lens_analyze_starvation(m, 0);
    struct lens_summary s;
    if (!lens_summary_build(m, &s, lens_analyze_gpu != NULL)) {
      lens_summary_print_text(fuzz_devnull(), m, &s, NULL);
      lens_summary_print_json(fuzz_devnull(), m, &s, NULL);
      lens_summary_free(&s);
    }
    struct lens_job j;
    if (!lens_job_build(m, &j, 0)) {
      struct lens_align al;
      struct lens_align_opts o = {0};
      if (!lens_align_build(m, &j, &o, &al)) {
        lens_job_print_text(fuzz_devnull(), m, &j, 0, &al, NULL);
        lens_job_print_json(fuzz_devnull(), m, &j, &al, NULL, NULL);
        lens_align_free(&al);
      }
      lens_job_free(&j);
    }
    lens_model_free(m);
  }
  /* The same window with the memo, as lens_cli_load loads it (no light reads): applied, the same
   * events with the same accuracy fields and the same clock maps; refused (1), nothing to compare.
   * Compared without plans: a planned load trusts the INDEX for the chunks it leaves out (a forged
   * index whose chunks pass their checks can hide events, orphans and bad records from a window,
   * docs/scale.md "Step 2"), and the memo's load leaves out the chunks the light read decodes for
   * the KernelCh. The planned memo window is loaded and analysed for the sanitizers only. */
  if (memo) {
    struct lens_load_window mw = w;
    mw.kch_no_light = 1;
    struct lens_model *pm = lens_model_load_window(paths, 1, 0, &mw, err, sizeof err, NULL);
    if (pm && !pm->n_sched && lens_analyze_gpu_memo(pm, memo, memo_len, err, sizeof err) == 0) {
      struct lens_summary s;
      if (!lens_summary_build(pm, &s, 1)) lens_summary_free(&s);
    }
    lens_model_free(pm);
  }
  w.no_plan = 1;
  struct lens_model *wm = lens_model_load_window(paths, 1, 0, &w, err, sizeof err, NULL);
  if (wm && lens_analyze_gpu) lens_analyze_gpu(wm, err, sizeof err);
  if (memo && wm && !wm->n_sched) {
    struct lens_load_window mw = w;
    mw.kch_no_light = 1;
    struct lens_model *mm = lens_model_load_window(paths, 1, 0, &mw, err, sizeof err, NULL);
    if (mm && lens_analyze_gpu_memo(mm, memo, memo_len, err, sizeof err) == 0) {
      FOLD_REQUIRE(mm->n_events == wm->n_events && mm->n_clock_maps == wm->n_clock_maps);
      for (size_t i = 0; i < mm->n_events; i++)
        FOLD_REQUIRE(mm->events[i].id == wm->events[i].id &&
                     !memcmp(&mm->events[i].acc, &wm->events[i].acc, sizeof mm->events[i].acc));
      for (size_t i = 0; i < mm->n_clock_maps; i++)
        FOLD_REQUIRE(!memcmp(&mm->clock_maps[i], &wm->clock_maps[i], sizeof mm->clock_maps[i]));
    }
    lens_model_free(mm);
  }
  free(memo);
  lens_model_free(wm);
  struct lens_cols *c = lens_cols_new();
  if (c) {
    lens_cols_read(c, path, err, sizeof err);
    lens_cols_free(c);
  }
  return 0;
}
