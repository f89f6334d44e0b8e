/* See kineto_merge.h. */
#define _GNU_SOURCE
#include "cli/format.h"
#include "export/kineto_merge.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/gpu/gpu_analysis.h"
#include "analysis/job/job.h"
#include "analysis/job/job_part.h"
#include "cli/cli.h"
#include "cli/work_pool.h"
#include "export/json_out.h"
#include "export/kineto_json.h"
#include "export/kineto_match.h"
#include "export/lanes.h"
#include "export/load_traces.h"
#include "lens_safe_fs.h"

/* Rows we add. Kineto's GPU rows are (pid = device, tid = stream) and its
 * CPU rows (OS pid, OS tid); ours take tids far above both: per (stream,
 * channel, lane) on the GPU; on the CPU process, proxy ops per (peer,
 * direction, lane) and their steps per (peer, direction, channel, lane) --
 * a channel's steps overlap at most NCCL_STEPS (8) deep when the proxy keeps
 * up, deeper when it notices late. Slices beyond the last lane share it
 * (counted: lanes_crowded). */
#define KM_TID_CHANNEL 1000000LL    /* + (stream % 1000) * 1000 + lane * 128 + channel % 128 */
#define KM_TID_PROXY_OP 2000000LL   /* + (peer % 1000) * 1000 + is_send * 500 + lane */
#define KM_TID_PROXY_STEP 3000000LL /* + (peer % 1000) * 4096 + is_send * 2048 + (channel % 64) * 32 + lane */
#define KM_CH_LANES 7
#define KM_OP_LANES 64 /* lens_lanes' most */
#define KM_STEP_LANES 32
#define KM_FLOW_ID0 (1LL << 40) /* flow ids: far above CUPTI correlation ids (Kineto's ac2g flows) */
#define KM_UNMATCHED_NAMED 32   /* unmatched kernels named in the file (all are counted) */

/* ---- traces: who is who (first pass, one file at a time) ---- */

#define KM_RANKS_KEPT 64
struct tinfo {
  const char *path;
  int loaded; /* a plugin trace with a process */
  uint32_t pid, outer_pid;
  char host[64];
  int32_t ranks[KM_RANKS_KEPT], nranks[KM_RANKS_KEPT];
  size_t n_ranks;
  size_t proc_base; /* its first proc in the job view */
};

static struct lens_model *load_one(const char *cmd, const char *path) {
  struct lens_load_opts lo = {.no_progress = 1};
  return lens_cli_load(cmd, &path, 1, &lo);
}

static void ident(const struct lens_model *m, struct tinfo *t) {
  if (!m->n_procs) return;
  t->loaded = 1;
  t->pid = m->procs[0].pid, t->outer_pid = m->procs[0].outer_pid;
  snprintf(t->host, sizeof t->host, "%s", m->procs[0].host);
  for (size_t c = 0; c < m->n_comms && t->n_ranks < KM_RANKS_KEPT; c++) {
    int dup = 0;
    for (size_t k = 0; k < t->n_ranks && !dup; k++)
      dup = t->ranks[k] == m->comms[c].rank && t->nranks[k] == m->comms[c].nranks;
    if (dup) continue;
    t->ranks[t->n_ranks] = m->comms[c].rank, t->nranks[t->n_ranks] = m->comms[c].nranks;
    t->n_ranks++;
  }
}

/* The trace of the Kineto file's process: the same rank in a communicator
 * of the job's size and, when the file names its CPU process, the same pid.
 * A process whose trace holds no communicator of the job's size (only
 * subgroups were used) is found by its pid alone, when exactly one trace
 * has it and none has the rank. Returns its index, -1 none (why filled),
 * -2 several. */
static long find_trace(const struct tinfo *t, size_t n, const struct kj_scan *s, char *why, size_t why_len) {
  long found = -1, by_pid = -1;
  size_t hits = 0, pid_hits = 0, rank_hits = 0;
  for (size_t i = 0; i < n; i++) {
    if (!t[i].loaded) continue;
    int rank_ok = 0, pid_ok = 0;
    for (size_t k = 0; k < t[i].n_ranks && !rank_ok; k++)
      rank_ok = s->have_rank && t[i].ranks[k] == s->rank && (s->world_size < 0 || t[i].nranks[k] == s->world_size);
    for (size_t k = 0; k < s->n_cpu_pids && !pid_ok; k++)
      pid_ok = (int64_t)t[i].pid == s->cpu_pids[k] || (t[i].outer_pid && (int64_t)t[i].outer_pid == s->cpu_pids[k]);
    int ok = s->have_rank ? rank_ok && (pid_ok || !s->n_cpu_pids) : pid_ok;
    if (ok) found = (long)i, hits++;
    if (pid_ok) by_pid = (long)i, pid_hits++;
    rank_hits += rank_ok;
  }
  if (hits > 1) {
    snprintf(why, why_len, "%zu traces could be its process (same rank and pid): give only one run's traces", hits);
    return -2;
  }
  if (found < 0 && pid_hits == 1 && !rank_hits) found = by_pid;
  if (found < 0) {
    char who[96] = "";
    if (s->have_rank) snprintf(who, sizeof who, "rank %" PRId64 " of %" PRId64, s->rank, s->world_size);
    if (s->n_cpu_pids)
      snprintf(who + strlen(who), sizeof who - strlen(who), "%spid %" PRId64, *who ? ", " : "", s->cpu_pids[0]);
    snprintf(why, why_len, "no nccl-lens trace of its process (%s) among the %zu given",
             *who ? who : "no rank and no CPU process in the file", n);
  }
  return found;
}

/* ---- the job view (several ranks): execution, wait and last rank ---- */

struct jrow {
  int32_t event;
  uint32_t inst, row;
};
static int by_event(const void *a, const void *b) {
  const struct jrow *x = a, *y = b;
  return x->event < y->event ? -1 : x->event > y->event;
}

struct jview {
  struct lens_job_part *parts;
  size_t n_parts;
  struct lens_job j;
  int built;
};

/* ---- what one merge inserts ---- */

struct slice {
  int64_t pid, row, ts, dur;
  int32_t ev, launch;
  int kind;
};
enum { SL_CHANNEL, SL_OP, SL_STEP };

struct emit {
  const struct lens_model *m;
  const struct kj_scan *s;
  const struct km_result *r;
  int64_t cpu_pid;
  const struct jrow *jr;
  size_t n_jr;
  const struct lens_job *j;
  struct slice *sl;
  size_t n_sl;
  uint64_t *edit;
  size_t n_edit;
  size_t kch_placed, kch_outside, ops, steps, flows, lanes_crowded;
  double worst_outside_ns;
  const char *trace_path;
};

static const struct km_fit *fit_of(const struct km_result *r, const struct km_launch *l) {
  return l->fit >= 0 ? &r->fits[l->fit] : NULL;
}

static int add_slice(struct emit *x, size_t *cap, struct slice s) {
  if (x->n_sl == *cap) {
    size_t nc = *cap ? *cap * 2 : 1024;
    struct slice *n = realloc(x->sl, nc * sizeof *n);
    if (!n) return -1;
    x->sl = n, *cap = nc;
  }
  x->sl[x->n_sl++] = s;
  return 0;
}

static int by_track(const void *a, const void *b) {
  const struct slice *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->dur > y->dur ? -1 : x->dur < y->dur;
}

/* Every channel slice, proxy op and step of the matched launches, on our
 * rows, lanes assigned (complete events on one row must nest). */
static int collect(struct emit *x) {
  const struct lens_model *m = x->m;
  const struct km_result *r = x->r;
  size_t cap = 0;
  for (size_t i = 0; i < r->n_l; i++) {
    const struct km_launch *l = &r->l[i];
    if (l->kk < 0) continue;
    const struct kj_kernel *k = &x->s->k[l->kk];
    const struct km_fit *f = fit_of(r, l);
    for (int32_t op = lens_gpu_next_op_of_launch(m, l->ev, -1); op >= 0; op = lens_gpu_next_op_of_launch(m, l->ev, op))
      for (int32_t c = m->events[op].first_child; c >= 0; c = m->events[c].next_sibling) {
        const struct lens_event *e = &m->events[c];
        int timed = f && e->type == LENS_T_KERNEL_CH &&
                    (f->on_gpu ? km_kch_timed(e)
                               : e->acc.gpu_start_mono_ns && e->acc.gpu_stop_mono_ns >= e->acc.gpu_start_mono_ns);
        if (timed) {
          /* on the fit's domain: the raw pTimers (or our host mapping when the fit is on it) */
          int64_t ts =
              km_fit_to_kineto(f, f->on_gpu ? (int64_t)e->p.kernel_ch.start_gpu_ns : (int64_t)e->acc.gpu_start_mono_ns);
          int64_t te =
              km_fit_to_kineto(f, f->on_gpu ? (int64_t)e->p.kernel_ch.stop_gpu_ns : (int64_t)e->acc.gpu_stop_mono_ns);
          double out = 0, bound = f ? f->bound_ns : 0;
          if (ts < k->ts_ns) out = (double)(k->ts_ns - ts);
          if (te > k->ts_ns + k->dur_ns && (double)(te - k->ts_ns - k->dur_ns) > out)
            out = (double)(te - k->ts_ns - k->dur_ns);
          if (out > bound) x->kch_outside++;
          if (out > x->worst_outside_ns) x->worst_outside_ns = out;
          x->kch_placed++;
          int64_t row = KM_TID_CHANNEL + (k->tid % 1000) * 1000 + (e->p.kernel_ch.channel & 127);
          if (add_slice(x, &cap, (struct slice){k->pid, row, ts, te - ts, c, (int32_t)i, SL_CHANNEL})) return -1;
        } else if (e->type == LENS_T_PROXY_OP && e->stop_mono_ns > e->start_mono_ns) {
          int64_t who = ((int64_t)e->p.proxy_op.peer % 1000) * 1000 + (e->p.proxy_op.is_send ? 500 : 0);
          int64_t row = KM_TID_PROXY_OP + who;
          int64_t ts = km_to_kineto(r, (int64_t)e->start_mono_ns);
          int64_t te = km_to_kineto(r, (int64_t)e->stop_mono_ns);
          if (add_slice(x, &cap, (struct slice){x->cpu_pid, row, ts, te - ts, c, (int32_t)i, SL_OP})) return -1;
          x->ops++;
          for (int32_t d = e->first_child; d >= 0; d = m->events[d].next_sibling) {
            const struct lens_event *st = &m->events[d];
            if (st->type != LENS_T_PROXY_STEP || st->stop_mono_ns <= st->start_mono_ns) continue;
            int64_t srow = KM_TID_PROXY_STEP + ((int64_t)e->p.proxy_op.peer % 1000) * 4096 +
                           (e->p.proxy_op.is_send ? 2048 : 0) + ((int64_t)e->p.proxy_op.channel & 63) * KM_STEP_LANES;
            int64_t ss = km_to_kineto(r, (int64_t)st->start_mono_ns);
            int64_t se = km_to_kineto(r, (int64_t)st->stop_mono_ns);
            if (add_slice(x, &cap, (struct slice){x->cpu_pid, srow, ss, se - ss, d, (int32_t)i, SL_STEP})) return -1;
            x->steps++;
          }
        }
      }
  }
  if (x->n_sl) qsort(x->sl, x->n_sl, sizeof *x->sl, by_track);
  struct lens_lanes *ln = malloc(sizeof *ln);
  if (!ln) return -1;
  int64_t base_pid = 0, base_row = -1; /* the track (before lanes) of the slice before */
  for (size_t i = 0; i < x->n_sl; i++) {
    struct slice *s = &x->sl[i];
    if (s->pid != base_pid || s->row != base_row) {
      x->lanes_crowded += base_row >= 0 ? ln->crowded : 0;
      lens_lanes_reset(ln);
      base_pid = s->pid, base_row = s->row;
    }
    int lane = lens_lanes_place(ln, s->ts, s->ts + s->dur);
    int max = (s->kind == SL_CHANNEL ? KM_CH_LANES : s->kind == SL_OP ? KM_OP_LANES : KM_STEP_LANES) - 1;
    if (lane > max) lane = max, x->lanes_crowded++;
    s->row += s->kind == SL_CHANNEL ? (int64_t)lane * 128 : lane;
  }
  if (x->n_sl) x->lanes_crowded += ln->crowded;
  free(ln);
  /* by final row: each row named once (tail) */
  if (x->n_sl) qsort(x->sl, x->n_sl, sizeof *x->sl, by_track);
  return 0;
}

static const char *op_func(const struct lens_event *op) {
  return op->type == LENS_T_COLL ? op->p.coll.func : op->p.p2p.func;
}

/* ---- pass 2 callbacks ---- */

static long kernel_at(const struct kj_scan *s, uint64_t index) {
  size_t lo = 0, hi = s->n_k;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->k[mid].index < index)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->n_k && s->k[lo].index == index ? (long)lo : -1;
}

static const struct jrow *jrow_of(const struct emit *x, int32_t ev) {
  size_t lo = 0, hi = x->n_jr;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (x->jr[mid].event < ev)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < x->n_jr && x->jr[lo].event == ev ? &x->jr[lo] : NULL;
}

/* What really ran, appended to the kernel's args. */
static void args_for(void *ctx, uint64_t index, FILE *o) {
  struct emit *x = ctx;
  long kj = kernel_at(x->s, index);
  if (kj < 0 || x->r->kk_launch[kj] < 0) return;
  const struct km_launch *l = &x->r->l[x->r->kk_launch[kj]];
  const struct lens_model *m = x->m;
  char funcs[128] = "";
  const char *algo = NULL, *proto = NULL;
  uint64_t bytes = 0, chmask[2] = {0, 0};
  int64_t seq = -1;
  int n_ops = 0, planned = 0;
  uint64_t comm = 0;
  int32_t first_op = -1;
  for (int32_t op = lens_gpu_next_op_of_launch(m, l->ev, -1); op >= 0; op = lens_gpu_next_op_of_launch(m, l->ev, op)) {
    const struct lens_event *e = &m->events[op];
    if (first_op < 0) first_op = op;
    n_ops++;
    const char *f = op_func(e);
    if (f && !strstr(funcs, f) && strlen(funcs) + strlen(f) + 2 < sizeof funcs)
      snprintf(funcs + strlen(funcs), sizeof funcs - strlen(funcs), "%s%s", *funcs ? "+" : "", f);
    bytes += lens_event_bytes(m, e);
    if (e->type == LENS_T_COLL) {
      if (!algo) algo = e->p.coll.algo, proto = e->p.coll.proto, seq = (int64_t)e->p.coll.seq;
      if (e->p.coll.n_channels > planned) planned = e->p.coll.n_channels;
    } else if (e->p.p2p.n_channels > planned) {
      planned = e->p.p2p.n_channels;
    }
    if (!comm && e->comm >= 0) comm = m->comms[e->comm].comm_id;
    for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling)
      if (m->events[c].type == LENS_T_KERNEL_CH) {
        int ch = m->events[c].p.kernel_ch.channel & 127;
        chmask[ch >> 6] |= 1ull << (ch & 63);
      }
  }
  int ran = __builtin_popcountll(chmask[0]) + __builtin_popcountll(chmask[1]);
  fputs(",\"nccl_lens func\":", o);
  lens_json_str(o, funcs);
  if (algo) {
    fputs(",\"nccl_lens algorithm\":", o);
    lens_json_str(o, algo);
    fputs(",\"nccl_lens protocol\":", o);
    lens_json_str(o, proto && *proto ? proto : "");
  }
  fprintf(o, ",\"nccl_lens channels\":%d,\"nccl_lens bytes\":%" PRIu64, ran ? ran : planned, bytes);
  if (seq >= 0) fprintf(o, ",\"nccl_lens seq\":%" PRId64, seq);
  fputs(",\"nccl_lens comm\":", o);
  lens_json_comm_id(o, comm); /* 0x + 16 hex digits, as every view (docs/cli.md) */
  fprintf(o, ",\"nccl_lens ops\":%d,\"nccl_lens match\":\"%s\"", n_ops,
          l->by == KM_BY_CORRELATION ? "correlation"
          : l->by == KM_BY_ORDER_GAP ? "order"
                                     : "order+time");
  const struct km_fit *f = fit_of(x->r, l);
  if (f) {
    fputs(",\"nccl_lens start residual us\":", o);
    lens_json_us_signed(o, x->s->k[kj].ts_ns - km_fit_to_kineto(f, km_launch_x(l, f)));
  }
  /* several ranks: the instance as the job view decomposed it */
  const struct jrow *jr = first_op >= 0 ? jrow_of(x, first_op) : NULL;
  if (jr && x->j) {
    const struct lens_job_inst *in = &x->j->insts[jr->inst];
    const struct lens_job_rank *rk = &x->j->ranks[jr->row];
    if (lens_job_inst_decomposed(in)) {
      fputs(",\"nccl_lens exec us\":", o);
      lens_json_us(o, in->exec_ns);
      fputs(",\"nccl_lens wait us\":", o);
      lens_json_us(o, rk->wait_ns);
      fprintf(o, ",\"nccl_lens last rank\":%d,\"nccl_lens ranks seen\":%d", (int)in->last_rank, in->ranks_seen);
    }
  }
}

/* A time of ours as the file writes its own: ns as µs with three decimals,
 * or, in a file of whole microseconds (pre-2024 files hold absolute epoch
 * µs, which a double only keeps to a quarter µs), rounded to the µs. The
 * rounding is monotone, so slices that nest still nest. */
static int64_t file_ns(const struct emit *x, int64_t ns) {
  if (x->r->ts_resolution_ns < 1000) return ns;
  int64_t q = ns / 1000, rem = ns % 1000;
  if (rem < 0) q--, rem += 1000;
  return (q + (rem >= 500)) * 1000;
}
static void put_ts(const struct emit *x, FILE *o, int64_t ns) {
  int64_t v = file_ns(x, ns);
  if (x->r->ts_resolution_ns >= 1000) fprintf(o, "%" PRId64, v / 1000);
  else lens_json_us_signed(o, v);
}

static void meta_thread(FILE *o, int64_t pid, int64_t tid, const char *name) {
  fprintf(o,
          ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"args\":{\"name\":", pid,
          tid);
  lens_json_str(o, name);
  fprintf(o,
          "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
          ",\"args\":{\"sort_index\":%" PRId64 "}}",
          pid, tid, tid);
}

static void flow(struct emit *x, FILE *o, const struct kj_kernel *k, int64_t pid, int64_t tid, int64_t ts) {
  long long id = KM_FLOW_ID0 + (long long)x->flows++;
  fprintf(o, ",\n{\"ph\":\"s\",\"id\":%lld,\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", id, k->pid, k->tid);
  put_ts(x, o, k->ts_ns);
  fputs(",\"cat\":\"nccl_lens\",\"name\":\"nccl_lens\"}", o);
  fprintf(o, ",\n{\"ph\":\"f\",\"id\":%lld,\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", id, pid, tid);
  put_ts(x, o, ts);
  fputs(",\"cat\":\"nccl_lens\",\"name\":\"nccl_lens\",\"bp\":\"e\"}", o);
}

static void tail(void *ctx, FILE *o) {
  struct emit *x = ctx;
  const struct lens_model *m = x->m;
  x->flows = 0;
  for (size_t i = 0; i < x->n_sl; i++) {
    const struct slice *s = &x->sl[i];
    if (!i || s->pid != x->sl[i - 1].pid || s->row != x->sl[i - 1].row) {
      char name[96];
      const struct lens_event *e = &m->events[s->ev];
      if (s->kind == SL_CHANNEL)
        snprintf(name, sizeof name, "nccl-lens channel %d (stream %" PRId64 ")", e->p.kernel_ch.channel,
                 x->s->k[x->r->l[s->launch].kk].tid);
      else if (s->kind == SL_OP)
        snprintf(name, sizeof name, "nccl-lens proxy ops %s peer %d", e->p.proxy_op.is_send ? "send to" : "recv from",
                 e->p.proxy_op.peer);
      else {
        const struct lens_event *op = &m->events[e->parent];
        snprintf(name, sizeof name, "nccl-lens proxy steps %s peer %d ch %d",
                 op->p.proxy_op.is_send ? "send to" : "recv from", op->p.proxy_op.peer, op->p.proxy_op.channel);
      }
      meta_thread(o, s->pid, s->row, name);
    }
  }
  for (size_t i = 0; i < x->n_sl; i++) {
    const struct slice *s = &x->sl[i];
    const struct lens_event *e = &m->events[s->ev];
    const struct km_launch *l = &x->r->l[s->launch];
    const struct kj_kernel *k = &x->s->k[l->kk];
    fputs(",\n{\"ph\":\"X\",\"cat\":", o);
    const struct lens_event *op = e->parent >= 0 ? &m->events[e->parent] : NULL;
    if (s->kind == SL_STEP && op) op = op->parent >= 0 ? &m->events[op->parent] : NULL;
    const char *func = op && (op->type == LENS_T_COLL || op->type == LENS_T_P2P) ? op_func(op) : NULL;
    char name[96];
    if (s->kind == SL_CHANNEL) {
      lens_json_str(o, "nccl_lens_channel");
      snprintf(name, sizeof name, "%s ch%d", func ? func : "?", e->p.kernel_ch.channel);
    } else if (s->kind == SL_OP) {
      lens_json_str(o, "nccl_lens_proxy");
      snprintf(name, sizeof name, "%s %s peer %d ch%d", func ? func : "?", e->p.proxy_op.is_send ? "send" : "recv",
               e->p.proxy_op.peer, e->p.proxy_op.channel);
    } else {
      lens_json_str(o, "nccl_lens_proxy_step");
      snprintf(name, sizeof name, "step %d", e->p.proxy_step.step);
    }
    fputs(",\"name\":", o);
    lens_json_str(o, name);
    fprintf(o, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", s->pid, s->row);
    put_ts(x, o, s->ts);
    fputs(",\"dur\":", o);
    int64_t d = file_ns(x, s->ts + s->dur) - file_ns(x, s->ts); /* the end rounded, not the duration */
    if (x->r->ts_resolution_ns >= 1000) fprintf(o, "%" PRId64, d / 1000);
    else lens_json_us_signed(o, d);
    fprintf(o, ",\"args\":{\"kernel correlation\":%" PRId64, k->correlation);
    if (op && op->type == LENS_T_COLL) fprintf(o, ",\"seq\":%" PRIu64, op->p.coll.seq);
    if (op && op->comm >= 0) {
      fputs(",\"comm_id\":", o);
      lens_json_comm_id(o, m->comms[op->comm].comm_id);
    }
    if (s->kind == SL_CHANNEL) {
      fprintf(o, ",\"channel\":%d,\"clock\":\"GPU (our clock map, then the fit to this file's kernels)\"",
              e->p.kernel_ch.channel);
    } else if (s->kind == SL_OP) {
      fprintf(o,
              ",\"steps\":%d,\"chunk size\":%d,\"channel\":%d,\"clock\":\"host CLOCK_MONOTONIC + (REALTIME - "
              "MONOTONIC)\"",
              e->p.proxy_op.n_steps, e->p.proxy_op.chunk_size, e->p.proxy_op.channel);
    }
    fputs("}}", o);
    if (s->kind != SL_STEP) flow(x, o, k, s->pid, s->row, s->ts);
  }
}

static void meta(void *ctx, FILE *o) {
  struct emit *x = ctx;
  const struct km_result *r = x->r;
  const struct kj_scan *s = x->s;
  size_t matched = r->by_corr + r->by_order + r->by_gap;
  double worst_bound = 0, worst_res = 0;
  for (size_t i = 0; i < r->n_fits; i++) {
    if (r->fits[i].bound_ns > worst_bound) worst_bound = r->fits[i].bound_ns;
    if (r->fits[i].residual_ns > worst_res) worst_res = r->fits[i].residual_ns;
  }
  fprintf(o, "{\"writer\":\"nccl-lens export --format kineto %s\",\"trace\":", LENS_VERSION);
  lens_json_str(o, x->trace_path);
  fprintf(o, ",\"process\":{\"pid\":%u,\"host\":", x->m->procs[0].pid);
  lens_json_str(o, x->m->procs[0].host);
  fprintf(o,
          "},\n\"nccl_kernels\":%zu,\"matched\":%zu,\"matched_by_correlation\":%zu,\"matched_by_order_time\":%zu,"
          "\"matched_by_order_between_neighbours\":%zu,\"unmatched\":%zu,\"ambiguous\":%zu,\"nccl_kernels_unreadable\":"
          "%zu,\"streams_misaligned\":%zu,\"misaligned_worst_residual_ns\":%.1f,",
          s->n_k, matched, r->by_corr, r->by_order, r->by_gap, s->n_k - matched, r->ambiguous, s->kernels_unreadable,
          r->misfit_streams, r->misfit_worst_ns);
  size_t lu = 0;
  for (size_t i = 0; i < r->n_l; i++) lu += r->l[i].kk < 0;
  fprintf(o,
          "\"our_launches\":%zu,\"our_launches_unmatched\":%zu,\"our_graph_launches\":%zu,"
          "\"our_launches_without_gpu_time\":%zu,\n\"unmatched_kernels\":[",
          r->n_l, lu, r->launches_graph, r->launches_no_gpu_time);
  size_t named = 0;
  for (size_t j = 0; j < s->n_k && named < KM_UNMATCHED_NAMED; j++) {
    if (r->kk_launch[j] >= 0) continue;
    fputs(named++ ? ",{\"name\":" : "{\"name\":", o);
    lens_json_str(o, s->k[j].name);
    fprintf(o, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", s->k[j].pid, s->k[j].tid);
    lens_json_us_signed(o, s->k[j].ts_ns);
    fputs("}", o);
  }
  fputs("],\n\"clock\":{\"realtime_minus_monotonic_ns\":", o);
  fprintf(o, "%" PRId64 ",\"source\":", r->c_ns);
  lens_json_str(o, r->c_source);
  fputs(",\"samples_spread_ns\":", o);
  lens_json_double(o, r->c_spread_ns);
  fputs(",\"our_gpu_map_bound_ns\":", o);
  lens_json_double(o, r->map_bound_ns);
  fputs(",\"ts_resolution_ns\":", o);
  lens_json_double(o, r->ts_resolution_ns);
  fputs(",\"residual_ns\":", o);
  lens_json_double(o, worst_res);
  fputs(",\"bound_ns\":", o);
  lens_json_double(o, worst_bound);
  fputs(",\"fits\":[", o);
  for (size_t i = 0; i < r->n_fits; i++) {
    const struct km_fit *f = &r->fits[i];
    fputs(i ? ",{\"our_stream\":" : "{\"our_stream\":", o);
    lens_json_hex(o, f->our_stream);
    fprintf(o, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"pairs\":%zu,\"offset_ns\":", f->dev, f->stream, f->pairs);
    lens_json_double(o, f->a_ns);
    fprintf(o, ",\"on\":\"%s\",\"drift_ppm\":", f->on_gpu ? "GPU timers (pTimer)" : "host clock");
    lens_json_double(o, f->slope * 1e6);
    fputs(",\"residual_ns\":", o);
    lens_json_double(o, f->residual_ns);
    fputs(",\"bound_ns\":", o);
    lens_json_double(o, f->bound_ns);
    fputs("}", o);
  }
  fprintf(o, "]},\n\"kernel_ch\":%zu,\"kernel_ch_outside_bound\":%zu,\"kernel_ch_worst_outside_ns\":", x->kch_placed,
          x->kch_outside);
  lens_json_double(o, x->worst_outside_ns);
  fprintf(o, ",\"proxy_ops\":%zu,\"proxy_steps\":%zu,\"flows\":%zu,\"lanes_crowded\":%zu}\n", x->ops, x->steps,
          x->flows, x->lanes_crowded);
}

/* ---- output files ---- */

/* A Kineto file's name in the output directory: its own, without its directories. */
static const char *base_name(const char *p) {
  const char *b = strrchr(p, '/');
  return b ? b + 1 : p;
}

/* Writes OUT_DIR/<basename of in> through a fresh O_EXCL temporary; an
 * existing output is never replaced. 0, or -1 with err. */
static int write_out(int dirfd, const char *in, const struct kj_scan *s, const struct kj_insert *ins, char *out_name,
                     size_t out_len, char *err, size_t err_len) {
  const char *base = base_name(in);
  snprintf(out_name, out_len, "%s", base);
  struct stat st;
  if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    snprintf(err, err_len, "%s exists in the output directory: not replaced", base);
    return -1;
  }
  char tmp[300];
  int fd = lens_tmp_create(dirfd, base, 0644, tmp, sizeof tmp);
  if (fd < 0) {
    snprintf(err, err_len, "cannot create a file in the output directory: %s", strerror(errno));
    return -1;
  }
  size_t bl = strlen(base);
  int gz = bl > 3 && !strcmp(base + bl - 3, ".gz");
  if (kj_rewrite(in, s, fd, gz, ins, err, err_len)) {
    unlinkat(dirfd, tmp, 0);
    return -1;
  }
  if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 || lens_tmp_commit(dirfd, tmp, base)) {
    unlinkat(dirfd, tmp, 0);
    snprintf(err, err_len, "cannot write %s: %s", base, errno ? strerror(errno) : "it appeared meanwhile");
    return -1;
  }
  return 0;
}

/* The job view's rows of one process (proc index in the view). */
static struct jrow *rows_of(const struct lens_job *j, size_t proc, size_t *n) {
  *n = 0;
  size_t cap = 0;
  struct jrow *v = NULL;
  for (size_t i = 0; i < j->n_insts; i++)
    for (size_t k = j->insts[i].first_rank; k < j->insts[i].first_rank + j->insts[i].n_ranks && k < j->n_ranks; k++) {
      if (j->ranks[k].proc != (int32_t)proc) continue;
      if (*n == cap) {
        cap = cap ? cap * 2 : 256;
        struct jrow *nv = realloc(v, cap * sizeof *nv);
        if (!nv) {
          free(v);
          *n = 0;
          return NULL;
        }
        v = nv;
      }
      v[(*n)++] = (struct jrow){j->ranks[k].event, (uint32_t)i, (uint32_t)k};
    }
  if (*n) qsort(v, *n, sizeof *v, by_event);
  return v;
}

/* One Kineto file. 0 written (merged or unchanged), -1 after an error line. */
static int merge_one(const char *cmd, const struct lens_kineto_merge_opts *o, int dirfd, const char *in,
                     const struct tinfo *ti, const struct jview *jv, FILE *out) {
  char err[512], why[PATH_MAX + 512], out_name[256];
  struct kj_scan s;
  int rc = -1;
  struct lens_model *m = NULL;
  struct km_result r = {0};
  struct emit x = {0};
  if (kj_scan_file(in, &s, err, sizeof err)) {
    lens_cli_error(cmd, "%s", err);
    goto out;
  }
  if (s.already_merged) {
    lens_cli_error(cmd, "%s already holds a merge (its \"nccl_lens\" key): merge into the profiler's own file", in);
    goto out;
  }
  struct kj_insert none = {0};
  long t = find_trace(ti, o->n_traces, &s, why, sizeof why);
  if (t >= 0 && !s.n_k) snprintf(why, sizeof why, "it holds no NCCL kernel"), t = -1;
  if (t >= 0) {
    m = load_one(cmd, ti[t].path);
    if (!m || !m->n_procs) {
      if (m)
        snprintf(why, sizeof why, "its trace %s holds no process", ti[t].path), t = -1;
      else
        goto out;
    }
  }
  if (t >= 0) {
    int32_t procs[1] = {0};
    if (km_match(m, procs, 1, &s, &r)) {
      lens_cli_error(cmd, "%s: out of memory", in);
      goto out;
    }
    if (!r.by_corr && !r.by_order) { /* order alone never stands without a time match around it */
      if (r.misfit_streams) /* the launches are there, but no alignment lies on the GPU clock's line */
        snprintf(why, sizeof why,
                 "none of its %zu NCCL kernels matches one of the %zu launches of %s: the best alignment is off the GPU "
                 "clock's line by %.1f us (a wall clock off by more than the kernels' spacing?)",
                 s.n_k, r.n_l, ti[t].path, r.misfit_worst_ns / 1000.0);
      else if (r.nearest_ns > KM_WINDOW_NS) /* no first guess was tried: say how far the nearest one was */
        snprintf(why, sizeof why,
                 "none of its %zu NCCL kernels lies within %.0f ms of one of the %zu launches of %s: the nearest is "
                 "%.1f ms away (another run, or a wall clock off by more than %.0f ms?)",
                 s.n_k, KM_WINDOW_NS / 1e6, r.n_l, ti[t].path, r.nearest_ns / 1e6, KM_WINDOW_NS / 1e6);
      else
        snprintf(why, sizeof why,
                 "none of its %zu NCCL kernels matches one of the %zu launches of %s: no alignment pairs them "
                 "(another run, or a wall clock off by more than the kernels' spacing?)",
                 s.n_k, r.n_l, ti[t].path);
      t = -1;
    }
  }
  if (t < 0) {
    if (write_out(dirfd, in, &s, &none, out_name, sizeof out_name, err, sizeof err)) {
      lens_cli_error(cmd, "%s: %s", in, err);
      goto out;
    }
    lens_cli_error(cmd, "%s: copied unchanged: %s", in, why);
    rc = 0;
    goto out;
  }
  x.m = m, x.s = &s, x.r = &r, x.trace_path = ti[t].path;
  x.cpu_pid = m->procs[0].pid;
  for (size_t k = 0; k < s.n_cpu_pids; k++)
    if (s.cpu_pids[k] == (int64_t)m->procs[0].pid || s.cpu_pids[k] == (int64_t)m->procs[0].outer_pid)
      x.cpu_pid = s.cpu_pids[k];
  struct jrow *jr = NULL;
  if (jv->built) {
    jr = rows_of(&jv->j, ti[t].proc_base, &x.n_jr);
    x.jr = jr, x.j = &jv->j;
  }
  x.edit = malloc((s.n_k ? s.n_k : 1) * sizeof *x.edit);
  if (!x.edit || collect(&x)) {
    free(jr);
    lens_cli_error(cmd, "%s: out of memory", in);
    goto out;
  }
  for (size_t j = 0; j < s.n_k; j++)
    if (r.kk_launch[j] >= 0) x.edit[x.n_edit++] = s.k[j].index;
  struct kj_insert ins = {x.edit, x.n_edit, args_for, tail, meta, &x};
  int w = write_out(dirfd, in, &s, &ins, out_name, sizeof out_name, err, sizeof err);
  free(jr);
  if (w) {
    lens_cli_error(cmd, "%s: %s", in, err);
    goto out;
  }
  size_t matched = r.by_corr + r.by_order + r.by_gap;
  double bound = 0;
  for (size_t i = 0; i < r.n_fits; i++)
    if (r.fits[i].bound_ns > bound) bound = r.fits[i].bound_ns;
  char bound_s[32]; /* a real GPU's fit is tens of ns: "0.0 us" said nothing (H200, docs/gpu-check.md) */
  lens_fmt_ns(bound, bound_s, sizeof bound_s);
  fprintf(out, "wrote %s/%s: %zu of %zu NCCL kernels matched, fit bound %s\n", o->out_dir, out_name, matched, s.n_k,
          bound_s);
  fprintf(out, "  matched by correlation %zu, by order and time %zu, by order alone %zu\n", r.by_corr, r.by_order,
          r.by_gap);
  fprintf(out, "  added %zu channel slices (%zu outside the bound), %zu proxy ops, %zu steps, %zu flows\n",
          x.kch_placed, x.kch_outside, x.ops, x.steps, x.flows);
  if (r.misfit_streams)
    fprintf(out,
            "  %zu stream%s left unmatched: the best alignment is off the GPU clock's line by %.1f us (over %.1f):\n"
            "  this file's wall clock or ours was off by more than the kernels' spacing\n",
            r.misfit_streams, r.misfit_streams == 1 ? "" : "s", r.misfit_worst_ns / 1000.0,
            KM_FIT_RESIDUAL_MAX_NS / 1000.0);
  if (matched < s.n_k) {
    size_t shown = 0;
    for (size_t j = 0; j < s.n_k && shown < 3; j++) {
      if (r.kk_launch[j] >= 0) continue;
      /* the name as far as its "(", printable bytes only: it comes from the file */
      char nm[61];
      size_t nl = 0;
      for (const char *c = s.k[j].name; *c && *c != '(' && nl < sizeof nm - 1; c++)
        nm[nl++] = (unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f ? *c : '?';
      nm[nl] = 0;
      fprintf(out, "  unmatched: %s (device %" PRId64 ", stream %" PRId64 ", ts ", nm, s.k[j].pid, s.k[j].tid);
      lens_json_us_signed(out, s.k[j].ts_ns);
      fprintf(out, " us)\n");
      shown++;
    }
    if (s.n_k - matched > shown)
      fprintf(out, "  ... %zu more unmatched, named in the file's nccl_lens.unmatched_kernels\n",
              s.n_k - matched - shown);
  }
  rc = 0;
out:
  free(x.sl);
  free(x.edit);
  km_result_free(&r);
  if (m) lens_model_free(m);
  kj_scan_free(&s);
  return rc;
}

struct first_pass {
  const char *cmd;
  const struct lens_kineto_merge_opts *o;
  struct tinfo *ti;
  struct lens_job_part *parts; /* NULL: one trace, no job view */
};

/* Who trace i is, and (several traces) its part of the job view. */
static int first_one(void *ctx, size_t i, FILE *out) {
  (void)out;
  struct first_pass *f = ctx;
  f->ti[i].path = f->o->traces[i];
  struct lens_model *m = load_one(f->cmd, f->o->traces[i]);
  if (!m) return -1;
  ident(m, &f->ti[i]);
  int rc = 0;
  if (f->parts && (lens_job_map(m, &f->parts[i]) || lens_job_part_own_strings(&f->parts[i])))
    rc = -1, lens_cli_error(f->cmd, "out of memory");
  lens_model_free(m);
  return rc;
}

struct merge_pass {
  const char *cmd;
  const struct lens_kineto_merge_opts *o;
  int dirfd;
  const struct tinfo *ti;
  const struct jview *jv;
  const size_t *same_name; /* per Kineto file: 1 + the earlier file of the same name, 0 none */
};

static int merge_at(void *ctx, size_t i, FILE *out) {
  struct merge_pass *mp = ctx;
  if (mp->same_name[i]) /* its output would be the earlier file's: said here, not raced for */
    return lens_cli_error(mp->cmd, "%s: %s has the same name, and its output is written there: not replaced",
                          mp->o->into[i], mp->o->into[mp->same_name[i] - 1]),
           -1;
  return merge_one(mp->cmd, mp->o, mp->dirfd, mp->o->into[i], mp->ti, mp->jv, out);
}

int lens_export_kineto(const char *cmd, const struct lens_kineto_merge_opts *o) {
  char why[256];
  int dirfd = lens_dir_open(o->out_dir, 1, geteuid(), LENS_DIR_SHARED_STICKY, why, sizeof why);
  if (dirfd < 0) return lens_cli_error(cmd, "output directory %s: %s", o->out_dir, why);
  long threads = o->threads; /* <= 0: the cores */
  int progress = isatty(STDERR_FILENO);
  struct tinfo *ti = calloc(o->n_traces ? o->n_traces : 1, sizeof *ti);
  size_t *same_name = calloc(o->n_into ? o->n_into : 1, sizeof *same_name);
  struct jview jv = {0};
  int rc = 1;
  if (!ti || !same_name) {
    lens_cli_error(cmd, "out of memory");
    goto out;
  }
  /* First pass over the traces, a trace a thread at a time: who each is,
   * and (several ranks) its partial of the job view. */
  int several = o->n_traces > 1;
  if (several && !(jv.parts = calloc(o->n_traces, sizeof *jv.parts))) {
    lens_cli_error(cmd, "out of memory");
    goto out;
  }
  struct first_pass fp = {cmd, o, ti, jv.parts};
  struct lens_cli_pool p1 = {.cmd = cmd, .n = o->n_traces, .threads = threads, .stop_on_fail = 1,
                             .progress = progress ? "reading traces" : NULL, .fn = first_one, .ctx = &fp};
  int r1 = lens_cli_pool_run(&p1);
  if (several) jv.n_parts = o->n_traces; /* every part, filled or still empty: all freed below */
  if (r1) goto out;
  size_t procs = 0;
  for (size_t i = 0; i < o->n_traces; i++) { /* its processes' first index in the job view */
    ti[i].proc_base = procs;
    if (several) procs += jv.parts[i].n_procs;
  }
  if (several) {
    if (lens_job_reduce(jv.parts, jv.n_parts, &jv.j, 0)) {
      lens_cli_error(cmd, "out of memory");
      goto out;
    }
    jv.built = 1;
  }
  for (size_t i = 0; i < o->n_into; i++)
    for (size_t k = 0; k < i && !same_name[i]; k++)
      if (!strcmp(base_name(o->into[i]), base_name(o->into[k]))) same_name[i] = k + 1;
  struct merge_pass mp = {cmd, o, dirfd, ti, &jv, same_name};
  struct lens_cli_pool p2 = {.cmd = cmd, .n = o->n_into, .threads = threads,
                             .progress = progress ? "merging Kineto files" : NULL, .fn = merge_at, .ctx = &mp};
  rc = lens_cli_pool_run(&p2);
out:
  if (jv.built) lens_job_free(&jv.j);
  for (size_t i = 0; i < jv.n_parts; i++) lens_job_part_free(&jv.parts[i]);
  free(jv.parts);
  free(ti);
  free(same_name);
  close(dirfd);
  return rc;
}
