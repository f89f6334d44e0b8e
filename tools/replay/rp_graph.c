/* CUDA graph capture and replay (spec §7), and the CUDA host-callback
 * thread. At capture the app thread sees the API events and KernelLaunch;
 * plans with proxy ops emit Group/Coll only at each replay, from the
 * host-callback thread, with the long-stopped CollApi as parent. */
#include <stdlib.h>
#include <string.h>

#include "replay/rp_plan.h"
#include "replay/rp_truth.h"

struct rp_cb {
  struct rp_cb *next;
  struct rp_plan plan;
  int replay;
};

void rp_capture_begin(struct rp_node *n) {
  n->app.graph_capture = true;
  n->ncaptured = 0;
}

void rp_capture_end(struct rp_node *n) { n->app.graph_capture = false; }

void rp_graph_capture_plan(struct rp_node *n, struct rp_plan *p) {
  if (n->ncaptured == RP_MAX_CAPTURED) {
    rp_tasks_free(p->tasks);
    return;
  }
  struct rp_graph_plan *g = &n->captured[n->ncaptured++];
  g->comm = p->comm;
  g->tasks = p->tasks;
  g->group_api = p->tasks ? p->tasks->group_api_h : NULL;
  g->has_proxy_ops = rp_plan_has_proxy_ops(n, p);
  if (!g->has_proxy_ops) rp_plan_host_task(n, p, RP_GRAPH_CAPTURE, false); /* isHostCbEnq == 0 */
}

void rp_graph_launch(struct rp_node *n, int replay) {
  struct rp_plan plans[RP_MAX_CAPTURED];
  int np = 0;
  const struct rp_graph_plan *cap[RP_MAX_CAPTURED];
  for (int i = 0; i < n->ncaptured; i++) /* hang-graph: the missing rank never launches this replay */
    if (!n->hang.now || n->captured[i].comm->rank != n->hang.missing_rank) cap[np++] = &n->captured[i];
  for (int i = 0; i < np; i++) {
    plans[i].comm = cap[i]->comm;
    plans[i].tasks = rp_tasks_clone(cap[i]->tasks);
    plans[i].kstart = 0;
  }
  /* The kernels a communicator captured run one after the other on its
   * stream: round r holds each communicator's r-th plan, and a round's
   * kernels start when the previous round's have ended (rp_plan_finish
   * moves the stream on). Within a round the ranks' kernels meet as eager
   * ones do. */
  int round[RP_MAX_CAPTURED], rounds = 0;
  for (int i = 0; i < np; i++) {
    round[i] = 0;
    for (int j = 0; j < i; j++) round[i] += plans[j].comm == plans[i].comm;
    if (round[i] + 1 > rounds) rounds = round[i] + 1;
  }
  for (int r = 0; r < rounds; r++) {
    struct rp_plan batch[RP_MAX_CAPTURED];
    int idx[RP_MAX_CAPTURED], nb = 0;
    for (int i = 0; i < np; i++)
      if (round[i] == r) idx[nb] = i, batch[nb++] = plans[i];
    for (int k = 0; k < nb; k++) rp_plan_gpu(n, &batch[k], replay);
    rp_plan_finish(n, batch, nb);
    for (int k = 0; k < nb; k++) plans[idx[k]] = batch[k];
  }
  for (int i = 0; i < np; i++) {
    if (!cap[i]->has_proxy_ops) { /* nothing fires at replay */
      rp_tasks_free(plans[i].tasks);
      continue;
    }
    struct rp_cb *cb = calloc(1, sizeof *cb);
    cb->plan = plans[i];
    cb->replay = replay;
    pthread_mutex_lock(&n->cb_mu);
    if (n->cb_tail)
      n->cb_tail->next = cb;
    else
      n->cb_head = cb;
    n->cb_tail = cb;
    n->cb_pending++;
    pthread_cond_broadcast(&n->cb_cv);
    pthread_mutex_unlock(&n->cb_mu);
    rp_truth_hazard(n->truth, "graph_stale_parent", plans[i].comm->rank, replay);
  }
}

void rp_graph_free(struct rp_node *n) {
  for (int i = 0; i < n->ncaptured; i++) rp_tasks_free(n->captured[i].tasks);
  n->ncaptured = 0;
}

/* hostStreamPlanCallback: runs queued plan tasks in stream order. */
static void *cb_main(void *arg) {
  struct rp_node *n = arg;
  atomic_store(&n->cb_tid, rp_gettid());
  pthread_mutex_lock(&n->cb_mu);
  for (;;) {
    while (!n->cb_head && !n->cb_stop) pthread_cond_wait(&n->cb_cv, &n->cb_mu);
    if (!n->cb_head) break;
    struct rp_cb *cb = n->cb_head;
    n->cb_head = cb->next;
    if (!n->cb_head) n->cb_tail = NULL;
    pthread_mutex_unlock(&n->cb_mu);
    rp_plan_host_task(n, &cb->plan, cb->replay, true);
    rp_tasks_free(cb->plan.tasks);
    free(cb);
    pthread_mutex_lock(&n->cb_mu);
    n->cb_pending--;
    pthread_cond_broadcast(&n->cb_cv);
  }
  pthread_mutex_unlock(&n->cb_mu);
  return NULL;
}

void rp_cb_start(struct rp_node *n) {
  pthread_mutex_init(&n->cb_mu, NULL);
  pthread_cond_init(&n->cb_cv, NULL);
  n->cb_head = n->cb_tail = NULL;
  n->cb_stop = false;
  n->cb_pending = 0;
  pthread_create(&n->cb_thr, NULL, cb_main, n);
  while (!atomic_load(&n->cb_tid)) rp_sleep_ns(10000);
}

void rp_cb_drain(struct rp_node *n) {
  pthread_mutex_lock(&n->cb_mu);
  while (n->cb_pending > 0) pthread_cond_wait(&n->cb_cv, &n->cb_mu);
  pthread_mutex_unlock(&n->cb_mu);
}

void rp_cb_stop(struct rp_node *n) {
  pthread_mutex_lock(&n->cb_mu);
  n->cb_stop = true;
  pthread_cond_broadcast(&n->cb_cv);
  pthread_mutex_unlock(&n->cb_mu);
  pthread_join(n->cb_thr, NULL);
  pthread_mutex_destroy(&n->cb_mu);
  pthread_cond_destroy(&n->cb_cv);
}
