#include "net_order.h"

#include <string.h>

static void insertion_u64(uint64_t *v, size_t n) {
  for (size_t i = 1; i < n; i++) {
    uint64_t x = v[i];
    size_t j = i;
    for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
    v[j] = x;
  }
}

void lens_sort_u64(uint64_t *v, size_t n, uint64_t *tmp) {
  if (n < 64) {
    insertion_u64(v, n);
    return;
  }
  uint64_t all_or = 0, all_and = ~(uint64_t)0;
  for (size_t i = 0; i < n; i++) all_or |= v[i], all_and &= v[i];
  uint64_t *src = v, *dst = tmp;
  enum { BITS = 11, DIGITS = 1 << BITS }; /* 16 KiB of counts on the stack of any thread */
  size_t count[DIGITS];
  for (unsigned shift = 0; shift < 64; shift += BITS) {
    uint64_t mask = (uint64_t)(DIGITS - 1) << shift;
    if (!((all_or ^ all_and) & mask)) continue; /* every key has this digit: the pass would move nothing */
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) count[(src[i] >> shift) & (DIGITS - 1)]++;
    size_t sum = 0;
    for (size_t d = 0; d < DIGITS; d++) {
      size_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) dst[count[(src[i] >> shift) & (DIGITS - 1)]++] = src[i];
    uint64_t *t = src;
    src = dst, dst = t;
  }
  if (src != v) memcpy(v, src, n * sizeof *v);
}

double lens_lower_median(double *v, size_t n) {
  if (!n) return 0;
  size_t k = (n - 1) / 2, lo = 0, hi = n - 1;
  while (lo < hi) {
    /* median of three as the pivot: sorted or constant runs stay linear */
    size_t mid = lo + (hi - lo) / 2;
    double a = v[lo], b = v[mid], c = v[hi];
    double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    size_t i = lo, j = hi;
    while (i <= j) { /* Hoare: [lo, j] <= pivot <= [i, hi] */
      while (v[i] < pivot) i++;
      while (v[j] > pivot) j--;
      if (i <= j) {
        double t = v[i];
        v[i] = v[j], v[j] = t;
        i++;
        if (j == 0) break;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return v[k]; /* between the two parts: equal to the pivot */
  }
  return v[k];
}
