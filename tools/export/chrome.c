/* See chrome.h. Two passes: the complete slices are collected first (each
 * with the track it belongs on), sorted and placed on lanes, so that tracks
 * are declared with their final names and ids before any slice is written;
 * async pairs are written straight from the events. */
#define _GNU_SOURCE /* qsort_r, open_memstream */
#include "export/chrome.h"

#include <inttypes.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/format.h"
#include "export/event_args.h"
#include "export/json_out.h"
#include "export/lanes.h"
#include "analysis/summary/proxy_levels.h"

/* From tools/analysis/sched/starvation.c when linked. */
__attribute__((weak)) int lens_starvation_sample_matches(const struct lens_model *m, const struct lens_sched_sample *s,
                                                         int32_t t);

enum { TK_THREAD, TK_LEVEL, TK_SCHED, TK_GPU };             /* track kinds, in display order per thread */
enum { SK_EVENT, SK_STATE, SK_KCH, SK_LEVEL, SK_SCHED };   /* what a slice draws */

struct xs {
  uint64_t s, e;       /* CLOCK_MONOTONIC ns of its host, e >= s */
  int32_t proc;
  int32_t thread;      /* model thread, -1 unknown */
  int32_t comm;        /* TK_GPU: the KernelCh's communicator (-1 unknown) */
  int32_t ref;         /* event index (SK_EVENT, SK_STATE, SK_KCH), sched index (SK_SCHED), level (SK_LEVEL) */
  uint32_t sub;        /* SK_STATE: state index within the event */
  uint32_t track;      /* after placement: index into ctx.tracks */
  uint16_t ch;         /* TK_GPU: channel */
  uint8_t tkind, skind;
  uint8_t group;       /* the thread's display group (app threads first) */
  uint8_t lane;
};

struct trk {
  size_t first;        /* its first slice in the sorted array */
  uint32_t tid0;       /* lane 0's tid; lane k > 0: lane_tid0 + k - 1 */
  uint32_t lane_tid0;
  int lanes;
};

struct ctx {
  FILE *f;             /* the item being written (a memory stream) */
  char *item; size_t item_len;
  FILE *out;           /* the group's spool: one line per item */
  struct lens_chrome_part *part;
  int item_first;      /* no record written in the item yet */
  uint64_t item_key;   /* its start (ns), or ITEM_META */
  const struct lens_model *m;
  struct lens_chrome_counts *c;
  uint32_t types;
  uint32_t *cpid;      /* chrome pid per proc */
  uint32_t *real_tid;  /* per thread: its real tid when unambiguous in the document, else 0 */
  uint32_t *thread_tid; /* per thread: real_tid, else a synthetic one */
  uint32_t next_synth; /* next synthetic id */
  struct xs *v;
  size_t n, cap;
  int oom;
  struct trk *tracks;
  size_t n_tracks;
  uint8_t *proc_used;  /* per proc: anything written for it */
  uint32_t id_end;     /* the group's ids are below it */
};

#define ITEM_META UINT64_MAX
#define TYPE_SCHED 16 /* lens_chrome_part.type_bytes: event types 0..15, then probe samples */

static int want(const struct ctx *x, uint32_t bit) { return !x->types || (x->types & bit); }
static int want_type(const struct ctx *x, int type) { return type >= 0 && type < 16 && want(x, 1u << type); }

static void sep(struct ctx *x) {
  if (!x->item_first) fputc(',', x->f);
  x->item_first = 0;
}

/* Items: what must stay together in one file (a slice, an operation's
 * async records, a step with its phases, one metadata record), each one
 * line of the spool, "KEY JSON": KEY its start in ns, or M for metadata
 * (every piece of a split file declares every track). */
static void item_begin(struct ctx *x, uint64_t key) {
  x->item_key = key;
  x->item_first = 1;
}

static void item_end(struct ctx *x, int type_bit) {
  if (fflush(x->f)) {
    x->oom = 1;
    return;
  }
  size_t n = x->item_len;
  struct lens_chrome_part *p = x->part;
  if (n) {
    if (x->item_key == ITEM_META) {
      fputs("M ", x->out);
      p->meta_bytes += n, p->meta_items++;
    } else {
      fprintf(x->out, "%" PRIu64 " ", x->item_key);
      p->json_bytes += n, p->items++;
      if (type_bit >= 0 && type_bit <= TYPE_SCHED) p->type_bytes[type_bit] += n + 2;
      if (!p->items_timed++ || x->item_key < p->ts_min) p->ts_min = x->item_key;
      if (x->item_key > p->ts_max) p->ts_max = x->item_key;
    }
    fwrite(x->item, 1, n, x->out);
    fputc('\n', x->out);
  }
  fseek(x->f, 0, SEEK_SET);
}

/* ---- names ---- */

static const struct {
  const char *name;
  uint32_t bits;
} k_types[] = {
    {"group", 1u << LENS_T_GROUP},         {"coll", 1u << LENS_T_COLL},
    {"p2p", 1u << LENS_T_P2P},             {"proxyop", 1u << LENS_T_PROXY_OP},
    {"proxystep", 1u << LENS_T_PROXY_STEP}, {"proxyctrl", 1u << LENS_T_PROXY_CTRL},
    {"kernelch", 1u << LENS_T_KERNEL_CH},  {"netplugin", 1u << LENS_T_NET_PLUGIN},
    {"groupapi", 1u << LENS_T_GROUP_API},  {"collapi", 1u << LENS_T_COLL_API},
    {"p2papi", 1u << LENS_T_P2P_API},      {"kernellaunch", 1u << LENS_T_KERNEL_LAUNCH},
    {"cecoll", 1u << LENS_T_CE_COLL},      {"cesync", 1u << LENS_T_CE_SYNC},
    {"cebatch", 1u << LENS_T_CE_BATCH},    {"kernelphase", 1u << LENS_T_KERNEL_PHASE},
    {"sched", LENS_CHROME_SCHED},          {"all", LENS_CHROME_ALL_TYPES},
};

const char *lens_chrome_type_names(void) {
  return "group, coll, p2p, proxyop, proxystep, proxyctrl, kernelch, netplugin, groupapi, collapi, p2papi, "
         "kernellaunch, cecoll, cesync, cebatch, kernelphase, sched, all";
}

const char *lens_chrome_type_name(int i) {
  uint32_t bit = i == 16 ? LENS_CHROME_SCHED : i >= 0 && i < 16 ? 1u << i : 0;
  for (size_t k = 0; bit && k < sizeof k_types / sizeof k_types[0]; k++)
    if (k_types[k].bits == bit) return k_types[k].name;
  return NULL;
}

int lens_chrome_parse_types(const char *s, uint32_t *types) {
  uint32_t t = 0;
  int any = 0;
  const char *p = s;
  while (*p) {
    size_t len = strcspn(p, ",");
    int found = 0;
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
      if (strlen(k_types[i].name) == len && !strncasecmp(p, k_types[i].name, len)) {
        t |= k_types[i].bits;
        found = 1;
      }
    if (!found) return -1;
    any = 1;
    p += len;
    if (*p == ',') p++;
  }
  if (!any) return -1;
  *types = t;
  return 0;
}

/* "0-3,8" from a sorted list of distinct ranks (at most 32 runs shown, then "..."). */
static void rank_list(char *buf, size_t len, const int32_t *r, size_t n) {
  struct lens_fmt_ranges rl;
  lens_fmt_ranges_begin(&rl, buf, len, 32);
  for (size_t i = 0; i < n; i++) lens_fmt_ranges_add(&rl, r[i], r[i]);
  lens_fmt_ranges_end(&rl);
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Distinct sorted ranks (at most cap) of the thread's events' communicators. */
#define MAX_THREAD_RANKS 64
struct thread_ranks {
  int32_t r[MAX_THREAD_RANKS];
  size_t n;
};

static void add_rank(struct thread_ranks *t, int32_t r) {
  if (r < 0) return;
  for (size_t i = 0; i < t->n; i++)
    if (t->r[i] == r) return;
  if (t->n < MAX_THREAD_RANKS) t->r[t->n++] = r;
}

/* The communicator a process is named after: its largest (then the first initialised). */
static const struct lens_comm *proc_comm(const struct lens_model *m, int32_t p) {
  const struct lens_comm *best = NULL;
  for (size_t i = 0; i < m->n_comms; i++) {
    const struct lens_comm *c = &m->comms[i];
    if (c->proc != p) continue;
    if (!best || c->nranks > best->nranks || (c->nranks == best->nranks && c->comm_index < best->comm_index))
      best = c;
  }
  return best;
}

/* The process's ranks in its naming communicator (same comm_id), sorted. */
static size_t proc_ranks(const struct lens_model *m, int32_t p, int32_t *out, size_t cap) {
  const struct lens_comm *c = proc_comm(m, p);
  size_t n = 0;
  if (!c) return 0;
  for (size_t i = 0; i < m->n_comms && n < cap; i++) {
    const struct lens_comm *o = &m->comms[i];
    if (o->proc != p || o->comm_id != c->comm_id || o->rank < 0) continue;
    size_t k = 0;
    while (k < n && out[k] != o->rank) k++;
    if (k == n) out[n++] = o->rank;
  }
  qsort(out, n, sizeof *out, cmp_i32);
  return n;
}

/* qsort_r: groups are written on several threads at once. */
static int cmp_proc(const void *a, const void *b, void *arg) {
  const struct lens_model *sort_m = arg;
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  int32_t rx[1], ry[1];
  int nx = (int)proc_ranks(sort_m, x, rx, 1), ny = (int)proc_ranks(sort_m, y, ry, 1);
  int kx = nx ? rx[0] : INT32_MAX, ky = ny ? ry[0] : INT32_MAX;
  if (kx != ky) return kx < ky ? -1 : 1;
  int h = strcmp(sort_m->procs[x].host, sort_m->procs[y].host);
  if (h) return h;
  if (sort_m->procs[x].pid != sort_m->procs[y].pid) return sort_m->procs[x].pid < sort_m->procs[y].pid ? -1 : 1;
  return (x > y) - (x < y);
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

static uint8_t thread_group(const struct lens_model *m, int32_t t) {
  if (t < 0) return 4;
  uint32_t r = m->threads[t].roles;
  if (r & (LENS_ROLE_PROXY | LENS_ROLE_PROFILER)) return 3;
  if (r & LENS_ROLE_APP) return 0;
  if (r & LENS_ROLE_HOSTCB) return 1;
  return 2;
}

/* ---- ids ---- */

struct idref {
  uint32_t id;
  int32_t proc;
  int32_t thread; /* -1: the process's pid */
};
static int cmp_idref(const void *a, const void *b) {
  const struct idref *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

/* A real tid is kept when no other thread and no other process of the whole
 * document has that number (a thread whose tid is its own process's pid, the
 * main thread, is fine). Hosts reuse pids and tids, and so do containers. */
int lens_chrome_real_tids(const struct lens_model *m, uint32_t *real_tid) {
  size_t n = 0;
  struct idref *r = malloc((m->n_procs + m->n_threads + 1) * sizeof *r);
  if (!r) return -1;
  for (size_t p = 0; p < m->n_procs; p++) r[n++] = (struct idref){m->procs[p].pid, (int32_t)p, -1};
  for (size_t t = 0; t < m->n_threads; t++)
    r[n++] = (struct idref){m->threads[t].tid, m->threads[t].proc, (int32_t)t};
  qsort(r, n, sizeof *r, cmp_idref);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    int threads = 0, procs_other = 0;
    while (j < n && r[j].id == r[i].id) {
      if (r[j].thread >= 0) threads++;
      if (r[j].proc != r[i].proc) procs_other = 1;
      j++;
    }
    if (r[i].id && r[i].id < LENS_CHROME_SYNTH_ID && threads == 1 && !procs_other)
      for (size_t k = i; k < j; k++)
        if (r[k].thread >= 0) real_tid[r[k].thread] = r[k].id;
    i = j;
  }
  free(r);
  return 0;
}

/* ---- metadata ---- */

static void meta(struct ctx *x, const char *what, uint32_t pid, uint32_t tid, const char *name, int sort) {
  item_begin(x, ITEM_META);
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
  item_end(x, -1);
}

static void write_process_meta(struct ctx *x) {
  const struct lens_model *m = x->m;
  char buf[512], rl[200];
  int32_t ranks[256];
  for (size_t p = 0; p < m->n_procs; p++) {
    if (!x->proc_used[p]) continue;
    const struct lens_proc *pr = &m->procs[p];
    const struct lens_comm *c = proc_comm(m, (int32_t)p);
    size_t nr = proc_ranks(m, (int32_t)p, ranks, 256);
    if (c && nr) {
      rank_list(rl, sizeof rl, ranks, nr);
      snprintf(buf, sizeof buf, "rank%s %s of %d (%.128s) · %.64s pid %u", nr > 1 ? "s" : "", rl, c->nranks,
               c->name[0] ? c->name : "comm", pr->host, pr->pid);
    } else {
      snprintf(buf, sizeof buf, "process · %.64s pid %u", pr->host, pr->pid);
    }
    meta(x, "process_name", x->cpid[p], 0, buf, 0);
    meta(x, "process_sort_index", x->cpid[p], 0, NULL, (int)(x->cpid[p] - LENS_CHROME_SYNTH_ID));
  }
}

static void thread_desc(const struct lens_model *m, int32_t t, const struct thread_ranks *tr, char *buf,
                        size_t len) {
  char rl[200] = "";
  if (tr && tr->n) {
    rl[0] = 'r';
    rank_list(rl + 1, sizeof rl - 1, tr->r, tr->n);
  }
  if (t < 0) {
    snprintf(buf, len, "%s%sunknown thread", rl, rl[0] ? " " : "");
    return;
  }
  const struct lens_thread *th = &m->threads[t];
  snprintf(buf, len, "%s%s%s · %s (tid %u)", rl, rl[0] ? " " : "", role_label(th->roles),
           th->name[0] ? th->name : "thread", th->tid);
}

static void track_meta(struct ctx *x, const struct trk *tk, const struct thread_ranks *ranks, int sort) {
  const struct lens_model *m = x->m;
  const struct xs *s = &x->v[tk->first];
  const struct thread_ranks *tr = s->thread >= 0 ? &ranks[s->thread] : NULL;
  char buf[400], desc[300], rl[200] = "";
  if (tr && tr->n) {
    rl[0] = 'r';
    rank_list(rl + 1, sizeof rl - 1, tr->r, tr->n);
  }
  uint32_t ptid = s->thread >= 0 ? m->threads[s->thread].tid : 0;
  switch (s->tkind) {
  case TK_THREAD: thread_desc(m, s->thread, tr, buf, sizeof buf); break;
  case TK_LEVEL: snprintf(buf, sizeof buf, "%s%sproxy state (tid %u)", rl, rl[0] ? " " : "", ptid); break;
  case TK_SCHED:
    snprintf(buf, sizeof buf, "%s%ssched: proxy tid %u runnable, not running", rl, rl[0] ? " " : "", ptid);
    break;
  default: {
    const struct lens_comm *c = s->comm >= 0 ? &m->comms[s->comm] : NULL;
    const char *poller =
        s->thread >= 0 && (m->threads[s->thread].roles & LENS_ROLE_PROFILER) ? "profiler" : "proxy";
    if (c)
      snprintf(desc, sizeof desc, "r%d GPU ch %u · comm %.64s", c->rank, s->ch, c->name[0] ? c->name : "-");
    else
      snprintf(desc, sizeof desc, "GPU ch %u · comm ?", s->ch);
    snprintf(buf, sizeof buf, "%s (%s tid %u)", desc, poller, ptid);
  }
  }
  for (int l = 0; l < tk->lanes; l++) {
    char name[440];
    uint32_t tid = l ? tk->lane_tid0 + (uint32_t)l - 1 : tk->tid0;
    if (l)
      snprintf(name, sizeof name, "%s · lane %d", buf, l + 1);
    else
      snprintf(name, sizeof name, "%s", buf);
    meta(x, "thread_name", x->cpid[s->proc], tid, name, 0);
    meta(x, "thread_sort_index", x->cpid[s->proc], tid, NULL, sort * 64 + l);
    x->c->tracks++;
  }
  x->c->lanes_extra += (size_t)(tk->lanes - 1);
}

/* ---- collection ---- */

static void push(struct ctx *x, struct xs s) {
  if (s.e < s.s) s.e = s.s;
  if (x->n == x->cap) {
    size_t nc = x->cap ? x->cap * 2 : 4096;
    struct xs *nv = realloc(x->v, nc * sizeof *nv);
    if (!nv) {
      x->oom = 1;
      return;
    }
    x->v = nv;
    x->cap = nc;
  }
  s.group = thread_group(x->m, s.thread);
  x->v[x->n++] = s;
}

static uint64_t stop_of(const struct lens_event *e) { return e->stop_mono_ns ? e->stop_mono_ns : e->start_mono_ns; }

/* KernelCh in mapped GPU time when both ends are mapped, else host notices. */
static void kch_span(const struct lens_event *e, uint64_t *s, uint64_t *t) {
  int mapped = e->acc.gpu_start_mono_ns && e->acc.gpu_stop_mono_ns;
  *s = mapped ? e->acc.gpu_start_mono_ns : e->start_mono_ns;
  *t = mapped ? e->acc.gpu_stop_mono_ns : e->stop_mono_ns;
  if (*t < *s) *t = *s;
}

/* Coll and P2p are async too: a group's tasks (64 for one rank's AlltoAll
 * of 32) all start before the launch and stop after it, one after the other,
 * so they overlap without nesting; each is drawn inside its own operation. */
static int is_async(int type) {
  return type == LENS_T_PROXY_OP || type == LENS_T_PROXY_STEP || type == LENS_T_NET_PLUGIN || type == LENS_T_COLL ||
         type == LENS_T_P2P;
}

static void collect_events(struct ctx *x) {
  const struct lens_model *m = x->m;
  for (size_t i = 0; i < m->n_events && !x->oom; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->proc < 0 || !want_type(x, e->type)) continue;
    x->proc_used[e->proc] = 1;
    if (is_async(e->type)) continue;
    if (e->type == LENS_T_KERNEL_CH) {
      struct xs s = {0, 0, e->proc, e->thread, e->comm, (int32_t)i, 0, 0, (uint16_t)(e->p.kernel_ch.channel & 0xFF),
                     TK_GPU, SK_KCH, 0, 0};
      kch_span(e, &s.s, &s.e);
      push(x, s);
      continue;
    }
    push(x, (struct xs){e->start_mono_ns, stop_of(e), e->proc, e->thread, -1, (int32_t)i, 0, 0, 0, TK_THREAD,
                        SK_EVENT, 0, 0});
    if (e->type != LENS_T_PROXY_CTRL) continue;
    for (uint32_t k = 0; k < e->n_states; k++) {
      const struct lens_state_ev *st = &m->states[e->first_state + k];
      uint64_t end = k + 1 < e->n_states ? m->states[e->first_state + k + 1].ts_mono_ns : stop_of(e);
      push(x, (struct xs){st->ts_mono_ns, end, e->proc, e->thread, -1, (int32_t)i, k, 0, 0, TK_THREAD, SK_STATE,
                          0, 0});
    }
  }
}

static void level_cb(void *arg, int32_t t, int level, uint64_t from, uint64_t to) {
  struct ctx *x = arg;
  const struct lens_thread *th = &x->m->threads[t];
  if (th->proc < 0) return;
  push(x, (struct xs){from, to, th->proc, t, -1, level, 0, 0, 0, TK_LEVEL, SK_LEVEL, 0, 0});
}

static void collect_starvation(struct ctx *x) {
  const struct lens_model *m = x->m;
  if (!m->n_sched || !lens_starvation_sample_matches || !want(x, LENS_CHROME_SCHED)) return;
  for (size_t t = 0; t < m->n_threads; t++) {
    const struct lens_thread *th = &m->threads[t];
    if (!(th->roles & (LENS_ROLE_PROXY | LENS_ROLE_PROFILER)) || th->proc < 0) continue;
    for (size_t i = 0; i < m->n_sched; i++) {
      const struct lens_sched_sample *s = &m->sched[i].s;
      if (s->kind != LENS_SCHED_RUNQ_WAIT && s->kind != LENS_SCHED_PREEMPT) continue;
      if (!lens_starvation_sample_matches(m, s, (int32_t)t)) continue;
      push(x, (struct xs){s->start_mono_ns, s->end_mono_ns, th->proc, (int32_t)t, -1, (int32_t)i, 0, 0, 0,
                          TK_SCHED, SK_SCHED, 0, 0});
      x->proc_used[th->proc] = 1;
    }
  }
}

static int cmp_xs(const void *pa, const void *pb, void *arg) {
  const uint32_t *sort_cpid = arg;
  const struct xs *a = pa, *b = pb;
  uint32_t pa_ = sort_cpid[a->proc], pb_ = sort_cpid[b->proc];
  if (pa_ != pb_) return pa_ < pb_ ? -1 : 1;
  if (a->group != b->group) return a->group < b->group ? -1 : 1;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  if (a->tkind != b->tkind) return a->tkind < b->tkind ? -1 : 1;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->ch != b->ch) return a->ch < b->ch ? -1 : 1;
  if (a->s != b->s) return a->s < b->s ? -1 : 1;
  if (a->e != b->e) return a->e > b->e ? -1 : 1; /* the longer (the parent) first */
  if (a->skind != b->skind) return a->skind < b->skind ? -1 : 1; /* an event before its own states */
  if (a->ref != b->ref) return a->ref < b->ref ? -1 : 1;
  return (a->sub > b->sub) - (a->sub < b->sub);
}

static int same_track(const struct xs *a, const struct xs *b) {
  return a->proc == b->proc && a->thread == b->thread && a->tkind == b->tkind && a->comm == b->comm && a->ch == b->ch;
}

/* Tracks and their lanes; a thread's own track keeps its real tid. */
static int place(struct ctx *x) {
  struct lens_lanes *lanes = malloc(sizeof *lanes);
  size_t cap = 64;
  x->tracks = malloc(cap * sizeof *x->tracks);
  if (!lanes || !x->tracks) {
    free(lanes);
    return -1;
  }
  for (size_t i = 0; i < x->n;) {
    size_t j = i;
    lens_lanes_reset(lanes);
    while (j < x->n && same_track(&x->v[i], &x->v[j])) {
      x->v[j].lane = (uint8_t)lens_lanes_place(lanes, (int64_t)x->v[j].s, (int64_t)x->v[j].e);
      x->v[j].track = (uint32_t)x->n_tracks;
      if (x->v[j].skind == SK_KCH && x->v[j].lane) x->c->gpu_overlaps++;
      j++;
    }
    if (x->n_tracks == cap) {
      struct trk *nt = realloc(x->tracks, (cap *= 2) * sizeof *nt);
      if (!nt) {
        free(lanes);
        return -1;
      }
      x->tracks = nt;
    }
    struct trk *tk = &x->tracks[x->n_tracks++];
    tk->first = i;
    tk->lanes = lanes->used;
    const struct xs *s = &x->v[i];
    tk->tid0 = s->tkind == TK_THREAD && s->thread >= 0 ? x->thread_tid[s->thread] : x->next_synth++;
    tk->lane_tid0 = x->next_synth;
    x->next_synth += (uint32_t)(lanes->used - 1);
    x->c->crowded += lanes->crowded;
    i = j;
  }
  free(lanes);
  return 0;
}

/* ---- slices ---- */

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

static void async_begin(struct ctx *x, const char *name, const char *cat, uint32_t pid, uint32_t tid, uint64_t id,
                        uint64_t ts, const struct lens_event *args_of, const char *extra) {
  head(x, "b", name, cat, pid, tid, ts);
  fprintf(x->f, ",\"id2\":{\"local\":\"0x%" PRIx64 "\"}", id);
  if (args_of) {
    fputs(",\"args\":{", x->f);
    lens_json_event_args(x->f, x->m, args_of);
    if (extra) fputs(extra, x->f);
    fputc('}', x->f);
  }
  fputc('}', x->f);
}

static void async_end(struct ctx *x, const char *name, const char *cat, uint32_t pid, uint32_t tid, uint64_t id,
                      uint64_t ts) {
  head(x, "e", name, cat, pid, tid, ts);
  fprintf(x->f, ",\"id2\":{\"local\":\"0x%" PRIx64 "\"}}", id);
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

static void op_name(const struct lens_model *m, const struct lens_event *e, char *name, size_t len) {
  const char *func = op_func(m, e);
  char tbuf[32];
  uint64_t tag = lens_event_user_tag(e);
  if (tag) /* "AllReduce, backward": the call's user tag (NCCL 2.31+) */
    snprintf(name, len, "%s, %s", func ? func : lens_type_name(e->type), lens_tag_label(tag, tbuf, sizeof tbuf));
  else
    snprintf(name, len, "%s", func ? func : lens_type_name(e->type));
}

/* " r3" for an event of a known communicator, else "". */
static void rank_suffix(const struct lens_model *m, const struct lens_event *e, char *buf, size_t len) {
  if (e->comm >= 0 && m->comms[e->comm].rank >= 0)
    snprintf(buf, len, " r%d", m->comms[e->comm].rank);
  else
    buf[0] = 0;
}

static uint32_t tid_of(const struct ctx *x, const struct xs *s) {
  const struct trk *tk = &x->tracks[s->track];
  return s->lane ? tk->lane_tid0 + s->lane - 1u : tk->tid0;
}

static void write_slice_body(struct ctx *x, const struct xs *s) {
  static const char *const level_names[4] = {"Active", "Sleep", "Idle", "Append"};
  const struct lens_model *m = x->m;
  uint32_t pid = x->cpid[s->proc], tid = tid_of(x, s);
  char name[160];
  switch (s->skind) {
  case SK_STATE: {
    const struct lens_state_ev *st = &m->states[m->events[s->ref].first_state + s->sub];
    complete(x, lens_state_name(st->state), "ProxyCtrl", pid, tid, s->s, s->e, NULL);
    x->c->ctrl_states++;
    return;
  }
  case SK_LEVEL:
    complete(x, level_names[s->ref & 3], "ProxyState", pid, tid, s->s, s->e, NULL);
    x->c->proxy_levels++;
    return;
  case SK_SCHED: {
    const struct lens_sched_sample *sm = &m->sched[s->ref].s;
    head(x, "X", sm->kind == LENS_SCHED_RUNQ_WAIT ? "run-queue wait" : "preempted", "sched", pid, tid, s->s);
    fputs(",\"dur\":", x->f);
    lens_json_us(x->f, s->e - s->s);
    fprintf(x->f, ",\"args\":{\"cpu\":%u,\"culprit_pid\":%u,\"culprit_tid\":%u,\"culprit_comm\":", sm->cpu,
            sm->culprit_pid, sm->culprit_tid);
    lens_json_str(x->f, sm->culprit_comm);
    fprintf(x->f, ",\"host_tid\":%u,\"wait_ns\":%" PRIu64 "}}", sm->host_tid, s->e - s->s);
    x->c->complete++;
    x->c->starvation++;
    return;
  }
  case SK_KCH: {
    const struct lens_event *e = &m->events[s->ref];
    const char *func = op_func(m, e);
    int mapped = e->acc.gpu_start_mono_ns && e->acc.gpu_stop_mono_ns;
    snprintf(name, sizeof name, "ch %u %s [%s]", s->ch, func ? func : "?",
             lens_time_source_name(mapped ? e->acc.time_source : LENS_TS_HOST_NOTICE));
    complete(x, name, "KernelCh", pid, tid, s->s, s->e, e);
    x->c->gpu_slices++;
    return;
  }
  default: break;
  }
  const struct lens_event *e = &m->events[s->ref];
  const char *func = op_func(m, e);
  switch (e->type) {
  case LENS_T_PROXY_CTRL: snprintf(name, sizeof name, "ProxyCtrl"); break;
  case LENS_T_KERNEL_PHASE: /* host notice times on the reporting thread; the pTimers are in args */
    snprintf(name, sizeof name, "KernelPhase %s ch %d", e->p.kernel_phase.name ? e->p.kernel_phase.name : "?",
             e->p.kernel_phase.channel);
    break;
  default: snprintf(name, sizeof name, "%s%s%s", lens_type_name(e->type), func ? " " : "", func ? func : "");
  }
  complete(x, name, lens_type_name(e->type), pid, tid, s->s, s->e, e);
}

static void write_slice(struct ctx *x, const struct xs *s) {
  item_begin(x, s->s);
  write_slice_body(x, s);
  item_end(x, s->skind == SK_SCHED ? TYPE_SCHED : s->skind == SK_LEVEL ? LENS_T_PROXY_CTRL : x->m->events[s->ref].type);
}

/* ---- async ---- */

static uint32_t async_tid(const struct ctx *x, const struct lens_event *e) {
  /* Async slices are drawn on process-scoped tracks of their own; the tid
   * only says which thread issued them. */
  return e->thread >= 0 ? x->thread_tid[e->thread] : x->cpid[e->proc];
}

/* An operation in flight, from its start to its completion (or to its
 * stop, if that comes later), with its enqueue (start -> stop, the host
 * part, as NCCL reports it: category Coll/P2p) nested inside under the same
 * process-scoped id. */
static void write_op(struct ctx *x, const struct lens_event *e, size_t idx) {
  const struct lens_model *m = x->m;
  char name[112], rk[24], aname[160], extra[160];
  op_name(m, e, name, sizeof name);
  rank_suffix(m, e, rk, sizeof rk);
  int src = LENS_TS_HOST_NOTICE;
  uint64_t done = lens_event_completion(m, e, &src);
  const char *how = done ? lens_time_source_name((uint32_t)src) : "stop (no ProxyOp/KernelCh)";
  if (!done) done = e->stop_mono_ns;
  if (done < e->start_mono_ns) done = e->start_mono_ns;
  uint64_t stop = stop_of(e) > e->start_mono_ns ? stop_of(e) : e->start_mono_ns;
  snprintf(extra, sizeof extra, ",\"completion_mono_ns\":%" PRIu64 ",\"completion_source\":\"%s\"", done, how);
  snprintf(aname, sizeof aname, "%s%s in flight", name, rk);
  uint32_t pid = x->cpid[e->proc], tid = async_tid(x, e);
  async_begin(x, aname, "op", pid, tid, idx + 1, e->start_mono_ns, e, extra);
  async_begin(x, name, lens_type_name(e->type), pid, tid, idx + 1, e->start_mono_ns, NULL, NULL);
  async_end(x, name, lens_type_name(e->type), pid, tid, idx + 1, stop);
  async_end(x, aname, "op", pid, tid, idx + 1, done > stop ? done : stop);
  x->c->ops++;
}

/* The step, then its state phases inside it (same id: they nest under it),
 * then its end: written in nesting order, so a viewer that keeps the file's
 * order at equal timestamps closes the innermost first. A phase is kept
 * within the step (a state recorded after the step's stop is drawn up to the
 * stop). */
static void write_step(struct ctx *x, const struct lens_event *e, size_t idx) {
  const struct lens_model *m = x->m;
  char name[64], rk[24];
  rank_suffix(m, e, rk, sizeof rk);
  snprintf(name, sizeof name, "Step %d%s", e->p.proxy_step.step, rk);
  uint64_t start = e->start_mono_ns, stop = stop_of(e);
  if (stop < start) stop = start;
  uint32_t pid = x->cpid[e->proc], tid = async_tid(x, e);
  async_begin(x, name, "ProxyStep", pid, tid, idx + 1, start, e, NULL);
  for (uint32_t i = 0; i < e->n_states; i++) {
    const struct lens_state_ev *s = &m->states[e->first_state + i];
    uint64_t from = s->ts_mono_ns, to = i + 1 < e->n_states ? m->states[e->first_state + i + 1].ts_mono_ns : stop;
    if (from < start) from = start;
    if (from > stop) from = stop;
    if (to > stop) to = stop;
    if (to < from) to = from;
    async_begin(x, lens_state_name(s->state), "ProxyStep", pid, tid, idx + 1, from, NULL, NULL);
    async_end(x, lens_state_name(s->state), "ProxyStep", pid, tid, idx + 1, to);
  }
  async_end(x, name, "ProxyStep", pid, tid, idx + 1, stop);
}

static void write_async(struct ctx *x) {
  const struct lens_model *m = x->m;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->proc < 0 || !want_type(x, e->type)) continue;
    char name[128], rk[24];
    uint32_t pid = x->cpid[e->proc], tid = async_tid(x, e);
    if (!is_async(e->type)) continue;
    item_begin(x, e->start_mono_ns);
    switch (e->type) {
    case LENS_T_COLL:
    case LENS_T_P2P: write_op(x, e, i); break;
    case LENS_T_PROXY_STEP: write_step(x, e, i); break;
    case LENS_T_PROXY_OP:
      rank_suffix(m, e, rk, sizeof rk);
      snprintf(name, sizeof name, "ProxyOp%s %s ch %d peer %d", rk, e->p.proxy_op.is_send ? "send" : "recv",
               e->p.proxy_op.channel, e->p.proxy_op.peer);
      async_begin(x, name, "ProxyOp", pid, tid, i + 1, e->start_mono_ns, e, NULL);
      async_end(x, name, "ProxyOp", pid, tid, i + 1, stop_of(e) > e->start_mono_ns ? stop_of(e) : e->start_mono_ns);
      break;
    case LENS_T_NET_PLUGIN:
      async_begin(x, "NetPlugin", "NetPlugin", pid, tid, i + 1, e->start_mono_ns, e, NULL);
      async_end(x, "NetPlugin", "NetPlugin", pid, tid, i + 1,
                stop_of(e) > e->start_mono_ns ? stop_of(e) : e->start_mono_ns);
      break;
    default: break;
    }
    item_end(x, e->type);
  }
}

void lens_chrome_write_head(FILE *f) { fputs("{\"traceEvents\":[", f); }

void lens_chrome_write_other(FILE *f, const struct lens_model *m, const char *extra) {
  fprintf(f, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"nccl-lens export\","
             "\"clock\":\"CLOCK_MONOTONIC of each host, ts in microseconds\",\"orphan_stops\":%" PRIu64
             ",\"bad_records\":%" PRIu64 ",\"synthetic_ids_from\":%u,%s\"files\":[",
          m->orphan_stops, m->bad_records, LENS_CHROME_SYNTH_ID, extra ? extra : "");
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

/* A proxy (or profiler) thread is its GPU's: named after its own rank, not
 * after the other ranks whose PXN ops it also runs. Other threads: every rank
 * whose events they recorded (one app thread may drive several ranks). */
static void thread_ranks_fill(const struct lens_model *m, struct thread_ranks *tr) {
  for (size_t t = 0; t < m->n_threads; t++)
    if (m->threads[t].proxy_rank >= 0) add_rank(&tr[t], m->threads[t].proxy_rank);
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->thread >= 0 && e->comm >= 0 && m->threads[e->thread].proxy_rank < 0)
      add_rank(&tr[e->thread], m->comms[e->comm].rank);
  }
  for (size_t t = 0; t < m->n_threads; t++) qsort(tr[t].r, tr[t].n, sizeof tr[t].r[0], cmp_i32);
}

int lens_chrome_group(FILE *out, const struct lens_model *m, const struct lens_chrome_opts *opts, uint32_t id_base,
                      uint32_t id_end, const uint8_t *real_ok, struct lens_chrome_part *part) {
  memset(part, 0, sizeof *part);
  struct ctx x = {.out = out, .part = part, .m = m, .c = &part->counts, .types = opts ? opts->types : 0,
                  .id_end = id_end};
  int rc = -1;
  x.f = open_memstream(&x.item, &x.item_len);
  /* Both streams are this thread's alone: without the lock per call that
   * glibc takes once the process has threads (every character of a JSON
   * string is an fputc; locked, they were half of the export's time). */
  if (x.f) __fsetlocking(x.f, FSETLOCKING_BYCALLER);
  __fsetlocking(out, FSETLOCKING_BYCALLER);
  int32_t *order = malloc((m->n_procs + 1) * sizeof *order);
  struct thread_ranks *tr = calloc(m->n_threads + 1, sizeof *tr);
  x.cpid = malloc((m->n_procs + 1) * sizeof *x.cpid);
  x.real_tid = calloc(m->n_threads + 1, sizeof *x.real_tid);
  x.thread_tid = calloc(m->n_threads + 1, sizeof *x.thread_tid);
  x.proc_used = calloc(m->n_procs + 1, 1);
  part->real = calloc(m->n_threads + 1, 1);
  if (!x.f || !order || !tr || !x.cpid || !x.real_tid || !x.thread_tid || !x.proc_used || !part->real ||
      lens_chrome_real_tids(m, x.real_tid))
    goto out;
  part->n_threads = m->n_threads;
  for (size_t t = 0; t < m->n_threads; t++) {
    if (real_ok) x.real_tid[t] = real_ok[t] && m->threads[t].tid < LENS_CHROME_SYNTH_ID ? m->threads[t].tid : 0;
    part->real[t] = x.real_tid[t] != 0;
  }
  if ((uint64_t)id_base + m->n_procs + m->n_threads >= id_end) goto ids;
  for (size_t p = 0; p < m->n_procs; p++) order[p] = (int32_t)p;
  qsort_r(order, m->n_procs, sizeof *order, cmp_proc, (void *)m);
  /* Processes are id_base.. in rank order: never a real pid or tid;
   * synthetic tracks follow them. */
  for (size_t k = 0; k < m->n_procs; k++) x.cpid[order[k]] = id_base + (uint32_t)k;
  x.next_synth = id_base + (uint32_t)m->n_procs;
  for (size_t t = 0; t < m->n_threads; t++) x.thread_tid[t] = x.real_tid[t] ? x.real_tid[t] : x.next_synth++;
  thread_ranks_fill(m, tr);
  for (size_t i = 0; i < m->n_events; i++) part->ce_colls += m->events[i].type == LENS_T_CE_COLL;

  collect_events(&x);
  if (want_type(&x, LENS_T_PROXY_CTRL) && lens_proxy_levels(m, level_cb, &x)) goto out;
  collect_starvation(&x);
  if (x.oom) goto out;
  if (x.n) qsort_r(x.v, x.n, sizeof *x.v, cmp_xs, x.cpid); /* x.v is NULL when nothing was collected */
  if (place(&x)) goto out;
  if (x.next_synth >= id_end) goto ids;

  part->id_next = x.next_synth, part->id_end = id_end;
  write_process_meta(&x);
  for (size_t t = 0; t < x.n_tracks; t++) track_meta(&x, &x.tracks[t], tr, (int)t);
  for (size_t i = 0; i < x.n; i++) write_slice(&x, &x.v[i]);
  write_async(&x);
  rc = x.oom || ferror(out) ? -1 : 0;
  goto out;
ids:
  rc = -2;
out:
  if (x.f) fclose(x.f);
  free(x.item);
  free(order);
  free(tr);
  free(x.cpid);
  free(x.real_tid);
  free(x.thread_tid);
  free(x.proc_used);
  free(x.v);
  free(x.tracks);
  return rc;
}

int lens_chrome_copy_items(FILE *f, FILE *in, int *first) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, in)) > 0) {
    char *sp = memchr(line, ' ', (size_t)n);
    if (!sp) continue;
    size_t off = (size_t)(sp + 1 - line), len = (size_t)n - off;
    if (len && line[off + len - 1] == '\n') len--;
    fputs(*first ? "\n" : ",\n", f);
    *first = 0;
    fwrite(line + off, 1, len, f);
  }
  free(line);
  return ferror(in) ? -1 : 0;
}

int lens_export_chrome_sel(FILE *f, const struct lens_model *m, const struct lens_chrome_opts *opts,
                           struct lens_chrome_counts *counts) {
  /* One group that is the whole document: through a temporary file as
   * export's groups are, so there is one way to write a document. */
  FILE *tmp = tmpfile();
  if (!tmp) return -1;
  struct lens_chrome_part part;
  int rc = lens_chrome_group(tmp, m, opts, LENS_CHROME_SYNTH_ID + 1, INT32_MAX, NULL, &part);
  free(part.real);
  if (counts) *counts = part.counts;
  if (!rc && (fflush(tmp) || fseek(tmp, 0, SEEK_SET))) rc = -1;
  int first = 1;
  if (!rc) {
    lens_chrome_write_head(f);
    rc = lens_chrome_copy_items(f, tmp, &first);
    lens_chrome_write_other(f, m, NULL);
  }
  fclose(tmp);
  return rc || ferror(f) ? -1 : 0;
}

int lens_export_chrome(FILE *f, const struct lens_model *m, struct lens_chrome_counts *counts) {
  return lens_export_chrome_sel(f, m, NULL, counts);
}
