/* The KernelCh table: what the clock fits and the flags read of each
 * KernelCh, one row each, in the model's event order (which is NCCL's
 * notice order along a channel: the flags rely on it).
 *
 * Why a table and not the events: the fits and flags are whole-run passes
 * (docs/cupti.md), so a time window of a huge job builds every KernelCh and
 * its Coll only to feed them; half of a 1 % window's cost on the generator's
 * jobs (docs/scale.md, "A time window"). Reading rows lets a builder other
 * than the model's (a window's scan, a table the writer keeps) feed the same
 * passes: one analysis, whatever built its input. A row whose event is not
 * in the model (ev -1) still takes part in the fits and flags and is counted
 * in the report; only built events get their fields set.
 *
 * Private to tools/analysis/gpu/. */
#ifndef NCCL_LENS_GPU_KCH_H
#define NCCL_LENS_GPU_KCH_H

#include <stddef.h>
#include <stdint.h>

#include "lensread.h"

struct lens_gpu_kch {
  int32_t ev;           /* model event, -1: not built */
  int32_t thread, proc; /* model indices: the proxy (or profiler) thread that reported it */
  int32_t channel;
  uint32_t session;     /* with proc and id: which KernelCh it is, in any load of the same files (gpu_memo.c) */
  uint64_t id;
  uint64_t start_gpu, stop_gpu;       /* pTimers, 0 none (stop: the first KernelChStop's arg) */
  /* host CLOCK_MONOTONIC: its START; its first KernelChStop, else its STOP; 0 none */
  uint64_t start_notice, stop_notice;
  uint64_t launch;      /* items of one launch may share timers: a key per (process, launch), 0 unknown */
  uint32_t flags;       /* LENS_ACC_* the flags pass sets (the event gets them) */
  int32_t cupti_kernel; /* the flags pass's, -1 none */
  uint8_t ex;           /* LENS_GPU_EX_*: kept out of fits (lens_gpu_fit_exclusions) */
};

struct lens_gpu_kch_table {
  struct lens_gpu_kch *v;
  size_t n;
};

/* Rows for every KernelCh of m, in event order: from m->kch_cols when the
 * reader gave them (a window's load, which built only some), else from its
 * events. -1 when out of memory. */
int lens_gpu_kch_from_model(const struct lens_model *m, struct lens_gpu_kch_table *t);
void lens_gpu_kch_free(struct lens_gpu_kch_table *t);

/* The launch key of a KernelCh: its Coll/P2p's launch id, else its Group
 * (every task of one plan), with its process. 0 when neither is known. */
uint64_t lens_gpu_launch_key(uint64_t launch_id, uint64_t parent_group, int32_t proc);

#endif
