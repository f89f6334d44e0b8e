/* Output of nccl-lens validate: text or JSON, and the verdict. */
#ifndef NCCL_LENS_VALIDATE_PRINT_H
#define NCCL_LENS_VALIDATE_PRINT_H

#include <stdio.h>

#include "reader/lensread.h"

#define LENS_VALIDATE_LIMIT_DEFAULT (-2)
#define LENS_VALIDATE_TEXT_LAUNCHES 20 /* a real run has thousands: the terminal gets the first ones */

struct lens_validate_opts {
  int json;
  long limit; /* launches listed in detail, -1 all, LENS_VALIDATE_LIMIT_DEFAULT: 20 as text; as JSON every flagged
              * one and the first ok ones (lens_fmt_json_ok_listed) */
  int all;    /* --all: every clock map, launch and channel, as text and JSON */
};

/* --json's default: every flagged launch and channel, the first ok ones
 * (lens_fmt_json_ok_listed); not with --limit or --all. */
static inline int lens_validate_ok_capped(const struct lens_validate_opts *o) {
  return o->json && !o->all && o->limit == LENS_VALIDATE_LIMIT_DEFAULT;
}

struct lens_validate_verdict {
  const char *level; /* "trusted", "mostly trusted", "unreliable", "unmapped" */
  char text[512];
};

/* KernelCh timers that are provably wrong: they count against the verdict. */
#define LENS_VALIDATE_BAD_FLAGS (LENS_ACC_OUTSIDE_KERNEL | LENS_ACC_RING_OVERRUN | LENS_ACC_STOP_BEFORE_START | \
                                 LENS_ACC_NON_MONOTONIC | LENS_ACC_SHARED_TIMER)

/* What the verdict is judged from: KernelCh counts over the job, the CUPTI
 * join's figures (have_report: the GPU analysis ran), and the clock maps. */
struct lens_validate_facts {
  size_t kch, bad, unmapped;
  int have_report;
  size_t kernel_records, kernels_joined, contradict;
};

/* The one rule: from the facts and every clock map of the job. */
void lens_validate_judge_facts(const struct lens_validate_facts *f, const struct lens_clock_map *maps, size_t n_maps,
                               struct lens_validate_verdict *v);
struct lens_validate_job;
/* Judges the merged partials (validate_part.h) with the skeleton's clock
 * maps: their facts, then the rule (validate and report). */
void lens_validate_judge_job(const struct lens_validate_job *j, const struct lens_model *skel,
                             struct lens_validate_verdict *v);
/* Prints the merged partials (validate_part.h) with the skeleton's files and
 * clock maps; returns the command's exit status (0, or 1 after an error line). */
int lens_validate_print(FILE *f, const struct lens_model *skel, const struct lens_validate_job *j,
                        const struct lens_validate_opts *o);

#endif
