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
#define LENS_HANG_FUNC_LEN 32 /* a collective's name, cut */

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
  int32_t proc, thread;     /* of the op's process, and the thread that recorded the step (else the op) */
};

struct lens_hang_kch {
  int32_t rank, channel, proc;
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
  char funcs[LENS_HANG_MAX_FUNCS][LENS_HANG_FUNC_LEN]; size_t n_funcs; /* in the order the traces first show them */
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

/* ---- Host group by host group (the pass driver, tools/cli/passes.h) ----
 *
 * A pass over hang: {.map = lens_hang_pass_map, .free = lens_hang_pass_free}
 * (ctx unused), then, for pass k,
 * lens_hang_merge((struct lens_hang_part *const *)out.parts + k * out.n_groups,
 * out.n_groups, out.bases, &report) and print with out.skel as the model;
 * lens_hang_free(&report) before lens_passes_free.
 *
 * map: per (comm_id, rank) of the group's COMM records, the last sequence
 * number started and completed per collective, the latest start of a
 * completed Coll, and the Colls that never completed after it (each with
 * its KernelCh and ProxyOps that never stopped, and per ProxyOp the step it
 * sits at and its last state run); per proxy thread, its last record and its
 * process's trace end. Everything copied: the model may go.
 * merge: the partials in input order -> the report lens_hang_analyze gives
 * of one model holding them all: a communicator's ranks on many hosts are
 * joined by comm_id (+ rank), the stuck instance is picked over all of them,
 * and a silent proxy is judged frozen against a peer's send recorded in
 * another group (the sender and the receiver of a link usually are on two
 * hosts). Proc and thread indexes are rebased with bases (NULL: one group).
 * Exact while a communicator shows at most 4 x LENS_HANG_MAX_FUNCS
 * collectives in a group; the report keeps the first LENS_HANG_MAX_FUNCS, as
 * one model did. The report owns all it holds: it outlives the partials.
 *
 * Steps: the wait of a stuck ProxyOp reads its ProxySteps and their states,
 * and a proxy thread's last record is most often a step's state: read from
 * the step events of a full load, or from what a folded load
 * (LENS_LOAD_FOLD_STEPS) keeps of them (lens_folded_op, lens_thread's
 * folded_last_ns), the same answer; the pass needs no LENS_PASS_STEPS. */
struct lens_hang_part;
/* NULL only when out of memory. */
struct lens_hang_part *lens_hang_map(const struct lens_model *m);
void lens_hang_part_free(struct lens_hang_part *p);
/* 0, or -1 when out of memory (r is then empty). */
int lens_hang_merge(struct lens_hang_part *const *parts, size_t n, const struct lens_model_base *bases,
                    struct lens_hang_report *r);
void *lens_hang_pass_map(struct lens_model *m, void *ctx); /* ctx unused */
void lens_hang_pass_free(void *part);

/* One model: lens_hang_merge of its one lens_hang_map. Returns 0, or -1 when
 * out of memory (r is then empty). */
int lens_hang_analyze(const struct lens_model *m, struct lens_hang_report *r);
void lens_hang_free(struct lens_hang_report *r);
/* "send: data ready, waiting for the peer's credit" ... */
const char *lens_hang_state_meaning(uint32_t state, int is_send, int step_started);
/* Exit status of `nccl-lens hang` when a collective is stuck (docs/hang.md). */
#define LENS_HANG_EXIT_STUCK 3

#endif
