/* lens-clock-cost: ns per read of the clocks a profiler can use on its hot
 * path, on this machine: the TSC (what nccl-lens reads when it is invariant)
 * and CLOCK_MONOTONIC through the vDSO (what NVIDIA's example plugin reads).
 * The floor of any per-callback cost, and the first thing to look at when
 * lens-bench's figures differ between machines. Median of 200 runs of 10000
 * back-to-back reads each. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define READS 10000
#define RUNS 200

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static volatile uint64_t sink;

static double median_ns(int which) {
  static double v[RUNS];
  for (int r = 0; r < RUNS; r++) {
    uint64_t acc = 0, t0 = mono_ns();
    for (int i = 0; i < READS; i++) {
#if defined(__x86_64__)
      if (which == 0) acc += __rdtsc();
      else
#endif
        acc += mono_ns();
    }
    v[r] = (double)(mono_ns() - t0) / READS;
    sink = acc;
  }
  qsort(v, RUNS, sizeof *v, cmp);
  return v[RUNS / 2];
}

int main(void) {
  FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  char cs[64] = "?";
  if (f) {
    if (fscanf(f, "%63s", cs) != 1) cs[0] = '?', cs[1] = 0;
    fclose(f);
  }
#if defined(__x86_64__)
  printf("rdtsc                     %6.1f ns per read\n", median_ns(0));
#endif
  printf("clock_gettime(MONOTONIC)  %6.1f ns per read (clocksource %s)\n", median_ns(1), cs);
  return 0;
}
