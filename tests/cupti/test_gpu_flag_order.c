/* The KernelCh flags (tools/analysis/gpu/gpu_flags.c) depend on each
 * channel's items alone, and on channel numbers only as names: a channel
 * renumbered keeps its items' flags. The flags group the items by
 * (thread, channel) with a counting pass when the channel numbers span
 * little, and with a sort when they span much; so the committed replay
 * traces with KernelCh are analysed three times: as written (counting),
 * with every channel c renamed -c (counting from a negative base, the
 * channels in the opposite order) and renamed (c + 64 if its thread is
 * odd) * 2^24 - 2^30 (a span too wide to count: the sort; a renaming need
 * only be one to one within a thread). Every event's accuracy fields and the report's
 * flag counts must be the same, and the overrun scenario must hold flags
 * (so that a difference could show). The replay's overruns are on threads
 * of one channel; so the same for a synthetic run (synth.c) of 8 channels a
 * thread with every anomaly injected, where channels sorted wrong would
 * mix one channel's items into another's sequence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analyses.h"
#include "analysis/gpu/gpu_analysis.h"
#include "lensread.h"
#include "scenario_load.h"
#include "synth.h"

static int failures;

static void rename_channels(struct lens_model *m, int rename);

static struct lens_model *load(const char *dir, int rename) {
  char err[256];
  struct lens_model *m = scenario_load(dir);
  if (!m) return NULL;
  rename_channels(m, rename);
  if (lens_analyze_gpu(m, err, sizeof err)) {
    fprintf(stderr, "FAIL %s: GPU analysis: %s\n", dir, err);
    failures++;
  }
  return m;
}

static size_t scenario(const char *root, const char *name) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/%s", root, name);
  struct lens_model *m[3];
  for (int r = 0; r < 3; r++) m[r] = load(dir, r);
  size_t kch = 0, flagged = 0;
  if (!m[0] || !m[1] || !m[2]) {
    fprintf(stderr, "FAIL %s: does not load\n", name);
    failures++;
  } else {
    const struct lens_gpu_report *g[3];
    for (int r = 0; r < 3; r++) g[r] = lens_gpu_report_get(m[r]);
    for (int r = 1; r < 3; r++) {
      if (!g[0] || !g[r] || memcmp(g[0]->flag_counts, g[r]->flag_counts, sizeof g[0]->flag_counts)) {
        fprintf(stderr, "FAIL %s: flag counts differ with channels renamed (%d)\n", name, r);
        failures++;
      }
      for (size_t i = 0; i < m[0]->n_events; i++)
        if (memcmp(&m[0]->events[i].acc, &m[r]->events[i].acc, sizeof m[0]->events[i].acc)) {
          fprintf(stderr, "FAIL %s: event %zu: accuracy differs with channels renamed (%d): flags 0x%x vs 0x%x\n",
                  name, i, r, m[0]->events[i].acc.flags, m[r]->events[i].acc.flags);
          failures++;
          break;
        }
    }
    for (size_t i = 0; i < m[0]->n_events; i++) {
      if (m[0]->events[i].type != LENS_T_KERNEL_CH) continue;
      kch++;
      flagged += (m[0]->events[i].acc.flags & (LENS_ACC_RING_OVERRUN | LENS_ACC_SHARED_TIMER)) != 0;
    }
    printf("%-20s %6zu KernelCh, %5zu flagged as overrun\n", name, kch, flagged);
  }
  for (int r = 0; r < 3; r++) lens_model_free(m[r]);
  return flagged;
}

static void rename_channels(struct lens_model *m, int rename) {
  for (size_t i = 0; i < m->n_events; i++) {
    struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    int32_t c = e->p.kernel_ch.channel;
    if (c < 0 || c > 63) continue; /* renamed only where the renaming keeps order and fits */
    if (rename == 1) e->p.kernel_ch.channel = -c;
    if (rename == 2) /* and the odd threads' channels apart from the even ones' */
      e->p.kernel_ch.channel = (int32_t)(((int64_t)(c + 64 * (e->thread & 1)) << 24) - (1 << 30));
  }
}

static void synthetic(void) {
  struct synth_opts o;
  synth_default(&o);
  o.channels = 8;
  enum synth_anomaly kinds[] = {SYN_OVERRUN, SYN_STOP_BEFORE_START, SYN_P2P_PAIR, SYN_OVERRUN, SYN_OUTSIDE_KERNEL,
                                SYN_OVERRUN};
  int at[] = {100, 400, 700, 1000, 1300, 1600};
  for (int i = 0; i < 6; i++) o.anomaly_at[i] = kinds[i], o.anomaly_launch[i] = at[i];
  o.n_anomalies = 6;
  struct synth s[3];
  char err[256];
  size_t flagged = 0;
  for (int r = 0; r < 3; r++) {
    if (synth_build(&s[r], &o)) {
      fprintf(stderr, "FAIL synthetic: build\n");
      failures++;
      for (int k = 0; k < r; k++) lens_gpu_release(&s[k].m), synth_free(&s[k]);
      return;
    }
    rename_channels(&s[r].m, r);
    if (lens_analyze_gpu(&s[r].m, err, sizeof err)) {
      fprintf(stderr, "FAIL synthetic: GPU analysis: %s\n", err);
      failures++;
    }
  }
  size_t differ = 0;
  for (size_t i = 0; i < s[0].m.n_events; i++) {
    flagged += (s[0].m.events[i].acc.flags & (LENS_ACC_RING_OVERRUN | LENS_ACC_SHARED_TIMER)) != 0;
    for (int r = 1; r < 3; r++)
      if (s[0].m.events[i].acc.flags != s[r].m.events[i].acc.flags && !differ++)
        fprintf(stderr, "FAIL synthetic: event %zu: flags 0x%x, with channels renamed (%d) 0x%x\n", i,
                s[0].m.events[i].acc.flags, r, s[r].m.events[i].acc.flags);
  }
  if (differ) failures++;
  if (!flagged) {
    fprintf(stderr, "FAIL synthetic: no KernelCh flagged as overrun\n");
    failures++;
  }
  printf("%-20s %6d channels a thread, %5zu flagged as overrun\n", "synthetic", o.channels, flagged);
  for (int r = 0; r < 3; r++) {
    lens_gpu_release(&s[r].m); /* a synthetic model is not freed by lens_model_free, which would release it */
    synth_free(&s[r]);
  }
}

int main(int argc, char **argv) {
  const char *root = argc > 1 ? argv[1] : LENS_SOURCE_DIR "/tests/golden/traces";
  static const char *const names[] = {"overrun", "all", "sendrecv", "net-gpu-bound", "graph"};
  size_t overrun_flagged = 0;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    size_t f = scenario(root, names[i]);
    if (!i) overrun_flagged = f;
  }
  synthetic();
  if (!overrun_flagged) {
    fprintf(stderr, "FAIL overrun: no KernelCh flagged, nothing to compare\n");
    failures++;
  }
  printf("%d failure(s)\n", failures);
  return failures != 0;
}
