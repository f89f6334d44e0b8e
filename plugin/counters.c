#include "counters.h"

#include <string.h>

#include "clock.h"
#include "tslot.h"

struct lens_counters lens_cnt;

void lens_counters_retire_slot(uint64_t ring_full) {
  atomic_fetch_add_explicit(&lens_cnt.ring_full_retired, ring_full, memory_order_relaxed);
}

void lens_counters_snapshot(struct lens_drops *d) {
  memset(d, 0, sizeof *d);
  d->at_mono_ns = lens_mono_ns();
  uint64_t rf = atomic_load_explicit(&lens_cnt.ring_full_retired, memory_order_relaxed);
  for (uint32_t i = 0; lens_slots.slots && i < lens_slots.n; i++)
    rf += atomic_load_explicit(&lens_slots.slots[i].ring_full, memory_order_relaxed);
  d->ring_full = rf;
  d->no_thread_slot = atomic_load_explicit(&lens_cnt.no_thread_slot, memory_order_relaxed);
  d->null_handle = atomic_load_explicit(&lens_cnt.null_handle, memory_order_relaxed);
  d->bad_handle = atomic_load_explicit(&lens_cnt.bad_handle, memory_order_relaxed);
  d->write_errors = atomic_load_explicit(&lens_cnt.write_errors, memory_order_relaxed);
  d->cupti_records = atomic_load_explicit(&lens_cnt.cupti_records, memory_order_relaxed);
  d->blob_queue_full = atomic_load_explicit(&lens_cnt.blob_queue_full, memory_order_relaxed);
}

void lens_counters_reset(void) {
  atomic_store(&lens_cnt.no_thread_slot, 0);
  atomic_store(&lens_cnt.null_handle, 0);
  atomic_store(&lens_cnt.bad_handle, 0);
  atomic_store(&lens_cnt.write_errors, 0);
  atomic_store(&lens_cnt.cupti_records, 0);
  atomic_store(&lens_cnt.blob_queue_full, 0);
  atomic_store(&lens_cnt.ring_full_retired, 0);
  atomic_store(&lens_cnt.bad_type, 0);
  for (uint32_t i = 0; lens_slots.slots && i < lens_slots.n; i++)
    atomic_store_explicit(&lens_slots.slots[i].ring_full, 0, memory_order_relaxed);
}

void lens_drops_add_cupti(uint64_t n) {
  atomic_fetch_add_explicit(&lens_cnt.cupti_records, n, memory_order_relaxed);
}
