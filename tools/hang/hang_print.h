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

#endif
