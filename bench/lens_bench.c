/* lens-bench: the cost of a profiler plugin per NCCL callback, and the
 * throughput of its writer.
 *
 * Latency: for each thread count, every thread calls one kind of callback
 * BATCH times between two clock_gettime reads (no rdtsc), many batches; the
 * table shows the median and p99 of ns per call over batches, for the
 * plugin under test and for a do-nothing plugin run in the same process,
 * and their difference. Throughput: N threads emit start/stop pairs as fast
 * as they can for a few seconds; the trace's FINI and DROPS chunks give
 * events written per second and drops.
 *
 * Compare: one NCCL-shaped operation (every event released by its stops)
 * timed for the do-nothing plugin, ours, and another plugin (--compare
 * PATH, e.g. NVIDIA's ext-profiler example), all at the same event mask.
 *
 * Usage: lens-bench [--plugin PATH] [--nop PATH] [--threads 1,2,4]
 *                   [--batches N] [--seconds S] [--rate M_EVENTS_PER_S]
 *                   [--repeat N] [--compare PATH]
 *                   [--mode latency|throughput|max|paced|compare|all]
 *                   [--out DIR]
 * NVTX is switched off (NCCL_LENS_NVTX=0) and traces go to /dev/shm.
 * NCCL_PROFILE_<X>_POOL_SIZE (NVIDIA's example) default to 16 here: with its
 * own defaults its init fails. A plugin whose init fails is reported, not
 * called. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_stats.h"
#include "lens_exe_dir.h"
#include "nccl-lens/nccl_profiler_abi.h"
#include "nccl-lens/trace_format.h"

#define BATCH 256
#define MAX_THREADS 64

static int g_batches = 2000;
static double g_seconds = 2.0;
static double g_rate = 10e6; /* paced throughput run: events/s over all threads */
static int g_repeat = 1;    /* throughput runs per configuration */
static int g_mask;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void quiet_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {}

/* ---- one plugin, through its v5 table (NCCL 2.28's preferred version) ---- */
struct plug {
  const char *path;
  void *dl;
  lens_nccl_profiler_v5_t *t;
};

static int plug_open(struct plug *p) {
  p->dl = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
  if (!p->dl) {
    fprintf(stderr, "lens-bench: dlopen %s: %s\n", p->path, dlerror());
    return -1;
  }
  p->t = dlsym(p->dl, "ncclProfiler_v5");
  if (!p->t) {
    fprintf(stderr, "lens-bench: %s has no ncclProfiler_v5\n", p->path);
    return -1;
  }
  return 0;
}

/* A failed init leaves no usable context: NVIDIA's example plugin, for
 * one, dereferences it at the first event. Say so instead of crashing. */
static int plug_init(struct plug *p, void **ctx, uint64_t comm_id, const char *name, int nranks, int rank) {
  *ctx = NULL;
  /* plugins keep this pointer (to change the mask later): it must outlive them */
  lens_nccl_result_t r = p->t->init(ctx, comm_id, &g_mask, name, 1, nranks, rank, quiet_logger);
  if (r != LENS_NCCL_SUCCESS) {
    fprintf(stderr, "lens-bench: %s: init failed (ncclResult %d); not measured. NVIDIA's example plugin needs small "
                    "pools: NCCL_PROFILE_<X>_POOL_SIZE (lens-bench sets 16 when unset)\n", p->path, (int)r);
    return -1;
  }
  return 0;
}

/* ---- the operations measured ---- */
enum op {
  OP_STEP_START, OP_STEP_RECORD, OP_STEP_STOP, OP_COLL_START, OP_COLL_STOP, OP_COLLAPI_START,
  OP_KCH_START, OP_KCH_RECORD, OP_COUNT
};
static const char *k_op_names[OP_COUNT] = {"ProxyStep start", "ProxyStep record", "ProxyStep stop", "Coll start",
                                           "Coll stop", "CollApi start", "KernelCh start", "KernelCh record"};

struct lat_arg {
  struct plug *p;
  void *ctx;
  pthread_barrier_t *bar;
  double *samples[OP_COUNT]; /* g_batches each */
  uint64_t null_handles;     /* starts that returned no handle (the plugin dropped them) */
};

static void fill(lens_nccl_descr_v5_t *d, enum op op, void *parent) {
  memset(d, 0, sizeof *d);
  d->parentObj = parent;
  switch (op) {
  case OP_STEP_START: d->type = LENS_EV_PROXY_STEP; d->proxyStep.step = 1; break;
  case OP_COLL_START:
    d->type = LENS_EV_COLL;
    d->coll.func = "AllReduce";
    d->coll.datatype = "ncclFloat32";
    d->coll.algo = "RING";
    d->coll.proto = "SIMPLE";
    d->coll.count = 1 << 20;
    d->coll.nChannels = 8;
    break;
  case OP_COLLAPI_START:
    d->type = LENS_EV_COLL_API;
    d->collApi.func = "AllReduce";
    d->collApi.datatype = "ncclFloat32";
    d->collApi.count = 1 << 20;
    break;
  case OP_KCH_START: d->type = LENS_EV_KERNEL_CH; d->kernelCh.channelId = 3; d->kernelCh.pTimer = 1700000000000000000ull; break;
  default: break;
  }
}

/* A realistic parent chain (GroupApi > CollApi > Group > Coll > ProxyOp), as
 * NCCL builds it, so plugins that follow parent pointers (NVIDIA's example)
 * can be measured too. */
struct chain {
  void *ga, *ca, *g, *c, *po;
};

static void chain_open(lens_nccl_profiler_v5_t *t, void *ctx, struct chain *ch) {
  lens_nccl_descr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_GROUP_API;
  d.groupApi.groupDepth = 1;
  t->startEvent(ctx, &ch->ga, &d);
  fill(&d, OP_COLLAPI_START, ch->ga);
  t->startEvent(ctx, &ch->ca, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_GROUP;
  d.parentObj = ch->ga;
  t->startEvent(ctx, &ch->g, &d);
  fill(&d, OP_COLL_START, ch->ca);
  d.coll.parentGroup = ch->g;
  t->startEvent(ctx, &ch->c, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_PROXY_OP;
  d.parentObj = ch->c;
  d.proxyOp.pid = getpid();
  d.proxyOp.channelId = 1;
  d.proxyOp.nSteps = BATCH;
  d.proxyOp.isSend = 1;
  t->startEvent(ctx, &ch->po, &d);
}

static void chain_close(lens_nccl_profiler_v5_t *t, struct chain *ch) {
  void *hs[] = {ch->po, ch->c, ch->g, ch->ca, ch->ga};
  for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
    if (hs[i]) t->stopEvent(hs[i]);
}

/* Times n calls of one callback as one batch; returns ns per call. */
#define TIMED(n, stmt)                              \
  ({                                                \
    uint64_t t0_ = now_ns();                        \
    for (int i = 0; i < (n); i++) stmt;             \
    (double)(now_ns() - t0_) / (double)(n);         \
  })

static void *lat_thread(void *arg) {
  struct lat_arg *a = arg;
  lens_nccl_profiler_v5_t *t = a->p->t;
  void *h[BATCH], *api[BATCH];
  lens_nccl_descr_v5_t d;
  lens_nccl_state_args_v5_t sa = {.proxyStep = {.transSize = 4096}};
  pthread_barrier_wait(a->bar);
  for (int b = 0; b < g_batches; b++) {
    struct chain ch;
    chain_open(t, a->ctx, &ch);
    /* ProxySteps of one ProxyOp: start, record, stop */
    fill(&d, OP_STEP_START, ch.po);
    a->samples[OP_STEP_START][b] = TIMED(BATCH, (h[i] = NULL, t->startEvent(a->ctx, &h[i], &d)));
    for (int i = 0; i < BATCH; i++) a->null_handles += h[i] == NULL;
    a->samples[OP_STEP_RECORD][b] = TIMED(BATCH, (h[i] ? t->recordEventState(h[i], LENS_ST_PROXY_STEP_SEND_WAIT, &sa) : 0));
    a->samples[OP_STEP_STOP][b] = TIMED(BATCH, (h[i] ? t->stopEvent(h[i]) : 0));
    /* KernelCh of one Coll, on one channel: start, record (stop pTimer), stop */
    fill(&d, OP_KCH_START, ch.c);
    a->samples[OP_KCH_START][b] = TIMED(BATCH, (h[i] = NULL, t->startEvent(a->ctx, &h[i], &d)));
    a->samples[OP_KCH_RECORD][b] = TIMED(BATCH, (h[i] ? t->recordEventState(h[i], LENS_ST_KERNEL_CH_STOP, &sa) : 0));
    TIMED(BATCH, (h[i] ? t->stopEvent(h[i]) : 0));
    /* a group of BATCH CollApi, then one Coll under each, as NCCL does */
    fill(&d, OP_COLLAPI_START, ch.ga);
    a->samples[OP_COLLAPI_START][b] = TIMED(BATCH, (api[i] = NULL, t->startEvent(a->ctx, &api[i], &d)));
    fill(&d, OP_COLL_START, NULL);
    d.coll.parentGroup = ch.g;
    a->samples[OP_COLL_START][b] = TIMED(BATCH, (h[i] = NULL, d.parentObj = api[i], t->startEvent(a->ctx, &h[i], &d)));
    for (int i = 0; i < BATCH; i++) a->null_handles += h[i] == NULL;
    a->samples[OP_COLL_STOP][b] = TIMED(BATCH, (h[i] ? t->stopEvent(h[i]) : 0));
    TIMED(BATCH, (api[i] ? t->stopEvent(api[i]) : 0));
    chain_close(t, &ch);
  }
  return NULL;
}

struct lat_result {
  double med[OP_COUNT], p99[OP_COUNT];
  uint64_t null_handles;
  int ok;
};

static void run_latency(struct plug *p, int nthreads, struct lat_result *res) {
  pthread_t th[MAX_THREADS];
  struct lat_arg args[MAX_THREADS];
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
  void *ctx = NULL;
  memset(res, 0, sizeof *res);
  if (plug_init(p, &ctx, 0xBE7C4, "bench", nthreads, 0) != 0) return;
  res->ok = 1;
  for (int i = 0; i < nthreads; i++) {
    args[i].p = p;
    args[i].ctx = ctx;
    args[i].bar = &bar;
    args[i].null_handles = 0;
    for (int o = 0; o < OP_COUNT; o++) args[i].samples[o] = calloc((size_t)g_batches, sizeof(double));
    pthread_create(&th[i], NULL, lat_thread, &args[i]);
  }
  res->null_handles = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(th[i], NULL);
    res->null_handles += args[i].null_handles;
  }
  p->t->finalize(ctx);
  for (int o = 0; o < OP_COUNT; o++) {
    size_t n = (size_t)g_batches * (size_t)nthreads;
    double *all = malloc(n * sizeof *all);
    for (int i = 0; i < nthreads; i++) memcpy(all + (size_t)i * g_batches, args[i].samples[o], (size_t)g_batches * sizeof(double));
    res->med[o] = bench_percentile(all, n, 50);
    res->p99[o] = bench_percentile(all, n, 99);
    free(all);
    for (int i = 0; i < nthreads; i++) free(args[i].samples[o]);
  }
  pthread_barrier_destroy(&bar);
}

/* ---- compare: one NCCL-shaped operation, the same for every plugin ----
 * GroupApi > CollApi > Coll > KernelCh start > ProxyOp > STEPS x ProxyStep
 * (start, record, stop) > ProxyOp stop > KernelCh record and stop, then the
 * other stops. Every event is released by its stops, so plugins with
 * fixed pools that recycle on refcounts (NVIDIA's example) keep recording
 * instead of dropping to their NULL-parent fast path. One sample = BATCH_OPS
 * operations timed together; ns per callback = time / callbacks. */
#define CMP_STEPS 4
#define CMP_CALLS (3 * CMP_STEPS + 11)
#define BATCH_OPS 16
/* the event types the operation uses: both plugins are given this mask */
#define CMP_MASK ((1 << LENS_T_GROUP_API) | (1 << LENS_T_COLL_API) | (1 << LENS_T_COLL) | (1 << LENS_T_PROXY_OP) | \
                  (1 << LENS_T_PROXY_STEP) | (1 << LENS_T_KERNEL_CH))

struct cmp_arg {
  struct plug *p;
  pthread_barrier_t *bar;
  int rank, nranks;
  double *samples;
  uint64_t null_handles; /* starts that returned no handle: the plugin dropped them */
  int failed;
};

static int g_pid;

static inline uint64_t cmp_op(lens_nccl_profiler_v5_t *t, void *ctx) {
  lens_nccl_descr_v5_t d;
  lens_nccl_state_args_v5_t sa = {.proxyStep = {.transSize = 4096}};
  void *ga = NULL, *ca = NULL, *c = NULL, *po = NULL, *st = NULL, *kc = NULL;
  uint64_t nulls = 0;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_GROUP_API;
  d.groupApi.groupDepth = 1;
  t->startEvent(ctx, &ga, &d);
  fill(&d, OP_COLLAPI_START, ga);
  t->startEvent(ctx, &ca, &d);
  fill(&d, OP_COLL_START, ca);
  t->startEvent(ctx, &c, &d);
  /* the kernel's channel starts before the proxy works on it, and stops
   * after (a plugin that refcounts children releases the Coll once) */
  fill(&d, OP_KCH_START, c);
  /* channel 0: NVIDIA's example stores the KernelCh type in a uint8_t next
   * to channelId but reads it back as a uint64_t, so a stop on any other
   * channel is not recognised and never releases its Coll; its pools then
   * run dry after 16 operations and it drops everything. */
  d.kernelCh.channelId = 0;
  t->startEvent(ctx, &kc, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_PROXY_OP;
  d.parentObj = c;
  d.proxyOp.pid = g_pid; /* cached: a syscall here would swamp the figures */
  d.proxyOp.channelId = 1;
  d.proxyOp.nSteps = CMP_STEPS;
  d.proxyOp.isSend = 1;
  t->startEvent(ctx, &po, &d);
  fill(&d, OP_STEP_START, po);
  for (int k = 0; k < CMP_STEPS; k++) {
    d.proxyStep.step = k;
    t->startEvent(ctx, &st, &d);
    nulls += st == NULL;
    t->recordEventState(st, LENS_ST_PROXY_STEP_SEND_WAIT, &sa);
    t->stopEvent(st);
  }
  t->stopEvent(po);
  t->recordEventState(kc, LENS_ST_KERNEL_CH_STOP, &sa);
  t->stopEvent(kc);
  t->stopEvent(c);
  t->stopEvent(ca);
  t->stopEvent(ga);
  return nulls + (ga == NULL) + (ca == NULL) + (c == NULL) + (po == NULL) + (kc == NULL);
}

static void *cmp_thread(void *arg) {
  struct cmp_arg *a = arg;
  lens_nccl_profiler_v5_t *t = a->p->t;
  void *ctx = NULL;
  /* one communicator per thread, as NCCL with one rank per thread */
  a->failed = plug_init(a->p, &ctx, 0xC0FFEE, "bench-cmp", a->nranks, a->rank) != 0;
  pthread_barrier_wait(a->bar);
  if (a->failed) return NULL;
  for (int w = 0; w < 64; w++) cmp_op(t, ctx); /* warm up */
  uint64_t nulls = 0;
  for (int b = 0; b < g_batches; b++) {
    uint64_t t0 = now_ns();
    for (int i = 0; i < BATCH_OPS; i++) nulls += cmp_op(t, ctx);
    a->samples[b] = (double)(now_ns() - t0) / (BATCH_OPS * CMP_CALLS);
    /* Untimed pause: back to back, the operations make ~5 GB/s of records,
     * far beyond any NCCL job and any writer; the ring would stay full and
     * we would time the drop path. ~80 MB/s per thread keeps it honest. */
    struct timespec gap = {0, 200000};
    nanosleep(&gap, NULL);
  }
  a->null_handles = nulls;
  t->finalize(ctx);
  return NULL;
}

struct cmp_result {
  int ok;
  double med, p99;
  uint64_t null_handles;
};

static struct cmp_result run_compare(struct plug *p, int nthreads) {
  struct cmp_result r = {0, 0, 0, 0};
  pthread_t th[MAX_THREADS];
  struct cmp_arg args[MAX_THREADS];
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
  for (int i = 0; i < nthreads; i++) {
    args[i] = (struct cmp_arg){p, &bar, i, nthreads, calloc((size_t)g_batches, sizeof(double)), 0, 0};
    pthread_create(&th[i], NULL, cmp_thread, &args[i]);
  }
  int failed = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(th[i], NULL);
    failed |= args[i].failed;
  }
  pthread_barrier_destroy(&bar);
  size_t n = (size_t)g_batches * (size_t)nthreads;
  double *all = malloc(n * sizeof *all);
  for (int i = 0; i < nthreads; i++) {
    memcpy(all + (size_t)i * g_batches, args[i].samples, (size_t)g_batches * sizeof(double));
    r.null_handles += args[i].null_handles;
    free(args[i].samples);
  }
  if (!failed) {
    r.ok = 1;
    r.med = bench_percentile(all, n, 50);
    r.p99 = bench_percentile(all, n, 99);
  }
  free(all);
  return r;
}

static int last_fini_drops(const char *path, struct lens_fini *f, struct lens_drops *dr);

static void print_compare(struct plug *nop, struct plug *lens, struct plug *other, const int *threads, int nthr,
                          const char *trace) {
  printf("\nns per callback in an NCCL-shaped operation (%d callbacks: GroupApi > CollApi > Coll > KernelCh > "
         "ProxyOp > %d x ProxyStep start/record/stop, stops), median / p99 over %d samples of %d "
         "operations; event mask 0x%x for both plugins; 'cost' = plugin - do-nothing\n",
         CMP_CALLS, CMP_STEPS, g_batches, BATCH_OPS, CMP_MASK);
  printf("'dropped ev': starts the plugin returned no handle for, plus (nccl-lens) records dropped as ring_full\n");
  printf("%-8s %-12s %9s %9s %9s %9s %11s %11s\n", "threads", "plugin", "med", "p99", "cost med", "cost p99",
         "dropped ev", "x cheaper");
  for (int k = 0; k < nthr; k++) {
    struct cmp_result rn = run_compare(nop, threads[k]);
    struct cmp_result rl = run_compare(lens, threads[k]);
    struct lens_fini lf;
    struct lens_drops ld;
    if (last_fini_drops(trace, &lf, &ld) == 0) rl.null_handles += ld.ring_full; /* our drops: ring_full */
    unlink(trace);
    struct cmp_result ro = other ? run_compare(other, threads[k]) : (struct cmp_result){0, 0, 0, 0};
    printf("%-8d %-12s %9.1f %9.1f %9s %9s %11s %11s\n", threads[k], "do-nothing", rn.med, rn.p99, "-", "-", "-", "-");
    printf("%-8d %-12s %9.1f %9.1f %9.1f %9.1f %11llu %11s\n", threads[k], "nccl-lens", rl.med, rl.p99,
           rl.med - rn.med, rl.p99 - rn.p99, (unsigned long long)rl.null_handles, "-");
    if (other && ro.ok) {
      double lc = rl.med - rn.med, oc = ro.med - rn.med;
      char x[32];
      snprintf(x, sizeof x, "%.1f", lc > 0 ? oc / lc : 0.0);
      printf("%-8d %-12s %9.1f %9.1f %9.1f %9.1f %11llu %11s\n", threads[k], other->t->name ? other->t->name : "other",
             ro.med, ro.p99, oc, ro.p99 - rn.p99, (unsigned long long)ro.null_handles, x);
      printf("%-8s %-12s %9s %9s %9s %9s %11s %11.1f\n", "", "  (p99)", "", "", "", "", "",
             rl.p99 - rn.p99 > 0 ? (ro.p99 - rn.p99) / (rl.p99 - rn.p99) : 0.0);
    } else if (other) {
      printf("%-8d %-12s not measured (init failed)\n", threads[k], other->path);
    }
    fflush(stdout);
  }
}

/* ---- throughput ---- */
struct tp_arg {
  struct plug *p;
  void *ctx;
  atomic_int *go;
  double per_thread_rate; /* events/s, 0 = as fast as possible */
  uint64_t calls;
};

static void *tp_thread(void *arg) {
  struct tp_arg *a = arg;
  lens_nccl_profiler_v5_t *t = a->p->t;
  lens_nccl_descr_v5_t d;
  struct chain ch;
  chain_open(t, a->ctx, &ch);
  fill(&d, OP_STEP_START, ch.po);
  uint64_t n = 0, t0 = now_ns();
  while (atomic_load_explicit(a->go, memory_order_relaxed) == 1) {
    for (int i = 0; i < 64; i++) {
      void *h;
      t->startEvent(a->ctx, &h, &d);
      t->stopEvent(h);
    }
    n += 128;
    /* paced: sleep until the clock catches up with the events emitted, so
     * waiting producers leave the CPU to the writer */
    if (a->per_thread_rate > 0) {
      double ahead_ns = (double)n / a->per_thread_rate * 1e9 - (double)(now_ns() - t0);
      if (ahead_ns > 20000) {
        struct timespec ts = {0, (long)ahead_ns};
        nanosleep(&ts, NULL);
      }
    }
  }
  chain_close(t, &ch);
  a->calls = n;
  return NULL;
}

/* CPU seconds used so far by the plugin's writer thread ("nccl-lens-wr"),
 * from /proc/self/task/<tid>/stat; -1 when not found. */
static double writer_cpu_s(void) {
  char path[300], buf[1024];
  for (int tid = 1; tid < 4194304; ) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    struct dirent *e;
    double best = -1;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
      FILE *f = fopen(path, "r");
      if (!f) continue;
      int is_writer = fgets(buf, sizeof buf, f) && !strncmp(buf, "nccl-lens-wr", 12);
      fclose(f);
      if (!is_writer) continue;
      snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
      f = fopen(path, "r");
      if (!f) continue;
      if (fgets(buf, sizeof buf, f)) {
        char *p = strrchr(buf, ')');
        unsigned long ut = 0, st = 0;
        /* fields after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
        if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
          best = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
      }
      fclose(f);
    }
    closedir(d);
    return best;
  }
  return -1;
}

/* The last FINI and DROPS of the trace file (walks chunk headers). */
static int last_fini_drops(const char *path, struct lens_fini *f, struct lens_drops *dr) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return -1;
  struct lens_file_hdr fh;
  int got = 0;
  if (fread(&fh, sizeof fh, 1, fp) != 1) goto out;
  for (;;) {
    struct lens_chunk_hdr h;
    if (fread(&h, sizeof h, 1, fp) != 1 || h.magic != LENS_CHUNK_MAGIC) break;
    uint32_t padded = (h.payload_len + 7) & ~7u;
    if (h.type == LENS_CHUNK_FINI && h.payload_len >= sizeof *f) {
      if (fread(f, sizeof *f, 1, fp) != 1) break;
      fseek(fp, (long)(padded - sizeof *f), SEEK_CUR);
      got |= 1;
    } else if (h.type == LENS_CHUNK_DROPS && h.payload_len >= sizeof *dr) {
      if (fread(dr, sizeof *dr, 1, fp) != 1) break;
      fseek(fp, (long)(padded - sizeof *dr), SEEK_CUR);
      got |= 2;
    } else {
      fseek(fp, (long)padded, SEEK_CUR);
    }
  }
out:
  fclose(fp);
  return got == 3 ? 0 : -1;
}

struct tp_result {
  int ok;
  double written_meps;   /* M events/s written (FINI count over init..finalize) */
  uint64_t drops;        /* ring_full + no_thread_slot + write_errors */
  double writer_ns_ev;   /* writer CPU ns per event written, -1 unknown */
};

static struct tp_result run_throughput(struct plug *p, int nthreads, const char *trace, double rate) {
  struct tp_result res = {0, 0, 0, -1};
  pthread_t th[MAX_THREADS];
  struct tp_arg args[MAX_THREADS];
  atomic_int go = 1;
  void *ctx = NULL;
  if (plug_init(p, &ctx, 0x7A9, "bench-tp", nthreads, 0) != 0) return res;
  double wcpu0 = writer_cpu_s();
  uint64_t t0 = now_ns();
  for (int i = 0; i < nthreads; i++) {
    args[i] = (struct tp_arg){p, ctx, &go, rate / nthreads, 0};
    pthread_create(&th[i], NULL, tp_thread, &args[i]);
  }
  struct timespec d = {(time_t)g_seconds, (long)((g_seconds - (double)(time_t)g_seconds) * 1e9)};
  nanosleep(&d, NULL);
  atomic_store(&go, 0);
  uint64_t calls = 0;
  for (int i = 0; i < nthreads; i++) {
    pthread_join(th[i], NULL);
    calls += args[i].calls;
  }
  uint64_t t1 = now_ns();
  double wcpu = writer_cpu_s();
  p->t->finalize(ctx); /* final drain, FINI */
  uint64_t t2 = now_ns();
  struct lens_fini f;
  struct lens_drops dr;
  if (last_fini_drops(trace, &f, &dr) != 0) {
    printf("  %2d thread(s): could not read FINI/DROPS from %s\n", nthreads, trace);
    return res;
  }
  /* DROPS counters restart with every session; the last DROPS is this run's.
   * Remove the trace now: its tmpfs pages go back to the free lists and the
   * next run reuses them (on this VM memory never touched before, or given
   * back to the host, costs several times more to write into; see
   * tmpfs_ceiling). */
  unlink(trace);
  double secs = (double)(t2 - t0) / 1e9;
  /* the final drain runs flat out on the writer: count its wall time as CPU */
  if (wcpu >= 0) {
    if (wcpu0 > 0) wcpu -= wcpu0;
    wcpu += (double)(t2 - t1) / 1e9;
  }
  res.ok = 1;
  res.written_meps = (double)f.events_written / secs / 1e6;
  res.drops = dr.ring_full + dr.no_thread_slot + dr.write_errors;
  res.writer_ns_ev = wcpu > 0 && f.events_written ? wcpu * 1e9 / (double)f.events_written : -1;
  printf("  %-6s %2d thr: %6.2f M calls/s emitted, %6.2f M events/s written (%llu in %.2f s, final drain %.0f ms), "
         "dropped: ring_full %llu, no_thread_slot %llu, write_errors %llu; writer CPU %.2f s = %.1f ns/event\n",
         rate > 0 ? "paced" : "max", nthreads, (double)calls / ((double)(t1 - t0) / 1e9) / 1e6, res.written_meps,
         (unsigned long long)f.events_written, secs, (double)(t2 - t1) / 1e6, (unsigned long long)dr.ring_full,
         (unsigned long long)dr.no_thread_slot, (unsigned long long)dr.write_errors, wcpu, res.writer_ns_ev);
  fflush(stdout);
  return res;
}

/* What the output directory itself accepts: the same 256 KiB writes the
 * writer makes, of fresh file pages, no plugin involved. Printed so a
 * throughput figure can be read against the machine's ceiling. */
static void tmpfs_ceiling(const char *dir, double mbytes) {
  char path[600];
  snprintf(path, sizeof path, "%s/ceiling-%d.bin", dir, getpid());
  static uint8_t buf[256 * 1024];
  memset(buf, 0x5A, sizeof buf);
  for (int pass = 0; pass < 2; pass++) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    setvbuf(f, NULL, _IONBF, 0);
    size_t n = (size_t)(mbytes * 1e6 / sizeof buf);
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < n; i++)
      if (fwrite(buf, sizeof buf, 1, f) != 1) break;
    fclose(f);
    double secs = (double)(now_ns() - t0) / 1e9;
    unlink(path);
    printf("  output directory takes %.0f MB/s of 256 KiB writes (%s pass, %.0f MB) = %.1f M events/s at 40 B/event "
           "(ProxyStep start 56 B + stop 24 B)\n",
           (double)n * sizeof buf / secs / 1e6, pass ? "second: pages just freed" : "first", mbytes,
           (double)n * sizeof buf / secs / 40e6);
  }
}

static double loadavg1(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

/* Several runs of one configuration: median and spread of what was written. */
static void throughput_series(struct plug *p, int nthreads, const char *trace, double rate, int repeat) {
  double w[64], c[64];
  int n = 0, clean = 0;
  uint64_t drops_max = 0;
  if (repeat > 64) repeat = 64;
  for (int r = 0; r < repeat; r++) {
    struct tp_result x = run_throughput(p, nthreads, trace, rate);
    if (!x.ok) continue;
    w[n] = x.written_meps;
    c[n] = x.writer_ns_ev;
    n++;
    clean += x.drops == 0;
    if (x.drops > drops_max) drops_max = x.drops;
  }
  if (repeat < 2 || n == 0) return;
  double lo = w[0], hi = w[0];
  for (int i = 1; i < n; i++) {
    if (w[i] < lo) lo = w[i];
    if (w[i] > hi) hi = w[i];
  }
  double med = bench_percentile(w, (size_t)n, 50), cmed = bench_percentile(c, (size_t)n, 50);
  printf("  => %-6s %2d thr, %d runs: written median %.2f M events/s (min %.2f, max %.2f); runs without drops %d/%d "
         "(worst run dropped %llu); writer CPU median %.1f ns/event; load average now %.2f\n",
         rate > 0 ? "paced" : "max", nthreads, n, med, lo, hi, clean, n, (unsigned long long)drops_max, cmed,
         loadavg1());
}

/* A build tree copied elsewhere (another machine): the libraries next to the
 * executable (bin/ and lib/) win over the paths of the tree it was built in. */
static const char *beside_exe(const char *built, char *buf, size_t len) {
  const char *base = strrchr(built, '/');
  return base && lens_lib_beside_exe(base + 1, buf, len) == 0 ? buf : built;
}

int main(int argc, char **argv) {
  static char lens_buf[600], nop_buf[600];
  struct plug lens = {beside_exe(LENS_BENCH_PLUGIN_PATH, lens_buf, sizeof lens_buf), NULL, NULL},
              nop = {beside_exe(LENS_BENCH_NOP_PATH, nop_buf, sizeof nop_buf), NULL, NULL};
  struct plug other = {NULL, NULL, NULL};
  int threads[8] = {1, 2, 4}, nthr = 3;
  const char *mode = "all";
  char out[256] = "";
  int own_out = 0; /* created here: removed at the end */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
      lens.path = argv[++i];
    else if (!strcmp(argv[i], "--compare") && i + 1 < argc)
      other.path = argv[++i];
    else if (!strcmp(argv[i], "--nop") && i + 1 < argc)
      nop.path = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      nthr = 0;
      for (char *s = strtok(argv[++i], ","); s && nthr < 8; s = strtok(NULL, ",")) {
        int v = atoi(s);
        if (v >= 1 && v <= MAX_THREADS) threads[nthr++] = v;
      }
    } else if (!strcmp(argv[i], "--batches") && i + 1 < argc)
      g_batches = atoi(argv[++i]) > 0 ? atoi(argv[i]) : g_batches;
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      g_seconds = atof(argv[++i]) > 0 ? atof(argv[i]) : g_seconds;
    else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
      g_rate = atof(argv[++i]) * 1e6;
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      g_repeat = atoi(argv[++i]) > 0 ? atoi(argv[i]) : g_repeat;
    else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
      mode = argv[++i];
    else if (!strcmp(argv[i], "--out") && i + 1 < argc)
      snprintf(out, sizeof out, "%s", argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--plugin PATH] [--nop PATH] [--threads 1,2,4] [--batches N] [--seconds S] "
                      "[--rate MEVENTS_PER_S] [--repeat N] [--compare PATH] [--mode latency|throughput|max|paced|compare|all] "
                      "[--out DIR]\n", argv[0]);
      return 2;
    }
  }
  if (!out[0]) {
    snprintf(out, sizeof out, "/dev/shm/lens-bench-%d", getpid());
    own_out = 1;
  }
  if (mkdir(out, 0777) != 0 && errno != EEXIST) {
    perror(out);
    return 1;
  }
  setenv("NCCL_LENS_OUTPUT_DIR", out, 1);
  setenv("NCCL_LENS_REGISTRY_DIR", out, 1);
  setenv("NCCL_LENS_NVTX", "0", 1);
  setenv("NCCL_LENS_CUPTI", "off", 1);
  if (!getenv("NCCL_LENS_EVENT_MASK")) setenv("NCCL_LENS_EVENT_MASK", "all", 1);
  /* NVIDIA's example plugin: its default pools ask ~193 GB and its init
   * fails; 16 of each is plenty for one operation in flight per thread.
   * Its mask comes from NCCL_PROFILE_EVENT_MASK. Set only when unset. */
  static const char *k_pools[] = {"GROUP_API", "COLL_API", "P2P_API", "KERNEL_LAUNCH", "GROUP",
                                  "COLL", "P2P", "PROXY_CTRL", "PROXY_DETACH"};
  for (size_t i = 0; i < sizeof k_pools / sizeof k_pools[0]; i++) {
    char v[64];
    snprintf(v, sizeof v, "NCCL_PROFILE_%s_POOL_SIZE", k_pools[i]);
    setenv(v, "16", 0);
  }
  if (!strcmp(mode, "compare")) {
    char m[16];
    snprintf(m, sizeof m, "%d", CMP_MASK);
    setenv("NCCL_LENS_EVENT_MASK", m, 1);
    setenv("NCCL_PROFILE_EVENT_MASK", m, 1);
  }
  if (plug_open(&nop) || plug_open(&lens) || (other.path && plug_open(&other))) return 1;
  char host[64] = "unknown", trace[512];
  gethostname(host, sizeof host);
  host[63] = 0;
  snprintf(trace, sizeof trace, "%s/nccl-lens-%s-%d.lens", out, host, getpid());

  printf("lens-bench: plugin %s\n            baseline %s\n            traces in %s, NVTX off, %d batches of %d calls\n",
         lens.path, nop.path, out, g_batches, BATCH);
  g_pid = getpid();
  if (!strcmp(mode, "compare")) print_compare(&nop, &lens, other.path ? &other : NULL, threads, nthr, trace);
  if (!strcmp(mode, "latency") || !strcmp(mode, "all")) {
    printf("\nns per callback (median / p99 over batches; delta = plugin - do-nothing, medians)\n");
    printf("%-8s %-18s %10s %10s %10s %10s %9s\n", "threads", "callback", "nop med", "nop p99", "plugin med",
           "plugin p99", "delta");
    for (int k = 0; k < nthr; k++) {
      struct lat_result rn, rl;
      run_latency(&nop, threads[k], &rn);
      run_latency(&lens, threads[k], &rl);
      if (!rn.ok || !rl.ok) {
        printf("%-8d not measured: init failed (see above)\n", threads[k]);
        continue;
      }
      for (int o = 0; o < OP_COUNT; o++)
        printf("%-8d %-18s %10.1f %10.1f %10.1f %10.1f %9.1f\n", threads[k], k_op_names[o], rn.med[o], rn.p99[o],
               rl.med[o], rl.p99[o], rl.med[o] - rn.med[o]);
      if (rl.null_handles)
        printf("  note: the plugin returned no handle for %llu ProxyStep/Coll starts (dropped); their stops and "
               "records were not called, so those rows measure its drop path. Use --mode compare for plugins with "
               "fixed event pools.\n", (unsigned long long)rl.null_handles);
    }
  }
  int tp_all = !strcmp(mode, "throughput") || !strcmp(mode, "all");
  if (tp_all || !strcmp(mode, "max") || !strcmp(mode, "paced")) {
    printf("\nwriter throughput: %.1f s of ProxyStep start+stop pairs; 'max' = every thread as fast as it can,\n"
           "'paced' = %.1f M events/s in total spread over the threads; load average before: %.2f\n", g_seconds,
           g_rate / 1e6, loadavg1());
    tmpfs_ceiling(out, 400);
    if (tp_all || !strcmp(mode, "max"))
      for (int k = 0; k < nthr; k++) throughput_series(&lens, threads[k], trace, 0, g_repeat);
    if (g_rate > 0 && (tp_all || !strcmp(mode, "paced")))
      for (int k = 0; k < nthr; k++) throughput_series(&lens, threads[k], trace, g_rate, g_repeat);
  }
  if (own_out) { /* traces of a benchmark are not worth keeping in /dev/shm */
    DIR *d = opendir(out);
    struct dirent *e;
    char f[600];
    while (d && (e = readdir(d)) != NULL)
      if (e->d_name[0] != '.') {
        snprintf(f, sizeof f, "%s/%s", out, e->d_name);
        unlink(f);
      }
    if (d) closedir(d);
    rmdir(out);
  }
  return 0;
}
