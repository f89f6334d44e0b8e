/* The kernel side of `nccl-lens sched`, behind one small interface: open,
 * load and attach the BPF skeleton, edit the watch map, drain the ring
 * buffer, read histograms, counters and the kernel's own run-time stats.
 * Only compiled with LENS_HAVE_BPF (libbpf found at build time). */
#ifndef NCCL_LENS_SCHED_PROBE_H
#define NCCL_LENS_SCHED_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lens_sched_bpf.h"

struct lens_sched_probe;

struct lens_sched_probe_opts {
  const char *btf_path;    /* NULL: the running kernel's /sys/kernel/btf/vmlinux */
  uint64_t min_wait_ns;    /* RUNQ/PREEMPT shorter than this only go to the histograms */
  uint64_t min_offcpu_ns;  /* OFFCPU shorter than this only go to the histograms */
  int verbose;             /* let libbpf's own messages through */
  int stats;               /* enable the kernel's BPF run-time stats while running */
};

/* 0, or -1 with one line in err (privileges, BTF, kernel support). */
/* 1 if this process may load the probe as far as capabilities go (CAP_BPF and
 * CAP_PERFMON, or CAP_SYS_ADMIN), or cannot tell. */
int lens_sched_has_bpf_caps(void);
int lens_sched_probe_open(struct lens_sched_probe **out, const struct lens_sched_probe_opts *o, char *err,
                          size_t err_len);
void lens_sched_probe_close(struct lens_sched_probe *p);

int lens_sched_probe_watch(struct lens_sched_probe *p, uint32_t host_tid, uint32_t ns_tid);
int lens_sched_probe_unwatch(struct lens_sched_probe *p, uint32_t host_tid);

/* Waits up to timeout_ms, calls fn per sample. Samples handled, or <0 (-EINTR on a signal). */
int lens_sched_probe_poll(struct lens_sched_probe *p, int timeout_ms,
                          void (*fn)(void *ctx, const struct lens_bpf_sample *s), void *ctx);
/* Calls fn for every (tid, kind) histogram. */
void lens_sched_probe_hists(struct lens_sched_probe *p,
                            void (*fn)(void *ctx, const struct lens_bpf_hist_key *k, const struct lens_bpf_hist *h),
                            void *ctx);
/* Calls fn for each histogram of one tid and deletes it (a thread that is no
 * longer watched gives its slots back). */
void lens_sched_probe_take_hists(struct lens_sched_probe *p, uint32_t tid,
                                 void (*fn)(void *ctx, const struct lens_bpf_hist_key *k,
                                            const struct lens_bpf_hist *h),
                                 void *ctx);
/* Sums of the per-CPU counters (LENS_CNT_*). */
void lens_sched_probe_counters(struct lens_sched_probe *p, uint64_t out[LENS_CNT_N]);

struct lens_sched_prog_stats {
  const char *name;
  uint64_t run_cnt, run_time_ns;
};
/* Run counts and times of the three programs (needs opts.stats). Returns how many filled. */
int lens_sched_probe_prog_stats(struct lens_sched_probe *p, struct lens_sched_prog_stats out[3]);

#endif
