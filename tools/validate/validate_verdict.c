/* How far NCCL's kernel events can be trusted, in one line. Any channel whose
 * timers are provably wrong (outside its kernel, ring overrun, stop before
 * start) counts against it; 1% of such channels makes the timing unreliable.
 * The clock map's error bound says how well GPU times are placed on host
 * time: with CUPTI it is half the room that every kernel's start and end
 * leave around its channels, so it includes the kernel's own prologue and
 * epilogue (about 1 us on an H100 with a fit residual of 10 ns, see
 * docs/gpu-check.md). Placement within PLACEMENT_NS is trusted; beyond it
 * only durations are. Without CUPTI only durations can be vouched for. */
#include <stdio.h>

#include "cli/format.h"
#include "analysis/gpu/gpu_analysis.h"
#include "validate_print.h"

#define PLACEMENT_NS 2000.0

void lens_validate_judge(const struct lens_model *m, struct lens_validate_verdict *v) {
  struct lens_validate_facts f = {0};
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    f.kch++;
    f.bad += (e->acc.flags & LENS_VALIDATE_BAD_FLAGS) != 0;
    f.unmapped += (e->acc.flags & LENS_ACC_NO_CLOCK_MAP) != 0;
  }
  const struct lens_gpu_report *r = lens_gpu_report_get(m);
  if (r) {
    f.have_report = 1;
    f.kernel_records = r->kernel_records;
    f.kernels_joined = r->kernels_joined;
    f.contradict = r->kernels_contradict;
  }
  lens_validate_judge_facts(&f, m->clock_maps, m->n_clock_maps, v);
}

void lens_validate_judge_facts(const struct lens_validate_facts *f, const struct lens_clock_map *maps, size_t n_maps,
                               struct lens_validate_verdict *v) {
  size_t kch = f->kch, bad = f->bad, unmapped = f->unmapped;
  double worst_bound = 0;
  int cupti_maps = 0;
  for (size_t i = 0; i < n_maps; i++) {
    if (maps[i].error_bound_ns > worst_bound) worst_bound = maps[i].error_bound_ns;
    cupti_maps += maps[i].source == LENS_TS_CUPTI;
  }
  const char *basis = cupti_maps ? "CUPTI kernel records" : "proxy notice times (biased late by the least polling delay)";
  char bound[32]; /* in human units, for the prose */
  lens_fmt_ns(worst_bound, bound, sizeof bound);
  size_t contradict = f->have_report ? f->contradict : 0;
  /* What to do for better absolute times depends on what was given. */
  char advice[160];
  if (!f->have_report || !f->kernel_records)
    snprintf(advice, sizeof advice, "enable CUPTI (NCCL_LENS_CUPTI=on) for absolute times");
  else if (!f->kernels_joined)
    snprintf(advice, sizeof advice,
             "CUPTI gave %zu kernel records but none joined a launch (no external ids of this run's launches)",
             f->kernel_records);
  else
    snprintf(advice, sizeof advice, "%zu CUPTI kernels joined, none usable for a clock map%s", f->kernels_joined,
             contradict ? " (they contradict their channels)" : " (graph replays or untimed records)");
  if (!kch) {
    v->level = "unmapped";
    snprintf(v->text, sizeof(v->text), "no KernelCh events: enable KernelCh in NCCL_LENS_EVENT_MASK to time kernels");
  } else if (unmapped == kch) {
    v->level = "unmapped";
    snprintf(v->text, sizeof(v->text), "no clock map: %zu KernelCh timers stay in raw GPU time", kch);
  } else if (contradict) {
    /* Not an error bound to widen: a kernel shorter than its channels means
     * the join or the records are wrong, and nothing measured with it holds. */
    v->level = "unreliable";
    snprintf(v->text, sizeof(v->text),
             "%zu joined CUPTI kernel(s) are shorter than the span of their channels, so the join contradicts the "
             "timers (their channels are flagged outside_kernel); %zu of %zu KernelCh have suspect timers",
             contradict, bad, kch);
  } else if (!cupti_maps) {
    /* Without CUPTI the absolute placement is only as good as the proxy's
     * quickest notice; durations (pTimer differences) are GPU-exact. */
    v->level = bad * 100 < kch ? "durations trusted" : "unreliable";
    snprintf(v->text, sizeof(v->text),
             "%zu of %zu KernelCh have suspect timers; durations are GPU-exact, absolute times from %s, spread %s: %s",
             bad, kch, basis, bound, advice);
  } else if (bad * 100 >= kch) {
    v->level = "unreliable";
    snprintf(v->text, sizeof(v->text),
             "%zu of %zu KernelCh have suspect timers (see flags): use CUPTI kernel times", bad, kch);
  } else if (worst_bound > PLACEMENT_NS) {
    v->level = "durations trusted";
    snprintf(v->text, sizeof(v->text),
             "%zu of %zu KernelCh have suspect timers; durations are GPU-exact, but GPU times are placed on host "
             "time only within +-%s from %s",
             bad, kch, bound, basis);
  } else {
    v->level = bad == 0 ? "trusted" : "mostly trusted";
    snprintf(v->text, sizeof(v->text), "%zu of %zu KernelCh have suspect timers%s; GPU times placed within +-%s from %s",
             bad, kch, bad ? " (see flags)" : "", bound, basis);
  }
}
