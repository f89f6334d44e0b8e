/* Hang scenarios with ground truth. After `iters` healthy AllReduces on comm
 * set 0 one more AllReduce (sequence number S = iters) never completes:
 *
 *   hang-missing  rank M (the first rank of the last node) never calls it;
 *                 the others enter it, their kernels never end, and each net
 *                 proxy op stalls: facing M at step 0 (a send waits for M's
 *                 credit, recording SendPeerWait on every pass as NCCL 2.28.9's
 *                 net.cc does while isend() gives no request; a receive has
 *                 posted its buffer and gets no data), the others at step
 *                 `step` (a send whose GPU produces nothing more, a receive with
 *                 no data);
 *   hang-proxy    every rank enters it; rank P's proxy thread stops cycling
 *                 (no pass, no record) once its op sits at step `step`; P's
 *                 peer's send waits for P's credit at that step;
 *   hang-graph    as hang-missing, inside a CUDA-graph replay: the graph
 *                 replays twice per iteration, then M skips one replay.
 *
 * Then the process waits --hang-exit-after seconds (hang-proxy's frozen
 * process: from the freeze, see hang_wait_exit) and ends without
 * finalize, as a killed job does (the node's proxies are still running: the
 * caller _exits). The truth object "hang" lists the missing rank, the frozen
 * proxy, and every stuck op with its peer, channel, step and state. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replay/rp_plan.h"
#include "replay/rp_truth.h"

#define HANG_STEP 2 /* the step where ops not facing the cause stall */
#define FREEZE_WAIT_MAX_NS 5000000000LL  /* a freeze takes a few ms: past this it is not coming */
#define WRITTEN_WAIT_MAX_NS 5000000000LL /* the plugin's writer writes a heartbeat every second */

static const char *const hang_scenarios[] = {"hang-missing", "hang-proxy", "hang-graph", NULL};

bool rp_hang_known(const char *name) {
  for (int i = 0; hang_scenarios[i]; i++)
    if (!strcmp(name, hang_scenarios[i])) return true;
  return false;
}

static struct rp_comm *comm0(struct rp_node *n, int local) { return &n->comms[local]; }

/* The culprit: the first rank of the last node, so that with two or more
 * nodes the previous node's last rank sends to it over the network. */
static int culprit(const struct rp_node *n) { return (n->nodes - 1) * n->rpn; }

static void allreduce_ranks(struct rp_node *n, int skip_rank) {
  if (n->rpn > 1) rp_group_start(n);
  for (int l = 0; l < n->rpn; l++)
    if (comm0(n, l)->rank != skip_rank) rp_coll(n, comm0(n, l), RP_ALLREDUCE, 1 << 16, "ncclFloat32", 4, 0);
  if (n->rpn > 1) rp_group_end(n);
}

static void hang_begin(struct rp_node *n) {
  n->hang.func = RP_ALLREDUCE;
  n->hang.seq = (int64_t)comm0(n, 0)->seq[RP_ALLREDUCE]; /* every rank has made the same calls so far */
  n->hang.comm_id = comm0(n, 0)->commId;
  n->hang.start_ns = rp_now();
  n->hang.now = true;
}

void rp_hang_stall_op(struct rp_node *n, struct rp_op *op, bool is_send) {
  struct rp_hang *h = &n->hang;
  int cause = h->missing_rank >= 0 ? h->missing_rank : h->frozen_rank;
  bool facing = op->peer == cause;
  if (h->kind == RP_HANG_PROXY && op->rank == h->frozen_rank) facing = false;
  op->stall_step = facing && h->missing_rank >= 0 ? 0 : h->step;
  if (op->stall_step >= op->nSteps) op->stall_step = op->nSteps - 1;
  if (is_send)
    op->stall_state = facing ? LENS_ST_PROXY_STEP_SEND_PEER_WAIT : LENS_ST_PROXY_STEP_SEND_GPU_WAIT;
  else
    op->stall_state = LENS_ST_PROXY_STEP_RECV_WAIT;
  op->freeze = h->kind == RP_HANG_PROXY && op->rank == h->frozen_rank;
  if (op->freeze) atomic_fetch_add(&h->freeze_ops, 1);
  int i = atomic_fetch_add(&h->nwait, 1);
  if (i < RP_HANG_MAX_WAIT)
    h->wait[i] = (struct rp_hang_wait){op->rank, op->peer, op->channel, op->stall_step, op->stall_state, is_send};
}

void rp_hang_op_stalled(struct rp_proxy *px, struct rp_op *op) {
  /* Freeze once every op of the frozen rank sits at its stalled step as its
   * lowest unfinished one, so that the truth's step is what the trace shows
   * for each of them. The app thread posts the ops one by one: freezing at
   * the first op that got there left the rest at an earlier step, or never
   * appended (no ProxyOp at all), whenever the poster was descheduled
   * between two posts (a loaded machine; the truth said step 2, the trace
   * step 0 or nothing). */
  struct rp_hang *h = &px->node->hang;
  if (!op->freeze || op->done < op->stall_step || atomic_load(&px->frozen)) return;
  if (!op->at_stall) {
    op->at_stall = true; /* the stalled step never finishes: it stays there */
    atomic_fetch_add(&h->freeze_ready, 1);
  }
  if (!atomic_load(&h->freeze_posted) || atomic_load(&h->freeze_ready) < atomic_load(&h->freeze_ops)) return;
  long long zero = 0;
  atomic_compare_exchange_strong(&h->frozen_ns, &zero, (long long)rp_now());
  atomic_store(&px->frozen, true);
}

/* --hang-freeze-delay-ms: the proxy that serves the frozen rank (and the
 * one its ops go through with PXN) takes no pass for that long from the hang,
 * as a thread descheduled on a loaded machine: its ops reach their stalled
 * step, and it freezes, that much later (tests). */
static void delay_frozen_proxy(struct rp_node *n) {
  int64_t ms = n->o->hang_freeze_delay_ms;
  if (ms <= 0) return;
  for (int l = 0; l < n->rpn; l++) {
    if (comm0(n, l)->rank != n->hang.frozen_rank) continue;
    int64_t until = rp_now() + ms * 1000000LL;
    atomic_store(&n->proxy[l].stall_until, until);
    if (n->pxn && n->rpn > 1) atomic_store(&n->proxy[(l + 1) % n->rpn].stall_until, until);
  }
}

static void healthy_allreduces(struct rp_node *n, int iters) {
  for (int it = 0; it < iters; it++) {
    n->iter = it;
    allreduce_ranks(n, -1);
    rp_sync(n);
  }
  n->iter = iters;
}

/* Bytes in this process's open .lens files (the plugin's trace, found by
 * what its descriptors point at, whatever the file is named); -1 when none
 * is open (recorder mode keeps the trace in memory). */
static long long trace_bytes(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  long long sum = -1;
  struct dirent *de;
  while ((de = readdir(d))) {
    char link[300], target[PATH_MAX];
    if (de->d_name[0] == '.') continue;
    snprintf(link, sizeof link, "/proc/self/fd/%s", de->d_name);
    ssize_t k = readlink(link, target, sizeof target - 1);
    if (k < 6) continue;
    target[k] = 0;
    struct stat st;
    if (strcmp(target + k - 5, ".lens") || stat(link, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    sum = (sum < 0 ? 0 : sum) + st.st_size;
  }
  closedir(d);
  return sum;
}

/* The process "is killed" --hang-exit-after after the hang. Returns -1 (one
 * line on stderr) when its trace could not show what the truth promises.
 *
 * hang-proxy: the process of the frozen rank counts from the freeze, not
 * from the posts: the freeze waits for the proxy to take the ops to their
 * stalled step, late when that thread is descheduled (the truth said frozen
 * proxy, the trace had none, or one silent for less than promised). Then it
 * waits until the plugin has written to its trace after that instant:
 * nothing records there once the proxy is frozen (the other proxies' ops
 * wait in states NCCL records once), so the trace ends at the writer's last
 * heartbeat (a CLOCK chunk a second); killed before the first one after the
 * freeze, the trace ended at the frozen proxy's own last records and `hang`
 * rightly called it cycling. That was the golden trace's case: its session
 * began 5 ms before the hang, so the heartbeat a second later was due within
 * ms of the kill (1 s after the posts); node 1's came too late, node 0's
 * 7 ms before it. The freeze itself came 0-16 ms after the hang. */
static int hang_wait_exit(struct rp_node *n) {
  struct rp_hang *h = &n->hang;
  int64_t after = (int64_t)(n->o->hang_exit_ms > 0 ? n->o->hang_exit_ms : 2000) * 1000000LL;
  int64_t from = rp_now();
  bool frozen_here = h->kind == RP_HANG_PROXY && atomic_load(&h->freeze_ops) > 0;
  if (frozen_here) {
    while (!atomic_load(&h->frozen_ns) && rp_now() < from + FREEZE_WAIT_MAX_NS) rp_sleep_ns(1000000);
    from = atomic_load(&h->frozen_ns);
    if (!from) {
      fprintf(stderr,
              "nccl-lens replay: hang-proxy: rank %d's proxy did not freeze within %lld s (its ops never reached "
              "their stall step)\n",
              h->frozen_rank, FREEZE_WAIT_MAX_NS / 1000000000LL);
      h->exit_ns = rp_now();
      return -1;
    }
  }
  rp_sleep_ns(from + after - rp_now());
  long long b0 = frozen_here ? trace_bytes() : -1;
  int64_t until = rp_now() + WRITTEN_WAIT_MAX_NS;
  while (b0 >= 0 && trace_bytes() <= b0) {
    if (rp_now() >= until) {
      fprintf(stderr,
              "nccl-lens replay: hang-proxy: nothing written to the trace within %lld s after the hang's end\n",
              WRITTEN_WAIT_MAX_NS / 1000000000LL);
      h->exit_ns = rp_now();
      return -1;
    }
    rp_sleep_ns(5000000);
  }
  h->exit_ns = rp_now();
  return 0;
}

bool rp_hang_run(struct rp_node *n, const char *name, int iters) {
  if (!rp_hang_known(name)) return false;
  struct rp_hang *h = &n->hang;
  h->missing_rank = h->frozen_rank = -1;
  h->step = HANG_STEP;
  if (!strcmp(name, "hang-missing")) {
    h->kind = RP_HANG_MISSING;
    h->missing_rank = culprit(n);
    healthy_allreduces(n, iters);
    hang_begin(n);
    allreduce_ranks(n, h->missing_rank);
  } else if (!strcmp(name, "hang-proxy")) {
    h->kind = RP_HANG_PROXY;
    h->frozen_rank = culprit(n);
    healthy_allreduces(n, iters);
    hang_begin(n);
    delay_frozen_proxy(n);
    allreduce_ranks(n, -1);
    atomic_store(&h->freeze_posted, true); /* every op of the frozen rank is posted */
  } else {
    h->kind = RP_HANG_GRAPH;
    h->missing_rank = culprit(n);
    n->iter = 0;
    rp_capture_begin(n);
    allreduce_ranks(n, -1);
    rp_capture_end(n);
    for (int it = 0; it < iters; it++) {
      n->iter = it;
      for (int r = 0; r < 2; r++) rp_graph_launch(n, it * 2 + r);
      rp_sync(n);
    }
    n->iter = iters;
    hang_begin(n);
    rp_graph_launch(n, iters * 2); /* skips the missing rank's plan */
    rp_cb_drain(n);                /* the host callbacks post the replay's proxy ops */
  }
  n->hang.now = false;
  h->failed = hang_wait_exit(n) != 0;
  return true;
}

static const char *state_name(int st) {
  switch (st) {
  case LENS_ST_PROXY_STEP_SEND_GPU_WAIT: return "SendGPUWait";
  case LENS_ST_PROXY_STEP_SEND_PEER_WAIT: return "SendPeerWait";
  case LENS_ST_PROXY_STEP_RECV_WAIT: return "RecvWait";
  default: return "?";
  }
}

void rp_hang_truth_write(struct rp_node *n, FILE *f) {
  struct rp_hang *h = &n->hang;
  if (h->kind == RP_HANG_NONE) return;
  static const char *const kinds[] = {"none", "missing", "proxy", "graph"};
  fprintf(f, ",\n\"hang\":{\"kind\":\"%s\",\"comm_id\":\"0x%016llx\",\"func\":\"%s\",\"seq\":%lld,\"missing_rank\":%d,"
             "\"frozen_rank\":%d,\"frozen_here\":%s,\"frozen_ns\":%lld,\"start_ns\":%lld,\"exit_after_ms\":%d,"
             "\"exit_ns\":%lld,\"waiting\":[",
          kinds[h->kind], (unsigned long long)h->comm_id, rp_func_name(h->func), (long long)h->seq, h->missing_rank,
          h->frozen_rank, atomic_load(&h->freeze_ops) > 0 ? "true" : "false", (long long)atomic_load(&h->frozen_ns),
          (long long)h->start_ns, n->o->hang_exit_ms > 0 ? n->o->hang_exit_ms : 2000, (long long)h->exit_ns);
  int nw = atomic_load(&h->nwait);
  if (nw > RP_HANG_MAX_WAIT) nw = RP_HANG_MAX_WAIT;
  for (int i = 0; i < nw; i++) {
    const struct rp_hang_wait *w = &h->wait[i];
    fprintf(f, "%s{\"rank\":%d,\"peer\":%d,\"channel\":%d,\"step\":%d,\"state\":\"%s\",\"is_send\":%s}", i ? "," : "",
            w->rank, w->peer, w->channel, w->step, state_name(w->state), w->is_send ? "true" : "false");
  }
  fputs("]}", f);
}
