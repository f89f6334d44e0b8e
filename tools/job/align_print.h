/* Printing the host alignment (tools/analysis/job/job_align.h): the "hosts" table
 * of `nccl-lens job` and summary's clocks section, and its JSON key. */
#ifndef NCCL_LENS_ALIGN_PRINT_H
#define NCCL_LENS_ALIGN_PRINT_H

#include <stdio.h>

#include "analysis/job/job_align.h"

/* The time base line and one row per host. Prints nothing for one host. */
/* all: every host; else lens_fmt_rows_listed's cap: the reference host, then the least sure (widest bound). */
void lens_align_print_text(FILE *f, const struct lens_model *m, const struct lens_align *a, int all);
/* ,"time_base":{...},"hosts":[...] (a key pair to put inside an object). */
void lens_align_print_json(FILE *f, const struct lens_model *m, const struct lens_align *a);
/* One line stating the job time base's clock (for export metadata). */
void lens_align_time_base_text(const struct lens_model *m, const struct lens_align *a, char *buf, size_t len);

#endif
