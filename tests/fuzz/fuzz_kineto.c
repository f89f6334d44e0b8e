/* libFuzzer target: a torch.profiler (Kineto) trace as `nccl-lens job
 * FILE.json` takes it, a file another user may have written: the sniff
 * (lens_kineto_sniff), the streaming reader (lens_kineto_read, every event's
 * strings read to their end), the job map (lens_kineto_job_map: NCCL
 * kernels, their launches and API calls, the match keys), then as
 * fuzz_jobpart: the skeleton, the reduce with the causes, the host alignment
 * from the partial's clocks and the job report printed to /dev/null. Written
 * as rank-3.json (the job map takes a rank from the name when the file has
 * none). The seeds are plain JSON: a gzip'd input meets zlib's own CRC. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_job.h"
#include "kineto_job.h"
#include "kineto_read.h"

/* Reads what the reader hands over: a string not ended within its field, or
 * a count past what was delivered, is an ASan report or an abort. */
static int on_event(void *ctx, const struct lens_kineto_event *e) {
  size_t *n = ctx;
  const char *s[] = {e->name, e->cat, e->coll_name, e->dtype, e->pg_name, e->pg_desc};
  const size_t cap[] = {sizeof e->name, sizeof e->cat, sizeof e->coll_name, sizeof e->dtype, sizeof e->pg_name,
                        sizeof e->pg_desc};
  for (size_t i = 0; i < sizeof s / sizeof *s; i++)
    if (strnlen(s[i], cap[i]) == cap[i]) abort(); /* not NUL-terminated within its field */
  ++*n;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20)) return -1;
  const char *path = fuzz_write("rank-3.json", data, size);
  char err[512];
  (void)lens_kineto_sniff(path);
  size_t n = 0;
  struct lens_kineto_info info;
  if (!lens_kineto_read(path, on_event, &n, &info, err, sizeof err) && info.events != n) abort();
  struct lens_job_part p;
  struct lens_kineto_job_stats st;
  if (lens_kineto_job_map(path, &p, &st, err, sizeof err)) return 0;
  fuzz_job_report(&p);
  return 0;
}
