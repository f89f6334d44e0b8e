/* The hot-path clock: the TSC when it is invariant (constant_tsc and
 * nonstop_tsc) and NCCL_LENS_TSC != 0, else CLOCK_MONOTONIC through the vDSO.
 * Rings hold raw values; only the writer converts them to CLOCK_MONOTONIC ns
 * (lens_clock_to_mono), so the hot path pays one read and nothing else. */
#ifndef NCCL_LENS_PLUGIN_CLOCK_H
#define NCCL_LENS_PLUGIN_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "clock_conv.h"
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
/* Writer: re-measure the TSC rate against CLOCK_MONOTONIC over [anchor, now]
 * and slew the conversion onto it (clock_conv.h: continuous, increasing). */
void lens_clock_refine(void);
extern struct lens_clock_conv lens_clock_conv; /* writer-owned after setup */

/* Writer: a raw hot-path value to CLOCK_MONOTONIC ns (inline: called for
 * every record the writer converts). */
static inline uint64_t lens_clock_to_mono(uint64_t raw) {
  if (!lens_clock_use_tsc) return raw;
  return lens_clock_conv_at(&lens_clock_conv, raw);
}
/* ns per tick measured over [anchor, latest refinement] (0 when the hot clock
 * is MONOTONIC); the conversion slews onto it. */
double lens_clock_ns_per_tick(void);
uint64_t lens_real_ns(void);

#endif
