/* The hot-path clock: the TSC when it is invariant (constant_tsc and
 * nonstop_tsc) and NCCL_LENS_TSC != 0, else CLOCK_MONOTONIC through the vDSO.
 * Rings hold raw values; only the writer converts them to CLOCK_MONOTONIC ns
 * (lens_clock_to_mono), so the hot path pays one read and nothing else. */
#ifndef NCCL_LENS_PLUGIN_CLOCK_H
#define NCCL_LENS_PLUGIN_CLOCK_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

extern int lens_clock_use_tsc; /* read on the hot path; set once at first init */

static inline uint64_t lens_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t lens_hot_now(void) {
#if defined(__x86_64__)
  if (__builtin_expect(lens_clock_use_tsc, 1)) return __rdtsc();
#endif
  return lens_mono_ns();
}

/* First init: decide the clock and calibrate (takes ~5 ms when TSC is used). */
void lens_clock_setup(int allow_tsc);
/* Writer: refine the TSC rate against CLOCK_MONOTONIC over a growing interval. */
void lens_clock_refine(void);
/* Conversion state (writer-owned after setup; see clock.c). */
struct lens_clock_conv {
  uint64_t tsc0, mono0;
  double ns_per_tick;
};
extern struct lens_clock_conv lens_clock_conv;

/* Writer: a raw hot-path value to CLOCK_MONOTONIC ns (inline: called for
 * every record the writer converts). */
static inline uint64_t lens_clock_to_mono(uint64_t raw) {
  if (!lens_clock_use_tsc) return raw;
  int64_t d = (int64_t)(raw - lens_clock_conv.tsc0);
  return lens_clock_conv.mono0 + (uint64_t)(int64_t)((double)d * lens_clock_conv.ns_per_tick);
}
/* ns per tick of the calibration in use (0 when the hot clock is MONOTONIC). */
double lens_clock_ns_per_tick(void);
uint64_t lens_real_ns(void);

#endif
