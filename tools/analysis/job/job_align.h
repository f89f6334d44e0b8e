/* Aligning hosts on one job time base (docs/timeline.md).
 *
 * Every trace is on its own host's CLOCK_MONOTONIC. A host's place on the job
 * time base is an offset (job = mono + offset + drift x (mono - ref_mono)),
 * known within an interval that only ever narrows:
 *   - coarse: CLOCK_REALTIME samples (host_clock.h): +- half bracket + NTP's
 *     maxerror, for each host independently;
 *   - sync points the job itself gives: the ranks of a ring/tree collective
 *     end within LENS_ALIGN_END_SPREAD_NS of each other, and each rank's end
 *     is bracketed on its host's clock by hard causal bounds (below).
 * Every bound is an inequality on a difference of two hosts' offsets, so the
 * whole is a system of difference constraints: the tightest interval of each
 * host's offset against the reference host's is a pair of shortest paths
 * (Bellman-Ford), and a negative cycle means the assumptions were wrong
 * (ends spread wider than assumed): the spread is doubled and it is solved
 * again, up to LENS_ALIGN_END_SPREAD_MAX_NS, then the sync points are dropped.
 *
 * The job time base is the reference host's clock (the host whose REALTIME
 * placement is tightest) placed on UTC by its REALTIME: every host's bound is
 * against that time base; the time base itself is within ref_utc_bound_ns of
 * UTC (NTP's word for the reference host).
 *
 * A rank's end (its last channel's stop) on its host's MONOTONIC lies in:
 *   upper: the host time the proxy noticed that channel's stop (NCCL reads
 *          the GPU's stop stamp after the GPU wrote it), and mapped + bound
 *          through its GPU's clock map (a CUPTI map: both ways; a map fitted
 *          without CUPTI is the lower envelope of notices, late by the
 *          smallest polling delay, so it only bounds from above);
 *   lower: its KernelLaunch's start + the kernel's span on its GPU clock (a
 *          kernel starts after its launch was called), and mapped - bound
 *          for a CUPTI map; for a notice map, mapped - its lateness's
 *          bound: the least (mapped kernel start - launch start) over that
 *          GPU's kernels (one kernel launched on an idle GPU is enough).
 * The last rank to arrive gives a tight lower bound, a promptly polling
 * proxy a tight upper one: over many instances (a minimum-delay filter, as
 * NTP's) the interval closes to a few us.
 *
 * One-way pairs (oneway.h, job_oneway.c): a receive step provably in at r
 * on host B, its send provably not yet posted at s on host A, so
 * x_A - x_B <= r - s: hard bounds in both directions wherever links run both
 * ways between hosts (a ring), tightest over all pairs. */
#ifndef NCCL_LENS_JOB_ALIGN_H
#define NCCL_LENS_JOB_ALIGN_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "lensread.h"

/* How far apart the ranks of one ring/tree collective may end (the last
 * chunk's hop); doubled while the sync points contradict each other. */
#define LENS_ALIGN_END_SPREAD_NS 5000ULL
/* The most hosts aligned: the solver is dense (hosts^2 bounds, Bellman-Ford
 * up to hosts^3 steps), and a partial of a few hundred KiB can name this many
 * hosts. Past it no host is placed (every source LENS_ALIGN_NONE) rather
 * than the merge running for hours. */
#define LENS_ALIGN_MAX_HOSTS 2048
#define LENS_ALIGN_END_SPREAD_MAX_NS 1000000ULL
/* A GPU clock runs within this of its host's over a kernel's span (drift). */
#define LENS_ALIGN_GPU_RATE_PPM 100.0
/* Assumed |drift| of a host's MONOTONIC against REALTIME when its samples
 * span too little time to measure it (the kernel's largest NTP slew). */
#define LENS_ALIGN_DRIFT_UNKNOWN_PPM 500.0
/* Shortest REALTIME sample span a drift is measured over. */
#define LENS_ALIGN_DRIFT_MIN_SPAN_NS 100000000ULL

enum lens_align_source {
  LENS_ALIGN_NONE = 0,  /* not placed: no clock evidence and no sync point */
  LENS_ALIGN_REF,       /* the reference host: defines the job time base */
  LENS_ALIGN_SYNC,      /* the job's sync points narrowed it below REALTIME's bound */
  LENS_ALIGN_REALTIME,  /* CLOCK_REALTIME (NTP) alone */
  LENS_ALIGN_ONEWAY,    /* the job's one-way pairs narrowed it (no collective-end sync point did) */
};
const char *lens_align_source_name(int source);

struct lens_align_host {
  const char *host, *boot_id;   /* point into the model ("" unknown) */
  int64_t timens_mono_offset_ns;
  uint32_t n_procs, n_ranks;
  int32_t first_proc;
  int source;                   /* enum lens_align_source */
  /* job time = mono + offset_ns + drift_ppm x 1e-6 x (mono - ref_mono_ns) */
  uint64_t ref_mono_ns;
  int64_t offset_ns;
  double drift_ppm, drift_err_ppm; /* against REALTIME's rate; drift_err: bound on its error */
  uint64_t bound_ns;            /* |aligned - true job time| at ref_mono_ns; grows by drift_err x |mono - ref| */
  int64_t coarse_offset_ns;     /* REALTIME's offset (0 when no clock evidence) */
  uint64_t coarse_bound_ns;     /* its bound against the job time base (UINT64_MAX: none) */
  uint32_t n_sync;              /* sync points (instances) that constrained it */
  uint32_t n_oneway;            /* one-way pairs (it sent or received) that constrained it */
  int has_clock;                /* it left CLOCK evidence */
};

struct lens_align_opts {
  uint64_t end_spread_ns;       /* 0 = LENS_ALIGN_END_SPREAD_NS */
  int sync_only;                /* ignore REALTIME offsets (its rates still give drift): check the sync points alone */
  int no_oneway;                /* ignore the one-way pairs (what the other evidence gives without them) */
  int oneway_only;              /* the one-way pairs alone: no REALTIME offset, no collective-end sync point */
};

/* One process's clock evidence, all the alignment needs of it (a fixed-size
 * struct: partial files carry it, docs/scale.md). */
struct lens_align_proc_clock {
  char host[64], boot_id[48];
  int64_t timens_mono_offset_ns;
  uint32_t has_clock;           /* it left CLOCK samples */
  uint32_t n_ranks;             /* its communicator ranks */
  uint64_t bound_ns, ref_mono_ns; /* REALTIME placement: bound and the sample's MONOTONIC */
  int64_t real_minus_mono_ns;
  double drift_ppm, drift_err_ppm;
  uint64_t start_mono_ns;       /* its first event: the reference of a host without samples */
};
/* The evidence of process proc of m. */
void lens_align_proc_clock_of(const struct lens_model *m, int32_t proc, struct lens_align_proc_clock *out);

struct lens_align {
  struct lens_align_proc_clock *procs; /* the evidence hosts[].host and boot_id point into (owned) */
  struct lens_align_host *hosts; size_t n_hosts;
  int32_t *host_of_proc; size_t n_procs; /* -1: a probe trace, no host clock */
  int ref;                      /* reference host, -1 none */
  uint64_t ref_utc_bound_ns;    /* the job time base against UTC (REALTIME's bound of ref), UINT64_MAX unknown */
  int time_base_realtime;       /* 1: job time is UTC ns (REALTIME); 0: the reference host's MONOTONIC */
  uint64_t end_spread_ns;       /* the spread the solution holds with */
  size_t sync_instances;        /* instances that gave a sync point between hosts */
  size_t rejected_points;       /* rank ends whose own bounds contradicted (lower > upper): left out */
  int sync_dropped;             /* the sync points contradicted each other at every spread tried */
  size_t oneway_pairs;          /* one-way pairs between two hosts (lens_job.oneway) */
  int oneway_dropped;           /* they contradicted REALTIME: a pairing or evidence rule broke; not used */
};

/* Difference-constraint solver (pure; job_align_solve.c). ub[a * n + b] is
 * an upper bound on x_a - x_b (INT64_MAX: none). On return x_h - x_ref lies
 * in [lo[h], hi[h]] (INT64_MIN / INT64_MAX when unconstrained). Returns 0, or
 * -1 when the constraints contradict each other (a negative cycle). */
int lens_align_solve(size_t n, const int64_t *ub, size_t ref, int64_t *lo, int64_t *hi);

/* A rank's end of one instance, bracketed on its host's clock. */
struct lens_align_end {
  size_t inst;      /* job instance */
  int32_t host;     /* filled by the caller */
  int32_t gpu;      /* its GPU: the thread that reported its KernelCh */
  uint64_t gpu_end; /* the end on that GPU's clock (pTimer) */
  uint64_t lo, hi;  /* host MONOTONIC */
  int eligible;     /* a ring/tree collective: its ranks end together */
};
/* What a rank's end bracket reads of its usable KernelCh children (timers
 * set, stop after start, none flagged bad: lens_job_kch_timed), taken where
 * the job map walks them (a walk of a Coll's children is a cache miss a
 * child; the map, the slack and the bracket walked them three times): the
 * span and the last channel's thread by the match's walk (rank_row, which
 * times the rank's span from the same channels), the notices' bound by
 * lens_align_rank_notices right after it. t 0: none, or no event. */
struct lens_align_gpu {
  uint64_t s, t;          /* first channel start, last channel stop (pTimer) */
  uint64_t hi;            /* least (stop notice + GPU time from that channel's stop to t): UINT64_MAX none */
  int32_t thread;         /* the last channel's thread (whose map places the start) */
  int32_t notice_thread;  /* the last noticed channel's thread (whose map places the end) */
};
/* g's hi and notice_thread from r's channels, its s, t and thread set (t 0: nothing to do). */
void lens_align_rank_notices(const struct lens_model *m, const struct lens_job_rank *r, struct lens_align_gpu *g);
/* 0 and lo, hi, gpu, gpu_end filled; -1 when it cannot be bracketed.
 * g: r's (struct lens_align_gpu); map_slack may be NULL. */
int lens_align_rank_end(const struct lens_model *m, const struct lens_job_rank *r, const struct lens_align_gpu *g,
                        const int64_t *map_slack, struct lens_align_end *x);
/* Carries brackets along each GPU's clock: two ends of one GPU are
 * (gpu_end difference) x (1 +- rate_ppm) apart on the host, so each bound
 * tightens the other ends' (sorts v by GPU and time). Returns the ends whose
 * bracket closed (lo > hi: the rate bound or a bound broke), left in place. */
size_t lens_align_propagate(struct lens_align_end *v, size_t n, double rate_ppm);

/* One host's bracket of one instance's end (the intersection of its ranks'):
 * the instance's ranks all ended within the spread of each other. */
struct lens_align_point {
  size_t inst;     /* points of one instance are adjacent */
  int32_t host;
  uint64_t lo, hi; /* that host's MONOTONIC ns */
};
/* Solves a->hosts (host, coarse_*, has_clock, ref_mono_ns, drift_* filled;
 * coarse_bound_ns against UTC) with sync points p. 0, -1 on allocation
 * failure. lens_align_build = the hosts and points of a model + this. */
int lens_align_resolve(struct lens_align *a, const struct lens_align_point *p, size_t np,
                       const struct lens_align_opts *o);
/* The same with one-way pairs (procs indexing a->host_of_proc): each is a
 * hard bound x_snd_host - x_rcv_host <= recv - sent (drift-corrected and
 * widened by the drift's error), the tightest per pair of hosts kept (NTP's
 * minimum-delay filter); never relaxed when the end spread is doubled or the
 * sync points dropped. */
int lens_align_resolve_pairs(struct lens_align *a, const struct lens_align_point *p, size_t np,
                             const struct lens_job_oneway *ow, size_t now, const struct lens_align_opts *o);

/* Builds the alignment from the model (its CLOCK evidence) and the job view
 * (sync points; may be NULL). 0, or -1 on allocation failure. */
int lens_align_build(const struct lens_model *m, const struct lens_job *j, const struct lens_align_opts *o,
                     struct lens_align *a);
/* The same from the processes' evidence (pc[proc], n_procs of them, copied)
 * and the rank ends the map bracketed (lens_job_rank end_lo_ns/end_hi_ns:
 * records reduced from partial files, whose events are gone). */
int lens_align_build_ends(const struct lens_align_proc_clock *pc, size_t n_procs, const struct lens_job *j,
                          const struct lens_align_opts *o, struct lens_align *a);
/* At the map: every rank's end bracketed and carried along its GPU's clock,
 * into ranks[i].end_lo_ns / end_hi_ns (0 = none); rank i of m at
 * (char *)ranks + i * stride. Returns the brackets that closed (left out), or
 * -1 on allocation failure. */
long lens_align_bracket_ranks(const struct lens_model *m, struct lens_job_rank *ranks, size_t n, size_t stride,
                              const struct lens_align_gpu *gpu); /* gpu[i]: rank i's (struct lens_align_gpu) */
void lens_align_free(struct lens_align *a);
/* Job time of a MONOTONIC ns of process proc, and its bound (may be NULL).
 * Returns 0, or -1 when that process's host is not placed (*job = mono). */
int lens_align_to_job(const struct lens_align *a, int32_t proc, uint64_t mono_ns, int64_t *job, uint64_t *bound);

#endif
