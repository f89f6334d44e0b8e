/* init/finalize are serialised by the lifecycle mutex; the hot path and the
 * emitters only read (lens_comm_lookup). */
#define _GNU_SOURCE
#include "comm_table.h"

#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"

uint32_t lens_ctx_salt;
struct lens_comm_entry lens_comms[LENS_MAX_COMMS];
static uint32_t g_next_comm_index;

void lens_comm_table_setup(void) {
  if (lens_ctx_salt) return;
  uint32_t s = 0;
  if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s)
    s = (uint32_t)(lens_mono_ns() ^ ((uint64_t)getpid() << 16));
  if (s == 0 || s == (uint32_t)(LENS_CTX_NOOP >> 32)) s = 0x9E3779B9u;
  __atomic_store_n(&lens_ctx_salt, s, __ATOMIC_RELEASE);
}

int lens_comm_add(uint64_t comm_id, const char *name, int rank, int nranks, int nnodes,
                  const struct lens_comm_info **out) {
  for (uint32_t i = 0; i < LENS_MAX_COMMS; i++) {
    struct lens_comm_entry *e = &lens_comms[i];
    if (atomic_load_explicit(&e->live, memory_order_relaxed)) continue;
    uint32_t gen = (atomic_load_explicit(&e->gen, memory_order_relaxed) + 1) & 0xFFFF;
    atomic_store_explicit(&e->gen, gen, memory_order_relaxed);
    memset(e->name, 0, sizeof e->name);
    if (name) strncpy(e->name, name, sizeof e->name - 1);
    e->info.context = ((uint64_t)lens_ctx_salt << 32) | ((uint64_t)gen << 16) | i;
    e->info.comm_id = comm_id;
    e->info.rank = rank;
    e->info.nranks = nranks;
    e->info.nnodes = nnodes;
    e->info.comm_index = g_next_comm_index++;
    e->info.name = e->name;
    atomic_store_explicit(&e->live, 1, memory_order_release);
    *out = &e->info;
    return 0;
  }
  return -1;
}

const struct lens_comm_info *lens_comm_remove(uint64_t ctx) {
  const struct lens_comm_info *c = lens_comm_lookup_inline(ctx);
  if (!c) return NULL;
  struct lens_comm_entry *e = &lens_comms[ctx & 0xFFFF];
  atomic_store_explicit(&e->live, 0, memory_order_release);
  return c;
}

int lens_comm_live_count(void) {
  int n = 0;
  for (uint32_t i = 0; i < LENS_MAX_COMMS; i++) n += atomic_load_explicit(&lens_comms[i].live, memory_order_relaxed);
  return n;
}

void lens_comm_table_reset(void) {
  for (uint32_t i = 0; i < LENS_MAX_COMMS; i++) atomic_store(&lens_comms[i].live, 0);
}

const struct lens_comm_info *lens_comm_lookup(uint64_t context) { return lens_comm_lookup_inline(context); }
