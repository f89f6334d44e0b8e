/* Binary layouts of the NVTX payloads the plugin emits in domain "nccl-lens",
 * with their static schema ids and counter ids. A tool (or our test
 * injection) decodes payloads with these structs; the schemas registered in
 * nvtx_setup.c describe the same fields to Nsight Systems.
 *
 * String fields are NCCL's static literals (or ours): they stay valid, and a
 * tool copies them during the call. */
#ifndef NCCL_LENS_PLUGIN_NVTX_SCHEMAS_H
#define NCCL_LENS_PLUGIN_NVTX_SCHEMAS_H

#include <stdint.h>

#define LENS_NVTX_DOMAIN "nccl-lens"
/* The message of the one ProxyOp range a proxy thread's ops past its open
 * ranges share (nvtx_proxy.c): this prefix, the bound, " open ...". */
#define LENS_NVTX_OVER_PREFIX "ProxyOps past "

/* Static ids live in [1<<24, 1<<32) (payload and counter extensions). */
#define LENS_NVTX_SID_PLAN ((1ull << 24) + 0x4c0001ull)     /* struct lens_nvtx_plan_payload */
#define LENS_NVTX_SID_PROXY_OP ((1ull << 24) + 0x4c0002ull) /* struct lens_nvtx_proxy_op_payload */
#define LENS_NVTX_SID_CH_LAG ((1ull << 24) + 0x4c0003ull)   /* struct lens_nvtx_ch_lag_payload */
#define LENS_NVTX_CID_CH_LAG ((1ull << 24) + 0x4c0011ull)   /* counter: KernelCh notice lag, ns */
#define LENS_NVTX_CID_STEPS ((1ull << 24) + 0x4c0012ull)    /* counter: proxy steps in flight */

/* Categories, named per event kind (nvtxDomainNameCategoryA). */
enum lens_nvtx_category {
  LENS_NVTX_CAT_LAUNCH = 1, /* KernelLaunch push/pop */
  LENS_NVTX_CAT_PLAN = 2,   /* Coll/P2p plan marks (algo, proto, channels, seq) */
  LENS_NVTX_CAT_PROXY_OP = 3,
  LENS_NVTX_CAT_PROXY_CTRL = 4, /* proxy Sleep / Active periods */
  LENS_NVTX_CAT_KERNEL_CH = 5,  /* lag marks when counters are unavailable */
};

/* LENS_NVTX_PLAN_F_*: what a plan payload is. */
#define LENS_NVTX_PLAN_F_PREDICTED 0x1 /* from CollApi/P2pApi before the launch: no algo/proto, seq predicted */
#define LENS_NVTX_PLAN_F_P2P 0x2       /* a P2p task (peer valid, no algo/proto/seq) */

/* On the KernelLaunch push (predicted, first API op of the plan, totals over
 * all of them) and on the plan mark that follows each Coll/P2p start
 * (actual values of that task). */
struct lens_nvtx_plan_payload {
  const char *func;     /* "AllReduce", ... */
  const char *algo;     /* "RING", ... ; "" when predicted */
  const char *proto;    /* "SIMPLE", ... ; "" when predicted */
  const char *datatype; /* "ncclFloat32", ... */
  uint64_t bytes;       /* count x size of datatype (totals over the plan's API ops when predicted) */
  uint64_t count;
  uint64_t seq;         /* NCCL seqNumber (predicted: our per-(comm,func) counter) */
  uint64_t comm_id;     /* NCCL commId (commHash): with seq, names one collective on every rank; 0 unknown */
  uint64_t ext_corr_id; /* KernelLaunch push: CUPTI external correlation id (CUSTOM2) of the launch, 0 none */
  int32_t rank;         /* of the communicator, -1 unknown */
  int32_t peer;         /* P2p peer, -1 otherwise */
  uint32_t n_channels;  /* 0 when predicted */
  uint32_t n_ops;       /* API ops in the plan (predicted), 1 for a task mark */
  uint32_t flags;       /* LENS_NVTX_PLAN_F_* */
  uint32_t reserved;
};

/* At ProxyOp range end (nvtxRangeEndPayload): the op and its steps' summary. */
struct lens_nvtx_proxy_op_payload {
  int32_t channel;
  int32_t peer;
  int32_t is_send;
  int32_t n_steps;       /* as announced by NCCL */
  int32_t chunk_size;
  int32_t rank;          /* originating rank */
  uint32_t steps_started;
  uint32_t steps_done;
  uint64_t bytes;        /* sum of transSize over the op's steps (SendWait / RecvFlushWait) */
};

/* KernelCh notice lag, used as a mark payload when counters are unavailable. */
struct lens_nvtx_ch_lag_payload {
  int64_t lag_ns;        /* host time at state 22 - (GPU stop time mapped to host) */
  uint64_t gpu_stop_ns;  /* pTimer (raw %globaltimer) */
  uint32_t channel;
  uint32_t reserved;
};

#endif
