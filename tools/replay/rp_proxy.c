/* One proxy progress thread per local rank, as ncclProxyProgress (spec §2.5,
 * §3): ProxyCtrl Sleep/Wakeup, Append/AppendEnd windows holding the ProxyOp
 * starts, Idle/Active transitions, the send and recv ProxyStep state
 * machines, and KernelCh from the simulated timestamp rings, all noticed
 * by polling, so callbacks lag the "GPU" as they do in NCCL. */
#define _GNU_SOURCE
#include <limits.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay/rp_couple.h"
#include "replay/rp_internal.h"
#include "replay/rp_net.h"
#include "replay/rp_truth.h"

#define POLL_NS 8000     /* pause between passes while ops are active (NCCL spins) */
#define NET_LAT_NS 4000  /* isend accepted -> test() done */
#define GPU_LAT_NS 2000  /* recv flushed -> GPU consumed */

enum { PH_NONE, PH_SEND_GPUWAIT, PH_SEND_PEERWAIT, PH_SEND_SENT, PH_RECV_WAIT, PH_RECV_FLUSH, PH_RECV_GPU, PH_DONE };

static struct rp_plugin *plug(struct rp_proxy *px) { return &px->node->plugin; }

/* ProxyCtrl is the proxy's: NCCL 2.31's profiler thread never reports it. */
static bool ctrl_on(struct rp_proxy *px) { return !px->is_profiler && rp_gate(LENS_EV_PROXY_CTRL, rp_mask_load()); }

/* One ProxyCtrl episode: start, one state, stop. The mask is read live. */
/* A state of a ProxyCtrl event; the mask is read again, as NCCL does. */
static void ctrl_state(struct rp_proxy *px, void *h, int state, int appended) {
  if (!rp_gate(LENS_EV_PROXY_CTRL, rp_mask_load())) return;
  lens_nccl_state_args_v5_t a = {0};
  a.proxyCtrl.appendedProxyOps = appended;
  rp_record(plug(px), h, state, &a);
}

/* A ProxyCtrl event's start and its first state; its handle. */
static void *ctrl_begin(struct rp_proxy *px, int state, int appended) {
  lens_nccl_descr_v6_t d = {0};
  d.type = LENS_EV_PROXY_CTRL;
  void *h = rp_start(plug(px), px->ctx, &d);
  atomic_fetch_add(&px->ctrl_events, 1);
  ctrl_state(px, h, state, appended);
  return h;
}

static void ctrl_event(struct rp_proxy *px, int state, int appended) {
  if (!ctrl_on(px)) return;
  rp_stop(plug(px), ctrl_begin(px, state, appended));
}

/* Time base of a network op: its GPU item's start, or t0 for ops that came
 * from another process (PXN) and have no item here. */
static int64_t op_t0(struct rp_proxy *px, struct rp_op *op) {
  if (op->foreign || op->net_truth) return op->t0;
  struct rp_item *it = rp_gpu_item(&px->node->gpu[op->local], op->channel, op->base);
  return it ? atomic_load_explicit(&it->start, memory_order_acquire) : op->t0;
}

static void step_start(struct rp_proxy *px, struct rp_op *op, int k) {
  void *h = NULL;
  if (rp_gate(LENS_EV_PROXY_STEP, op->mask)) {
    lens_nccl_descr_v6_t d = {0};
    d.type = LENS_EV_PROXY_STEP;
    d.parentObj = op->h;
    d.rank = op->rank;
    d.proxyStep.step = k;
    int64_t before = rp_now();
    h = rp_start(plug(px), op->ctx, &d);
    rp_net_step_mark(op, k, 0, before, rp_now());
    atomic_fetch_add(&px->steps_started, 1);
  }
  op->st[k % RP_STEPS].h = h;
  op->st[k % RP_STEPS].net = NULL;
}

/* Step states are recorded only when the ProxyOp handle is non-NULL
 * (profiler.cc:632). */
static void step_record(struct rp_proxy *px, struct rp_op *op, int k, int state, size_t trans) {
  if (!op->h) return;
  lens_nccl_state_args_v5_t a = {0};
  a.proxyStep.transSize = trans;
  int64_t before = rp_now();
  rp_record(plug(px), op->st[k % RP_STEPS].h, state, &a);
  rp_net_step_mark(op, k, state, before, rp_now());
}

static void step_stop(struct rp_proxy *px, struct rp_op *op, int k) {
  void *h = op->st[k % RP_STEPS].h;
  if (h) atomic_fetch_add(&px->steps_stopped, 1);
  int64_t before = rp_now();
  rp_stop(plug(px), h);
  if (h) rp_net_step_mark(op, k, -1, before, rp_now());
  op->st[k % RP_STEPS].phase = PH_DONE;
}

/* NetPlugin, as NCCL's callback does it: start only when the op's mask has
 * NetPlugin; stop with whatever handle the start left, even NULL. */
static void net_event(struct rp_proxy *px, struct rp_op *op, int k, bool stop) {
  int s = k % RP_STEPS;
  if (!stop) {
    op->st[s].net = NULL;
    if (!rp_gate(LENS_EV_NET_PLUGIN, op->mask)) return;
    lens_nccl_net_ib_v1_t qp = {0};
    qp.type = 1;
    qp.qp.device = op->local;
    qp.qp.wr_id = ((uint64_t)op->channel << 32) | (uint64_t)k;
    qp.qp.opcode = op->kind == RP_OP_NET_SEND ? 2 /* IBV_WR_SEND */ : 0;
    qp.qp.qpNum = 0x100 + op->channel;
    qp.qp.length = op->step_bytes;
    lens_nccl_descr_v6_t d = {0};
    d.type = LENS_EV_NET_PLUGIN;
    d.parentObj = op->st[s].h;
    d.rank = op->rank;
    d.netPlugin.id = LENS_NET_TYPE_IB | 1;
    d.netPlugin.data = &qp;
    op->st[s].net = rp_start(plug(px), op->ctx, &d);
    return;
  }
  if (op->st[s].net)
    rp_stop(plug(px), op->st[s].net);
  else if (op->net_null_stop) {
    rp_stop_raw(plug(px), NULL); /* profiler.cc:701: stopEvent(*eHandle) unconditionally */
    rp_truth_hazard(px->node->truth, "netplugin_null_stop", op->rank, k);
    op->net_null_stop = false;
  }
  op->st[s].net = NULL;
}

/* net.cc send path. Returns true when anything happened this pass. */
static bool progress_send(struct rp_proxy *px, struct rp_op *op, int64_t now) {
  bool did = false;
  int64_t t0 = op_t0(px, op);
  for (int k = op->done; k < op->posted; k++) {
    struct rp_op *o = op;
    int s = k % RP_STEPS;
    switch (o->st[s].phase) {
    case PH_SEND_GPUWAIT:
      if (o->stall_state == LENS_ST_PROXY_STEP_SEND_GPU_WAIT && k == o->stall_step) { /* the GPU never gets there */
        rp_hang_op_stalled(px, o);
        break;
      }
      if (now >= t0 + (int64_t)(k + 1) * o->step_ns) {
        step_record(px, o, k, LENS_ST_PROXY_STEP_SEND_PEER_WAIT, o->trans);
        o->st[s].phase = PH_SEND_PEERWAIT;
        o->st[s].t = now;
        did = true;
      }
      break;
    case PH_SEND_PEERWAIT:
      if (o->stall_state == LENS_ST_PROXY_STEP_SEND_PEER_WAIT && k == o->stall_step) {
        /* no credit from the peer: isend() gives no request, and net.cc
         * records SendPeerWait again on every pass */
        step_record(px, o, k, LENS_ST_PROXY_STEP_SEND_PEER_WAIT, o->trans);
        rp_hang_op_stalled(px, o);
        break;
      }
      if (o->st[s].extra20 > 0 || now < o->st[s].t + o->peer_hold_ns) { /* isend gave no request yet: 20 again */
        if (o->st[s].extra20 > 0) o->st[s].extra20--;
        step_record(px, o, k, LENS_ST_PROXY_STEP_SEND_PEER_WAIT, o->trans);
      } else {
        o->trans = o->step_bytes;
        /* isend accepted: the data is on its way now, before the profiler
         * hears of it (net.cc records SendWait after isend returned) */
        rp_couple_link_post(px->node, o, k);
        step_record(px, o, k, LENS_ST_PROXY_STEP_SEND_WAIT, o->trans);
        net_event(px, o, k, false);
        o->st[s].phase = PH_SEND_SENT;
        o->st[s].t = now;
      }
      did = true;
      break;
    case PH_SEND_SENT:
      if (now >= o->st[s].t + NET_LAT_NS + o->wire_extra_ns) {
        net_event(px, o, k, true);
        step_stop(px, o, k);
        did = true;
      }
      break;
    default:
      break;
    }
  }
  while (op->done < op->posted && op->st[op->done % RP_STEPS].phase == PH_DONE) op->done++;
  bool stalled = op->stall_state && op->posted > op->stall_step; /* nothing after the stalled step */
  if (!stalled && op->posted < op->nSteps && op->posted - op->done < RP_STEPS) { /* one new step per pass */
    int k = op->posted++;
    step_start(px, op, k);
    step_record(px, op, k, LENS_ST_PROXY_STEP_SEND_GPU_WAIT, op->trans); /* previous transSize */
    op->st[k % RP_STEPS].phase = PH_SEND_GPUWAIT;
    op->st[k % RP_STEPS].extra20 = (int)((op->channel + k) % 3);
    did = true;
  }
  return did;
}

/* Whether recv step k's data is in by now: its own pace from t0, and in job
 * scenarios its sender's post + the latency (the data cannot arrive before
 * it was sent, whatever this side's pace says). A sender that never posts
 * (its process died) is waited for a bounded time, then the op runs
 * uncoupled. */
static bool recv_arrived(struct rp_proxy *px, struct rp_op *op, int k, int64_t t0, int64_t now) {
  int64_t due = t0 + (int64_t)(k + 1) * op->step_ns + NET_LAT_NS + op->wire_extra_ns;
  if (now < due) return false;
  if (rp_couple_link_ready(px->node, op, k, now, NET_LAT_NS + op->wire_extra_ns)) return true;
  if (now < due + RP_LINK_WAIT_MAX_NS) return false;
  rp_truth_hazard(px->node->truth, "recv_step_uncoupled", op->rank, k);
  op->link_ord1 = 0;
  return true;
}

/* net.cc recv path, with the duplicate-start case of §2.5. */
static bool progress_recv(struct rp_proxy *px, struct rp_op *op, int64_t now) {
  bool did = false;
  int64_t t0 = op_t0(px, op);
  for (int k = op->done; k < op->posted; k++) {
    int s = k % RP_STEPS;
    switch (op->st[s].phase) {
    case PH_RECV_WAIT:
      if (op->stall_state == LENS_ST_PROXY_STEP_RECV_WAIT && k == op->stall_step) { /* no data ever comes */
        rp_hang_op_stalled(px, op);
        break;
      }
      if (recv_arrived(px, op, k, t0, now)) {
        op->trans = op->step_bytes;
        step_record(px, op, k, LENS_ST_PROXY_STEP_RECV_FLUSH_WAIT, op->trans);
        net_event(px, op, k, false);
        op->st[s].phase = PH_RECV_FLUSH;
        did = true;
      }
      break;
    case PH_RECV_FLUSH:
      net_event(px, op, k, true);
      step_record(px, op, k, LENS_ST_PROXY_STEP_RECV_GPU_WAIT, op->trans);
      op->st[s].phase = PH_RECV_GPU;
      op->st[s].t = now;
      did = true;
      break;
    case PH_RECV_GPU:
      if (now >= op->st[s].t + GPU_LAT_NS + op->consume_extra_ns) {
        step_stop(px, op, k);
        did = true;
      }
      break;
    default:
      break;
    }
  }
  while (op->done < op->posted && op->st[op->done % RP_STEPS].phase == PH_DONE) op->done++;
  bool stalled = op->stall_state && op->posted > op->stall_step;
  if (!stalled && op->posted < op->nSteps && op->posted - op->done < RP_STEPS) {
    int k = op->posted;
    step_start(px, op, k);
    did = true;
    if (op->dup_recv_start && !op->dup_done) {
      /* irecv gave no request: posted is not advanced, the handle is lost and
       * the same step is started again on the next pass. */
      op->dup_done = true;
      atomic_fetch_add(&px->dup_starts, 1);
      rp_truth_hazard(px->node->truth, "dup_recv_step_start", op->rank, k);
      return did;
    }
    op->posted++;
    step_record(px, op, k, LENS_ST_PROXY_STEP_RECV_WAIT, op->trans);
    op->st[k % RP_STEPS].phase = PH_RECV_WAIT;
  }
  return did;
}

/* NCCL 2.31 (profilerFireKernelPhaseEvents): with KernelPhase in the task's
 * mask, the phases of the item whose stop is reported, back to back, just
 * before the KernelCh stop: initial sync, compute, final sync, from the
 * kernel's phase stamps (here: 12 % of the item at either end is sync). */
static void kernel_phases(struct rp_proxy *px, struct rp_op *op, uint64_t counter, int kch_truth) {
  if (plug(px)->api != 7 || !(op->mask & LENS_EV_KERNEL_PHASE) || !op->h) return;
  struct rp_gpu *g = &px->node->gpu[op->local];
  struct rp_item *it = rp_gpu_item(g, op->channel, counter);
  if (!it) return;
  int64_t s = atomic_load(&it->start), e = atomic_load(&it->end);
  int64_t sync = (e - s) * 12 / 100;
  int64_t b[4] = {s, s + sync, e - sync, e};
  for (int ph = 0; ph < 3; ph++) {
    uint64_t t0 = (uint64_t)rp_gpu_time(g, b[ph]), t1 = (uint64_t)rp_gpu_time(g, b[ph + 1]);
    if (t0 == t1) continue; /* zero-length phases are skipped */
    rp_kernel_phase(plug(px), op->ctx, op->h, op->channel, ph, t0, t1);
    struct rp_truth_phase *tp = rp_truth_phase_new(px->node->truth);
    if (tp) *tp = (struct rp_truth_phase){kch_truth, op->rank, op->channel, ph, atomic_load(&px->tid), t0, t1};
  }
}

/* profilerProxyProgress: independent start and stop checks against the
 * rings, reporting whatever item the slot holds (overrun, §3). */
static bool progress_profiler(struct rp_proxy *px, struct rp_op *op, int64_t now) {
  struct rp_gpu *g = &px->node->gpu[op->local];
  struct rp_truth_kch *tk = rp_truth_kch_at(px->node->truth, op->kch_truth);
  bool did = false;
  int64_t t;
  if (!op->ch_started) {
    uint64_t c = rp_gpu_slot(g, op->channel, op->base, false, now, &t);
    if (c) {
      lens_nccl_descr_v6_t d = {0};
      d.type = LENS_EV_KERNEL_CH;
      d.parentObj = op->parent;
      d.kernelCh.channelId = (uint8_t)op->channel;
      d.kernelCh.pTimer = (uint64_t)rp_gpu_time(g, t);
      if (tk) {
        tk->start_counter = c;
        tk->start_ptimer = d.kernelCh.pTimer;
        tk->notice_start_ns = rp_now();
        tk->started = true;
      }
      op->h = rp_start(plug(px), op->ctx, &d);
      atomic_fetch_add(&px->kch_started, 1);
      op->ch_started = true;
      did = true;
    }
  }
  if (!op->ch_stopped) {
    uint64_t c = rp_gpu_slot(g, op->channel, op->base, true, now, &t);
    if (c) {
      lens_nccl_state_args_v5_t a = {0};
      a.kernelCh.pTimer = (uint64_t)rp_gpu_time(g, t);
      if (tk) {
        tk->stop_counter = c;
        tk->stop_ptimer = a.kernelCh.pTimer;
        tk->notice_stop_ns = rp_now();
        tk->stopped = true;
      }
      kernel_phases(px, op, c, op->kch_truth);
      rp_record(plug(px), op->h, LENS_ST_KERNEL_CH_STOP, &a);
      rp_stop(plug(px), op->h);
      atomic_fetch_add(&px->kch_stopped, 1);
      op->ch_stopped = true;
      did = true;
    }
  }
  struct rp_item *it = op->ch_stopped && tk ? rp_gpu_item(g, op->channel, op->base) : NULL;
  if (it) {
    tk->true_start_ns = atomic_load(&it->start);
    tk->true_stop_ns = atomic_load(&it->end);
    tk->true_start_gpu = (uint64_t)rp_gpu_time(g, tk->true_start_ns);
    tk->true_stop_gpu = (uint64_t)rp_gpu_time(g, tk->true_stop_ns);
    tk->proxy_tid = atomic_load(&px->tid);
    tk->by_profiler = px->is_profiler;
    tk->overrun = tk->start_counter != op->base || tk->stop_counter != op->base;
  }
  return did;
}

/* Returns true when the op is finished (and may be freed). */
static bool progress_op(struct rp_proxy *px, struct rp_op *op, int64_t now, bool *did) {
  if (op->kind == RP_OP_PROFILER) {
    *did |= progress_profiler(px, op, now);
    return op->ch_stopped;
  }
  if (!op->in_progress) { /* first pass: 19 once, zeroed args */
    lens_nccl_state_args_v5_t a = {0};
    rp_record(plug(px), op->h, LENS_ST_PROXY_OP_IN_PROGRESS, &a);
    op->in_progress = true;
    *did = true;
  }
  *did |= op->kind == RP_OP_NET_SEND ? progress_send(px, op, now) : progress_recv(px, op, now);
  while (op->done < op->posted && op->st[op->done % RP_STEPS].phase == PH_DONE) op->done++;
  if (op->done < op->nSteps) return false;
  if (op->h) atomic_fetch_add(&px->ops_stopped, 1);
  rp_stop(plug(px), op->h);
  *did = true;
  return true;
}

/* ProxyOp start while appending (ncclProxyOpToArgs); none for the
 * profiler pseudo-ops. Collnet-like ops start and are never stopped. */
static bool append_op(struct rp_proxy *px, struct rp_op *op) {
  if (op->kind == RP_OP_PROFILER) {
    struct rp_truth_kch *tk = rp_truth_kch_at(px->node->truth, op->kch_truth);
    if (tk) {
      tk->posted_ns = op->posted_ns;
      tk->appended_ns = rp_now();
    }
    return true;
  }
  op->h = NULL;
  if (op->kind == RP_OP_NET_SEND) rp_couple_link_open(px->node, op); /* before any of its steps is posted */
  if (rp_gate(LENS_EV_PROXY_OP, op->mask)) {
    lens_nccl_descr_v6_t d = {0};
    d.type = LENS_EV_PROXY_OP;
    d.parentObj = op->parent;
    d.rank = op->rank;
    d.proxyOp.pid = op->pid;
    d.proxyOp.channelId = (uint8_t)op->channel;
    d.proxyOp.peer = op->peer;
    d.proxyOp.nSteps = op->nSteps;
    d.proxyOp.chunkSize = op->chunkSize;
    d.proxyOp.isSend = op->kind == RP_OP_NET_SEND;
    op->h = rp_start(plug(px), op->ctx, &d);
    atomic_fetch_add(&px->ops_started, 1);
  }
  if (op->kind == RP_OP_COLLNET) {
    rp_truth_hazard(px->node->truth, "proxyop_never_stopped", op->rank, op->channel);
    return false;
  }
  return true;
}

static void op_finished(struct rp_proxy *px, struct rp_op *op) {
  free(op);
  atomic_fetch_sub(&px->active_n, 1);
}

/* ncclProxyGetPostedOps. Returns the number of ops appended. */
static int get_posted(struct rp_proxy *px, int nactive, struct rp_op ***tail, bool *exit_now) {
  pthread_mutex_lock(&px->mu);
  if (!px->posted_head && nactive > 0) {
    pthread_mutex_unlock(&px->mu);
    return 0;
  }
  if (!px->posted_head && !px->stopping) {
    pthread_mutex_unlock(&px->mu);
    /* Sleep episode: start, 15, block, 16, stop. */
    void *h = NULL;
    bool on = ctrl_on(px);
    if (on) h = ctrl_begin(px, LENS_ST_PROXY_CTRL_SLEEP, 0);
    pthread_mutex_lock(&px->mu);
    while (!px->posted_head && !px->stopping) pthread_cond_wait(&px->cv, &px->mu);
    pthread_mutex_unlock(&px->mu);
    if (on) {
      ctrl_state(px, h, LENS_ST_PROXY_CTRL_WAKEUP, 0);
      rp_stop(plug(px), h);
    }
    pthread_mutex_lock(&px->mu);
  }
  /* Append window: up to 16 ops. */
  struct rp_op *batch = NULL, **bt = &batch;
  int n = 0;
  while (px->posted_head && n < RP_APPEND_BATCH) {
    struct rp_op *op = px->posted_head;
    px->posted_head = op->next;
    if (!px->posted_head) px->posted_tail = NULL;
    op->next = NULL;
    *bt = op;
    bt = &op->next;
    n++;
  }
  *exit_now = px->stopping && !px->posted_head && nactive == 0 && n == 0;
  pthread_mutex_unlock(&px->mu);

  void *h = NULL;
  bool on = ctrl_on(px);
  if (on) h = ctrl_begin(px, LENS_ST_PROXY_CTRL_APPEND, 0);
  while (batch) {
    struct rp_op *op = batch;
    batch = op->next;
    op->next = NULL;
    if (append_op(px, op)) {
      **tail = op;
      *tail = &op->next;
    } else {
      op_finished(px, op);
    }
  }
  if (on) {
    ctrl_state(px, h, LENS_ST_PROXY_CTRL_APPEND_END, n);
    rp_stop(plug(px), h);
  }
  return n;
}

static void *proxy_main(void *arg) {
  struct rp_proxy *px = arg;
  atomic_store(&px->tid, rp_gettid());
  prctl(PR_SET_TIMERSLACK, 1UL); /* poll with µs, not the default 50 µs slack */
  if (px->pin_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(px->pin_cpu, &set);
    sched_setaffinity(0, sizeof set, &set); /* best effort */
  }
  struct rp_op *active = NULL, **tail = &active;
  int nactive = 0;
  bool prev_idle = true;
  unsigned iter = 0;
  for (;;) {
    if (atomic_load(&px->park)) { /* the hang's truth is being written: touch nothing */
      atomic_store(&px->parked, true);
      rp_sleep_ns(1000000);
      continue;
    }
    if (atomic_load_explicit(&px->frozen, memory_order_relaxed)) { /* hang-proxy: no pass, no record */
      rp_sleep_ns(10000000);
      continue;
    }
    int64_t stall = atomic_load(&px->stall_until);
    if (stall > rp_now()) { /* overrun scenario: the proxy is elsewhere */
      rp_sleep_ns(200000);
      continue;
    }
    /* progressOps: one pass over the active ops */
    bool did = false;
    int64_t now = rp_now();
    if (px->node->netsim) rp_net_pass(px, now, nactive);
    tail = &active;
    for (struct rp_op **pp = &active; *pp;) {
      struct rp_op *op = *pp;
      if (progress_op(px, op, now, &did)) {
        *pp = op->next;
        nactive--;
        op_finished(px, op);
      } else {
        pp = &op->next;
        tail = &op->next;
      }
    }
    bool idle = !did;
    if (idle != prev_idle) {
      ctrl_event(px, idle ? LENS_ST_PROXY_CTRL_IDLE : LENS_ST_PROXY_CTRL_ACTIVE, 0);
      prev_idle = idle;
    }
    int added = 0;
    bool check = idle || nactive == 0 || ++iter % 8 == 0;
    if (check) {
      bool exit_now = false;
      struct rp_op **t = tail;
      added = get_posted(px, nactive, &t, &exit_now);
      for (struct rp_op *op = *tail; op; op = op->next) nactive++;
      tail = t;
      if (exit_now) break;
    }
    /* NCCL spins: sched_yield() after every pass that added nothing
     * (proxy.cc). That is what the `spin` mode does (hog phases), so the
     * thread stays runnable and competes with the hogs: every yield that
     * hands the CPU to a hog is a real run-queue wait. Otherwise we spin
     * through the passes between two looks at the posted queue and nap after
     * a look, so a busy 2-core machine is not flooded yet appends stay
     * prompt; a thread that naps wins its CPU back on every wakeup and would
     * hardly be starved. */
    if (!added) {
      if (check && !atomic_load_explicit(&px->spin, memory_order_relaxed))
        rp_sleep_ns(POLL_NS);
      else
        sched_yield();
    }
  }
  return NULL;
}

void rp_proxy_start(struct rp_proxy *px) {
  pthread_mutex_init(&px->mu, NULL);
  pthread_cond_init(&px->cv, NULL);
  px->posted_head = px->posted_tail = NULL;
  px->stopping = false;
  atomic_store(&px->active_n, 0);
  atomic_store(&px->stall_until, 0);
  atomic_store(&px->spin, false);
  atomic_store(&px->frozen, false);
  atomic_store(&px->park, false);
  atomic_store(&px->parked, false);
  pthread_create(&px->thr, NULL, proxy_main, px);
  while (!atomic_load(&px->tid)) rp_sleep_ns(10000);
}

void rp_proxy_post(struct rp_proxy *px, struct rp_op *op) {
  atomic_fetch_add(&px->active_n, 1);
  op->next = NULL;
  op->posted_ns = rp_now();
  pthread_mutex_lock(&px->mu);
  if (px->posted_tail)
    px->posted_tail->next = op;
  else
    px->posted_head = op;
  px->posted_tail = op;
  pthread_cond_signal(&px->cv); /* ncclProxyStart */
  pthread_mutex_unlock(&px->mu);
}

void rp_proxy_drain(struct rp_proxy *px) {
  while (atomic_load(&px->active_n) > 0) rp_sleep_ns(100000);
}

void rp_proxy_stop(struct rp_proxy *px) {
  pthread_mutex_lock(&px->mu);
  px->stopping = true;
  pthread_cond_signal(&px->cv);
  pthread_mutex_unlock(&px->mu);
  pthread_join(px->thr, NULL);
  pthread_mutex_destroy(&px->mu);
  pthread_cond_destroy(&px->cv);
}

void rp_proxies_park(struct rp_node *n) {
  for (int l = 0; l < n->rpn; l++) {
    atomic_store(&n->proxy[l].park, true);
    if (n->prof_threads) atomic_store(&n->prof[l].park, true);
  }
  int64_t until = rp_now() + 1000000000LL;
  for (int l = 0; l < n->rpn; l++) {
    while (!atomic_load(&n->proxy[l].parked) && rp_now() < until) rp_sleep_ns(100000);
    while (n->prof_threads && !atomic_load(&n->prof[l].parked) && rp_now() < until) rp_sleep_ns(100000);
  }
}

void rp_proxies_unpark(struct rp_node *n) {
  for (int l = 0; l < n->rpn; l++) {
    atomic_store(&n->proxy[l].parked, false);
    atomic_store(&n->proxy[l].park, false);
    if (!n->prof_threads) continue;
    atomic_store(&n->prof[l].parked, false);
    atomic_store(&n->prof[l].park, false);
  }
}
