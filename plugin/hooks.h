/* The seams between the plugin core and its optional emitters (NVTX, CUPTI).
 *
 * The core owns the hot path (plugin/adapter_*.c, plugin/record.c): it builds
 * the event record, stores it in the thread's ring, then calls these hooks
 * only when the emitter's active flag is set. Hooks run on NCCL's thread:
 * they must not allocate, lock, sleep or do I/O after their setup.
 *
 * Records passed to hooks are in ring form: lens_str_t fields hold the
 * const char* NCCL passed, "ts" is the raw hot-path clock. The payload for
 * rec->h.type follows the struct lens_rec_start. */
#ifndef NCCL_LENS_PLUGIN_HOOKS_H
#define NCCL_LENS_PLUGIN_HOOKS_H

#include <stdint.h>

#include "nccl-lens/trace_format.h"

struct lens_comm_info {
  uint64_t context; /* the value handed to NCCL */
  uint64_t comm_id;
  int rank, nranks, nnodes;
  uint32_t comm_index;
  const char *name; /* our copy; valid until the plugin is unloaded */
};

/* Core services for the emitters. */
/* The communicator behind a context value we issued, or NULL if the value is
 * NULL, foreign, or stale. Never dereferences the value. */
const struct lens_comm_info *lens_comm_lookup(uint64_t context);
/* Queue a chunk for the writer thread; takes ownership of payload (malloc'd),
 * which is free()d after writing. Safe from any thread; never blocks.
 * Returns 0, or -1 when the queue is full (payload freed, drop counted). */
int lens_writer_submit(uint16_t chunk_type, void *payload, uint32_t payload_len);
/* Add to the CUPTI dropped-record counter written in DROPS chunks. */
void lens_drops_add_cupti(uint64_t n);
/* Current host time, CLOCK_MONOTONIC ns (not for the hot path). */
uint64_t lens_now_mono_ns(void);
/* Which NCCL thread reports KernelCh in this process (nccl_lib.c): LENS_ROLE_PROFILER
 * on NCCL >= 2.31 (its profiler thread), LENS_ROLE_PROXY before (the proxy). */
extern uint32_t lens_kernel_ch_role;

/* The emitter functions are declared weak: the core calls setup only if it
 * is linked in, and the hot-path hooks only while the emitter has set its
 * active flag (defined in the core, so the core builds alone). */
#define LENS_WEAK __attribute__((weak))

/* ---- NVTX emitter (plugin/nvtx_*.c) ---- */
extern int lens_nvtx_active; /* set by lens_nvtx_setup when a tool is attached and NCCL_LENS_NVTX=1 */
LENS_WEAK void lens_nvtx_setup(void);  /* first init */
LENS_WEAK void lens_nvtx_comm_init(const struct lens_comm_info *comm);
LENS_WEAK void lens_nvtx_on_start(const struct lens_rec_start *rec);
LENS_WEAK void lens_nvtx_on_stop(uint64_t id);
LENS_WEAK void lens_nvtx_on_state(uint64_t id, uint32_t state, uint64_t arg, int has_args);
LENS_WEAK void lens_nvtx_teardown(void); /* last finalize */

/* ---- CUPTI (files in cupti/) ---- */
extern int lens_cupti_active; /* set when CUPTI is owned by us and external ids can be pushed */
LENS_WEAK void lens_cupti_setup(void);  /* first init: decides per NCCL_LENS_CUPTI, dlopens lazily */
/* KernelLaunch start: push an external id (CUSTOM2) for this launch; returns
 * the id pushed, 0 if none. */
LENS_WEAK uint64_t lens_cupti_launch_begin(uint64_t launch_event_id);
LENS_WEAK void lens_cupti_launch_end(uint64_t ext_id); /* KernelLaunch stop: pop */
LENS_WEAK void lens_cupti_teardown(void); /* last finalize: flush, disable, unsubscribe */
LENS_WEAK void lens_cupti_at_exit(void);  /* process exit without finalize: forced flush */

#endif
