/* Pass B: event records of EVENTS chunks. STARTs become events at once;
 * STOPs and STATEs wait until the whole file is read (their START may sit in
 * a later chunk of another thread) and are then applied in file order. */
#include <stdlib.h>
#include <string.h>

#include "oneway.h"
#include "reader_priv.h"

static const char *str(struct lens_builder *b, uint32_t session, lens_str_t id) {
  int64_t v;
  if (!id || !lens_hash_get(&b->strings, lens_hash_scope((uint32_t)b->file, session), id, &v)) return NULL;
  return (const char *)(intptr_t)v;
}

/* Zero-extended copy of a payload: a short record (older writer) reads as zeros. */
#define LOAD(var, pp, avail)                        \
  do {                                              \
    memset(&(var), 0, sizeof(var));                 \
    memcpy(&(var), pp, avail < sizeof(var) ? avail : sizeof(var)); \
  } while (0)

static void parse_payload(struct lens_builder *b, uint32_t se, int type, const uint8_t *pp, size_t avail,
                          struct lens_payload *o) {
  memset(o, 0, sizeof *o);
  switch (type) {
  case LENS_T_GROUP_API: {
    struct lens_p_group_api r;
    LOAD(r, pp, avail);
    o->group_api.graph_captured = (int)r.graph_captured;
    o->group_api.group_depth = r.group_depth;
    break;
  }
  case LENS_T_COLL_API: {
    struct lens_p_coll_api r;
    LOAD(r, pp, avail);
    o->coll_api.func = str(b, se, r.func);
    o->coll_api.datatype = str(b, se, r.datatype);
    o->coll_api.count = r.count;
    o->coll_api.stream = r.stream;
    o->coll_api.root = r.root;
    o->coll_api.graph_captured = (int)r.graph_captured;
    o->coll_api.user_tag = r.user_tag;
    break;
  }
  case LENS_T_P2P_API: {
    struct lens_p_p2p_api r;
    LOAD(r, pp, avail);
    o->p2p_api.func = str(b, se, r.func);
    o->p2p_api.datatype = str(b, se, r.datatype);
    o->p2p_api.count = r.count;
    o->p2p_api.stream = r.stream;
    o->p2p_api.graph_captured = (int)r.graph_captured;
    o->p2p_api.user_tag = r.user_tag;
    break;
  }
  case LENS_T_KERNEL_LAUNCH: {
    struct lens_p_kernel_launch r;
    LOAD(r, pp, avail);
    o->kernel_launch.stream = r.stream;
    o->kernel_launch.ext_corr_id = r.ext_corr_id;
    break;
  }
  case LENS_T_GROUP: {
    struct lens_p_group r;
    LOAD(r, pp, avail);
    o->group.launch_id = r.launch_id;
    break;
  }
  case LENS_T_COLL: {
    struct lens_p_coll r;
    LOAD(r, pp, avail);
    o->coll.seq = r.seq;
    o->coll.func = str(b, se, r.func);
    o->coll.send_buff = r.send_buff;
    o->coll.recv_buff = r.recv_buff;
    o->coll.count = r.count;
    o->coll.datatype = str(b, se, r.datatype);
    o->coll.algo = str(b, se, r.algo);
    o->coll.proto = str(b, se, r.proto);
    o->coll.parent_group = r.parent_group;
    o->coll.launch_id = r.launch_id;
    o->coll.root = r.root;
    o->coll.n_channels = r.n_channels;
    o->coll.n_warps = r.n_warps;
    o->coll.is_sym_coll = r.is_sym_coll;
    o->coll.user_tag = r.user_tag;
    o->coll.kernel_variant = str(b, se, r.kernel_variant);
    break;
  }
  case LENS_T_P2P: {
    struct lens_p_p2p r;
    LOAD(r, pp, avail);
    o->p2p.func = str(b, se, r.func);
    o->p2p.buff = r.buff;
    o->p2p.datatype = str(b, se, r.datatype);
    o->p2p.count = r.count;
    o->p2p.parent_group = r.parent_group;
    o->p2p.launch_id = r.launch_id;
    o->p2p.peer = r.peer;
    o->p2p.n_channels = r.n_channels;
    o->p2p.user_tag = r.user_tag;
    break;
  }
  case LENS_T_PROXY_OP: {
    struct lens_p_proxy_op r;
    LOAD(r, pp, avail);
    o->proxy_op.pid = r.pid;
    o->proxy_op.peer = r.peer;
    o->proxy_op.n_steps = r.n_steps;
    o->proxy_op.chunk_size = r.chunk_size;
    o->proxy_op.is_send = r.is_send;
    o->proxy_op.channel = r.channel;
    break;
  }
  case LENS_T_PROXY_STEP: {
    struct lens_p_proxy_step r;
    LOAD(r, pp, avail);
    o->proxy_step.step = r.step;
    break;
  }
  case LENS_T_KERNEL_CH: {
    struct lens_p_kernel_ch r;
    LOAD(r, pp, avail);
    o->kernel_ch.start_gpu_ns = r.start_gpu_ns;
    o->kernel_ch.channel = r.channel;
    break;
  }
  case LENS_T_KERNEL_PHASE: {
    struct lens_p_kernel_phase r;
    LOAD(r, pp, avail);
    o->kernel_phase.start_gpu_ns = r.start_gpu_ns;
    o->kernel_phase.name = str(b, se, r.name);
    o->kernel_phase.channel = r.channel;
    o->kernel_phase.phase_id = r.phase_id;
    break;
  }
  case LENS_T_NET_PLUGIN: {
    struct lens_p_net_plugin r;
    LOAD(r, pp, avail);
    o->net_plugin.plugin_id = r.plugin_id;
    o->net_plugin.data = r.data;
    o->net_plugin.payload_len = r.payload_len > sizeof r.payload ? (uint32_t)sizeof r.payload : r.payload_len;
    memcpy(o->net_plugin.payload, r.payload, sizeof r.payload);
    break;
  }
  case LENS_T_CE_COLL: {
    struct lens_p_ce_coll r;
    LOAD(r, pp, avail);
    o->ce_coll.seq = r.seq;
    o->ce_coll.func = str(b, se, r.func);
    o->ce_coll.send_buff = r.send_buff;
    o->ce_coll.recv_buff = r.recv_buff;
    o->ce_coll.count = r.count;
    o->ce_coll.datatype = str(b, se, r.datatype);
    o->ce_coll.sync_strategy = str(b, se, r.sync_strategy);
    o->ce_coll.stream = r.stream;
    o->ce_coll.root = r.root;
    o->ce_coll.intra_batch_sync = (int)r.intra_batch_sync;
    o->ce_coll.batch_size = r.batch_size;
    o->ce_coll.num_batches = r.num_batches;
    o->ce_coll.ce_seq_num = r.ce_seq_num;
    o->ce_coll.user_tag = r.user_tag;
    break;
  }
  case LENS_T_CE_SYNC: {
    struct lens_p_ce_sync r;
    LOAD(r, pp, avail);
    o->ce_sync.is_complete = (int)r.is_complete;
    o->ce_sync.n_ranks = r.n_ranks;
    break;
  }
  case LENS_T_CE_BATCH: {
    struct lens_p_ce_batch r;
    LOAD(r, pp, avail);
    o->ce_batch.total_bytes = r.total_bytes;
    o->ce_batch.num_ops = r.num_ops;
    o->ce_batch.use_intra_sync = r.use_intra_sync;
    break;
  }
  default: break;
  }
}

/* The slot's owner when this EVENTS chunk was written: the entry whose
 * THREAD chunk came last before it (the earliest entry if none did). */
static int32_t thread_of(struct lens_builder *b, uint32_t session, uint32_t slot) {
  int64_t idx;
  if (lens_hash_get(&b->threads, lens_hash_scope((uint32_t)b->proc, session), slot, &idx)) {
    int32_t t = (int32_t)idx;
    while (b->thread_tmp[t].from_chunk > b->chunk && b->thread_tmp[t].prev >= 0) t = b->thread_tmp[t].prev;
    return t;
  }
  /* No THREAD chunk survived for it: a placeholder keeps its events together. */
  return lens_builder_new_thread(b, session, slot, -1);
}

/* The LENS_EVF_* bits a START gives its event (a folded step's as well). */
static uint32_t start_flags(const struct lens_rec_start *s) {
  uint32_t f = 0;
  if ((s->h.aux & LENS_START_F_REMOTE) || (s->id & LENS_ID_REMOTE)) f |= LENS_EVF_REMOTE;
  if (s->h.aux & LENS_START_F_NULL_CONTEXT) f |= LENS_EVF_NULL_CONTEXT;
  if (s->h.aux & LENS_START_F_BAD_CONTEXT) f |= LENS_EVF_BAD_CONTEXT;
  if (s->h.aux & LENS_START_F_DROPPED_BEFORE) f |= LENS_EVF_DROPPED_NEAR;
  return f;
}

/* A folded step's thread: its steps, the earliest start, the latest time
 * any reached (what a step event's start, stop and states tell the hang
 * diagnosis of its thread's last record). */
static void fstep_reached(struct lens_builder *b, struct lens_fstep *f, uint64_t ts) {
  struct lens_model *m = b->m;
  if (ts > f->last) f->last = ts;
  /* LENS_LOAD_FOLD_LATER: the thread's, once it is known which steps count (lens_model_fold) */
  if ((b->flags & LENS_LOAD_FOLD_LATER) || f->thread < 0 || (size_t)f->thread >= m->n_threads) return;
  struct lens_thread *th = &m->threads[f->thread];
  if (ts > th->folded_last_ns) th->folded_last_ns = ts;
}

/* decided: the window's hook already said to build it (lens_build_packed_chunk). */
static int on_start(struct lens_builder *b, uint32_t session, int32_t thread, const uint8_t *r, size_t size,
                    int decided) {
  struct lens_rec_start s;
  memcpy(&s, r, sizeof s);
  if (s.h.type >= LENS_T_COUNT) {
    b->m->bad_records++;
    return 0;
  }
  struct lens_model *m = b->m;
  if (b->win_mode && !decided) { /* a scan of a windowed load, or a START its window leaves out */
    int w = lens_win_start(b, session, thread, &s, r + sizeof s, size - sizeof s);
    if (w <= 0) return w;
  }
  if (s.h.type == LENS_T_PROXY_STEP && (b->flags & LENS_LOAD_FOLD_STEPS)) {
    struct lens_fstep *f = LENS_VEC_PUSH(b, b->fsteps, b->n_fsteps, cap_fsteps);
    if (!f) return lens_builder_oom(b);
    struct lens_p_proxy_step ps;
    size_t avail = size - sizeof s;
    LOAD(ps, r + sizeof s, avail);
    *f = (struct lens_fstep){.parent_raw = s.parent, .proc = b->proc, .session = session, .ev = -1, .start = s.ts,
                             .thread = thread, .step = ps.step, .flags = start_flags(&s), .run = -1,
                             .comm = -1};
    if (b->flags & LENS_LOAD_STEP_FACTS) { /* one more per fstep: pushed at the same index */
      size_t n = b->n_fsteps - 1;
      struct lens_fstep_more *x = LENS_VEC_PUSH(b, b->fmore, n, cap_fmore);
      if (!x) return lens_builder_oom(b);
      *x = (struct lens_fstep_more){.events_before = (uint32_t)m->n_events};
    }
    if (!(f->flags & LENS_EVF_REMOTE)) { /* as an event's */
      int64_t c;
      if (lens_hash_get(&b->comms, lens_hash_scope((uint32_t)b->proc, session), s.context, &c)) f->comm = (int32_t)c;
    }
    fstep_reached(b, f, s.ts);
    if (ps.step == LENS_ONEWAY_STEP && b->n_fevs < INT32_MAX) {
      struct lens_fev *v = LENS_VEC_PUSH(b, b->fevs, b->n_fevs, cap_fevs);
      if (!v) return lens_builder_oom(b);
      *v = (struct lens_fev){0, 0};
      lens_oneway_note(&v->pre, &v->post, LENS_ONEWAY_STEP_START, s.ts, s.ts);
      f->ev = (int32_t)(b->n_fevs - 1);
    }
    struct lens_idq *q = LENS_VEC_PUSH(b, b->idq, b->n_idq, cap_idq);
    if (!q) return lens_builder_oom(b);
    *q = (struct lens_idq){.id = s.id, .value = LENS_STEP_VALUE(b->n_fsteps - 1), .session = session};
    return 0;
  }
  struct lens_event *e = LENS_VEC_PUSH(b, m->events, m->n_events, cap_events);
  if (!e) return lens_builder_oom(b);
  memset(e, 0, sizeof *e);
  e->id = s.id;
  e->parent_raw = s.parent;
  e->context = s.context;
  e->start_mono_ns = s.ts;
  e->type = s.h.type;
  e->rank = s.rank;
  e->proc = b->proc;
  e->thread = thread;
  e->comm = -1;
  e->parent = e->first_child = e->next_sibling = -1;
  e->session = session;
  e->acc.sched_sample = -1;
  e->acc.cupti_kernel = -1;
  e->flags = start_flags(&s);
  parse_payload(b, session, e->type, r + sizeof s, size - sizeof s, &e->p);
  if (!(e->flags & LENS_EVF_REMOTE)) {
    int64_t c;
    if (lens_hash_get(&b->comms, lens_hash_scope((uint32_t)b->proc, session), s.context, &c)) e->comm = (int32_t)c;
  }
  struct lens_idq *q = LENS_VEC_PUSH(b, b->idq, b->n_idq, cap_idq);
  if (!q) return lens_builder_oom(b);
  *q = (struct lens_idq){.id = s.id, .value = (int64_t)(m->n_events - 1), .session = session};
  return 0;
}

int lens_enter_ids(struct lens_builder *b) {
  struct lens_idseq *t = &b->priv->events[b->proc];
  for (size_t i = 0; i < b->n_idq; i++) /* a repeated id (should not happen) maps to its latest START */
    if (lens_idseq_put(t, b->idq[i].session, b->idq[i].id, b->idq[i].value)) return lens_builder_oom(b);
  b->n_idq = 0;
  return 0;
}

/* One fixed record of an EVENTS chunk (its size checked: at least a
 * header, a multiple of 8, within the chunk). 0, or -1 (out of memory). */
static inline int read_record(struct lens_builder *b, uint32_t session, int32_t thread, const uint8_t *r,
                              uint32_t size, int decided) {
  struct lens_rec_hdr rh;
  memcpy(&rh, r, sizeof rh);
  if (rh.kind == LENS_REC_START && size >= sizeof(struct lens_rec_start)) {
    if (on_start(b, session, thread, r, size, decided)) return -1;
  } else if (rh.kind == LENS_REC_STOP && size >= sizeof(struct lens_rec_stop)) {
    struct lens_rec_stop s;
    memcpy(&s, r, sizeof s);
    int w = b->win_mode && !decided ? lens_win_pend(b, session, LENS_REC_STOP, s.id, s.ts, 0, 0, 0) : 1;
    if (w <= 0) return w;
    struct lens_pending *q = LENS_VEC_PUSH(b, b->pend, b->n_pend, cap_pend);
    if (!q) return lens_builder_oom(b);
    *q = (struct lens_pending){.id = s.id, .ts = s.ts, .session = session, .kind = LENS_REC_STOP};
  } else if (rh.kind == LENS_REC_STATE && size >= sizeof(struct lens_rec_state)) {
    struct lens_rec_state_run s = {0};
    memcpy(&s, r, size >= sizeof s ? sizeof s : sizeof s.s);
    int w = b->win_mode && !decided
                ? lens_win_pend(b, session, LENS_REC_STATE, s.s.id, s.s.ts, s.s.h.aux, s.s.arg, s.s.has_args)
                : 1;
    if (w <= 0) return w;
    struct lens_pending *q = LENS_VEC_PUSH(b, b->pend, b->n_pend, cap_pend);
    if (!q) return lens_builder_oom(b);
    *q = (struct lens_pending){.id = s.s.id, .ts = s.s.ts, .arg = s.s.arg, .session = session,
                               .state = s.s.h.aux, .has_args = s.s.has_args, .kind = LENS_REC_STATE,
                               .last_ts = s.last_ts, .repeats = s.repeats, .max_gap_ns = s.max_gap_ns};
  } else {
    b->m->bad_records++;
  }
  return 0;
}

int lens_read_record(struct lens_builder *b, uint32_t session, int32_t thread, const uint8_t *r, uint32_t size) {
  return read_record(b, session, thread, r, size, 0);
}

int lens_build_record(struct lens_builder *b, uint32_t session, int32_t thread, const uint8_t *r, uint32_t size) {
  return read_record(b, session, thread, r, size, 1);
}

int32_t lens_chunk_thread(struct lens_builder *b, uint32_t session, uint32_t slot) {
  return thread_of(b, session, slot);
}

int lens_read_events_chunk(struct lens_builder *b, const struct lens_chunk_hdr *hp, const uint8_t *p,
                           uint32_t len) {
  struct lens_chunk_hdr h;
  memcpy(&h, hp, sizeof h);
  struct lens_events_hdr eh;
  if (len < sizeof eh) {
    b->m->bad_records++;
    return 0;
  }
  memcpy(&eh, p, sizeof eh);
  int32_t thread = thread_of(b, h.session, eh.slot);
  if (thread < 0) return lens_builder_oom(b);
  size_t off = sizeof eh;
  for (uint32_t i = 0; i < eh.count; i++) {
    struct lens_rec_hdr rh;
    if (len - off < sizeof rh) {
      b->m->bad_records += eh.count - i;
      break;
    }
    memcpy(&rh, p + off, sizeof rh);
    if (rh.size < sizeof rh || (rh.size & 7) || rh.size > len - off) {
      b->m->bad_records += eh.count - i; /* cannot find the next record */
      break;
    }
    const uint8_t *r = p + off;
    off += rh.size;
    if (read_record(b, h.session, thread, r, rh.size, 0)) return -1;
  }
  return 0;
}

/* A run record (lens_rec_state_run) adds its repeats to the STATE it
 * repeats: the event's previous one, which the writer put in the same
 * chunk, so it is near the end of the list. 1 when folded. */
#define LENS_RUN_LOOKBACK 65536
static int fold_run(struct lens_builder *b, int32_t ev, const struct lens_pending *q) {
  size_t stop = b->n_states > LENS_RUN_LOOKBACK ? b->n_states - LENS_RUN_LOOKBACK : 0;
  for (size_t i = b->n_states; i-- > stop;) {
    struct lens_state_tmp *t = &b->states[i];
    if (t->event != ev) continue;
    if (t->s.state != q->state || t->s.arg != q->arg || t->s.has_args != q->has_args) return 0;
    t->s.count = t->s.count + q->repeats < t->s.count ? UINT32_MAX : t->s.count + q->repeats;
    if (q->last_ts > t->s.last_mono_ns) t->s.last_mono_ns = q->last_ts;
    if (q->max_gap_ns > t->s.max_gap_ns) t->s.max_gap_ns = q->max_gap_ns;
    return 1;
  }
  return 0; /* its first record was not read (dropped or cut): the run stands alone */
}

/* A STATE record on a folded step: what its event's states would say to
 * the summary (bytes), the hang diagnosis (its last state run, while it has
 * not stopped) and its thread's last record, kept as apply_one and fold_run
 * would keep the entries (fold_run's look-back bound aside: a run whose
 * first record lies further back than it merges here, not there, which
 * changes nothing read from them but a count past UINT32_MAX). 0, or -1
 * (out of memory). */
static int fstep_state(struct lens_builder *b, struct lens_fstep *f, const struct lens_pending *q) {
  uint64_t last = q->repeats ? q->last_ts : q->ts;
  fstep_reached(b, f, q->ts);
  fstep_reached(b, f, last);
  if (q->has_args && (q->state == 9 || q->state == 11)) f->bytes = q->arg; /* the transSize NCCL reported */
  if (f->stop) return 0; /* stopped: nobody's wait */
  struct lens_frun *u = f->run >= 0 ? &b->fruns[f->run] : NULL;
  if (u && q->repeats && u->state == q->state && u->arg == q->arg && u->has_args == q->has_args) { /* fold_run */
    u->count = u->count + q->repeats < u->count ? UINT32_MAX : u->count + q->repeats;
    if (q->last_ts > u->last) u->last = q->last_ts;
    return 0;
  }
  if (!u) {
    if (b->frun_free) {
      f->run = (int32_t)(b->frun_free - 1);
      b->frun_free = b->fruns[f->run].next_free;
    } else {
      struct lens_frun *fresh = b->n_fruns < INT32_MAX ? LENS_VEC_PUSH(b, b->fruns, b->n_fruns, cap_fruns) : NULL;
      if (!fresh) return lens_builder_oom(b);
      f->run = (int32_t)(b->n_fruns - 1);
    }
    u = &b->fruns[f->run];
    u->since = q->ts, u->before = 0;
  } else if (u->state == q->state) { /* a new entry of the same state: the run goes on */
    u->before += u->count ? u->count : 1;
  } else {
    u->since = q->ts, u->before = 0;
  }
  u->state = q->state, u->arg = q->arg, u->has_args = q->has_args;
  u->count = q->repeats ? q->repeats : 1;
  u->ts = q->ts, u->last = last;
  return 0;
}

/* One STOP or STATE record on the event (or folded step) idx of the id table. 0, or -1 (out of memory). */
static int apply_one(struct lens_builder *b, const struct lens_pending *q, int64_t idx) {
  struct lens_model *m = b->m;
  if (idx < 0) { /* a folded ProxyStep: its first stop, its phases' boundaries and its one-way evidence are kept */
    struct lens_fstep *f = &b->fsteps[LENS_STEP_INDEX(idx)];
    struct lens_fev *v = f->ev >= 0 ? &b->fevs[f->ev] : NULL;
    if (q->kind == LENS_REC_STOP && (f->flags & LENS_EVF_STOPPED_PRIV)) {
      f->flags |= LENS_EVF_DUP_STOP;
    } else if (q->kind == LENS_REC_STOP) {
      f->flags |= LENS_EVF_STOPPED_PRIV, f->stop = q->ts;
      fstep_reached(b, f, q->ts);
      if (f->run >= 0 && f->stop) { /* its state entries go back to the free list */
        b->fruns[f->run].next_free = b->frun_free;
        b->frun_free = (uint32_t)f->run + 1;
        f->run = -1;
      }
      if (v) lens_oneway_note(&v->pre, &v->post, LENS_ONEWAY_STEP_STOP, q->ts, q->ts);
    } else {
      /* the earliest record of 9 and of 11 (ties: the first read), as the
       * bounds keep their times: the network view's bytes of a step */
      int k = q->state == 9 ? 1 : q->state == 11 ? 2 : -1;
      struct lens_fstep_more *x = b->fmore ? &b->fmore[LENS_STEP_INDEX(idx)] : NULL;
      if (x && k > 0 && (!(f->bounds.have >> k & 1u) || q->ts < f->bounds.ts[k])) {
        uint32_t bit = k == 1 ? 1u : 2u;
        *(k == 1 ? &x->arg9 : &x->arg11) = q->arg;
        x->arg_have = q->has_args ? x->arg_have | bit : x->arg_have & ~bit;
      }
      lens_step_bounds_note(&f->bounds, q->state, q->ts);
      if (v) lens_oneway_note(&v->pre, &v->post, q->state, q->ts, q->repeats ? q->last_ts : q->ts);
      return fstep_state(b, f, q);
    }
    return 0;
  }
  struct lens_event *e = &m->events[idx];
  if (q->kind == LENS_REC_STOP) {
    if (e->flags & LENS_EVF_STOPPED_PRIV) {
      e->flags |= LENS_EVF_DUP_STOP;
      return 0;
    }
    e->flags |= LENS_EVF_STOPPED_PRIV;
    e->stop_mono_ns = q->ts;
    return 0;
  }
  if (q->repeats && fold_run(b, (int32_t)idx, q)) return 0;
  struct lens_state_tmp *t = LENS_VEC_PUSH(b, b->states, b->n_states, cap_states);
  if (!t) return lens_builder_oom(b);
  t->event = (int32_t)idx;
  t->s = (struct lens_state_ev){.ts_mono_ns = q->ts, .arg = q->arg, .state = q->state, .has_args = q->has_args,
                                .last_mono_ns = q->repeats ? q->last_ts : q->ts, .count = q->repeats ? q->repeats : 1,
                                .max_gap_ns = q->repeats ? q->max_gap_ns : 0};
  if (e->type == LENS_T_KERNEL_CH)
    e->p.kernel_ch.stop_gpu_ns = lens_gpu_stop_timer(e->type, q->state, q->has_args, q->arg, e->p.kernel_ch.stop_gpu_ns);
  if (e->type == LENS_T_KERNEL_PHASE)
    e->p.kernel_phase.stop_gpu_ns =
        lens_gpu_stop_timer(e->type, q->state, q->has_args, q->arg, e->p.kernel_phase.stop_gpu_ns);
  return 0;
}

/* The records of a chunk are applied once the chunk is read, not queued
 * for the whole file: the queue of a file was 56 bytes a record, 2.5
 * records an event on real traces, and the peak of the load (issue 23).
 * The result is the one of applying every record in file order after the
 * file's STARTs: a record whose START is not read yet waits in the carry
 * (applied at the end of the file, in order), and so does every later
 * record of its id (the carried set), so an event's records still come in
 * file order. Only ids started twice in a file (which a writer never does)
 * may differ: records between the two STARTs go to the first. */
int lens_apply_chunk(struct lens_builder *b) {
  if (b->proc < 0) { /* probe files read no records */
    b->n_pend = 0;
    return 0;
  }
  if (lens_enter_ids(b)) return -1;
  struct lens_idseq *t = &b->priv->events[b->proc];
  for (size_t i = 0; i < b->n_pend; i++) {
    const struct lens_pending *q = &b->pend[i];
    int64_t idx, dummy;
    if (lens_idseq_get(t, q->session, q->id, &idx) &&
        !(b->carried.puts && lens_idseq_get(&b->carried, q->session, q->id, &dummy))) {
      if (apply_one(b, q, idx)) return -1;
      continue;
    }
    struct lens_pending *c = LENS_VEC_PUSH(b, b->carry, b->n_carry, cap_carry);
    if (!c || lens_idseq_put(&b->carried, q->session, q->id, 1)) return lens_builder_oom(b);
    *c = *q;
  }
  b->n_pend = 0;
  return 0;
}

int lens_apply_pending(struct lens_builder *b) {
  struct lens_model *m = b->m;
  if (lens_apply_chunk(b)) return -1; /* records read since the last chunk's end, if any */
  struct lens_idseq *t = b->n_carry ? &b->priv->events[b->proc] : NULL;
  for (size_t i = 0; i < b->n_carry; i++) {
    const struct lens_pending *q = &b->carry[i];
    int64_t idx;
    if (!lens_idseq_get(t, q->session, q->id, &idx)) {
      if (q->id) m->orphan_stops++; /* a NULL handle (NetPlugin) is not an orphan */
      continue;
    }
    if (apply_one(b, q, idx)) return -1;
  }
  b->n_carry = 0;
  lens_idseq_free(&b->carried);
  for (size_t s = 0; s < b->n_sess && b->proc >= 0; s++) {
    struct lens_proc_session *ps = LENS_VEC_PUSH(b, b->priv->sessions, b->priv->n_sessions, priv->cap_sessions);
    if (!ps) return lens_builder_oom(b);
    ps->proc = b->proc;
    ps->session = b->sess[s].number;
  }
  /* DROPS: each session's latest cumulative counters, summed over sessions. */
  if (b->proc >= 0) {
    struct lens_drops *d = &m->procs[b->proc].drops;
    for (size_t s = 0; s < b->n_sess; s++) {
      if (!b->sess[s].has_drops) continue;
      const struct lens_drops *x = &b->sess[s].drops;
      if (x->at_mono_ns > d->at_mono_ns) d->at_mono_ns = x->at_mono_ns;
      d->ring_full += x->ring_full;
      d->no_thread_slot += x->no_thread_slot;
      d->null_handle += x->null_handle;
      d->bad_handle += x->bad_handle;
      d->write_errors += x->write_errors;
      d->cupti_records += x->cupti_records;
      d->blob_queue_full += x->blob_queue_full;
      d->recorder_evicted += x->recorder_evicted;
    }
  }
  return 0;
}
