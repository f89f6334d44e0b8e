/* One process of the replay (one node): load the plugin, init every
 * communicator concurrently (as ncclCommInitRank inside a group does), start
 * the proxy and host-callback threads, run the scenario, then tear down as
 * ncclCommDestroy does: proxies joined, finalize batched on one thread,
 * dlclose (optionally re-dlopen and run again). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "replay/rp_couple.h"
#include "replay/rp_job.h"
#include "replay/rp_node.h"
#include "replay/rp_kineto.h"
#include "replay/rp_plan.h"
#include "replay/rp_net.h"
#include "replay/rp_truth.h"

static uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t rp_comm_id(uint64_t seed, int set) { return mix64(seed ^ (0xC0FFEEULL + (uint64_t)set)); }

struct init_arg {
  struct rp_node *n;
  struct rp_comm *c;
};

static void *init_thread(void *arg) {
  struct rp_node *n = ((struct init_arg *)arg)->n;
  struct rp_comm *c = ((struct init_arg *)arg)->c;
  c->init_tid = rp_gettid();
  c->ctx = NULL;
  c->init_rc = rp_plugin_init(&n->plugin, &c->ctx, c->commId, c->name, c->nNodes, c->nranks, c->rank);
  return NULL;
}

static int init_all(struct rp_node *n) {
  pthread_t thr[RP_MAX_COMMSETS * RP_MAX_LOCAL];
  struct init_arg args[RP_MAX_COMMSETS * RP_MAX_LOCAL];
  for (int i = 0; i < n->ncomms; i++) {
    args[i] = (struct init_arg){n, &n->comms[i]};
    pthread_create(&thr[i], NULL, init_thread, &args[i]);
  }
  int failed = 0;
  for (int i = 0; i < n->ncomms; i++) {
    pthread_join(thr[i], NULL);
    struct rp_comm *c = &n->comms[i];
    if (c->init_rc != 0) { /* 2.28.9: log and continue; events still flow with *ctx */
      fprintf(stderr, "replay: rank %d comm %d: Profiler init failed with error '%d'. Continue without profiler.\n",
              c->rank, c->index, c->init_rc);
      failed++;
    }
  }
  return failed;
}

static void threads_start(struct rp_node *n) {
  for (int l = 0; l < n->rpn; l++) {
    struct rp_proxy *px = &n->proxy[l];
    px->node = n;
    px->local = l;
    px->ctx = n->comms[l].ctx; /* proxyState->profilerContext: comm set 0 created it */
    atomic_store(&px->tid, 0);
    rp_proxy_start(px);
    if (!n->prof_threads) continue;
    struct rp_proxy *pt = &n->prof[l]; /* ncclProfilerThreadCreate: one per rank's shared resources */
    pt->node = n;
    pt->local = l;
    pt->ctx = px->ctx;
    pt->is_profiler = true;
    atomic_store(&pt->tid, 0);
    rp_proxy_start(pt);
  }
  atomic_store(&n->cb_tid, 0);
  rp_cb_start(n);
}

static void threads_stop(struct rp_node *n) {
  rp_cb_stop(n);
  for (int l = 0; l < n->rpn; l++) {
    rp_proxy_stop(&n->proxy[l]);
    if (n->prof_threads) rp_proxy_stop(&n->prof[l]);
  }
}

void rp_sync(struct rp_node *n) {
  rp_cb_drain(n);
  rp_couple_settle(n); /* coupled GPUs: the other ranks' arrivals fix our ends */
  int64_t last = 0;
  for (int i = 0; i < n->ncomms; i++)
    if (n->comms[i].stream_free > last) last = n->comms[i].stream_free;
  int64_t now = rp_now();
  if (last > now) rp_sleep_ns(last - now);
  for (int l = 0; l < n->rpn; l++) {
    rp_proxy_drain(&n->proxy[l]);
    if (n->prof_threads) rp_proxy_drain(&n->prof[l]);
  }
}

static void setup_model(struct rp_node *n) {
  const struct lens_replay_opts *o = n->o;
  for (int l = 0; l < n->rpn; l++) {
    struct rp_gpu *g = &n->gpu[l];
    uint64_t r = mix64(o->seed * 1315423911ULL + (uint64_t)(n->node * RP_MAX_LOCAL + l));
    /* epoch-like globaltimer, GPUs seconds apart, drift tens of ppm */
    g->offset_ns = 1700000000000000000LL + (int64_t)(n->node * RP_MAX_LOCAL + l) * 7300000000LL +
                   (int64_t)(r % 2000000000ULL);
    g->drift_ppm = ((double)((r >> 32) % 8000) / 100.0) - 40.0;
    if (g->drift_ppm > -10 && g->drift_ppm < 10) g->drift_ppm += g->drift_ppm < 0 ? -15 : 15;
    /* Sized from the run: a fixed 2048 ran out at --iters 683. calloc'd
     * pages that are never touched cost no memory. */
    uint64_t cap = RP_ITEMS_PER_CH + (uint64_t)o->iters * RP_ITEMS_PER_ITER * (o->reload ? 2 : 1);
    for (int ch = 0; ch < RP_MAX_CH; ch++) {
      if (g->items[ch] && g->items_cap < cap) {
        free(g->items[ch]);
        g->items[ch] = NULL;
      }
      if (!g->items[ch]) {
        g->items[ch] = calloc(cap, sizeof(struct rp_item));
        if (!g->items[ch]) {
          fprintf(stderr, "nccl-lens replay: out of memory for %llu work items\n", (unsigned long long)cap);
          abort();
        }
      }
      atomic_store(&g->published[ch], 0);
    }
    g->items_cap = cap;
    n->proxy[l].pin_cpu = -1;
    n->prof[l].pin_cpu = -1;
  }
  /* commName may be NULL; the third set (scenario all) is non-blocking */
  static const char *names[RP_MAX_COMMSETS] = {"replay-world", NULL, "replay-nonblocking"};
  n->ncomms = 0;
  for (int s = 0; s < n->ncomm_sets; s++)
    for (int l = 0; l < n->rpn; l++) {
      struct rp_comm *c = &n->comms[n->ncomms];
      memset(c, 0, sizeof *c);
      c->index = n->ncomms++;
      c->set = s;
      c->local = l;
      c->rank = n->node * n->rpn + l;
      c->nranks = n->nranks;
      c->nNodes = n->nodes;
      c->commId = rp_comm_id(o->seed, s); /* commHash: equal on every rank */
      c->name = names[s];
      c->nonblocking = s == 2;
    }
}

static int round_load(struct rp_node *n, struct lens_replay_result *res) {
  char err[600];
  if (rp_plugin_load(&n->plugin, n->o->plugin, n->o->api, err, sizeof err) != 0) {
    fprintf(stderr, "nccl-lens replay: cannot load plugin: %s\n", err);
    return -1;
  }
  n->prof_threads = n->plugin.api == 7; /* 2.31.2 polls KernelCh from its profiler thread */
  res->init_failures += init_all(n);
  threads_start(n);
  rp_app_init(n);
  return 0;
}

static void round_end(struct rp_node *n, bool finalize, struct lens_replay_result *res) {
  rp_sync(n);
  threads_stop(n); /* ncclProxyDestroy joins the proxies before finalize */
  long calls = atomic_load(&n->plugin.calls);
  res->calls += calls;
  if (finalize) n->calls_before += calls; /* the next load starts counting at 0 */
  for (int l = 0; l < n->rpn; l++) {
    res->kernel_ch += atomic_load(&rp_kch_thread(n, l)->kch_started);
  }
  if (!finalize) return;
  for (int i = 0; i < n->ncomms; i++) /* lazily, all from the last ncclCommDestroy */
    if (n->comms[i].ctx) rp_plugin_finalize(&n->plugin, n->comms[i].ctx);
  rp_plugin_unload(&n->plugin);
}

int rp_node_run(const struct lens_replay_opts *o, int node, FILE *truth, struct lens_replay_result *res) {
  struct rp_node *n = calloc(1, sizeof *n);
  n->o = o;
  n->node = node;
  n->nodes = o->nodes;
  n->rpn = o->ranks_per_node;
  n->nranks = n->nodes * n->rpn;
  n->ncomm_sets = rp_scenario_ncomm_sets(o->scenario);
  n->truth = rp_truth_new();
  n->app_tid = rp_gettid();
  rp_verbose = o->verbose;
  __atomic_store_n(&rp_event_mask, 0, __ATOMIC_RELAXED); /* NCCL's global starts at 0 */
  atomic_store(&rp_warn_count, 0);
  rp_ras_reset();
  /* Foreign handles (PXN from another process) point into a page nobody may touch. */
  n->foreign_base = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (o->out_dir) setenv("NCCL_LENS_OUTPUT_DIR", o->out_dir, 1);
  rp_warm_nvtx();
  setup_model(n);
  n->job_kind = rp_job_kind_of(o->scenario);
  n->board = rp_board_current;
  if (n->board) {
    n->board_delta = rp_board_delta();
    if (node < RP_BOARD_NODES) {
      gethostname(n->board->host[node], sizeof n->board->host[node] - 1);
      n->board->delta[node] = n->board_delta;
    }
  }
  int rc = 0;
  if (round_load(n, res) != 0) {
    rc = 1;
    goto out;
  }
  res->api = n->plugin.api;
  rp_scenario_run(n, o->scenario, o->iters);
  if (n->hang.kind != RP_HANG_NONE) {
    /* A killed job: no teardown, no finalize. The proxies still run and use
     * n, so nothing is freed: the caller (a forked child) _exits now. The
     * proxies write the truth's records (a late append's times): held
     * still while it is written (TSan saw the race), then they cycle again
     * for longer than `nccl-lens hang` allows a live proxy to be silent
     * before the trace's end (LENS_HANG_ALIVE_NS, 200 ms): writing the
     * truth takes that long under TSan. */
    if (truth) {
      rp_proxies_park(n);
      rp_truth_write_process(n, truth);
      rp_proxies_unpark(n);
      rp_sleep_ns(300000000LL);
    }
    res->calls += atomic_load(&n->plugin.calls);
    res->warn_count += atomic_load(&rp_warn_count);
    return n->hang.failed ? 1 : 0; /* its truth is written all the same: it says why */
  }
  if (o->reload) { /* batched finalize, dlclose, re-dlopen, once more */
    round_end(n, true, res);
    rp_truth_hazard(n->truth, "reload", -1, 0);
    if (round_load(n, res) != 0) {
      rc = 1;
      goto out;
    }
    rp_scenario_run(n, o->scenario, 1);
  }
  round_end(n, !o->no_finalize, res);
  if (truth) rp_truth_write_process(n, truth);
  if (o->kineto_dir && rp_kineto_write(n, o->kineto_dir)) rc = 1;
out:
  rp_couple_free(n);
  if (n->board) atomic_fetch_add(&n->board->procs_done, 1);
  res->warn_count += atomic_load(&rp_warn_count);
  for (int i = 0; i < atomic_load(&n->truth->nkch); i++) res->overruns += n->truth->kch[i].overrun;
  for (int l = 0; l < RP_MAX_LOCAL; l++)
    for (int ch = 0; ch < RP_MAX_CH; ch++) free(n->gpu[l].items[ch]);
  if (n->foreign_base != MAP_FAILED) munmap(n->foreign_base, 4096);
  rp_truth_free(n->truth);
  rp_net_free(n);
  free(n);
  return rc;
}
