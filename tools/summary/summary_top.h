/* --top N: the per-operation tables of summary and report cut to the N rows
 * of each communicator that took the most time. */
#ifndef NCCL_LENS_SUMMARY_TOP_H
#define NCCL_LENS_SUMMARY_TOP_H

#include <stddef.h>

#include "summary/summary_model.h"

/* Keeps, per communicator (row group), the top rows by total completion time
 * (enqueue time where no completion was seen), in their order. top 0 keeps
 * all. Returns the number of rows left out. */
size_t lens_summary_top(struct lens_summary *s, size_t top);

#endif
