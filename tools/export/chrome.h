/* Chrome Trace Event JSON (Perfetto, chrome://tracing) from a loaded model.
 *
 * Layout: one process per (host, pid, rank); a track per thread as the trace
 * names it; host spans (API, Group, KernelLaunch, Coll/P2p enqueue, ProxyCtrl
 * and its states) as complete "X" events on their thread; operations in
 * flight (Coll/P2p start -> completion), ProxyOp, ProxyStep (with its state
 * phases nested) and NetPlugin as async "b"/"e" pairs, because they overlap
 * on one thread and complete events must nest; KernelCh as "X" on a
 * "GPU ch N" track per proxy thread and channel; the proxy thread's state
 * (Active/Idle levels, Sleep and Append windows, see proxy_levels.h) on a
 * "proxy state" track; probe starvation intervals on a "sched" track per
 * proxy thread. */
#ifndef NCCL_LENS_EXPORT_CHROME_H
#define NCCL_LENS_EXPORT_CHROME_H

#include <stddef.h>
#include <stdio.h>

#include "reader/lensread.h"

struct lens_chrome_counts {
  size_t complete;    /* "X" events, all tracks */
  size_t async_pairs; /* "b"/"e" pairs */
  size_t metadata;    /* "M" events */
  size_t ops;         /* Coll/P2p in-flight spans (one per Coll/P2p) */
  size_t gpu_slices;  /* KernelCh slices */
  size_t gpu_overlaps; /* of those, on an "overlapping" track (started before the previous one ended) */
  size_t ctrl_states; /* ProxyCtrl state slices */
  size_t starvation;  /* probe intervals */
  size_t proxy_levels; /* Active/Idle/Sleep/Append intervals of proxy threads */
};

/* Writes the whole JSON document. 0, or -1 on a write error. */
int lens_export_chrome(FILE *f, const struct lens_model *m, struct lens_chrome_counts *counts);

#endif
