/* Network scenarios (docs/replay.md, "Network scenarios"): every rank
 * exchanges the same p2p traffic with every rank on the other nodes, with
 * one injected fault, and the ground truth of every proxy step's phases:
 *
 *   net-even       nothing injected
 *   net-slow-link  one link, one direction: rank 1 -> the first rank of node
 *                  1; every step of it 40 ms longer on the wire
 *   net-gpu-bound  rank 1's GPU produces each step 10 ms later
 *   net-slow-recv  the first rank of node 1 consumes each step 40 ms late;
 *                  its senders wait 20 ms for each credit
 *   net-ib         net-even with NetPlugin on: IB QP events under each step
 *
 * Step truth: the driver reads CLOCK_MONOTONIC just before and just after
 * each start/record/stop it makes; a boundary's true time is the midpoint,
 * with half the bracket as its error bound. */
#ifndef NCCL_LENS_RP_NET_H
#define NCCL_LENS_RP_NET_H

#include <stdbool.h>
#include <stdio.h>

#include "replay/rp_internal.h"

bool rp_net_scenario_known(const char *name);
void rp_net_run(struct rp_node *n, const char *name, int iters);
/* post_ops hook: shapes a net op of a net scenario (its step cadence and
 * injected delays) and gives it step truth. No-op elsewhere. */
void rp_net_shape_op(struct rp_node *n, struct rp_op *op, bool send);
/* Proxy hook: a step callback the driver just made for op (state: 0 start,
 * -1 stop, else the NCCL state), bracketed by before/after. No-op for ops
 * without step truth. */
void rp_net_step_mark(struct rp_op *op, int k, int state, int64_t before, int64_t after);
/* Proxy hook, at the start of each progress pass (nactive: ops active at
 * the end of the previous one): a pass that comes more than 200 us after
 * the previous one while ops were active means the thread did not run
 * (it naps 8 us): recorded as a proxy gap, the truth of starvation. */
void rp_net_pass(struct rp_proxy *px, int64_t now, int nactive);
/* Writes ,"net":{...} into this process's truth object (nothing outside net
 * scenarios) and frees the tables. */
void rp_net_truth_write(struct rp_node *n, FILE *f);
void rp_net_free(struct rp_node *n);

#endif
