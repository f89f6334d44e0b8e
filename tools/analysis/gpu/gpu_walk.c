/* libcupti's record walker, loaded at run time (see gpu_walk.h). We copy the
 * bytes into an 8-byte-aligned buffer first: CUPTI expects aligned records
 * and the walker takes a non-const pointer. */
#define _GNU_SOURCE
#include "gpu_walk.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUptiResult (*next_record_fn)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*result_string_fn)(CUptiResult, const char **);

static next_record_fn next_record;
static result_string_fn result_string;
static char load_error[256];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load_walker(void) {
  const char *override = getenv("NCCL_LENS_CUPTI_PATH");
  const char *names[] = {override && *override ? override : "libcupti.so.13", "libcupti.so",
                         "/usr/local/cuda/lib64/libcupti.so.13"};
  void *h = NULL;
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(load_error, sizeof(load_error), "libcupti not found (%s): CUPTI records not read", names[0]);
    return;
  }
  next_record = (next_record_fn)dlsym(h, "cuptiActivityGetNextRecord");
  result_string = (result_string_fn)dlsym(h, "cuptiGetResultString");
  if (!next_record)
    snprintf(load_error, sizeof(load_error), "libcupti lacks cuptiActivityGetNextRecord: CUPTI records not read");
}

int lens_gpu_walker_available(char *why, size_t why_len) {
  pthread_once(&load_once, load_walker);
  if (!next_record && why) snprintf(why, why_len, "%s", load_error);
  return next_record != NULL;
}

size_t lens_gpu_record_size(CUpti_ActivityKind kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
  case CUPTI_ACTIVITY_KIND_KERNEL: return sizeof(CUpti_ActivityKernel10);
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
  case CUPTI_ACTIVITY_KIND_DRIVER:
  case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
  default: return 0;
  }
}

static const char *result_name(CUptiResult r) {
  const char *s = NULL;
  if (result_string && result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "unknown CUPTI result";
}

int lens_gpu_walk(const uint8_t *data, size_t len, lens_gpu_visit_fn visit, void *ctx, size_t *n_records,
                  char *err, size_t err_len) {
  if (n_records) *n_records = 0;
  if (!lens_gpu_walker_available(err, err_len)) return LENS_GPU_WALK_NO_CUPTI;
  if (len == 0) return LENS_GPU_WALK_OK;
  /* Aligned private copy, padded so a record header read at the very end
   * stays inside our allocation whatever the walker does. */
  size_t cap = (len + 7) & ~(size_t)7;
  uint8_t *buf = aligned_alloc(8, cap + 64);
  if (!buf) {
    snprintf(err, err_len, "out of memory copying %zu bytes of CUPTI records", len);
    return LENS_GPU_WALK_CORRUPT;
  }
  memcpy(buf, data, len);
  memset(buf + len, 0, cap + 64 - len);
  int rc = LENS_GPU_WALK_OK;
  size_t n = 0;
  CUpti_Activity *rec = NULL;
  const uint8_t *prev = NULL;
  size_t end_known = 0;  /* end of the last record read */
  int end_unknown = 0;   /* its kind is not one whose size we know */
  for (;;) {
    CUptiResult r = next_record(buf, len, &rec);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) {
      /* CUPTI ends quietly before a record cut short; say so. */
      if (!end_unknown && end_known < len) {
        snprintf(err, err_len, "CUPTI records: %zu bytes after record %zu are not a whole record (cut short?)",
                 len - end_known, n);
        rc = LENS_GPU_WALK_CORRUPT;
      }
      break;
    }
    if (r != CUPTI_SUCCESS) {
      snprintf(err, err_len, "CUPTI records: walker stopped after %zu records: %s", n, result_name(r));
      rc = LENS_GPU_WALK_CORRUPT;
      break;
    }
    const uint8_t *p = (const uint8_t *)rec;
    if (!rec || p < buf || p >= buf + len || (prev && p <= prev)) {
      snprintf(err, err_len, "CUPTI records: walker returned a record outside the buffer after %zu records", n);
      rc = LENS_GPU_WALK_CORRUPT;
      break;
    }
    size_t need = lens_gpu_record_size(rec->kind);
    size_t off = (size_t)(p - buf);
    if (need > len - off) {
      snprintf(err, err_len, "CUPTI records: record %zu (kind %d) at offset %zu cut short (%zu of %zu bytes)",
               n, (int)rec->kind, off, len - off, need);
      rc = LENS_GPU_WALK_CORRUPT;
      break;
    }
    prev = p;
    end_known = off + need;
    end_unknown = need == 0;
    n++;
    if (visit && visit(ctx, rec)) break;
  }
  free(buf);
  if (n_records) *n_records = n;
  return rc;
}
