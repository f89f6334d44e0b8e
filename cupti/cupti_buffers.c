/* CUPTI activity buffers. CUPTI asks for a buffer on its own threads and
 * hands it back full on its worker thread; we turn each returned buffer into
 * a LENS_CHUNK_CUPTI chunk without copying: the buffer is allocated with room
 * for the chunk's lens_cupti_hdr in front, CUPTI gets the part after it. The
 * writer frees the whole block after writing. Nothing here blocks: when the
 * writer's queue is full the buffer is dropped and counted by the core. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cupti_internal.h"
#include "hooks.h"

static const struct lens_cupti_fns *bound;
static int buffers_out;

void lens_cupti_buffers_bind(const struct lens_cupti_fns *f) { __atomic_store_n(&bound, f, __ATOMIC_RELEASE); }

int lens_cupti_buffers_out(void) { return __atomic_load_n(&buffers_out, __ATOMIC_RELAXED); }

/* The header sits right before the records; its size keeps them 8-aligned. */
_Static_assert(sizeof(struct lens_cupti_hdr) % 8 == 0, "CUPTI records must stay 8-byte aligned");

uint64_t CUPTIAPI lens_cupti_timestamp_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void CUPTIAPI lens_cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = NULL;
  *size = 0;
  *max_records = 0; /* fill the buffer */
  /* Bounded memory: past the limit CUPTI drops records and counts them. */
  if (__atomic_add_fetch(&buffers_out, 1, __ATOMIC_RELAXED) > LENS_CUPTI_MAX_BUFFERS_OUT) {
    __atomic_sub_fetch(&buffers_out, 1, __ATOMIC_RELAXED);
    return;
  }
  uint8_t *block = malloc(sizeof(struct lens_cupti_hdr) + LENS_CUPTI_BUFFER_BYTES);
  if (!block) {
    __atomic_sub_fetch(&buffers_out, 1, __ATOMIC_RELAXED);
    return;
  }
  *buffer = block + sizeof(struct lens_cupti_hdr);
  *size = LENS_CUPTI_BUFFER_BYTES;
}

void CUPTIAPI lens_cupti_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
                                          size_t valid_size) {
  (void)ctx;
  (void)stream_id;
  if (!buffer) return;
  __atomic_sub_fetch(&buffers_out, 1, __ATOMIC_RELAXED);
  uint8_t *block = buffer - sizeof(struct lens_cupti_hdr);
  const struct lens_cupti_fns *f = __atomic_load_n(&bound, __ATOMIC_ACQUIRE);
  size_t dropped = 0;
  if (f && f->ActivityGetNumDroppedRecords(NULL, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
  if (dropped) lens_drops_add_cupti(dropped);
  if (valid_size == 0 || valid_size > size || valid_size > LENS_CUPTI_BUFFER_BYTES) {
    free(block);
    return;
  }
  struct lens_cupti_hdr *h = (struct lens_cupti_hdr *)block;
  memset(h, 0, sizeof(*h));
  h->delivered_mono_ns = lens_cupti_timestamp_mono_ns();
  h->valid_bytes = (uint32_t)valid_size;
  h->cupti_api_version = f ? f->version : 0;
  h->dropped_records = dropped;
  /* Ownership passes to the writer; on a full queue it frees and counts. */
  (void)lens_writer_submit(LENS_CHUNK_CUPTI, block, (uint32_t)(sizeof(*h) + valid_size));
}
