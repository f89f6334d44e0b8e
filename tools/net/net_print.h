/* The network view as text, Markdown (the report's section) and JSON
 * (contract: docs/net.md). Numbers come from tools/analysis/net/net_analysis.h. */
#ifndef NCCL_LENS_NET_PRINT_H
#define NCCL_LENS_NET_PRINT_H

#include <stdio.h>

#include "analysis/net/net_analysis.h"

/* Instances listed in text and Markdown (the view may hold only these). */
#define LENS_NET_PRINT_TOP_INSTANCES 5

/* top: connections listed (the rest are counted); <= 0 means all. */
void lens_net_print_text(FILE *f, const struct lens_model *m, const struct lens_net *n, int top);
/* Markdown: the report's "Network" section (heading included). */
void lens_net_print_md(FILE *f, const struct lens_model *m, const struct lens_net *n, int top);
void lens_net_print_json(FILE *f, const struct lens_model *m, const struct lens_net *n);

#endif
