/* Internals shared by the job view's files (job_match.c, job_reduce.c,
 * job_causes.c, job_part_io.c). */
#ifndef NCCL_LENS_JOB_PRIV_H
#define NCCL_LENS_JOB_PRIV_H

#include "job.h"
#include "job_part.h"

/* A KernelCh whose GPU timers time its rank's span: both set, stop not
 * before start, none flagged bad (stop before start, ring overrun, shared
 * timer). The match's span and the end's bracket (job_align_points.c) read
 * the same channels. */
static inline int lens_job_kch_timed(const struct lens_event *x) {
  if (x->type != LENS_T_KERNEL_CH ||
      (x->acc.flags & (LENS_ACC_STOP_BEFORE_START | LENS_ACC_RING_OVERRUN | LENS_ACC_SHARED_TIMER)))
    return 0;
  uint64_t a = x->p.kernel_ch.start_gpu_ns, b = x->p.kernel_ch.stop_gpu_ns;
  return a && b && b >= a;
}

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

/* One-way pairs of the matched instances (job_oneway.c). One end: a row's
 * proxy op's evidence, by instance and link. */
struct lens_job_wend { uint32_t inst; int32_t snd, rcv, proc; uint16_t ch; uint8_t is_send, pad; uint64_t t; };
/* Adds the n wops of row (filled in r, of j's instances, whose first_rank
 * are set) to *v. 0 / -1 (out of memory). */
int lens_job_wends_add(const struct lens_job *j, size_t row, const struct lens_job_rank *r,
                       const struct lens_job_wop *w, size_t n, struct lens_job_wend **v, size_t *nv, size_t *cap);
/* Pairs the ends (sorted here) into j->oneway; host_of: global proc -> host
 * name number. 0 / -1 (out of memory). */
int lens_job_pair_oneway(struct lens_job *j, struct lens_job_wend *v, size_t n, const int32_t *host_of);

/* A partial's string storage (lens_job_part_intern: job_part.h). */
void lens_job_part_strings_free(void *strings);

#endif
