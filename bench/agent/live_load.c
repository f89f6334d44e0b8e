/* lens-live-load: one simulated rank, for the agent's budget (agent_bench.sh).
 * Loads the plugin like NCCL does and calls it with NCCL-shaped collectives
 * (GroupApi > CollApi > Group > Coll, KernelLaunch, 2 KernelCh with pTimer
 * start/stop, 2 ProxyOps of 4 steps each: 44 callbacks per collective) at a
 * paced rate of callbacks per second, so the writer aggregates them into the
 * live page the agent reads. GPU times are made up (each rank's span is the
 * execution plus rank x 10 us of waiting), as the agent only splits them.
 *
 * Usage: lens-live-load --rank R --nranks N [--rate CALLBACKS_PER_S] [--seconds S] [--min-collectives C]
 *                       [--plugin PATH]
 * --min-collectives: go on past S seconds (up to 10 x S) until C collectives
 * are done: a test that needs a count gets it on a slow (sanitized, loaded)
 * machine too.
 * Prints: rank, callbacks, collectives, seconds, achieved rate. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl-lens/nccl_profiler_abi.h"

#define STEPS 4
#define CALLS_PER_COLL 44

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void quiet_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

static int g_pid;

static void one_collective(lens_nccl_profiler_v5_t *t, void *ctx, int rank, uint64_t seq) {
  lens_nccl_descr_v5_t d;
  lens_nccl_state_args_v5_t sa;
  void *ga = NULL, *ca = NULL, *g = NULL, *c = NULL, *kl = NULL, *kc[2] = {0}, *po[2] = {0}, *st = NULL;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_GROUP_API;
  d.groupApi.groupDepth = 1;
  t->startEvent(ctx, &ga, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_COLL_API;
  d.parentObj = ga;
  d.collApi.func = "AllReduce";
  d.collApi.datatype = "ncclFloat32";
  d.collApi.count = 1 << 18;
  t->startEvent(ctx, &ca, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_GROUP;
  d.parentObj = ga;
  t->startEvent(ctx, &g, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_COLL;
  d.parentObj = ca;
  d.rank = rank;
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.count = 1 << 18;
  d.coll.nChannels = 2;
  d.coll.parentGroup = g;
  t->startEvent(ctx, &c, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_KERNEL_LAUNCH;
  d.parentObj = ga;
  t->startEvent(ctx, &kl, &d);
  t->stopEvent(kl);
  uint64_t gpu = now_ns() + 1000000000000ull; /* a GPU clock of its own */
  uint64_t wait = (uint64_t)rank * 10000, exec = 50000;
  for (int ch = 0; ch < 2; ch++) {
    memset(&d, 0, sizeof d);
    d.type = LENS_EV_KERNEL_CH;
    d.parentObj = c;
    d.kernelCh.channelId = (uint8_t)ch;
    d.kernelCh.pTimer = gpu;
    t->startEvent(ctx, &kc[ch], &d);
  }
  for (int p = 0; p < 2; p++) {
    memset(&d, 0, sizeof d);
    d.type = LENS_EV_PROXY_OP;
    d.parentObj = c;
    d.proxyOp.pid = g_pid;
    d.proxyOp.channelId = (uint8_t)p;
    d.proxyOp.peer = rank ^ 1;
    d.proxyOp.nSteps = STEPS;
    d.proxyOp.chunkSize = 1 << 17;
    d.proxyOp.isSend = p == 0;
    t->startEvent(ctx, &po[p], &d);
    for (int k = 0; k < STEPS; k++) {
      memset(&d, 0, sizeof d);
      d.type = LENS_EV_PROXY_STEP;
      d.parentObj = po[p];
      d.proxyStep.step = k;
      t->startEvent(ctx, &st, &d);
      sa.proxyStep.transSize = 1 << 17;
      t->recordEventState(st, p == 0 ? LENS_ST_PROXY_STEP_SEND_WAIT : LENS_ST_PROXY_STEP_RECV_WAIT, &sa);
      t->stopEvent(st);
    }
    t->stopEvent(po[p]);
  }
  for (int ch = 0; ch < 2; ch++) {
    sa.kernelCh.pTimer = gpu + wait + exec;
    t->recordEventState(kc[ch], LENS_ST_KERNEL_CH_STOP, &sa);
    t->stopEvent(kc[ch]);
  }
  t->stopEvent(c);
  t->stopEvent(g);
  t->stopEvent(ca);
  t->stopEvent(ga);
}

int main(int argc, char **argv) {
  int rank = 0, nranks = 8;
  double rate = 100e3, seconds = 10;
  unsigned long long min_colls = 0;
  const char *plugin = LENS_PLUGIN_PATH;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rank")) rank = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--nranks")) nranks = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--rate")) rate = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--min-collectives")) min_colls = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--plugin")) plugin = argv[i + 1];
    else {
      fprintf(stderr, "usage: lens-live-load --rank R --nranks N [--rate CALLBACKS_PER_S] [--seconds S] "
                      "[--min-collectives C] [--plugin P]\n");
      return 2;
    }
  }
  g_pid = (int)getpid();
  void *dl = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  lens_nccl_profiler_v5_t *t = dl ? dlsym(dl, "ncclProfiler_v5") : NULL;
  if (!t) {
    fprintf(stderr, "lens-live-load: cannot load %s: %s\n", plugin, dlerror());
    return 1;
  }
  static int mask;
  void *ctx = NULL;
  if (t->init(&ctx, 0x1EE7C0DEull, &mask, "live-load", 1, nranks, rank, quiet_logger) != LENS_NCCL_SUCCESS) {
    fprintf(stderr, "lens-live-load: init failed\n");
    return 1;
  }
  uint64_t t0 = now_ns(), end = t0 + (uint64_t)(seconds * 1e9), hard_end = t0 + (uint64_t)(10 * seconds * 1e9), n = 0;
  for (uint64_t seq = 0;; seq++) {
    uint64_t now = now_ns();
    if (now >= end && (n >= min_colls || now >= hard_end)) break;
    one_collective(t, ctx, rank, seq);
    n++;
    double ahead = (double)n * CALLS_PER_COLL / rate * 1e9 - (double)(now_ns() - t0);
    if (ahead > 200000) {
      struct timespec ts = {0, (long)ahead};
      nanosleep(&ts, NULL);
    }
  }
  double el = (double)(now_ns() - t0) / 1e9;
  t->finalize(ctx);
  printf("rank %d: %llu callbacks, %llu collectives in %.2f s: %.0f callbacks/s\n", rank,
         (unsigned long long)(n * CALLS_PER_COLL), (unsigned long long)n, el, (double)n * CALLS_PER_COLL / el);
  return 0;
}
