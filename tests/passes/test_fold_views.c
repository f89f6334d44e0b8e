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
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/net/net_analysis.h"
#include "cli/filter.h"
#include "cli/spool.h"
#include "export/load_traces.h"
#include "net/net_print.h"
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

static void scenario(const char *dir, const char *name) {
  char *paths[64];
  size_t n = 0;
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d)) && n < 64) {
    size_t l = strlen(de->d_name);
    if (l <= 5 || strcmp(de->d_name + l - 5, ".lens")) continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    paths[n++] = strdup(p);
  }
  closedir(d);
  char err[256];
  struct lens_model *m = n ? lens_model_load_ex((const char *const *)paths, n, 0, err, sizeof err, NULL) : NULL;
  if (m && !m->n_sched) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < m->n_events; i++) {
      const struct lens_event *e = &m->events[i];
      if (e->start_mono_ns && e->start_mono_ns < lo) lo = e->start_mono_ns;
      if (e->start_mono_ns > hi) hi = e->start_mono_ns;
      if (e->stop_mono_ns > hi) hi = e->stop_mono_ns;
    }
    uint64_t span = hi > lo && lo != UINT64_MAX ? hi - lo : 1;
    char comm[160] = "";
    if (m->n_comms) {
      if (m->comms[0].name[0]) snprintf(comm, sizeof comm, "%s", m->comms[0].name);
      else snprintf(comm, sizeof comm, "0x%" PRIx64, m->comms[0].comm_id);
    }
    char *comms[1] = {comm}, *funcs[1] = {"AllReduce"};
    uint8_t rank0[1] = {1};
    struct lens_filter mid = {.have_since = 1, .have_until = 1, .since_ns = span * 35 / 100,
                              .until_ns = span * 65 / 100};
    struct lens_filter everything = {.have_since = 1, .have_until = 1, .until_ns = span * 4 + 1000000000};
    struct lens_filter empty = {.have_since = 1, .since_ns = span * 4 + 1000000000};
    struct lens_filter one_comm = {.comms = comms, .n_comms = 1};
    struct lens_filter rank = {.ranks = rank0, .n_ranks = 1};
    struct lens_filter func = {.funcs = funcs, .n_funcs = 1};
    struct lens_filter combo = mid;
    combo.comms = comms, combo.n_comms = 1, combo.ranks = rank0, combo.n_ranks = 1;
    const struct { const char *what; const struct lens_filter *f; } sel[] = {
        {"whole", NULL},         {"--since/--until mid", &mid}, {"--until all", &everything},
        {"--since past the end", &empty}, {"--comm", &one_comm}, {"--rank 0", &rank},
        {"--func AllReduce", &func}, {"--comm --rank 0 mid", &combo}};
    lens_model_free(m);
    m = NULL;
    for (size_t k = 0; k < sizeof sel / sizeof sel[0]; k++) {
      if (sel[k].f && sel[k].f->n_comms && !comm[0]) continue;
      char w[256];
      snprintf(w, sizeof w, "%s %s", name, sel[k].what);
      views_eq(w, (const char *const *)paths, n, sel[k].f);
    }
  }
  lens_model_free(m);
  for (size_t i = 0; i < n; i++) free(paths[i]);
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : LENS_SOURCE_DIR "/tests/golden/traces";
  spool = lens_spool_dir_new("test", NULL);
  if (!spool) return 1;
  DIR *d = opendir(root);
  if (!d) {
    fprintf(stderr, "FAIL: no traces at %s\n", root);
    return 1;
  }
  char *names[128];
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)) && n < 128)
    if (de->d_name[0] != '.') names[n++] = strdup(de->d_name);
  closedir(d);
  for (size_t i = 0; i < n; i++) {
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
    scenario(dir, names[i]);
    free(names[i]);
  }
  lens_spool_dir_free(spool);
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
