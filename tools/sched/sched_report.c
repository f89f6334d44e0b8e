/* See sched_report.h. Not behind LENS_HAVE_BPF on purpose: this strong
 * reference is what links tools/analysis/sched/starvation.c into nccl-lens, so the
 * weak lens_analyze_starvation / lens_print_starvation that other commands
 * test for resolve (a weak reference alone never pulls an object out of the
 * lensread archive). */
#include "sched/sched_report.h"

#include "lensread.h"
#include "starvation.h"

int lens_sched_print_report(FILE *f, const char *trace_path) {
  char err[512];
  const char *paths[] = {trace_path};
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof err, NULL);
  if (!m) {
    fprintf(stderr, "nccl-lens sched: cannot read back %s: %s\n", trace_path, err);
    return -1;
  }
  lens_print_starvation(f, m);
  lens_model_free(m);
  return 0;
}
