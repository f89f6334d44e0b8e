/* Ground truth of one replay process: what the driver did, written as JSON
 * (schema in docs/replay.md). Tables have a fixed capacity so that entries
 * never move while proxy threads fill theirs; a full table counts drops. */
#ifndef NCCL_LENS_RP_TRUTH_H
#define NCCL_LENS_RP_TRUTH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RP_TRUTH_MAX_OPS 16384
#define RP_TRUTH_MAX_KCH 65536
#define RP_TRUTH_MAX_HAZ 4096
#define RP_TRUTH_MAX_STARVE 64
#define RP_TRUTH_MAX_MASK 64
#define RP_TRUTH_MAX_HOGS 8
#define RP_TRUTH_MAX_PHASE 65536

struct rp_truth_op {
  int comm, rank, func, iter, graph_replay, mask, nChannels, root, peer, tid;
  bool is_p2p, emitted; /* emitted: a Coll/P2p start was made */
  bool is_sym;          /* a symmetric kernel (2.31): algo = the variant's algorithm, proto = "" */
  const char *kernel_variant; /* its name, NULL otherwise */
  uint64_t user_tag;    /* the call's userProfilerTag, 0 = untagged */
  const char *datatype; /* as in the Coll/P2p descriptor (after NCCL's rewrite) */
  uint64_t count;       /* as in the Coll/P2p descriptor */
  uint64_t bytes;
  const char *algo, *proto;
  int64_t seq; /* seqNumber given, -1 for p2p */
  int64_t api_ns;                   /* the application's call (ncclAllReduce, ...) entered */
  int64_t launch_start, launch_end; /* KernelLaunch bracket on the launching thread */
  int64_t kernel_start, kernel_end; /* true GPU kernel span, host ns */
  int net_ops, proxy_rank;          /* net proxy ops posted, local proxy that ran them */
};

struct rp_truth_kch {
  int rank, channel, op, proxy_tid;
  uint64_t counter, start_counter, stop_counter; /* own item; items whose timers were reported */
  uint64_t start_ptimer, stop_ptimer;            /* as given to the plugin */
  uint64_t true_start_gpu, true_stop_gpu;        /* of the own item */
  int64_t true_start_ns, true_stop_ns;           /* of the own item, host */
  int64_t notice_start_ns, notice_stop_ns;       /* when the proxy made the calls */
  int64_t posted_ns, appended_ns;                /* pseudo-op posted by the app; taken in an Append window */
  bool overrun, started, stopped;
  bool by_profiler; /* reported by NCCL 2.31's profiler thread (proxy_tid is its tid), else by the proxy */
};

/* One KernelPhase reported (2.31, mask bit 15): under kernel_ch[kch]. */
struct rp_truth_phase {
  int kch, rank, channel, phase, tid;
  uint64_t start_ptimer, stop_ptimer;
};

struct rp_truth_haz {
  const char *kind;
  int rank;
  int64_t t_ns;
  int64_t detail;
};

struct rp_truth_starve {
  int proxy_tid, rank, cpu, nhogs;
  int hog_tids[RP_TRUTH_MAX_HOGS];
  int64_t start_ns, end_ns;
};

struct rp_truth_mask {
  int iter, old_mask, new_mask;
  int64_t t_ns;
  const char *via;
};

struct rp_truth {
  atomic_int nops, nkch, nhaz, nstarve, nmask, nphase;
  atomic_int drops;
  struct rp_truth_op *ops;
  struct rp_truth_kch *kch;
  struct rp_truth_haz *haz;
  struct rp_truth_starve starve[RP_TRUTH_MAX_STARVE];
  struct rp_truth_mask mask[RP_TRUTH_MAX_MASK];
  struct rp_truth_phase *phase;
};

struct rp_truth *rp_truth_new(void);
void rp_truth_free(struct rp_truth *t);
int rp_truth_op_new(struct rp_truth *t); /* -1 when full */
struct rp_truth_op *rp_truth_op_at(struct rp_truth *t, int id);
int rp_truth_kch_new(struct rp_truth *t);
struct rp_truth_kch *rp_truth_kch_at(struct rp_truth *t, int id);
struct rp_truth_phase *rp_truth_phase_new(struct rp_truth *t); /* NULL when full */
void rp_truth_hazard(struct rp_truth *t, const char *kind, int rank, int64_t detail);
struct rp_truth_starve *rp_truth_starve_new(struct rp_truth *t);
void rp_truth_mask_change(struct rp_truth *t, int iter, int old_mask, int new_mask, const char *via);

struct rp_node;
/* Writes this process's object ({"node":...}) to f. */
void rp_truth_write_process(struct rp_node *n, FILE *f);

#endif
