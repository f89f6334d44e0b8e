/* Internals shared by the network view's files (tools/analysis/net/net_*.c). */
#ifndef NCCL_LENS_NET_PRIV_H
#define NCCL_LENS_NET_PRIV_H

#include "net_analysis.h"

/* Adds one step (timed: lens_net_step_split returned 1) to a split. */
void lens_net_split_add_step(struct lens_net_split *s, const struct lens_net_step *st, int timed);
void lens_net_split_merge(struct lens_net_split *into, const struct lens_net_split *s);
/* NetPlugin events summarised per QP / socket (net_plugin.c); link_of_op maps
 * a ProxyOp event index to its link (-1). Sets links' transport. */
int lens_net_build_qps(const struct lens_model *m, struct lens_net *n, const int32_t *link_of_op);

#endif
