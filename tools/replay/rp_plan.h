/* Plans: what doLaunches and hostStreamPlanTask do with the tasks of one
 * communicator (spec §2.4), shared by eager launches and graph replays. */
#ifndef NCCL_LENS_RP_PLAN_H
#define NCCL_LENS_RP_PLAN_H

#include "replay/rp_internal.h"

struct rp_plan {
  struct rp_comm *comm;
  struct rp_task *tasks;
  int64_t kstart; /* true kernel start, host ns */
};

#define RP_GRAPH_CAPTURE (-2)
#define RP_EAGER (-1)

/* groupLaunch/doLaunches of a group's tasks (eager, or recorded under capture);
 * takes ownership of the list. */
void rp_launch_tasks(struct rp_node *n, struct rp_task *tasks, bool capture);
/* The simulated GPU runs the plan: items per channel, truth ops (replay: -1 eager, >= 0 graph replay). */
void rp_plan_gpu(struct rp_node *n, struct rp_plan *p, int replay);
/* All ranks of a launch finish together (per communicator set): true ends. */
void rp_plan_finish(struct rp_node *n, struct rp_plan *plans, int np);
void rp_plan_finish_set(struct rp_node *n, struct rp_plan *plans, int np, int set); /* one comm set */
/* hostStreamPlanTask: Group, Coll/P2p starts, proxy ops posted, stops. post=false at capture. */
void rp_plan_host_task(struct rp_node *n, struct rp_plan *p, int replay, bool post);
bool rp_plan_has_proxy_ops(struct rp_node *n, const struct rp_plan *p);
void rp_tasks_free(struct rp_task *t);
/* True work of a task on each channel, ns. */
int64_t rp_task_dur_ns(const struct rp_node *n, const struct rp_task *t);
/* Steps of each net proxy op of a task. */
int rp_task_net_steps(const struct rp_node *n, const struct rp_task *t);
/* A p2p task that shares its pair's GPU items (the pair comes first in p). */
bool rp_plan_task_follows(const struct rp_task *t, const struct rp_plan *p);
struct rp_task *rp_tasks_clone(const struct rp_task *t);

/* Under capture: keeps the plan for replays (rp_graph.c). */
void rp_graph_capture_plan(struct rp_node *n, struct rp_plan *p);

void rp_standin_launch(void);
void rp_warm_nvtx(void);

#endif
