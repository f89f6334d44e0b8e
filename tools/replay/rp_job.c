/* Job scenarios: each step is the application's compute (2 ms of GPU work
 * on every rank's stream, so kernels of aligned ranks start together however
 * the host threads are scheduled, within 2 ms + the work) followed by one AllReduce; one rank is made
 * late by the injected cause, or one ring link is made slow. The GPUs are
 * coupled (rp_couple.c): every AllReduce ends together on all ranks after
 * the last rank arrived. */
#define _GNU_SOURCE
#include <string.h>

#include "replay/rp_couple.h"
#include "replay/rp_job.h"
#include "replay/rp_node.h"

#define JOB_GAP_NS 2000000LL    /* the app's compute between two collectives */
#define JOB_LINK_WIRE_NS 40000000LL /* a step on the slow link is 40 ms longer on the wire (as net-slow-link's):
                                      * with NCCL's 8 steps in flight, a pace of ~4 ms a step, far above the
                                      * simulated proxies' own, stalls included, on a loaded machine; the
                                      * sender's GPU keeps its pace, so the time is the network's */

static const struct {
  const char *name;
  enum rp_job_kind kind;
  const char *cause;
} kinds[] = {
    {"job-none", RP_JOB_NONE, "none"},
    {"job-late-app", RP_JOB_LATE_APP, "late_app_call"},
    {"job-slow-launch", RP_JOB_SLOW_LAUNCH, "slow_launch"},
    {"job-gpu-busy", RP_JOB_GPU_BUSY, "gpu_busy"},
    {"job-slow-link", RP_JOB_SLOW_LINK, "slow_link"},
    {"job-starved-proxy", RP_JOB_STARVED_PROXY, "starved_proxy"},
};

enum rp_job_kind rp_job_kind_of(const char *scenario) {
  for (size_t i = 0; scenario && i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strcmp(scenario, kinds[i].name)) return kinds[i].kind;
  return RP_JOB_OFF;
}

static int straggler(const struct lens_replay_opts *o, int nranks) {
  if (rp_job_kind_of(o->scenario) == RP_JOB_STARVED_PROXY) return 0; /* node 0's local rank 0: rp_hogs_start */
  if (o->straggler >= 0 && o->straggler < nranks) return o->straggler;
  return nranks > 1 ? 1 : 0;
}

static int64_t delay_ns(const struct lens_replay_opts *o) { return (int64_t)(o->delay_us > 0 ? o->delay_us : 3000) * 1000; }

struct rp_job_cause rp_job_truth_cause(const struct lens_replay_opts *o, int nranks) {
  enum rp_job_kind k = rp_job_kind_of(o->scenario);
  struct rp_job_cause c = {"none", -1, -1, 0};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (kinds[i].kind == k) c.cause = kinds[i].cause;
  if (k == RP_JOB_NONE || k == RP_JOB_OFF) return c;
  c.rank = o->straggler == LENS_REPLAY_STRAGGLER_ROTATE ? -1 : straggler(o, nranks); /* rotating: per instance */
  c.ns = delay_ns(o);
  if (k == RP_JOB_SLOW_LINK) {
    c.peer = (c.rank + 1) % nranks; /* the ring's next rank */
    c.ns = 0;                        /* per instance: extra_ns */
  }
  if (k == RP_JOB_STARVED_PROXY) c.ns = 0; /* nothing is delayed: only noticed late */
  return c;
}

uint64_t rp_job_comm_id(const struct lens_replay_opts *o, int set) { return rp_comm_id(o->seed, set); }

/* The late rank now: rotating over the ranks with the iteration (late-app), or fixed. */
static int straggler_now(const struct rp_node *n) {
  if (n->o->straggler == LENS_REPLAY_STRAGGLER_ROTATE) return n->nranks > 0 ? n->iter % n->nranks : 0;
  return straggler(n->o, n->nranks);
}

static bool is_straggler(const struct rp_node *n, const struct rp_comm *c) { return c->rank == straggler_now(n); }

int64_t rp_job_extra_ns(struct rp_node *n, const struct rp_comm *c, int64_t dur, int nsteps) {
  if (n->job_kind != RP_JOB_SLOW_LINK || !is_straggler(n, c) || n->nodes < 2) return 0;
  (void)dur; /* the GPU's own pace is within the kernel's time */
  int64_t waves = ((int64_t)nsteps + RP_STEPS - 1) / RP_STEPS; /* RP_STEPS in flight: each wave waits out the wire */
  return waves * JOB_LINK_WIRE_NS + 1000000; /* the link's last step (+1 ms of proxy passes), then the kernel ends */
}

void rp_job_launch_hold(struct rp_node *n, const struct rp_comm *c) {
  if (n->job_kind != RP_JOB_SLOW_LAUNCH || !is_straggler(n, c)) return;
  rp_sleep_ns(n->job_base + delay_ns(n->o) - rp_now());
}

int64_t rp_job_wire_ns(struct rp_node *n, const struct rp_comm *c, bool send, int peer) {
  if (n->job_kind != RP_JOB_SLOW_LINK) return 0;
  int x = straggler(n->o, n->nranks), y = (x + 1) % n->nranks;
  bool on_link = send ? (c->rank == x && peer == y) : (c->rank == y && peer == x);
  return on_link ? JOB_LINK_WIRE_NS : 0;
}

/* All processes start the job's first step at one board time. */
static int64_t start_barrier(struct rp_node *n) {
  struct rp_board *b = n->board;
  int gen = n->job_gen < 4 ? n->job_gen : 3;
  n->job_gen++;
  long long me = rp_now() + n->board_delta, cur = atomic_load(&b->bar_max[gen]);
  while (me > cur && !atomic_compare_exchange_weak(&b->bar_max[gen], &cur, me)) {
  }
  if (atomic_fetch_add(&b->bar_n[gen], 1) + 1 == n->nodes)
    atomic_store(&b->bar_t[gen], atomic_load(&b->bar_max[gen]) + 5 * JOB_GAP_NS);
  int64_t deadline = rp_now() + 60LL * 1000000000LL, t;
  while (!(t = atomic_load(&b->bar_t[gen])) && rp_now() < deadline) rp_sleep_ns(20000);
  return t ? t - n->board_delta : rp_now();
}

static void job_step(struct rp_node *n, size_t count, uint64_t tag) {
  int64_t base = 0;
  for (int l = 0; l < n->rpn; l++) {
    int64_t b = n->comms[l].stream_free + JOB_GAP_NS;
    if (b > base) base = b;
  }
  n->job_base = base;
  int x = straggler_now(n);
  for (int l = 0; l < n->rpn; l++) {
    struct rp_comm *c = &n->comms[l];
    c->stream_free = base + (n->job_kind == RP_JOB_GPU_BUSY && c->rank == x ? delay_ns(n->o) : 0);
  }
  /* Bare calls, one per rank (a group would launch them together): the
   * straggler's last, so its delay cannot hold the others back. */
  for (int pass = 0; pass < 2; pass++)
    for (int l = 0; l < n->rpn; l++) {
      struct rp_comm *c = &n->comms[l];
      if ((c->rank == x) != (pass == 1)) continue;
      if (pass == 1 && n->job_kind == RP_JOB_LATE_APP) rp_sleep_ns(base + delay_ns(n->o) - rp_now());
      /* With a v7 plugin, each step's AllReduce carries its own userProfilerTag
       * (as ncclAllReduce through ncclCollConfig_t would): the job view ranks stragglers per tag. */
      n->app.cfg_tag = n->plugin.api == 7 ? tag : 0;
      rp_coll(n, c, RP_ALLREDUCE, count, "ncclFloat32", 4, 0);
      n->app.cfg_tag = 0;
    }
  /* As a training loop does, the app runs ahead: it needs the others'
   * arrivals (the end is fixed then), not the end itself; so host-side
   * jitter shorter than the work + the compute does not make a rank late. */
  rp_couple_settle(n);
  /* A starved proxy is a matter of host time: keep the app (and so the hog
   * phase) within a step of the GPUs, not hundreds of ms ahead. */
  if (n->job_kind == RP_JOB_STARVED_PROXY) rp_sleep_ns(base - rp_now());
  /* A slow link: the app waits for this collective's end (as one that
   * synchronizes each step does). Ops posted an instance ahead would have
   * their first steps wait on the busy GPU longer than on the slow wire
   * (send_gpu_wait), and the link's time would not be the network's. */
  if (n->job_kind == RP_JOB_SLOW_LINK) {
    int64_t end = 0;
    for (int l = 0; l < n->rpn; l++)
      if (n->comms[l].stream_free > end) end = n->comms[l].stream_free;
    rp_sleep_ns(end - rp_now());
  }
}

/* job-starved-proxy: node 0 pins busy hogs onto its local rank 0's proxy
 * CPU (rp_hog.c, as the `starved` scenario does) for 16 iterations in the
 * middle of the run; the board keeps the phase for the truth's instances. The GPUs run on
 * time, and the app thread leaves that CPU, so nothing is late: the proxy
 * only notices late (docs/replay.md, "Job scenarios"). */
#define JOB_STARVE_ITERS 16 /* ~75 ms: a proxy kept that long from its CPU falls behind, but not by the
                             * 64 items of NCCL's work counter ring (its timers would be overwritten) */
static struct rp_hogs *starve_phase(struct rp_node *n, struct rp_hogs *h, int it, int iters) {
  if (n->job_kind != RP_JOB_STARVED_PROXY || n->node != 0) return h;
  int from = iters > JOB_STARVE_ITERS ? (iters - JOB_STARVE_ITERS) / 2 : 0;
  if (!h && it == from) {
    h = rp_hogs_start(n, 1);
    atomic_store(&n->board->starve_start, rp_now() + n->board_delta);
  } else if (h && it == from + JOB_STARVE_ITERS) {
    rp_couple_settle(n);
    atomic_store(&n->board->starve_end, rp_now() + n->board_delta);
    rp_hogs_stop(h);
    h = NULL;
  }
  return h;
}

void rp_job_run(struct rp_node *n, int iters) {
  /* 1 MiB and 16 MiB of float; with a slow link 512 and 768 KiB (12 steps:
   * two waves of the slow wire, ~80 ms per AllReduce, not 200). */
  static const size_t counts[] = {1u << 18, 1u << 22}, link_counts[] = {1u << 17, 3u << 16};
  const size_t *cn = n->job_kind == RP_JOB_SLOW_LINK ? link_counts : counts;
  /* A follower (`nccl-lens sched --follow`) finds a new process within
   * 50 ms: let it watch the proxies before the hogs start. */
  if (n->job_kind == RP_JOB_STARVED_PROXY) rp_sleep_ns(100000000LL);
  int64_t t0 = start_barrier(n);
  for (int l = 0; l < n->rpn; l++) n->comms[l].stream_free = t0 - JOB_GAP_NS;
  struct rp_hogs *h = NULL;
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    h = starve_phase(n, h, it, iters);
    for (size_t k = 0; k < 2; k++) job_step(n, cn[k], k + 1);
  }
  if (h) { /* iters < 2: the phase never ended */
    rp_couple_settle(n);
    atomic_store(&n->board->starve_end, rp_now() + n->board_delta);
    rp_hogs_stop(h);
  }
  rp_sync(n);
}
