/* Coupling of the simulated GPUs of one communicator (docs/replay.md, "Job
 * scenarios"): a collective's kernels end together, after the last rank
 * arrived, as on real hardware. Every rank's launch posts its kernel start on
 * a board shared by all processes of the run (anonymous shared memory across
 * fork, or a file for separately started "hosts"); the rank that completes an
 * instance fixes its end; each process then publishes the ends to its own
 * simulated GPUs. Board times are CLOCK_REALTIME-based ("board ns"), because
 * the processes of a multi-host replay each have their own CLOCK_MONOTONIC
 * (time namespaces): each process converts with its own measured offset. */
#ifndef NCCL_LENS_RP_COUPLE_H
#define NCCL_LENS_RP_COUPLE_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "replay/rp_plan.h"

struct rp_op;

#define RP_BOARD_RANKS 128   /* 16 nodes x 8 local ranks */
#define RP_BOARD_INST 4096   /* instances per communicator set */
#define RP_BOARD_NODES 16

struct rp_board_inst {
  atomic_int arrived;
  atomic_int func, nch, is_set; /* is_set: the descriptor fields below were written */
  atomic_llong seq, bytes, dur;  /* dur: the work itself, ns */
  atomic_llong extra;            /* added to the work by an injected slow link: its kernels end that much later */
  atomic_llong kstart[RP_BOARD_RANKS]; /* board ns; 0 = not arrived */
  atomic_llong s;                /* board ns the work starts everywhere (the last arrival); 0 = open */
  atomic_int last_rank;
};

/* One network link's posts (a send op's steps), for the receive side: a
 * receive step completes only after its sender's step was posted (isend
 * accepted) + the latency, as on a real network. Keyed by (communicator set,
 * sender rank, channel, instance ordinal mod RP_LINK_RING); tag is the
 * instance ordinal + 1 whose posts these are (0: being reset). */
#define RP_LINK_RING 16
#define RP_LINK_STEPS 48 /* net_plan_for caps a collective's ProxyOp at 48 steps */
struct rp_board_link {
  atomic_llong tag;
  atomic_llong post[RP_LINK_STEPS]; /* board ns the step was posted; 0 = not yet */
};

struct rp_board {
  uint64_t magic;
  atomic_int nranks, nodes, procs_done;
  atomic_int bar_n[4];      /* start barrier per scenario run (--reload runs twice) */
  atomic_llong bar_max[4], bar_t[4];
  char host[RP_BOARD_NODES][64];
  int64_t delta[RP_BOARD_NODES]; /* each node's board - monotonic offset */
  atomic_llong starve_start, starve_end; /* job-starved-proxy: the hog phase, board ns (0 = none) */
  struct rp_board_inst inst[RP_MAX_COMMSETS][RP_BOARD_INST];
  /* ~19 MiB, touched only where links cross hosts (a sparse file, anonymous pages) */
  struct rp_board_link link[RP_MAX_COMMSETS][RP_BOARD_RANKS][RP_MAX_CH][RP_LINK_RING];
};

/* The board of this run (set before nodes start; NULL outside job scenarios). */
extern struct rp_board *rp_board_current;

/* A board in anonymous shared memory (inherited across fork). */
struct rp_board *rp_board_anon(void);
/* A board in a file shared by separately started processes (created if absent). */
struct rp_board *rp_board_file(const char *path, char *err, size_t errlen);
void rp_board_unmap(struct rp_board *b);

/* This process's offset board ns - CLOCK_MONOTONIC ns (measured, ~100 ns). */
int64_t rp_board_delta(void);

/* The launch of plan p reached the GPU (kstart set by rp_plan_gpu): post the
 * arrival; the plan's ends are published by rp_couple_settle. */
void rp_couple_arrive(struct rp_node *n, struct rp_plan *p);
/* Waits until every posted arrival of this process was completed by the
 * other ranks and publishes the kernel ends (items, truth, stream_free).
 * App thread only. */
void rp_couple_settle(struct rp_node *n);
void rp_couple_free(struct rp_node *n);

/* Step-level coupling of the network ops of a job scenario (op->link_ord1 set
 * by the launch path). Proxy thread only. */
/* The send op's proxy takes its link's slot (its instance's posts). */
void rp_couple_link_open(struct rp_node *n, struct rp_op *op);
/* The send op's step k was posted to the network (isend accepted), now. */
void rp_couple_link_post(struct rp_node *n, struct rp_op *op, int k);
/* A recv op's step k: 1 when its sender posted it at least lat_ns before
 * board time now + this process's offset, 0 not yet. */
int rp_couple_link_ready(struct rp_node *n, const struct rp_op *op, int k, int64_t now, int64_t lat_ns);
/* How long a receive step waits past its own schedule for a sender that never
 * posts (its process died, a hang) before it completes uncoupled (a truth
 * hazard "recv_step_uncoupled"): the replay never hangs on the coupling. */
#define RP_LINK_WAIT_MAX_NS 2000000000LL

/* Writes ,"instances":[...] for the whole run from the board (docs/replay.md). */
void rp_couple_write_instances(const struct rp_board *b, const struct lens_replay_opts *o, FILE *f);

#endif
