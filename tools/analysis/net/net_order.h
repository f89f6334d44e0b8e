/* Ordering without comparator calls for net's hot loops: at 10^8 events a
 * link's steps (64-bit packed keys, net_links.c) were sorted by qsort and
 * its score's median taken by sorting every ratio, a fifth of `report`'s
 * CPU. Same results as qsort's, in linear time. */
#ifndef NCCL_LENS_NET_ORDER_H
#define NCCL_LENS_NET_ORDER_H

#include <stddef.h>
#include <stdint.h>

/* Sorts v[0..n) ascending (least significant digit radix, 11 bits a pass,
 * skipping digits every key shares); tmp: scratch for n values. */
void lens_sort_u64(uint64_t *v, size_t n, uint64_t *tmp);

/* The lower median of v[0..n) (the element a sort would put at (n - 1) / 2),
 * by selection: v is reordered. 0 when n is 0. No NaN in v. */
double lens_lower_median(double *v, size_t n);

#endif
