/* Internal model of the replay driver: one process = one node, with its
 * local ranks (fake GPUs), communicators, proxy threads and simulated GPUs.
 * All times are host CLOCK_MONOTONIC ns unless a name says _gpu. */
#ifndef NCCL_LENS_RP_INTERNAL_H
#define NCCL_LENS_RP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "nccl-lens/nccl_profiler_abi.h"
#include "replay/replay.h"

#define RP_MAX_LOCAL 8      /* local ranks per process */
#define RP_MAX_COMMSETS 3   /* communicators per rank (mixed: 2, all: 3) */
#define RP_MAX_CH 8         /* channels a task may use (NCCL: 64) */
#define RP_ITEMS_PER_CH 2048 /* simulated work items per channel per rank, plus RP_ITEMS_PER_ITER per iteration */
#define RP_ITEMS_PER_ITER 64 /* more than any scenario launches per iteration and channel */
#define RP_RING 64          /* NCCL's per-channel timestamp ring */
#define RP_STEPS 8          /* NCCL_STEPS: outstanding steps per proxy op */
#define RP_APPEND_BATCH 16  /* NCCL_PROXY_APPEND_BATCH_SIZE */

int64_t rp_now(void); /* CLOCK_MONOTONIC ns */
pid_t rp_gettid(void);
void rp_sleep_ns(int64_t ns);

/* ---- plugin (rp_plugin.c) ---- */
struct rp_plugin {
  void *dl;
  char path[512];
  int api; /* 4, 5, 6, 7 */
  const lens_nccl_profiler_v4_t *v4;
  const lens_nccl_profiler_v5_t *v5; /* also used for v6: same function signatures */
  const lens_nccl_profiler_v7_t *v7; /* NCCL 2.31.2 mode (rp_v7.c) */
  int (*set_mask)(int);              /* ncclLensSetEventMask, when exported */
  atomic_long calls;
};
extern int rp_event_mask; /* the one int NCCL shares with every communicator */
extern atomic_int rp_warn_count;
extern bool rp_verbose;

int rp_plugin_load(struct rp_plugin *p, const char *name, int api_choice, char *err, size_t errlen);
void rp_plugin_unload(struct rp_plugin *p);
int rp_plugin_init(struct rp_plugin *p, void **ctx, uint64_t commId, const char *name, int nNodes, int nranks,
                   int rank);
void rp_plugin_finalize(struct rp_plugin *p, void *ctx);
/* d is a zeroed v6 descriptor; v4 plugins get NCCL's v4 adapter behaviour,
 * v7 plugins the same members in a v7 descriptor (plus x, rp_start7). */
void *rp_start(struct rp_plugin *p, void *ctx, lens_nccl_descr_v6_t *d);

/* ---- NCCL 2.31.2 (rp_v7.c): what v7 adds, the profiler thread, RAS ---- */
struct rp_v7x {
  uint64_t user_tag;          /* CollApi, P2pApi, Coll, P2p */
  const char *kernel_variant; /* Coll of a symmetric kernel */
  bool is_sym;
};
#define RP_NCCL_VERSION_2289 22809
#define RP_NCCL_VERSION_2312 23102
extern int rp_nccl_version; /* what ncclGetVersion() answers in this process */
void *rp_start7(struct rp_plugin *p, void *ctx, lens_nccl_descr_v6_t *d, const struct rp_v7x *x);
void *rp_start_v5v6(struct rp_plugin *p, void *ctx, lens_nccl_descr_v6_t *d); /* v4-v6 (rp_plugin.c), uncounted */
/* KernelPhase (v7 only): start, 31 with the stop pTimer, stop; the handle is not kept. */
void rp_kernel_phase(struct rp_plugin *p, void *ctx, void *kch, int channel, int phase, uint64_t start_ptimer,
                     uint64_t stop_ptimer);
extern const char *const rp_phase_names[3];
/* A symmetric kernel's name without its collective: "AllReduce_AGxLL_R" -> "AGxLL_R" (static storage). */
const char *rp_sym_algo(const char *kernel);
/* After each plugin init: KernelPhase needs KernelCh, and a RAS mask is re-applied. */
void rp_mask_after_init(void);
struct rp_node;
/* ncclProfilerSetRasOverride: the job-wide mask, stored now and after every later init. */
void rp_ras_override(struct rp_node *n, int mask);
void rp_ras_reset(void); /* a new replay process (or run, in-process) starts without one */
void rp_stop(struct rp_plugin *p, void *h);     /* skips NULL, as NCCL core does */
void rp_stop_raw(struct rp_plugin *p, void *h); /* NetPlugin path: calls even with NULL */
void rp_record(struct rp_plugin *p, void *h, int state, lens_nccl_state_args_v5_t *args);
int rp_mask_load(void);

/* ---- mask gating (rp_gate.c), spec §1.3 ---- */
bool rp_gate(uint64_t event_type, int mask);

/* ---- simulated GPU (rp_gpu.c) ---- */
struct rp_item {
  uint64_t counter; /* channel work counter value of this item (1-based) */
  atomic_llong start; /* true host time the GPU started it; INT64_MAX = not yet known */
  atomic_llong end;
  int op; /* truth op id */
};
struct rp_gpu {
  int64_t offset_ns;
  double drift_ppm;
  struct rp_item *items[RP_MAX_CH]; /* items[ch][counter-1] */
  uint64_t items_cap;               /* entries of each items[ch], sized from --iters */
  atomic_ullong published[RP_MAX_CH];
  int64_t stream_free; /* host time the previous kernel ended (stream order) */
};
int64_t rp_gpu_time(const struct rp_gpu *g, int64_t host_ns);
/* New item on channel ch; returns its counter, or 0 when the table is full. */
uint64_t rp_gpu_new_item(struct rp_gpu *g, int ch, int op, int64_t start);
struct rp_item *rp_gpu_item(struct rp_gpu *g, int ch, uint64_t counter);
/* What NCCL's ring slot (counter % 64) shows at host time now: the newest
 * published item in that slot whose start (or end) has happened. Returns its
 * counter (0 if none) and the host time of that event. */
uint64_t rp_gpu_slot(struct rp_gpu *g, int ch, uint64_t base, bool stop, int64_t now, int64_t *host_ns);

/* ---- proxy (rp_proxy.c) ---- */
enum rp_op_kind { RP_OP_NET_SEND, RP_OP_NET_RECV, RP_OP_PROFILER, RP_OP_COLLNET };
struct rp_op {
  struct rp_op *next;
  enum rp_op_kind kind;
  void *ctx;    /* originating communicator's context (foreign under PXN) */
  void *parent; /* Coll/P2p handle */
  int mask;     /* snapshot taken at enqueue */
  int rank;     /* originating global rank */
  pid_t pid;
  int channel, peer, nSteps, chunkSize;
  size_t step_bytes;
  int op_id;                  /* truth op, -1 for injected */
  int local;                  /* local rank whose GPU runs the work */
  uint64_t base;              /* profiler op: work counter */
  int64_t t0, step_ns;        /* foreign ops without a GPU item: time base */
  bool dup_recv_start;        /* inject the duplicate recv step start */
  bool net_null_stop;         /* inject a NetPlugin stop with a NULL handle */
  bool foreign;               /* PXN from another process */
  /* proxy-owned progress state */
  void *h;
  bool in_progress, ch_started, ch_stopped, dup_done;
  int posted, done;
  size_t trans; /* sub->transSize */
  struct {
    void *h, *net;
    int phase, extra20;
    int64_t t;
  } st[RP_STEPS];
  int kch_truth;     /* index into truth kernel_ch */
  int64_t posted_ns; /* when the op became visible to the proxy (ncclProxyStart) */
  /* network scenarios (rp_net.c): injected delays and per-step truth */
  int64_t wire_extra_ns;    /* send: isend -> test() done longer; recv: the data arrives that much later */
  int64_t peer_hold_ns;     /* send: no credit (isend gives no request) for this long after the data is ready */
  int64_t consume_extra_ns; /* recv: the GPU consumes the data this much later */
  struct rp_netsim *net_truth; /* non-NULL: record step truth; its steps are paced from t0 (all
                                * peers of a group concurrently, as one NCCL p2p kernel runs them) */
  int nt[RP_STEPS];            /* step truth entry per step slot, -1 */
  /* hang scenarios (rp_hang.c): step stall_step sits in stall_state for ever
   * and no later step is posted; freeze: the proxy stops once every op of
   * the frozen rank sits there; at_stall: this one does (proxy thread only) */
  int stall_step, stall_state;
  bool freeze, at_stall;
  /* job scenarios: the step-level coupling of this op's link across
   * processes (rp_couple.h): its instance ordinal + 1 (0 = uncoupled) and
   * communicator set; the link's sender is rank (send) or peer (recv) */
  int link_ord1, link_set;
};

struct rp_proxy {
  struct rp_node *node;
  int local;
  void *ctx; /* proxyState->profilerContext: the creating communicator */
  pthread_t thr;
  atomic_int tid;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct rp_op *posted_head, *posted_tail;
  int posted_n;
  bool stopping;
  atomic_int active_n; /* ops posted or in progress, for drains */
  atomic_llong stall_until; /* overrun scenario: the proxy is busy elsewhere */
  int pin_cpu;              /* starved (local rank 0): -1 = not pinned */
  atomic_bool spin;         /* hog phases: NCCL's own loop (sched_yield, never nap) */
  atomic_bool frozen;       /* hang-proxy scenario: the thread stopped cycling (no pass, no record) */
  atomic_bool park, parked; /* hang scenarios: held still while the truth is written (rp_proxies_park) */
  bool is_profiler;         /* NCCL 2.31's profiler thread: KernelCh ops only, no ProxyCtrl */
  /* counters (proxy thread writes, read after join or via atomics) */
  atomic_long ops_started, ops_stopped, steps_started, steps_stopped, ctrl_events, kch_started, kch_stopped,
      dup_starts;
};
void rp_proxy_start(struct rp_proxy *px);
void rp_proxy_post(struct rp_proxy *px, struct rp_op *op);
void rp_proxy_drain(struct rp_proxy *px); /* waits until no op is active */
void rp_proxy_stop(struct rp_proxy *px);
/* A hang's end (no teardown): every proxy and profiler thread stops at the
 * top of its loop, so the truth is written from records no thread still
 * writes (waits up to 1 s for each); rp_proxies_unpark lets them cycle again. */
void rp_proxies_park(struct rp_node *n);
void rp_proxies_unpark(struct rp_node *n);

/* ---- communicators, tasks, app thread (rp_app.c) ---- */
struct rp_comm {
  int index, set, local, rank, nranks, nNodes;
  bool nonblocking; /* config.blocking = 0: groups launch on an async thread */
  uint64_t commId;
  const char *name;
  void *ctx;
  int init_rc;
  int init_tid;
  uint64_t seq[16];   /* per function */
  int64_t stream_free; /* the comm's stream: when its last kernel ends */
};

enum rp_func {
  RP_ALLREDUCE, RP_ALLGATHER, RP_REDUCESCATTER, RP_BROADCAST, RP_REDUCE, RP_SEND, RP_RECV, RP_NFUNC
};

struct rp_task {
  struct rp_task *next;
  int func;
  bool is_p2p;
  struct rp_comm *comm;
  size_t count;      /* user count */
  const char *dtype; /* user datatype */
  size_t esize;
  int root, peer;
  int nChannels;
  int mask;
  uint64_t user_tag;      /* ncclCollConfig_t.userProfilerTag of the call (2.31), 0 = none */
  int64_t api_ns;         /* when the application's call entered (CLOCK_MONOTONIC) */
  const char *sym_kernel; /* a symmetric kernel's name ("AllReduce_AGxLL_R"), NULL = regular kernel */
  void *api_h, *group_api_h, *h;
  struct rp_task *pair; /* p2p: the send/recv partner sharing GPU items */
  int op_id;
  uint64_t items[RP_MAX_CH];
  bool graph;
  bool hang; /* the hung collective of a hang scenario (rp_hang.c): its kernel never ends */
  int board_ord1; /* job scenarios: its instance's ordinal on the board + 1, when its network steps are
                   * coupled across processes (rp_couple_link_*); 0 = not */
};

struct rp_appstate { /* NCCL's thread-local group state */
  int group_depth, prof_depth, state;
  void *group_api;
  void *last_coll_api, *last_p2p_api;
  bool graph_capture;
  struct rp_task *pending; /* tasks of the current group, in call order */
  uint64_t cfg_tag;        /* per-call config of the next call (nccl*Config, 2.31); consumed by it */
  const char *cfg_sym;     /* the next collective runs as this symmetric kernel */
};

struct rp_graph_plan {
  struct rp_comm *comm;
  struct rp_task *tasks; /* captured tasks (owned) */
  void *group_api;
  bool has_proxy_ops;
};

struct rp_truth;
struct rp_cb;
struct rp_netsim;

/* Hang scenarios (rp_hang.c): one collective that never completes, with what
 * each stuck proxy op waits for kept as ground truth. */
enum rp_hang_kind { RP_HANG_NONE, RP_HANG_MISSING, RP_HANG_PROXY, RP_HANG_GRAPH };
#define RP_HANG_MAX_WAIT 64
struct rp_hang_wait {
  int rank, peer, channel, step, state;
  bool is_send;
};
struct rp_hang {
  enum rp_hang_kind kind;
  bool now;          /* the collective being launched is the hung one */
  int missing_rank;  /* never calls it, -1 none */
  int frozen_rank;   /* its proxy stops cycling, -1 none */
  int step;          /* where ops not facing the missing rank (or the frozen proxy) stall */
  int func;
  int64_t seq, start_ns;
  uint64_t comm_id;
  struct rp_hang_wait wait[RP_HANG_MAX_WAIT];
  atomic_int nwait;
  atomic_llong frozen_ns; /* when the frozen proxy stopped, 0 not yet */
  /* hang-proxy: the frozen rank's ops of the hung collective, how many of
   * them sit at their stall step, and whether the app thread has posted
   * them all (the proxy freezes only then: see rp_hang_op_stalled) */
  atomic_int freeze_ops, freeze_ready;
  atomic_bool freeze_posted;
  int64_t exit_ns; /* when the wait for the "kill" ended (rp_hang.c hang_wait_exit) */
  bool failed;     /* the trace cannot show what the truth says (said on stderr): the process fails */
};
struct rp_board;
struct rp_couple;
#define RP_MAX_CAPTURED 32

struct rp_node {
  const struct lens_replay_opts *o;
  struct rp_plugin plugin;
  int node, nodes, rpn, nranks, ncomm_sets;
  struct rp_comm comms[RP_MAX_COMMSETS * RP_MAX_LOCAL];
  int ncomms;
  struct rp_gpu gpu[RP_MAX_LOCAL];
  struct rp_proxy proxy[RP_MAX_LOCAL];
  struct rp_proxy prof[RP_MAX_LOCAL]; /* NCCL 2.31's profiler threads (one per rank's shared resources) */
  bool prof_threads;                  /* the profiler threads report KernelCh (2.31 mode: v7 driven) */
  struct rp_appstate app;
  int app_tid;
  int iter;
  struct rp_graph_plan captured[RP_MAX_CAPTURED]; /* plans of the graph being captured */
  int ncaptured;
  /* host-callback thread (graph replays) */
  pthread_t cb_thr;
  atomic_int cb_tid;
  pthread_mutex_t cb_mu;
  pthread_cond_t cb_cv;
  struct rp_cb *cb_head, *cb_tail;
  bool cb_stop;
  int cb_pending;
  /* hazards */
  bool pxn;           /* route net ops through another local rank's proxy */
  bool hazard_dup_recv, hazard_collnet, hazard_net_null;
  void *foreign_base; /* PROT_NONE page: foreign contexts/parents point here */
  struct rp_truth *truth;
  long calls_before; /* plugin calls of earlier loads (--reload) */
  struct rp_netsim *_Atomic netsim; /* network scenarios (rp_net.c), NULL otherwise; proxies poll it */
  struct rp_hang hang;
  /* job scenarios (rp_job.c): coupled GPUs through a board shared by all processes */
  struct rp_board *board;  /* NULL: launches couple only within a process (rp_plan_finish_set) */
  int64_t board_delta;     /* board ns - CLOCK_MONOTONIC ns of this process */
  struct rp_couple *couple;
  int64_t job_base;        /* nominal kernel start of the current step */
  int job_kind, job_gen;
};

const char *rp_func_name(int func);
/* The thread that polls local rank l's KernelCh: its profiler thread on 2.31, its proxy before. */
static inline struct rp_proxy *rp_kch_thread(struct rp_node *n, int l) {
  return n->prof_threads ? &n->prof[l] : &n->proxy[l];
}

void rp_app_init(struct rp_node *n);
void rp_group_start(struct rp_node *n);
void rp_group_end(struct rp_node *n);
void rp_coll(struct rp_node *n, struct rp_comm *c, int func, size_t count, const char *dtype, size_t esize,
             int root);
void rp_p2p(struct rp_node *n, struct rp_comm *c, int func, size_t count, const char *dtype, size_t esize, int peer);
void rp_sync(struct rp_node *n); /* cudaStreamSynchronize on every rank + proxies drained */
/* graphs (rp_graph.c): one graph at a time, held in n->captured */
void rp_capture_begin(struct rp_node *n);
void rp_capture_end(struct rp_node *n);
void rp_graph_launch(struct rp_node *n, int replay); /* cudaGraphLaunch */
void rp_graph_free(struct rp_node *n);
void rp_cb_start(struct rp_node *n);
void rp_cb_drain(struct rp_node *n);
void rp_cb_stop(struct rp_node *n);

/* ---- scenarios (rp_scenarios.c; the 2.31 ones in rp_scen_v7.c) ---- */
bool rp_scen_v7_known(const char *name);
bool rp_scen_v7_run(struct rp_node *n, const char *name, int iters); /* false: not one of them */
void rp_scen_v7_in_all(struct rp_node *n);
void rp_ce_run(struct rp_node *n, int iters); /* the `ce` scenario (rp_ce.c) */
int rp_scenario_ncomm_sets(const char *name);
bool rp_scenario_known(const char *name);
void rp_scenario_run(struct rp_node *n, const char *name, int iters);
void rp_mask_change(struct rp_node *n, int newmask);

/* ---- hang scenarios (rp_hang.c) ---- */
bool rp_hang_known(const char *name);
bool rp_hang_run(struct rp_node *n, const char *name, int iters); /* false: not one of them */
/* post_ops: the stall of a net op of the hung collective (peer, send or recv). */
void rp_hang_stall_op(struct rp_node *n, struct rp_op *op, bool is_send);
/* The proxy loop: an op that reached its stall; freezes the proxy when asked. */
void rp_hang_op_stalled(struct rp_proxy *px, struct rp_op *op);
void rp_hang_truth_write(struct rp_node *n, FILE *f);

/* ---- CPU hogs (rp_hog.c) ---- */
struct rp_hogs;
/* nhogs busy threads on local rank 0's proxy CPU; app and other proxies elsewhere. */
struct rp_hogs *rp_hogs_start(struct rp_node *n, int nhogs);
void rp_hogs_stop(struct rp_hogs *h);

#endif
