/* Bounded multi-producer queue of chunks for the writer (CUPTI buffers,
 * NOTE lines). Lock-free (per-cell sequence numbers), never blocks: a full
 * queue drops the chunk and counts it. */
#ifndef NCCL_LENS_PLUGIN_BLOBQ_H
#define NCCL_LENS_PLUGIN_BLOBQ_H

#include <stdint.h>

#define LENS_BLOBQ_CAP 64

struct lens_blob {
  uint16_t type;
  uint32_t len;
  void *payload;
};

/* 0 queued, -1 full (the caller frees and counts). */
int lens_blobq_push(const struct lens_blob *b);
/* 1 popped into *b, 0 empty. Single consumer (the writer). */
int lens_blobq_pop(struct lens_blob *b);
/* Fork child: drop what the parent queued (the memory is the child's copy). */
void lens_blobq_reset(void);

#endif
