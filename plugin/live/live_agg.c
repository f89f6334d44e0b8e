/* Live aggregation on the writer thread (plugin/live/live.h, docs/metrics.md).
 *
 * Records arrive in ring form, one thread's ring at a time, so a KernelCh
 * may be seen before the Coll it belongs to (the proxy's ring drained first):
 * instances are kept in a fixed table keyed by the Coll/P2p id, created by
 * whichever record comes first, and closed when the Coll has stopped and as
 * many channels stopped as it announced (nChannels). Entries older than
 * LIVE_EVICT_NS are closed as they are (a dropped record, a mask without
 * KernelCh) and counted in `unmatched` when a channel never found its Coll.
 * Fixed tables, no allocation after the first session. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "counters.h"
#include "hooks.h"
#include "live.h"

#define LIVE_INST 8192u     /* in-flight collectives (power of 2) */
#define LIVE_KCH 16384u     /* in-flight channels (power of 2) */
#define LIVE_SERIES_HASH 1024u
#define LIVE_API 4096u      /* in-flight CollApi/P2pApi start times */
#define LIVE_EVICT_NS 5000000000ull

struct inst {
  uint64_t id; /* 0 = free */
  uint64_t seq, bytes, born_mono, start_mono, api_start_mono, api_id;
  uint64_t gpu_min, gpu_max;
  uint16_t series, comm; /* 0xFFFF = not yet known */
  uint16_t nch, ch_started, ch_stopped;
  uint8_t started, stopped;
  int32_t rank;
};
struct kch {
  uint64_t id, coll; /* 0 = free */
  uint64_t start_gpu;
};
struct api {
  uint64_t id, start_mono;
};

static struct lens_live_page *g_p; /* private copy, allocated once */
static struct inst *g_inst;
static struct kch *g_kch;
static struct api *g_api;
static uint16_t g_series_hash[LIVE_SERIES_HASH]; /* index + 1 */
static uint64_t g_ctx[LENS_LIVE_COMMS];          /* context of comms[i] */
static int64_t g_notice_off[LENS_LIVE_COMMS];    /* min(notice - pTimer stop) per rank's GPU */
static int g_on, g_open;
static uint64_t g_period_ns, g_last_pub;

struct lens_live_page *lens_live_private(void) { return g_p; }

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

void lens_live_begin(int on, uint32_t period_ms, int dirfd, int pid, const char *host) {
  g_on = on && dirfd >= 0; /* no registry directory: nowhere to publish, nothing to aggregate */
  if (!g_on) return;
  g_period_ns = (uint64_t)period_ms * 1000000ull;
  if (!g_p) {
    g_p = calloc(1, sizeof *g_p);
    g_inst = calloc(LIVE_INST, sizeof *g_inst);
    g_kch = calloc(LIVE_KCH, sizeof *g_kch);
    g_api = calloc(LIVE_API, sizeof *g_api);
    if (!g_p || !g_inst || !g_kch || !g_api) {
      free(g_p), free(g_inst), free(g_kch), free(g_api);
      g_p = NULL, g_inst = NULL, g_kch = NULL, g_api = NULL;
      g_on = 0;
      return;
    }
  }
  memset(g_p, 0, sizeof *g_p);
  memset(g_inst, 0, LIVE_INST * sizeof *g_inst);
  memset(g_kch, 0, LIVE_KCH * sizeof *g_kch);
  memset(g_api, 0, LIVE_API * sizeof *g_api);
  memset(g_series_hash, 0, sizeof g_series_hash);
  memset(g_ctx, 0, sizeof g_ctx);
  for (int i = 0; i < LENS_LIVE_COMMS; i++) g_notice_off[i] = INT64_MAX;
  g_p->magic = LENS_LIVE_MAGIC;
  g_p->version = LENS_LIVE_VERSION;
  g_p->size = sizeof *g_p;
  g_p->pid = (uint32_t)pid;
  g_p->state = LENS_LIVE_RUNNING;
  g_p->start_mono_ns = lens_mono_ns();
  g_p->start_real_ns = lens_real_ns();
  snprintf(g_p->host, sizeof g_p->host, "%s", host);
  g_open = lens_live_page_open(dirfd, pid) == 0;
  g_on = g_open; /* a page we cannot publish is not worth aggregating */
  g_last_pub = 0;
}

/* ---- communicators ---- */

/* Finalized communicators match too: their last records are drained after
 * the COMM_FINI that the writer handles first (contexts carry a generation,
 * so a reused table entry is a different value). */
static int comm_of(uint64_t ctx) {
  for (uint32_t i = 0; i < g_p->n_comms; i++)
    if (g_ctx[i] == ctx) return (int)i;
  return -1;
}

static int comm_add(uint64_t ctx, uint64_t comm_id, int rank, int nranks, int nnodes, const char *name) {
  int i = comm_of(ctx);
  if (i >= 0 || g_p->n_comms >= LENS_LIVE_COMMS) return i;
  i = (int)g_p->n_comms++;
  struct lens_live_comm *lc = &g_p->comms[i];
  g_ctx[i] = ctx;
  lc->comm_id = comm_id;
  lc->rank = rank;
  lc->nranks = nranks;
  lc->nnodes = nnodes;
  lc->live = 1;
  size_t n = name ? strnlen(name, sizeof lc->name - 1) : 0; /* truncated */
  if (n) memcpy(lc->name, name, n);
  lc->name[n] = 0;
  return i;
}

/* A Coll may be drained before its communicator's COMM record reaches the
 * writer (init posts it; the app starts at once): the table that issued the
 * context knows it already. */
static int comm_find(uint64_t ctx) {
  int i = comm_of(ctx);
  if (i >= 0) return i;
  const struct lens_comm_info *c = lens_comm_lookup(ctx);
  return c ? comm_add(ctx, c->comm_id, c->rank, c->nranks, c->nnodes, c->name) : -1;
}

void lens_live_on_chunk(uint16_t type, const void *payload, uint32_t len) {
  if (!g_on || !g_p) return;
  if (type == LENS_CHUNK_COMM && len >= sizeof(struct lens_comm_rec)) {
    const struct lens_comm_rec *c = payload;
    char name[sizeof c->name + 1];
    memcpy(name, c->name, sizeof c->name);
    name[sizeof c->name] = 0;
    comm_add(c->context, c->comm_id, c->rank, c->nranks, c->nnodes, name);
  } else if (type == LENS_CHUNK_COMM_FINI && len >= sizeof(uint64_t)) {
    uint64_t ctx;
    memcpy(&ctx, payload, sizeof ctx);
    int i = comm_of(ctx);
    if (i >= 0) g_p->comms[i].live = 0; /* kept: its series stay exported */
  }
}

/* ---- series ---- */

static void copy_name(char *dst, size_t cap, const char *src) {
  if (!src) {
    dst[0] = 0;
    return;
  }
  size_t n = strnlen(src, cap - 1);
  memcpy(dst, src, n);
  dst[n] = 0;
}

static int size_bucket(uint64_t bytes) {
  if (!bytes) return 255;
  return 63 - __builtin_clzll(bytes);
}

static size_t dtype_size(const char *dt) {
  static const struct { const char *name; uint8_t size; } t[] = {
      {"ncclInt8", 1},    {"ncclChar", 1},    {"ncclUint8", 1},   {"ncclInt32", 4},      {"ncclInt", 4},
      {"ncclUint32", 4},  {"ncclInt64", 8},   {"ncclUint64", 8},  {"ncclFloat16", 2},    {"ncclHalf", 2},
      {"ncclFloat32", 4}, {"ncclFloat", 4},   {"ncclFloat64", 8}, {"ncclDouble", 8},     {"ncclBfloat16", 2},
      {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}};
  if (!dt) return 0;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strncmp(dt, t[i].name, 16)) return t[i].size;
  return 0;
}

static uint16_t series_of(int comm, const char *func, const char *algo, const char *proto, int bucket,
                          uint64_t tag, int p2p) {
  struct lens_live_series k;
  memset(&k, 0, sizeof k);
  copy_name(k.func, sizeof k.func, func);
  copy_name(k.algo, sizeof k.algo, algo);
  copy_name(k.proto, sizeof k.proto, proto);
  uint64_t h = mix((uint64_t)comm << 48 ^ (uint64_t)bucket << 40 ^ tag ^ (uint64_t)p2p << 39);
  for (const char *s = k.func; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  for (const char *s = k.algo; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  for (const char *s = k.proto; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
  for (uint32_t probe = 0; probe < LIVE_SERIES_HASH; probe++) {
    uint32_t slot = (uint32_t)(h + probe) & (LIVE_SERIES_HASH - 1);
    uint16_t v = g_series_hash[slot];
    if (!v) {
      if (g_p->n_series >= LENS_LIVE_SERIES) break;
      uint16_t i = (uint16_t)g_p->n_series++;
      struct lens_live_series *s = &g_p->series[i];
      *s = k;
      s->comm = (uint16_t)comm;
      s->size_bucket = (uint8_t)bucket;
      s->is_p2p = (uint8_t)p2p;
      s->user_tag = tag;
      g_series_hash[slot] = (uint16_t)(i + 1);
      return i;
    }
    struct lens_live_series *s = &g_p->series[v - 1];
    if (s->comm == comm && s->size_bucket == bucket && s->user_tag == tag && s->is_p2p == p2p &&
        !strcmp(s->func, k.func) && !strcmp(s->algo, k.algo) && !strcmp(s->proto, k.proto))
      return (uint16_t)(v - 1);
  }
  g_p->series_overflow++;
  return 0xFFFF;
}

static void hist_add(struct lens_live_hist *h, uint64_t ns) {
  h->count++;
  h->sum_ns += ns;
  h->bucket[lens_live_time_bucket(ns)]++;
}

/* ---- in-flight tables ---- */

static struct inst *inst_find(uint64_t id, int create) {
  uint32_t base = (uint32_t)mix(id);
  for (uint32_t p = 0; p < 64; p++) {
    struct inst *e = &g_inst[(base + p) & (LIVE_INST - 1)];
    if (e->id == id) return e;
    if (!e->id) {
      if (!create) return NULL;
      memset(e, 0, sizeof *e);
      e->id = id;
      e->series = e->comm = 0xFFFF;
      e->born_mono = lens_mono_ns();
      return e;
    }
  }
  return NULL; /* table crowded: this instance is not followed (counts still are) */
}

/* Removes e keeping the probe chains intact (backward-shift deletion). */
static void inst_remove(struct inst *e) {
  uint32_t i = (uint32_t)(e - g_inst);
  for (;;) {
    g_inst[i].id = 0;
    uint32_t j = i;
    for (;;) {
      j = (j + 1) & (LIVE_INST - 1);
      if (!g_inst[j].id) return;
      uint32_t home = (uint32_t)mix(g_inst[j].id) & (LIVE_INST - 1);
      /* j may move to i when its home is not in (i, j] cyclically */
      if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
        g_inst[i] = g_inst[j];
        i = j;
        break;
      }
    }
  }
}

static struct kch *kch_slot(uint64_t id, int create) {
  uint32_t base = (uint32_t)mix(id);
  struct kch *hole = NULL; /* stops leave holes: look at all 16 */
  for (uint32_t p = 0; p < 16; p++) {
    struct kch *e = &g_kch[(base + p) & (LIVE_KCH - 1)];
    if (e->id == id) return e;
    if (!e->id && !hole) hole = e;
  }
  if (!create) return NULL;
  if (hole) return hole;
  return &g_kch[base & (LIVE_KCH - 1)]; /* crowded: overwrite (an old channel is forgotten) */
}

static void inst_close(struct inst *e) {
  if (e->series != 0xFFFF && e->started) {
    struct lens_live_series *s = &g_p->series[e->series];
    if (e->nch && e->ch_stopped >= e->nch && e->gpu_max > e->gpu_min && e->gpu_min) {
      hist_add(&s->span, e->gpu_max - e->gpu_min);
      s->completed++;
      if (!s->is_p2p && e->seq + 1 > s->last_seq_completed) s->last_seq_completed = e->seq + 1;
      if (!s->is_p2p) {
        struct lens_live_instance *r = &g_p->recent[g_p->recent_total++ % LENS_LIVE_RECENT];
        r->comm_id = e->comm < g_p->n_comms ? g_p->comms[e->comm].comm_id : 0;
        r->seq = e->seq;
        r->bytes = e->bytes;
        r->gpu_start_ns = e->gpu_min;
        r->gpu_stop_ns = e->gpu_max;
        r->done_real_ns = lens_real_ns();
        r->series = e->series;
        r->comm = e->comm;
        r->rank = e->rank;
      }
    }
  } else if (e->ch_started) {
    g_p->unmatched += e->ch_started;
  }
  inst_remove(e);
}

static void maybe_close(struct inst *e) {
  if (e->started && e->stopped && e->ch_stopped >= e->nch) inst_close(e);
}

/* ---- records ---- */

static void api_put(uint64_t id, uint64_t ts) {
  struct api *a = &g_api[mix(id) & (LIVE_API - 1)];
  a->id = id;
  a->start_mono = ts;
}

static uint64_t api_get(uint64_t id) {
  struct api *a = &g_api[mix(id) & (LIVE_API - 1)];
  return a->id == id ? a->start_mono : 0;
}

static void on_start(const struct lens_rec_start *r) {
  uint64_t ts = lens_clock_to_mono(r->ts);
  switch (r->h.type) {
  case LENS_T_COLL_API:
  case LENS_T_P2P_API: api_put(r->id, ts); break;
  case LENS_T_COLL:
  case LENS_T_P2P: {
    int comm = comm_find(r->context);
    if (comm < 0) return;
    const char *func, *algo = NULL, *proto = NULL, *dt;
    uint64_t count, tag, seq = 0;
    unsigned nch;
    int p2p = r->h.type == LENS_T_P2P;
    if (!p2p) {
      const struct lens_p_coll *c = (const void *)(r + 1);
      func = (const char *)(uintptr_t)c->func;
      algo = (const char *)(uintptr_t)c->algo;
      proto = (const char *)(uintptr_t)c->proto;
      dt = (const char *)(uintptr_t)c->datatype;
      count = c->count;
      tag = c->user_tag;
      seq = c->seq;
      nch = c->n_channels;
    } else {
      const struct lens_p_p2p *c = (const void *)(r + 1);
      func = (const char *)(uintptr_t)c->func;
      dt = (const char *)(uintptr_t)c->datatype;
      count = c->count;
      tag = c->user_tag;
      nch = c->n_channels;
    }
    uint64_t bytes = count * dtype_size(dt);
    uint16_t si = series_of(comm, func, algo, proto, size_bucket(bytes), tag, p2p);
    if (si == 0xFFFF) return;
    struct lens_live_series *s = &g_p->series[si];
    s->count++;
    s->bytes += bytes;
    if (!p2p && seq + 1 > s->last_seq_started) s->last_seq_started = seq + 1;
    struct inst *e = inst_find(r->id, 1);
    if (!e) return;
    e->series = si;
    e->comm = (uint16_t)comm;
    e->rank = g_p->comms[comm].rank;
    e->seq = seq;
    e->bytes = bytes;
    e->nch = (uint16_t)nch;
    e->started = 1;
    e->start_mono = ts;
    e->api_start_mono = api_get(r->parent);
    maybe_close(e);
    break;
  }
  case LENS_T_CE_COLL: { /* copy-engine collective: a series of its own kind, no channels */
    int comm = comm_find(r->context);
    if (comm < 0) return;
    const struct lens_p_ce_coll *c = (const void *)(r + 1);
    uint64_t bytes = c->count * dtype_size((const char *)(uintptr_t)c->datatype);
    uint16_t si = series_of(comm, (const char *)(uintptr_t)c->func, "CE", (const char *)(uintptr_t)c->sync_strategy,
                            size_bucket(bytes), c->user_tag, LENS_LIVE_KIND_CE);
    if (si == 0xFFFF) return;
    g_p->series[si].count++;
    g_p->series[si].bytes += bytes;
    struct inst *e = inst_find(r->id, 1);
    if (!e) return;
    e->series = si;
    e->comm = (uint16_t)comm;
    e->rank = g_p->comms[comm].rank;
    e->bytes = bytes;
    e->started = 1;
    e->start_mono = ts;
    break;
  }
  case LENS_T_KERNEL_CH: {
    const struct lens_p_kernel_ch *k = (const void *)(r + 1);
    struct inst *e = inst_find(r->parent, 1);
    if (!e) return;
    e->ch_started++;
    struct kch *c = kch_slot(r->id, 1);
    c->id = r->id;
    c->coll = r->parent;
    c->start_gpu = k->start_gpu_ns;
    if (k->start_gpu_ns && (!e->gpu_min || k->start_gpu_ns < e->gpu_min)) e->gpu_min = k->start_gpu_ns;
    break;
  }
  default: break;
  }
}

static void on_stop(const struct lens_rec_stop *r) {
  unsigned type = LENS_ID_TYPE(r->id);
  if (type == LENS_T_COLL || type == LENS_T_P2P) {
    struct inst *e = inst_find(r->id, 0);
    if (!e) return;
    e->stopped = 1;
    if (e->series != 0xFFFF) {
      uint64_t ts = lens_clock_to_mono(r->ts), from = e->api_start_mono ? e->api_start_mono : e->start_mono;
      if (ts >= from) hist_add(&g_p->series[e->series].enqueue, ts - from);
    }
    maybe_close(e);
  } else if (type == LENS_T_CE_COLL) { /* its own time: CeColl start -> stop, the host's enqueue of the copies */
    struct inst *e = inst_find(r->id, 0);
    if (!e) return;
    uint64_t ts = lens_clock_to_mono(r->ts);
    if (e->series != 0xFFFF && ts >= e->start_mono) hist_add(&g_p->series[e->series].enqueue, ts - e->start_mono);
    inst_remove(e);
  } else if (type == LENS_T_KERNEL_CH) {
    struct kch *c = kch_slot(r->id, 0);
    if (!c) return;
    struct inst *e = inst_find(c->coll, 0);
    c->id = 0;
    if (!e) return;
    e->ch_stopped++;
    maybe_close(e);
  }
}

static void on_state(const struct lens_rec_state *r) {
  if (r->h.aux != 22 /* KernelChStop */ || !r->has_args || LENS_ID_TYPE(r->id) != LENS_T_KERNEL_CH) return;
  struct kch *c = kch_slot(r->id, 0);
  if (!c) return;
  struct inst *e = inst_find(c->coll, 0);
  if (!e) return;
  if (r->arg > e->gpu_max) e->gpu_max = r->arg;
  if (e->comm == 0xFFFF || e->series == 0xFFFF) return;
  /* Notice lag: the proxy's host time of the stop minus the GPU's stop; the
   * quickest notice seen on this GPU stands for the clocks' offset (NTP's
   * minimum-delay filter), so the lag is a lower bound that is 0 for it. */
  int64_t d = (int64_t)(lens_clock_to_mono(r->ts) - r->arg);
  if (d < g_notice_off[e->comm]) g_notice_off[e->comm] = d;
  hist_add(&g_p->series[e->series].notice, (uint64_t)(d - g_notice_off[e->comm]));
}

void lens_live_on_record(const struct lens_rec_hdr *h) {
  if (!g_on || !g_p) return;
  g_p->events++;
  switch (h->kind) {
  case LENS_REC_START:
    if (!(((const struct lens_rec_start *)h)->id & LENS_ID_REMOTE)) on_start((const struct lens_rec_start *)h);
    break;
  case LENS_REC_STOP: on_stop((const struct lens_rec_stop *)h); break;
  case LENS_REC_STATE: on_state((const struct lens_rec_state *)h); break;
  default: break;
  }
}

static void evict_old(uint64_t now) {
  for (uint32_t i = 0; i < LIVE_INST; i++) {
    struct inst *e = &g_inst[i];
    while (e->id && now - e->born_mono > LIVE_EVICT_NS) inst_close(e); /* a shifted entry may land here */
  }
}

static void publish(uint64_t now) {
  struct lens_drops d;
  lens_counters_snapshot(&d);
  g_p->drops = d.ring_full + d.no_thread_slot;
  g_p->updated_mono_ns = now;
  g_p->updated_real_ns = lens_real_ns();
  if (g_open) lens_live_page_publish(g_p);
  g_last_pub = now;
}

void lens_live_tick(uint64_t now) {
  if (!g_on || !g_p || now - g_last_pub < g_period_ns) return;
  evict_old(now);
  publish(now);
}

void lens_live_end(void) {
  if (!g_on || !g_p) return;
  uint64_t now = lens_mono_ns();
  for (uint32_t i = 0; i < LIVE_INST; i++)
    while (g_inst[i].id && g_inst[i].started && g_inst[i].stopped && g_inst[i].ch_stopped >= g_inst[i].ch_started &&
           g_inst[i].ch_started)
      inst_close(&g_inst[i]);
  g_p->state = LENS_LIVE_FINISHED;
  publish(now);
  lens_live_page_close();
  g_open = 0;
}
