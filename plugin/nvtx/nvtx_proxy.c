/* NVTX on NCCL's proxy progress thread: the thread's name, ProxyOp ranges
 * (start/end: they overlap), proxy Sleep and Active periods, and counters for
 * the KernelCh notice lag and the steps in flight.
 *
 * Bounds: at most LENS_NVTX_MAX_OPEN_OPS ProxyOp ranges open per thread;
 * the ops started past them (counted) share one range, "ProxyOps past 16
 * open", from the first of them to when none is left (a batch of 64
 * enqueued collectives keeps more open: on an H200, 5,288 ops would have
 * left no mark at all), plus one Sleep and one Active range, so a thread
 * never has more than LENS_NVTX_OPEN_RANGE_LIMIT ranges open. No
 * range per ProxyStep: steps are summarised into their op's end payload and
 * into the steps-in-flight counter. Some transports start ProxyOps they never
 * stop (spec §2.5); the proxy only sleeps with no op active, so any range
 * still open at Sleep is an orphan: it is ended there and counted.
 *
 * A period also ends at the stop of the ProxyCtrl event that shows it is
 * over, so that a proxy that exits in Active (its last pass did work, so no
 * Idle is recorded: frequent under CPU load) leaves nothing open: a Sleep
 * whose Wakeup never came ends at its own event's stop, and Active ends at
 * the stop of an Append window that appended nothing. The proxy only looks
 * for posted ops with none active; with none posted it either sleeps (which
 * ends Active anyway) or, being asked to stop, appends nothing and exits
 * (spec §2.5). What is still open at the last finalize (a proxy that ended
 * in Active with no such window, ops never stopped) is ended there
 * (lens_nvtx_proxy_close_all).
 *
 * All state is in the proxy thread's entry of a fixed per-slot table (see
 * lens_nvtx_slot_state), in tables keyed by event id: ProxyOp, its steps and
 * KernelCh start and stop on the same proxy thread. */
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nvtx_emit.h"
#include "nvtx_text.h"

#define STEP_SLOTS 256 /* direct-mapped by the step id's sequence number */
#define CH_SLOTS 64    /* KernelCh id -> channel, direct-mapped */
#define NCCL_STEPS 8   /* NCCL keeps step handles in pHandles[step % 8] */

struct op_slot {
  uint64_t id; /* 0 = free */
  nvtxRangeId_t range;
  uint64_t step_ids[NCCL_STEPS]; /* latest step handle per step % 8, as NCCL holds them */
  struct lens_nvtx_proxy_op_payload pl;
};

struct step_slot {
  uint64_t id; /* 0 = free */
  uint64_t op; /* owning ProxyOp id (0 if its op has no range) */
};

struct ch_slot {
  uint64_t id;
  uint32_t channel;
};

struct proxy_state {
  pthread_t owner; /* first: see lens_nvtx_slot_state */
  int named;
  uint32_t n_open_ops;
  struct op_slot ops[LENS_NVTX_MAX_OPEN_OPS];
  struct step_slot steps[STEP_SLOTS];
  struct ch_slot chs[CH_SLOTS];
  int64_t steps_in_flight;
  nvtxRangeId_t sleep_range, active_range;
  int sleeping, active;
  /* The ops past the table: how many still open, under one range, and the
   * sequence number of the first of them. A stop of a ProxyOp not in the
   * table is one of them when its number is not below that first one's
   * (ids rise per thread slot): an op ended at Sleep (in the table or past
   * it) is older than any op of a later shared range, and its late stop
   * must not end that range early. */
  uint32_t n_over;
  uint64_t over_first_seq;
  nvtxRangeId_t over_range;
  uint64_t ctrl_id;    /* the ProxyCtrl event in progress (start .. stop) */
  int ctrl_append;     /* it is an Append window (17) ... */
  int ctrl_appended;   /* ... that appended this many ops (-1: not known yet) */
  int have_offset;
  int64_t offset_min; /* min over KernelCh callbacks of (host mono ns - pTimer): GPU->host offset estimate */
  char msg[160];
};
static struct proxy_state proxy_states[LENS_NVTX_MAX_SLOTS];

static struct op_slot *op_find(struct proxy_state *pt, uint64_t id) {
  if (!id) return NULL;
  for (int i = 0; i < LENS_NVTX_MAX_OPEN_OPS; i++)
    if (pt->ops[i].id == id) return &pt->ops[i];
  return NULL;
}

/* Names the thread the first time a local communicator's ProxyCtrl or
 * KernelCh arrives on it. One gettid per proxy thread, ever. NCCL 2.31's
 * profiler thread (KernelCh, never ProxyCtrl) gets its own row name,
 * "NCCL Profiler r0/8 comm". */
static void name_thread(struct proxy_state *pt, uint64_t context, const char *prefix) {
  if (pt->named) return;
  const struct lens_comm_info *c = context ? lens_comm_lookup(context) : NULL;
  if (!c) return; /* foreign or unknown: wait for a local one */
  pt->named = 1;
  struct lens_text t;
  lens_text_init(&t, pt->msg, sizeof(pt->msg));
  lens_text_str(&t, prefix);
  lens_text_i64(&t, c->rank);
  lens_text_char(&t, '/');
  lens_text_i64(&t, c->nranks);
  lens_text_char(&t, ' ');
  lens_text_str(&t, c->name && c->name[0] ? c->name : "comm");
  nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), pt->msg);
}

static void sample_steps(struct proxy_state *pt) {
  if (lens_nvtx_g.counters_ok)
    nvtxCounterSampleInt64(lens_nvtx_g.domain, lens_nvtx_g.counter_steps, pt->steps_in_flight);
}

static void op_end(struct proxy_state *pt, struct op_slot *o) {
  if (lens_nvtx_g.payload_ok) {
    nvtxPayloadData_t pd = {LENS_NVTX_SID_PROXY_OP, sizeof(o->pl), &o->pl};
    nvtxRangeEndPayload(lens_nvtx_g.domain, o->range, &pd, 1);
  } else {
    nvtxDomainRangeEnd(lens_nvtx_g.domain, o->range);
  }
  o->id = 0;
  pt->n_open_ops--;
}

#define STR_(x) #x
#define STR(x) STR_(x)
static void over_start(struct proxy_state *pt, uint64_t id) {
  lens_nvtx_drop(&lens_nvtx_g.drops.proxy_ops_over_cap);
  if (pt->n_over++) return;
  pt->over_first_seq = LENS_ID_SEQ(id);
  nvtxEventAttributes_t a =
      lens_nvtx_attr(LENS_NVTX_CAT_PROXY_OP, LENS_NVTX_OVER_PREFIX STR(LENS_NVTX_MAX_OPEN_OPS) " open (each one in the trace)");
  pt->over_range = nvtxDomainRangeStartEx(lens_nvtx_g.domain, &a);
}

/* The last op past the table stopped (or the proxy sleeps: none is left).
 * id: the op that stopped (0: all end). */
static void over_end(struct proxy_state *pt, uint64_t id, int all) {
  if (!pt->n_over || (!all && LENS_ID_SEQ(id) < pt->over_first_seq)) return; /* an earlier range's */
  pt->n_over = all ? 0 : pt->n_over - 1;
  if (!pt->n_over) nvtxDomainRangeEnd(lens_nvtx_g.domain, pt->over_range);
}

static void op_start(struct proxy_state *pt, const struct lens_rec_start *rec) {
  const struct lens_p_proxy_op *p = (const void *)(rec + 1);
  struct op_slot *o = NULL;
  for (int i = 0; i < LENS_NVTX_MAX_OPEN_OPS && !o; i++)
    if (!pt->ops[i].id) o = &pt->ops[i];
  if (!o) {
    over_start(pt, rec->id);
    return;
  }
  memset(o, 0, sizeof(*o));
  o->id = rec->id;
  o->pl.channel = p->channel;
  o->pl.peer = p->peer;
  o->pl.is_send = p->is_send;
  o->pl.n_steps = p->n_steps;
  o->pl.chunk_size = p->chunk_size;
  o->pl.rank = rec->rank;
  struct lens_text t;
  lens_text_init(&t, pt->msg, sizeof(pt->msg));
  lens_text_str(&t, p->is_send ? "Send r" : "Recv r");
  lens_text_i64(&t, rec->rank);
  lens_text_str(&t, p->is_send ? " -> r" : " <- r");
  lens_text_i64(&t, p->peer);
  lens_text_str(&t, " ch");
  lens_text_u64(&t, p->channel);
  lens_text_char(&t, ' ');
  lens_text_i64(&t, p->n_steps);
  lens_text_str(&t, " steps x ");
  lens_text_bytes(&t, p->chunk_size > 0 ? (uint64_t)p->chunk_size : 0);
  if (rec->h.aux & LENS_START_F_REMOTE) lens_text_str(&t, " (PXN)");
  nvtxEventAttributes_t a = lens_nvtx_attr(LENS_NVTX_CAT_PROXY_OP, pt->msg);
  o->range = nvtxDomainRangeStartEx(lens_nvtx_g.domain, &a);
  pt->n_open_ops++;
}

static void step_forget(struct proxy_state *pt, struct step_slot *s) {
  s->id = 0;
  pt->steps_in_flight--;
}

static void step_start(struct proxy_state *pt, const struct lens_rec_start *rec) {
  const struct lens_p_proxy_step *p = (const void *)(rec + 1);
  struct op_slot *o = op_find(pt, rec->parent);
  if (o) {
    /* A second start for the same step supersedes the first, as NCCL
     * overwrites its handle (spec §2.5): forget the first one. */
    uint64_t prev = o->step_ids[(uint32_t)p->step % NCCL_STEPS];
    struct step_slot *ps = prev ? &pt->steps[LENS_ID_SEQ(prev) % STEP_SLOTS] : NULL;
    if (ps && ps->id == prev) step_forget(pt, ps);
    else o->pl.steps_started++;
    o->step_ids[(uint32_t)p->step % NCCL_STEPS] = rec->id;
  }
  struct step_slot *s = &pt->steps[LENS_ID_SEQ(rec->id) % STEP_SLOTS];
  if (s->id) { /* a step 256 starts ago never stopped: its slot is reused */
    step_forget(pt, s);
    lens_nvtx_drop(&lens_nvtx_g.drops.steps_evicted);
  }
  s->id = rec->id;
  s->op = o ? o->id : 0;
  pt->steps_in_flight++;
  sample_steps(pt);
}

static void step_stop(struct proxy_state *pt, uint64_t id) {
  struct step_slot *s = &pt->steps[LENS_ID_SEQ(id) % STEP_SLOTS];
  if (s->id != id) return; /* superseded, evicted or never seen */
  struct op_slot *o = op_find(pt, s->op);
  if (o) o->pl.steps_done++;
  step_forget(pt, s);
  sample_steps(pt);
}

static void kernel_ch_start(struct proxy_state *pt, const struct lens_rec_start *rec) {
  const struct lens_p_kernel_ch *p = (const void *)(rec + 1);
  struct ch_slot *c = &pt->chs[LENS_ID_SEQ(rec->id) % CH_SLOTS];
  c->id = rec->id;
  c->channel = p->channel;
  int64_t d = (int64_t)(lens_nvtx_mono_ns() - p->start_gpu_ns);
  if (!pt->have_offset || d < pt->offset_min) pt->offset_min = d;
  pt->have_offset = 1;
}

/* State 22: the proxy noticed the GPU finished. lag = host now - GPU stop
 * mapped to host, with the running-min offset (its own lower bound: the first
 * sample reads 0). The real clock fit happens offline in the tools. */
static void kernel_ch_stop_state(struct proxy_state *pt, uint64_t id, uint64_t gpu_stop_ns) {
  int64_t d = (int64_t)(lens_nvtx_mono_ns() - gpu_stop_ns);
  if (!pt->have_offset || d < pt->offset_min) pt->offset_min = d;
  pt->have_offset = 1;
  int64_t lag = d - pt->offset_min;
  if (lens_nvtx_g.counters_ok) {
    nvtxCounterSampleInt64(lens_nvtx_g.domain, lens_nvtx_g.counter_lag, lag);
    return;
  }
  struct ch_slot *c = &pt->chs[LENS_ID_SEQ(id) % CH_SLOTS];
  struct lens_nvtx_ch_lag_payload pl = {lag, gpu_stop_ns, c->id == id ? c->channel : UINT32_MAX, 0};
  struct lens_text t;
  lens_text_init(&t, pt->msg, sizeof(pt->msg));
  lens_text_str(&t, "KernelCh ch");
  if (c->id == id) lens_text_u64(&t, c->channel);
  else lens_text_char(&t, '?');
  lens_text_str(&t, " lag ");
  lens_text_i64(&t, lag / 1000);
  lens_text_str(&t, " us");
  nvtxEventAttributes_t a = lens_nvtx_attr(LENS_NVTX_CAT_KERNEL_CH, pt->msg);
  nvtxPayloadData_t pd = {LENS_NVTX_SID_CH_LAG, sizeof(pl), &pl};
  if (lens_nvtx_g.payload_ok) {
    a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    a.payload.ullValue = (uint64_t)(uintptr_t)&pd;
    a.reserved0 = 1;
  }
  nvtxDomainMarkEx(lens_nvtx_g.domain, &a);
}

static void period_start(nvtxRangeId_t *range, int *open, enum lens_nvtx_str s) {
  if (*open) return;
  nvtxEventAttributes_t a = lens_nvtx_attr(LENS_NVTX_CAT_PROXY_CTRL, NULL);
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = lens_nvtx_g.str[s];
  *range = nvtxDomainRangeStartEx(lens_nvtx_g.domain, &a);
  *open = 1;
}

static void period_end(nvtxRangeId_t *range, int *open) {
  if (!*open) return;
  nvtxDomainRangeEnd(lens_nvtx_g.domain, *range);
  *open = 0;
}

void lens_nvtx_proxy_start(const struct lens_rec_start *rec) {
  struct proxy_state *pt = lens_nvtx_slot_state(proxy_states, sizeof(*pt), rec->id, 1);
  if (!pt) return;
  switch (rec->h.type) {
  case LENS_T_PROXY_OP: op_start(pt, rec); break;
  case LENS_T_PROXY_STEP: step_start(pt, rec); break;
  case LENS_T_PROXY_CTRL:
    name_thread(pt, rec->context, "NCCL Progress r");
    pt->ctrl_id = rec->id;
    pt->ctrl_append = 0;
    pt->ctrl_appended = -1;
    break;
  case LENS_T_KERNEL_CH:
    name_thread(pt, rec->context, lens_kernel_ch_role == LENS_ROLE_PROFILER ? "NCCL Profiler r" : "NCCL Progress r");
    kernel_ch_start(pt, rec);
    break;
  default: break;
  }
}

void lens_nvtx_proxy_stop(uint64_t id) {
  struct proxy_state *pt = lens_nvtx_slot_state(proxy_states, sizeof(*pt), id, 0);
  if (!pt) return;
  if (LENS_ID_TYPE(id) == LENS_T_PROXY_STEP) {
    step_stop(pt, id);
    return;
  }
  if (LENS_ID_TYPE(id) == LENS_T_PROXY_CTRL) {
    if (id != pt->ctrl_id) return;
    period_end(&pt->sleep_range, &pt->sleeping); /* a Sleep episode is one event: Wakeup missing */
    if (pt->ctrl_append && pt->ctrl_appended == 0) period_end(&pt->active_range, &pt->active);
    pt->ctrl_id = 0;
    return;
  }
  struct op_slot *o = op_find(pt, id);
  if (o) op_end(pt, o);
  else if (LENS_ID_TYPE(id) == LENS_T_PROXY_OP) over_end(pt, id, 0);
}

void lens_nvtx_proxy_state(uint64_t id, uint32_t state, uint64_t arg, int has_args) {
  struct proxy_state *pt = lens_nvtx_slot_state(proxy_states, sizeof(*pt), id, 0);
  if (!pt) return;
  switch (state) {
  case 9:  /* ProxyStepSendWait: isend accepted, transSize = bytes of this step */
  case 11: /* ProxyStepRecvFlushWait: received, transSize = bytes */
    if (has_args && LENS_ID_TYPE(id) == LENS_T_PROXY_STEP) {
      struct step_slot *s = &pt->steps[LENS_ID_SEQ(id) % STEP_SLOTS];
      struct op_slot *o = s->id == id ? op_find(pt, s->op) : NULL;
      if (o) o->pl.bytes += arg;
    }
    break;
  case 13: period_end(&pt->active_range, &pt->active); break; /* ProxyCtrlIdle */
  case 14: period_start(&pt->active_range, &pt->active, LENS_NVTX_STR_ACTIVE); break;
  case 15: /* ProxyCtrlSleep: nothing active, nothing posted */
    period_end(&pt->active_range, &pt->active);
    for (int i = 0; i < LENS_NVTX_MAX_OPEN_OPS && pt->n_open_ops; i++) {
      if (!pt->ops[i].id) continue;
      op_end(pt, &pt->ops[i]);
      lens_nvtx_drop(&lens_nvtx_g.drops.proxy_ops_orphaned);
    }
    over_end(pt, 0, 1);
    period_start(&pt->sleep_range, &pt->sleeping, LENS_NVTX_STR_SLEEP);
    break;
  case 16: period_end(&pt->sleep_range, &pt->sleeping); break; /* ProxyCtrlWakeup */
  case 17: /* ProxyCtrlAppend */
    if (id == pt->ctrl_id) pt->ctrl_append = 1;
    break;
  case 18: /* ProxyCtrlAppendEnd: arg = appendedProxyOps */
    if (id == pt->ctrl_id && has_args) pt->ctrl_appended = (int)(int32_t)arg;
    break;
  case 22: /* KernelChStop: arg = pTimer at the GPU's end */
    if (has_args && LENS_ID_TYPE(id) == LENS_T_KERNEL_CH) kernel_ch_stop_state(pt, id, arg);
    break;
  default: break;
  }
}

/* The last finalize: NCCL has joined its proxy threads (spec: finalize runs
 * after ncclProxyDestroy), but a proxy can end in Active, or with ProxyOps
 * never stopped, and nothing would end those ranges: an NVTX tool would
 * show them open to the end of the process. End them here. Emitting is
 * already off (lens_nvtx_active = 0), so no hook races this walk on a live
 * proxy of this load. */
void lens_nvtx_proxy_close_all(void) {
  for (int s = 0; s < LENS_NVTX_MAX_SLOTS; s++) {
    struct proxy_state *pt = &proxy_states[s];
    period_end(&pt->active_range, &pt->active);
    period_end(&pt->sleep_range, &pt->sleeping);
    for (int i = 0; i < LENS_NVTX_MAX_OPEN_OPS; i++) {
      if (!pt->ops[i].id) continue;
      op_end(pt, &pt->ops[i]);
      lens_nvtx_drop(&lens_nvtx_g.drops.proxy_ops_orphaned);
    }
    over_end(pt, 0, 1);
  }
}
