/* The network view: where each proxy step's time goes, per link, per
 * collective instance and per NetPlugin connection (docs/net.md).
 *
 * A view over the reader's model (lensread.h); it reads ProxyOp, ProxyStep
 * and NetPlugin events and the states NCCL recorded on them (spec §2.5,
 * NCCL 2.28.9 src/transport/net.cc), and changes nothing in the model.
 *
 * Phases of one step. Every boundary is a host time (CLOCK_MONOTONIC ns of
 * the process that ran the proxy), so a step's phases need no clock
 * alignment, and they add up to its whole time (stop - start):
 *
 *   send  start(+8 SendGPUWait, buffer posted to the GPU)
 *           -- gpu_wait  --> first 20 SendPeerWait (the GPU produced the data)
 *           -- peer_wait --> 9 SendWait (isend accepted: the receiver's credit
 *                            came; 20 repeats while it does not)
 *           -- wire      --> stop (test() done: the network finished it)
 *   recv  start(+10 RecvWait, irecv posted)
 *           -- data_wait --> 11 RecvFlushWait (data received; the receiver
 *                            cannot tell the sender's waits from the wire's)
 *           -- flush     --> 12 RecvGPUWait (flush done or not needed)
 *           -- gpu_wait  --> stop (the GPU consumed the data)
 *
 * "Done" is the stop itself: it ends the step and lasts no time. A boundary
 * that was not recorded (dropped, or a ProxyOp without a handle, which makes
 * NCCL record no step states) turns the time around it into `unknown`,
 * never into a guess. A step whose timing overlaps a starvation interval of
 * its proxy thread (LENS_ACC_STARVED, tools/analysis/sched/starvation.c) keeps its
 * split but is counted apart and left out of the blame (ranking, dominant
 * phase): a late proxy is not a slow network. */
#ifndef NCCL_LENS_NET_ANALYSIS_H
#define NCCL_LENS_NET_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "lensread.h"
#include "step_phases.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The phases are the reader's step classification (step_phases.h), which
 * the reader's step fold shares: one split for net and job. */
enum lens_net_phase {
  LENS_NET_SEND_GPU_WAIT = LENS_STEP_SEND_GPU_WAIT,   /* send: waiting for the GPU to produce the data */
  LENS_NET_SEND_PEER_WAIT = LENS_STEP_SEND_PEER_WAIT, /* send: data ready, waiting for the peer's credit */
  LENS_NET_SEND_WIRE = LENS_STEP_SEND_WIRE,           /* send: in flight on the network */
  LENS_NET_RECV_DATA_WAIT = LENS_STEP_RECV_DATA_WAIT, /* recv: posted, waiting for the data */
  LENS_NET_RECV_FLUSH = LENS_STEP_RECV_FLUSH,         /* recv: flushing */
  LENS_NET_RECV_GPU_WAIT = LENS_STEP_RECV_GPU_WAIT,   /* recv: waiting for the GPU to consume it */
  LENS_NET_UNKNOWN = LENS_STEP_UNKNOWN,               /* a boundary was not recorded */
  LENS_NET_NPHASES = LENS_STEP_NPHASES
};

/* Short names used in text and JSON: "send_gpu_wait", "send_peer_wait",
 * "wire", "recv_data_wait", "recv_flush", "recv_gpu_wait", "unknown". */
const char *lens_net_phase_name(int phase);
/* What a phase means, for a reader: "waiting for the sender's GPU", ... */
const char *lens_net_phase_text(int phase);

enum { LENS_NET_DIR_RECV = LENS_STEP_DIR_RECV, LENS_NET_DIR_SEND = LENS_STEP_DIR_SEND };
enum { LENS_NET_TRANSPORT_NET = 0, LENS_NET_TRANSPORT_IB = 1, LENS_NET_TRANSPORT_SOCKET = 2 };
const char *lens_net_transport_name(int transport); /* "net" (not reported), "ib", "socket" */

/* The split of one ProxyStep event. Returns 1 when the step is timed (it was
 * started and stopped and not superseded by a second start of the same
 * step), else 0 and *out zeroed. */
struct lens_net_step {
  uint64_t start_ns, stop_ns; /* CLOCK_MONOTONIC of the proxy's host */
  uint64_t phase_ns[LENS_NET_NPHASES];
  uint64_t bytes;             /* transSize at 9 (send) or 11 (recv); 0 unknown */
  int bytes_known;
  int dir;                    /* LENS_NET_DIR_*, from the parent ProxyOp; -1 parent unknown */
  int starved;                /* LENS_ACC_STARVED set on the step */
};
int lens_net_step_split(const struct lens_model *m, int32_t step_event, struct lens_net_step *out);
/* The same split of a folded step (LENS_LOAD_STEP_FACTS), equal to its
 * event's when it has a ProxyOp; without one its direction is not known
 * (the reader kept no states: dir -1, no bytes). */
int lens_net_fact_split(const struct lens_model *m, const struct lens_step_fact *x, struct lens_net_step *out);

/* Time of network ops summed: one collective instance, a link, or anything. */
struct lens_net_split {
  uint64_t ops, steps;        /* ProxyOp events; timed steps */
  uint64_t untimed_steps;     /* never stopped, or superseded */
  uint64_t bytes;
  uint64_t step_ns;           /* sum of the whole times of the timed steps */
  uint64_t phase_ns[LENS_NET_NPHASES];
  uint64_t starved_steps, starved_ns; /* steps overlapping a starved proxy thread, their time */
  uint64_t blame_ns[LENS_NET_NPHASES]; /* phase_ns of the steps that were not starved */
  uint64_t first_start_ns, last_stop_ns; /* 0 when no timed step */
};

/* One ProxyOp event's split: its steps' phases summed (ops 1). On a model
 * loaded with LENS_LOAD_FOLD_STEPS, the reader's fold of the same split
 * (proxy_op.folded_phase_ns; no starvation is known there, so all of it is
 * blamed). Returns 1 when op is a ProxyOp, else 0 and *out zeroed. */
int lens_net_op_split(const struct lens_model *m, int32_t op_event, struct lens_net_split *out);

/* Per collective instance: the split summed over the network ops of one Coll
 * or P2p event (its ProxyOp children, which under PXN may be recorded in
 * another process: the reader links them across processes). Returns the
 * number of ProxyOps found (0: the instance had no network op, or its proxy
 * events were not recorded). The job view calls this per rank and instance
 * to tell "slow link" (wire, peer) from "late rank" (the sender's GPU wait).
 * Works on a model alone; lens_net_build is not needed. */
int lens_net_instance_split(const struct lens_model *m, int32_t coll_event, struct lens_net_split *out);
/* The phase with the most blamed time (wire, peer, gpu...), -1 when none.
 * A receive's data_wait is the sender's and the wire's time seen from the
 * receiver; it is named only when no send-side phase has time. */
int lens_net_split_dominant(const struct lens_net_split *s);

/* ---- Links ---- */
struct lens_net_link {
  uint64_t comm_id;           /* 0 when the communicator is unknown (foreign PXN op) */
  int32_t comm;               /* index into model->comms, -1 */
  int32_t rank, peer, channel, dir;
  int32_t transport;          /* LENS_NET_TRANSPORT_*, from NetPlugin events under its steps */
  int32_t proc;               /* process that ran the proxy (first seen) */
  struct lens_net_split t;
  uint64_t p50_step_ns, p99_step_ns, max_step_ns; /* over timed steps */
  double gbps;                /* send: lens_net_wire_gbps of its bytes and wire ns; recv: the send side's, 0 none */
  double wire_ns_per_byte;    /* send: the lower median over its steps (not starved, with a wire phase and
                               * bytes) of wire time per byte, its own pace (the slow-link rule); 0 none */
  int32_t conn;               /* index into lens_net.conns */
  int32_t dominant;           /* phase, -1 */
  double score;               /* median over its steps of (step time / the typical time of steps of that
                               * direction and size over all links): 1.0 = typical. A median, so a few
                               * steps delayed by something else do not make a link stand out, while a
                               * slow link slows all its steps. Steps that overlapped a starved proxy
                               * thread are left out (0: no other step, nothing to blame). */
};

/* A directed connection src -> dst on one channel of one communicator: the
 * sender's send link and the receiver's recv link, either may be missing
 * when its trace was not given. */
struct lens_net_conn {
  uint64_t comm_id;
  int32_t comm, src, dst, channel;
  int32_t send_link, recv_link; /* indexes into lens_net.links, -1 */
  int32_t reverse;              /* the connection dst -> src on the same channel, -1 */
  int32_t dominant;             /* phase over both sides; with both known, the sender's peer_wait and the
                                 * receiver's data_wait are each the other side's time and are not named */
  double score;                 /* max of the sides' scores */
  double asymmetry;             /* score / reverse's score, 0 without a reverse */
  double wire_ratio;            /* its send link's wire_ns_per_byte over the typical connection's (the lower
                                 * median over the connections that have one); 0 unknown */
  double own_ratio;             /* its send link's time (blamed) over that time with its wire at the typical
                                 * pace (wire time / wire_ratio): how much slower its own time makes it, the
                                 * ratio the slow-link rule judges (lens_net_conn_slow_ratio); 0 unknown */
  int stands_out;               /* score >= LENS_NET_STANDOUT */
  int slow;                     /* a slow link by lens_net_link_is_slow of lens_net_conn_slow_ratio (the rule
                                 * job and report share) */
  int few_steps;                /* the rule says slow, but on fewer than LENS_NET_SLOW_MIN_STEPS timed steps:
                                 * not slow, said so */
  int32_t order;                /* 0 = slowest */
};

struct lens_net_qp {
  int32_t rank, proc;
  int32_t transport;            /* IB or SOCKET */
  int32_t device, qp_num;       /* IB: device index, QP number; socket: fd in qp_num, device -1 */
  int32_t peer, channel, dir;   /* of the first step it carried, -1 */
  uint64_t events, bytes;       /* bytes: the lengths the plugin reported (IB recv: not reported) */
  uint64_t timed, total_ns, p50_ns, max_ns; /* start (WR posted) -> stop (completion) */
};

#define LENS_NET_STANDOUT 2.0   /* a connection whose steps take 2x the typical time stands out */
/* net judges a connection slow on at least this many timed steps over its sides: one step of a window (a 57 KiB
 * step 98 % on the wire, 40x per byte) is a moment, not a link's pace. (job judges a link within one instance, on
 * the steps it moved there.) */
#define LENS_NET_SLOW_MIN_STEPS 4

/* ---- A slow link: one rule for net, job and the report ----
 *
 * A link (sender -> receiver, one channel) is slow when its own time is
 * pace_ratio >= LENS_NET_STANDOUT times its peers' AND that time is the
 * network's. Its own time is what it spends moving bytes, never its wait
 * for upstream: in a ring every link downstream of a slow one waits for
 * data as long as the slow one works, so end-to-end paces come out alike,
 * and half a small job's connections may be the slow link's channels,
 * which pulls "typical" to them. net: lens_net_conn_slow_ratio, the
 * sender's wire time per byte over the typical connection's (the wire
 * phase starts once the data and the credit were there); with no sender's
 * trace, the receiver cannot tell the wire from the sender's waits and the
 * connection's score (end-to-end pace) stands in. job: the same own ratio
 * (lens_net_own_ratios) over the links of one instance, its ops' bytes and
 * phases; without a sender's bytes, its ops' pace over the other links the
 * same proxies moved in that instance. The phase
 * with the most blamed time over the link's sides (lens_net_link_dominant)
 * is the wire, or, with only one side's trace, that side's wait for the
 * other end (the sender's wait for credit, the receiver's wait for data),
 * which it cannot tell from the wire. A link whose sender waits on its GPU
 * (send_gpu_wait) is never slow, whatever its pace: the data was late, not
 * the network; nor one whose receiver's GPU or flush holds it.
 * sides: the blamed time of the link's send side and recv side summed
 * (lens_net_split_merge; either may be missing: send_known, recv_known). */
int lens_net_link_dominant(const struct lens_net_split *sides, int send_known, int recv_known);
int lens_net_link_is_slow(double pace_ratio, const struct lens_net_split *sides, int send_known, int recv_known);
/* The rule's second half: whether a link's dominant phase (lens_net_link_dominant) is the network's. */
int lens_net_phase_on_network(int dominant, int send_known, int recv_known);

/* A sender's time on the wire per byte (ns/B), the pace the slow-link rule
 * judges a link by: 0 when its bytes or its wire time are not known. */
double lens_net_wire_ns_per_byte(uint64_t bytes, uint64_t wire_ns);
/* The slow-link rule's own time, for n links judged together (net: all
 * connections; job: the links of one instance). In: each link's sender's
 * wire time per byte (lens_net_wire_ns_per_byte; 0 unknown), its sender's
 * time (all phases) and its wire time, in ns. Out: wire_ratio, its wire
 * time per byte over the typical link's, the lower median over the links
 * that have one (a slow link's own channels may be half of a small job's
 * links, and the lower median is then still a healthy one's); own_ratio,
 * its sender's time over that time with its wire at the typical pace (1.0:
 * as fast as typical; 0 unknown). The outputs may be the inputs (link i is
 * read before its outputs are written).
 * Returns 0, -1 on allocation failure. */
int lens_net_own_ratios(size_t n, const double *ns_per_byte, const double *sender_ns, const double *wire_ns,
                        double *wire_ratio, double *own_ratio);
/* The ratio net's slow-link rule judged c by: its own_ratio when known,
 * else its score (no sender's trace: the end-to-end pace is all there is). */
double lens_net_conn_slow_ratio(const struct lens_net_conn *c);

/* A wire rate in GB/s (10^9 bytes a second = bytes per ns; docs/cli.md: bytes,
 * never bits): bytes sent over their steps' time in flight. The one rule for
 * a link's rate (net) and for links summed (the report's rank x peer matrix);
 * 0 without wire time. */
double lens_net_wire_gbps(uint64_t bytes, uint64_t wire_ns);

/* One rank's part of one collective instance (a Coll or P2p event) with
 * network ops: lens_net_instance_split of its event, with what names it. */
struct lens_net_inst {
  uint64_t comm_id;           /* 0 unknown */
  int32_t rank;               /* its rank in the communicator (the event's rank without one) */
  int32_t kind;               /* LENS_T_COLL or LENS_T_P2P */
  int32_t peer;               /* p2p: the peer, else -1 */
  int32_t has_seq;            /* coll: seq is its seqNumber (p2p has none) */
  uint64_t seq;
  uint64_t event;             /* its event in the job's reading order: the events of the groups before its own,
                               * then its index in its group's model (one group: the model's index) */
  char func[32];              /* "?" unknown */
  struct lens_net_split s;
  /* Who arrived last at the instance: the job view's answer, never the
   * network's (lens_net_insts_arrival; 0 until it ran: lens_net.arrival_known).
   * The row's rank is only whose network steps took that time: a late rank's
   * ring neighbour waits longest on the wire for the data it sent late. */
  int32_t last_rank;          /* the straggler, LENS_NET_LAST_NONE or LENS_NET_LAST_UNKNOWN */
  uint64_t last_wait_ns;      /* how long the earliest rank waited for the last (job's max_wait_ns); 0 unknown */
};

/* lens_net_inst.last_rank when no rank is named: */
#define LENS_NET_LAST_NONE (-1)    /* decomposed, and no rank made the others wait past the straggler threshold */
#define LENS_NET_LAST_UNKNOWN (-2) /* not decomposed (lens_job_inst_decomposed), or p2p / matched by order */

struct lens_net {
  struct lens_net_link *links; size_t n_links;   /* sorted: slowest connection first, send side first */
  struct lens_net_conn *conns; size_t n_conns;   /* sorted slowest first */
  struct lens_net_qp *qps; size_t n_qps;         /* sorted by rank, device, qp */
  struct lens_net_split total;
  struct lens_net_split send_total, recv_total;
  uint64_t net_plugin_events, net_plugin_unparented;
  uint64_t proxy_ops_unresolved;                 /* steps whose ProxyOp parent was not found */
  int32_t n_ranks;                               /* distinct ranks with links */
  int starvation_known;                          /* the model had scheduler samples */
  /* Instances with network ops: all of them in event order, or (top_instances
   * of the map) the top ones by step time, most first, ties by event. */
  struct lens_net_inst *insts; size_t n_insts;
  uint64_t insts_total;                          /* instances with network ops, listed or not */
  size_t insts_top;                              /* 0: insts holds all */
  int arrival_known;                             /* lens_net_insts_arrival filled the insts' last_rank */
};

/* qsort order of instances: the most step time first, ties by event (the order the views rank them in). */
int lens_net_inst_by_step_ns(const void *a, const void *b);

/* ---- Host group by host group (the pass driver, tools/cli/passes.h) ----
 *
 * map: one group's model -> a partial that owns everything it keeps (the
 * model may be freed then): its links keyed by (comm_id, rank, peer,
 * channel, direction) with their splits, one 8-byte record per timed step
 * (its time, size class and starvation, sorted by link and time: the
 * quantiles and the score need every step's time against the median of its
 * class over the whole job, so the values are kept, not a sketch; the merge
 * reads them in place and finds each class's median by a histogram, without
 * a copy), its NetPlugin QPs (a QP is one process's: never split across
 * groups) and its instances.
 * merge: the partials in input order -> the view lens_net_build gives of one
 * model holding them all. A link whose ops were recorded in two groups (the
 * proxy of another process under PXN) is joined by its key; a connection's
 * two sides (the sender's send link and the receiver's recv link) usually
 * come from two groups and meet here. Proc and comm indexes are rebased with
 * the groups' bases (NULL: all zero, one group).
 *
 * Reads ProxySteps as events (a pass over them sets LENS_PASS_STEPS): the
 * phases come from each step's states, the quantiles and the score from each
 * step's time, and NetPlugin events hang under steps. A folded ProxyOp
 * (LENS_LOAD_FOLD_STEPS) keeps only its stopped steps' count and first and
 * last stop: none of that. */
struct lens_net_part;
struct lens_net_map_opts {
  size_t top_instances;       /* instances kept: 0 all (JSON), else the top ones by step time */
};
/* NULL only when out of memory. o may be NULL (all instances). */
struct lens_net_part *lens_net_map(const struct lens_model *m, const struct lens_net_map_opts *o);
void lens_net_part_free(struct lens_net_part *p);
/* NULL only when out of memory. bases: per partial, where its group's tables
 * start in the skeleton the printers get (NULL: one group, no rebase). */
struct lens_net *lens_net_merge(struct lens_net_part *const *parts, size_t n, const struct lens_model_base *bases);
/* The pass driver's map and free: ctx is a const struct lens_net_map_opts *
 * (NULL: all instances). */
void *lens_net_pass_map(struct lens_model *m, void *ctx);
void lens_net_pass_free(void *part);

/* ---- Who arrived last: the job view's rule, one answer ----
 *
 * The instance rows rank one rank's network steps; whose lateness made them
 * long is the job view's question, answered by its rule (tools/analysis/job:
 * the decomposed instance's last rank, named when lens_job_inst_straggles).
 * Fills every inst's last_rank and last_wait_ns from j's instance of the same
 * collective (communicator id, seqNumber, func), sets arrival_known. j is the
 * job view of the same traces (lens_job_build, or lens_job_reduce of the
 * groups' partials). 0, -1 out of memory (n unchanged). */
struct lens_job;
int lens_net_insts_arrival(struct lens_net *n, const struct lens_job *j);

/* The view of one model: lens_net_merge of its one lens_net_map (all
 * instances). Returns NULL only when out of memory. */
struct lens_net *lens_net_build(const struct lens_model *m);
void lens_net_free(struct lens_net *n);

#ifdef __cplusplus
}
#endif
#endif
