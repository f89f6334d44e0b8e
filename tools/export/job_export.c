/* The merged job timeline (job_export.h). */
#include "export/job_export.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/event_args.h"
#include "export/json_out.h"
#include "export/lanes.h"
#include "export/pb_write.h"
#include "job/align_print.h"

enum { K_CALLS = 0, K_GPU = 1, K_PROXY = 2 };
static const char *const kind_name[] = {"calls", "GPU", "proxy"};

struct sl {
  int64_t s, e;          /* job ns - origin */
  int32_t proc, rank;    /* rank: in the event's communicator (-1 unknown) */
  int32_t thread;        /* K_CALLS only (else -1) */
  int32_t sub;           /* K_PROXY: channel * 2 + is_send, a track each (else -1) */
  int32_t event;         /* model event */
  int32_t inst, row;     /* K_GPU: job instance and rank row */
  uint8_t kind;
  int lane;
  uint32_t track;
  uint32_t flow;         /* Perfetto: flow id (instance + 1) to the next rank's slice, 0 none */
  uint8_t flow_end;      /* ... or this is the flow's last slice */
};

struct ctx {
  FILE *f;
  const struct lens_model *m;
  const struct lens_job *j;
  const struct lens_align *a;
  const struct lens_job_export_opts *o;
  struct lens_job_export_counts *c;
  uint8_t *sel;          /* per proc: selected (placed, and in the selected communicator) */
  int first;
  int proto;             /* Perfetto protobuf instead of JSON */
  struct pb out, pkt, sub, sub2;
};

/* One TracePacket (x->pkt) framed as Trace.packet = 1 and written. */
static void pkt_flush(struct ctx *x) {
  pb_varint(&x->pkt, 10, 1); /* trusted_packet_sequence_id: one sequence */
  pb_reset(&x->out);
  pb_msg(&x->out, 1, &x->pkt);
  if (!x->out.oom) fwrite(x->out.b, 1, x->out.n, x->f);
  pb_reset(&x->pkt);
}

/* A track: TrackDescriptor with a process (tid 0) or a thread. */
static void pb_track(struct ctx *x, uint32_t pid, uint32_t tid, const char *name) {
  pb_reset(&x->sub);
  pb_reset(&x->sub2);
  pb_varint(&x->sub, 1, tid ? 1000000ull + tid : pid);
  pb_sint(&x->sub2, 1, pid);
  if (tid) {
    pb_sint(&x->sub2, 2, tid);
    pb_str(&x->sub2, 5, name);
    pb_msg(&x->sub, 4, &x->sub2);
  } else {
    pb_str(&x->sub2, 6, name);
    pb_msg(&x->sub, 3, &x->sub2);
  }
  pb_msg(&x->pkt, 60, &x->sub);
  pkt_flush(x);
}

static void sep(struct ctx *x) {
  fputs(x->first ? "\n" : ",\n", x->f);
  x->first = 0;
}

/* Whether a process has a rank in the selected communicator (all do without --comm). */
static int has_comm(const struct lens_model *m, int32_t p, const struct lens_job_export_opts *o) {
  if (!o->have_comm) return 1;
  for (size_t i = 0; i < m->n_comms; i++)
    if (m->comms[i].proc == p && m->comms[i].comm_id == o->comm_id) return 1;
  return 0;
}

/* An event's rank: its communicator's, else (a GroupApi) its first child's
 * with one; a ProxyOp of no known communicator (PXN: run by this GPU's proxy
 * for a rank of another process, whose communicator this trace does not
 * hold) is its proxy thread's GPU's rank, as the per-trace export names it. */
static int32_t event_rank(const struct lens_model *m, const struct lens_event *e) {
  const struct lens_event *e0 = e;
  for (int d = 0; d < 3 && e; d++) {
    if (e->comm >= 0) return m->comms[e->comm].rank;
    e = e->first_child >= 0 ? &m->events[e->first_child] : NULL;
  }
  if (e0->type == LENS_T_PROXY_OP && e0->thread >= 0 && (size_t)e0->thread < m->n_threads)
    return m->threads[e0->thread].proxy_rank;
  return -1;
}

static int rank_selected(const struct lens_job_export_opts *o, int32_t r) {
  if (!o->ranks) return 1;
  return r >= 0 && (size_t)r < o->n_ranks && o->ranks[r];
}

static int in_window(const struct lens_job_export_opts *o, int64_t s, int64_t e) {
  if (o->have_since && e < o->since_ns) return 0;
  if (o->have_until && s > o->until_ns) return 0;
  return 1;
}

static int is_call(int type) {
  switch (type) {
  case LENS_T_GROUP_API: case LENS_T_COLL_API: case LENS_T_P2P_API: case LENS_T_KERNEL_LAUNCH:
  case LENS_T_GROUP: case LENS_T_COLL: case LENS_T_P2P: case LENS_T_CE_COLL: case LENS_T_CE_SYNC:
  case LENS_T_CE_BATCH: return 1;
  default: return 0;
  }
}

static int64_t job_of(const struct ctx *x, int32_t proc, uint64_t mono) {
  int64_t t;
  lens_align_to_job(x->a, proc, mono, &t, NULL);
  return t;
}

static int cmp_sl(const void *pa, const void *pb) {
  const struct sl *a = pa, *b = pb;
#define C(f)                                                                                                           \
  if (a->f != b->f) return a->f < b->f ? -1 : 1
  C(proc);
  C(rank);
  C(kind);
  C(thread);
  C(sub);
  C(s);
#undef C
  if (a->e != b->e) return a->e > b->e ? -1 : 1; /* the longer (the parent) first */
  return (a->event > b->event) - (a->event < b->event);
}

struct vec {
  struct sl *v;
  size_t n, cap;
};
static int push(struct vec *v, struct sl s) {
  if (v->n == v->cap) {
    size_t nc = v->cap ? v->cap * 2 : 1024;
    struct sl *nv = realloc(v->v, nc * sizeof *nv);
    if (!nv) return -1;
    v->v = nv, v->cap = nc;
  }
  v->v[v->n++] = s;
  return 0;
}

/* The earliest aligned time of any placed process: the origin. */
static int64_t origin_of(const struct ctx *x) {
  int64_t o = INT64_MAX;
  for (size_t i = 0; i < x->m->n_events; i++) {
    const struct lens_event *e = &x->m->events[i];
    if (e->proc < 0 || !x->sel[e->proc]) continue;
    int64_t t = job_of(x, e->proc, e->start_mono_ns);
    if (t < o) o = t;
  }
  if (o == INT64_MAX) return 0;
  return o - ((o % 1000000) + 1000000) % 1000000;
}

static int collect(struct ctx *x, struct vec *v, int64_t origin) {
  const struct lens_model *m = x->m;
  const struct lens_job_export_opts *o = x->o;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->proc < 0 || !x->sel[e->proc]) continue;
    int kind = is_call(e->type) ? K_CALLS : e->type == LENS_T_PROXY_OP ? K_PROXY : -1;
    if (kind < 0) continue;
    if (o->have_comm && (e->comm < 0 || m->comms[e->comm].comm_id != o->comm_id)) continue;
    uint64_t stop = e->stop_mono_ns > e->start_mono_ns ? e->stop_mono_ns : e->start_mono_ns;
    struct sl s = {job_of(x, e->proc, e->start_mono_ns) - origin, job_of(x, e->proc, stop) - origin, e->proc,
                   event_rank(m, e), kind == K_CALLS ? e->thread : -1,
                   kind == K_PROXY ? (e->p.proxy_op.channel & 0xFFFF) * 2 + !!e->p.proxy_op.is_send : -1, (int32_t)i, -1,
                   -1, (uint8_t)kind, 0, 0, 0, 0};
    if (s.e < s.s) s.e = s.s;
    if (rank_selected(o, s.rank) && in_window(o, s.s, s.e) && push(v, s)) return -1;
  }
  /* GPU: each instance's kernel span per rank (mapped GPU times; host times
   * when the GPU has no clock map). */
  for (size_t i = 0; x->j && i < x->j->n_insts; i++) {
    const struct lens_job_inst *in = &x->j->insts[i];
    if (o->have_comm && in->comm_id != o->comm_id) continue;
    for (size_t k = 0; k < in->n_ranks; k++) {
      const struct lens_job_rank *r = &x->j->ranks[in->first_rank + k];
      if (r->proc < 0 || !x->sel[r->proc] || !rank_selected(o, r->rank) || r->event < 0 ||
          (size_t)r->event >= m->n_events)
        continue;
      uint64_t a = r->kstart_mono_ns, b = r->kstop_mono_ns;
      if (!a || !b || b < a) {
        const struct lens_event *e = &m->events[r->event];
        a = e->start_mono_ns;
        b = lens_event_completion(m, e, NULL);
        if (b < a) b = a;
      }
      struct sl s = {job_of(x, r->proc, a) - origin, job_of(x, r->proc, b) - origin, r->proc, r->rank, -1, -1,
                     r->event, (int32_t)i, (int32_t)(in->first_rank + k), K_GPU, 0, 0, 0, 0};
      if (s.e < s.s) s.e = s.s;
      if (in_window(o, s.s, s.e) && push(v, s)) return -1;
    }
  }
  return 0;
}

static void meta(struct ctx *x, const char *what, uint32_t pid, uint32_t tid, const char *name, int sort) {
  if (x->proto) { /* names only: Perfetto orders tracks itself */
    if (name) pb_track(x, pid, tid, name);
    return;
  }
  sep(x);
  fprintf(x->f, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"args\":{", what, pid, tid);
  if (name) {
    lens_json_key(x->f, "name");
    lens_json_str(x->f, name);
  } else {
    fprintf(x->f, "\"sort_index\":%d", sort);
  }
  fputs("}}", x->f);
}

static uint32_t pid_of(const struct ctx *x, int32_t proc) { return (uint32_t)x->a->host_of_proc[proc] + 1; }
static uint32_t tid_of(const struct sl *s) { return s->track * LENS_LANES_MAX + (uint32_t)s->lane + 1; }

/* Slices are sorted by process and rank: each host's ranks in order. */
static void write_hosts_meta(struct ctx *x, const struct vec *v) {
  for (size_t h = 0; h < x->a->n_hosts; h++) {
    char buf[512];
    int n = snprintf(buf, sizeof buf, "host %s: ranks", x->a->hosts[h].host);
    int any = 0, last = -2;
    for (size_t i = 0; i < v->n && n < (int)sizeof buf - 24; i++) {
      const struct sl *s = &v->v[i];
      if (x->a->host_of_proc[s->proc] != (int32_t)h || s->rank == last) continue;
      last = s->rank;
      n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%d", any++ ? "," : " ", s->rank);
    }
    if (!any) continue;
    meta(x, "process_name", (uint32_t)h + 1, 0, buf, 0);
    meta(x, "process_sort_index", (uint32_t)h + 1, 0, NULL, (int)h);
    const struct lens_align_host *ah = &x->a->hosts[h];
    if (x->proto) continue;
    if (ah->source == LENS_ALIGN_REF)
      snprintf(buf, sizeof buf, "job time base (reference host)");
    else
      snprintf(buf, sizeof buf, "aligned by %s, +-%.1f us", lens_align_source_name(ah->source),
               (double)ah->bound_ns / 1e3);
    sep(x);
    fprintf(x->f, "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":%zu,\"tid\":0,\"args\":{\"labels\":", h + 1);
    lens_json_str(x->f, buf);
    fputs("}}", x->f);
  }
}

static void track_name(struct ctx *x, const struct sl *s, int lanes) {
  const struct lens_model *m = x->m;
  const struct lens_proc *pr = &m->procs[s->proc];
  for (int l = 0; l < lanes; l++) {
    char buf[256], who[64] = "";
    if (s->kind == K_CALLS && s->thread >= 0) {
      const struct lens_thread *th = &m->threads[s->thread];
      snprintf(who, sizeof who, " %s (tid %u)", th->name[0] ? th->name : "thread", th->tid);
    } else if (s->kind == K_PROXY && s->sub >= 0) { /* one track per channel and direction */
      snprintf(who, sizeof who, " %s ch %d", s->sub & 1 ? "send" : "recv", s->sub / 2);
    }
    /* Work that really overlaps (ops posted ahead on one channel, a grouped
     * Send and Recv) is on further lanes of its track, as in the per-trace
     * export. */
    snprintf(buf, sizeof buf, "rank %d %s%s, pid %u", s->rank, kind_name[s->kind], who, pr->pid);
    if (l) {
      size_t n = strlen(buf);
      snprintf(buf + n, sizeof buf - n, " · lane %d", l + 1);
    }
    uint32_t tid = s->track * LENS_LANES_MAX + (uint32_t)l + 1;
    meta(x, "thread_name", pid_of(x, s->proc), tid, buf, 0);
    /* By rank, then calls, GPU, proxy (its channels in order), then lane. */
    int r = s->rank >= 0 ? s->rank : 80000;
    meta(x, "thread_sort_index", pid_of(x, s->proc), tid, NULL, r * 25344 + s->kind * 8448 + (s->sub + 1) * 64 + l);
  }
}

/* Groups of (proc, kind, thread) are tracks; lanes within them. */
static void place(struct ctx *x, struct vec *v) {
  struct lens_lanes lanes;
  uint32_t track = 0;
  for (size_t i = 0; i < v->n;) {
    size_t e = i;
    lens_lanes_reset(&lanes);
    while (e < v->n && v->v[e].proc == v->v[i].proc && v->v[e].rank == v->v[i].rank &&
           v->v[e].kind == v->v[i].kind && v->v[e].thread == v->v[i].thread && v->v[e].sub == v->v[i].sub) {
      v->v[e].lane = lens_lanes_place(&lanes, v->v[e].s, v->v[e].e);
      v->v[e].track = track;
      e++;
    }
    x->c->lanes_extra += (size_t)(lanes.used - 1);
    x->c->crowded += lanes.crowded;
    track_name(x, &v->v[i], lanes.used);
    track++;
    i = e;
  }
}

static void us(FILE *f, int64_t ns) { lens_json_us_signed(f, ns); }

static void slice_name(const struct ctx *x, const struct sl *s, char *name, size_t len) {
  const struct lens_model *m = x->m;
  const struct lens_event *e = &m->events[s->event];
  const struct lens_job_inst *in = s->inst >= 0 ? &x->j->insts[s->inst] : NULL;
  const struct lens_job_rank *r = s->row >= 0 ? &x->j->ranks[s->row] : NULL;
  int last = in && in->last_rank >= 0 && r && r->rank == in->last_rank;
  if (in)
    snprintf(name, len, "%s #%" PRId64 "%s", in->func ? in->func : "?", in->seq, last ? " (last rank)" : "");
  else if (s->kind == K_PROXY && e->comm < 0) /* PXN: for a rank of another process */
    snprintf(name, len, "ProxyOp %s ch %d peer %d (PXN, pid %d)", e->p.proxy_op.is_send ? "send" : "recv",
             e->p.proxy_op.channel, e->p.proxy_op.peer, e->p.proxy_op.pid);
  else if (s->kind == K_PROXY)
    snprintf(name, len, "ProxyOp %s ch %d peer %d", e->p.proxy_op.is_send ? "send" : "recv", e->p.proxy_op.channel,
             e->p.proxy_op.peer);
  else {
    const char *func = e->type == LENS_T_COLL ? e->p.coll.func : e->type == LENS_T_P2P ? e->p.p2p.func
                       : e->type == LENS_T_COLL_API ? e->p.coll_api.func : e->type == LENS_T_P2P_API ? e->p.p2p_api.func
                       : NULL;
    snprintf(name, len, "%s%s%s", lens_type_name(e->type), func ? " " : "", func ? func : "");
  }
}

static void write_slice(struct ctx *x, const struct sl *s, int64_t origin) {
  const struct lens_model *m = x->m;
  const struct lens_event *e = &m->events[s->event];
  char name[160];
  const struct lens_job_inst *in = s->inst >= 0 ? &x->j->insts[s->inst] : NULL;
  const struct lens_job_rank *r = s->row >= 0 ? &x->j->ranks[s->row] : NULL;
  int last = in && in->last_rank >= 0 && r && r->rank == in->last_rank;
  slice_name(x, s, name, sizeof name);
  sep(x);
  fputs("{\"ph\":\"X\",\"name\":", x->f);
  lens_json_str(x->f, name);
  fprintf(x->f, ",\"cat\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":", kind_name[s->kind], pid_of(x, s->proc), tid_of(s));
  us(x->f, s->s);
  fputs(",\"dur\":", x->f);
  us(x->f, s->e - s->s);
  uint64_t bound = 0;
  int64_t job;
  lens_align_to_job(x->a, s->proc, r && r->kstart_mono_ns ? r->kstart_mono_ns : e->start_mono_ns, &job, &bound);
  fprintf(x->f, ",\"args\":{\"rank\":%d,\"host\":", s->rank);
  lens_json_str(x->f, x->a->hosts[x->a->host_of_proc[s->proc]].host);
  fprintf(x->f, ",\"pid\":%u,\"start_job_ns\":%" PRId64 ",\"align_bound_ns\":%" PRIu64, m->procs[s->proc].pid,
          s->s + origin, bound);
  if (in) {
    fputs(",\"comm_id\":", x->f);
    lens_json_hex(x->f, in->comm_id);
    fprintf(x->f, ",\"seq\":%" PRId64 ",\"bytes\":%" PRIu64 ",\"gpu_time\":\"%s\",\"last_rank\":%d,\"is_last\":%s",
            in->seq, in->bytes, r->kstart_mono_ns ? "GPU pTimer through its clock map" : "host (no clock map)",
            in->last_rank, last ? "true" : "false");
    if (in->exec_ns) fprintf(x->f, ",\"exec_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64, in->exec_ns, r->wait_ns);
    fprintf(x->f, ",\"cause\":\"%s\"", lens_job_cause_name(in->cause));
    x->c->last_marked += last;
  } else {
    fprintf(x->f, ",\"start_mono_ns\":%" PRIu64 ",", e->start_mono_ns);
    lens_json_event_args(x->f, m, e);
  }
  fputs("}}", x->f);
  x->c->slices++;
}

static const struct sl *sort_v;
static int cmp_flow(const void *pa, const void *pb) {
  const struct sl *a = &sort_v[*(const size_t *)pa], *b = &sort_v[*(const size_t *)pb];
  if (a->inst != b->inst) return a->inst < b->inst ? -1 : 1;
  int64_t ma = a->s + (a->e - a->s) / 2, mb = b->s + (b->e - b->s) / 2;
  if (ma != mb) return ma < mb ? -1 : 1;
  return (a->proc > b->proc) - (a->proc < b->proc);
}

/* The GPU slices' indices grouped by instance, each group in the order of
 * its slices' midpoints (cmp_flow); NULL when out of memory. */
static size_t *gpu_slices_by_instance(const struct vec *v, size_t *n) {
  size_t *ix = malloc((v->n + 1) * sizeof *ix);
  *n = 0;
  if (!ix) return NULL;
  for (size_t i = 0; i < v->n; i++)
    if (v->v[i].kind == K_GPU) ix[(*n)++] = i;
  sort_v = v->v;
  qsort(ix, *n, sizeof *ix, cmp_flow);
  return ix;
}

/* One flow per instance through its ranks' GPU slices, each flow event at
 * its slice's midpoint (bound to that enclosing slice). */
static int write_flows(struct ctx *x, const struct vec *v) {
  size_t n, *ix = gpu_slices_by_instance(v, &n);
  if (!ix) return -1;
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && v->v[ix[e]].inst == v->v[ix[i]].inst) e++;
    if (e - i >= 2) {
      const struct lens_job_inst *in = &x->j->insts[v->v[ix[i]].inst];
      for (size_t k = i; k < e; k++) {
        const struct sl *s = &v->v[ix[k]];
        const char *ph = k == i ? "s" : k + 1 == e ? "f" : "t";
        sep(x);
        fprintf(x->f, "{\"ph\":\"%s\",\"name\":\"%s #%" PRId64 "\",\"cat\":\"instance\",\"id\":%d,\"pid\":%u,"
                      "\"tid\":%u,\"ts\":",
                ph, in->func ? in->func : "?", in->seq, v->v[ix[k]].inst + 1, pid_of(x, s->proc), tid_of(s));
        us(x->f, s->s + (s->e - s->s) / 2);
        fputs(",\"bp\":\"e\"}", x->f);
        x->c->flows++;
      }
      x->c->instances_flowed++;
    }
    i = e;
  }
  free(ix);
  return 0;
}

/* Perfetto: each instance's GPU slices, in the order of their midpoints,
 * carry flow_ids = instance + 1 to the next one; the last terminates it. */
static int assign_flows(struct ctx *x, struct vec *v) {
  size_t n, *ix = gpu_slices_by_instance(v, &n);
  if (!ix) return -1;
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && v->v[ix[e]].inst == v->v[ix[i]].inst) e++;
    if (e - i >= 2) {
      for (size_t k = i; k < e; k++) v->v[ix[k]].flow = (uint32_t)v->v[ix[k]].inst + 1, v->v[ix[k]].flow_end = k + 1 == e;
      x->c->flows += e - i;
      x->c->instances_flowed++;
    }
    i = e;
  }
  free(ix);
  return 0;
}

struct pev {
  int64_t t, other; /* other: the slice's other end */
  size_t slice;
  int begin;
};

/* At one time: ends before begins; inner ends (later begins) first; outer begins (later ends) first. */
static int cmp_pev(const void *pa, const void *pb) {
  const struct pev *a = pa, *b = pb;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  if (a->begin != b->begin) return a->begin - b->begin;
  if (a->other != b->other) return a->begin ? (a->other > b->other ? -1 : 1) : (a->other > b->other ? -1 : 1);
  return (a->slice > b->slice) - (a->slice < b->slice);
}

static void pb_annot_u(struct ctx *x, const char *k, uint64_t v) {
  pb_reset(&x->sub2);
  pb_str(&x->sub2, 10, k);
  pb_varint(&x->sub2, 3, v);
  pb_msg(&x->sub, 4, &x->sub2);
}
static void pb_annot_s(struct ctx *x, const char *k, const char *v) {
  pb_reset(&x->sub2);
  pb_str(&x->sub2, 10, k);
  pb_str(&x->sub2, 6, v);
  pb_msg(&x->sub, 4, &x->sub2);
}

/* SLICE_BEGIN / SLICE_END pairs on each (track, lane), time-ordered. */
static int write_perfetto_events(struct ctx *x, const struct vec *v, int64_t origin) {
  struct pev *ev = malloc((2 * v->n + 1) * sizeof *ev);
  if (!ev) return -1;
  for (size_t i = 0; i < v->n; i++) {
    ev[2 * i] = (struct pev){v->v[i].s, v->v[i].e, i, 1};
    ev[2 * i + 1] = (struct pev){v->v[i].e, v->v[i].s, i, 0};
  }
  qsort(ev, 2 * v->n, sizeof *ev, cmp_pev);
  for (size_t k = 0; k < 2 * v->n; k++) {
    const struct sl *s = &v->v[ev[k].slice];
    pb_reset(&x->sub);
    pb_varint(&x->sub, 9, ev[k].begin ? 1 : 2);
    pb_varint(&x->sub, 11, 1000000ull + tid_of(s));
    if (ev[k].begin) {
      char name[160];
      slice_name(x, s, name, sizeof name);
      pb_str(&x->sub, 23, name);
      pb_str(&x->sub, 22, kind_name[s->kind]);
      pb_annot_u(x, "rank", (uint64_t)(int64_t)s->rank);
      pb_annot_s(x, "host", x->a->hosts[x->a->host_of_proc[s->proc]].host);
      uint64_t bound = 0;
      int64_t job;
      lens_align_to_job(x->a, s->proc, x->m->events[s->event].start_mono_ns, &job, &bound);
      pb_annot_u(x, "align_bound_ns", bound);
      if (s->inst >= 0) {
        const struct lens_job_inst *in = &x->j->insts[s->inst];
        pb_annot_u(x, "seq", (uint64_t)in->seq);
        pb_annot_u(x, "is_last", in->last_rank >= 0 && x->j->ranks[s->row].rank == in->last_rank);
        x->c->last_marked += in->last_rank >= 0 && x->j->ranks[s->row].rank == in->last_rank;
      }
      if (s->flow) pb_fixed64(&x->sub, s->flow_end ? 48 : 47, s->flow);
      x->c->slices++;
    }
    pb_varint(&x->pkt, 8, (uint64_t)(ev[k].t + origin));
    pb_msg(&x->pkt, 11, &x->sub);
    pkt_flush(x);
  }
  free(ev);
  return 0;
}

static void write_other(struct ctx *x, int64_t origin) {
  FILE *f = x->f;
  char tb[256];
  lens_align_time_base_text(x->m, x->a, tb, sizeof tb);
  fputs("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"nccl-lens export --format job\","
        "\"clock\":\"job time base: ts = (job time ns - origin_job_ns) / 1000, in us\",\"time_base\":", f);
  lens_json_str(f, tb);
  fprintf(f, ",\"origin_job_ns\":%" PRId64 ",\"slices\":%zu,\"flows\":%zu,\"instances_flowed\":%zu,"
             "\"procs_unaligned_left_out\":%zu,\"lanes_extra\":%zu,\"crowded\":%zu,\"selection\":{",
          origin, x->c->slices, x->c->flows, x->c->instances_flowed, x->c->procs_unaligned, x->c->lanes_extra,
          x->c->crowded);
  int k = 0;
  if (x->o->have_comm) fprintf(f, "\"comm\":\"0x%" PRIx64 "\"", x->o->comm_id), k++;
  if (x->o->ranks) {
    fprintf(f, "%s\"ranks\":[", k++ ? "," : "");
    int n = 0;
    for (size_t r = 0; r < x->o->n_ranks; r++)
      if (x->o->ranks[r]) fprintf(f, "%s%zu", n++ ? "," : "", r);
    fputc(']', f);
  }
  if (x->o->have_since) fprintf(f, "%s\"since_ns\":%" PRId64, k++ ? "," : "", x->o->since_ns);
  if (x->o->have_until) fprintf(f, "%s\"until_ns\":%" PRId64, k++ ? "," : "", x->o->until_ns);
  fputc('}', f);
  lens_align_print_json(f, x->m, x->a);
  fputs("}\n}\n", f);
}

int lens_export_job(FILE *f, const struct lens_model *m, const struct lens_job *j, const struct lens_align *a,
                    const struct lens_job_export_opts *o, struct lens_job_export_counts *c) {
  struct lens_job_export_counts dummy;
  struct lens_job_export_opts none = {0};
  struct ctx x = {.f = f, .m = m, .j = j, .a = a, .o = o ? o : &none, .c = c ? c : &dummy, .first = 1};
  x.proto = x.o->perfetto;
  memset(x.c, 0, sizeof *x.c);
  x.sel = calloc(m->n_procs + 1, 1);
  struct vec v = {0};
  int rc = -1;
  if (!x.sel) goto out;
  for (size_t p = 0; p < m->n_procs; p++) {
    int32_t h = p < a->n_procs ? a->host_of_proc[p] : -1;
    int placed = h >= 0 && a->hosts[h].source != LENS_ALIGN_NONE;
    if (!placed && m->files[m->procs[p].file].producer == LENS_PRODUCER_PLUGIN) x.c->procs_unaligned++;
    x.sel[p] = placed && has_comm(m, (int32_t)p, x.o);
  }
  int64_t origin = origin_of(&x);
  x.c->origin_job_ns = origin;
  if (collect(&x, &v, origin)) goto out;
  qsort(v.v, v.n, sizeof *v.v, cmp_sl);
  if (x.proto) {
    pb_varint(&x.pkt, 13, 1); /* sequence_flags: SEQ_INCREMENTAL_STATE_CLEARED, on the first packet */
    write_hosts_meta(&x, &v);
    place(&x, &v);
    if (assign_flows(&x, &v) || write_perfetto_events(&x, &v, origin)) goto out;
    rc = ferror(f) || x.out.oom || x.pkt.oom || x.sub.oom || x.sub2.oom ? -1 : 0;
    goto out;
  }
  fputs("{\"traceEvents\":[", f);
  write_hosts_meta(&x, &v);
  place(&x, &v);
  for (size_t i = 0; i < v.n; i++) write_slice(&x, &v.v[i], origin);
  if (write_flows(&x, &v)) goto out;
  write_other(&x, origin);
  rc = ferror(f) ? -1 : 0;
out:
  free(v.v);
  free(x.sel);
  pb_free(&x.out), pb_free(&x.pkt), pb_free(&x.sub), pb_free(&x.sub2);
  return rc;
}
