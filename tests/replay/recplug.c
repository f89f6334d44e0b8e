/* A recording profiler plugin for the replay tests: exports ncclProfiler_v4,
 * _v5 and _v6 and appends one text line per call (with the caller's tid and
 * a global sequence number) to the file named by REC_LOG. REC_MASK is the
 * mask it writes at init (default 4095); REC_INIT_FAIL=<rank> makes that
 * rank's init fail. Handles are slots of a static pool, so a handle passed
 * back is printed as its id ("<seq> <pid> <tid> <call> key=value..."), and anything else (foreign, stale-looking) is
 * printed as a raw address without ever being dereferenced. At
 * KernelLaunch start/stop it also logs how many NVTX events the test NVTX
 * tool (NVTX_INJECTION64_PATH) has seen, so tests can tell what ran inside. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nccl-lens/nccl_profiler_abi.h"

#define POOL (1 << 18)
#define NCTX 64
struct ev {
  uint64_t type;
  int id;
};
static struct ev pool[POOL];
static atomic_int npool;
static int ctxpool[NCTX];
static atomic_int nctx;
static atomic_long seq;
static int fd = -1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void out(const char *fmt, ...) {
  char line[768];
  long s = atomic_fetch_add(&seq, 1);
  int k = snprintf(line, sizeof line, "%ld %d %ld ", s, (int)getpid(), (long)syscall(SYS_gettid));
  va_list ap;
  va_start(ap, fmt);
  k += vsnprintf(line + k, sizeof line - (size_t)k - 1, fmt, ap);
  va_end(ap);
  if (k > (int)sizeof line - 2) k = (int)sizeof line - 2;
  line[k++] = '\n';
  pthread_mutex_lock(&mu);
  if (fd < 0) {
    const char *p = getenv("REC_LOG");
    fd = p ? open(p, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
  }
  if (fd >= 0) {
    ssize_t w = write(fd, line, (size_t)k);
    (void)w;
  }
  pthread_mutex_unlock(&mu);
}

/* "e<id>" for our handles, "0" for NULL, "x<addr>" for anything else. */
static const char *hname(const void *h, char *buf) {
  if (!h) return "0";
  if ((const char *)h >= (const char *)pool && (const char *)h < (const char *)(pool + POOL))
    sprintf(buf, "e%d", ((const struct ev *)h)->id);
  else
    sprintf(buf, "x%" PRIxPTR, (uintptr_t)h);
  return buf;
}
static const char *cname(const void *c, char *buf) {
  if (!c) return "0";
  if ((const char *)c >= (const char *)ctxpool && (const char *)c < (const char *)(ctxpool + NCTX))
    sprintf(buf, "c%d", *(const int *)c);
  else
    sprintf(buf, "x%" PRIxPTR, (uintptr_t)c);
  return buf;
}

static uint64_t nvtx_count(void) {
  const char *p = getenv("NVTX_INJECTION64_PATH");
  if (!p) return 0;
  void *dl = dlopen(p, RTLD_NOW | RTLD_NOLOAD);
  if (!dl) return 0;
  const uint64_t *(*fn)(void) = (const uint64_t *(*)(void))dlsym(dl, "nvtx_inject_log");
  uint64_t n = fn ? *fn() : 0; /* count is the first member */
  dlclose(dl);
  return n;
}

static int init_common(void **ctx, int *mask, const char *api, uint64_t id, const char *name, int nNodes,
                       int nranks, int rank, lens_nccl_logger_t log) {
  const char *m = getenv("REC_MASK");
  /* one int shared by every communicator, written by concurrent inits */
  __atomic_store_n(mask, m ? (int)strtol(m, NULL, 0) : 4095, __ATOMIC_RELAXED);
  int i = atomic_fetch_add(&nctx, 1) % NCTX;
  ctxpool[i] = i;
  *ctx = &ctxpool[i];
  out("init api=%s ctx=c%d commId=0x%" PRIx64 " name=%s nNodes=%d nranks=%d rank=%d", api, i, id,
      name ? name : "(null)", nNodes, nranks, rank);
  if (log) log(LENS_LOG_INFO, LENS_NCCL_SUBSYS_INIT, __FILE__, __LINE__, "rec init rank %d", rank);
  const char *f = getenv("REC_INIT_FAIL");
  if (f && atoi(f) == rank) {
    if (log) log(LENS_LOG_WARN, LENS_NCCL_SUBSYS_INIT, __FILE__, __LINE__, "rec: failing init of rank %d", rank);
    return LENS_NCCL_INTERNAL_ERROR;
  }
  return 0;
}

static int init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nNodes, int nranks, int rank,
                   lens_nccl_logger_t log) {
  return init_common(ctx, mask, "4", hash, name, nNodes, nranks, rank, log);
}
static int init_v5(void **ctx, uint64_t id, int *mask, const char *name, int nNodes, int nranks, int rank,
                   lens_nccl_logger_t log) {
  return init_common(ctx, mask, "5", id, name, nNodes, nranks, rank, log);
}

static void *new_handle(uint64_t type) {
  int i = atomic_fetch_add(&npool, 1);
  if (i >= POOL) return NULL;
  pool[i].type = type;
  pool[i].id = i + 1;
  return &pool[i];
}

static int start_v5(void *ctx, void **h, lens_nccl_descr_v5_t *d) {
  char b1[40], b2[40], b3[40], f[256] = "";
  void *e = new_handle(d->type);
  switch (d->type) {
  case LENS_EV_GROUP_API:
    snprintf(f, sizeof f, "depth=%d graph=%d", d->groupApi.groupDepth, d->groupApi.graphCaptured);
    break;
  case LENS_EV_COLL_API:
    snprintf(f, sizeof f, "func=%s count=%zu dtype=%s root=%d graph=%d", d->collApi.func, d->collApi.count,
             d->collApi.datatype, d->collApi.root, d->collApi.graphCaptured);
    break;
  case LENS_EV_P2P_API:
    snprintf(f, sizeof f, "func=%s count=%zu dtype=%s graph=%d", d->p2pApi.func, d->p2pApi.count,
             d->p2pApi.datatype, d->p2pApi.graphCaptured);
    break;
  case LENS_EV_KERNEL_LAUNCH:
    snprintf(f, sizeof f, "nvtx=%" PRIu64, nvtx_count());
    break;
  case LENS_EV_COLL:
    snprintf(f, sizeof f, "seq=%" PRIu64 " func=%s count=%zu dtype=%s nch=%d algo=%s proto=%s pgroup=%s",
             d->coll.seqNumber, d->coll.func, d->coll.count, d->coll.datatype, d->coll.nChannels, d->coll.algo,
             d->coll.proto, hname(d->coll.parentGroup, b3));
    break;
  case LENS_EV_P2P:
    snprintf(f, sizeof f, "func=%s count=%zu dtype=%s peer=%d nch=%d pgroup=%s", d->p2p.func, d->p2p.count,
             d->p2p.datatype, d->p2p.peer, d->p2p.nChannels, hname(d->p2p.parentGroup, b3));
    break;
  case LENS_EV_PROXY_OP:
    snprintf(f, sizeof f, "pid=%d ch=%d peer=%d nsteps=%d chunk=%d send=%d", d->proxyOp.pid, d->proxyOp.channelId,
             d->proxyOp.peer, d->proxyOp.nSteps, d->proxyOp.chunkSize, d->proxyOp.isSend);
    break;
  case LENS_EV_PROXY_STEP:
    snprintf(f, sizeof f, "step=%d", d->proxyStep.step);
    break;
  case LENS_EV_KERNEL_CH:
    snprintf(f, sizeof f, "ch=%d ptimer=%" PRIu64, d->kernelCh.channelId, d->kernelCh.pTimer);
    break;
  case LENS_EV_NET_PLUGIN:
    snprintf(f, sizeof f, "netid=0x%" PRIx64, (uint64_t)d->netPlugin.id);
    break;
  }
  out("start id=%s type=%" PRIu64 " parent=%s ctx=%s rank=%d %s", hname(e, b1), d->type, hname(d->parentObj, b2),
      cname(ctx, b3 + 20), d->rank, f);
  *h = e;
  return 0;
}

static int start_v4(void *ctx, void **h, lens_nccl_descr_v4_t *d) {
  char b1[40], b2[40], b3[40], f[256] = "";
  void *e = new_handle(d->type);
  switch (d->type) {
  case LENS_EV_COLL:
    snprintf(f, sizeof f, "seq=%" PRIu64 " func=%s count=%zu dtype=%s nch=%d algo=%s proto=%s", d->coll.seqNumber,
             d->coll.func, d->coll.count, d->coll.datatype, d->coll.nChannels, d->coll.algo, d->coll.proto);
    break;
  case LENS_EV_P2P:
    snprintf(f, sizeof f, "func=%s count=%zu dtype=%s peer=%d nch=%d", d->p2p.func, d->p2p.count, d->p2p.datatype,
             d->p2p.peer, d->p2p.nChannels);
    break;
  case LENS_EV_KERNEL_CH:
    snprintf(f, sizeof f, "ch=%d ptimer=%" PRIu64, d->kernelCh.channelId, d->kernelCh.pTimer);
    break;
  case LENS_EV_PROXY_OP:
    snprintf(f, sizeof f, "pid=%d ch=%d peer=%d nsteps=%d send=%d", d->proxyOp.pid, d->proxyOp.channelId,
             d->proxyOp.peer, d->proxyOp.nSteps, d->proxyOp.isSend);
    break;
  case LENS_EV_PROXY_STEP:
    snprintf(f, sizeof f, "step=%d", d->proxyStep.step);
    break;
  }
  out("start id=%s type=%d parent=%s ctx=%s rank=%d %s", hname(e, b1), d->type, hname(d->parentObj, b2),
      cname(ctx, b3), d->rank, f);
  *h = e;
  return 0;
}

static int stop_ev(void *h) {
  char b[40], f[64] = "";
  if (h && (char *)h >= (char *)pool && (char *)h < (char *)(pool + POOL) &&
      ((struct ev *)h)->type == LENS_EV_KERNEL_LAUNCH)
    snprintf(f, sizeof f, " nvtx=%" PRIu64, nvtx_count());
  out("stop id=%s%s", hname(h, b), f);
  return 0;
}

static int record_ev(void *h, lens_nccl_state_t st, lens_nccl_state_args_v5_t *a) {
  char b[40];
  if (!a)
    out("record id=%s state=%d args=null", hname(h, b), (int)st);
  else
    out("record id=%s state=%d args=%" PRIu64, hname(h, b), (int)st, (uint64_t)a->kernelCh.pTimer);
  return 0;
}

static int finalize_ev(void *ctx) {
  char b[40];
  out("finalize ctx=%s", cname(ctx, b));
  return 0;
}

__attribute__((visibility("default"))) const lens_nccl_profiler_v4_t ncclProfiler_v4 = {
    "rec", init_v4, start_v4, stop_ev, record_ev, finalize_ev};
__attribute__((visibility("default"))) const lens_nccl_profiler_v5_t ncclProfiler_v5 = {
    "rec", init_v5, start_v5, stop_ev, record_ev, finalize_ev};
__attribute__((visibility("default"))) const lens_nccl_profiler_v6_t ncclProfiler_v6 = {
    "rec", init_v5, (int (*)(void *, void **, lens_nccl_descr_v6_t *))start_v5, stop_ev, record_ev, finalize_ev};
