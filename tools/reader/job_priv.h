/* Internals shared by the job view's files (job_match.c, job_causes.c). */
#ifndef NCCL_LENS_JOB_PRIV_H
#define NCCL_LENS_JOB_PRIV_H

#include "job.h"

int lens_job_match(const struct lens_model *m, struct lens_job *j);
/* Median of v (sorts v in place); 0 for n = 0. */
uint64_t lens_job_median(uint64_t *v, size_t n);

#endif
