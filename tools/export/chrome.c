/* See chrome.h. */
#include "export/chrome.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/event_args.h"
#include "export/json_out.h"
#include "export/proxy_levels.h"

/* From tools/reader/starvation.c when linked. */
__attribute__((weak)) int lens_starvation_sample_matches(const struct lens_model *m, const struct lens_sched_sample *s,
                                                         int32_t t);

#define TID_PLACEHOLDER 1000000u /* threads whose tid is unknown: + slot */
#define TID_GPU 100000000u       /* + GPU track index (proxy thread, comm, channel) */
#define TID_SCHED 3000000u       /* + thread */
#define TID_LEVEL 4000000u       /* + thread: proxy state levels */
#define TID_GPU_OVERLAP 200000000u /* + GPU track index: KernelCh overlapping the previous one */

struct ctx {
  FILE *f;
  const struct lens_model *m;
  struct lens_chrome_counts *c;
  uint32_t *cpid;     /* chrome pid per proc */
  uint8_t *gpu_named; /* bitmap: GPU track named, by GPU track index */
  size_t comm_slots;  /* comms per thread in the GPU track index (1 when there are too many) */
  uint8_t *level_named; /* per thread: proxy state track named */
  uint8_t *ovl_named;   /* bitmap: overlap track (thread, channel) named */
  uint64_t *gpu_last;   /* per GPU track index: end of the last slice on it */
  int first;
};

static void sep(struct ctx *x) {
  fputs(x->first ? "\n" : ",\n", x->f);
  x->first = 0;
}

static uint32_t track(const struct lens_model *m, int32_t t) {
  if (t < 0) return TID_PLACEHOLDER;
  return m->threads[t].tid ? m->threads[t].tid : TID_PLACEHOLDER + m->threads[t].slot;
}

/* The rank a process is shown as: its first communicator's. */
static const struct lens_comm *proc_comm(const struct lens_model *m, int32_t p) {
  const struct lens_comm *best = NULL;
  for (size_t i = 0; i < m->n_comms; i++)
    if (m->comms[i].proc == p && (!best || m->comms[i].comm_index < best->comm_index)) best = &m->comms[i];
  return best;
}

static const struct lens_model *sort_m;
static int cmp_proc(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  const struct lens_comm *cx = proc_comm(sort_m, x), *cy = proc_comm(sort_m, y);
  int rx = cx ? cx->rank : -1, ry = cy ? cy->rank : -1;
  if (rx != ry) return rx < ry ? -1 : 1;
  int h = strcmp(sort_m->procs[x].host, sort_m->procs[y].host);
  if (h) return h;
  if (sort_m->procs[x].pid != sort_m->procs[y].pid) return sort_m->procs[x].pid < sort_m->procs[y].pid ? -1 : 1;
  return (x > y) - (x < y);
}

static void meta(struct ctx *x, const char *what, uint32_t pid, uint32_t tid, const char *name, int sort) {
  sep(x);
  fprintf(x->f, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"args\":{", what, pid, tid);
  if (name) {
    lens_json_key(x->f, "name");
    lens_json_str(x->f, name);
  } else {
    fprintf(x->f, "\"sort_index\":%d", sort);
  }
  fputs("}}", x->f);
  x->c->metadata++;
}

static const char *role_label(uint32_t roles) {
  if (roles & LENS_ROLE_PROXY) return "proxy";
  if (roles & LENS_ROLE_PROFILER) return "profiler";
  if (roles & LENS_ROLE_HOSTCB) return "host-callback";
  if (roles & LENS_ROLE_APP) return "app";
  if (roles & LENS_ROLE_NET) return "net";
  if (roles & LENS_ROLE_INIT) return "init";
  return "thread";
}

static void write_metadata(struct ctx *x) {
  const struct lens_model *m = x->m;
  char buf[320];
  for (size_t p = 0; p < m->n_procs; p++) {
    const struct lens_comm *c = proc_comm(m, (int32_t)p);
    const struct lens_proc *pr = &m->procs[p];
    if (c)
      snprintf(buf, sizeof buf, "rank %d (%s:%u) comm %s", c->rank, pr->host, pr->pid, c->name[0] ? c->name : "-");
    else
      snprintf(buf, sizeof buf, "process (%s:%u)", pr->host, pr->pid);
    meta(x, "process_name", x->cpid[p], 0, buf, 0);
    meta(x, "process_sort_index", x->cpid[p], 0, NULL, (int)x->cpid[p]);
  }
  for (size_t t = 0; t < m->n_threads; t++) {
    const struct lens_thread *th = &m->threads[t];
    if (th->proc < 0) continue;
    /* "ncclProxy (proxy, tid 12)": the OS name first, as the trace names the thread */
    snprintf(buf, sizeof buf, "%s (%s, tid %u)", th->name[0] ? th->name : "thread", role_label(th->roles), th->tid);
    meta(x, "thread_name", x->cpid[th->proc], track(m, (int32_t)t), buf, 0);
    meta(x, "thread_sort_index", x->cpid[th->proc], track(m, (int32_t)t), NULL,
         th->roles & (LENS_ROLE_PROXY | LENS_ROLE_PROFILER) ? 10 : th->roles & LENS_ROLE_HOSTCB ? 5 : 0);
  }
}

static void head(struct ctx *x, const char *ph, const char *name, const char *cat, uint32_t pid, uint32_t tid,
                 uint64_t ts) {
  sep(x);
  fprintf(x->f, "{\"ph\":\"%s\",\"name\":", ph);
  lens_json_str(x->f, name);
  fprintf(x->f, ",\"cat\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":", cat, pid, tid);
  lens_json_us(x->f, ts);
}

static void complete(struct ctx *x, const char *name, const char *cat, uint32_t pid, uint32_t tid, uint64_t start,
                     uint64_t stop, const struct lens_event *args_of) {
  head(x, "X", name, cat, pid, tid, start);
  fputs(",\"dur\":", x->f);
  lens_json_us(x->f, stop > start ? stop - start : 0);
  if (args_of) {
    fputs(",\"args\":{", x->f);
    lens_json_event_args(x->f, x->m, args_of);
    fputc('}', x->f);
  }
  fputc('}', x->f);
  x->c->complete++;
}

/* Async pair; extra (may be NULL) adds members to the "b" args. */
static void async_pair(struct ctx *x, const char *name, const char *cat, uint32_t pid, uint32_t tid, uint64_t id,
                       uint64_t start, uint64_t stop, const struct lens_event *args_of, const char *extra) {
  head(x, "b", name, cat, pid, tid, start);
  fprintf(x->f, ",\"id\":\"0x%" PRIx64 "\"", id);
  if (args_of) {
    fputs(",\"args\":{", x->f);
    lens_json_event_args(x->f, x->m, args_of);
    if (extra) fputs(extra, x->f);
    fputc('}', x->f);
  }
  fputc('}', x->f);
  head(x, "e", name, cat, pid, tid, stop > start ? stop : start);
  fprintf(x->f, ",\"id\":\"0x%" PRIx64 "\"}", id);
  x->c->async_pairs++;
}

static const char *op_func(const struct lens_model *m, const struct lens_event *e) {
  for (int d = 0; d < 4 && e; d++) {
    if (e->type == LENS_T_COLL && e->p.coll.func) return e->p.coll.func;
    if (e->type == LENS_T_P2P && e->p.p2p.func) return e->p.p2p.func;
    if (e->type == LENS_T_COLL_API && e->p.coll_api.func) return e->p.coll_api.func;
    if (e->type == LENS_T_P2P_API && e->p.p2p_api.func) return e->p.p2p_api.func;
    if (e->type == LENS_T_CE_COLL && e->p.ce_coll.func) return e->p.ce_coll.func;
    e = e->parent >= 0 ? &m->events[e->parent] : NULL;
  }
  return NULL;
}

static void write_op(struct ctx *x, const struct lens_event *e, size_t idx, uint32_t pid, uint32_t tid) {
  const struct lens_model *m = x->m;
  const char *func = op_func(m, e);
  char name[96], tbuf[32];
  uint64_t tag = lens_event_user_tag(e);
  if (tag) /* "AllReduce, backward": the call's user tag (NCCL 2.31+) */
    snprintf(name, sizeof name, "%s, %s", func ? func : lens_type_name(e->type), lens_tag_label(tag, tbuf, sizeof tbuf));
  else
    snprintf(name, sizeof name, "%s", func ? func : lens_type_name(e->type));
  /* host part: enqueue on the calling thread */
  complete(x, name, lens_type_name(e->type), pid, tid, e->start_mono_ns, e->stop_mono_ns, e);
  int src = LENS_TS_HOST_NOTICE;
  uint64_t done = lens_event_completion(m, e, &src);
  const char *how = done ? lens_time_source_name((uint32_t)src) : "stop (no ProxyOp/KernelCh)";
  if (!done) done = e->stop_mono_ns;
  char extra[160];
  snprintf(extra, sizeof extra, ",\"completion_mono_ns\":%" PRIu64 ",\"completion_source\":\"%s\"", done, how);
  char aname[112];
  snprintf(aname, sizeof aname, "%s in flight", name);
  async_pair(x, aname, "op", pid, tid, idx + 1, e->start_mono_ns, done, e, extra);
  x->c->ops++;
}

static void write_ctrl(struct ctx *x, const struct lens_event *e, uint32_t pid, uint32_t tid) {
  const struct lens_model *m = x->m;
  complete(x, "ProxyCtrl", "ProxyCtrl", pid, tid, e->start_mono_ns, e->stop_mono_ns, e);
  for (uint32_t i = 0; i < e->n_states; i++) {
    const struct lens_state_ev *s = &m->states[e->first_state + i];
    uint64_t end = i + 1 < e->n_states ? m->states[e->first_state + i + 1].ts_mono_ns : e->stop_mono_ns;
    if (end < s->ts_mono_ns) end = s->ts_mono_ns;
    complete(x, lens_state_name(s->state), "ProxyCtrl", pid, tid, s->ts_mono_ns, end, NULL);
    x->c->ctrl_states++;
  }
}

static void write_step(struct ctx *x, const struct lens_event *e, size_t idx, uint32_t pid, uint32_t tid) {
  const struct lens_model *m = x->m;
  char name[48];
  snprintf(name, sizeof name, "Step %d", e->p.proxy_step.step);
  uint64_t stop = e->stop_mono_ns ? e->stop_mono_ns : e->start_mono_ns;
  async_pair(x, name, "ProxyStep", pid, tid, idx + 1, e->start_mono_ns, stop, e, NULL);
  for (uint32_t i = 0; i < e->n_states; i++) { /* phases nested inside the step */
    const struct lens_state_ev *s = &m->states[e->first_state + i];
    uint64_t end = i + 1 < e->n_states ? m->states[e->first_state + i + 1].ts_mono_ns : stop;
    if (end < s->ts_mono_ns) end = s->ts_mono_ns;
    async_pair(x, lens_state_name(s->state), "ProxyStep", pid, tid, idx + 1, s->ts_mono_ns, end, NULL, NULL);
  }
}

/* Names a per-(thread, channel) track once. */
static void name_track(struct ctx *x, uint8_t *named, size_t bit, uint32_t pid, uint32_t tid, const char *fmt, int ch,
                       uint32_t proxy_tid, int sort) {
  if (named[bit / 8] & (1u << (bit % 8))) return;
  named[bit / 8] |= (uint8_t)(1u << (bit % 8));
  char buf[128];
  snprintf(buf, sizeof buf, fmt, ch, proxy_tid);
  meta(x, "thread_name", pid, tid, buf, 0);
  meta(x, "thread_sort_index", pid, tid, NULL, sort);
}

/* KernelCh on the GPU track of its (proxy thread = GPU, communicator,
 * channel): channel numbers are per communicator. A span that starts before
 * the previous one on that track ended (a p2p send/recv pair shares timers;
 * otherwise timer trouble, see its accuracy flags) goes to an "overlapping"
 * track instead, because complete events on one track must nest and we do
 * not move or clip a measured time. */
static void write_kernel_ch(struct ctx *x, const struct lens_event *e, uint32_t pid) {
  const struct lens_model *m = x->m;
  int ch = e->p.kernel_ch.channel & 0xFF;
  size_t comm = x->comm_slots > 1 ? (size_t)(e->comm + 1) : 0;
  size_t bit = ((size_t)e->thread * x->comm_slots + comm) * 256 + (size_t)ch;
  uint32_t ptid = m->threads[e->thread].tid;
  /* the thread that polled it: the proxy, or NCCL 2.31's profiler thread */
  const char *poller = m->threads[e->thread].roles & LENS_ROLE_PROFILER ? "profiler" : "proxy";
  char fmt[200];
  const char *cname = e->comm >= 0 && m->comms[e->comm].name[0] ? m->comms[e->comm].name : "-";
  int mapped = e->acc.gpu_start_mono_ns && e->acc.gpu_stop_mono_ns;
  uint64_t start = mapped ? e->acc.gpu_start_mono_ns : e->start_mono_ns;
  uint64_t stop = mapped ? e->acc.gpu_stop_mono_ns : e->stop_mono_ns;
  if (stop < start) stop = start;
  uint32_t tid;
  if (start < x->gpu_last[bit]) {
    tid = TID_GPU_OVERLAP + (uint32_t)bit;
    snprintf(fmt, sizeof fmt, "GPU channels: ch %%d overlapping, comm %.64s (%s tid %%u)", cname, poller);
    name_track(x, x->ovl_named, bit, pid, tid, fmt, ch, ptid, 200 + ch);
    x->c->gpu_overlaps++;
  } else {
    tid = TID_GPU + (uint32_t)bit;
    snprintf(fmt, sizeof fmt, "GPU channels: ch %%d comm %.64s (%s tid %%u)", cname, poller);
    name_track(x, x->gpu_named, bit, pid, tid, fmt, ch, ptid, 100 + ch);
    x->gpu_last[bit] = stop;
  }
  const char *func = op_func(m, e);
  char name[128];
  snprintf(name, sizeof name, "ch %d %s [%s]", ch, func ? func : "?",
           mapped ? lens_time_source_name(e->acc.time_source) : "host notice");
  complete(x, name, "KernelCh", pid, tid, start, stop, e);
  x->c->gpu_slices++;
}

static void write_event(struct ctx *x, size_t i) {
  const struct lens_model *m = x->m;
  const struct lens_event *e = &m->events[i];
  uint32_t pid = x->cpid[e->proc], tid = track(m, e->thread);
  uint64_t stop = e->stop_mono_ns ? e->stop_mono_ns : e->start_mono_ns;
  char name[128];
  switch (e->type) {
  case LENS_T_COLL:
  case LENS_T_P2P: write_op(x, e, i, pid, tid); break;
  case LENS_T_PROXY_CTRL: write_ctrl(x, e, pid, tid); break;
  case LENS_T_PROXY_STEP: write_step(x, e, i, pid, tid); break;
  case LENS_T_KERNEL_CH: write_kernel_ch(x, e, pid); break;
  case LENS_T_PROXY_OP:
    snprintf(name, sizeof name, "ProxyOp %s ch %d peer %d", e->p.proxy_op.is_send ? "send" : "recv",
             e->p.proxy_op.channel, e->p.proxy_op.peer);
    async_pair(x, name, "ProxyOp", pid, tid, i + 1, e->start_mono_ns, stop, e, NULL);
    break;
  case LENS_T_NET_PLUGIN:
    async_pair(x, "NetPlugin", "NetPlugin", pid, tid, i + 1, e->start_mono_ns, stop, e, NULL);
    break;
  case LENS_T_KERNEL_PHASE: /* host notice times on the reporting thread; the pTimers are in args */
    snprintf(name, sizeof name, "KernelPhase %s ch %d", e->p.kernel_phase.name ? e->p.kernel_phase.name : "?",
             e->p.kernel_phase.channel);
    complete(x, name, "KernelPhase", pid, tid, e->start_mono_ns, stop, e);
    break;
  default: {
    const char *func = op_func(m, e);
    snprintf(name, sizeof name, "%s%s%s", lens_type_name(e->type), func ? " " : "", func ? func : "");
    complete(x, name, lens_type_name(e->type), pid, tid, e->start_mono_ns, stop, e);
  }
  }
}

static void write_starvation(struct ctx *x) {
  const struct lens_model *m = x->m;
  if (!m->n_sched || !lens_starvation_sample_matches) return;
  uint8_t *named = calloc(m->n_threads + 1, 1);
  if (!named) return;
  for (size_t t = 0; t < m->n_threads; t++) {
    const struct lens_thread *th = &m->threads[t];
    if (!(th->roles & (LENS_ROLE_PROXY | LENS_ROLE_PROFILER)) || th->proc < 0) continue;
    uint32_t pid = x->cpid[th->proc], tid = TID_SCHED + (uint32_t)t;
    for (size_t i = 0; i < m->n_sched; i++) {
      const struct lens_sched_sample *s = &m->sched[i].s;
      if (s->kind != LENS_SCHED_RUNQ_WAIT && s->kind != LENS_SCHED_PREEMPT) continue;
      if (!lens_starvation_sample_matches(m, s, (int32_t)t)) continue;
      if (!named[t]) {
        char buf[96];
        snprintf(buf, sizeof buf, "sched: proxy tid %u runnable, not running", th->tid);
        meta(x, "thread_name", pid, tid, buf, 0);
        meta(x, "thread_sort_index", pid, tid, NULL, 11);
        named[t] = 1;
      }
      head(x, "X", s->kind == LENS_SCHED_RUNQ_WAIT ? "run-queue wait" : "preempted", "sched", pid, tid,
           s->start_mono_ns);
      fputs(",\"dur\":", x->f);
      lens_json_us(x->f, s->end_mono_ns > s->start_mono_ns ? s->end_mono_ns - s->start_mono_ns : 0);
      fprintf(x->f, ",\"args\":{\"cpu\":%u,\"culprit_pid\":%u,\"culprit_tid\":%u,\"culprit_comm\":", s->cpu,
              s->culprit_pid, s->culprit_tid);
      lens_json_str(x->f, s->culprit_comm);
      fprintf(x->f, ",\"host_tid\":%u,\"wait_ns\":%" PRIu64 "}}", s->host_tid, s->end_mono_ns - s->start_mono_ns);
      x->c->complete++;
      x->c->starvation++;
    }
  }
  free(named);
}

static void level_slice(void *arg, int32_t t, int level, uint64_t from, uint64_t to) {
  static const char *const names[4] = {"Active", "Sleep", "Idle", "Append"};
  struct ctx *x = arg;
  const struct lens_thread *th = &x->m->threads[t];
  if (th->proc < 0) return;
  uint32_t pid = x->cpid[th->proc], tid = TID_LEVEL + (uint32_t)t;
  if (!x->level_named[t]) {
    char buf[96];
    snprintf(buf, sizeof buf, "proxy state (tid %u)", th->tid);
    meta(x, "thread_name", pid, tid, buf, 0);
    meta(x, "thread_sort_index", pid, tid, NULL, 9);
    x->level_named[t] = 1;
  }
  complete(x, names[level], "ProxyState", pid, tid, from, to, NULL);
  x->c->proxy_levels++;
}

static void write_other(struct ctx *x) {
  const struct lens_model *m = x->m;
  FILE *f = x->f;
  fprintf(f, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"nccl-lens export\","
             "\"clock\":\"CLOCK_MONOTONIC of each host, ts in microseconds\",\"orphan_stops\":%" PRIu64
             ",\"bad_records\":%" PRIu64 ",\"files\":[",
          m->orphan_stops, m->bad_records);
  for (size_t i = 0; i < m->n_files; i++) {
    const struct lens_file *fl = &m->files[i];
    fprintf(f, "%s{\"path\":", i ? "," : "");
    lens_json_str(f, fl->path);
    fprintf(f, ",\"producer\":%u,\"size_bytes\":%" PRIu64 ",\"truncated_bytes\":%" PRIu64 ",\"truncation\":",
            fl->producer, fl->size_bytes, fl->truncated_bytes);
    lens_json_str(f, fl->truncation);
    fprintf(f, ",\"sessions\":%u,\"clean_end\":%s}", fl->n_sessions, fl->clean_end ? "true" : "false");
  }
  fputs("],\"drops\":[", f);
  for (size_t p = 0; p < m->n_procs; p++) {
    const struct lens_drops *d = &m->procs[p].drops;
    fprintf(f,
            "%s{\"pid\":%u,\"ring_full\":%" PRIu64 ",\"no_thread_slot\":%" PRIu64 ",\"null_handle\":%" PRIu64
            ",\"bad_handle\":%" PRIu64 ",\"write_errors\":%" PRIu64 ",\"cupti_records\":%" PRIu64
            ",\"blob_queue_full\":%" PRIu64 "}",
            p ? "," : "", m->procs[p].pid, d->ring_full, d->no_thread_slot, d->null_handle, d->bad_handle,
            d->write_errors, d->cupti_records, d->blob_queue_full);
  }
  fputs("]}\n}\n", f);
}

int lens_export_chrome(FILE *f, const struct lens_model *m, struct lens_chrome_counts *counts) {
  struct lens_chrome_counts dummy;
  struct ctx x = {.f = f, .m = m, .c = counts ? counts : &dummy, .first = 1};
  memset(x.c, 0, sizeof *x.c);
  int32_t *order = malloc((m->n_procs + 1) * sizeof *order);
  x.cpid = malloc((m->n_procs + 1) * sizeof *x.cpid);
  /* GPU tracks per (thread, comm, channel), unless that table would be huge. */
  x.comm_slots = (m->n_threads + 1) * (m->n_comms + 1) <= 65536 ? m->n_comms + 1 : 1;
  size_t n_tracks = (m->n_threads + 1) * x.comm_slots * 256;
  x.gpu_named = calloc(n_tracks / 8 + 1, 1);
  x.level_named = calloc(m->n_threads + 1, 1);
  x.ovl_named = calloc(n_tracks / 8 + 1, 1);
  x.gpu_last = calloc(n_tracks, sizeof *x.gpu_last);
  if (!order || !x.cpid || !x.gpu_named || !x.level_named || !x.ovl_named || !x.gpu_last) {
    free(order), free(x.cpid), free(x.gpu_named), free(x.level_named), free(x.ovl_named), free(x.gpu_last);
    return -1;
  }
  for (size_t p = 0; p < m->n_procs; p++) order[p] = (int32_t)p;
  sort_m = m;
  qsort(order, m->n_procs, sizeof *order, cmp_proc);
  for (size_t k = 0; k < m->n_procs; k++) x.cpid[order[k]] = (uint32_t)k + 1;
  fputs("{\"traceEvents\":[", f);
  write_metadata(&x);
  for (size_t i = 0; i < m->n_events; i++) write_event(&x, i);
  int rc = lens_proxy_levels(m, level_slice, &x);
  write_starvation(&x);
  write_other(&x);
  free(x.level_named);
  free(x.ovl_named);
  free(x.gpu_last);
  free(order);
  free(x.cpid);
  free(x.gpu_named);
  return rc || ferror(f) ? -1 : 0;
}
