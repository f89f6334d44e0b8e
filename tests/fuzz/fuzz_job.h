/* Shared by the fuzz targets whose input becomes a job partial (a .lensjob
 * file, a Kineto trace): what `nccl-lens job` does with one partial after
 * reading it, the skeleton, the reduce with its causes, the host alignment
 * from the partial's clocks and the report in text and JSON to /dev/null.
 * Consumes p. */
#ifndef NCCL_LENS_FUZZ_JOB_H
#define NCCL_LENS_FUZZ_JOB_H

#include <stdlib.h>

#include "fuzz_util.h"
#include "job.h"
#include "job/job_print.h"
#include "job_align.h"
#include "job_part.h"
#include "lensread.h"

static inline void fuzz_job_report(struct lens_job_part *p) {
  struct lens_model *skel = lens_job_skeleton(p, 1);
  struct lens_job j;
  if (skel && !lens_job_reduce_consume(p, 1, &j, 0)) {
    size_t n_clocks = 0;
    struct lens_align_proc_clock *clocks = lens_job_parts_clocks(p, 1, &n_clocks);
    struct lens_align al;
    struct lens_align_opts o = {0};
    if (clocks && !lens_align_build_ends(clocks, n_clocks, &j, &o, &al)) {
      lens_job_print_text(fuzz_devnull(), skel, &j, 0, &al, NULL);
      lens_job_print_json(fuzz_devnull(), skel, &j, &al, NULL, NULL);
      lens_align_free(&al);
    }
    free(clocks);
    lens_job_free(&j);
  }
  if (skel) lens_job_skeleton_free(skel);
  lens_job_part_free(p);
}

#endif
