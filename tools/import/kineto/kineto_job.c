/* A Kineto trace as a job partial (kineto_job.h). */
#define _GNU_SOURCE
#include "kineto_job.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "job.h"
#include "job_align.h"
#include "job_part.h"
#include "kineto_read.h"
#include "lens_checked.h"

#define MAX_GROUPS 4096
#define MAX_FUNCS 64

/* One NCCL kernel as read. */
struct kk {
  int64_t ts, dur, corr, ext, seq;
  int64_t launch_ts, launch_dur, launch_pid, launch_tid;
  int64_t in_n, out_n, gsize;
  int32_t group;     /* index into groups, -1: none in its args */
  int32_t func;      /* index into funcs */
  int32_t stream;
  uint32_t pg_ranks_n;
  uint8_t has_seq, has_launch, has_ext, has_corr;
  char dtype[32];
};

/* One record_param_comms CPU op. */
struct rpc {
  int64_t ts, dur, ext, pid, tid, seq;
  int32_t group, rank;
  uint8_t has_seq, has_ext;
};

struct launch { int64_t corr, ts, dur, pid, tid; };

/* Launches by correlation id, two generations of a fixed size: a launch
 * stays while fewer than a window of newer launches came after it. */
struct lwin { struct launch *slot[2]; size_t n[2]; int cur; uint64_t evicted; };

struct group { char key[160], desc[128]; };

struct imp {
  struct kk *k; size_t nk, capk;
  struct rpc *r; size_t nr, capr;
  int64_t *kcorr; size_t kcorr_cap; uint32_t *kcorr_idx; /* open hash: correlation -> kernel */
  struct lwin lw;
  struct group *groups; size_t ngroups;
  int32_t group_slot[2 * MAX_GROUPS];        /* open hash of the keys: index + 1, 0 free */
  char funcs[MAX_FUNCS][32]; size_t nfuncs;
  int64_t cpu_pid; int has_cpu_pid;
  uint64_t dropped;
  int oom;
};

static uint64_t hash64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

uint64_t lens_kineto_pg_comm_id(const char *name) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of "kineto-pg:" + name */
  for (const char *s = "kineto-pg:"; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  for (const char *s = name; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

/* ---- the launch window ---- */
#define LW_CAP (2 * (size_t)LENS_KINETO_LAUNCH_WINDOW) /* slots per generation: at most half full */

static int lw_init(struct lwin *w) {
  for (int g = 0; g < 2; g++) {
    w->slot[g] = calloc(LW_CAP, sizeof *w->slot[g]);
    if (!w->slot[g]) return -1;
  }
  return 0;
}

static struct launch *lw_find(struct lwin *w, int g, int64_t corr) {
  size_t h = (size_t)hash64((uint64_t)corr) & (LW_CAP - 1);
  for (size_t i = 0; i < LW_CAP; i++, h = (h + 1) & (LW_CAP - 1)) {
    struct launch *l = &w->slot[g][h];
    if (!l->corr) return NULL; /* correlation ids start at 1: 0 is a free slot */
    if (l->corr == corr) return l;
  }
  return NULL;
}

static struct launch *lw_get(struct lwin *w, int64_t corr) {
  struct launch *l = lw_find(w, w->cur, corr);
  return l ? l : lw_find(w, !w->cur, corr);
}

static void lw_put(struct lwin *w, const struct launch *x) {
  if (x->corr <= 0) return;
  if (w->n[w->cur] >= LENS_KINETO_LAUNCH_WINDOW) { /* the older generation goes */
    int old = !w->cur;
    w->evicted += w->n[old];
    memset(w->slot[old], 0, LW_CAP * sizeof *w->slot[old]);
    w->n[old] = 0;
    w->cur = old;
  }
  size_t h = (size_t)hash64((uint64_t)x->corr) & (LW_CAP - 1);
  while (w->slot[w->cur][h].corr && w->slot[w->cur][h].corr != x->corr) h = (h + 1) & (LW_CAP - 1);
  if (!w->slot[w->cur][h].corr) w->n[w->cur]++;
  w->slot[w->cur][h] = *x;
}

/* ---- kernels by correlation (launches read after their kernel) ---- */
static int kcorr_grow(struct imp *m) {
  size_t nc = m->kcorr_cap ? m->kcorr_cap * 2 : 1024;
  int64_t *keys = calloc(nc, sizeof *keys);
  uint32_t *idx = calloc(nc, sizeof *idx);
  if (!keys || !idx) return free(keys), free(idx), -1;
  for (size_t i = 0; i < m->kcorr_cap; i++) {
    if (!m->kcorr[i]) continue;
    size_t h = (size_t)hash64((uint64_t)m->kcorr[i]) & (nc - 1);
    while (keys[h]) h = (h + 1) & (nc - 1);
    keys[h] = m->kcorr[i], idx[h] = m->kcorr_idx[i];
  }
  free(m->kcorr), free(m->kcorr_idx);
  m->kcorr = keys, m->kcorr_idx = idx, m->kcorr_cap = nc;
  return 0;
}

static int kcorr_put(struct imp *m, int64_t corr, uint32_t i) {
  if (corr <= 0) return 0;
  if (2 * (m->nk + 1) > m->kcorr_cap && kcorr_grow(m)) return -1;
  size_t h = (size_t)hash64((uint64_t)corr) & (m->kcorr_cap - 1);
  while (m->kcorr[h] && m->kcorr[h] != corr) h = (h + 1) & (m->kcorr_cap - 1);
  m->kcorr[h] = corr, m->kcorr_idx[h] = i;
  return 0;
}

static struct kk *kcorr_get(struct imp *m, int64_t corr) {
  if (corr <= 0 || !m->kcorr_cap) return NULL;
  size_t h = (size_t)hash64((uint64_t)corr) & (m->kcorr_cap - 1);
  while (m->kcorr[h]) {
    if (m->kcorr[h] == corr) return &m->k[m->kcorr_idx[h]];
    h = (h + 1) & (m->kcorr_cap - 1);
  }
  return NULL;
}

/* ---- names ---- */

/* The process group's index (its key: the name, or "stream N"), -1 when
 * the table is full. Hashed: a file may name thousands of groups. */
static int32_t group_of(struct imp *m, const char *key, const char *desc) {
  uint64_t h = lens_kineto_pg_comm_id(key);
  size_t s = (size_t)hash64(h) & (2 * MAX_GROUPS - 1);
  char k[sizeof m->groups[0].key];
  snprintf(k, sizeof k, "%s", key); /* as stored: a longer name is cut */
  for (; m->group_slot[s]; s = (s + 1) & (2 * MAX_GROUPS - 1))
    if (!strcmp(m->groups[m->group_slot[s] - 1].key, k)) return m->group_slot[s] - 1;
  if (m->ngroups == MAX_GROUPS) return -1;
  struct group *g = &m->groups[m->ngroups];
  memcpy(g->key, k, sizeof k);
  snprintf(g->desc, sizeof g->desc, "%s", desc && strcmp(desc, "undefined") ? desc : "");
  m->group_slot[s] = (int32_t)(m->ngroups + 1);
  return (int32_t)m->ngroups++;
}

static int32_t func_index(struct imp *m, const char *f) {
  for (size_t i = 0; i < m->nfuncs; i++)
    if (!strcmp(m->funcs[i], f)) return (int32_t)i;
  if (m->nfuncs == MAX_FUNCS) return (int32_t)MAX_FUNCS - 1; /* "other" */
  snprintf(m->funcs[m->nfuncs], sizeof m->funcs[0], "%s", f);
  return (int32_t)m->nfuncs++;
}

/* NCCL's function of a kernel: ncclDevKernel_<Func>_..., ncclKernel_<Func>_...
 * ("" for RCCL's ncclDevKernel_Generic: the collective name decides). */
static void kernel_func(const char *name, char *out, size_t cap) {
  out[0] = 0;
  const char *p = strstr(name, "Kernel_");
  if (!p) return;
  p += 7;
  size_t n = strcspn(p, "_(<");
  if (n >= cap) n = cap - 1;
  memcpy(out, p, n);
  out[n] = 0;
  if (!strcmp(out, "Generic")) out[0] = 0;
}

/* The collective name PyTorch gives ("allreduce", "_allgather_base",
 * "reduce_scatter_tensor_coalesced", ...) as NCCL's function. */
static const char *coll_func(const char *c) {
  char s[64];
  size_t n = 0;
  for (; c[n] && n < sizeof s - 1; n++) s[n] = (char)tolower((unsigned char)c[n]);
  s[n] = 0;
  if (strstr(s, "allreduce") || strstr(s, "all_reduce") || strstr(s, "barrier")) return "AllReduce";
  if (strstr(s, "allgather") || strstr(s, "all_gather")) return "AllGather";
  if (strstr(s, "reduce_scatter") || strstr(s, "reducescatter")) return "ReduceScatter";
  if (strstr(s, "alltoall") || strstr(s, "all_to_all")) return "AllToAll";
  if (strstr(s, "broadcast")) return "Broadcast";
  if (strstr(s, "gather")) return "Gather";
  if (strstr(s, "scatter")) return "Scatter";
  if (strstr(s, "reduce")) return "Reduce";
  if (strstr(s, "send")) return "Send";
  if (strstr(s, "recv")) return "Recv";
  return NULL;
}

static uint64_t dtype_size(const char *d) {
  static const struct { const char *n; uint64_t s; } t[] = {
      {"float", 4},    {"float32", 4}, {"float16", 2},  {"half", 2},     {"bfloat16", 2}, {"double", 8},
      {"float64", 8},  {"int", 4},     {"int32", 4},    {"long", 8},     {"int64", 8},    {"short", 2},
      {"int16", 2},    {"char", 1},    {"byte", 1},     {"int8", 1},     {"uint8", 1},    {"bool", 1},
      {"unsigned char", 1}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1}, {"signed char", 1}, {"uint32", 4},
      {"uint64", 8}};
  const char *p = strrchr(d, ':'); /* "c10::BFloat16" */
  p = p ? p + 1 : d;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcasecmp(p, t[i].n)) return t[i].s;
  return 0;
}

static int is_cat(const char *cat, const char *want) { return !strcasecmp(cat, want); }

static int is_launch(const struct lens_kineto_event *e) {
  if (!(e->have & LENS_KEV_CORRELATION)) return 0;
  if (!is_cat(e->cat, "cuda_runtime") && !is_cat(e->cat, "cuda_driver") && !is_cat(e->cat, "runtime") &&
      !is_cat(e->cat, "hip_runtime") && !is_cat(e->cat, "driver"))
    return 0;
  return strstr(e->name, "LaunchKernel") || strstr(e->name, "LaunchCooperativeKernel");
}

static int is_nccl_kernel(const struct lens_kineto_event *e) {
  return is_cat(e->cat, "kernel") && (!strncmp(e->name, "nccl", 4) || !strncmp(e->name, "rccl", 4)) &&
         strstr(e->name, "Kernel");
}

/* a + b of two file values, saturated (a time and a duration may each be
 * anything an int64 holds) */
static int64_t sat_add(int64_t a, int64_t b) {
  int64_t v;
  return __builtin_add_overflow(a, b, &v) ? (b > 0 ? INT64_MAX : INT64_MIN) : v;
}

static void fill_launch(struct kk *k, const struct launch *l) {
  k->launch_ts = l->ts, k->launch_dur = l->dur, k->launch_pid = l->pid, k->launch_tid = l->tid;
  k->has_launch = 1;
}

static int on_event(void *ctx, const struct lens_kineto_event *e) {
  struct imp *m = ctx;
  if (e->ph != 'X' || !(e->have & LENS_KEV_TS)) return 0;
  if (is_nccl_kernel(e)) {
    if (!(e->have & LENS_KEV_DUR) || e->dur_ns < 0) return 0;
    if (m->nk == LENS_KINETO_MAX_KERNELS) return m->dropped++, 0;
    if (m->nk == m->capk) {
      size_t nc = m->capk ? m->capk * 2 : 1024;
      struct kk *x = realloc(m->k, nc * sizeof *x);
      if (!x) return m->oom = 1;
      m->k = x, m->capk = nc;
    }
    struct kk *k = &m->k[m->nk];
    memset(k, 0, sizeof *k);
    k->ts = e->ts_ns, k->dur = e->dur_ns;
    k->stream = (e->have & LENS_KEV_TID) && e->tid >= 0 && e->tid <= INT32_MAX ? (int32_t)e->tid : -1;
    k->has_corr = (e->have & LENS_KEV_CORRELATION) && e->correlation > 0;
    k->corr = k->has_corr ? e->correlation : 0;
    k->has_ext = (e->have & LENS_KEV_EXTERNAL_ID) != 0;
    k->ext = e->external_id;
    k->has_seq = (e->have & LENS_KEV_SEQ) != 0;
    k->seq = e->seq;
    k->in_n = e->have & LENS_KEV_IN_NELEMS ? e->in_nelems : 0;
    k->out_n = e->have & LENS_KEV_OUT_NELEMS ? e->out_nelems : 0;
    k->gsize = e->have & LENS_KEV_GROUP_SIZE ? e->group_size : 0;
    k->pg_ranks_n = e->have & LENS_KEV_PG_RANKS ? e->pg_ranks_n : 0;
    snprintf(k->dtype, sizeof k->dtype, "%s", e->dtype);
    char f[32], key[160];
    kernel_func(e->name, f, sizeof f);
    const char *cf = f[0] ? f : coll_func(e->coll_name);
    k->func = func_index(m, cf ? cf : "Unknown");
    k->group = -1;
    if (e->pg_name[0]) {
      snprintf(key, sizeof key, "%s", e->pg_name);
      k->group = group_of(m, key, e->pg_desc);
    }
    if (k->has_corr) {
      const struct launch *l = lw_get(&m->lw, k->corr);
      if (l) fill_launch(k, l);
      if (kcorr_put(m, k->corr, (uint32_t)m->nk)) return m->oom = 1;
    }
    m->nk++;
    return 0;
  }
  if (is_launch(e)) {
    struct launch l = {e->correlation, e->ts_ns, e->have & LENS_KEV_DUR ? e->dur_ns : 0,
                       e->have & LENS_KEV_PID ? e->pid : -1, e->have & LENS_KEV_TID ? e->tid : -1};
    if (!m->has_cpu_pid && (e->have & LENS_KEV_PID)) m->cpu_pid = e->pid, m->has_cpu_pid = 1;
    struct kk *k = kcorr_get(m, e->correlation);
    if (k) fill_launch(k, &l);
    else lw_put(&m->lw, &l);
    return 0;
  }
  if (is_cat(e->cat, "cpu_op") && !strcmp(e->name, "record_param_comms")) {
    if (m->nr == LENS_KINETO_MAX_KERNELS) return m->dropped++, 0;
    if (m->nr == m->capr) {
      size_t nc = m->capr ? m->capr * 2 : 1024;
      struct rpc *x = realloc(m->r, nc * sizeof *x);
      if (!x) return m->oom = 1;
      m->r = x, m->capr = nc;
    }
    struct rpc *r = &m->r[m->nr++];
    memset(r, 0, sizeof *r);
    r->ts = e->ts_ns;
    r->dur = e->have & LENS_KEV_DUR ? e->dur_ns : 0;
    r->has_ext = (e->have & LENS_KEV_EXTERNAL_ID) != 0;
    r->ext = e->external_id;
    r->pid = e->have & LENS_KEV_PID ? e->pid : -1;
    r->tid = e->have & LENS_KEV_TID ? e->tid : -1;
    r->has_seq = (e->have & LENS_KEV_SEQ) != 0;
    r->seq = e->seq;
    r->rank = (e->have & LENS_KEV_RANK) && e->rank >= 0 && e->rank <= INT32_MAX ? (int32_t)e->rank : -1;
    r->group = e->pg_name[0] ? group_of(m, e->pg_name, e->pg_desc) : -1;
    if (!m->has_cpu_pid && r->pid >= 0) m->cpu_pid = r->pid, m->has_cpu_pid = 1;
  }
  return 0;
}

/* ---- resolution at the end of the file ---- */

static int cmp_rpc_ext(const void *a, const void *b) {
  const struct rpc *x = a, *y = b;
  if (x->has_ext != y->has_ext) return x->has_ext ? -1 : 1;
  return (x->ext > y->ext) - (x->ext < y->ext);
}

static const struct rpc *rpc_by_ext(const struct rpc *v, size_t n, int64_t ext) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (!v[mid].has_ext || v[mid].ext >= ext) hi = mid;
    else lo = mid + 1;
  }
  return lo < n && v[lo].has_ext && v[lo].ext == ext ? &v[lo] : NULL;
}

static int cmp_rpc_thread(const void *a, const void *b) {
  const struct rpc *x = *(const struct rpc *const *)a, *y = *(const struct rpc *const *)b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The record_param_comms op on the launch's thread that encloses it (the
 * latest that starts at or before it). */
static const struct rpc *rpc_enclosing(struct rpc *const *v, size_t n, int64_t pid, int64_t tid, int64_t t) {
  size_t lo = 0, hi = n;
  while (lo < hi) { /* first op past (pid, tid, t) */
    size_t mid = lo + (hi - lo) / 2;
    const struct rpc *r = v[mid];
    int before = r->pid < pid || (r->pid == pid && (r->tid < tid || (r->tid == tid && r->ts <= t)));
    if (before) lo = mid + 1;
    else hi = mid;
  }
  if (!lo) return NULL;
  const struct rpc *r = v[lo - 1];
  return r->pid == pid && r->tid == tid && r->ts <= t && sat_add(r->ts, r->dur) >= t ? r : NULL;
}

/* Kernels in (group key, func, start) order, for the order index. */
static int cmp_k_order(const void *a, const void *b, void *ctx) {
  const struct kk *sort_k = ctx; /* qsort_r: files are mapped on several threads at once */
  const struct kk *x = &sort_k[*(const uint32_t *)a], *y = &sort_k[*(const uint32_t *)b];
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}

/* The rank in a file name: "rank-3", "rank_3", "rank3", "rank-3of8". */
static int rank_from_name(const char *path, int64_t *out) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  for (const char *p = b; (p = strcasestr(p, "rank")); p += 4) {
    const char *q = p + 4;
    if (*q == '-' || *q == '_') q++;
    if (!isdigit((unsigned char)*q)) continue;
    int64_t v = 0;
    while (isdigit((unsigned char)*q) && v < 100000000) v = v * 10 + (*q++ - '0');
    *out = v;
    return 0;
  }
  return -1;
}

/* Epoch ns of a file time: base + ts, 0 (unknown) when it leaves the range
 * a partial holds (job_part.h). */
static uint64_t abs_ns(const struct lens_kineto_info *in, int64_t t) {
  int64_t v;
  if (__builtin_add_overflow(in->has_base ? in->base_ns : 0, t, &v) || v <= 0) return 0;
  return lens_time_ok((uint64_t)v) ? (uint64_t)v : 0;
}

static int build(struct imp *m, const char *path, const struct lens_kineto_info *in, struct lens_job_part *p,
                 struct lens_kineto_job_stats *st, char *err, size_t err_len) {
  /* the rank: distributedInfo, else record_param_comms' Rank, else the name */
  int64_t rank = -1;
  st->rank_from = 0;
  if (in->has_rank) rank = in->rank;
  for (size_t i = 0; rank < 0 && i < m->nr; i++)
    if (m->r[i].rank >= 0) rank = m->r[i].rank, st->rank_from = 1;
  if (rank < 0 && !rank_from_name(path, &rank)) st->rank_from = 2;
  if (rank < 0 || rank > INT32_MAX) {
    snprintf(err, err_len, "%s: no rank (no distributedInfo, record_param_comms Rank or rank-N in its name)", path);
    return -1;
  }
  st->rank = rank;
  st->world_size = in->has_world_size ? in->world_size : 0;
  /* API calls by External id (modern files) or by the op enclosing the launch */
  if (m->nr) qsort(m->r, m->nr, sizeof *m->r, cmp_rpc_ext);
  struct rpc **by_thread = malloc((m->nr ? m->nr : 1) * sizeof *by_thread);
  uint32_t *ord = malloc((m->nk ? m->nk : 1) * sizeof *ord);
  int64_t *api = calloc(m->nk ? m->nk : 1, sizeof *api);
  if (!by_thread || !ord || !api) {
    free(by_thread), free(ord), free(api);
    return snprintf(err, err_len, "out of memory"), -1;
  }
  for (size_t i = 0; i < m->nr; i++) by_thread[i] = &m->r[i];
  if (m->nr) qsort(by_thread, m->nr, sizeof *by_thread, cmp_rpc_thread);
  for (size_t i = 0; i < m->nk; i++) {
    struct kk *k = &m->k[i];
    const struct rpc *r = k->has_ext ? rpc_by_ext(m->r, m->nr, k->ext) : NULL;
    if (!r && k->has_launch) r = rpc_enclosing(by_thread, m->nr, k->launch_pid, k->launch_tid, k->launch_ts);
    if (r) {
      api[i] = r->ts;
      if (!k->has_seq && r->has_seq) k->seq = r->seq, k->has_seq = 1;
      if (k->group < 0 && r->group >= 0) k->group = r->group;
    } else {
      st->no_api++;
    }
    if (!k->has_launch) st->no_launch++;
    if (k->group < 0) { /* no process group anywhere: the kernel's stream stands for it */
      char key[64];
      snprintf(key, sizeof key, "stream %d", k->stream);
      k->group = group_of(m, key, NULL);
    }
  }
  free(by_thread);
  /* Seq where every kernel of the group has one, else order */
  char *group_seq = malloc(m->ngroups ? m->ngroups : 1);
  if (!group_seq) {
    free(ord), free(api);
    return snprintf(err, err_len, "out of memory"), -1;
  }
  memset(group_seq, 1, m->ngroups ? m->ngroups : 1);
  for (size_t i = 0; i < m->nk; i++)
    if (m->k[i].group < 0 || !m->k[i].has_seq) {
      if (m->k[i].group >= 0) group_seq[m->k[i].group] = 0;
    }
  for (size_t i = 0; i < m->nk; i++) ord[i] = (uint32_t)i;
    if (m->nk) qsort_r(ord, m->nk, sizeof *ord, cmp_k_order, m->k);
  /* the partial */
  memset(p, 0, sizeof *p);
  p->files = calloc(1, sizeof *p->files);
  p->procs = calloc(1, sizeof *p->procs);
  p->comms = calloc(m->ngroups ? m->ngroups : 1, sizeof *p->comms);
  p->recs = calloc(m->nk ? m->nk : 1, sizeof *p->recs);
  p->clocks = calloc(1, sizeof *p->clocks);
  int rc = -1;
  if (!p->files || !p->procs || !p->comms || !p->recs || !p->clocks || !(p->files[0] = strdup(path))) goto oom;
  p->n_files = 1;
  p->n_procs = 1;
  /* Each rank's file is its own host for the alignment (the file does not
   * name its machine, and each process has its own CUPTI fit). */
  snprintf(p->procs[0].host, sizeof p->procs[0].host, "kineto-rank%lld", (long long)rank);
  p->procs[0].pid = m->has_cpu_pid && m->cpu_pid >= 0 && m->cpu_pid <= UINT32_MAX ? (uint32_t)m->cpu_pid : 0;
  p->have_clock_map = 1; /* GPU times are on the host's (wall) clock: Kineto mapped them */
  p->have_ce = 1;
  uint64_t first_t = 0;
  int64_t prev_group = -2, prev_func = -2, order = 0;
  for (size_t q = 0; q < m->nk; q++) {
    const struct kk *k = &m->k[ord[q]];
    if (k->group < 0) { /* past MAX_GROUPS process groups: counted, not matched */
      st->dropped++;
      continue;
    }
    if (k->group != prev_group || k->func != prev_func) order = 0, prev_group = k->group, prev_func = k->func;
    struct lens_job_prec *x = &p->recs[p->n_recs++];
    const struct group *g = &m->groups[k->group];
    x->comm_id = lens_kineto_pg_comm_id(g->key);
    int by_seq = group_seq[k->group];
    x->seq = by_seq ? k->seq : order;
    order++;
    if (by_seq) st->by_seq++;
    else st->by_order++, x->iflags |= LENS_JOB_BY_ORDER;
    x->kind = 0;
    x->func = k->func;
    x->a = x->b = -1;
    int64_t nr = k->gsize > 0 ? k->gsize : k->pg_ranks_n ? (int64_t)k->pg_ranks_n : st->world_size;
    x->nranks = nr > 0 && nr <= INT32_MAX ? (int32_t)nr : 0;
    const char *fn = m->funcs[k->func];
    if (!(x->func_s = lens_job_part_intern(&p->strings, fn))) goto oom;
    /* ranks that do not end together by design: rooted and point-to-point work */
    if (!strcmp(fn, "Broadcast") || !strcmp(fn, "Reduce") || !strcmp(fn, "Send") || !strcmp(fn, "Recv") ||
        !strcmp(fn, "SendRecv") || !strcmp(fn, "AllToAll") || !strcmp(fn, "Gather") || !strcmp(fn, "Scatter"))
      x->iflags |= LENS_JOB_APPROX_RULE;
    uint64_t es = dtype_size(k->dtype);
    int64_t ne = !strcmp(fn, "AllGather") ? k->out_n : k->in_n;
    x->bytes = ne > 0 && es ? (uint64_t)ne * es : 0;
    struct lens_job_rank *r = &x->r;
    r->rank = (int32_t)rank;
    r->proc = 0;
    r->event = -1;
    r->span_ns = (uint64_t)k->dur;
    r->kstart_mono_ns = abs_ns(in, k->ts);
    r->kstop_mono_ns = r->kstart_mono_ns ? abs_ns(in, sat_add(k->ts, k->dur)) : 0;
    r->map_err_ns = LENS_KINETO_MAP_ERR_NS;
    r->api_ns = api[ord[q]] ? abs_ns(in, api[ord[q]]) : 0;
    if (k->has_launch && k->launch_dur >= 0) {
      r->launch_start_ns = abs_ns(in, k->launch_ts);
      r->launch_stop_ns = r->launch_start_ns ? abs_ns(in, sat_add(k->launch_ts, k->launch_dur)) : 0;
    }
    /* the end on the wall clock, within the mapping's error: a sync point */
    if (r->kstop_mono_ns > LENS_KINETO_MAP_ERR_NS) {
      r->end_lo_ns = r->kstop_mono_ns - LENS_KINETO_MAP_ERR_NS;
      r->end_hi_ns = r->kstop_mono_ns + LENS_KINETO_MAP_ERR_NS;
    }
    lens_job_rank_clear_bad_times(r);
    if (r->kstart_mono_ns && (!first_t || r->kstart_mono_ns < first_t)) first_t = r->kstart_mono_ns;
  }
  for (size_t i = 0; i < m->ngroups; i++) {
    struct lens_job_pcomm *c = &p->comms[p->n_comms++];
    int64_t nr = 0;
    for (size_t q = 0; q < p->n_recs && !nr; q++)
      if (p->recs[q].comm_id == lens_kineto_pg_comm_id(m->groups[i].key)) nr = p->recs[q].nranks;
    *c = (struct lens_job_pcomm){.proc = 0, .rank = (int32_t)rank, .nranks = (int32_t)nr,
                                 .comm_id = lens_kineto_pg_comm_id(m->groups[i].key)};
    if (m->groups[i].desc[0]) snprintf(c->name, sizeof c->name, "%s", m->groups[i].desc);
    else snprintf(c->name, sizeof c->name, "pg %.120s", m->groups[i].key);
  }
  /* its clock: the host's wall clock as is (offset 0 against REALTIME), placed
   * within the assumed bound until the sync points narrow it */
  struct lens_align_proc_clock *c = &p->clocks[0];
  snprintf(c->host, sizeof c->host, "%s", p->procs[0].host);
  c->has_clock = 1;
  c->n_ranks = (uint32_t)p->n_comms;
  c->bound_ns = LENS_KINETO_WALL_BOUND_NS;
  c->ref_mono_ns = first_t;
  c->start_mono_ns = first_t;
  c->real_minus_mono_ns = 0;
  c->drift_ppm = 0;
  c->drift_err_ppm = LENS_ALIGN_DRIFT_UNKNOWN_PPM;
  rc = 0;
  goto out;
oom:
  snprintf(err, err_len, "out of memory");
  lens_job_part_free(p);
out:
  free(group_seq);
  free(ord);
  free(api);
  return rc;
}

int lens_kineto_job_map(const char *path, struct lens_job_part *p, struct lens_kineto_job_stats *st_out, char *err,
                        size_t err_len) {
  struct lens_kineto_job_stats st_local;
  struct lens_kineto_job_stats *st = st_out ? st_out : &st_local;
  memset(st, 0, sizeof *st);
  memset(p, 0, sizeof *p);
  struct imp *m = calloc(1, sizeof *m);
  if (!m || !(m->groups = calloc(MAX_GROUPS, sizeof *m->groups)) || lw_init(&m->lw)) {
    if (m) free(m->groups), free(m->lw.slot[0]), free(m->lw.slot[1]);
    free(m);
    return snprintf(err, err_len, "out of memory"), -1;
  }
  struct lens_kineto_info in;
  int rc = lens_kineto_read(path, on_event, m, &in, err, err_len);
  if (m->oom) rc = -1, snprintf(err, err_len, "%s: out of memory", path);
  st->events = in.events;
  st->nccl_kernels = m->nk;
  st->modern = in.has_base;
  if (!rc) rc = build(m, path, &in, p, st, err, err_len);
  st->dropped += m->dropped;
  st->launches_evicted = m->lw.evicted;
  free(m->k), free(m->r), free(m->kcorr), free(m->kcorr_idx), free(m->groups);
  free(m->lw.slot[0]), free(m->lw.slot[1]);
  free(m);
  return rc;
}
