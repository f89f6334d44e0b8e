/* See summary_model.h. */
#include "summary/summary_model.h"

#include "export/proxy_levels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void stat_add(struct lens_stat *s, uint64_t v) {
  s->n++;
  s->sum += v;
  if (v > s->max) s->max = v;
}

static int bucket_of(uint64_t bytes) {
  int b = -1;
  while (bytes) {
    b++;
    bytes >>= 1;
  }
  return b;
}

void lens_size_bucket_label(int bucket, char *buf, size_t len) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bucket < 0) {
    snprintf(buf, len, "0 B");
    return;
  }
  int u = bucket / 10, e = bucket % 10;
  if (bucket == 63) snprintf(buf, len, "%u %s-", 1u << e, unit[u]);
  else if (e == 9) snprintf(buf, len, "%u %s-1 %s", 1u << e, unit[u], unit[u + 1]);
  else snprintf(buf, len, "%u-%u %s", 1u << e, 1u << (e + 1), unit[u]);
}

static int streq(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

static int grow(void **arr, size_t n, size_t es) {
  if (n & (n - 1) && n) return 0; /* capacity doubles at powers of two */
  void *p = realloc(*arr, (n ? n * 2 : 8) * es);
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
static uint64_t launch_start(const struct lens_model *m, const struct lens_event *e) {
  if (e->parent < 0 || (e->flags & LENS_EVF_GRAPH)) return 0;
  const struct lens_event *api = &m->events[e->parent];
  if ((api->type != LENS_T_COLL_API && api->type != LENS_T_P2P_API) || api->parent < 0) return 0;
  const struct lens_event *g = &m->events[api->parent];
  for (int32_t c = g->first_child; c >= 0; c = m->events[c].next_sibling) {
    const struct lens_event *x = &m->events[c];
    if (x->type == LENS_T_KERNEL_LAUNCH && x->comm == e->comm && x->start_mono_ns <= e->start_mono_ns)
      return x->start_mono_ns;
  }
  return 0;
}

static void add_op(const struct lens_model *m, struct lens_sum_row *r, const struct lens_event *e) {
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
  uint64_t origin = launch_start(m, e);
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
  int bucket = bucket_of(lens_event_bytes(m, e));
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

static int proxies(const struct lens_model *m, struct lens_summary *s) {
  int32_t *slot = malloc((m->n_threads + 1) * sizeof *slot);
  if (!slot) return -1;
  for (size_t t = 0; t < m->n_threads; t++) slot[t] = -1;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->thread < 0 || !(e->type == LENS_T_PROXY_CTRL || e->type == LENS_T_PROXY_OP || e->type == LENS_T_PROXY_STEP))
      continue;
    if (slot[e->thread] < 0) {
      if (grow((void **)&s->proxies, s->n_proxies, sizeof *s->proxies)) {
        free(slot);
        return -1;
      }
      memset(&s->proxies[s->n_proxies], 0, sizeof *s->proxies);
      s->proxies[s->n_proxies].thread = e->thread;
      slot[e->thread] = (int32_t)s->n_proxies++;
    }
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

int lens_summary_build(const struct lens_model *m, struct lens_summary *s, int analyses_ran) {
  memset(s, 0, sizeof *s);
  s->analyses_ran = analyses_ran;
  int32_t *cache = malloc((m->n_comms + 1) * sizeof *cache);
  if (!cache) return -1;
  for (size_t c = 0; c <= m->n_comms; c++) cache[c] = -1;
  size_t last = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    for (int b = 0; b < 32; b++) {
      if (e->acc.flags & (1u << b)) s->acc_counts[b]++;
      if (e->flags & (1u << b)) s->evf_counts[b]++;
    }
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
                                   : row_of(s, g, func, algo, proto, bucket_of(lens_event_bytes(m, e)),
                                            lens_event_user_tag(e), variant, &last);
    if (!r) {
      free(cache);
      return -1;
    }
    add_op(m, r, e);
  }
  free(cache);
  return proxies(m, s);
}

const char *lens_summary_func_label(const struct lens_sum_row *r, char *buf, size_t len) {
  const char *func = r->func && *r->func ? r->func : "-";
  if (!r->user_tag) return func;
  char tb[32];
  snprintf(buf, len, "%s, %s", func, lens_tag_label(r->user_tag, tb, sizeof tb));
  return buf;
}

const char *lens_summary_algo_label(const struct lens_sum_row *r, char *buf, size_t len) {
  const char *algo = r->algo && *r->algo ? r->algo : "-";
  if (!r->kernel_variant) return algo;
  snprintf(buf, len, "sym %s", algo);
  return buf;
}

void lens_summary_free(struct lens_summary *s) {
  free(s->groups);
  free(s->rows);
  free(s->proxies);
  free(s->ce_rows);
  memset(s, 0, sizeof *s);
}
