/* Internals shared by the job view's files (job_match.c, job_reduce.c,
 * job_causes.c, job_part_io.c). */
#ifndef NCCL_LENS_JOB_PRIV_H
#define NCCL_LENS_JOB_PRIV_H

#include "job.h"
#include "job_part.h"

/* Median of v (sorts v in place); 0 for n = 0. */
uint64_t lens_job_median(uint64_t *v, size_t n);

/* The proxy ops of each row of j->ranks: parts[part[i]].ops[first_op[i]],
 * n_ops[i] of them (the records themselves may be gone: lens_job_reduce_consume). */
struct lens_job_oprefs {
  const struct lens_job_part *parts;
  uint32_t *part;
  uint64_t *first_op;
  uint32_t *n_ops;
};
/* Causes, straggler ranking, headline rows of a matched and decomposed job. */
int lens_job_finish(struct lens_job *j, const struct lens_job_oprefs *o);

/* A partial's string storage. */
const char *lens_job_part_intern(void **strings, const char *s);
void lens_job_part_strings_free(void *strings);

#endif
