/* Percentiles of per-batch samples (ns per call). */
#ifndef NCCL_LENS_BENCH_STATS_H
#define NCCL_LENS_BENCH_STATS_H

#include <stddef.h>

/* Sorts v in place; returns the p-th percentile (0..100), nearest rank. */
double bench_percentile(double *v, size_t n, double p);

#endif
