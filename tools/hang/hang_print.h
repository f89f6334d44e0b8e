/* Text and JSON forms of the hang diagnosis (also a section of `report`). */
#ifndef NCCL_LENS_HANG_PRINT_H
#define NCCL_LENS_HANG_PRINT_H

#include <stdio.h>

#include "analysis/hang/hang_analysis.h"
#include "reader/lensread.h"

/* all: every rank, channel, op and proxy thread on its own line; else, past
 * LENS_FMT_LIST_ROWS lines, a section's alike lines as one with rank ranges. */
void lens_hang_print_text(FILE *f, const struct lens_model *m, const struct lens_hang_report *h, int all);
void lens_hang_print_json(FILE *f, const struct lens_model *m, const struct lens_hang_report *h);
/* The one-line form other views lead with when the analysis finds work
 * stuck (nothing when none is): "hang: AllReduce seq 3 of world stuck on
 * 4 of 4 ranks, frozen proxy of rank 2: see nccl-lens hang"; the report's
 * first hint (Markdown bullet); and a "hang" JSON value (null when h is
 * NULL: not analysed). */
void lens_hang_print_headline(FILE *f, const struct lens_hang_report *h);
void lens_hang_print_headline_md(FILE *f, const struct lens_hang_report *h);
void lens_hang_print_headline_json(FILE *f, const struct lens_hang_report *h);
/* A stuck communicator's proxy ops in flight as the text groups them past
 * LENS_FMT_LIST_ROWS (one per direction, step and state, its ranks as
 * ranges), as a JSON array: [{send, step, state, ops, n_ranks, ranks}]
 * (ranks "0-516,518-1023", cut with ",..." past 64 runs). The report's page
 * draws it at the scale of a job. */
void lens_hang_print_wait_groups_json(FILE *f, const struct lens_hang_comm *c);

#endif
