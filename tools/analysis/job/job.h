/* The job view (docs/job.md): every collective instance matched across the
 * ranks of its communicator and decomposed into execution and waiting, using
 * only durations measured on each GPU's own clock (KernelCh pTimer), so it
 * works across hosts with no common clock. Causes for late ranks, slow links,
 * straggler ranking and the headline rows summary/report lead with.
 *
 * A view over the reader's model: lens_job_build() reads events, never
 * changes them. Memory: one row per (instance, rank) plus one record per
 * instance; ProxyStep times are folded per instance and link. */
#ifndef NCCL_LENS_JOB_H
#define NCCL_LENS_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "lensread.h"

/* Instance flags */
#define LENS_JOB_PARTIAL 0x1      /* not every rank of the communicator was seen: exec is an upper bound */
#define LENS_JOB_HOST_SPANS 0x2   /* some rank had no KernelCh: host spans (Coll start -> completion) used */
#define LENS_JOB_APPROX_RULE 0x4  /* the ranks do not end together by design (Broadcast/Reduce chain) */
#define LENS_JOB_ENDS_APART 0x8   /* ranks of one host ended apart on the mapped clock: the rule does not hold */
#define LENS_JOB_NO_SPAN 0x10     /* no rank had a span: nothing decomposed */
#define LENS_JOB_BY_ORDER 0x20    /* matched by order (no sequence number: v4, p2p) */
#define LENS_JOB_GRAPH 0x40       /* graph replay */
#define LENS_JOB_ONE_RANK 0x80    /* one rank's span only (the instance's only rank, or the only one seen or with a
                                   * span of several, whose span then holds its wait for the others): nothing
                                   * decomposed */

/* What made the last rank late, or the execution long. */
enum lens_job_cause {
  LENS_CAUSE_NONE = 0,      /* no straggler: waits below the threshold */
  LENS_CAUSE_LATE_APP,      /* the application called NCCL late */
  LENS_CAUSE_SLOW_ENQUEUE,  /* API call -> launch took long */
  LENS_CAUSE_SLOW_LAUNCH,   /* the KernelLaunch itself took long */
  LENS_CAUSE_GPU_BUSY,      /* kernel started long after its launch (stream busy) */
  LENS_CAUSE_STARVED_PROXY, /* the rank's proxy thread was starved (sched traces) */
  LENS_CAUSE_SLOW_LINK,     /* arrivals aligned, one link's steps far slower than the others */
  LENS_CAUSE_UNKNOWN,       /* late, but no stage explains it (e.g. no clock map for the GPU gap) */
};
const char *lens_job_cause_name(int cause);

struct lens_job_rank {
  int32_t rank, proc, event; /* event: the Coll/P2p on that rank */
  uint64_t span_ns;          /* first channel start -> last channel stop (GPU clock), or host span */
  uint64_t wait_ns;          /* span - exec */
  /* stages on the rank's host clock (0 = unknown) */
  uint64_t api_ns, launch_start_ns, launch_stop_ns;
  uint64_t kstart_mono_ns, kstop_mono_ns; /* mapped GPU times (clock map), 0 = unknown */
  uint64_t map_err_ns;       /* error bound of that mapping */
  uint64_t kstart_notice_ns; /* host time its first KernelCh start was noticed (>= the GPU start) */
  uint32_t host_span;        /* 1: span is host-side (no KernelCh) */
  uint32_t starved;          /* its KernelCh/ProxyStep overlapped a starvation of its proxy */
  uint64_t starved_ns;       /* ... the longest such overlap of one of them (acc.starved_ns) */
  /* Its end bracketed on its host's MONOTONIC for the host alignment
   * (job_align.h; 0 = none), filled by the map so that it survives in
   * partial files. */
  uint64_t end_lo_ns, end_hi_ns;
};

struct lens_job_inst {
  uint64_t comm_id;
  int64_t seq;               /* seqNumber, or the order index when matched by order */
  const char *func, *algo, *proto;
  int is_p2p, peer_lo, peer_hi; /* p2p: sender and receiver */
  int nranks, ranks_seen;
  uint64_t bytes;            /* nccl-tests "size" (AllGather/ReduceScatter: count x nranks) */
  uint64_t exec_ns;          /* 0 when not decomposed: read it through lens_job_inst_decomposed() */
  double busbw_gbps;         /* from exec, nccl-tests factor */
  int32_t last_rank;         /* -1 none (not decomposed) */
  uint64_t max_wait_ns;      /* the earliest rank's wait: how late the last rank was */
  uint64_t wait_sum_ns;      /* sum of all ranks' waits (rank-time lost to this last rank) */
  uint32_t flags;            /* LENS_JOB_* */
  int cause;                 /* enum lens_job_cause */
  int cause_rank, cause_peer; /* straggler; slow link sender/receiver */
  int64_t cause_excess_ns;   /* the lateness the stage explains: its excess, at most max_wait_ns (link ratio x1000) */
  uint64_t user_tag;         /* v7 userProfilerTag of the call (the first rank's that has one), 0 = untagged */
  int link_snd, link_rcv;    /* the instance's slowest link against its proxies' other links */
  double link_ratio;         /* ... and how much slower (0 = no proxy steps) */
  int link_on_net;           /* ... and slow by the network view's rule (lens_net_link_is_slow: that pace,
                              * and its time the network's, not its sender's GPU wait) */
  size_t first_rank, n_ranks; /* rows in lens_job.ranks */
};

/* Headline row: communicator x func x size bucket. */
struct lens_job_row {
  uint64_t comm_id;
  const char *func;
  int bucket;                /* floor(log2(bytes)) */
  uint64_t count, decomposed;
  uint64_t exec_avg, exec_p50, exec_p99;
  uint64_t wait_avg, wait_max; /* over ranks and instances */
  double busbw_gbps;         /* sum(bytes x factor) / sum(exec) */
  int32_t top_last_rank;     /* most frequent last rank (instances with a straggler), -1 none */
  uint64_t top_last_count, with_straggler;
};

struct lens_job_straggler {
  uint64_t comm_id;
  uint64_t user_tag;         /* tag_stragglers: the instances' user tag (0 in stragglers) */
  int32_t rank, proc;
  uint64_t wait_caused_ns;   /* sum over instances where it was last of the others' waits */
  uint64_t times_last;       /* instances where it was last with a wait above the threshold */
  uint64_t cause_count[8];   /* per enum lens_job_cause */
  uint64_t unknown_host_spans; /* of cause_count[LENS_CAUSE_UNKNOWN]: instances on host spans (LENS_JOB_HOST_SPANS) */
};

/* A one-way pair across hosts (oneway.h): a send op's step on process
 * snd_proc provably not yet posted at sent_ns, and the matching recv op's
 * step on rcv_proc provably in at recv_ns, each on its own host's
 * CLOCK_MONOTONIC, so true(recv_ns) >= true(sent_ns). */
struct lens_job_oneway {
  int32_t snd_proc, rcv_proc;
  uint64_t sent_ns, recv_ns;
};

struct lens_job {
  struct lens_job_inst *insts; size_t n_insts;
  struct lens_job_rank *ranks; size_t n_ranks;
  struct lens_job_row *rows; size_t n_rows;
  struct lens_job_straggler *stragglers; size_t n_stragglers; /* per comm, most wait caused first */
  /* per comm and user tag (tagged instances only; empty without v7 tags), most wait caused first */
  struct lens_job_straggler *tag_stragglers; size_t n_tag_stragglers;
  size_t matched_all, matched_some, matched_one;
  uint64_t min_wait_ns;      /* straggler threshold used */
  int comms_multi;           /* communicators with more than one rank loaded */
  int have_clock_map;        /* GPU starts mapped to host time (GPU-busy stage known) */
  /* copy-engine collectives of the inputs and their host enqueue time; ce_known 0 when a partial file
   * older than its section was among them */
  uint64_t ce_count, ce_enqueue_ns;
  int ce_known;
  /* One-way pairs between processes of different host names, for the host
   * alignment; ops whose link (sender, receiver, channel) is not unique in
   * their instance on either side are not paired (ambiguous, counted). */
  struct lens_job_oneway *oneway; size_t n_oneway;
  size_t oneway_ambiguous;
};

/* Default straggler threshold: a last rank is named when the earliest rank
 * waited at least max(LENS_JOB_MIN_WAIT_NS, LENS_JOB_MIN_WAIT_FRAC x exec). */
#define LENS_JOB_MIN_WAIT_NS 20000ULL
#define LENS_JOB_MIN_WAIT_FRAC 0.02
/* A link is slow when its own time (its sender's, with its wire at the
 * instance's typical pace per byte: lens_net_own_ratios; without its bytes,
 * its ops' pace against the other links of the same proxies) is at least
 * this many times its peers' and that time is the network's (the
 * rule net and the report use, lens_net_link_is_slow), in at least half of
 * its communicator's instances; it is then named in every instance where
 * that rule holds (pace ratio >= LENS_NET_STANDOUT). */
#define LENS_JOB_SLOW_LINK_RATIO 2.5

/* min_wait_ns 0 = default. Returns 0, -1 on allocation failure. */
int lens_job_build(const struct lens_model *m, struct lens_job *j, uint64_t min_wait_ns);
void lens_job_free(struct lens_job *j);
/* Whether an instance's last rank made the others wait past the threshold:
 * the instances that count for a straggler (times_last, wait_caused_ns). */
int lens_job_inst_straggles(const struct lens_job *j, const struct lens_job_inst *in);
/* Whether the job view decomposed an instance: seen on more than one rank
 * of a communicator of more than one, spans on at least two of them, and
 * its execution (the span of the rank that started last) split from the
 * waits. An instance seen on one rank only (or with one span) is not: that
 * span holds its wait for the ranks nobody saw (flag LENS_JOB_ONE_RANK;
 * lens_job_build leaves its exec_ns 0). The one rule every view uses: the
 * instances a row's `decomposed` counts, and the only ones whose exec_ns,
 * busbw_gbps, waits and last rank any view may use as the time an operation
 * worked (summary's algbw, diff, report, job's instances, Kineto merge).
 * Views that need more (report's busbw curve: no p2p, no partial) add their
 * conditions on top of it, never instead. */
int lens_job_inst_decomposed(const struct lens_job_inst *in);
/* The host group a rank record's process lies in, for a view that kept a
 * table per group of what it needs from the group's model (its events as
 * lens_job_rank.event names them): groups 0..n-1 whose processes start at
 * group_proc[g] in the skeleton (group_proc[n]: the end of the last), the
 * group being the last that starts at or before proc. -1 for a process
 * outside them (or none given). */
long lens_job_group_of_proc(const size_t *group_proc, size_t n, int32_t proc);
/* The size nccl-tests prints for an operation of func over nranks ranks,
 * from one rank's bytes (count x datatype size): an AllGather's or
 * ReduceScatter's is the ranks times one rank's count, every other's one
 * rank's. Every view's "size" column and algbw take it (one rule). */
uint64_t lens_nccl_tests_size(const char *func, uint64_t rank_bytes, int nranks);
/* A row's size bucket: floor(log2(size)), -1 for 0 (rows "4-8 MiB"). */
int lens_size_bucket(uint64_t size);
/* nccl-tests bus bandwidth factor of func for n ranks. */
double lens_job_busbw_factor(const char *func, int nranks);
/* Hostname of a process ("" unknown). */
const char *lens_job_host(const struct lens_model *m, int32_t proc);

#endif
