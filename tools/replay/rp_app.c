/* The application side of NCCL: GroupApi depth logic (spec §2.3), task
 * appends with the mask snapshot, doLaunches in reverse communicator order
 * (§2.4, §11) with KernelLaunch around a stand-in cuLaunchKernelEx, and
 * hostStreamPlanTask (Group, Coll/P2p, proxy ops posted). Graph capture and
 * replay (§7) reuse the same plan code from the host-callback thread. */
#define _GNU_SOURCE
#include <limits.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay/rp_internal.h"
#include "replay/rp_plan.h"
#include "replay/rp_truth.h"

enum { GS_RESET, GS_STARTED, GS_STOPPED };

void rp_app_init(struct rp_node *n) { memset(&n->app, 0, sizeof n->app); }

static void *fake_stream(const struct rp_comm *c) { return (void *)(uintptr_t)(0x7e0000100000ULL + 0x1000ULL * c->index); }

/* ncclGroupStart: no callback. */
void rp_group_start(struct rp_node *n) {
  struct rp_appstate *a = &n->app;
  if (a->prof_depth > 0) a->prof_depth++;
  a->group_depth++;
}

/* Non-blocking communicators: groupLaunch runs on a new pthread
 * (ncclAsyncJobMain); the app thread stops GroupApi right after spawning it,
 * so that stop comes before the launch events. The app then waits for the
 * job as a user polling ncclCommGetAsyncError would. */
struct async_launch {
  pthread_t thr;
  struct rp_node *n;
  struct rp_task *tasks;
  bool capture;
  atomic_bool go;
};

static void *async_main(void *arg) {
  struct async_launch *al = arg;
  while (!atomic_load(&al->go)) rp_sleep_ns(5000);
  rp_truth_hazard(al->n->truth, "nonblocking_async_launch", al->tasks->comm->rank, rp_gettid());
  rp_launch_tasks(al->n, al->tasks, al->capture);
  return NULL;
}

static struct async_launch *async_launch_start(struct rp_node *n, struct rp_task *tasks, bool capture) {
  struct async_launch *al = calloc(1, sizeof *al);
  al->n = n;
  al->tasks = tasks;
  al->capture = capture;
  if (pthread_create(&al->thr, NULL, async_main, al) != 0) { /* run it here rather than lose it */
    rp_launch_tasks(n, tasks, capture);
    free(al);
    return NULL;
  }
  return al;
}

static void async_launch_finish(struct async_launch *al) {
  if (!al) return;
  atomic_store(&al->go, true);
  pthread_join(al->thr, NULL);
  free(al);
}

static void group_end_internal(struct rp_node *n) {
  struct rp_appstate *a = &n->app;
  if (a->prof_depth > 0) {
    a->prof_depth--;
    if (a->prof_depth == 0 && a->state == GS_STOPPED) {
      rp_record(&n->plugin, a->group_api, LENS_ST_GROUP_END_API_START, NULL); /* args NULL */
      a->state = GS_RESET;
    }
  }
  a->group_depth--;
  struct async_launch *al = NULL;
  if (a->group_depth == 0 && a->pending) {
    struct rp_task *tasks = a->pending;
    a->pending = NULL;
    if (tasks->comm->nonblocking)
      al = async_launch_start(n, tasks, a->graph_capture);
    else
      rp_launch_tasks(n, tasks, a->graph_capture);
  }
  if (a->prof_depth == 0 && a->group_api) {
    rp_stop(&n->plugin, a->group_api);
    a->group_api = NULL;
  }
  if (al) async_launch_finish(al);
}

void rp_group_end(struct rp_node *n) { group_end_internal(n); }

/* ncclEnqueueCheck + taskAppend's GroupApi part. Returns the mask snapshot. */
static int enqueue_begin(struct rp_node *n, struct rp_comm *c) {
  struct rp_appstate *a = &n->app;
  if (a->prof_depth > 0) a->prof_depth++;
  a->group_depth++;
  int snap = rp_mask_load();
  if (a->prof_depth == 0 && rp_gate(LENS_EV_GROUP_API, snap)) {
    lens_nccl_descr_v6_t d = {0};
    d.type = LENS_EV_GROUP_API;
    d.groupApi.graphCaptured = a->graph_capture;
    d.groupApi.groupDepth = a->group_depth;
    a->group_api = rp_start(&n->plugin, c->ctx, &d);
    a->prof_depth = a->group_depth;
    a->state = GS_STARTED;
  }
  if (a->state == GS_STARTED) {
    rp_record(&n->plugin, a->group_api, LENS_ST_GROUP_START_API_STOP, NULL);
    a->state = GS_STOPPED;
  }
  return snap;
}

static struct rp_task *task_new(struct rp_node *n, struct rp_comm *c, int func, size_t count, const char *dtype,
                                size_t esize, int snap) {
  struct rp_task *t = calloc(1, sizeof *t);
  t->func = func;
  t->is_p2p = func == RP_SEND || func == RP_RECV;
  t->comm = c;
  t->count = count;
  t->dtype = dtype;
  t->esize = esize;
  t->mask = snap;
  t->root = 0;
  t->peer = -1;
  t->group_api_h = n->app.group_api;
  t->graph = n->app.graph_capture;
  t->user_tag = n->app.cfg_tag; /* nccl*Config(): the task carries the call's tag */
  t->op_id = -1;
  size_t bytes = count * esize;
  t->nChannels = bytes <= 65536 ? 1 : bytes <= (1u << 20) ? 2 : 4;
  if (t->is_p2p) t->nChannels = bytes <= 65536 ? 1 : 2;
  return t;
}

static void task_append(struct rp_node *n, struct rp_task *t) {
  struct rp_task **pp = &n->app.pending;
  while (*pp) pp = &(*pp)->next;
  *pp = t;
}

void rp_coll(struct rp_node *n, struct rp_comm *c, int func, size_t count, const char *dtype, size_t esize,
             int root) {
  struct rp_appstate *a = &n->app;
  if (c->nranks == 1) return; /* size-1 comms return before any profiler call */
  int64_t api_ns = rp_now();
  int snap = enqueue_begin(n, c);
  bool fresh = false;
  if (rp_gate(LENS_EV_COLL_API, snap)) {
    lens_nccl_descr_v6_t d = {0};
    d.type = LENS_EV_COLL_API;
    d.parentObj = a->group_api;
    d.collApi.func = rp_func_name(func);
    d.collApi.count = count;
    d.collApi.datatype = dtype;
    d.collApi.root = root;
    d.collApi.stream = fake_stream(c);
    d.collApi.graphCaptured = a->graph_capture;
    struct rp_v7x x = {.user_tag = a->cfg_tag};
    a->last_coll_api = rp_start7(&n->plugin, c->ctx, &d, &x);
    fresh = true;
  }
  struct rp_task *t = task_new(n, c, func, count, dtype, esize, snap);
  t->api_ns = api_ns;
  t->root = root;
  t->sym_kernel = a->cfg_sym;
  t->api_h = a->last_coll_api; /* possibly stale: StopCollApiEvent never clears it */
  task_append(n, t);
  if (!fresh && a->last_coll_api) rp_truth_hazard(n->truth, "stale_collapi_stop", c->rank, n->iter);
  rp_stop(&n->plugin, a->last_coll_api);
  group_end_internal(n);
}

void rp_p2p(struct rp_node *n, struct rp_comm *c, int func, size_t count, const char *dtype, size_t esize,
            int peer) {
  struct rp_appstate *a = &n->app;
  if (c->nranks == 1) return;
  int64_t api_ns = rp_now();
  int snap = enqueue_begin(n, c);
  if (rp_gate(LENS_EV_P2P_API, snap)) {
    lens_nccl_descr_v6_t d = {0};
    d.type = LENS_EV_P2P_API;
    d.parentObj = a->group_api;
    d.p2pApi.func = rp_func_name(func);
    d.p2pApi.count = count;
    d.p2pApi.datatype = dtype;
    d.p2pApi.stream = fake_stream(c);
    d.p2pApi.graphCaptured = a->graph_capture;
    struct rp_v7x x = {.user_tag = a->cfg_tag};
    a->last_p2p_api = rp_start7(&n->plugin, c->ctx, &d, &x);
  }
  struct rp_task *t = task_new(n, c, func, count, dtype, esize, snap);
  t->api_ns = api_ns;
  t->peer = peer;
  t->api_h = a->last_p2p_api;
  task_append(n, t);
  rp_stop(&n->plugin, a->last_p2p_api);
  a->last_p2p_api = NULL; /* StopP2pApiEvent clears it */
  group_end_internal(n);
}

/* ---- the stand-in kernel launch ---- */
static nvtxDomainHandle_t replay_dom;
static pthread_once_t replay_dom_once = PTHREAD_ONCE_INIT;
static void replay_dom_create(void) { replay_dom = nvtxDomainCreateA("nccl-lens-replay"); }
static nvtxDomainHandle_t replay_domain(void) {
  pthread_once(&replay_dom_once, replay_dom_create);
  return replay_dom;
}

/* The only thing between KernelLaunch start and stop: one NVTX mark, so
 * tests (and CUPTI-style correlation) can see what the bracket holds. */
void rp_standin_launch(void) {
  nvtxEventAttributes_t ev = {0};
  ev.version = NVTX_VERSION;
  ev.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  ev.messageType = NVTX_MESSAGE_TYPE_ASCII;
  ev.message.ascii = "cuLaunchKernelEx";
  nvtxDomainMarkEx(replay_domain(), &ev);
}

/* Creates the domain before any bracket, so the first launch holds only the mark. */
void rp_warm_nvtx(void) { (void)replay_domain(); }
