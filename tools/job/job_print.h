/* Printing the job view (tools/analysis/job/job.h): text tables, the JSON contract
 * of `nccl-lens job --json` (docs/job.md), and the headline tables that
 * summary and report lead with. */
#ifndef NCCL_LENS_JOB_PRINT_H
#define NCCL_LENS_JOB_PRINT_H

#include <stdio.h>

#include "analysis/job/job.h"
#include "analysis/job/job_align.h"

/* Foreign inputs of the job (torch.profiler's Kineto files): what the report
 * says of their clock and of how their kernels were matched. */
struct lens_job_sources {
  size_t kineto_files;
  uint64_t kernels, by_seq, by_order;   /* NCCL kernels read; matched by Seq / by order (ambiguous) */
  uint64_t no_launch, no_api;           /* kernels whose launch / record_param_comms op was not found */
  uint64_t dropped;                     /* kernels past the importer's bounds */
  size_t uneven_comms;                  /* communicators matched by order whose ranks hold different numbers
                                         * of kernels: there the order pairs some kernels wrongly */
  size_t same_rank_files;               /* files whose (rank, world size) an earlier file had: two windows of one
                                         * rank, or one file twice; the reduce keeps one record per
                                         * (instance, rank) */
};

/* An instance's cause in words, as the instance table says it ("late app
 * call", "host spans" for the unknown cause on host spans, "late or busy
 * GPU" for it on GPU spans): one rule for the text, Markdown and HTML. */
const char *lens_job_inst_cause_words(const struct lens_job_inst *in);
#define LENS_JOB_HOST_SPANS_WORDS "host spans"

/* A straggler's causes as the views name them: (words, instances), in the
 * causes' order, the unknown ones split as lens_job_inst_cause_words splits
 * them ("late or busy GPU", "host spans"). Returns how many (at most
 * LENS_JOB_CAUSE_ITEMS). top: the index of the item with most instances
 * (the first of equals; -1 none). */
#define LENS_JOB_CAUSE_ITEMS 9
struct lens_job_cause_item {
  const char *words;
  uint64_t n;
  int host_spans; /* the unknown cause on host spans (its words LENS_JOB_HOST_SPANS_WORDS) */
};
size_t lens_job_straggler_causes(const struct lens_job_straggler *s, struct lens_job_cause_item *out, int *top);
/* The words of the item with most instances ("-" none; host spans said as
 * what they mean): the verdicts' "mostly ...". */
const char *lens_job_straggler_top_words(const struct lens_job_straggler *s);

/* Headline tables (one per communicator with > 1 rank loaded) and the
 * straggler ranking. Prints nothing when no communicator has 2 ranks. */
void lens_job_print_headline(FILE *f, const struct lens_model *m, const struct lens_job *j);
/* The whole job report: headline, matching counts, instances (max_list
 * listed, the longest waits first; 0 = all). */
/* a: the host alignment (may be NULL): its "hosts" table / JSON keys. */
/* src: foreign inputs (NULL: none). */
void lens_job_print_text(FILE *f, const struct lens_model *m, const struct lens_job *j, size_t max_list,
                         const struct lens_align *a, const struct lens_job_sources *src);
/* hang: the hang analysis of the same traces (its "hang" value), NULL when
 * not run (streamed or partial input: JSON null). */
struct lens_hang_report;
/* all: every instance; else (--json's default) every flagged one (a cause
 * named, or a flag) and the first ok ones (lens_fmt_json_ok_listed), and
 * "left_out" counting the rest (the rows count them all). */
void lens_job_print_json_listed(FILE *f, const struct lens_model *m, const struct lens_job *j,
                                const struct lens_align *a, const struct lens_hang_report *hang,
                                const struct lens_job_sources *src, int all);
/* lens_job_print_json_listed with all set. */
void lens_job_print_json(FILE *f, const struct lens_model *m, const struct lens_job *j, const struct lens_align *a,
                         const struct lens_hang_report *hang, const struct lens_job_sources *src);
/* Markdown headline for `nccl-lens report`. */
void lens_job_print_md(FILE *f, const struct lens_model *m, const struct lens_job *j);

#endif
