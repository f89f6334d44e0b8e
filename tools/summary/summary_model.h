/* The numbers `nccl-lens summary` shows, computed once from a model and then
 * printed as text or JSON. Times in ns (CLOCK_MONOTONIC), sizes in bytes. */
#ifndef NCCL_LENS_SUMMARY_MODEL_H
#define NCCL_LENS_SUMMARY_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "reader/lensread.h"

struct lens_stat { uint64_t n, sum, max; };

/* One row: communicator x (func, user tag, algo or symmetric kernel, proto, size bucket). */
struct lens_sum_row {
  int32_t group;            /* index into lens_summary.groups */
  const char *func, *algo, *proto;
  uint64_t user_tag;        /* NCCL 2.31+ userProfilerTag, 0 = untagged */
  const char *kernel_variant; /* a symmetric kernel's name (algo is then its algorithm part, proto ""), or NULL */
  int bucket;               /* floor(log2(bytes)), -1 for 0 bytes */
  uint64_t count, bytes;
  struct lens_stat enqueue;    /* API start (or op start) -> op stop */
  struct lens_stat completion; /* its kernel's launch (else op start) -> completion (last ProxyOp / KernelCh) */
  uint64_t completed_bytes;    /* bytes of ops that have a completion time */
  struct lens_stat gpu_channel; /* per KernelCh: mapped or pTimer duration */
  uint64_t proxy_ops, proxy_steps, proxy_bytes;
  uint64_t graph;           /* ops from graph replays */
};

/* Copy-engine collectives (API v6+): communicator x (func, sync strategy,
 * size bucket). Their events bracket the host's enqueue of the copies (spec
 * §2: every CE stop means "enqueued"); the copy engines' own work is not
 * recorded, so there is no completion or GPU time. */
struct lens_sum_ce_row {
  int32_t group;
  const char *func, *sync_strategy;
  uint64_t user_tag;
  int bucket;
  uint64_t count, bytes;
  struct lens_stat enqueue; /* CollApi start (else CeColl start) -> CeColl stop */
  struct lens_stat ce;      /* CeColl start -> stop */
  struct lens_stat sync;    /* each CeSync start -> stop */
  struct lens_stat batch;   /* each CeBatch start -> stop */
  uint64_t batch_bytes, batch_ops; /* CeBatch totalBytes and numOps */
};

/* A communicator as seen by all loaded ranks (same comm_id). */
struct lens_sum_group {
  uint64_t comm_id;
  const char *name;
  int nranks, ranks_seen;
};

/* Time a proxy thread spent in each ProxyCtrl state. */
struct lens_sum_proxy {
  int32_t thread;
  uint64_t ops, steps, bytes;
  uint64_t state_ns[4]; /* enum lens_proxy_level: active, sleep, idle (awake), append (within active/idle) */
  uint64_t first_ns, last_ns, span_ns; /* first ProxyCtrl start -> last stop */
};

struct lens_summary {
  struct lens_sum_group *groups; size_t n_groups;
  struct lens_sum_row *rows; size_t n_rows;
  struct lens_sum_proxy *proxies; size_t n_proxies;
  struct lens_sum_ce_row *ce_rows; size_t n_ce_rows;
  uint64_t acc_counts[32];  /* events per LENS_ACC_* bit */
  uint64_t time_source[3];  /* KernelCh per lens_time_source */
  uint64_t kernel_ch;
  int analyses_ran;
  int wide; /* text: every column (summary --wide); else the tables fit 120 columns */
  uint64_t evf_counts[32];  /* events per LENS_EVF_* bit */
  /* the hang analysis (hang_analysis.h) when the command ran it; JSON "hang"
   * is null without it. Not owned. */
  const struct lens_hang_report *hang;
};
struct lens_hang_report;

int lens_summary_build(const struct lens_model *m, struct lens_summary *s, int analyses_ran);
void lens_summary_free(struct lens_summary *s);
/* "1 MiB-2 MiB" */
void lens_size_bucket_label(int bucket, char *buf, size_t len);
/* How every view names a row: "AllReduce, backward" (func and user tag name,
 * NCCL_LENS_TAG_NAMES / --tag-names), and "sym AGxLL_R" for a symmetric
 * kernel's algorithm (the full name is in kernel_variant). */
const char *lens_summary_func_label(const struct lens_sum_row *r, char *buf, size_t len);
const char *lens_summary_algo_label(const struct lens_sum_row *r, char *buf, size_t len);

#endif
