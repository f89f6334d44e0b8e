/* Text and JSON views of a lens_summary. */
#ifndef NCCL_LENS_SUMMARY_PRINT_H
#define NCCL_LENS_SUMMARY_PRINT_H

#include <stdio.h>

#include "summary/summary_model.h"

/* The hosts aligned on one job time base (job_align.h), printed from m's
 * processes (the job view's numbering: lens_job_skeleton). */
struct lens_align;
struct lens_summary_align { const struct lens_model *m; const struct lens_align *a; };

/* m: the files, processes, threads and notes of the traces (a skeleton
 * will do: no event is read); al: the alignment when the command built one
 * (shown when the traces come from two hosts or more), else NULL. */
void lens_summary_print_text(FILE *f, const struct lens_model *m, const struct lens_summary *s,
                             const struct lens_summary_align *al);
void lens_summary_print_json(FILE *f, const struct lens_model *m, const struct lens_summary *s,
                             const struct lens_summary_align *al);
/* Clock placement per process (summary_clocks.c), from CLOCK chunks. */
/* all: every process and host (else lens_fmt_rows_listed's cap, least sure first) */
void lens_summary_print_clocks_text(FILE *f, const struct lens_model *m, const struct lens_summary_align *al, int all);
/* The plugin's WARN lines mirrored into the traces (summary_notes.c); markdown for report. */
void lens_summary_print_notes(FILE *f, const struct lens_model *m, int markdown);
void lens_summary_print_clocks_json(FILE *f, const struct lens_model *m, const struct lens_summary_align *al); /* ,"clocks":[...] */
/* Algorithm bandwidth of a row in GB/s: the bytes of its tasks the job view
 * decomposed / their instances' execution (exec_bytes / exec_ns, no wait
 * for a peer counted); 0 when none was (exec_tasks 0). */
double lens_summary_algbw(const struct lens_sum_row *r);
/* The algbw for people, as GB/s to three digits ("12.3", "0.0907"); "-" when no task was decomposed. */
const char *lens_summary_algbw_text(const struct lens_sum_row *r, char *buf, size_t len);
/* Communicators (comm id and name) among the model's inits, one per rank each. */
size_t lens_summary_distinct_comms(const struct lens_model *m);

#endif
