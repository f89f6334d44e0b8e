/* The merged job timeline (job_export.h). */
#include "cli/format.h"
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
  int32_t event;         /* model event (K_CALLS, K_PROXY; -1 for K_GPU) */
  int32_t inst, row;     /* K_GPU: job instance and rank row */
  uint64_t mono;         /* its start on its host's MONOTONIC: where its alignment bound is taken */
  uint8_t kind;
  int lane;
  uint32_t track;
  uint32_t flow;         /* Perfetto: flow id (instance + 1) to the next rank's slice, 0 none */
  uint8_t flow_end;      /* ... or this is the flow's last slice */
};

struct ctx {
  FILE *f;
  const struct lens_model *m; /* the group's model (metadata: the skeleton when assembling) */
  size_t pbase;          /* where m's procs are in the job's numbering (j, a, sel) */
  uint32_t track_base;   /* the group's first track number: tids are unique in the document */
  uint64_t seq_id;       /* Perfetto: the group's packet sequence */
  const struct lens_job *j;
  const struct lens_align *a;
  const struct lens_job_export_opts *o;
  struct lens_job_export_counts *c;
  const uint8_t *sel;    /* per job proc: selected (placed, and in the selected communicator) */
  struct lens_job_export_part *part;
  int first;
  int proto;             /* Perfetto protobuf instead of JSON */
  struct pb out, pkt, sub, sub2;
};

/* One TracePacket (x->pkt) framed as Trace.packet = 1 and written. */
static void pkt_flush(struct ctx *x) {
  pb_varint(&x->pkt, 10, x->seq_id); /* trusted_packet_sequence_id: one per group, each in time order */
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
  if (a->event != b->event) return a->event < b->event ? -1 : 1;
  return (a->row > b->row) - (a->row < b->row); /* (GPU: the job view's order, a window's rows kept in it) */
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

/* A rank row's GPU slice on its host's MONOTONIC: its mapped kernel span,
 * else (no clock map) its Coll/P2p's start and completion in this group's
 * model (the map read it the same way). a UINT64_MAX: its event is not in
 * the model, nothing drawn. */
int lens_job_rank_kernel_timed(const struct lens_job_rank *r) {
  return r->kstart_mono_ns && r->kstop_mono_ns && r->kstop_mono_ns >= r->kstart_mono_ns;
}

struct lens_job_row_time lens_job_export_row_time(const struct lens_model *m, const struct lens_job_rank *r) {
  if (r->event < 0 || (size_t)r->event >= m->n_events) return (struct lens_job_row_time){UINT64_MAX, 0};
  uint64_t a = r->kstart_mono_ns, b = r->kstop_mono_ns;
  if (!lens_job_rank_kernel_timed(r)) {
    const struct lens_event *e = &m->events[r->event];
    a = e->start_mono_ns;
    b = lens_event_completion(m, e, NULL);
    if (b < a) b = a;
  }
  return (struct lens_job_row_time){a, b};
}

static int collect(struct ctx *x, struct vec *v, int64_t origin) {
  const struct lens_model *m = x->m;
  const struct lens_job_export_opts *o = x->o;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->proc < 0 || !x->sel[x->pbase + (size_t)e->proc]) continue;
    int32_t proc = (int32_t)(x->pbase + (size_t)e->proc);
    int kind = is_call(e->type) ? K_CALLS : e->type == LENS_T_PROXY_OP ? K_PROXY : -1;
    if (kind < 0) continue;
    if (o->have_comm && (e->comm < 0 || m->comms[e->comm].comm_id != o->comm_id)) continue;
    uint64_t stop = e->stop_mono_ns > e->start_mono_ns ? e->stop_mono_ns : e->start_mono_ns;
    struct sl s = {job_of(x, proc, e->start_mono_ns) - origin, job_of(x, proc, stop) - origin, proc,
                   event_rank(m, e), kind == K_CALLS ? e->thread : -1,
                   kind == K_PROXY ? (e->p.proxy_op.channel & 0xFFFF) * 2 + !!e->p.proxy_op.is_send : -1,
                   (int32_t)i, -1, -1, e->start_mono_ns, (uint8_t)kind, 0, 0, 0, 0};
    if (s.e < s.s) s.e = s.s;
    if (rank_selected(o, s.rank) && in_window(o, s.s, s.e) && push(v, s)) return -1;
  }
  /* GPU: each instance's kernel span per rank of this group (row_time; a
   * window from the memo has them from the whole reading: o->row_times). */
  for (size_t i = 0; x->j && i < x->j->n_insts; i++) {
    const struct lens_job_inst *in = &x->j->insts[i];
    for (size_t k = 0; k < in->n_ranks; k++) {
      size_t row = in->first_rank + k;
      const struct lens_job_rank *r = &x->j->ranks[row];
      if (r->proc < 0 || (size_t)r->proc < x->pbase || (size_t)r->proc >= x->pbase + m->n_procs) continue;
      struct lens_job_row_time t = o->row_times ? o->row_times[row] : lens_job_export_row_time(m, r);
      if (t.a == UINT64_MAX || (o->have_comm && in->comm_id != o->comm_id) || !x->sel[r->proc] ||
          !rank_selected(o, r->rank))
        continue;
      struct sl s = {job_of(x, r->proc, t.a) - origin, job_of(x, r->proc, t.b) - origin, r->proc, r->rank, -1, -1,
                     -1, (int32_t)i, (int32_t)row, r->kstart_mono_ns ? r->kstart_mono_ns : t.a, K_GPU, 0, 0, 0, 0};
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
static uint32_t tid_of(const struct ctx *x, const struct sl *s) {
  return (x->track_base + s->track) * LENS_LANES_MAX + (uint32_t)s->lane + 1;
}

/* The hosts' processes: "host NAME: ranks ..." (the ranks of its slices in
 * the order of the document, from every group's list), and how it was
 * aligned. */
static void write_hosts_meta(struct ctx *x, struct lens_job_export_part *const *parts, size_t n_parts) {
  for (size_t h = 0; h < x->a->n_hosts; h++) {
    char buf[512];
    int n = snprintf(buf, sizeof buf, "host %s: ranks", x->a->hosts[h].host);
    int any = 0, last = -2;
    for (size_t g = 0; g < n_parts; g++)
      for (size_t i = 0; i < parts[g]->n_host_ranks && n < (int)sizeof buf - 24; i++) {
        const struct lens_job_host_rank *hr = &parts[g]->host_ranks[i];
        if (hr->host != (int32_t)h || hr->rank == last) continue;
        last = hr->rank;
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%d", any++ ? "," : " ", hr->rank);
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

/* The group's (host, rank) of its slices in order, consecutive repeats once. */
static int note_host_ranks(struct ctx *x, const struct vec *v) {
  struct lens_job_export_part *p = x->part;
  for (size_t i = 0; i < v->n; i++) {
    int32_t h = x->a->host_of_proc[v->v[i].proc], r = v->v[i].rank;
    if (p->n_host_ranks && p->host_ranks[p->n_host_ranks - 1].host == h && p->host_ranks[p->n_host_ranks - 1].rank == r)
      continue;
    struct lens_job_host_rank *q = realloc(p->host_ranks, (p->n_host_ranks + 1) * sizeof *q);
    if (!q) return -1;
    p->host_ranks = q;
    p->host_ranks[p->n_host_ranks++] = (struct lens_job_host_rank){h, r};
  }
  return 0;
}

static void track_name(struct ctx *x, const struct sl *s, int lanes) {
  const struct lens_model *m = x->m;
  const struct lens_proc *pr = &m->procs[(size_t)s->proc - x->pbase];
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
    uint32_t tid = (x->track_base + s->track) * LENS_LANES_MAX + (uint32_t)l + 1;
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
    for (size_t k = i; k < e; k++)
      if (v->v[k].e > x->c->end_ns) x->c->end_ns = v->v[k].e;
    x->c->crowded += lanes.crowded;
    track_name(x, &v->v[i], lanes.used);
    track++;
    i = e;
  }
}

static void us(FILE *f, int64_t ns) { lens_json_us_signed(f, ns); }

/* The rank that started last of an instance the job view decomposed (its one rule): none otherwise. */
static int is_last(const struct lens_job_inst *in, int32_t rank) {
  return lens_job_inst_decomposed(in) && in->last_rank >= 0 && rank == in->last_rank;
}

static void slice_name(const struct ctx *x, const struct sl *s, char *name, size_t len) {
  const struct lens_model *m = x->m;
  const struct lens_event *e = s->event >= 0 ? &m->events[s->event] : NULL; /* (K_CALLS, K_PROXY) */
  const struct lens_job_inst *in = s->inst >= 0 ? &x->j->insts[s->inst] : NULL;
  const struct lens_job_rank *r = s->row >= 0 ? &x->j->ranks[s->row] : NULL;
  int last = in && r && is_last(in, r->rank);
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
  const struct lens_event *e = s->event >= 0 ? &m->events[s->event] : NULL; /* (not K_GPU: in is set) */
  char name[160];
  const struct lens_job_inst *in = s->inst >= 0 ? &x->j->insts[s->inst] : NULL;
  const struct lens_job_rank *r = s->row >= 0 ? &x->j->ranks[s->row] : NULL;
  int last = in && r && is_last(in, r->rank);
  slice_name(x, s, name, sizeof name);
  sep(x);
  fputs("{\"ph\":\"X\",\"name\":", x->f);
  lens_json_str(x->f, name);
  fprintf(x->f, ",\"cat\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":", kind_name[s->kind], pid_of(x, s->proc), tid_of(x, s));
  us(x->f, s->s);
  fputs(",\"dur\":", x->f);
  us(x->f, s->e - s->s);
  uint64_t bound = 0;
  int64_t job;
  lens_align_to_job(x->a, s->proc, s->mono, &job, &bound);
  fprintf(x->f, ",\"args\":{\"rank\":%d,\"host\":", s->rank);
  lens_json_str(x->f, x->a->hosts[x->a->host_of_proc[s->proc]].host);
  fprintf(x->f, ",\"pid\":%u,\"start_job_ns\":%" PRId64 ",\"align_bound_ns\":%" PRIu64,
          m->procs[(size_t)s->proc - x->pbase].pid, s->s + origin, bound);
  if (in) {
    fputs(",\"comm_id\":", x->f);
    lens_json_comm_id(x->f, in->comm_id);
    fprintf(x->f, ",\"seq\":%" PRId64 ",\"bytes\":%" PRIu64 ",\"gpu_time\":\"%s\",\"last_rank\":%d,\"is_last\":%s",
            in->seq, in->bytes, r->kstart_mono_ns ? "GPU pTimer through its clock map" : "host (no clock map)",
            lens_job_inst_decomposed(in) ? in->last_rank : -1, last ? "true" : "false");
    if (lens_job_inst_decomposed(in))
      fprintf(x->f, ",\"exec_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64, in->exec_ns, r->wait_ns);
    fprintf(x->f, ",\"cause\":\"%s\"", lens_job_cause_name(in->cause));
    x->c->last_marked += last;
  } else {
    fprintf(x->f, ",\"start_mono_ns\":%" PRIu64 ",", e->start_mono_ns);
    lens_json_event_args(x->f, m, e);
  }
  fputs("}}", x->f);
  x->c->slices++;
}

/* The group's GPU slices, for the flows through each instance's ranks
 * (drawn once every group is written: an instance's ranks are on many
 * hosts). Perfetto: each carries its instance's flow id. */
static int note_gpu(struct ctx *x, struct vec *v) {
  struct lens_job_export_part *p = x->part;
  for (size_t i = 0; i < v->n; i++) {
    struct sl *s = &v->v[i];
    if (s->kind != K_GPU) continue;
    if (x->proto) s->flow = (uint32_t)s->inst + 1, s->flow_end = 0;
    if (p->n_gpu % 1024 == 0) {
      struct lens_job_gpu_slice *q = realloc(p->gpu, (p->n_gpu + 1024) * sizeof *q);
      if (!q) return -1;
      p->gpu = q;
    }
    p->gpu[p->n_gpu++] = (struct lens_job_gpu_slice){s->inst, s->s + (s->e - s->s) / 2, s->proc, tid_of(x, s)};
  }
  return 0;
}

static int cmp_gpu(const void *pa, const void *pb) {
  const struct lens_job_gpu_slice *a = pa, *b = pb;
  if (a->inst != b->inst) return a->inst < b->inst ? -1 : 1;
  if (a->mid != b->mid) return a->mid < b->mid ? -1 : 1;
  return (a->proc > b->proc) - (a->proc < b->proc);
}

/* Every group's GPU slices, grouped by instance, each group in the order of
 * their midpoints; NULL when out of memory. */
static struct lens_job_gpu_slice *gpu_by_instance(struct lens_job_export_part *const *parts, size_t n_parts,
                                                  size_t *n) {
  *n = 0;
  for (size_t g = 0; g < n_parts; g++) *n += parts[g]->n_gpu;
  struct lens_job_gpu_slice *v = malloc((*n + 1) * sizeof *v);
  if (!v) return NULL;
  size_t k = 0;
  for (size_t g = 0; g < n_parts; g++)
    if (parts[g]->n_gpu) memcpy(v + k, parts[g]->gpu, parts[g]->n_gpu * sizeof *v), k += parts[g]->n_gpu;
  qsort(v, *n, sizeof *v, cmp_gpu);
  return v;
}

/* One flow per instance through its ranks' GPU slices, each flow event at
 * its slice's midpoint (bound to that enclosing slice); Perfetto: counted
 * (the slices carry the flow ids). */
static int write_flows(struct ctx *x, struct lens_job_export_part *const *parts, size_t n_parts) {
  size_t n;
  struct lens_job_gpu_slice *v = gpu_by_instance(parts, n_parts, &n);
  if (!v) return -1;
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && v[e].inst == v[i].inst) e++;
    if (e - i >= 2) {
      const struct lens_job_inst *in = &x->j->insts[v[i].inst];
      for (size_t k = i; k < e && !x->proto; k++) {
        const char *ph = k == i ? "s" : k + 1 == e ? "f" : "t";
        sep(x);
        fprintf(x->f, "{\"ph\":\"%s\",\"name\":\"%s #%" PRId64 "\",\"cat\":\"instance\",\"id\":%d,\"pid\":%u,"
                      "\"tid\":%u,\"ts\":",
                ph, in->func ? in->func : "?", in->seq, v[k].inst + 1, pid_of(x, v[k].proc), v[k].tid);
        us(x->f, v[k].mid);
        fputs(",\"bp\":\"e\"}", x->f);
      }
      x->c->flows += e - i;
      x->c->instances_flowed++;
    }
    i = e;
  }
  free(v);
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
    pb_varint(&x->sub, 11, 1000000ull + tid_of(x, s));
    if (ev[k].begin) {
      char name[160];
      slice_name(x, s, name, sizeof name);
      pb_str(&x->sub, 23, name);
      pb_str(&x->sub, 22, kind_name[s->kind]);
      pb_annot_u(x, "rank", (uint64_t)(int64_t)s->rank);
      pb_annot_s(x, "host", x->a->hosts[x->a->host_of_proc[s->proc]].host);
      uint64_t bound = 0;
      int64_t job;
      lens_align_to_job(x->a, s->proc, s->mono, &job, &bound);
      pb_annot_u(x, "align_bound_ns", bound);
      if (s->inst >= 0) {
        const struct lens_job_inst *in = &x->j->insts[s->inst];
        pb_annot_u(x, "seq", (uint64_t)in->seq);
        pb_annot_u(x, "is_last", is_last(in, x->j->ranks[s->row].rank));
        x->c->last_marked += is_last(in, x->j->ranks[s->row].rank);
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

void lens_job_export_proc_facts(const struct lens_model *skel, const struct lens_job_export_opts *o, uint8_t *plugin,
                                uint8_t *in_comm) {
  for (size_t p = 0; p < skel->n_procs; p++) {
    int32_t file = skel->procs[p].file;
    plugin[p] = file >= 0 && (size_t)file < skel->n_files && skel->files[file].producer == LENS_PRODUCER_PLUGIN;
    in_comm[p] = (uint8_t)has_comm(skel, (int32_t)p, o);
  }
}

int lens_job_export_select(size_t n_procs, const uint8_t *plugin, const uint8_t *in_comm, const struct lens_align *a,
                           const uint64_t *min_start, uint8_t *sel, struct lens_job_export_counts *c) {
  int64_t first = INT64_MAX;
  for (size_t p = 0; p < n_procs; p++) {
    int32_t h = p < a->n_procs ? a->host_of_proc[p] : -1;
    int placed = h >= 0 && a->hosts[h].source != LENS_ALIGN_NONE;
    if (!placed && plugin[p]) c->procs_unaligned++;
    sel[p] = placed && in_comm[p];
    int64_t t;
    if (sel[p] && min_start[p] != UINT64_MAX && !lens_align_to_job(a, (int32_t)p, min_start[p], &t, NULL) && t < first)
      first = t;
  }
  /* The earliest aligned time of any selected process, floored to a millisecond. */
  c->origin_job_ns = first == INT64_MAX ? 0 : first - ((first % 1000000) + 1000000) % 1000000;
  return 0;
}

void lens_job_export_part_free(struct lens_job_export_part *p) {
  if (!p) return;
  free(p->host_ranks);
  free(p->gpu);
  free(p);
}

int lens_job_export_group(FILE *out, const struct lens_model *m, size_t pbase, uint32_t track_base, uint64_t seq_id,
                          const struct lens_job *j, const struct lens_align *a, const struct lens_job_export_opts *o,
                          const uint8_t *sel, int64_t origin, struct lens_job_export_part *part) {
  struct ctx x = {.f = out, .m = m, .pbase = pbase, .track_base = track_base, .seq_id = seq_id, .j = j, .a = a,
                  .o = o, .c = &part->counts, .sel = sel, .part = part, .first = 0, .proto = o->perfetto};
  struct vec v = {0};
  int rc = -1;
  if (collect(&x, &v, origin)) goto out;
  if (v.n) qsort(v.v, v.n, sizeof *v.v, cmp_sl);
  if (note_host_ranks(&x, &v)) goto out;
  if (x.proto) pb_varint(&x.pkt, 13, 1); /* sequence_flags: SEQ_INCREMENTAL_STATE_CLEARED, on its first packet */
  place(&x, &v);
  if (note_gpu(&x, &v)) goto out;
  if (x.proto) {
    if (write_perfetto_events(&x, &v, origin)) goto out;
    rc = ferror(out) || x.out.oom || x.pkt.oom || x.sub.oom || x.sub2.oom ? -1 : 0;
    goto out;
  }
  for (size_t i = 0; i < v.n; i++) write_slice(&x, &v.v[i], origin);
  rc = ferror(out) ? -1 : 0;
out:
  free(v.v);
  pb_free(&x.out), pb_free(&x.pkt), pb_free(&x.sub), pb_free(&x.sub2);
  return rc;
}

int lens_job_export_head(FILE *f, const struct lens_model *skel, const struct lens_job *j, const struct lens_align *a,
                         const struct lens_job_export_opts *o, struct lens_job_export_part *const *parts,
                         size_t n_parts, struct lens_job_export_counts *c) {
  struct ctx x = {.f = f, .m = skel, .j = j, .a = a, .o = o, .c = c, .first = 1, .proto = o->perfetto, .seq_id = 1};
  if (x.proto) pb_varint(&x.pkt, 13, 1);
  else fputs("{\"traceEvents\":[", f);
  write_hosts_meta(&x, parts, n_parts);
  int rc = ferror(f) || x.out.oom || x.pkt.oom || x.sub.oom || x.sub2.oom ? -1 : 0;
  pb_free(&x.out), pb_free(&x.pkt), pb_free(&x.sub), pb_free(&x.sub2);
  return rc ? -1 : x.first; /* 1: nothing written yet (a group's first record then has no comma before it) */
}

int lens_job_export_tail(FILE *f, const struct lens_model *skel, const struct lens_job *j, const struct lens_align *a,
                         const struct lens_job_export_opts *o, struct lens_job_export_part *const *parts,
                         size_t n_parts, int first, struct lens_job_export_counts *c) {
  struct ctx x = {.f = f, .m = skel, .j = j, .a = a, .o = o, .c = c, .first = first, .proto = o->perfetto};
  int rc = write_flows(&x, parts, n_parts);
  if (!rc && !x.proto) write_other(&x, c->origin_job_ns);
  return rc || ferror(f) ? -1 : 0;
}
