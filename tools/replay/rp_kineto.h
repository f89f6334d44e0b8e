/* --kineto DIR: torch.profiler (Kineto) traces of the simulated ranks, from
 * the driver's truth ops (rp_kineto.c; docs/kineto-import.md). */
#ifndef NCCL_LENS_RP_KINETO_H
#define NCCL_LENS_RP_KINETO_H

#include <stdint.h>

#include "replay/rp_internal.h"

/* Node i of a multi-host run writes its wall clock i x this off (a host's
 * NTP error for the reader's alignment to find; the truth says it). */
#define RP_KINETO_NODE_WALL_ERR_NS 1500000LL

/* This process's simulated wall clock error (0 for a single node). */
int64_t rp_kineto_wall_error_ns(const struct rp_node *n);
/* DIR/rank-R.json for each local rank (created O_EXCL|O_NOFOLLOW). 0 / -1. */
int rp_kineto_write(struct rp_node *n, const char *dir);

#endif
