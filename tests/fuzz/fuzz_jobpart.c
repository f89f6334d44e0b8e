/* libFuzzer target: a .lensjob partial file as `nccl-lens job --threads 1
 * FILE` takes it: lens_job_part_read, then the skeleton, the reduce (with
 * the causes), the host alignment from the partial's clocks and the report
 * printed to /dev/null; once as given, once with the sections' CRCs
 * recomputed (fuzz_fix_part_crcs) so that mutations reach the parsers. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_job.h"

static void one(const uint8_t *data, size_t size) {
  const char *path = fuzz_write("in.lensjob", data, size);
  struct lens_job_part p;
  char err[512];
  if (lens_job_part_read(path, &p, err, sizeof err)) return;
  fuzz_job_report(&p);
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
