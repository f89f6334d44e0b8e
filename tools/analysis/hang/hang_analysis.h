/* Hang diagnosis: a view over a loaded model (traces cut by a kill are the
 * normal case). Per communicator (all ranks' traces joined by comm_id):
 * the last sequence number each rank started and completed per collective,
 * the instance where the ranks part, the ranks that never entered it, and
 * per stuck rank the KernelCh that never stopped and the ProxyOps in flight
 * with the step each sits at, its last NCCL state and the peer it waits
 * for; per proxy thread of those processes, whether it still recorded
 * anything near the end of its trace.
 *
 * Completion: a Coll is complete when every KernelCh and ProxyOp below it
 * stopped, or when a later Coll of the same rank on the same communicator
 * completed (work on one communicator completes in stream order, so a
 * missing stop then is a recording artefact, such as NCCL's never-stopped
 * collnet ProxyOps). A Coll with neither child kind recorded counts as
 * complete. Point-to-point work has no sequence number: not diagnosed here.
 * All times are CLOCK_MONOTONIC ns of the host that recorded them. */
#ifndef NCCL_LENS_HANG_ANALYSIS_H
#define NCCL_LENS_HANG_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "lensread.h"

#define LENS_HANG_MAX_FUNCS 16

/* One ProxyOp of a stuck rank that never stopped. */
struct lens_hang_wait {
  int32_t rank, peer, channel;
  int32_t step;          /* lowest step not finished; its number as NCCL gave it */
  uint32_t state;        /* that step's last NCCL state, 0 = none recorded (step started only / no step) */
  int is_send;
  int step_started;      /* 0: no ProxyStep of that number was started */
  uint64_t state_since_ns;  /* first record of the last state run (repeats collapsed) */
  uint64_t state_last_ns;   /* last record of it */
  uint64_t state_repeats;   /* records of that state in its last run (SendPeerWait repeats every proxy pass) */
  int32_t proc, op_event, step_event, thread;
};

struct lens_hang_kch {
  int32_t rank, channel, event, proc;
  uint64_t start_ns;
};

struct lens_hang_rank {
  int32_t rank, proc;        /* proc -1: no trace of this rank was loaded */
  int64_t last_started[LENS_HANG_MAX_FUNCS];   /* per func index, -1 none */
  int64_t last_completed[LENS_HANG_MAX_FUNCS];
  int entered;               /* started the stuck instance */
  int stuck;                 /* entered it and it never completed */
};

struct lens_hang_comm {
  uint64_t comm_id;
  char name[128];
  int32_t nranks;
  const char *funcs[LENS_HANG_MAX_FUNCS]; size_t n_funcs;
  int stuck;                 /* an instance never completed */
  int32_t stuck_func;        /* index into funcs, -1 */
  int64_t stuck_seq;         /* -1 when not stuck */
  struct lens_hang_rank *ranks;     /* nranks entries, by rank */
  int32_t *missing; size_t n_missing;     /* traced, never entered the stuck instance */
  int32_t *untraced; size_t n_untraced;   /* no trace loaded: unknown */
  struct lens_hang_wait *waiting; size_t n_waiting;
  struct lens_hang_kch *kch; size_t n_kch;
};

/* A proxy thread of a process that holds a stuck rank. */
struct lens_hang_proxy {
  int32_t proc, thread, rank;  /* rank: the rank whose proxy it is, -1 unknown */
  uint64_t last_record_ns;     /* its last record (start, stop or state) */
  uint64_t trace_end_ns;       /* the last time its process's trace shows (records, heartbeats) */
  int recording;               /* 1: recorded within LENS_HANG_ALIVE_NS of the trace end */
  /* 1: not recording, and a peer's send waits for a credit this proxy owes:
   * the peer cycles in SendPeerWait at step S toward this proxy's rank while
   * this proxy's receive from it (same channel) has posted step S or later.
   * A proxy that still ran would have passed that credit on; one that polls
   * receives records nothing either, so silence alone never says frozen. */
  int frozen;
  int32_t blocked_rank, blocked_channel, blocked_step; /* the send that waits for it (frozen only) */
  /* not recording, not frozen: every stuck op of its rank waits on its GPU or
   * its peer (the trace cannot tell a stopped proxy from one polling) */
  int waiting_only;
};
#define LENS_HANG_ALIVE_NS 200000000ull /* a cycling proxy that floods records far more often */

struct lens_hang_report {
  struct lens_hang_comm *comms; size_t n_comms;
  struct lens_hang_proxy *proxies; size_t n_proxies;
  size_t n_stuck_comms;
  size_t n_frozen;             /* proxies with frozen set */
};

/* Returns 0, or -1 when out of memory (r is then empty). */
int lens_hang_analyze(const struct lens_model *m, struct lens_hang_report *r);
void lens_hang_free(struct lens_hang_report *r);
/* "send: data ready, waiting for the peer's credit" ... */
const char *lens_hang_state_meaning(uint32_t state, int is_send, int step_started);
/* Exit status of `nccl-lens hang` when a collective is stuck (docs/hang.md). */
#define LENS_HANG_EXIT_STUCK 3

#endif
