/* How far NCCL's kernel events can be trusted, in one line. The thresholds:
 * any channel whose timers are provably wrong (outside its kernel, ring
 * overrun, stop before start) counts against it; 1% of channels or a clock
 * map error bound over 1 us makes the timing unreliable for per-channel
 * analysis. Without CUPTI only durations can be vouched for. */
#include <stdio.h>

#include "reader/gpu_analysis.h"
#include "validate_print.h"

#define BAD_FLAGS (LENS_ACC_OUTSIDE_KERNEL | LENS_ACC_RING_OVERRUN | LENS_ACC_STOP_BEFORE_START | \
                   LENS_ACC_NON_MONOTONIC | LENS_ACC_SHARED_TIMER)

void lens_validate_judge(const struct lens_model *m, struct lens_validate_verdict *v) {
  size_t kch = 0, bad = 0, unmapped = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    kch++;
    bad += (e->acc.flags & BAD_FLAGS) != 0;
    unmapped += (e->acc.flags & LENS_ACC_NO_CLOCK_MAP) != 0;
  }
  double worst_bound = 0;
  int cupti_maps = 0;
  for (size_t i = 0; i < m->n_clock_maps; i++) {
    if (m->clock_maps[i].error_bound_ns > worst_bound) worst_bound = m->clock_maps[i].error_bound_ns;
    cupti_maps += m->clock_maps[i].source == LENS_TS_CUPTI;
  }
  const char *basis = cupti_maps ? "CUPTI kernel records" : "proxy notice times (biased late by the least polling delay)";
  if (!kch) {
    v->level = "unmapped";
    snprintf(v->text, sizeof(v->text), "no KernelCh events: enable KernelCh in NCCL_LENS_EVENT_MASK to time kernels");
  } else if (unmapped == kch) {
    v->level = "unmapped";
    snprintf(v->text, sizeof(v->text), "no clock map: %zu KernelCh timers stay in raw GPU time", kch);
  } else if (!cupti_maps) {
    /* Without CUPTI the absolute placement is only as good as the proxy's
     * quickest notice; durations (pTimer differences) are GPU-exact. */
    v->level = bad * 100 < kch ? "durations trusted" : "unreliable";
    snprintf(v->text, sizeof(v->text),
             "%zu of %zu KernelCh have suspect timers; durations are GPU-exact, absolute times from %s, spread %.0f ns: "
             "enable CUPTI (NCCL_LENS_CUPTI=on) for absolute times",
             bad, kch, basis, worst_bound);
  } else if (bad == 0 && worst_bound <= 1000) {
    v->level = "trusted";
    snprintf(v->text, sizeof(v->text), "all %zu KernelCh consistent; GPU times mapped within +-%.0f ns from %s", kch,
             worst_bound, basis);
  } else if (bad * 100 < kch && worst_bound <= 1000) {
    v->level = "mostly trusted";
    snprintf(v->text, sizeof(v->text),
             "%zu of %zu KernelCh have suspect timers (see flags); the rest mapped within +-%.0f ns from %s", bad, kch,
             worst_bound, basis);
  } else {
    v->level = "unreliable";
    snprintf(v->text, sizeof(v->text),
             "%zu of %zu KernelCh have suspect timers, clock error bound %.0f ns (%s): use CUPTI kernel times", bad,
             kch, worst_bound, basis);
  }
}
