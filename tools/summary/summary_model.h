/* The summary's numbers (tools/analysis/summary/summary_analysis.h) and how
 * every view labels its rows. */
#ifndef NCCL_LENS_SUMMARY_MODEL_H
#define NCCL_LENS_SUMMARY_MODEL_H

#include <stddef.h>

#include "analysis/summary/summary_analysis.h"

/* "1 MiB-2 MiB" */
void lens_size_bucket_label(int bucket, char *buf, size_t len);
/* How every view names a row: "AllReduce, backward" (func and user tag name,
 * NCCL_LENS_TAG_NAMES / --tag-names), and "sym AGxLL_R" for a symmetric
 * kernel's algorithm (the full name is in kernel_variant). */
const char *lens_summary_func_label(const struct lens_sum_row *r, char *buf, size_t len);
const char *lens_summary_algo_label(const struct lens_sum_row *r, char *buf, size_t len);

#endif
