/* Internal state shared by the NVTX emitter's files (plugin/nvtx_*.c).
 *
 * Setup (nvtx_setup.c) fills struct lens_nvtx_globals once, before it sets
 * lens_nvtx_active; the hot-path files only read it. Per-thread state lives
 * in fixed per-slot tables in each file: no allocation, no lock, no TLS. */
#ifndef NCCL_LENS_PLUGIN_NVTX_EMIT_H
#define NCCL_LENS_PLUGIN_NVTX_EMIT_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCounters.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "hooks.h"
#include "nvtx_schemas.h"

/* Bounds. The open-range limit keeps a proxy thread under ~24 open NVTX
 * ranges (Nsight Systems copes badly with many unclosed ranges). */
#define LENS_NVTX_MAX_OPEN_OPS 16  /* open ProxyOp ranges per proxy thread (more: one range for them all) */
#define LENS_NVTX_OPEN_RANGE_LIMIT 24 /* ops + the ops past them + Sleep + Active, per thread */
#define LENS_NVTX_MAX_API_OPS 4    /* API ops kept per group for messages (the rest counted) */
#define LENS_NVTX_MAX_LAUNCH_DEPTH 4
/* Per-thread state lives in static tables indexed by the thread slot that
 * the core encodes in every event id, not in __thread variables: the plugin
 * is a STATIC_TLS module (the core's TLS is initial-exec), and glibc's static
 * TLS surplus for dlopen'ed modules is only a few KiB. Threads in slots past
 * this bound (or with no slot) get no NVTX ranges, counted. */
#define LENS_NVTX_MAX_SLOTS 256

/* Registered strings for fixed names. */
enum lens_nvtx_str {
  LENS_NVTX_STR_SLEEP, LENS_NVTX_STR_ACTIVE, LENS_NVTX_STR_COUNT
};

/* Drop and repair counters: relaxed atomics, touched only off the common path. */
struct lens_nvtx_drops {
  uint64_t proxy_ops_over_cap;  /* ProxyOp starts with the per-thread table full: no range of their own */
  uint64_t proxy_ops_orphaned;  /* open ProxyOp ranges ended at proxy Sleep (never stopped by NCCL) */
  uint64_t steps_evicted;       /* step table collisions (a step never stopped, e.g. duplicate start) */
  uint64_t api_ops_unnamed;     /* API ops beyond LENS_NVTX_MAX_API_OPS (counted in messages as "+N") */
  uint64_t launch_too_deep;     /* KernelLaunch nested deeper than LENS_NVTX_MAX_LAUNCH_DEPTH: not pushed */
  uint64_t no_slot;             /* events from threads without a slot below LENS_NVTX_MAX_SLOTS: not drawn */
};

struct lens_nvtx_globals {
  nvtxDomainHandle_t domain;
  nvtxStringHandle_t str[LENS_NVTX_STR_COUNT];
  int payload_ok;  /* payload schemas registered: payloads attached */
  int counters_ok; /* counters registered: samples; else lag marks */
  uint64_t counter_lag, counter_steps;
  struct lens_nvtx_drops drops;
};
extern struct lens_nvtx_globals lens_nvtx_g;

static inline void lens_nvtx_drop(uint64_t *counter) { __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED); }

/* A zeroed attribute block with version, size, category, the category's
 * colour and an ASCII message. */
static inline nvtxEventAttributes_t lens_nvtx_attr(uint32_t category, const char *msg) {
  static const uint32_t colors[] = {
      [LENS_NVTX_CAT_LAUNCH] = 0xFF76B900u,     /* green */
      [LENS_NVTX_CAT_PLAN] = 0xFF2CA02Cu,       /* darker green */
      [LENS_NVTX_CAT_PROXY_OP] = 0xFF1F77B4u,   /* blue */
      [LENS_NVTX_CAT_PROXY_CTRL] = 0xFFA0A0A0u, /* grey */
      [LENS_NVTX_CAT_KERNEL_CH] = 0xFFD62728u,  /* red */
  };
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = category;
  if (category < sizeof(colors) / sizeof(colors[0]) && colors[category]) {
    a.colorType = NVTX_COLOR_ARGB;
    a.color = colors[category];
  }
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = msg;
  return a;
}

/* The calling thread's entry of a per-slot table, for an event id this
 * thread issued (a start) or handles (a stop or state). A new owner of a
 * slot (the core recycles slots of exited threads) starts from zeroed state:
 * only a start may reset; a stop or state from a thread that does not own
 * the slot is ignored (NULL). */
static inline void *lens_nvtx_slot_state(void *table, size_t entry_size, uint64_t id, int is_start) {
  unsigned slot = LENS_ID_SLOT(id);
  if (slot >= LENS_NVTX_MAX_SLOTS) {
    if (is_start) lens_nvtx_drop(&lens_nvtx_g.drops.no_slot);
    return NULL;
  }
  char *e = (char *)table + (size_t)slot * entry_size;
  pthread_t *owner = (pthread_t *)e; /* every entry starts with its owner */
  pthread_t self = pthread_self();
  if (*owner == self) return e;
  if (!is_start) return NULL;
  memset(e, 0, entry_size);
  *owner = self;
  return e;
}

/* Host CLOCK_MONOTONIC ns through the vDSO (no syscall). */
uint64_t lens_nvtx_mono_ns(void);

/* Per-file handlers, dispatched by type from nvtx_hooks.c. */
void lens_nvtx_api_start(const struct lens_rec_start *rec);      /* GroupApi, CollApi, P2pApi */
void lens_nvtx_launch_start(const struct lens_rec_start *rec);   /* KernelLaunch */
void lens_nvtx_launch_stop(uint64_t id);
void lens_nvtx_task_start(const struct lens_rec_start *rec);     /* Coll, P2p: the plan mark */
void lens_nvtx_proxy_start(const struct lens_rec_start *rec);    /* ProxyOp, ProxyStep, ProxyCtrl, KernelCh */
void lens_nvtx_proxy_stop(uint64_t id);
void lens_nvtx_proxy_state(uint64_t id, uint32_t state, uint64_t arg, int has_args);
/* At the last finalize: end every proxy range still open (Active, Sleep, ProxyOps). */
void lens_nvtx_proxy_close_all(void);

#endif
