/* libFuzzer target: a .lensjob partial file as `nccl-lens job --threads 1
 * FILE` takes it: lens_job_part_read, then the skeleton, the reduce (with
 * the causes), the host alignment from the partial's clocks and the report
 * printed to /dev/null; once as given, once with the sections' CRCs
 * recomputed (fuzz_fix_part_crcs) so that mutations reach the parsers. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "job.h"
#include "job/job_print.h"
#include "job_align.h"
#include "job_part.h"
#include "lensread.h"

static void one(const uint8_t *data, size_t size) {
  const char *path = fuzz_write("in.lensjob", data, size);
  struct lens_job_part p;
  char err[512];
  if (lens_job_part_read(path, &p, err, sizeof err)) return;
  struct lens_model *skel = lens_job_skeleton(&p, 1);
  struct lens_job j;
  if (skel && !lens_job_reduce_consume(&p, 1, &j, 0)) {
    size_t n_clocks = 0;
    struct lens_align_proc_clock *clocks = lens_job_parts_clocks(&p, 1, &n_clocks);
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
  lens_job_part_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20)) return -1;
  one(data, size); /* as given: the CRC checks */
  uint8_t *fixed = malloc(size ? size : 1);
  if (!fixed) return 0;
  memcpy(fixed, data, size);
  fuzz_fix_part_crcs(fixed, size); /* and with the sections' CRCs made right: the parsers */
  if (memcmp(fixed, data, size)) one(fixed, size);
  free(fixed);
  return 0;
}
