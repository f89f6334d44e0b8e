/* The Markdown report (docs/report.md lists its sections). */
#ifndef NCCL_LENS_REPORT_MD_H
#define NCCL_LENS_REPORT_MD_H

#include <stdint.h>
#include <stdio.h>

#include "cli/format.h"
#include "report/report_model.h"

void lens_report_print_md(FILE *f, const struct lens_model *m, const struct lens_report *r);
/* "what to look at next": one Markdown bullet per finding, most important
 * first; returns how many it wrote. */
int lens_report_print_hints(FILE *f, const struct lens_model *m, const struct lens_report *r);
/* After a capped table: a paragraph of its own saying how many rows it left out (none when n_left is 0). */
void lens_report_left_out(FILE *f, size_t n_left, const char *what);

#endif
