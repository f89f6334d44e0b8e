/* CPU hogs for the starved scenario: busy threads pinned to the CPU each
 * proxy thread is pinned to, so the proxy's notice lag becomes real
 * scheduling delay. The ground truth records tids and intervals. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "replay/rp_internal.h"
#include "replay/rp_truth.h"

#define MAX_HOGS (RP_MAX_LOCAL * RP_TRUTH_MAX_HOGS)

struct hog {
  pthread_t thr;
  int cpu;
  atomic_int tid;
  atomic_bool *stop;
};

struct rp_hogs {
  struct rp_node *n;
  atomic_bool stop;
  int nhogs, per_proxy;
  struct hog hog[MAX_HOGS];
  struct rp_truth_starve *rec[RP_MAX_LOCAL];
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

struct rp_hogs *rp_hogs_start(struct rp_node *n, int per_proxy) {
  struct rp_hogs *hs = calloc(1, sizeof *hs);
  hs->n = n;
  hs->per_proxy = per_proxy > RP_TRUTH_MAX_HOGS ? RP_TRUTH_MAX_HOGS : per_proxy;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  for (int l = 0; l < n->rpn; l++) {
    int cpu = (int)(l % ncpu);
    pin(n->proxy[l].thr, cpu);
    n->proxy[l].pin_cpu = cpu;
    for (int k = 0; k < hs->per_proxy; k++) {
      struct hog *h = &hs->hog[hs->nhogs++];
      h->cpu = cpu;
      h->stop = &hs->stop;
      pthread_create(&h->thr, NULL, hog_main, h);
    }
  }
  for (int i = 0; i < hs->nhogs; i++)
    while (!atomic_load(&hs->hog[i].tid)) rp_sleep_ns(20000);
  int64_t t = rp_now();
  for (int l = 0; l < n->rpn; l++) {
    struct rp_truth_starve *s = rp_truth_starve_new(n->truth);
    hs->rec[l] = s;
    if (!s) continue;
    s->rank = n->comms[l].rank;
    s->proxy_tid = atomic_load(&n->proxy[l].tid);
    s->cpu = n->proxy[l].pin_cpu;
    s->start_ns = t;
    for (int k = 0; k < hs->per_proxy; k++) s->hog_tids[s->nhogs++] = atomic_load(&hs->hog[l * hs->per_proxy + k].tid);
  }
  return hs;
}

void rp_hogs_stop(struct rp_hogs *hs) {
  if (!hs) return;
  int64_t t = rp_now(); /* the hogs stop competing from here */
  atomic_store(&hs->stop, true);
  for (int i = 0; i < hs->nhogs; i++) pthread_join(hs->hog[i].thr, NULL);
  for (int l = 0; l < hs->n->rpn; l++) {
    if (hs->rec[l]) hs->rec[l]->end_ns = t;
    unpin(hs->n->proxy[l].thr);
    hs->n->proxy[l].pin_cpu = -1;
  }
  free(hs);
}
