/* Vyukov's bounded MPMC queue, used here with one consumer. */
#include "blobq.h"

#include <stdatomic.h>
#include <stdlib.h>

struct cell {
  _Atomic uint64_t seq;
  struct lens_blob b;
};

static struct cell g_cells[LENS_BLOBQ_CAP];
static _Atomic uint64_t g_enq, g_deq;
static _Atomic int g_init; /* 0 untouched, 1 initialising, 2 ready */

static void ensure_init(void) {
  if (atomic_load_explicit(&g_init, memory_order_acquire) == 2) return;
  int want = 0;
  if (atomic_compare_exchange_strong(&g_init, &want, 1)) {
    for (uint64_t i = 0; i < LENS_BLOBQ_CAP; i++) atomic_store_explicit(&g_cells[i].seq, i, memory_order_relaxed);
    atomic_store_explicit(&g_init, 2, memory_order_release);
  } else {
    while (atomic_load_explicit(&g_init, memory_order_acquire) != 2) {
    }
  }
}

int lens_blobq_push(const struct lens_blob *b) {
  ensure_init();
  uint64_t pos = atomic_load_explicit(&g_enq, memory_order_relaxed);
  for (;;) {
    struct cell *c = &g_cells[pos % LENS_BLOBQ_CAP];
    uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    int64_t dif = (int64_t)seq - (int64_t)pos;
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&g_enq, &pos, pos + 1, memory_order_relaxed, memory_order_relaxed)) {
        c->b = *b;
        atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
        return 0;
      }
    } else if (dif < 0) {
      return -1; /* full */
    } else {
      pos = atomic_load_explicit(&g_enq, memory_order_relaxed);
    }
  }
}

int lens_blobq_pop(struct lens_blob *b) {
  ensure_init();
  uint64_t pos = atomic_load_explicit(&g_deq, memory_order_relaxed);
  struct cell *c = &g_cells[pos % LENS_BLOBQ_CAP];
  uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
  if ((int64_t)seq - (int64_t)(pos + 1) < 0) return 0;
  *b = c->b;
  atomic_store_explicit(&g_deq, pos + 1, memory_order_relaxed);
  atomic_store_explicit(&c->seq, pos + LENS_BLOBQ_CAP, memory_order_release);
  return 1;
}

void lens_blobq_reset(void) {
  atomic_store(&g_init, 0);
  atomic_store(&g_enq, 0);
  atomic_store(&g_deq, 0);
  ensure_init();
}
