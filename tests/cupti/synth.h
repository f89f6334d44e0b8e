/* A synthetic run with a known GPU clock, built straight into a lens_model
 * (no trace file needed) plus the CUPTI activity buffer a GPU machine would
 * have produced for it: real CUpti_ActivityExternalCorrelation, CUpti_ActivityAPI
 * and CUpti_ActivityKernel10 records laid out as cupti_activity.h defines them.
 *
 * Truth: gpu = offset + host + host * drift_ppm * 1e-6 (as the replay
 * driver's simulated GPUs), launches 1 ms apart, each kernel 20 us with its
 * channels' work inside it, noticed by the proxy thread late by min_lag_ns
 * plus a random delay. Anomalies can be injected per launch. */
#ifndef NCCL_LENS_TESTS_CUPTI_SYNTH_H
#define NCCL_LENS_TESTS_CUPTI_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "reader/lensread.h"

enum synth_anomaly {
  SYN_NONE = 0,
  SYN_OUTSIDE_KERNEL, /* channel 0's timers 60 us after its kernel */
  SYN_OVERRUN,        /* channel 0 reports the next launch's channel-0 timers */
  SYN_NO_KERNEL,      /* no kernel record for this launch */
  SYN_STOP_BEFORE_START,
  SYN_P2P_PAIR,       /* a send/recv pair sharing timers (legitimate) */
  SYN_SHORT_KERNEL,   /* the joined kernel record lasts 2 us: it cannot contain its ~17 us of channels */
};

struct synth_opts {
  int launches, channels;
  int64_t gpu_offset_ns; /* gpu - host at host 0 */
  double drift_ppm;
  int64_t host_start_ns;
  int64_t min_lag_ns;    /* least proxy polling delay */
  int with_cupti;
  int foreign_ext_ids;   /* extra kernels tagged with ids we never pushed */
  int graph_nodes, graph_replays; /* a captured graph of that many launches, replayed */
  int graph_captures_missing;     /* captured launches left out of the trace (join must give up) */
  enum synth_anomaly anomaly_at[8]; int anomaly_launch[8]; int n_anomalies;
  unsigned seed;
};

struct synth {
  struct lens_model m;
  uint8_t *cupti; size_t cupti_len;
  struct lens_cupti_blob blob;
  /* truth per KernelCh event index: host times of its own item */
  int64_t *true_start, *true_stop;
  uint32_t *expect_flags; /* flags the anomaly should produce, per event */
  struct synth_opts o;
};

void synth_default(struct synth_opts *o);
/* Builds the run; returns 0 or -1. */
int synth_build(struct synth *s, const struct synth_opts *o);
void synth_free(struct synth *s);
/* Truth: host time of a GPU time. */
int64_t synth_host_of_gpu(const struct synth_opts *o, uint64_t gpu);
uint64_t synth_gpu_of_host(const struct synth_opts *o, int64_t host);

#endif
