/* libFuzzer target: a .lens trace (fixed, packed and zstd event chunks,
 * metadata chunks) through both readers and the job analysis, as
 * `nccl-lens job FILE` and `summary` take it: the general model
 * (lens_model_load, folded steps and not) with the GPU analysis and the
 * starvation merge as lens_cli_load runs them, the summary, the columnar
 * reader (lens_cols_read), the job view (map, reduce, causes), the host
 * alignment, and the reports printed to /dev/null; and the time-window
 * loader (lens_model_load_window) on a window taken from the input's last
 * bytes, with the GPU types kept as lens_cli_load keeps them. The chunks' CRCs are recomputed
 * first (fuzz_fix_trace_crcs). A sanitizer report, a crash or a
 * hang is a finding; a trace refused with a message is not. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyses.h"
#include "columns.h"
#include "fuzz_util.h"
#include "job.h"
#include "job/job_print.h"
#include "job_align.h"
#include "lensread.h"
#include "summary/summary_model.h"
#include "summary/summary_print.h"

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
  for (int fold = 0; fold < 2; fold++) {
    struct lens_model *m = lens_model_load_ex(paths, 1, fold ? LENS_LOAD_FOLD_STEPS : 0, err, sizeof err, NULL);
    if (!m) continue;
    /* as lens_cli_load: the GPU analysis (clock maps), the starvation merge */
    if (lens_analyze_gpu) lens_analyze_gpu(m, err, sizeof err);
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
  /* A window from the input's last 8 bytes (0..~4 ms wide, 0..~16 ms in), as lens_cli_load asks for it. */
  uint64_t tail = 0;
  if (size >= 8) memcpy(&tail, data + size - 8, 8);
  struct lens_load_window w = {.have_since = 1, .have_until = (int)(tail & 1), .since_ns = (tail >> 1) % 16000000,
                               .until_ns = 0};
  w.until_ns = w.since_ns + (tail >> 25) % 4000000;
  w.keep_types_parent = 1u << LENS_T_KERNEL_CH;
  w.keep_types_cupti = 1u << LENS_T_KERNEL_LAUNCH | 1u << LENS_T_COLL | 1u << LENS_T_P2P;
  w.keep_types_if = 1u << LENS_T_KERNEL_CH | 1u << LENS_T_KERNEL_LAUNCH;
  struct lens_model *wm = lens_model_load_window(paths, 1, 0, &w, err, sizeof err, NULL);
  if (wm) {
    if (lens_analyze_gpu) lens_analyze_gpu(wm, err, sizeof err);
    lens_model_free(wm);
  }
  struct lens_cols *c = lens_cols_new();
  if (c) {
    lens_cols_read(c, path, err, sizeof err);
    lens_cols_free(c);
  }
  return 0;
}
