/* One replay process (one node): rp_node_run() does the whole run and
 * writes this process's ground-truth object to truth (may be NULL). */
#ifndef NCCL_LENS_RP_NODE_H
#define NCCL_LENS_RP_NODE_H

#include <stdio.h>

#include "replay/rp_internal.h"

/* commId of communicator set `set` (equal on every rank). */
uint64_t rp_comm_id(uint64_t seed, int set);

int rp_node_run(const struct lens_replay_opts *o, int node, FILE *truth, struct lens_replay_result *res);

#endif
