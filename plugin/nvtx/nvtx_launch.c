/* KernelLaunch ranges and plan marks on the launching thread.
 *
 * NCCL's order on one thread (spec §2.3-2.4): GroupApi start, CollApi/P2pApi
 * (func, count, datatype) ..., KernelLaunch start, cuLaunchKernelEx,
 * KernelLaunch stop, then Group and Coll/P2p starts that carry algo, proto,
 * nChannels and seqNumber. So when we push the KernelLaunch range (which must
 * be a same-thread push/pop around the launch for Nsight's GPU projection) we
 * only know the API ops; algo/proto exist only after the pop.
 *
 * Design: the push names what is known - the plan's API ops for this
 * communicator (first few + count), total bytes, and a predicted seqNumber
 * from our per-(comm, func) counter - and carries a plan payload flagged
 * PREDICTED. Right after, each Coll/P2p start emits a mark in category
 * "Plan" with the actual algo, proto, channels and seqNumber (payload not
 * flagged). The push is never back-filled: NVTX cannot amend a closed range
 * and delaying the pop would break GPU projection. docs/nvtx.md explains. */
#include <string.h>

#include "nvtx_emit.h"
#include "nvtx_text.h"

#define API_SLOTS 8   /* API ops remembered per group (bounded); the rest only counted */
#define SEQ_SLOTS 16  /* (comm, func) seqNumber predictors per thread */

struct api_op {
  uint64_t context;
  const char *func;
  const char *datatype;
  uint64_t count;
  uint64_t bytes;
  int launched; /* already named by a KernelLaunch of this group */
};

struct seq_slot {
  uint64_t context;
  const char *func;
  uint64_t next;
};

struct launch_state {
  pthread_t owner; /* first: see lens_nvtx_slot_state */
  struct lens_dtype_cache dtypes;
  uint32_t n_ops; /* API ops since GroupApi start, including unremembered ones */
  struct api_op ops[API_SLOTS];
  struct seq_slot seq[SEQ_SLOTS];
  uint32_t seq_clock; /* round-robin replacement */
  int launched_since_group; /* a KernelLaunch ran since the API ops were collected */
  uint64_t stack[LENS_NVTX_MAX_LAUNCH_DEPTH];
  int depth;
  char msg[256];
};
static struct launch_state launch_states[LENS_NVTX_MAX_SLOTS];

static int func_eq(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }
static int is_p2p_func(const char *f) { return func_eq(f, "Send") || func_eq(f, "Recv"); }

static struct seq_slot *seq_slot(struct launch_state *lt, uint64_t context, const char *func) {
  for (int i = 0; i < SEQ_SLOTS; i++)
    if (lt->seq[i].func && lt->seq[i].context == context && func_eq(lt->seq[i].func, func)) return &lt->seq[i];
  struct seq_slot *s = &lt->seq[lt->seq_clock++ % SEQ_SLOTS];
  s->context = context;
  s->func = func;
  s->next = 0; /* NCCL counts from 0 per communicator and function */
  return s;
}

static const struct lens_comm_info *comm_of(uint64_t context) { return context ? lens_comm_lookup(context) : NULL; }

static void text_rank(struct lens_text *t, const struct lens_comm_info *c, int fallback_rank) {
  lens_text_str(t, " (r");
  if (c) {
    lens_text_i64(t, c->rank);
    lens_text_char(t, '/');
    lens_text_i64(t, c->nranks);
  } else {
    lens_text_i64(t, fallback_rank);
  }
  lens_text_char(t, ')');
}

void lens_nvtx_api_start(const struct lens_rec_start *rec) {
  struct launch_state *lt = lens_nvtx_slot_state(launch_states, sizeof(*lt), rec->id, 1);
  if (!lt) return;
  /* A new group starts at GroupApi; without GroupApi events (mask), the
   * first API op after a launch starts one: API ops of the next group always
   * follow the previous group's launches on this thread. */
  if (rec->h.type == LENS_T_GROUP_API || lt->launched_since_group) {
    lt->n_ops = 0;
    lt->launched_since_group = 0;
    if (rec->h.type == LENS_T_GROUP_API) return;
  }
  const char *func, *dtype;
  uint64_t count;
  if (rec->h.type == LENS_T_COLL_API) {
    const struct lens_p_coll_api *p = (const void *)(rec + 1);
    func = (const char *)(uintptr_t)p->func;
    dtype = (const char *)(uintptr_t)p->datatype;
    count = p->count;
  } else {
    const struct lens_p_p2p_api *p = (const void *)(rec + 1);
    func = (const char *)(uintptr_t)p->func;
    dtype = (const char *)(uintptr_t)p->datatype;
    count = p->count;
  }
  if (lt->n_ops < API_SLOTS) {
    struct api_op *o = &lt->ops[lt->n_ops];
    o->context = rec->context;
    o->func = func;
    o->datatype = dtype;
    o->count = count;
    o->bytes = count * lens_dtype_size(&lt->dtypes, dtype);
    o->launched = 0;
  } else {
    lens_nvtx_drop(&lens_nvtx_g.drops.api_ops_unnamed);
  }
  lt->n_ops++;
}

void lens_nvtx_launch_start(const struct lens_rec_start *rec) {
  struct launch_state *lt = lens_nvtx_slot_state(launch_states, sizeof(*lt), rec->id, 1);
  if (!lt) return;
  lt->launched_since_group = 1;
  if (lt->depth >= LENS_NVTX_MAX_LAUNCH_DEPTH) {
    lens_nvtx_drop(&lens_nvtx_g.drops.launch_too_deep);
    return;
  }
  const struct lens_comm_info *comm = comm_of(rec->context);
  struct lens_text t;
  lens_text_init(&t, lt->msg, sizeof(lt->msg));
  struct lens_nvtx_plan_payload pl = {0};
  pl.algo = pl.proto = "";
  pl.rank = comm ? comm->rank : -1;
  pl.comm_id = comm ? comm->comm_id : 0;
  pl.ext_corr_id = ((const struct lens_p_kernel_launch *)(rec + 1))->ext_corr_id;
  pl.peer = -1;
  pl.flags = LENS_NVTX_PLAN_F_PREDICTED;

  /* This plan's ops: those of the launch's communicator not named yet. With
   * several communicators in one group, each has its own plan and launch. */
  uint32_t remembered = lt->n_ops < API_SLOTS ? lt->n_ops : API_SLOTS;
  uint32_t named = 0;
  for (uint32_t i = 0; i < remembered; i++) {
    struct api_op *o = &lt->ops[i];
    if (o->launched || o->context != rec->context) continue;
    o->launched = 1;
    uint64_t seq = 0;
    int has_seq = !is_p2p_func(o->func);
    if (has_seq) seq = seq_slot(lt, o->context, o->func)->next++;
    if (pl.n_ops == 0) {
      pl.func = o->func;
      pl.datatype = o->datatype;
      pl.seq = seq;
    }
    pl.n_ops++;
    pl.bytes += o->bytes;
    pl.count += o->count;
    if (named < LENS_NVTX_MAX_API_OPS) {
      if (named) lens_text_str(&t, ", ");
      lens_text_str(&t, o->func);
      lens_text_char(&t, ' ');
      lens_text_bytes(&t, o->bytes);
      lens_text_char(&t, ' ');
      lens_text_str(&t, lens_dtype_short(&lt->dtypes, o->datatype));
      if (has_seq) {
        lens_text_str(&t, " #");
        lens_text_u64(&t, seq);
      }
      named++;
    }
  }
  uint32_t unremembered = lt->n_ops > API_SLOTS ? lt->n_ops - API_SLOTS : 0;
  if (pl.n_ops == 0) {
    lens_text_str(&t, "NCCL kernel");
  } else if (pl.n_ops > named) {
    lens_text_str(&t, ", +");
    lens_text_u64(&t, pl.n_ops - named);
    lens_text_str(&t, " more");
  }
  if (unremembered) { /* ops past our bound: their communicator is unknown, say so */
    lens_text_str(&t, " [+");
    lens_text_u64(&t, unremembered);
    lens_text_str(&t, " group ops]");
  }
  if (pl.n_ops > 1) {
    lens_text_str(&t, "; ");
    lens_text_u64(&t, pl.n_ops);
    lens_text_str(&t, " ops ");
    lens_text_bytes(&t, pl.bytes);
  }
  text_rank(&t, comm, rec->rank);
  if (!pl.func) pl.func = "";
  if (!pl.datatype) pl.datatype = "";

  nvtxEventAttributes_t a = lens_nvtx_attr(LENS_NVTX_CAT_LAUNCH, lt->msg);
  nvtxPayloadData_t pd = {LENS_NVTX_SID_PLAN, sizeof(pl), &pl};
  if (lens_nvtx_g.payload_ok) {
    a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    a.payload.ullValue = (uint64_t)(uintptr_t)&pd;
    a.reserved0 = 1;
  }
  nvtxDomainRangePushEx(lens_nvtx_g.domain, &a);
  lt->stack[lt->depth++] = rec->id;
}

void lens_nvtx_launch_stop(uint64_t id) {
  struct launch_state *lt = lens_nvtx_slot_state(launch_states, sizeof(*lt), id, 0);
  if (!lt) return;
  /* Pop only what we pushed; a stop for a launch we did not push (too deep,
   * or started before NVTX was active) leaves the stack alone. */
  for (int i = lt->depth - 1; i >= 0; i--) {
    if (lt->stack[i] != id) continue;
    while (lt->depth > i) { /* an inner launch never stopped: close it too, keep the stack balanced */
      nvtxDomainRangePop(lens_nvtx_g.domain);
      lt->depth--;
    }
    return;
  }
}

void lens_nvtx_task_start(const struct lens_rec_start *rec) {
  struct launch_state *lt = lens_nvtx_slot_state(launch_states, sizeof(*lt), rec->id, 1);
  if (!lt) return;
  struct lens_nvtx_plan_payload pl = {0};
  const struct lens_comm_info *comm = comm_of(rec->context);
  pl.rank = comm ? comm->rank : rec->rank;
  pl.comm_id = comm ? comm->comm_id : 0;
  pl.n_ops = 1;
  struct lens_text t;
  lens_text_init(&t, lt->msg, sizeof(lt->msg));
  if (rec->h.type == LENS_T_COLL) {
    const struct lens_p_coll *p = (const void *)(rec + 1);
    pl.func = (const char *)(uintptr_t)p->func;
    pl.algo = (const char *)(uintptr_t)p->algo;
    pl.proto = (const char *)(uintptr_t)p->proto;
    pl.datatype = (const char *)(uintptr_t)p->datatype;
    pl.count = p->count;
    pl.bytes = p->count * lens_dtype_size(&lt->dtypes, pl.datatype);
    pl.seq = p->seq;
    pl.peer = -1;
    pl.n_channels = p->n_channels;
    seq_slot(lt, rec->context, pl.func)->next = p->seq + 1; /* resync the predictor with the truth */
    lens_text_str(&t, pl.func);
    lens_text_char(&t, ' ');
    lens_text_str(&t, pl.algo);
    lens_text_char(&t, '/');
    lens_text_str(&t, pl.proto);
    lens_text_char(&t, ' ');
    lens_text_bytes(&t, pl.bytes);
    lens_text_char(&t, ' ');
    lens_text_str(&t, lens_dtype_short(&lt->dtypes, pl.datatype));
    lens_text_str(&t, " ch");
    lens_text_u64(&t, pl.n_channels);
    lens_text_str(&t, " seq ");
    lens_text_u64(&t, pl.seq);
  } else {
    const struct lens_p_p2p *p = (const void *)(rec + 1);
    pl.func = (const char *)(uintptr_t)p->func;
    pl.algo = pl.proto = "";
    pl.datatype = (const char *)(uintptr_t)p->datatype;
    pl.count = p->count;
    pl.bytes = p->count * lens_dtype_size(&lt->dtypes, pl.datatype);
    pl.peer = p->peer;
    pl.n_channels = p->n_channels;
    pl.flags = LENS_NVTX_PLAN_F_P2P;
    lens_text_str(&t, pl.func);
    lens_text_char(&t, ' ');
    lens_text_bytes(&t, pl.bytes);
    lens_text_char(&t, ' ');
    lens_text_str(&t, lens_dtype_short(&lt->dtypes, pl.datatype));
    lens_text_str(&t, " peer ");
    lens_text_i64(&t, pl.peer);
    lens_text_str(&t, " ch");
    lens_text_u64(&t, pl.n_channels);
  }
  if (!pl.func) pl.func = "";
  if (!pl.algo) pl.algo = "";
  if (!pl.proto) pl.proto = "";
  if (!pl.datatype) pl.datatype = "";
  text_rank(&t, comm, rec->rank);
  nvtxEventAttributes_t a = lens_nvtx_attr(LENS_NVTX_CAT_PLAN, lt->msg);
  nvtxPayloadData_t pd = {LENS_NVTX_SID_PLAN, sizeof(pl), &pl};
  if (lens_nvtx_g.payload_ok) {
    a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    a.payload.ullValue = (uint64_t)(uintptr_t)&pd;
    a.reserved0 = 1;
  }
  nvtxDomainMarkEx(lens_nvtx_g.domain, &a);
}
