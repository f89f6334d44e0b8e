/* Communicators known to this process, and the opaque context values handed
 * to NCCL. A context encodes (salt, generation, table index), never a
 * pointer: lookup checks all three, so NULL, foreign (PXN) and stale values
 * are recognised without ever being dereferenced.
 *
 *   bits 32..63  per-process random salt (never 0)
 *   bits 16..31  generation of the table entry
 *   bits  0..15  table index */
#ifndef NCCL_LENS_PLUGIN_COMM_TABLE_H
#define NCCL_LENS_PLUGIN_COMM_TABLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "hooks.h"

#define LENS_MAX_COMMS 1024
/* Returned by init when the plugin is disabled or init failed internally:
 * every event on it is a cheap no-op. Its upper half never equals a salt. */
#define LENS_CTX_NOOP 0x4C454E534E4F4F50ull /* "LENSNOOP" */

struct lens_comm_entry {
  _Atomic uint32_t gen;
  _Atomic int live;
  struct lens_comm_info info;
  char name[128];
};

extern uint32_t lens_ctx_salt; /* set once per process before the first context */
extern struct lens_comm_entry lens_comms[LENS_MAX_COMMS];

void lens_comm_table_setup(void);
/* Registers a communicator; fills *out. 0 ok, -1 table full. */
int lens_comm_add(uint64_t comm_id, const char *name, int rank, int nranks, int nnodes,
                  const struct lens_comm_info **out);
/* Marks it finalized; returns its info (still readable) or NULL if ctx is not live. */
const struct lens_comm_info *lens_comm_remove(uint64_t ctx);
/* Number of live communicators. */
int lens_comm_live_count(void);
/* Fork child: forget all. */
void lens_comm_table_reset(void);

/* Hot-path check of a context value (1 = a live one of ours). */
static inline const struct lens_comm_info *lens_comm_lookup_inline(uint64_t ctx) {
  if ((uint32_t)(ctx >> 32) != lens_ctx_salt) return 0;
  uint32_t idx = (uint32_t)(ctx & 0xFFFF);
  if (idx >= LENS_MAX_COMMS) return 0;
  struct lens_comm_entry *e = &lens_comms[idx];
  if (!atomic_load_explicit(&e->live, memory_order_acquire)) return 0;
  if ((atomic_load_explicit(&e->gen, memory_order_relaxed) & 0xFFFF) != ((ctx >> 16) & 0xFFFF)) return 0;
  return &e->info;
}

#endif
