/* The Markdown report (docs/report.md lists its sections). */
#ifndef NCCL_LENS_REPORT_MD_H
#define NCCL_LENS_REPORT_MD_H

#include <stdint.h>
#include <stdio.h>

#include "report/report_model.h"

void lens_report_print_md(FILE *f, const struct lens_model *m, const struct lens_report *r);
/* "what to look at next": one Markdown bullet per finding, most important
 * first; returns how many it wrote. */
int lens_report_print_hints(FILE *f, const struct lens_model *m, const struct lens_report *r);
/* A communicator as people name it: its name, else "comm 0x<id>". */
const char *lens_report_comm_label(const char *name, uint64_t comm_id, char *buf, size_t len);
/* "812 ns", "3.20 us", "9.10 ms", "1.50 s" */
void lens_report_fmt_ns(double ns, char *buf, size_t len);

#endif
