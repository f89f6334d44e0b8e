/* The KernelCh table's contract (tools/analysis/gpu/gpu_kch.h): the clock
 * fits and the flags read rows, and a row need not be a built event. A
 * window's load builds only the window's KernelCh yet must give the maps and
 * flags of the whole run; so, on the committed replay traces without CUPTI
 * evidence (a window builds every KernelCh where there is some), the GPU
 * analysis is run twice on one model: on the table of every KernelCh, and on
 * the same table with every other row (then every third, then all but one
 * per thread) marked not built. The clock maps and the report's counts must
 * be the same, and every event of a built row must get the same fields; the
 * events of the rows not built keep the fields a reset gives them. The
 * overrun scenario must hold flags, so that a difference could show. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyses.h"
#include "analysis/gpu/gpu_analysis.h"
#include "analysis/gpu/gpu_kch.h"
#include "lensread.h"
#include "scenario_load.h"

static int failures;

#define FAIL(...) (fprintf(stderr, "FAIL " __VA_ARGS__), failures++)

/* What the analysis leaves that a window must reproduce. */
struct result {
  struct lens_clock_map *maps; size_t n_maps;
  struct lens_accuracy *acc; /* per event */
  size_t kch, kch_mapped, flag_counts[16];
};

static int take(const struct lens_model *m, struct result *r) {
  const struct lens_gpu_report *g = lens_gpu_report_get(m);
  if (!g) return -1;
  r->n_maps = m->n_clock_maps;
  r->maps = malloc((r->n_maps + 1) * sizeof *r->maps);
  r->acc = malloc((m->n_events + 1) * sizeof *r->acc);
  if (!r->maps || !r->acc) return -1;
  memcpy(r->maps, m->clock_maps, r->n_maps * sizeof *r->maps);
  for (size_t i = 0; i < m->n_events; i++) r->acc[i] = m->events[i].acc;
  r->kch = g->kch, r->kch_mapped = g->kch_mapped;
  memcpy(r->flag_counts, g->flag_counts, sizeof r->flag_counts);
  return 0;
}

/* hide(q, row): whether row q is marked not built. */
static int hidden(int how, size_t q, const struct lens_gpu_kch *k, const struct lens_gpu_kch_table *t) {
  if (how == 0) return q % 2 == 1;
  if (how == 1) return q % 3 != 0;
  for (size_t p = 0; p < q; p++) /* all but the first of each thread */
    if (t->v[p].thread == k->thread) return 1;
  return 0;
}

static size_t scenario(const char *root, const char *name) {
  char dir[1024], err[256];
  snprintf(dir, sizeof dir, "%s/%s", root, name);
  struct lens_model *m = scenario_load(dir);
  if (!m) {
    FAIL("%s: does not load\n", name);
    return 0;
  }
  if (m->n_cupti) { /* a window builds every KernelCh there */
    printf("%-16s CUPTI evidence: not a case\n", name);
    lens_model_free(m);
    return 0;
  }
  struct result whole = {0};
  if (lens_analyze_gpu(m, err, sizeof err) || take(m, &whole)) {
    FAIL("%s: GPU analysis: %s\n", name, err);
    lens_model_free(m);
    return 0;
  }
  size_t flagged = 0;
  for (size_t i = 0; i < m->n_events; i++) flagged += m->events[i].type == LENS_T_KERNEL_CH && whole.acc[i].flags;
  for (int how = 0; how < 3; how++) {
    struct lens_gpu_kch_table t;
    if (lens_gpu_kch_from_model(m, &t)) {
      FAIL("%s: table: out of memory\n", name);
      break;
    }
    size_t n_hidden = 0;
    uint8_t *is_hidden = calloc(m->n_events + 1, 1);
    for (size_t q = 0; q < t.n; q++)
      if (hidden(how, q, &t.v[q], &t)) is_hidden[t.v[q].ev] = 1, t.v[q].ev = -1, n_hidden++;
    if (lens_gpu_analyze_rows(m, &t, err, sizeof err)) FAIL("%s (%d): GPU analysis on rows: %s\n", name, how, err);
    const struct lens_gpu_report *g = lens_gpu_report_get(m);
    if (!g || g->kch != whole.kch || g->kch_mapped != whole.kch_mapped ||
        memcmp(g->flag_counts, whole.flag_counts, sizeof whole.flag_counts))
      FAIL("%s (%d): the report's KernelCh counts differ (kch %zu / %zu, mapped %zu / %zu)\n", name, how,
           g ? g->kch : 0, whole.kch, g ? g->kch_mapped : 0, whole.kch_mapped);
    if (m->n_clock_maps != whole.n_maps)
      FAIL("%s (%d): %zu clock maps, the whole table %zu\n", name, how, m->n_clock_maps, whole.n_maps);
    else
      for (size_t k = 0; k < whole.n_maps; k++)
        if (memcmp(&m->clock_maps[k], &whole.maps[k], sizeof whole.maps[k])) {
          FAIL("%s (%d): clock map %zu differs\n", name, how, k);
          break;
        }
    size_t differ = 0;
    for (size_t i = 0; i < m->n_events; i++) {
      const struct lens_accuracy *a = &m->events[i].acc;
      int ok = is_hidden[i] ? a->time_source == LENS_TS_HOST_NOTICE && !a->gpu_start_mono_ns &&
                                  !a->gpu_stop_mono_ns && !a->notice_lag_ns &&
                                  !(a->flags & ~(uint32_t)LENS_ACC_STARVED)
                            : !memcmp(a, &whole.acc[i], sizeof *a);
      if (!ok && !differ++)
        FAIL("%s (%d): event %zu (%s): flags 0x%x, the whole table's 0x%x\n", name, how, i,
             is_hidden[i] ? "not built" : "built", a->flags, whole.acc[i].flags);
    }
    printf("%-16s %6zu KernelCh, %5zu not built (%d), %3zu maps, %4zu flagged: %s\n", name, t.n, n_hidden, how,
           m->n_clock_maps, flagged, differ ? "differ" : "same");
    free(is_hidden);
    lens_gpu_kch_free(&t);
  }
  free(whole.maps);
  free(whole.acc);
  lens_model_free(m);
  return flagged;
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : LENS_SOURCE_DIR "/tests/golden/traces";
  static const char *const names[] = {"overrun", "all", "sendrecv", "net-gpu-bound", "graph"};
  size_t overrun_flagged = scenario(root, names[0]);
  for (size_t i = 1; i < sizeof names / sizeof *names; i++) scenario(root, names[i]);
  if (!overrun_flagged) FAIL("overrun: no KernelCh flagged, nothing to compare\n");
  printf("%d failure(s)\n", failures);
  return failures != 0;
}
