/* Job scenarios (docs/replay.md, "Job scenarios"): AllReduces on coupled
 * GPUs with one injected straggler or slow link, and the ground truth of
 * each instance's cause. */
#ifndef NCCL_LENS_RP_JOB_H
#define NCCL_LENS_RP_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "replay/rp_internal.h"

enum rp_job_kind { RP_JOB_OFF, RP_JOB_NONE, RP_JOB_LATE_APP, RP_JOB_SLOW_LAUNCH, RP_JOB_GPU_BUSY, RP_JOB_SLOW_LINK,
                  RP_JOB_STARVED_PROXY };

struct rp_job_cause {
  const char *cause; /* "none", "late_app_call", "slow_launch", "gpu_busy", "slow_link", "starved_proxy" */
  int rank, peer;    /* straggler (the slow link's sender, the starved proxy's rank) and the link's receiver; -1 */
  int64_t ns;        /* injected delay */
};

/* RP_JOB_OFF for the other scenarios. */
enum rp_job_kind rp_job_kind_of(const char *scenario);
void rp_job_run(struct rp_node *n, int iters);
struct rp_job_cause rp_job_truth_cause(const struct lens_replay_opts *o, int nranks);
uint64_t rp_job_comm_id(const struct lens_replay_opts *o, int set);

/* Hooks of the launch path (only with a board): */
/* Work added to an instance by the injected slow link (the sender's arrival). */
int64_t rp_job_extra_ns(struct rp_node *n, const struct rp_comm *c, int64_t dur, int nsteps);
/* A slow launch: the launch call holds until the injected delay has passed. */
void rp_job_launch_hold(struct rp_node *n, const struct rp_comm *c);
/* The wire time a proxy op's steps get added on the injected slow link,
 * either side (the sender's isend -> done; the receiver's data that late). */
int64_t rp_job_wire_ns(struct rp_node *n, const struct rp_comm *c, bool send, int peer);

#endif
