/* Coarse placement of a process's CLOCK_MONOTONIC on a job time base, from
 * the CLOCK chunks its writer left (plugin/writer/clock_evidence.c). The job time
 * base is CLOCK_REALTIME as each host's NTP keeps it: good to NTP's error
 * (adjtimex maxerror, typically under a millisecond on a synced host), which
 * the bound says. Finer alignment from the job's own sync points (collective
 * ends, send/receive pairs) refines this; it never replaces the bound. */
#ifndef NCCL_LENS_HOST_CLOCK_H
#define NCCL_LENS_HOST_CLOCK_H

#include <stdint.h>

#include "lensread.h"

struct lens_host_clock {
  int32_t proc;
  uint32_t n_samples;
  uint64_t ref_mono_ns;       /* the tightest sample's MONOTONIC midpoint */
  int64_t real_minus_mono_ns; /* at ref_mono_ns: job time = mono + this */
  double drift_ppm;           /* (REALTIME rate / MONOTONIC rate - 1) over the samples: NTP's slew */
  uint64_t bound_ns;          /* the true placement error is at most this: half the tightest bracket + maxerror */
  int ntp_synced;             /* 0: maxerror is the kernel's "unsynchronised" value, the bound is large */
  int64_t timens_mono_offset_ns; /* this process's MONOTONIC = its host's MONOTONIC + this */
  const char *boot_id, *host;    /* point into the model */
};

/* 0 and *out filled, or -1 when the process left no CLOCK chunk (older traces). */
int lens_host_clock_of(const struct lens_model *m, int32_t proc, struct lens_host_clock *out);
/* Job time (REALTIME ns) of a MONOTONIC ns of that process. */
int64_t lens_host_clock_to_job(const struct lens_host_clock *hc, uint64_t mono_ns);

#endif
