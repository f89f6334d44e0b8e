/* Per-thread state: one slot per thread that calls the plugin, each with its
 * own ring. The table and all rings are mapped once, at the first init
 * (MAP_NORESERVE: untouched pages cost nothing), so a thread's first call
 * only claims a free slot with a compare-and-swap and never allocates.
 *
 * Slot life: FREE -> CLAIMING (owner fills identity) -> ACTIVE -> RETIRING
 * (thread exited: pthread key destructor) -> FREE (writer drained it). */
#ifndef NCCL_LENS_PLUGIN_TSLOT_H
#define NCCL_LENS_PLUGIN_TSLOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

#define LENS_SLOT_NONE 0xFFFFu /* slot bits of ids issued while no slot was free */
#define LENS_SCRATCH_BYTES 256

enum { LENS_SLOT_FREE = 0, LENS_SLOT_CLAIMING = 1, LENS_SLOT_ACTIVE = 2, LENS_SLOT_RETIRING = 3 };

struct lens_tslot {
  /* ---- producer cache line(s): written only by the owning thread ---- */
  struct lens_ring_prod prod;
  struct lens_ring ring;
  uint64_t seq;               /* per-thread event sequence (ids) */
  _Atomic uint64_t ring_full; /* drops; single writer, read by the writer thread */
  uint32_t dropped_pending;   /* set DROPPED_BEFORE on the next START that fits */
  uint32_t index;
  uint64_t last_launch_id;    /* latest KernelLaunch since the last Group stop, 0 none */
  uint64_t ext_id;            /* CUPTI external id pushed by the open KernelLaunch */
  _Atomic uint32_t roles;     /* LENS_ROLE_* */
  _Atomic int32_t proxy_rank;
  _Atomic uint32_t proxy_comm_index;
  uint32_t tid;
  uint64_t first_raw;         /* hot clock at claim */
  _Atomic uint32_t gen;       /* bumped at every claim: tells the writer a new owner came */
  /* ---- consumer line ---- */
  _Alignas(64) _Atomic uint64_t tail;
  _Atomic int state;
  /* writer-private bookkeeping */
  uint32_t ann_gen, ann_session, ann_roles, ann_comm;
  int32_t ann_rank;
  int announced;
  uint32_t ann_outer_tid;
  char ann_name[16];
  /* ---- scratch: the record is built here when the ring is full, so hooks still run ---- */
  _Alignas(64) uint64_t scratch[LENS_SCRATCH_BYTES / 8];
};

struct lens_slot_table {
  struct lens_tslot *slots;
  uint32_t n;
  uint64_t ring_bytes;
  _Atomic uint32_t epoch;      /* bumped when the table is reset (fork child) */
  _Atomic uint32_t free_epoch; /* bumped whenever a slot becomes FREE */
  _Atomic uint32_t changed;    /* thread table changed: registry needs a rewrite */
};

extern struct lens_slot_table lens_slots;

struct lens_tls {
  struct lens_tslot *slot;
  uint32_t epoch;
  uint32_t noslot_free_epoch; /* free_epoch + 1 when a claim last failed, 0 never */
};
extern __thread struct lens_tls lens_tls_cur __attribute__((tls_model("initial-exec")));

struct lens_tslot *lens_tslot_claim_slow(void);

/* This thread's slot, or NULL when none is free (drop counted by caller). */
static inline struct lens_tslot *lens_tslot_get(void) {
  struct lens_tslot *s = lens_tls_cur.slot;
  if (__builtin_expect(s != NULL && lens_tls_cur.epoch == atomic_load_explicit(&lens_slots.epoch,
                                                                               memory_order_relaxed), 1))
    return s;
  return lens_tslot_claim_slow();
}

static inline void lens_tslot_add_role(struct lens_tslot *s, uint32_t role) {
  if (!(atomic_load_explicit(&s->roles, memory_order_relaxed) & role))
    atomic_fetch_or_explicit(&s->roles, role, memory_order_relaxed);
}

/* First init: map the table and rings. 0 ok, -1 failed (logged; no slots). */
int lens_tslots_setup(uint32_t max_threads, uint64_t ring_bytes);
/* Last finalize: give ring pages back to the OS (mapping kept). */
void lens_tslots_release_pages(void);
/* Fork child: forget every slot (the parent's threads do not exist here). */
void lens_tslots_reset_after_fork(void);
/* Writer: slot drained and RETIRING -> FREE. */
void lens_tslot_free(struct lens_tslot *s);
/* Unpinned .so at last finalize: delete the pthread key so no destructor
 * outlives the code. */
void lens_tslots_forget_key(void);

#endif
