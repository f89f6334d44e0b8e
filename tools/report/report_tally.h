/* Counting one fact over many processes (report_recorded.c): the few most
 * common values with how many processes have each, and how many other
 * values and processes there are, so that a line can name the usual value
 * and still account for every process. */
#ifndef NCCL_LENS_REPORT_TALLY_H
#define NCCL_LENS_REPORT_TALLY_H

#include <stddef.h>
#include <stdint.h>

/* Distinct values a tally keeps (a line names them); the others are counted. */
#define LENS_REPORT_TALLY_VALUES 3

struct lens_report_tally {
  uint64_t v[LENS_REPORT_TALLY_VALUES];
  size_t n[LENS_REPORT_TALLY_VALUES]; /* processes with v[i] */
  size_t k;                           /* values kept: most processes first, equal counts smaller value first */
  size_t other_vals, other_procs;     /* the values not kept, and the processes that have them */
};

/* Tallies vals (one per process; sorted in place): n[0..k) and other_procs add up to n. */
void lens_report_tally(uint64_t *vals, size_t n, struct lens_report_tally *t);

#endif
