/* Drop counters written in DROPS chunks. ring_full lives in each thread slot
 * (one writer, no shared cache line on the hot path); the rest are rare
 * events and use shared relaxed atomics. */
#ifndef NCCL_LENS_PLUGIN_COUNTERS_H
#define NCCL_LENS_PLUGIN_COUNTERS_H

#include <stdatomic.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

struct lens_counters {
  _Atomic uint64_t no_thread_slot;
  _Atomic uint64_t null_handle;
  _Atomic uint64_t bad_handle;
  _Atomic uint64_t write_errors;
  _Atomic uint64_t cupti_records;
  _Atomic uint64_t blob_queue_full;
  _Atomic uint64_t ring_full_retired; /* ring_full of slots since recycled */
  _Atomic uint64_t bad_type;          /* descriptors with an unknown type (not written) */
};
extern struct lens_counters lens_cnt;

static inline void lens_count(_Atomic uint64_t *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

void lens_counters_retire_slot(uint64_t ring_full);
/* Cumulative totals now (sums the slots' ring_full). */
void lens_counters_snapshot(struct lens_drops *d);
void lens_counters_reset(void);

#endif
