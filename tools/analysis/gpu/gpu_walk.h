/* Walking raw CUPTI activity buffers with libcupti's own record walker
 * (cuptiActivityGetNextRecord), loaded at run time so the tools work where
 * CUPTI is absent. Every record is bounds-checked before it is read: the
 * bytes may come from a truncated or corrupted trace. */
#ifndef NCCL_LENS_GPU_WALK_H
#define NCCL_LENS_GPU_WALK_H

#include <stddef.h>
#include <stdint.h>

#include <cupti_activity.h>

/* Called for each record; the record is complete within the buffer (at
 * least the size of the struct its kind names, for the kinds below). Return
 * non-zero to stop. The pointer is valid only during the call. */
typedef int (*lens_gpu_visit_fn)(void *ctx, const CUpti_Activity *rec);

/* Result of a walk. */
enum {
  LENS_GPU_WALK_OK = 0,        /* every record read */
  LENS_GPU_WALK_NO_CUPTI = -1, /* libcupti not loadable: nothing read */
  LENS_GPU_WALK_CORRUPT = -2,  /* stopped at a bad or cut record; records before it were visited */
};

/* Walks len bytes. *n_records (may be NULL) gets the number visited.
 * On a non-OK result err holds one line saying why. */
int lens_gpu_walk(const uint8_t *data, size_t len, lens_gpu_visit_fn visit, void *ctx, size_t *n_records,
                  char *err, size_t err_len);

/* Whether libcupti's walker is available (loads it on first call); if not,
 * why says so. */
int lens_gpu_walker_available(char *why, size_t why_len);

/* Bytes a record of this kind must have to be read, 0 for kinds we skip. */
size_t lens_gpu_record_size(CUpti_ActivityKind kind);

#endif
