/* Text and JSON views of a lens_summary. */
#ifndef NCCL_LENS_SUMMARY_PRINT_H
#define NCCL_LENS_SUMMARY_PRINT_H

#include <stdio.h>

#include "summary/summary_model.h"

void lens_summary_print_text(FILE *f, const struct lens_model *m, const struct lens_summary *s);
void lens_summary_print_json(FILE *f, const struct lens_model *m, const struct lens_summary *s);
/* Clock placement per process (summary_clocks.c), from CLOCK chunks. */
void lens_summary_print_clocks_text(FILE *f, const struct lens_model *m);
/* The plugin's WARN lines mirrored into the traces (summary_notes.c); markdown for report. */
void lens_summary_print_notes(FILE *f, const struct lens_model *m, int markdown);
void lens_summary_print_clocks_json(FILE *f, const struct lens_model *m); /* ,"clocks":[...] */
/* Algorithm bandwidth of a row in GB/s (bytes / completion ns); 0 if unknown. */
double lens_summary_algbw(const struct lens_sum_row *r);
/* The algbw for people: "12.3 GB/s", "812 kB/s", "-" when no op completed. */
const char *lens_summary_algbw_text(const struct lens_sum_row *r, char *buf, size_t len);
/* Communicators (comm id and name) among the model's inits, one per rank each. */
size_t lens_summary_distinct_comms(const struct lens_model *m);

#endif
