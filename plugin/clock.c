/* TSC detection and calibration. The anchor (tsc0, mono0) is taken once; the
 * rate is re-measured by the writer over an ever longer interval, so its
 * error shrinks as the job runs, and the conversion slews onto each new
 * measurement (clock_conv.c). Only the writer converts. */
#include "clock.h"

#include <stdio.h>
#include <string.h>

#include "log.h"

int lens_clock_use_tsc;

struct lens_clock_conv lens_clock_conv; /* writer-owned after setup */
static int g_calibrated;

uint64_t lens_real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Both flags must be present: constant rate across P-states and ticking in
 * deep C-states; otherwise TSC deltas are not time. */
static int tsc_invariant(void) {
#if defined(__x86_64__)
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return 0;
  char line[4096];
  int ok = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5) != 0) continue;
    ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
    break;
  }
  fclose(f);
  return ok;
#else
  return 0;
#endif
}

/* A (tsc, mono) pair read back to back; the tightest of a few tries. */
static void read_pair(uint64_t *tsc, uint64_t *mono) {
#if defined(__x86_64__)
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 5; i++) {
    uint64_t a = __rdtsc();
    uint64_t m = lens_mono_ns();
    uint64_t b = __rdtsc();
    if (b - a < best) {
      best = b - a;
      *tsc = a + (b - a) / 2;
      *mono = m;
    }
  }
#else
  *tsc = 0;
  *mono = lens_mono_ns();
#endif
}

void lens_clock_setup(int allow_tsc) {
  if (g_calibrated) {
    lens_clock_use_tsc = allow_tsc && lens_clock_conv.ns_per_tick > 0;
    return;
  }
  g_calibrated = 1;
  if (!allow_tsc || !tsc_invariant()) {
    lens_clock_use_tsc = 0;
    return;
  }
  uint64_t t0, m0, t1, m1;
  read_pair(&t0, &m0);
  struct timespec d = {0, 5 * 1000 * 1000};
  nanosleep(&d, NULL);
  read_pair(&t1, &m1);
  if (t1 <= t0 || m1 <= m0) {
    lens_log(LENS_LOG_INFO, "nccl-lens: TSC calibration failed; using CLOCK_MONOTONIC on the hot path");
    lens_clock_use_tsc = 0;
    return;
  }
  lens_clock_conv_init(&lens_clock_conv, t0, m0, (double)(m1 - m0) / (double)(t1 - t0));
  lens_clock_use_tsc = 1;
}

void lens_clock_refine(void) {
  if (!lens_clock_use_tsc) return;
  uint64_t t, m;
  read_pair(&t, &m); /* after the records converted so far were read: on the chain's end */
  lens_clock_conv_refine(&lens_clock_conv, t, m);
}

double lens_clock_ns_per_tick(void) { return lens_clock_use_tsc ? lens_clock_conv.ns_per_tick : 0.0; }
