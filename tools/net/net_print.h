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
/* JSON (docs/net.md): all set, every link, connection, instance and QP;
 * else (--json's default) every flagged connection and the first ok ones
 * with their links, the instances with the most step time, the first QPs
 * (lens_fmt_json_ok_listed), and "left_out" counting the rest. */
void lens_net_print_json_listed(FILE *f, const struct lens_model *m, const struct lens_net *n, int all);
/* lens_net_print_json_listed with all set. */
void lens_net_print_json(FILE *f, const struct lens_model *m, const struct lens_net *n);

#endif
