/* A partial's records kept compressed between the map and the reduce
 * (job_part.h: lens_job_part_pack). The pass driver holds every host
 * group's partial until the reduce: on a 10^8-event job their records
 * (216 bytes each, one per rank and instance) were 0.9 GB of the reading's
 * peak, and consecutive records repeat most of their bytes (communicator,
 * function, sizes, the same strings), so one zstd frame takes them to a
 * small part of that. The reduce reads them back partial by partial. */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "job_part.h"
#include "lens_checked.h"

/* zstd's fastest positive level: the map runs on every group's thread. */
#define PACK_ZSTD_LEVEL 1

int lens_job_part_pack(struct lens_job_part *p) {
  if (!p->n_recs || !p->recs) return 0;
  size_t len;
  if (lens_mul_size(p->n_recs, sizeof *p->recs, &len)) return -1;
  size_t bound = ZSTD_compressBound(len);
  void *buf = malloc(bound);
  if (!buf) return -1;
  size_t z = ZSTD_compress(buf, bound, p->recs, len, PACK_ZSTD_LEVEL);
  void *keep = ZSTD_isError(z) ? NULL : malloc(z ? z : 1);
  if (!keep) {
    free(buf);
    return -1;
  }
  memcpy(keep, buf, z);
  free(buf);
  free(p->recs);
  p->recs = NULL;
  p->recs_z = keep;
  p->recs_z_len = z;
  return 0;
}

const struct lens_job_prec *lens_job_part_recs(const struct lens_job_part *p, struct lens_job_prec **scratch,
                                               size_t *cap) {
  if (!p->recs_z) return p->recs ? p->recs : *scratch; /* none packed: recs (NULL only when n_recs is 0) */
  size_t len;
  if (lens_mul_size(p->n_recs, sizeof *p->recs, &len)) return NULL;
  if (p->n_recs > *cap) {
    struct lens_job_prec *q = realloc(*scratch, len);
    if (!q) return NULL;
    *scratch = q, *cap = p->n_recs;
  }
  size_t got = ZSTD_decompress(*scratch, len, p->recs_z, p->recs_z_len);
  if (ZSTD_isError(got) || got != len) return NULL;
  return *scratch;
}

void *lens_job_pass_map(struct lens_model *m, void *ctx) {
  (void)ctx;
  struct lens_job_part *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  if (lens_job_map(m, p) || lens_job_part_own_strings(p) || lens_job_part_pack(p)) {
    lens_job_pass_free(p);
    return NULL;
  }
  return p;
}

void lens_job_pass_free(void *part) {
  if (!part) return;
  lens_job_part_free(part);
  free(part);
}

struct lens_job_part *lens_job_pass_take(void **parts, size_t n) {
  struct lens_job_part *v = calloc(n ? n : 1, sizeof *v);
  if (!v) return NULL;
  for (size_t g = 0; g < n; g++) {
    if (parts[g]) v[g] = *(struct lens_job_part *)parts[g];
    free(parts[g]);
    parts[g] = NULL;
  }
  return v;
}
