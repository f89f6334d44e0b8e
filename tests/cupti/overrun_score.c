/* See overrun_score.h. */
#include "overrun_score.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/gpu/gpu_analysis.h"

#define BAD (LENS_ACC_OUTSIDE_KERNEL | LENS_ACC_RING_OVERRUN | LENS_ACC_STOP_BEFORE_START | LENS_ACC_SHARED_TIMER | \
             LENS_ACC_NON_MONOTONIC)

static int event_rank(const struct lens_model *m, const struct lens_event *e) {
  if (e->comm >= 0) return m->comms[e->comm].rank;
  if (e->thread >= 0) return m->threads[e->thread].proxy_rank;
  return -1;
}

static int cmp_key(const struct truth_kch *a, int rank, int ch, uint64_t s, uint64_t t) {
  if (a->rank != rank) return a->rank < rank ? -1 : 1;
  if (a->channel != ch) return a->channel < ch ? -1 : 1;
  if (a->start_ptimer != s) return a->start_ptimer < s ? -1 : 1;
  if (a->stop_ptimer != t) return a->stop_ptimer < t ? -1 : 1;
  return 0;
}

static int cmp_truth(const void *pa, const void *pb) {
  const struct truth_kch *a = pa, *b = pb;
  int c = cmp_key(a, b->rank, b->channel, b->start_ptimer, b->stop_ptimer);
  if (c) return c;
  return (a->notice_start_ns > b->notice_start_ns) - (a->notice_start_ns < b->notice_start_ns);
}

/* The truth entry of a KernelCh: same rank, channel and timers, nearest
 * notice time (an overrun item and the item it read share timers). */
static struct truth_kch *truth_of(struct truth *t, const struct lens_model *m, const struct lens_event *e) {
  int rank = event_rank(m, e);
  size_t lo = 0, hi = t->n_kch;
  uint64_t s = e->p.kernel_ch.start_gpu_ns, st = e->p.kernel_ch.stop_gpu_ns;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cmp_key(&t->kch[mid], rank, e->p.kernel_ch.channel, s, st) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  struct truth_kch *best = NULL;
  long long best_d = -1;
  for (size_t j = lo; j < t->n_kch && !cmp_key(&t->kch[j], rank, e->p.kernel_ch.channel, s, st); j++) {
    long long d = llabs(t->kch[j].notice_start_ns - (long long)e->start_mono_ns);
    if (best_d < 0 || d < best_d) best_d = d, best = &t->kch[j];
  }
  return best;
}

int overrun_replay(const char *dir, const char *scenario, int nodes, int rpn, int iters, struct truth *t,
                   struct lens_model **m) {
  char cmd[1200], tp[600];
  snprintf(cmd, sizeof(cmd),
           "rm -rf %s/*; %s/bin/nccl-lens replay --scenario %s --nodes %d --ranks-per-node %d --iters %d "
           "--truth %s/truth.json --out %s --quiet",
           dir, LENS_BUILD_DIR, scenario, nodes, rpn, iters, dir, dir);
  if (strcmp(scenario, "-") && system(cmd) != 0) return -1; /* "-": the traces already in dir */
  snprintf(tp, sizeof(tp), "%s/truth.json", dir);
  if (truth_load(t, tp) != 0) return -1;
  qsort(t->kch, t->n_kch, sizeof(*t->kch), cmp_truth);
  const char *paths[64];
  static char names[64][600];
  size_t n = 0;
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d)) && n < 64)
    if (strstr(de->d_name, ".lens")) {
      snprintf(names[n], sizeof(names[n]), "%s/%s", dir, de->d_name);
      paths[n] = names[n];
      n++;
    }
  if (d) closedir(d);
  char err[512];
  *m = n ? lens_model_load(paths, n, err, sizeof(err), NULL) : NULL;
  if (!*m) fprintf(stderr, "load: %s\n", n ? err : "no traces");
  return *m ? 0 : -1;
}

/* Truth channels by (rank, channel, counter), for the item whose timers one read. */
static const struct truth *ct;
static int cmp_counter_idx(const void *pa, const void *pb) {
  const struct truth_kch *a = &ct->kch[*(const size_t *)pa], *b = &ct->kch[*(const size_t *)pb];
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->channel != b->channel) return a->channel < b->channel ? -1 : 1;
  return (a->counter > b->counter) - (a->counter < b->counter);
}

/* Whether the source of one of k's timers (the item it read, counter c)
 * reported that timer as its own: then k's timer is visible twice in the
 * trace. If the source read a later item's timer itself (the ring lapped
 * twice in a row) or was never reported, k's timer is a genuine GPU time
 * that no other report repeats: nothing in the trace tells it apart. */
static int source_reports_own(const struct truth *t, const size_t *idx, const struct truth_kch *k, uint64_t c,
                              int stop) {
  size_t lo = 0, hi = t->n_kch;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const struct truth_kch *x = &t->kch[idx[mid]];
    int less = x->rank != k->rank ? x->rank < k->rank
               : x->channel != k->channel ? x->channel < k->channel
                                          : x->counter < c;
    if (less) lo = mid + 1;
    else hi = mid;
  }
  for (size_t j = lo; j < t->n_kch; j++) {
    const struct truth_kch *x = &t->kch[idx[j]];
    if (x->rank != k->rank || x->channel != k->channel || x->counter != c) break;
    if ((stop ? x->stop_counter : x->start_counter) == c) return 1;
  }
  return 0;
}

void overrun_score(struct truth *t, const struct lens_model *m, struct overrun_score *sc) {
  memset(sc, 0, sizeof(*sc));
  size_t *idx = malloc((t->n_kch + 1) * sizeof(*idx));
  for (size_t j = 0; idx && j < t->n_kch; j++) idx[j] = j;
  ct = t;
  if (idx) qsort(idx, t->n_kch, sizeof(*idx), cmp_counter_idx);
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH || !e->p.kernel_ch.stop_gpu_ns) continue;
    const struct truth_kch *k = truth_of(t, m, e);
    if (!k) {
      sc->unmatched++;
      continue;
    }
    int flagged = (e->acc.flags & BAD) != 0;
    sc->channels++;
    if (k->overrun) sc->truth_overruns++;
    if (flagged) sc->flagged++;
    if (flagged && k->overrun) sc->true_pos++;
    if (flagged && !k->overrun) {
      for (int b = 0; b < 16; b++)
        if (e->acc.flags & (1u << b)) sc->false_pos_by_flag[b]++;
      if (getenv("DEBUG_OVERRUN"))
        fprintf(stderr, "fp: rank %d ch %d op %d flags %#x start %llu stop %llu ev %zu thread %d\n", k->rank,
                k->channel, k->op, e->acc.flags, (unsigned long long)k->start_ptimer,
                (unsigned long long)k->stop_ptimer, i, e->thread);
    }
    if (!flagged && k->overrun && idx) {
      int start_seen = k->start_counter == k->counter || source_reports_own(t, idx, k, k->start_counter, 0);
      int stop_seen = k->stop_counter == k->counter || source_reports_own(t, idx, k, k->stop_counter, 1);
      if (start_seen && stop_seen) sc->missed_visible++;
      else sc->missed_lapped++;
    }
    if (!flagged && k->overrun && getenv("DEBUG_OVERRUN"))
      fprintf(stderr, "fn: rank %d ch %d op %d start %llu stop %llu ev %zu\n", k->rank, k->channel, k->op,
              (unsigned long long)k->start_ptimer, (unsigned long long)k->stop_ptimer, i);
  }
  free(idx);
  sc->precision = sc->flagged ? (double)sc->true_pos / (double)sc->flagged : 1.0;
  sc->recall = sc->truth_overruns ? (double)sc->true_pos / (double)sc->truth_overruns : 1.0;
}

void overrun_score_print(const char *what, const struct overrun_score *sc) {
  printf("  %s: %zu channels, %zu true overruns, %zu flagged, %zu right: precision %.4f recall %.4f", what,
         sc->channels, sc->truth_overruns, sc->flagged, sc->true_pos, sc->precision, sc->recall);
  if (sc->missed_lapped || sc->missed_visible)
    printf("; missed: %zu whose timers no other report repeats (the ring lapped twice), %zu others",
           sc->missed_lapped, sc->missed_visible);
  if (sc->unmatched) printf(" (%zu channels not in the truth)", sc->unmatched);
  for (int b = 0; b < 16; b++)
    if (sc->false_pos_by_flag[b]) {
      const char *nm = lens_acc_name(1u << b);
      printf(" [clean but %s: %zu]", nm ? nm : "?", sc->false_pos_by_flag[b]);
    }
  printf("\n");
}
