/* Loading a profiler plugin and calling it the way NCCL 2.28.9 does
 * (spec §1.2, §1.5, §1.7): name rules, symbol order, init argument order per
 * version, the logger, and the v4 adapter's filtering and field mapping.
 * A v7 plugin is driven as NCCL 2.31.2 drives it (rp_v7.c). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "replay/rp_internal.h"

int rp_event_mask; /* NCCL's ncclProfilerEventMask: one int for every communicator */
atomic_int rp_warn_count;
bool rp_verbose;

int rp_mask_load(void) { return __atomic_load_n(&rp_event_mask, __ATOMIC_RELAXED); }

/* The exact ncclDebugLogger_t signature. */
static void rp_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  if (level == LENS_LOG_WARN) atomic_fetch_add(&rp_warn_count, 1);
  if (!rp_verbose || (level != LENS_LOG_WARN && level != LENS_LOG_INFO) || !fmt) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "replay: plugin %s [%s:%d flags 0x%lx] %s\n", level == LENS_LOG_WARN ? "WARN" : "INFO",
          file ? file : "?", line, flags, msg);
}

/* NCCL's rules (plugin_open.cc): dlopen the value verbatim; if that fails, the
 * value has no '/', and is not already lib*.so, retry libnccl-profiler-X.so. */
static void *open_by_nccl_rules(const char *name, char *used, size_t usedlen, char *err, size_t errlen) {
  void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (dl) {
    snprintf(used, usedlen, "%s", name);
    return dl;
  }
  snprintf(err, errlen, "%s", dlerror());
  size_t len = strlen(name);
  bool libso = strncmp(name, "lib", 3) == 0 && len > 3 && strcmp(name + len - 3, ".so") == 0;
  if (strchr(name, '/') || libso) return NULL;
  snprintf(used, usedlen, "libnccl-profiler-%s.so", name);
  dl = dlopen(used, RTLD_NOW | RTLD_LOCAL);
  if (!dl) snprintf(err, errlen, "%s", dlerror());
  return dl;
}

int rp_plugin_load(struct rp_plugin *p, const char *name, int api_choice, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  if (!name || !*name || !strcasecmp(name, "none")) {
    snprintf(err, errlen, "no plugin (NCCL_PROFILER_PLUGIN=none disables the profiler)");
    return -1;
  }
  p->dl = open_by_nccl_rules(name, p->path, sizeof p->path, err, errlen);
  if (!p->dl) return -1;
  /* 2.28.9 looks up _v5 then older; 2.31.2 starts at _v7, then _v6. */
  static const int order_2289[] = {5, 4, 0}, order_auto[] = {7, 6, 5, 4, 0};
  int forced[2] = {api_choice, 0};
  const int *order = api_choice == LENS_REPLAY_API_NCCL2289 ? order_2289
                     : api_choice == LENS_REPLAY_API_AUTO   ? order_auto
                                                            : forced;
  for (int i = 0; order[i]; i++) {
    char sym[32];
    snprintf(sym, sizeof sym, "ncclProfiler_v%d", order[i]);
    void *s = dlsym(p->dl, sym);
    if (!s) continue;
    p->api = order[i];
    if (p->api == 4)
      p->v4 = s;
    else if (p->api == 7)
      p->v7 = s;
    else
      p->v5 = s; /* v5 and v6 tables have the same function signatures */
    break;
  }
  if (!p->api) {
    snprintf(err, errlen, "%s: no usable ncclProfiler_vN symbol (unsupported)", p->path);
    dlclose(p->dl);
    p->dl = NULL;
    return -1;
  }
  p->set_mask = (int (*)(int))dlsym(p->dl, "ncclLensSetEventMask");
  rp_nccl_version = p->api == 7 ? RP_NCCL_VERSION_2312 : RP_NCCL_VERSION_2289;
  return 0;
}

void rp_plugin_unload(struct rp_plugin *p) {
  if (p->dl) dlclose(p->dl);
  p->dl = NULL;
  p->v4 = NULL;
  p->v5 = NULL;
  p->v7 = NULL;
  p->set_mask = NULL;
}

int rp_plugin_init(struct rp_plugin *p, void **ctx, uint64_t commId, const char *name, int nNodes, int nranks,
                   int rank) {
  int rc;
  if (p->api == 4)
    rc = p->v4->init(ctx, &rp_event_mask, name, commId, nNodes, nranks, rank, rp_logger);
  else if (p->api == 7)
    rc = p->v7->init(ctx, commId, &rp_event_mask, name, nNodes, nranks, rank, rp_logger);
  else
    rc = p->v5->init(ctx, commId, &rp_event_mask, name, nNodes, nranks, rank, rp_logger);
  if (p->api == 7) rp_mask_after_init();
  return rc;
}

void rp_plugin_finalize(struct rp_plugin *p, void *ctx) {
  if (p->api == 4)
    p->v4->finalize(ctx);
  else if (p->api == 7)
    p->v7->finalize(ctx);
  else
    p->v5->finalize(ctx);
}

/* NCCL's v4 adapter: API-level events are dropped without writing the
 * handle; Coll/P2p hang under the legacy Group; the descriptor is not zeroed
 * (we fill it with a pattern so a plugin reading unset fields shows it). */
static void *start_v4(struct rp_plugin *p, void *ctx, const lens_nccl_descr_v6_t *d) {
  switch (d->type) {
  case LENS_EV_GROUP_API:
  case LENS_EV_COLL_API:
  case LENS_EV_P2P_API:
  case LENS_EV_KERNEL_LAUNCH:
  case LENS_EV_CE_COLL:
  case LENS_EV_CE_SYNC:
  case LENS_EV_CE_BATCH:
    return NULL;
  }
  lens_nccl_descr_v4_t v;
  memset(&v, 0xA5, sizeof v);
  v.type = (uint8_t)d->type;
  v.parentObj = d->parentObj;
  v.rank = d->rank;
  switch (d->type) {
  case LENS_EV_COLL:
    v.parentObj = d->coll.parentGroup;
    v.coll.seqNumber = d->coll.seqNumber;
    v.coll.func = d->coll.func;
    v.coll.sendBuff = d->coll.sendBuff;
    v.coll.recvBuff = d->coll.recvBuff;
    v.coll.count = d->coll.count;
    v.coll.root = d->coll.root;
    v.coll.datatype = d->coll.datatype;
    v.coll.nChannels = d->coll.nChannels;
    v.coll.nWarps = d->coll.nWarps;
    v.coll.algo = d->coll.algo;
    v.coll.proto = d->coll.proto;
    break;
  case LENS_EV_P2P:
    v.parentObj = d->p2p.parentGroup;
    v.p2p.func = d->p2p.func;
    v.p2p.buff = d->p2p.buff;
    v.p2p.datatype = d->p2p.datatype;
    v.p2p.count = d->p2p.count;
    v.p2p.peer = d->p2p.peer;
    v.p2p.nChannels = d->p2p.nChannels;
    break;
  case LENS_EV_PROXY_OP:
    v.proxyOp = d->proxyOp;
    break;
  case LENS_EV_PROXY_STEP:
    v.proxyStep = d->proxyStep;
    break;
  case LENS_EV_KERNEL_CH:
    v.kernelCh = d->kernelCh;
    break;
  case LENS_EV_NET_PLUGIN:
    v.netPlugin = d->netPlugin;
    break;
  default:
    break; /* Group, ProxyCtrl: header only */
  }
  void *h = NULL;
  p->v4->startEvent(ctx, &h, &v);
  return h;
}

void *rp_start(struct rp_plugin *p, void *ctx, lens_nccl_descr_v6_t *d) { return rp_start7(p, ctx, d, NULL); }

void *rp_start_v5v6(struct rp_plugin *p, void *ctx, lens_nccl_descr_v6_t *d) {
  if (p->api == 4) return start_v4(p, ctx, d);
  void *h = NULL;
  /* v5 and v6 share every v5 member at the same offsets (spec §1.6). */
  p->v5->startEvent(ctx, &h, (lens_nccl_descr_v5_t *)d);
  return h;
}

void rp_stop_raw(struct rp_plugin *p, void *h) {
  atomic_fetch_add_explicit(&p->calls, 1, memory_order_relaxed);
  if (p->api == 4)
    p->v4->stopEvent(h);
  else if (p->api == 7)
    p->v7->stopEvent(h);
  else
    p->v5->stopEvent(h);
}

void rp_stop(struct rp_plugin *p, void *h) {
  if (h) rp_stop_raw(p, h);
}

void rp_record(struct rp_plugin *p, void *h, int state, lens_nccl_state_args_v5_t *args) {
  if (!h) return;
  if (p->api == 4) {
    /* The v4 adapter forwards 8-12, 13-18 and 19-22 only, with a copied,
     * not zeroed, args union. */
    if (state < 8 || state > 22) return;
    lens_nccl_state_args_v4_t a;
    memset(&a, 0xA5, sizeof a);
    if (args) a = *args;
    atomic_fetch_add_explicit(&p->calls, 1, memory_order_relaxed);
    p->v4->recordEventState(h, (lens_nccl_state_t)state, &a);
    return;
  }
  atomic_fetch_add_explicit(&p->calls, 1, memory_order_relaxed);
  if (p->api == 7)
    p->v7->recordEventState(h, (lens_nccl_state_t)state, args);
  else
    p->v5->recordEventState(h, (lens_nccl_state_t)state, args);
}
