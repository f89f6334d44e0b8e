/* Our KernelLaunches against a Kineto file's NCCL kernels, per GPU stream.
 *
 * Clocks. Our host times are CLOCK_MONOTONIC; Kineto's CPU events are
 * CLOCK_REALTIME and its GPU events are CUPTI times mapped to REALTIME by its
 * own fit. The coarse offset C = REALTIME - MONOTONIC comes from our trace's
 * CLOCK chunks (the session's start pair when there are none): CPU-side
 * events (proxy work) go to the Kineto file with C alone. GPU-side events
 * (channels) are placed by a fine fit, per stream pair, of the matched
 * kernels' Kineto start against our own GPU time of the launch: the first
 * channel's start pTimer, raw (the GPU's globaltimer, the clock CUPTI's
 * kernel times come from, so the relation is a line: offset, and slope when
 * the pairs span 50 ms or more); or, for launches without channel timers,
 * our CUPTI record on the host clock. Our own GPU-to-host clock map serves
 * only the first guess (it wanders by tens of microseconds when the proxy
 * notices late). The fit's residual (robust spread) and bound (largest
 * residual plus the file's ts rounding) go into the file.
 *
 * Matching, never guessing: (1) a CUPTI correlation id our trace recorded
 * for the launch equals the kernel's "correlation" on the same device and
 * stream; (2) else, per pair of streams (ours: the launch's cudaStream_t;
 * Kineto's: pid = device, tid = stream), in order and in time: a kernel and
 * a launch pair only when each is the other's only candidate within the
 * tolerance, our channels start and end with the kernel, and the host clock agrees
 * (the kernel starts after the launch call), and the best alignment's fit on
 * the GPU clock is a line within KM_FIT_RESIDUAL_MAX_NS (else the stream pair
 * stays unmatched, counted: misfit_streams); (3) a launch without
 * GPU time of ours, by order alone, when it is one of as many unmatched
 * launches as unmatched kernels between two matched neighbours (or a
 * stream's first or last pair and that end of both sequences). Kernels left
 * over are counted and named.
 *
 * What this cannot see: channel timers that are another item's (a proxy more
 * than its 64-item ring behind, NCCL's KernelCh hazard) that the GPU analysis
 * did not flag (LENS_ACC_RING_OVERRUN) are taken as they are, and a run of
 * them pairs its launches with the kernels that many items later. */
#ifndef NCCL_LENS_EXPORT_KINETO_MATCH_H
#define NCCL_LENS_EXPORT_KINETO_MATCH_H

#include <stddef.h>
#include <stdint.h>

#include "export/kineto_json.h"
#include "reader/lensread.h"

/* Largest robust residual (1.4826 x median) of a stream pair's fit on the GPU's own clock that is taken for a true
 * pairing. Our first channel's pTimer and the kernel's ts are one clock (the globaltimer, mapped to the wall clock
 * by CUPTI's line): a true pairing fits within a microsecond or two (0.3 us on the replay; the file's ts rounding
 * comes on top). An alignment shifted by a run of same-length kernels fits only the loop's jitter: tens of us
 * (38 us when a file's wall clock was 1.5 ms off ours). */
#define KM_FIT_RESIDUAL_MAX_NS 10000.0
/* first guesses: a kernel's nearest launch within 20 ms of our coarse time (CPU wall clock) */
#define KM_WINDOW_NS 20000000LL

enum { KM_SRC_CHANNELS = 0, KM_SRC_CUPTI = 1 };
enum { KM_BY_NONE = 0, KM_BY_CORRELATION = 1, KM_BY_ORDER_TIME = 2, KM_BY_ORDER_GAP = 3 };

struct km_launch {
  int32_t ev;                 /* the KernelLaunch event */
  int64_t call;               /* its start: the launch call, host MONOTONIC */
  uint64_t stream;            /* its cudaStream_t */
  int64_t start, end;         /* GPU span on our host MONOTONIC (ns): CUPTI, else channels through our clock map */
  int64_t g_start, g_end;     /* the channels' raw GPU span (pTimer ns), 0 none */
  int src;                    /* KM_SRC_* */
  int64_t corr, dev, cstream; /* from our CUPTI record, -1 none */
  int32_t kk;                 /* matched Kineto kernel (index into scan.k), -1 */
  int by;                     /* KM_BY_* */
  int32_t fit;                /* its stream pair's fit (index into fits), -1 */
};

struct km_fit {
  uint64_t our_stream;
  int64_t dev, stream; /* Kineto pid, tid */
  size_t pairs;
  int on_gpu;     /* x is raw GPU ns (pTimer); 0: our host MONOTONIC */
  int64_t x0, y0; /* kineto_rel = y0 + (x - x0) * (1 + slope) */
  double slope;
  double a_ns; /* the fine offset: Kineto minus (ours + C - base) at x0, as measured */
  double residual_ns, bound_ns;
};

struct km_result {
  int64_t c_ns;         /* REALTIME - MONOTONIC */
  const char *c_source; /* "CLOCK chunks" or "session start" */
  double c_spread_ns;   /* spread of the CLOCK samples' estimates (bracket widths) */
  int64_t base_ns;      /* the Kineto file's base */
  struct km_launch *l;
  size_t n_l;
  int32_t *kk_launch; /* per Kineto NCCL kernel: index into l, -1 */
  struct km_fit *fits;
  size_t n_fits;
  size_t by_corr, by_order, by_gap; /* by_gap: by order alone, between matched neighbours (fill_gaps) */
  size_t launches_graph, launches_no_gpu_time, ambiguous;
  size_t misfit_streams;   /* stream pairs whose best alignment was off the clocks' line (KM_FIT_RESIDUAL_MAX_NS):
                            * left unmatched, their pairs counted in ambiguous */
  double misfit_worst_ns;  /* the largest such residual */
  double nearest_ns;       /* the smallest distance from a launch (our coarse time) to its nearest kernel, 0 none:
                            * over KM_WINDOW_NS, no first guess was tried (another run, or a wall clock that far off) */
  double map_bound_ns;     /* largest error bound of our GPU clock maps of this process (against its host clock) */
  double ts_resolution_ns; /* 1, or 1000 for a file of integer microseconds */
};

/* Matches procs[] of m (the process of this Kineto file) against s. 0 / -1 (no memory). */
int km_match(const struct lens_model *m, const int32_t *procs, size_t n_procs, const struct kj_scan *s,
             struct km_result *r);
void km_result_free(struct km_result *r);
/* Our host MONOTONIC ns as Kineto ns (relative to its base): CPU side. */
int64_t km_to_kineto(const struct km_result *r, int64_t mono_ns);
/* A GPU-side time in the fit's domain (raw GPU ns when fit->on_gpu, else
 * MONOTONIC) as Kineto ns. */
int64_t km_fit_to_kineto(const struct km_fit *fit, int64_t x);
/* A KernelCh with usable GPU timers (start, stop, no suspect flag). */
int km_kch_timed(const struct lens_event *e);
/* A launch's start in its fit's domain. */
int64_t km_launch_x(const struct km_launch *l, const struct km_fit *fit);

#endif
