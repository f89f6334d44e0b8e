/* See synth.h. */
#include "synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_activity.h>
#include <cupti_driver_cbid.h>

void synth_default(struct synth_opts *o) {
  memset(o, 0, sizeof(*o));
  o->launches = 3000;
  o->channels = 4;
  o->gpu_offset_ns = 1700000000000000000ll - 5000000000000ll; /* epoch-like pTimers, ~1.7e18 */
  o->drift_ppm = 23.7;
  o->host_start_ns = 5000000000000ll; /* 5000 s of uptime */
  o->min_lag_ns = 3000;
  o->with_cupti = 1;
  o->seed = 42;
}

uint64_t synth_gpu_of_host(const struct synth_opts *o, int64_t host) {
  long double g = (long double)o->gpu_offset_ns + host + (long double)host * o->drift_ppm * 1e-6L;
  return (uint64_t)llroundl(g);
}

int64_t synth_host_of_gpu(const struct synth_opts *o, uint64_t gpu) {
  long double h = ((long double)gpu - o->gpu_offset_ns) / (1.0L + o->drift_ppm * 1e-6L);
  return (int64_t)llroundl(h);
}

static unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (*s >> 8) & 0xFFFFFF;
}
static int64_t uni(unsigned *s, int64_t lo, int64_t hi) { return lo + (int64_t)(rnd(s) % (unsigned)(hi - lo + 1)); }
static int64_t expo(unsigned *s, double mean) {
  double u = (rnd(s) + 1.0) / 16777217.0;
  double v = -log(u) * mean;
  return v > 400000 ? 400000 : (int64_t)v;
}

struct builder {
  struct synth *s;
  size_t cap_ev, cap_st, cap_b;
  uint64_t seq[2];
  uint32_t corr;
};

static int32_t add_event(struct builder *b, int type, int thread, int32_t parent, int64_t start, int64_t stop) {
  struct lens_model *m = &b->s->m;
  if (m->n_events == b->cap_ev) {
    b->cap_ev = b->cap_ev ? b->cap_ev * 2 : 1024;
    m->events = realloc(m->events, b->cap_ev * sizeof(*m->events));
    b->s->true_start = realloc(b->s->true_start, b->cap_ev * sizeof(int64_t));
    b->s->true_stop = realloc(b->s->true_stop, b->cap_ev * sizeof(int64_t));
    b->s->expect_flags = realloc(b->s->expect_flags, b->cap_ev * sizeof(uint32_t));
  }
  int32_t i = (int32_t)m->n_events++;
  struct lens_event *e = &m->events[i];
  memset(e, 0, sizeof(*e));
  e->id = LENS_ID_MAKE(type, thread, ++b->seq[thread]);
  e->type = type;
  e->thread = thread;
  e->comm = 0;
  e->parent = parent;
  e->first_child = e->next_sibling = -1;
  e->start_mono_ns = (uint64_t)start;
  e->stop_mono_ns = (uint64_t)stop;
  e->acc.cupti_kernel = -1;
  e->acc.sched_sample = -1;
  b->s->true_start[i] = b->s->true_stop[i] = 0;
  b->s->expect_flags[i] = 0;
  if (parent >= 0) { /* append as last child */
    e->parent_raw = m->events[parent].id;
    int32_t *link = &m->events[parent].first_child;
    while (*link >= 0) link = &m->events[*link].next_sibling;
    *link = i;
  }
  return i;
}

static void add_state(struct builder *b, int32_t ev, uint32_t state, int64_t ts, uint64_t arg) {
  struct lens_model *m = &b->s->m;
  if (m->n_states == b->cap_st) {
    b->cap_st = b->cap_st ? b->cap_st * 2 : 1024;
    m->states = realloc(m->states, b->cap_st * sizeof(*m->states));
  }
  m->events[ev].first_state = (uint32_t)m->n_states;
  m->events[ev].n_states = 1;
  m->states[m->n_states++] = (struct lens_state_ev){(uint64_t)ts, arg, state, 1, (uint64_t)ts, 1, 0};
}

static void *put(struct builder *b, size_t size) {
  struct synth *s = b->s;
  if (s->cupti_len + size > b->cap_b) {
    b->cap_b = (b->cap_b + size) * 2;
    s->cupti = realloc(s->cupti, b->cap_b);
  }
  void *p = s->cupti + s->cupti_len;
  memset(p, 0, size);
  s->cupti_len += size;
  return p;
}

static void cupti_launch(struct builder *b, uint64_t ext, int64_t l0, int64_t l1, int64_t k0, int64_t k1, int kernel,
                         int channels) {
  uint32_t corr = ++b->corr;
  CUpti_ActivityExternalCorrelation *x = put(b, sizeof(*x));
  x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
  x->externalId = ext;
  x->correlationId = corr;
  CUpti_ActivityAPI *a = put(b, sizeof(*a));
  a->kind = CUPTI_ACTIVITY_KIND_DRIVER;
  a->cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx;
  a->start = (uint64_t)l0 + 100;
  a->end = (uint64_t)l1 - 100;
  a->correlationId = corr;
  if (!kernel) return;
  CUpti_ActivityKernel10 *k = put(b, sizeof(*k));
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->start = (uint64_t)k0;
  k->end = (uint64_t)k1;
  k->completed = (uint64_t)k1;
  k->correlationId = corr;
  k->gridX = channels;
  k->gridY = k->gridZ = 1;
  k->streamId = 7;
}

static enum synth_anomaly anomaly_of(const struct synth_opts *o, int launch) {
  for (int i = 0; i < o->n_anomalies; i++)
    if (o->anomaly_launch[i] == launch) return o->anomaly_at[i];
  return SYN_NONE;
}

/* KernelCh of one op: true item spans inside [k0, k1]; returns the event. */
static int32_t add_kch(struct builder *b, int32_t op, int ch, int64_t t0, int64_t t1, unsigned *rs) {
  const struct synth_opts *o = &b->s->o;
  uint64_t p0 = synth_gpu_of_host(o, t0) & ~31ull, p1 = synth_gpu_of_host(o, t1) & ~31ull; /* 32 ns ticks */
  int64_t n0 = t0 + o->min_lag_ns + expo(rs, 20000);
  int64_t n1 = (t1 > n0 ? t1 : n0) + o->min_lag_ns + expo(rs, 20000);
  int32_t e = add_event(b, LENS_T_KERNEL_CH, 1, op, n0, n1 + 100);
  struct lens_event *ev = &b->s->m.events[e];
  ev->p.kernel_ch.start_gpu_ns = p0;
  ev->p.kernel_ch.stop_gpu_ns = p1;
  ev->p.kernel_ch.channel = ch;
  add_state(b, e, 22, n1, p1);
  b->s->true_start[e] = t0;
  b->s->true_stop[e] = t1;
  return e;
}

int synth_build(struct synth *s, const struct synth_opts *o) {
  memset(s, 0, sizeof(*s));
  s->o = *o;
  struct builder b = {.s = s};
  unsigned rs = o->seed;
  struct lens_model *m = &s->m;
  m->n_files = m->n_procs = m->n_comms = 1;
  m->files = calloc(1, sizeof(*m->files));
  m->procs = calloc(1, sizeof(*m->procs));
  m->comms = calloc(1, sizeof(*m->comms));
  m->n_threads = 2;
  m->threads = calloc(2, sizeof(*m->threads));
  m->threads[0] = (struct lens_thread){.proc = 0, .slot = 0, .tid = 100, .roles = LENS_ROLE_APP, .proxy_rank = -1, .proxy_comm = -1};
  m->threads[1] = (struct lens_thread){.proc = 0, .slot = 1, .tid = 101, .roles = LENS_ROLE_PROXY, .proxy_rank = 0, .proxy_comm = 0};
  int32_t prev_ch0 = -1;
  int prev_overrun = 0;
  for (int i = 0; i < o->launches; i++) {
    int64_t t = o->host_start_ns + (int64_t)i * 1000000;
    enum synth_anomaly an = anomaly_of(o, i);
    int32_t l = add_event(&b, LENS_T_KERNEL_LAUNCH, 0, -1, t, t + 3000);
    struct lens_event *le = &m->events[l];
    le->p.kernel_launch.stream = 0x7000;
    le->p.kernel_launch.ext_corr_id = o->with_cupti ? le->id : 0;
    uint64_t lid = le->id;
    int64_t k0 = t + 5000, k1 = t + 25000;
    if (o->with_cupti)
      cupti_launch(&b, lid, t, t + 3000, k0, an == SYN_SHORT_KERNEL ? k0 + 2000 : k1, an != SYN_NO_KERNEL, o->channels);
    if (an == SYN_NO_KERNEL) s->expect_flags[l] |= LENS_ACC_NO_KERNEL_RECORD;
    int nops = an == SYN_P2P_PAIR ? 2 : 1;
    int64_t ch_t0[64], ch_t1[64];
    for (int c = 0; c < o->channels; c++) {
      ch_t0[c] = k0 + uni(&rs, 200, 2000);
      ch_t1[c] = k1 - uni(&rs, 200, 2000);
    }
    for (int op_i = 0; op_i < nops; op_i++) {
      int type = an == SYN_P2P_PAIR ? LENS_T_P2P : LENS_T_COLL;
      int32_t op = add_event(&b, type, 0, -1, t + 4000 + op_i, t + 4500);
      if (type == LENS_T_COLL) {
        m->events[op].p.coll.launch_id = lid;
        m->events[op].p.coll.func = "AllReduce";
      } else {
        m->events[op].p.p2p.launch_id = lid;
        m->events[op].p.p2p.func = op_i ? "Recv" : "Send";
      }
      for (int c = 0; c < o->channels; c++) {
        int32_t e = add_kch(&b, op, c, ch_t0[c], ch_t1[c], &rs);
        struct lens_event *ev = &m->events[e];
        if (an == SYN_NO_KERNEL) s->expect_flags[e] |= LENS_ACC_NO_KERNEL_RECORD;
        if (an == SYN_SHORT_KERNEL && o->with_cupti) s->expect_flags[e] |= LENS_ACC_OUTSIDE_KERNEL;
        if (an == SYN_OUTSIDE_KERNEL && c == 0) {
          uint64_t shift = 60000;
          ev->p.kernel_ch.start_gpu_ns += shift;
          ev->p.kernel_ch.stop_gpu_ns += shift;
          ev->start_mono_ns += shift;
          m->states[ev->first_state].ts_mono_ns += shift;
          m->states[ev->first_state].arg += shift;
          s->expect_flags[e] |= LENS_ACC_OUTSIDE_KERNEL;
        }
        if (an == SYN_STOP_BEFORE_START && c == 1) {
          ev->p.kernel_ch.stop_gpu_ns = ev->p.kernel_ch.start_gpu_ns - 1000;
          s->expect_flags[e] |= LENS_ACC_STOP_BEFORE_START;
        }
        if (c == 0 && prev_overrun && prev_ch0 >= 0) {
          /* The previous launch's channel 0 read this item's slot. */
          struct lens_event *pe = &m->events[prev_ch0];
          pe->p.kernel_ch.start_gpu_ns = ev->p.kernel_ch.start_gpu_ns;
          pe->p.kernel_ch.stop_gpu_ns = ev->p.kernel_ch.stop_gpu_ns;
          pe->start_mono_ns = (uint64_t)ch_t1[0] + 1000;
          m->states[pe->first_state].ts_mono_ns = pe->start_mono_ns + 500;
          pe->stop_mono_ns = pe->start_mono_ns + 600;
          s->expect_flags[prev_ch0] |= LENS_ACC_RING_OVERRUN;
          /* The proxy polls a channel's items in order: this one after it. */
          if (ev->start_mono_ns <= pe->stop_mono_ns) {
            uint64_t d = pe->stop_mono_ns + 1000 - ev->start_mono_ns;
            ev->start_mono_ns += d;
            ev->stop_mono_ns += d;
            m->states[ev->first_state].ts_mono_ns += d;
          }
        }
        if (c == 0) prev_ch0 = e;
      }
    }
    prev_overrun = an == SYN_OVERRUN;
  }
  /* Graph capture: launches with ids pushed, but the capture makes no
   * kernel; each replay runs one kernel per node under cuGraphLaunch's
   * correlation id, and NCCL reports Coll (launch_id 0) + KernelCh. */
  int64_t tg = o->host_start_ns + (int64_t)o->launches * 1000000;
  for (int g = 0; g < o->graph_nodes; g++) {
    int64_t t = tg + (int64_t)g * 10000;
    int32_t l = add_event(&b, LENS_T_KERNEL_LAUNCH, 0, -1, t, t + 3000);
    m->events[l].flags |= LENS_EVF_GRAPH;
    m->events[l].p.kernel_launch.ext_corr_id = o->with_cupti ? m->events[l].id : 0;
    if (o->with_cupti) cupti_launch(&b, m->events[l].id, t, t + 3000, 0, 0, 0, o->channels);
    if (g < o->graph_captures_missing) m->events[l].type = LENS_T_GROUP_API; /* not a launch any more */
  }
  for (int rp = 0; rp < o->graph_replays; rp++) {
    int64_t t = tg + 1000000 + (int64_t)rp * 1000000;
    uint32_t corr = ++b.corr;
    if (o->with_cupti) {
      CUpti_ActivityAPI *a = put(&b, sizeof(*a));
      a->kind = CUPTI_ACTIVITY_KIND_DRIVER;
      a->cbid = CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch;
      a->start = (uint64_t)t;
      a->end = (uint64_t)t + 2000;
      a->correlationId = corr;
    }
    for (int g = 0; g < o->graph_nodes; g++) {
      int64_t k0 = t + 5000 + (int64_t)g * 30000, k1 = k0 + 20000;
      if (o->with_cupti) {
        CUpti_ActivityKernel10 *k = put(&b, sizeof(*k));
        k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k->start = (uint64_t)k0;
        k->end = (uint64_t)k1;
        k->correlationId = corr;
        k->gridX = o->channels;
        k->graphId = 5;
        k->graphNodeId = 0x100000000ull + (uint64_t)(o->graph_nodes - g); /* ids need not follow order */
        k->streamId = 7;
      }
      int32_t op = add_event(&b, LENS_T_COLL, 0, -1, k0 - 1000, k0 - 500);
      m->events[op].p.coll.func = "AllReduce";
      m->events[op].flags |= LENS_EVF_GRAPH;
      for (int c = 0; c < o->channels; c++) add_kch(&b, op, c, k0 + uni(&rs, 200, 2000), k1 - uni(&rs, 200, 2000), &rs);
    }
  }
  for (int f = 0; f < o->foreign_ext_ids && o->with_cupti; f++) {
    int64_t t = o->host_start_ns + (int64_t)f * 1000000 + 500000;
    cupti_launch(&b, 0x4242000 + (uint64_t)f, t, t + 2000, t + 3000, t + 9000, 1, 1);
  }
  if (o->with_cupti) {
    s->blob = (struct lens_cupti_blob){.proc = 0, .data = s->cupti, .len = s->cupti_len};
    m->cupti = &s->blob;
    m->n_cupti = 1;
  }
  return 0;
}

void synth_free(struct synth *s) {
  struct lens_model *m = &s->m;
  free(m->files);
  free(m->procs);
  free(m->comms);
  free(m->threads);
  free(m->events);
  free(m->states);
  free(s->cupti);
  free(s->true_start);
  free(s->true_stop);
  free(s->expect_flags);
}
