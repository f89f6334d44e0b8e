/* Checked and saturating arithmetic for values read from files (traces,
 * partials, pages): nothing handed to a reader may overflow a signed type,
 * wrap a size or convert a float out of an integer's range (undefined
 * behaviour in C). Sizes: lens_mul_size / lens_add_size fail on a wrap.
 * Signed times: the lens_i64_* helpers saturate at INT64_MIN / INT64_MAX, so
 * absurd inputs give absurd but ordered answers instead of wrapping.
 * Floats: lens_f2i64 / lens_f2u64 map NaN to 0 and clamp to the range. */
#ifndef LENS_CHECKED_H
#define LENS_CHECKED_H

#include <stddef.h>
#include <stdint.h>

/* The latest time a reader takes from a file, in ns: 2^62 is 146 years of
 * MONOTONIC uptime and the year 2116 on REALTIME, past any clock reading.
 * With every time at most this, a sum or difference of two never overflows
 * int64: readers refuse a file that holds a later one. */
#define LENS_TIME_MAX_NS (1ull << 62)
static inline int lens_time_ok(uint64_t t) { return t <= LENS_TIME_MAX_NS; }
static inline int lens_stime_ok(int64_t t) { return t >= -(int64_t)LENS_TIME_MAX_NS && t <= (int64_t)LENS_TIME_MAX_NS; }

/* a * b into *out; 0, or -1 (and *out SIZE_MAX) when it wraps. */
static inline int lens_mul_size(uint64_t a, uint64_t b, size_t *out) {
  size_t r;
  if (__builtin_mul_overflow(a, b, &r)) return *out = SIZE_MAX, -1;
  return *out = r, 0;
}
static inline int lens_add_size(uint64_t a, uint64_t b, size_t *out) {
  size_t r;
  if (__builtin_add_overflow(a, b, &r)) return *out = SIZE_MAX, -1;
  return *out = r, 0;
}

static inline int64_t lens_i64_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}
static inline int64_t lens_i64_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? INT64_MAX : INT64_MIN;
  return r;
}
static inline int64_t lens_i64_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}
/* A u64 (a time, a count) as an i64: values past INT64_MAX saturate. */
static inline int64_t lens_u2i64(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }
/* a - b of two u64 times as a signed difference, saturated. */
static inline int64_t lens_u64_diff(uint64_t a, uint64_t b) {
  if (a >= b) return lens_u2i64(a - b);
  uint64_t d = b - a;
  return d > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)d;
}

/* Float to integer: NaN 0, otherwise clamped (2^63 and 2^64 are exact doubles). */
static inline int64_t lens_f2i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0) return INT64_MAX;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)x;
}
static inline uint64_t lens_f2u64(double x) {
  if (x != x || x <= 0) return 0;
  if (x >= 18446744073709551616.0) return UINT64_MAX;
  return (uint64_t)x;
}

#endif
