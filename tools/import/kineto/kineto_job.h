/* One rank's Kineto trace as a partial of the job view (job_part.h), so that
 * `nccl-lens job` matches, decomposes and explains torch.profiler traces by
 * the same reduce, causes and printing as its own (docs/kineto-import.md).
 *
 * One record per NCCL kernel:
 *   - match key: the process group ("Process Group Name"; without collective
 *     args, pre-2024 files: the kernel's stream) and `Seq` where every kernel
 *     of that group carries one, else the kernel's order among the group's
 *     kernels of its function (by start time): LENS_JOB_BY_ORDER, counted;
 *   - span: the kernel's ts .. ts + dur on its GPU (CUPTI, mapped by Kineto to
 *     the host's wall clock); the last rank to arrive has the shortest span;
 *   - host stages: the record_param_comms CPU op's start (the API call; linked
 *     by External id, or the one enclosing the launch on its thread) and the
 *     launch (cudaLaunchKernel..., cuLaunchKernel..., hipLaunchKernel...: runtime or
 *     driver event with the kernel's correlation id);
 *   - clock: every time is that host's CLOCK_REALTIME (epoch ns). Each file is
 *     its own "host" for the alignment (processes of one machine may differ by
 *     their CUPTI fits; the file does not name its machine): placed on the wall
 *     clock within LENS_KINETO_WALL_BOUND_NS unless the matched kernels' ends
 *     place it tighter (job_align.h).
 * Memory: the records (one per NCCL kernel), the record_param_comms ops and
 * a bounded window of recent launches (LENS_KINETO_LAUNCH_WINDOW per
 * generation, two generations); the file is streamed. */
#ifndef NCCL_LENS_KINETO_JOB_H
#define NCCL_LENS_KINETO_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "job_part.h"

/* Assumed bound of a host's wall clock against true time when nothing else
 * places it (NTP/PTP's error is not in the file): generous on purpose. */
#define LENS_KINETO_WALL_BOUND_NS 1000000000ull
/* Assumed error of Kineto's CUPTI-to-wall-clock mapping of one GPU time
 * (one linear fit per profiling session; its residual is not in the file). */
#define LENS_KINETO_MAP_ERR_NS 1000ull
/* Launch events kept while their kernel has not been read, per generation. */
#define LENS_KINETO_LAUNCH_WINDOW (1u << 16)
/* Most NCCL kernels and record_param_comms ops kept of one file (counted past). */
#define LENS_KINETO_MAX_KERNELS (1u << 24)

struct lens_kineto_job_stats {
  uint64_t events, nccl_kernels, by_seq, by_order; /* records matched by Seq / by order */
  uint64_t no_launch, no_api;  /* kernels whose launch / API call was not found */
  uint64_t dropped;            /* kernels or ops past LENS_KINETO_MAX_KERNELS */
  uint64_t launches_evicted;   /* launches that left the window unclaimed */
  int64_t rank, world_size;
  int modern;                  /* 1: baseTimeNanoseconds (ts relative), 0: pre-2024 (ts epoch µs) */
  int rank_from;               /* 0 distributedInfo, 1 record_param_comms "Rank", 2 the file name */
};

/* Maps the Kineto trace at path into p (owning its strings). 0, or -1 with a
 * one-line reason in err. st may be NULL. */
int lens_kineto_job_map(const char *path, struct lens_job_part *p, struct lens_kineto_job_stats *st, char *err,
                        size_t err_len);

/* The communicator id the job view gives process group `name` ("Process
 * Group Name"; equal on every rank). */
uint64_t lens_kineto_pg_comm_id(const char *name);

#endif
