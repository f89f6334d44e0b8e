/* CPU hogs for the starvation phases (scenarios `starved`, `all`): local
 * rank 0's proxy thread and the busy hog threads share one CPU (the last
 * one); the app thread and the other proxies (unstarved controls) run on the
 * others. Every proxy runs NCCL's own loop (busy poll, sched_yield()
 * after a pass that added nothing), so the starved one waits behind the hogs
 * (real run-queue delay), while the app thread posts on time and the
 * simulated GPUs run on time: what it notices late, it notices late only for
 * want of a CPU. The ground truth records the CPU, the hog tids and the
 * interval. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "replay/rp_internal.h"
#include "replay/rp_truth.h"

#define MAX_HOGS RP_TRUTH_MAX_HOGS

struct hog {
  pthread_t thr;
  int cpu;
  atomic_int tid;
  atomic_bool *stop;
};

struct rp_hogs {
  struct rp_node *n;
  atomic_bool stop;
  int nhogs;
  struct hog hog[MAX_HOGS];
  struct rp_truth_starve *rec[1]; /* local rank 0's proxy */
  bool app_pinned;
  cpu_set_t app_mask; /* the app thread's affinity before the phase */
};

static void pin(pthread_t t, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(t, sizeof set, &set);
}

static void unpin(pthread_t t) {
  cpu_set_t set;
  CPU_ZERO(&set);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  for (int c = 0; c < ncpu && c < CPU_SETSIZE; c++) CPU_SET(c, &set);
  pthread_setaffinity_np(t, sizeof set, &set);
}

static void *hog_main(void *arg) {
  struct hog *h = arg;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(h->cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
  atomic_store(&h->tid, rp_gettid());
  volatile uint64_t x = 0;
  while (!atomic_load_explicit(h->stop, memory_order_relaxed)) x++;
  return NULL;
}

/* The calling (app) thread leaves the hogs' CPU for the phase. */
static void app_leave(struct rp_hogs *hs, int cpu, long ncpu) {
  if (ncpu < 2 || pthread_getaffinity_np(pthread_self(), sizeof hs->app_mask, &hs->app_mask) != 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = 0; c < ncpu && c < CPU_SETSIZE; c++)
    if (c != cpu) CPU_SET(c, &set);
  hs->app_pinned = pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

/* nhogs hogs (at most RP_TRUTH_MAX_HOGS) on the CPU of local rank 0's KernelCh poller
 * (its proxy, or on NCCL 2.31 its profiler thread: rp_kch_thread). */
struct rp_hogs *rp_hogs_start(struct rp_node *n, int nhogs) {
  struct rp_hogs *hs = calloc(1, sizeof *hs);
  hs->n = n;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  int cpu = (int)(ncpu - 1);
  if (nhogs > MAX_HOGS) nhogs = MAX_HOGS;
  if (nhogs < 1) nhogs = 1;
  app_leave(hs, cpu, ncpu);
  for (int l = 0; l < n->rpn; l++) { /* the controls go with the app thread */
    if (l == 0) {
      pin(rp_kch_thread(n, l)->thr, cpu);
      rp_kch_thread(n, l)->pin_cpu = cpu;
    } else if (hs->app_pinned) {
      cpu_set_t set;
      if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0)
        pthread_setaffinity_np(rp_kch_thread(n, l)->thr, sizeof set, &set);
    }
  }
  for (int k = 0; k < nhogs; k++) {
    struct hog *h = &hs->hog[hs->nhogs++];
    h->cpu = cpu;
    h->stop = &hs->stop;
    pthread_create(&h->thr, NULL, hog_main, h);
  }
  for (int i = 0; i < hs->nhogs; i++)
    while (!atomic_load(&hs->hog[i].tid)) rp_sleep_ns(20000);
  for (int l = 0; l < n->rpn; l++) atomic_store(&rp_kch_thread(n, l)->spin, true);
  int64_t t = rp_now();
  struct rp_truth_starve *s = rp_truth_starve_new(n->truth);
  hs->rec[0] = s;
  if (s) {
    s->rank = n->comms[0].rank;
    s->proxy_tid = atomic_load(&rp_kch_thread(n, 0)->tid);
    s->cpu = cpu;
    s->start_ns = t;
    for (int k = 0; k < hs->nhogs; k++) s->hog_tids[s->nhogs++] = atomic_load(&hs->hog[k].tid);
  }
  return hs;
}

void rp_hogs_stop(struct rp_hogs *hs) {
  if (!hs) return;
  int64_t t = rp_now(); /* the hogs stop competing from here */
  atomic_store(&hs->stop, true);
  for (int i = 0; i < hs->nhogs; i++) pthread_join(hs->hog[i].thr, NULL);
  if (hs->rec[0]) hs->rec[0]->end_ns = t;
  for (int l = 0; l < hs->n->rpn; l++) {
    atomic_store(&rp_kch_thread(hs->n, l)->spin, false);
    unpin(rp_kch_thread(hs->n, l)->thr);
    rp_kch_thread(hs->n, l)->pin_cpu = -1;
  }
  if (hs->app_pinned) pthread_setaffinity_np(pthread_self(), sizeof hs->app_mask, &hs->app_mask);
  free(hs);
}
