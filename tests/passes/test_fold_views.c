/* net, validate and report read ProxySteps folded (LENS_LOAD_FOLD_STEPS |
 * LENS_LOAD_STEP_FACTS, the pass driver's load for LENS_PASS_STEP_FACTS)
 * and give what they give on a full load: on every committed replay
 * scenario of the golden test (tests/golden/traces/), whole and under the
 * selections test_fold runs (a middle window, a window holding everything,
 * an empty one, one communicator, rank 0, AllReduce, a communicator's rank
 * 0 in the middle window; folded later as the driver folds under a
 * selection, whole and with the load-time window). Compared: the network
 * view's JSON (every link's steps, phases, bytes and step quantiles, the
 * QPs of NetPlugin events under steps, each instance's split and event
 * number) and its text, validate's partial (events per file, its KernelCh
 * counts, its listed launches), and the report's partial merged (each
 * process's span, lateness, starvation rows with their proxy events,
 * KernelCh lags, Coll/P2p starts). Probe traces' groups are never folded
 * (the starvation analysis marks steps): their scenario is skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/net/net_analysis.h"
#include "cli/filter.h"
#include "cli/spool.h"
#include "export/load_traces.h"
#include "net/net_print.h"
#include "reader_test_util.h"
#include "golden_sets.h"
#include "trace_builder.h"
#include "report/report_model.h"
#include "validate/validate_part.h"

static int failures;
static size_t compared, facts_seen, children_seen;
static const char *where;
#define CHECK(c)                                                                   \
  do {                                                                             \
    if (!(c)) {                                                                    \
      fprintf(stderr, "FAIL %s: %s (line %d)\n", where, #c, __LINE__);              \
      failures++;                                                                  \
    }                                                                              \
  } while (0)
#define EQ(a, b) CHECK((a) == (b))

static struct lens_spool_dir *spool;

/* A group loaded as the pass driver loads it: unfolded (fold 0), or with
 * the steps' facts; under a selection folded later, with or without the
 * load-time window, then the selection applied. */
static struct lens_model *load(const char *const *paths, size_t n, const struct lens_filter *f, int fold, int window) {
  struct lens_load_opts o = {.no_progress = 1, .no_notes = 1};
  int any = f && lens_filter_any(f);
  if (fold) o.load_flags = LENS_LOAD_FOLD_STEPS | LENS_LOAD_STEP_FACTS | (any ? LENS_LOAD_FOLD_LATER : 0);
  struct lens_load_window win = {0};
  if (any && window && (f->have_since || f->have_until) && !f->n_funcs) {
    win = (struct lens_load_window){.have_since = f->have_since, .have_until = f->have_until,
                                    .since_ns = f->since_ns, .until_ns = f->until_ns};
    o.window = &win;
  }
  struct lens_model *m = lens_cli_load("test", paths, n, &o);
  CHECK(m != NULL);
  if (!m || !any) return m;
  uint8_t comm_hit[8] = {0}, func_hit[8] = {0};
  struct lens_filter_tally t = {.comm_hit = comm_hit, .func_hit = func_hit};
  if (lens_filter_apply_ex("test", f, m, LENS_FILTER_PART, &t)) {
    CHECK(!"selection applied");
    lens_model_free(m);
    return NULL;
  }
  return m;
}

static char *memprint(void (*fn)(FILE *, const struct lens_model *, const struct lens_net *, int), int json,
                      const struct lens_model *m, const struct lens_net *n) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  if (json) lens_net_print_json(f, m, n);
  else fn(f, m, n, 0);
  fclose(f);
  return buf;
}

/* The network view of one model, as text or JSON (top: instances kept). */
static char *net_view(struct lens_model *m, int json) {
  struct lens_net_map_opts o = {.top_instances = json ? 0 : LENS_NET_PRINT_TOP_INSTANCES};
  struct lens_net_part *p = lens_net_map(m, &o);
  CHECK(p != NULL);
  if (!p) return NULL;
  struct lens_net *n = lens_net_merge(&p, 1, NULL);
  CHECK(n != NULL);
  char *s = n ? memprint(lens_net_print_text, json, m, n) : NULL;
  lens_net_free(n);
  lens_net_part_free(p);
  return s;
}

static void net_eq(struct lens_model *full, struct lens_model *fold) {
  for (int json = 0; json < 2; json++) {
    char *a = net_view(full, json), *b = net_view(fold, json);
    CHECK(a && b);
    if (a && b && strcmp(a, b)) {
      size_t k = 0;
      while (a[k] && a[k] == b[k]) k++;
      size_t from = k > 80 ? k - 80 : 0;
      fprintf(stderr, "FAIL %s: net %s differs at byte %zu:\n full: %.160s\n fold: %.160s\n", where,
              json ? "JSON" : "text", k, a + from, b + from);
      failures++;
    }
    free(a);
    free(b);
  }
}

static char *slurp(const char *name) {
  FILE *f = lens_spool_open(spool, name);
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&buf, &len);
  int c;
  while (o && (c = fgetc(f)) != EOF) fputc(c, o);
  if (o) fclose(o);
  fclose(f);
  return buf;
}

static void validate_eq(struct lens_model *full, struct lens_model *fold) {
  struct lens_validate_map_ctx ctx = {.spool = spool, .limit = -1};
  struct lens_validate_part *a = lens_validate_map(full, &ctx), *b = lens_validate_map(fold, &ctx);
  CHECK(a && b);
  if (a && b) {
    EQ(a->n_files, b->n_files);
    for (size_t i = 0; i < a->n_files && i < b->n_files; i++) EQ(a->file_events[i], b->file_events[i]);
    EQ(a->launches, b->launches);
    EQ(a->launches_listed, b->launches_listed);
    EQ(a->orphans, b->orphans);
    EQ(a->orphans_listed, b->orphans_listed);
    EQ(a->orphans_at, b->orphans_at);
    EQ(a->kch, b->kch);
    EQ(a->mapped, b->mapped);
    EQ(a->bad, b->bad);
    EQ(a->unmapped, b->unmapped);
    for (size_t k = 0; k < LENS_VALIDATE_N_FLAGS; k++) EQ(a->flags[k], b->flags[k]);
    CHECK(!memcmp(&a->cupti, &b->cupti, sizeof a->cupti));
    EQ(a->n_maps, b->n_maps);
    for (size_t i = 0; i < a->n_maps && i < b->n_maps; i++) {
      EQ(a->map_fixed[i], b->map_fixed[i]);
      EQ(a->map_offset[i], b->map_offset[i]);
    }
    char *x = slurp(a->spool), *y = slurp(b->spool);
    CHECK(x && y && !strcmp(x, y)); /* the launches listed, with their channels */
    free(x);
    free(y);
    lens_spool_remove(spool, a->spool);
    lens_spool_remove(spool, b->spool);
  }
  lens_validate_part_free(a);
  lens_validate_part_free(b);
}

static void report_eq(struct lens_model *full, struct lens_model *fold) {
  struct lens_report_part *pa = lens_report_pass_map(full, NULL), *pb = lens_report_pass_map(fold, NULL);
  CHECK(pa && pb);
  struct lens_report a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  struct lens_model_base base = {0};
  if (pa && pb && !lens_report_merge(&a, full, &pa, 1, &base) && !lens_report_merge(&b, fold, &pb, 1, &base)) {
    EQ(a.n_procs, b.n_procs);
    for (size_t i = 0; i < a.n_procs && i < b.n_procs; i++) {
      EQ(a.procs[i].first_ns, b.procs[i].first_ns);
      EQ(a.procs[i].last_ns, b.procs[i].last_ns);
    }
    EQ(a.n_late, b.n_late);
    for (size_t i = 0; i < a.n_late && i < b.n_late; i++) CHECK(!memcmp(&a.late[i], &b.late[i], sizeof a.late[i]));
    EQ(a.n_starve, b.n_starve);
    for (size_t i = 0; i < a.n_starve && i < b.n_starve; i++) {
      EQ(a.starve[i].thread, b.starve[i].thread);
      EQ(a.starve[i].proxy, b.starve[i].proxy);
      EQ(a.starve[i].proxy_starved, b.starve[i].proxy_starved);
      EQ(a.starve[i].kernel_ch, b.starve[i].kernel_ch);
      EQ(a.starve[i].kernel_ch_starved, b.starve[i].kernel_ch_starved);
      EQ(a.starve[i].starved_ns, b.starve[i].starved_ns);
    }
    EQ(a.kernel_ch, b.kernel_ch);
    EQ(a.kernel_ch_starved, b.kernel_ch_starved);
    EQ(a.lag_n, b.lag_n);
    EQ(a.lag_sum_ns, b.lag_sum_ns);
    EQ(a.lag_max_ns, b.lag_max_ns);
    for (int k = 0; k < LENS_REPORT_LAG_BINS; k++) EQ(a.lag_hist[k], b.lag_hist[k]);
    /* the starts are keyed by the model's event numbers (the job view's rows
     * use the same load's): the times, in order */
    size_t na = a.n_groups ? a.group_first[1] : 0, nb = b.n_groups ? b.group_first[1] : 0;
    EQ(na, nb);
    for (size_t i = 0; i < na && i < nb; i++) EQ(a.starts[i].start_ns, b.starts[i].start_ns);
  } else {
    CHECK(!"report merged");
  }
  lens_report_free(&a);
  lens_report_free(&b);
  lens_report_pass_free(pa);
  lens_report_pass_free(pb);
}

static void views_eq(const char *what, const char *const *paths, size_t n, const struct lens_filter *f) {
  char w[320];
  snprintf(w, sizeof w, "%s", what);
  where = w;
  struct lens_model *full = load(paths, n, f, 0, 0);
  for (int window = 0; window < 2 && full; window++) {
    if (window && !(f && (f->have_since || f->have_until))) break;
    snprintf(w, sizeof w, "%s%s", what, window ? " (load-time window)" : "");
    struct lens_model *fold = load(paths, n, f, 1, window);
    if (!fold) continue;
    CHECK(fold->steps_folded);
    EQ(fold->n_step_facts, fold->folded_steps);
    facts_seen += fold->n_step_facts;
    children_seen += fold->n_step_children;
    net_eq(full, fold);
    validate_eq(full, fold);
    report_eq(full, fold);
    compared++;
    lens_model_free(fold);
  }
  lens_model_free(full);
}

static void scenario(const char *name, const char *dir, const char *const *paths, size_t n, void *ctx) {
  (void)dir, (void)ctx;
  char err[256];
  struct lens_model *m = n ? lens_model_load_ex(paths, n, 0, err, sizeof err, NULL) : NULL;
  if (!m) return;
  struct golden_selections sel;
  golden_selections_of(m, &sel);
  int probe = m->n_sched > 0;
  lens_model_free(m);
  if (probe) return;
  char w[256];
  snprintf(w, sizeof w, "%s whole", name);
  views_eq(w, paths, n, NULL);
  for (size_t k = 0; k < GOLDEN_N_SELECTIONS; k++) {
    if (!sel.used[k]) continue;
    snprintf(w, sizeof w, "%s %s", name, sel.what[k]);
    views_eq(w, paths, n, &sel.f[k]);
  }
}

/* What the golden traces do not hold: a step's state 9 recorded twice
 * with different args, the later record read first (the earliest counts);
 * an earliest record without args (bytes unknown) after one with; steps
 * that start at the time of an event (an instance's number breaks the tie
 * by the order the STARTs were read); a NetPlugin under a step; a step
 * whose op was never read; a step never stopped and one re-posted; a recv
 * step with all its boundaries. */
#define CTX 0xC0ull
static void crafted(void) {
  char path[128];
  where = "crafted";
  struct tb *t = tb_open(rt_path(path, sizeof path, "fold-views.lens"), LENS_PRODUCER_TEST);
  tb_session(t, 0, 100, "nodeA", 6);
  tb_comm(t, CTX, 0x77, 0, 2, 1, 0, "world");
  tb_thread(t, 1, 101, LENS_ROLE_APP, "app", -1, UINT32_MAX);
  tb_thread(t, 2, 555, LENS_ROLE_PROXY, "proxy", 0, 0);
  tb_string(t, 1, "AllReduce");
  tb_string(t, 2, "ncclFloat32");
  struct lens_p_coll_api ca = {.func = 1, .count = 256, .datatype = 2};
  struct lens_p_coll cc = {.seq = 1, .func = 1, .count = 256, .datatype = 2, .n_channels = 1};
  struct lens_p_proxy_op snd = {.pid = 100, .peer = 1, .n_steps = 4, .chunk_size = 1024, .is_send = 1};
  struct lens_p_proxy_op rcv = {.pid = 100, .peer = 1, .n_steps = 2, .chunk_size = 1024, .is_send = 0};
  struct lens_p_proxy_step s0 = {.step = 0}, s1 = {.step = 1}, s2 = {.step = 2}, s3 = {.step = 3};
  uint64_t api = LENS_ID_MAKE(LENS_T_COLL_API, 1, 1), coll = LENS_ID_MAKE(LENS_T_COLL, 1, 2);
  uint64_t coll2 = LENS_ID_MAKE(LENS_T_COLL, 1, 3), coll3 = LENS_ID_MAKE(LENS_T_COLL, 1, 4);
  uint64_t op = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 1), rop = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 2);
  uint64_t a = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 10), b = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 11);
  uint64_t c = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 12), cr = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 13);
  uint64_t r0 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 14), lost = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 15);
  uint64_t net = LENS_ID_MAKE(LENS_T_NET_PLUGIN, 2, 16), open = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 17);
  tb_events_begin(t, 1);
  tb_start(t, LENS_T_COLL_API, api, 0, CTX, 10, 0, 0, &ca, sizeof ca);
  tb_start(t, LENS_T_COLL, coll, api, CTX, 11, 0, 0, &cc, sizeof cc);
  tb_stop(t, coll, 90);
  tb_stop(t, api, 91);
  tb_flush(t);
  tb_events_begin(t, 2);
  tb_start(t, LENS_T_PROXY_OP, op, coll, CTX, 20, 0, 0, &snd, sizeof snd);
  tb_start(t, LENS_T_PROXY_STEP, a, op, CTX, 21, 0, 0, &s0, sizeof s0);
  tb_state(t, a, 20, 23, 0, 0);
  tb_state(t, a, 9, 26, 500, 1); /* read first, recorded later */
  tb_state(t, a, 9, 25, 700, 1); /* the earliest: its 700 bytes */
  tb_state(t, a, 9, 27, 300, 1); /* read last */
  tb_stop(t, a, 30);
  tb_start(t, LENS_T_PROXY_STEP, b, op, CTX, 31, 0, 0, &s1, sizeof s1);
  tb_start(t, LENS_T_NET_PLUGIN, net, b, CTX, 32, 0, 0, NULL, 0);
  tb_stop(t, net, 33);
  tb_state(t, b, 9, 35, 900, 1);
  tb_state(t, b, 9, 34, 0, 0); /* the earliest has no args: bytes unknown */
  tb_stop(t, b, 40);
  tb_start(t, LENS_T_PROXY_STEP, c, op, CTX, 41, 0, 0, &s2, sizeof s2);
  tb_start(t, LENS_T_PROXY_STEP, cr, op, CTX, 42, 0, 0, &s2, sizeof s2); /* re-posted: c superseded */
  tb_state(t, cr, 9, 43, 64, 1);
  tb_stop(t, cr, 44);
  tb_stop(t, c, 45);
  tb_start(t, LENS_T_PROXY_STEP, open, op, CTX, 46, 0, 0, &s3, sizeof s3); /* never stopped */
  tb_stop(t, op, 50);
  tb_start(t, LENS_T_PROXY_OP, rop, coll, CTX, 51, 0, 0, &rcv, sizeof rcv);
  tb_start(t, LENS_T_PROXY_STEP, r0, rop, CTX, 60, 0, 0, &s0, sizeof s0); /* at coll2's start, read before it */
  tb_state(t, r0, 11, 62, 4096, 1);
  tb_state(t, r0, 12, 64, 0, 0);
  tb_stop(t, r0, 70);
  tb_start(t, LENS_T_PROXY_STEP, lost, LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 99), CTX, 70, 0, 0, &s1, sizeof s1);
  tb_stop(t, lost, 71);
  tb_stop(t, rop, 72);
  tb_flush(t);
  tb_events_begin(t, 1); /* Colls at the steps' start times, read after them */
  tb_start(t, LENS_T_COLL, coll2, api, CTX, 60, 0, 0, &cc, sizeof cc);
  tb_stop(t, coll2, 61);
  tb_start(t, LENS_T_COLL, coll3, api, CTX, 70, 0, 0, &cc, sizeof cc);
  tb_stop(t, coll3, 75);
  tb_flush(t);
  /* their ops (each Coll an instance), and a step at coll3's start read after it */
  uint64_t op2 = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 30), op3 = LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 31);
  uint64_t q0 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 32), q1 = LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 33);
  tb_events_begin(t, 2);
  tb_start(t, LENS_T_PROXY_OP, op2, coll2, CTX, 60, 0, 0, &snd, sizeof snd);
  tb_start(t, LENS_T_PROXY_STEP, q0, op2, CTX, 60, 0, 0, &s0, sizeof s0);
  tb_stop(t, q0, 66);
  tb_stop(t, op2, 67);
  tb_start(t, LENS_T_PROXY_OP, op3, coll3, CTX, 70, 0, 0, &snd, sizeof snd);
  tb_start(t, LENS_T_PROXY_STEP, q1, op3, CTX, 70, 0, 0, &s0, sizeof s0);
  tb_stop(t, q1, 79);
  tb_stop(t, op3, 80);
  tb_flush(t);
  tb_close(t);
  const char *p[1] = {path};
  views_eq("crafted", p, 1, NULL);
  uint8_t rank0[1] = {1};
  struct lens_filter rank = {.ranks = rank0, .n_ranks = 1};
  struct lens_filter mid = {.have_since = 1, .have_until = 1, .since_ns = 25, .until_ns = 61};
  views_eq("crafted --rank 0", p, 1, &rank);
  views_eq("crafted mid", p, 1, &mid);
  /* what it must show: the earliest 9's bytes, none for b, its NetPlugin on the link */
  char err[256];
  struct lens_model *m = lens_model_load_ex(p, 1, LENS_LOAD_FOLD_STEPS | LENS_LOAD_STEP_FACTS, err, sizeof err, NULL);
  CHECK(m != NULL);
  if (!m) return;
  EQ(m->n_step_facts, 9);
  EQ(m->n_step_children, 1);
  int saw_a = 0, saw_b = 0;
  for (size_t i = 0; i < m->n_step_facts; i++) {
    const struct lens_step_fact *x = &m->step_facts[i];
    if (x->start_mono_ns == 21) {
      saw_a = 1;
      CHECK(x->arg == 700 && (x->have & LENS_STEP_HAVE_ARG));
    }
    if (x->start_mono_ns == 31) {
      saw_b = 1;
      CHECK(!(x->have & LENS_STEP_HAVE_ARG));
    }
    if (x->start_mono_ns == 70 && x->stop_mono_ns == 71) EQ(x->op, -1);
  }
  CHECK(saw_a && saw_b);
  lens_model_free(m);
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : LENS_SOURCE_DIR "/tests/golden/traces";
  spool = lens_spool_dir_new("test", NULL);
  if (!spool) return 1;
  crafted();
  if (golden_sets_each(root, scenario, NULL) < 0) return 1;
  lens_spool_dir_free(spool);
  rt_cleanup();
  if (facts_seen < 10000) {
    fprintf(stderr, "FAIL: only %zu folded steps' facts read\n", facts_seen);
    failures++;
  }
  if (!children_seen) { /* net-ib's NetPlugin events under steps */
    fprintf(stderr, "FAIL: no event under a folded step\n");
    failures++;
  }
  if (compared < 150) {
    fprintf(stderr, "FAIL: only %zu folded loads compared\n", compared);
    failures++;
  }
  fprintf(stderr, "%zu folded loads compared with full ones (%zu step facts, %zu events under steps): %d failures\n",
          compared, facts_seen, children_seen, failures);
  return failures ? 1 : 0;
}
