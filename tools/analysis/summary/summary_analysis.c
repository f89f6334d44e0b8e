/* See summary_analysis.h. */
#include "summary_analysis.h"

#include "job.h"
#include "proxy_levels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void stat_add(struct lens_stat *s, uint64_t v) {
  s->n++;
  s->sum += v;
  if (v > s->max) s->max = v;
}

/* The row's size: nccl-tests' (lens_nccl_tests_size), as the job view's
 * rows and algbw take it, so one operation has one size in every view. */
static int size_bucket(const struct lens_model *m, const struct lens_event *e, const char *func) {
  int nranks = e->comm >= 0 && (size_t)e->comm < m->n_comms ? m->comms[e->comm].nranks : 1;
  return lens_size_bucket(lens_nccl_tests_size(func, lens_event_bytes(m, e), nranks));
}

static int streq(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static int grow(void **arr, size_t n, size_t es) {
  if (n & (n - 1) && n) return 0; /* capacity doubles at powers of two */
  void *p = realloc(*arr, (n ? n * 2 : 8) * es);
  if (!p) return -1;
  *arr = p;
  return 0;
}

/* arr holding have elements (its room the power of two at or above, as
 * grow() and reserve() leave it) gets room for want. */
static int reserve(void **arr, size_t have, size_t want, size_t es) {
  size_t room = 8, need = 8;
  while (room < have) room *= 2;
  if (*arr && want <= room) return 0;
  while (need < want) need *= 2;
  void *p = realloc(*arr, need * es);
  if (!p) return -1;
  *arr = p;
  return 0;
}

static int32_t group_of(const struct lens_model *m, struct lens_summary *s, int32_t comm, int32_t *cache) {
  if (comm < 0) comm = (int32_t)m->n_comms; /* "unknown" slot */
  if (cache[comm] >= 0) return cache[comm];
  uint64_t id = comm < (int32_t)m->n_comms ? m->comms[comm].comm_id : 0;
  const char *name = comm < (int32_t)m->n_comms ? m->comms[comm].name : "(unknown communicator)";
  for (size_t g = 0; g < s->n_groups; g++)
    if (s->groups[g].comm_id == id && streq(s->groups[g].name, name)) {
      s->groups[g].ranks_seen++;
      return cache[comm] = (int32_t)g;
    }
  if (grow((void **)&s->groups, s->n_groups, sizeof *s->groups)) return -1;
  struct lens_sum_group *g = &s->groups[s->n_groups];
  g->comm_id = id;
  g->name = name;
  g->nranks = comm < (int32_t)m->n_comms ? m->comms[comm].nranks : 0;
  g->ranks_seen = 1;
  return cache[comm] = (int32_t)s->n_groups++;
}

/* Rows are few (tens): a linear search keyed on the last hit is fast enough
 * for millions of ops because consecutive ops mostly share a row. */
static struct lens_sum_row *row_of(struct lens_summary *s, int32_t group, const char *func, const char *algo,
                                   const char *proto, int bucket, uint64_t tag, const char *variant, size_t *last) {
  for (size_t k = 0; k < s->n_rows; k++) {
    size_t i = (*last + k) % s->n_rows;
    struct lens_sum_row *r = &s->rows[i];
    if (r->group == group && r->bucket == bucket && r->user_tag == tag && streq(r->func, func) &&
        streq(r->algo, algo) && streq(r->proto, proto) && streq(r->kernel_variant, variant)) {
      *last = i;
      return r;
    }
  }
  if (grow((void **)&s->rows, s->n_rows, sizeof *s->rows)) return NULL;
  struct lens_sum_row *r = &s->rows[s->n_rows];
  memset(r, 0, sizeof *r);
  r->group = group;
  r->func = func;
  r->algo = algo;
  r->proto = proto;
  r->bucket = bucket;
  r->user_tag = tag;
  r->kernel_variant = variant;
  *last = s->n_rows++;
  return r;
}

/* Bytes a step moved: the transSize NCCL reported on its last state with args. */
static uint64_t step_bytes(const struct lens_model *m, const struct lens_event *st) {
  uint64_t b = 0;
  for (uint32_t i = 0; i < st->n_states; i++) {
    const struct lens_state_ev *x = &m->states[st->first_state + i];
    if (x->has_args && (x->state == 9 || x->state == 11)) b = x->arg;
  }
  return b;
}

static int kernel_ch_ns(const struct lens_event *k, uint64_t *ns) {
  if (k->acc.gpu_start_mono_ns && k->acc.gpu_stop_mono_ns > k->acc.gpu_start_mono_ns) {
    *ns = k->acc.gpu_stop_mono_ns - k->acc.gpu_start_mono_ns;
    return 1;
  }
  if (k->p.kernel_ch.stop_gpu_ns > k->p.kernel_ch.start_gpu_ns && !(k->acc.flags & LENS_ACC_STOP_BEFORE_START)) {
    *ns = k->p.kernel_ch.stop_gpu_ns - k->p.kernel_ch.start_gpu_ns;
    return 1;
  }
  return 0;
}

/* The start of the KernelLaunch that launched e: NCCL starts Coll/P2p in
 * hostStreamPlanTask, after the kernel launch (spec §2), so a small kernel
 * may have run, even ended, before its op starts. 0 when unknown (graph
 * replays have no launch; v4 plugins no KernelLaunch). */
static uint64_t launch_start(const struct lens_model *m, const struct lens_event *e, struct lens_child_memo *memo) {
  if (e->parent < 0 || (e->flags & LENS_EVF_GRAPH)) return 0;
  const struct lens_event *api = &m->events[e->parent];
  if ((api->type != LENS_T_COLL_API && api->type != LENS_T_P2P_API) || api->parent < 0) return 0;
  for (int32_t c = lens_first_child_of_type(m, api->parent, LENS_T_KERNEL_LAUNCH, memo); c >= 0;
       c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    if (x->type == LENS_T_KERNEL_LAUNCH && x->comm == e->comm && x->start_mono_ns <= e->start_mono_ns)
      return x->start_mono_ns;
  }
  return 0;
}

static void add_op(const struct lens_model *m, struct lens_sum_row *r, const struct lens_event *e,
                   struct lens_child_memo *memo) {
  uint64_t bytes = lens_event_bytes(m, e);
  r->count++;
  r->bytes += bytes;
  if (e->flags & LENS_EVF_GRAPH) r->graph++;
  const struct lens_event *api = e->parent >= 0 ? &m->events[e->parent] : NULL;
  uint64_t from = api && (api->type == LENS_T_COLL_API || api->type == LENS_T_P2P_API) && !(e->flags & LENS_EVF_GRAPH)
                      ? api->start_mono_ns
                      : e->start_mono_ns;
  if (e->stop_mono_ns >= from && !(e->flags & LENS_EVF_NO_STOP)) stat_add(&r->enqueue, e->stop_mono_ns - from);
  int src;
  uint64_t done = lens_event_completion(m, e, &src);
  uint64_t origin = launch_start(m, e, memo);
  if (!origin) origin = e->start_mono_ns;
  if (done >= origin && done) {
    stat_add(&r->completion, done - origin);
    r->completed_bytes += bytes;
  }
  for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    uint64_t ns;
    if (x->type == LENS_T_KERNEL_CH && kernel_ch_ns(x, &ns)) stat_add(&r->gpu_channel, ns);
    if (x->type != LENS_T_PROXY_OP) continue;
    r->proxy_ops++;
    if (x->p.proxy_op.folded_op && x->p.proxy_op.folded_op <= m->n_folded_ops) { /* its steps, folded by the reader */
      const struct lens_folded_op *fo = &m->folded_ops[x->p.proxy_op.folded_op - 1];
      r->proxy_steps += fo->steps;
      r->proxy_bytes += fo->bytes;
    }
    for (int32_t k = x->first_child; k >= 0; k = m->events[k].next_sibling) {
      const struct lens_event *st = &m->events[k];
      if (st->type != LENS_T_PROXY_STEP || (st->flags & LENS_EVF_SUPERSEDED)) continue;
      r->proxy_steps++;
      r->proxy_bytes += step_bytes(m, st);
    }
  }
}

static struct lens_sum_ce_row *ce_row_of(const struct lens_model *m, struct lens_summary *s, int32_t group,
                                         const struct lens_event *e) {
  const char *func = e->p.ce_coll.func, *sync = e->p.ce_coll.sync_strategy;
  int bucket = size_bucket(m, e, func);
  uint64_t tag = lens_event_user_tag(e);
  for (size_t i = 0; i < s->n_ce_rows; i++) {
    struct lens_sum_ce_row *r = &s->ce_rows[i];
    if (r->group == group && r->bucket == bucket && r->user_tag == tag && streq(r->func, func) &&
        streq(r->sync_strategy, sync))
      return r;
  }
  if (grow((void **)&s->ce_rows, s->n_ce_rows, sizeof *s->ce_rows)) return NULL;
  struct lens_sum_ce_row *r = &s->ce_rows[s->n_ce_rows++];
  memset(r, 0, sizeof *r);
  r->group = group;
  r->func = func;
  r->sync_strategy = sync;
  r->user_tag = tag;
  r->bucket = bucket;
  return r;
}

static void add_ce(const struct lens_model *m, struct lens_sum_ce_row *r, const struct lens_event *e) {
  r->count++;
  r->bytes += lens_event_bytes(m, e);
  const struct lens_event *api = e->parent >= 0 ? &m->events[e->parent] : NULL;
  uint64_t from = api && api->type == LENS_T_COLL_API ? api->start_mono_ns : e->start_mono_ns;
  int stopped = e->stop_mono_ns && !(e->flags & LENS_EVF_NO_STOP);
  if (stopped && e->stop_mono_ns >= from) stat_add(&r->enqueue, e->stop_mono_ns - from);
  if (stopped && e->stop_mono_ns >= e->start_mono_ns) stat_add(&r->ce, e->stop_mono_ns - e->start_mono_ns);
  for (int32_t c = e->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    int done = x->stop_mono_ns >= x->start_mono_ns && x->stop_mono_ns && !(x->flags & LENS_EVF_NO_STOP);
    if (x->type == LENS_T_CE_SYNC && done) stat_add(&r->sync, x->stop_mono_ns - x->start_mono_ns);
    if (x->type != LENS_T_CE_BATCH) continue;
    if (done) stat_add(&r->batch, x->stop_mono_ns - x->start_mono_ns);
    r->batch_bytes += x->p.ce_batch.total_bytes;
    r->batch_ops += x->p.ce_batch.num_ops > 0 ? (uint64_t)x->p.ce_batch.num_ops : 0;
  }
}

struct level_ctx { struct lens_summary *s; const int32_t *slot; };
static void add_level(void *arg, int32_t thread, int level, uint64_t from, uint64_t to) {
  struct level_ctx *c = arg;
  if (c->slot[thread] >= 0) c->s->proxies[c->slot[thread]].state_ns[level] += to - from;
}

/* A proxy thread's place in the list: its first ProxyCtrl, ProxyOp or
 * ProxyStep in the model's order (process, start). A thread whose first is
 * a folded step goes by that step's start, before the events of its
 * process that start later and after those that start at the same time. */
struct proxy_first { int32_t thread, proc; uint64_t ns; int32_t event; int by_step; };
static int by_first(const void *a, const void *b) {
  const struct proxy_first *x = a, *y = b;
#define C(f) if (x->f != y->f) return x->f < y->f ? -1 : 1
  C(proc); C(ns); C(by_step); C(event); C(thread);
#undef C
  return 0;
}

/* The proxy threads in that order, each one's slot in s->proxies (-1: none). */
static int proxy_slots(const struct lens_model *m, struct lens_summary *s, int32_t *slot) {
  struct proxy_first *f = malloc((m->n_threads + 1) * sizeof *f);
  if (!f) return -1;
  size_t n = 0;
  for (size_t t = 0; t < m->n_threads; t++) slot[t] = -1;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->thread < 0 || (size_t)e->thread >= m->n_threads || slot[e->thread] >= 0 ||
        !(e->type == LENS_T_PROXY_CTRL || e->type == LENS_T_PROXY_OP || e->type == LENS_T_PROXY_STEP))
      continue;
    slot[e->thread] = (int32_t)n;
    f[n++] = (struct proxy_first){e->thread, e->proc, e->start_mono_ns, (int32_t)i, 0};
  }
  for (size_t t = 0; t < m->n_threads; t++) {
    const struct lens_thread *th = &m->threads[t];
    if (!th->folded_starts) continue;
    if (slot[t] < 0) {
      slot[t] = (int32_t)n;
      f[n++] = (struct proxy_first){(int32_t)t, th->proc, th->folded_first_ns, INT32_MAX, 1};
    } else if (th->folded_first_ns < f[slot[t]].ns) {
      f[slot[t]].ns = th->folded_first_ns, f[slot[t]].by_step = 1;
    }
  }
  qsort(f, n, sizeof *f, by_first);
  /* room as grow() keeps it (a merge may grow the list further) */
  if (n && !(s->proxies = calloc(n < 4 ? 8 : 2 * n, sizeof *s->proxies))) {
    free(f);
    return -1;
  }
  for (size_t k = 0; k < n; k++) {
    s->proxies[k].thread = f[k].thread;
    slot[f[k].thread] = (int32_t)k;
  }
  s->n_proxies = n;
  free(f);
  return 0;
}

static int proxies(const struct lens_model *m, struct lens_summary *s) {
  int32_t *slot = malloc((m->n_threads + 1) * sizeof *slot);
  if (!slot || proxy_slots(m, s, slot)) {
    free(slot);
    return -1;
  }
  for (size_t t = 0; t < m->n_threads; t++)
    if (slot[t] >= 0) { /* its folded steps */
      s->proxies[slot[t]].steps += m->threads[t].folded_steps;
      s->proxies[slot[t]].bytes += m->threads[t].folded_bytes;
    }
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->thread < 0 || (size_t)e->thread >= m->n_threads || slot[e->thread] < 0) continue;
    struct lens_sum_proxy *p = &s->proxies[slot[e->thread]];
    if (e->type == LENS_T_PROXY_OP) p->ops++;
    if (e->type == LENS_T_PROXY_STEP && !(e->flags & LENS_EVF_SUPERSEDED)) {
      p->steps++;
      p->bytes += step_bytes(m, e);
    }
    if (e->type != LENS_T_PROXY_CTRL) continue;
    uint64_t stop = e->stop_mono_ns > e->start_mono_ns ? e->stop_mono_ns : e->start_mono_ns;
    if (!p->first_ns || e->start_mono_ns < p->first_ns) p->first_ns = e->start_mono_ns;
    if (stop > p->last_ns) p->last_ns = stop;
  }
  struct level_ctx c = {s, slot};
  if (lens_proxy_levels(m, add_level, &c)) {
    free(slot);
    return -1;
  }
  for (size_t i = 0; i < s->n_proxies; i++) s->proxies[i].span_ns = s->proxies[i].last_ns - s->proxies[i].first_ns;
  free(slot);
  return 0;
}

/* Room for the model's Coll/P2p tasks, as one group whose processes are
 * the model's. */
static int tasks_alloc(const struct lens_model *m, struct lens_summary *s) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_events; i++) n += m->events[i].type == LENS_T_COLL || m->events[i].type == LENS_T_P2P;
  /* the room a merge into s expects (reserve) */
  if (reserve((void **)&s->tasks, 0, n, sizeof *s->tasks) ||
      reserve((void **)&s->task_first, 0, 2, sizeof *s->task_first) ||
      reserve((void **)&s->task_proc, 0, 2, sizeof *s->task_proc))
    return -1;
  s->n_task_groups = 1;
  s->task_first[0] = s->task_first[1] = 0;
  s->task_proc[0] = 0, s->task_proc[1] = m->n_procs;
  return 0;
}

static int map_events(const struct lens_model *m, struct lens_summary *s) {
  int32_t *cache = malloc((m->n_comms + 1) * sizeof *cache);
  if (!cache || tasks_alloc(m, s)) {
    free(cache);
    return -1;
  }
  for (size_t c = 0; c <= m->n_comms; c++) cache[c] = -1;
  size_t last = 0;
  struct lens_child_memo memo = LENS_CHILD_MEMO_INIT;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    /* set bits only: most events have none, and this runs on every event */
    for (uint32_t f = e->acc.flags; f; f &= f - 1) s->acc_counts[__builtin_ctz(f)]++;
    for (uint32_t f = e->flags; f; f &= f - 1) s->evf_counts[__builtin_ctz(f)]++;
    if (e->acc.flags) s->analyses_ran = 1;
    if (e->type == LENS_T_KERNEL_CH) {
      s->kernel_ch++;
      if (e->acc.time_source < 3) s->time_source[e->acc.time_source]++;
    }
    if (e->type == LENS_T_CE_COLL) {
      int32_t g = group_of(m, s, e->comm, cache);
      struct lens_sum_ce_row *r = g < 0 ? NULL : ce_row_of(m, s, g, e);
      if (!r) {
        free(cache);
        return -1;
      }
      add_ce(m, r, e);
      continue;
    }
    if (e->type != LENS_T_COLL && e->type != LENS_T_P2P) continue;
    int32_t g = group_of(m, s, e->comm, cache);
    const char *func = e->type == LENS_T_COLL ? e->p.coll.func : e->p.p2p.func;
    const char *algo = e->type == LENS_T_COLL ? e->p.coll.algo : NULL;
    const char *proto = e->type == LENS_T_COLL ? e->p.coll.proto : NULL;
    const char *variant = e->type == LENS_T_COLL ? e->p.coll.kernel_variant : NULL;
    struct lens_sum_row *r = g < 0 ? NULL
                                   : row_of(s, g, func, algo, proto, size_bucket(m, e, func),
                                            lens_event_user_tag(e), variant, &last);
    if (!r) {
      free(cache);
      return -1;
    }
    add_op(m, r, e, &memo);
    /* the job view names a task by an int32 event index: one past it is named by none */
    if (i <= INT32_MAX)
      s->tasks[s->n_tasks++] = (struct lens_sum_task){(uint32_t)i, (uint32_t)(r - s->rows)};
  }
  s->task_first[1] = s->n_tasks;
  free(cache);
  return 0;
}


/* The rows point at the model's strings while it is mapped (equal strings
 * are mostly the same pointer there): copied once at the end. */
static int own(const char **p) {
  if (!*p) return 0;
  char *c = strdup(*p);
  if (!c) {
    *p = NULL;
    return -1;
  }
  *p = c;
  return 0;
}

static int own_strings(struct lens_summary *s) {
  int bad = 0;
  for (size_t i = 0; i < s->n_groups; i++) bad |= own(&s->groups[i].name);
  for (size_t i = 0; i < s->n_rows; i++) {
    struct lens_sum_row *r = &s->rows[i];
    bad |= own(&r->func) | own(&r->algo) | own(&r->proto) | own(&r->kernel_variant);
  }
  for (size_t i = 0; i < s->n_ce_rows; i++) bad |= own(&s->ce_rows[i].func) | own(&s->ce_rows[i].sync_strategy);
  return bad;
}

static void free_strings(struct lens_summary *s) {
  for (size_t i = 0; i < s->n_groups; i++) free((char *)s->groups[i].name);
  for (size_t i = 0; i < s->n_rows; i++) {
    struct lens_sum_row *r = &s->rows[i];
    free((char *)r->func), free((char *)r->algo), free((char *)r->proto), free((char *)r->kernel_variant);
  }
  for (size_t i = 0; i < s->n_ce_rows; i++) free((char *)s->ce_rows[i].func), free((char *)s->ce_rows[i].sync_strategy);
}

int lens_summary_map(const struct lens_model *m, struct lens_summary *s, int analyses_ran) {
  memset(s, 0, sizeof *s);
  s->analyses_ran = analyses_ran;
  s->events = m->n_events + m->folded_steps; /* a folded step is an event of the traces */
  for (int b = 0; b < 32; b++) s->evf_counts[b] += m->folded_evf_counts[b];
  int bad = map_events(m, s) || proxies(m, s);
  if (own_strings(s)) bad = 1; /* whatever map_events built points into m: owned or NULL now, so freeable */
  if (!bad && m->n_sched && lens_starvation_gather(m, &s->starvation)) bad = 1;
  if (bad) {
    lens_summary_free(s);
    return -1;
  }
  return 0;
}

static void stat_merge(struct lens_stat *into, const struct lens_stat *p) {
  into->n += p->n;
  into->sum += p->sum;
  if (p->max > into->max) into->max = p->max;
}

/* into's group of part's group g: the same (comm_id, name), else a new one. -1 out of memory. */
static int32_t merge_group(struct lens_summary *into, const struct lens_sum_group *g) {
  for (size_t i = 0; i < into->n_groups; i++)
    if (into->groups[i].comm_id == g->comm_id && streq(into->groups[i].name, g->name)) {
      into->groups[i].ranks_seen += g->ranks_seen;
      return (int32_t)i;
    }
  if (grow((void **)&into->groups, into->n_groups, sizeof *into->groups)) return -1;
  struct lens_sum_group *n = &into->groups[into->n_groups];
  *n = *g;
  if (own(&n->name)) return -1;
  return (int32_t)into->n_groups++;
}

/* part's tasks after into's, their rows into's (rmap), each of part's
 * groups one of into's whose processes start proc_base further on. */
static int merge_tasks(struct lens_summary *into, const struct lens_summary *part, const uint32_t *rmap,
                       size_t proc_base) {
  size_t ng = into->n_task_groups + part->n_task_groups;
  if (!part->n_task_groups) return 0;
  if (reserve((void **)&into->tasks, into->n_tasks, into->n_tasks + part->n_tasks, sizeof *into->tasks) ||
      reserve((void **)&into->task_first, into->n_task_groups + 1, ng + 1, sizeof *into->task_first) ||
      reserve((void **)&into->task_proc, into->n_task_groups + 1, ng + 1, sizeof *into->task_proc))
    return -1;
  size_t t0 = into->n_tasks;
  for (size_t i = 0; i < part->n_tasks; i++) {
    struct lens_sum_task t = part->tasks[i];
    t.row = rmap[t.row];
    into->tasks[into->n_tasks++] = t;
  }
  for (size_t h = 0; h <= part->n_task_groups; h++) {
    into->task_first[into->n_task_groups + h] = t0 + part->task_first[h];
    into->task_proc[into->n_task_groups + h] = proc_base + part->task_proc[h];
  }
  into->n_task_groups = ng;
  return 0;
}

int lens_summary_merge(struct lens_summary *into, const struct lens_summary *part,
                       const struct lens_model_base *base) {
  int32_t *gmap = malloc((part->n_groups + 1) * sizeof *gmap);
  uint32_t *rmap = malloc((part->n_rows + 1) * sizeof *rmap);
  if (!gmap || !rmap) goto oom;
  for (size_t g = 0; g < part->n_groups; g++)
    if ((gmap[g] = merge_group(into, &part->groups[g])) < 0) goto oom;
  size_t last = 0;
  for (size_t i = 0; i < part->n_rows; i++) {
    const struct lens_sum_row *p = &part->rows[i];
    size_t n0 = into->n_rows;
    struct lens_sum_row *r = row_of(into, gmap[p->group], p->func, p->algo, p->proto, p->bucket, p->user_tag,
                                    p->kernel_variant, &last);
    if (!r) goto oom;
    rmap[i] = (uint32_t)(r - into->rows);
    if (into->n_rows > n0) { /* new (pointing at part's strings): its own copies of them */
      *r = *p;
      r->group = gmap[p->group];
      r->func = r->algo = r->proto = r->kernel_variant = NULL;
      if ((p->func && !(r->func = strdup(p->func))) || (p->algo && !(r->algo = strdup(p->algo))) ||
          (p->proto && !(r->proto = strdup(p->proto))) ||
          (p->kernel_variant && !(r->kernel_variant = strdup(p->kernel_variant))))
        goto oom;
      continue;
    }
    r->count += p->count;
    r->bytes += p->bytes;
    stat_merge(&r->enqueue, &p->enqueue);
    stat_merge(&r->completion, &p->completion);
    r->completed_bytes += p->completed_bytes;
    r->exec_tasks += p->exec_tasks;
    r->exec_bytes += p->exec_bytes;
    r->exec_ns += p->exec_ns;
    stat_merge(&r->gpu_channel, &p->gpu_channel);
    r->proxy_ops += p->proxy_ops;
    r->proxy_steps += p->proxy_steps;
    r->proxy_bytes += p->proxy_bytes;
    r->graph += p->graph;
  }
  for (size_t i = 0; i < part->n_ce_rows; i++) {
    const struct lens_sum_ce_row *p = &part->ce_rows[i];
    int32_t g = gmap[p->group];
    struct lens_sum_ce_row *r = NULL;
    for (size_t k = 0; k < into->n_ce_rows && !r; k++) {
      struct lens_sum_ce_row *x = &into->ce_rows[k];
      if (x->group == g && x->bucket == p->bucket && x->user_tag == p->user_tag && streq(x->func, p->func) &&
          streq(x->sync_strategy, p->sync_strategy))
        r = x;
    }
    if (!r) {
      if (grow((void **)&into->ce_rows, into->n_ce_rows, sizeof *into->ce_rows)) goto oom;
      r = &into->ce_rows[into->n_ce_rows++];
      *r = *p;
      r->group = g;
      r->func = r->sync_strategy = NULL;
      if ((p->func && !(r->func = strdup(p->func))) ||
          (p->sync_strategy && !(r->sync_strategy = strdup(p->sync_strategy))))
        goto oom;
      continue;
    }
    r->count += p->count;
    r->bytes += p->bytes;
    stat_merge(&r->enqueue, &p->enqueue);
    stat_merge(&r->ce, &p->ce);
    stat_merge(&r->sync, &p->sync);
    stat_merge(&r->batch, &p->batch);
    r->batch_bytes += p->batch_bytes;
    r->batch_ops += p->batch_ops;
  }
  /* A proxy thread is one process's: never in two groups. */
  for (size_t i = 0; i < part->n_proxies; i++) {
    if (grow((void **)&into->proxies, into->n_proxies, sizeof *into->proxies)) goto oom;
    struct lens_sum_proxy *x = &into->proxies[into->n_proxies++];
    *x = part->proxies[i];
    x->thread += (int32_t)base->thread;
  }
  if (merge_tasks(into, part, rmap, base->proc)) goto oom;
  for (int b = 0; b < 32; b++) into->acc_counts[b] += part->acc_counts[b], into->evf_counts[b] += part->evf_counts[b];
  for (int k = 0; k < 3; k++) into->time_source[k] += part->time_source[k];
  into->kernel_ch += part->kernel_ch;
  into->analyses_ran |= part->analyses_ran;
  into->events += part->events;
  if (lens_starvation_merge(&into->starvation, &part->starvation)) goto oom;
  free(gmap);
  free(rmap);
  return 0;
oom:
  free(gmap);
  free(rmap);
  return -1;
}

static void tasks_free(struct lens_summary *s) {
  free(s->tasks);
  free(s->task_first);
  free(s->task_proc);
  s->tasks = NULL, s->task_first = s->task_proc = NULL;
  s->n_tasks = s->n_task_groups = 0;
}

/* The task a job rank record names: the group holding its process (the last
 * whose processes start at or before it), then its event there. */
static const struct lens_sum_task *task_of(const struct lens_summary *s, const struct lens_job_rank *rk) {
  long gl = rk->event < 0 ? -1 : lens_job_group_of_proc(s->task_proc, s->n_task_groups, rk->proc);
  if (gl < 0) return NULL;
  size_t g = (size_t)gl, lo = s->task_first[g], hi = s->task_first[g + 1];
  uint32_t ev = (uint32_t)rk->event;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->tasks[mid].event < ev) lo = mid + 1;
    else hi = mid;
  }
  return lo < s->task_first[g + 1] && s->tasks[lo].event == ev ? &s->tasks[lo] : NULL;
}

void lens_summary_exec(struct lens_summary *s, const struct lens_job *j) {
  for (size_t i = 0; j && i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    if (!lens_job_inst_decomposed(in) || in->first_rank > j->n_ranks || in->n_ranks > j->n_ranks - in->first_rank)
      continue;
    for (size_t k = 0; k < in->n_ranks; k++) {
      const struct lens_sum_task *t = task_of(s, &j->ranks[in->first_rank + k]);
      if (!t || t->row >= s->n_rows) continue;
      struct lens_sum_row *r = &s->rows[t->row];
      /* nccl-tests' size (the job view's, for every rank of the instance):
       * an AllGather's or ReduceScatter's is the ranks times one rank's
       * count, so algbw is size / time and busbw / algbw the factor, as
       * in nccl-tests, for every collective. */
      r->exec_tasks++;
      r->exec_bytes += in->bytes;
      r->exec_ns += in->exec_ns;
    }
  }
  tasks_free(s);
}

int lens_summary_build(const struct lens_model *m, struct lens_summary *s, int analyses_ran) {
  if (lens_summary_map(m, s, analyses_ran)) return -1;
  struct lens_job j;
  if (lens_job_build(m, &j, 0)) {
    lens_summary_free(s);
    return -1;
  }
  lens_summary_exec(s, &j);
  lens_job_free(&j);
  return 0;
}

void lens_summary_free(struct lens_summary *s) {
  free_strings(s);
  free(s->groups);
  free(s->rows);
  free(s->proxies);
  free(s->ce_rows);
  tasks_free(s);
  lens_starvation_free(&s->starvation);
  memset(s, 0, sizeof *s);
}
