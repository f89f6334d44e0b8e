/* Single-producer single-consumer byte ring of variable-size records.
 *
 * The producer is one NCCL thread, the consumer the writer thread. head and
 * tail count bytes since the ring was created (never wrap in practice); the
 * producer publishes with a release store of head, the consumer frees with a
 * release store of tail. No locks, no syscalls, never blocks: a record that
 * does not fit is refused and the caller counts the drop.
 *
 * Records are contiguous: if one would straddle the end of the buffer, a PAD
 * record (kind LENS_REC_PAD) fills the rest and the record starts at 0. PAD
 * uses the size field only when the gap is < 64 KiB; the consumer always
 * skips to the next wrap on PAD, so its size is never needed. */
#ifndef NCCL_LENS_PLUGIN_RING_H
#define NCCL_LENS_PLUGIN_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

#define LENS_REC_PAD 0 /* ring-only record kind: skip to the end of the buffer */

struct lens_ring_prod {
  _Atomic uint64_t head; /* written by the producer */
  uint64_t cached_tail;  /* producer's last view of tail */
};

struct lens_ring {
  uint8_t *buf;
  uint64_t mask; /* size - 1; size is a power of two */
};

/* Reserve size bytes (a multiple of 8). Returns where to write, or NULL when
 * full. *new_head is what lens_ring_publish needs. */
static inline void *lens_ring_reserve(const struct lens_ring *r, struct lens_ring_prod *p,
                                      const _Atomic uint64_t *tail, uint32_t size, uint64_t *new_head) {
  uint64_t head = atomic_load_explicit(&p->head, memory_order_relaxed);
  uint64_t cap = r->mask + 1;
  uint64_t off = head & r->mask;
  uint64_t contig = cap - off;
  uint64_t need = contig < size ? contig + size : size;
  if (head + need - p->cached_tail > cap) {
    p->cached_tail = atomic_load_explicit(tail, memory_order_acquire);
    if (head + need - p->cached_tail > cap) return NULL;
  }
  if (contig < size) {
    struct lens_rec_hdr *pad = (struct lens_rec_hdr *)(r->buf + off);
    pad->size = (uint16_t)(contig < 65536 ? contig : 0);
    pad->kind = LENS_REC_PAD;
    pad->type = 0;
    pad->aux = 0;
    head += contig;
    off = 0;
  }
  *new_head = head + size;
  /* Ask for the line a few records ahead in exclusive state now: the
   * writer thread last read it, and fetching it at store time costs a
   * cross-core round trip on the hot path. */
  __builtin_prefetch(r->buf + ((off + 512) & r->mask), 1, 3);
  return r->buf + off;
}

static inline void lens_ring_publish(struct lens_ring_prod *p, uint64_t new_head) {
  atomic_store_explicit(&p->head, new_head, memory_order_release);
}

#endif
