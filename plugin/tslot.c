/* Slot claiming and recycling. Only a thread's first call (and a call after
 * its slot was reset) comes here: one gettid() syscall and one
 * pthread_setspecific per thread life. */
#define _GNU_SOURCE
#include "tslot.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "counters.h"
#include "log.h"

struct lens_slot_table lens_slots;
__thread struct lens_tls lens_tls_cur __attribute__((tls_model("initial-exec")));

static pthread_key_t g_key;
static int g_key_ok;

/* Thread exit: the slot's records stay in the ring; the writer drains them
 * and only then frees the slot for another thread. */
static void slot_destructor(void *p) {
  struct lens_tslot *s = p;
  if (lens_tls_cur.slot == s) lens_tls_cur.slot = NULL;
  if (s && lens_slots.slots && s >= lens_slots.slots && s < lens_slots.slots + lens_slots.n) {
    int want = LENS_SLOT_ACTIVE;
    atomic_compare_exchange_strong_explicit(&s->state, &want, LENS_SLOT_RETIRING, memory_order_release,
                                            memory_order_relaxed);
    atomic_store_explicit(&lens_slots.changed, 1, memory_order_relaxed);
  }
}

int lens_tslots_setup(uint32_t max_threads, uint64_t ring_bytes) {
  if (lens_slots.slots) return 0; /* once per process: the mapping outlives sessions */
  if (!g_key_ok) {
    if (pthread_key_create(&g_key, slot_destructor) == 0)
      g_key_ok = 1;
    else
      lens_log(LENS_LOG_WARN, "nccl-lens: pthread_key_create failed; exited threads keep their slots");
  }
  size_t table = sizeof(struct lens_tslot) * max_threads;
  table = (table + 4095) & ~(size_t)4095;
  void *t = mmap(NULL, table, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (t == MAP_FAILED) {
    lens_log(LENS_LOG_WARN, "nccl-lens: cannot map the thread table (%zu bytes); recording nothing", table);
    return -1;
  }
  void *rings = mmap(NULL, (size_t)ring_bytes * max_threads, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (rings == MAP_FAILED) {
    lens_log(LENS_LOG_WARN, "nccl-lens: cannot map %u rings of %llu bytes; recording nothing", max_threads,
             (unsigned long long)ring_bytes);
    munmap(t, table);
    return -1;
  }
  struct lens_tslot *slots = t;
  for (uint32_t i = 0; i < max_threads; i++) {
    slots[i].index = i;
    slots[i].ring.buf = (uint8_t *)rings + (size_t)ring_bytes * i;
    slots[i].ring.mask = ring_bytes - 1;
  }
  lens_slots.ring_bytes = ring_bytes;
  lens_slots.n = max_threads;
  atomic_store_explicit(&lens_slots.epoch, 1, memory_order_relaxed);
  __atomic_store_n(&lens_slots.slots, slots, __ATOMIC_RELEASE);
  return 0;
}

void lens_tslots_release_pages(void) {
  if (!lens_slots.slots) return;
  for (uint32_t i = 0; i < lens_slots.n; i++) {
    struct lens_tslot *s = &lens_slots.slots[i];
    /* Only an empty ring can lose its pages; head/tail keep counting, so the
     * next record lands on a fresh zero page. */
    if (atomic_load(&s->prod.head) == atomic_load(&s->tail))
      madvise(s->ring.buf, lens_slots.ring_bytes, MADV_DONTNEED);
  }
}

void lens_tslots_reset_after_fork(void) {
  if (!lens_slots.slots) return;
  for (uint32_t i = 0; i < lens_slots.n; i++) {
    struct lens_tslot *s = &lens_slots.slots[i];
    atomic_store(&s->state, LENS_SLOT_FREE);
    atomic_store(&s->prod.head, 0);
    atomic_store(&s->tail, 0);
    s->prod.cached_tail = 0;
    atomic_store(&s->ring_full, 0);
    s->announced = 0;
  }
  atomic_fetch_add(&lens_slots.epoch, 1);
  lens_tls_cur.slot = NULL;
}

void lens_tslot_free(struct lens_tslot *s) {
  lens_counters_retire_slot(atomic_load_explicit(&s->ring_full, memory_order_relaxed));
  atomic_store_explicit(&s->ring_full, 0, memory_order_relaxed);
  s->announced = 0;
  atomic_store_explicit(&s->state, LENS_SLOT_FREE, memory_order_release);
  atomic_fetch_add_explicit(&lens_slots.free_epoch, 1, memory_order_release);
  atomic_store_explicit(&lens_slots.changed, 1, memory_order_relaxed);
}

struct lens_tslot *lens_tslot_claim_slow(void) {
  struct lens_slot_table *t = &lens_slots;
  struct lens_tslot *slots = __atomic_load_n(&t->slots, __ATOMIC_ACQUIRE);
  uint32_t epoch = atomic_load_explicit(&t->epoch, memory_order_relaxed);
  if (lens_tls_cur.slot && lens_tls_cur.epoch != epoch) lens_tls_cur.slot = NULL; /* table was reset */
  if (!slots) return NULL;
  uint32_t fe = atomic_load_explicit(&t->free_epoch, memory_order_acquire);
  /* All slots were taken last time and none has been freed since: fail fast. */
  if (lens_tls_cur.noslot_free_epoch == fe + 1) return NULL;
  for (uint32_t i = 0; i < t->n; i++) {
    struct lens_tslot *s = &slots[i];
    int want = LENS_SLOT_FREE;
    if (atomic_load_explicit(&s->state, memory_order_relaxed) != LENS_SLOT_FREE) continue;
    if (!atomic_compare_exchange_strong_explicit(&s->state, &want, LENS_SLOT_CLAIMING, memory_order_acquire,
                                                 memory_order_relaxed))
      continue;
    s->tid = (uint32_t)gettid();
    s->first_raw = lens_hot_now();
    s->dropped_pending = 0;
    s->last_launch_id = 0;
    s->ext_id = 0;
    atomic_store_explicit(&s->roles, 0, memory_order_relaxed);
    atomic_store_explicit(&s->proxy_rank, -1, memory_order_relaxed);
    atomic_store_explicit(&s->proxy_comm_index, UINT32_MAX, memory_order_relaxed);
    s->prod.cached_tail = atomic_load_explicit(&s->tail, memory_order_acquire);
    atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
    atomic_store_explicit(&s->state, LENS_SLOT_ACTIVE, memory_order_release);
    atomic_store_explicit(&t->changed, 1, memory_order_relaxed);
    lens_tls_cur.slot = s;
    lens_tls_cur.epoch = epoch;
    lens_tls_cur.noslot_free_epoch = 0;
    if (g_key_ok) pthread_setspecific(g_key, s);
    return s;
  }
  lens_tls_cur.noslot_free_epoch = fe + 1;
  return NULL;
}

void lens_tslots_forget_key(void) {
  /* The .so could not be pinned and may be unmapped after the last
   * finalize: a destructor pointing into it must not survive. */
  if (g_key_ok) {
    pthread_key_delete(g_key);
    g_key_ok = 0;
  }
}
