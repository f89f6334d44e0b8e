/* nccl-lens: our own declarations of the NCCL profiler plugin ABI, v4 to v7.
 *
 * Written from the facts in shared/spec/nccl-profiler-api.md (§1.4-1.6) and
 * shared/spec/nccl-2.31.md (§2, v7); no
 * NVIDIA header text. Offsets are for x86_64 LP64 and are asserted in
 * tests/abi/test_abi_layout.c. Both the plugin and the replay driver use
 * this header, so the driver stays a pure client of the ABI. */
#ifndef NCCL_LENS_NCCL_PROFILER_ABI_H
#define NCCL_LENS_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int lens_nccl_result_t; /* ncclResult_t: 0 = success */
enum {
  LENS_NCCL_SUCCESS = 0,
  LENS_NCCL_INTERNAL_ERROR = 3,
  LENS_NCCL_INVALID_ARGUMENT = 4,
};

/* Logger passed to init (v4+). level: NONE 0, VERSION 1, WARN 2, INFO 3,
 * ABORT 4, TRACE 5. flags: a subsystem mask; PROFILE is 0x4000. */
typedef void (*lens_nccl_logger_t)(int level, unsigned long flags, const char *file, int line,
                                   const char *fmt, ...);
enum { LENS_LOG_NONE = 0, LENS_LOG_VERSION = 1, LENS_LOG_WARN = 2, LENS_LOG_INFO = 3, LENS_LOG_TRACE = 5 };
#define LENS_NCCL_SUBSYS_INIT 0x1UL
#define LENS_NCCL_SUBSYS_ENV 0x80UL
#define LENS_NCCL_SUBSYS_PROFILE 0x4000UL

/* Event-type bits (activation mask), identical in every version. */
enum {
  LENS_EV_GROUP = 1 << 0,
  LENS_EV_COLL = 1 << 1,
  LENS_EV_P2P = 1 << 2,
  LENS_EV_PROXY_OP = 1 << 3,
  LENS_EV_PROXY_STEP = 1 << 4,
  LENS_EV_PROXY_CTRL = 1 << 5,
  LENS_EV_KERNEL_CH = 1 << 6,
  LENS_EV_NET_PLUGIN = 1 << 7,
  LENS_EV_GROUP_API = 1 << 8,
  LENS_EV_COLL_API = 1 << 9,
  LENS_EV_P2P_API = 1 << 10,
  LENS_EV_KERNEL_LAUNCH = 1 << 11,
  LENS_EV_CE_COLL = 1 << 12,
  LENS_EV_CE_SYNC = 1 << 13,
  LENS_EV_CE_BATCH = 1 << 14,
  LENS_EV_KERNEL_PHASE = 1 << 15, /* v7 (NCCL 2.31+): a sub-event of KernelCh; NCCL turns KernelCh on with it */
};
#define LENS_EV_ALL_V4 0xFF
#define LENS_EV_ALL_V5 0xFFF
#define LENS_EV_ALL_V6 0x7FFF
#define LENS_EV_ALL_V7 0xFFFF

/* ncclProfilerEventState_t: a plain 4-byte C enum, same numbers in all versions. */
typedef enum {
  LENS_ST_PROXY_OP_SEND_POSTED = 0, /* 0-7: deprecated, never emitted by >= 2.27 */
  LENS_ST_PROXY_OP_RECV_DONE = 7,
  LENS_ST_PROXY_STEP_SEND_GPU_WAIT = 8,
  LENS_ST_PROXY_STEP_SEND_WAIT = 9,
  LENS_ST_PROXY_STEP_RECV_WAIT = 10,
  LENS_ST_PROXY_STEP_RECV_FLUSH_WAIT = 11,
  LENS_ST_PROXY_STEP_RECV_GPU_WAIT = 12,
  LENS_ST_PROXY_CTRL_IDLE = 13,
  LENS_ST_PROXY_CTRL_ACTIVE = 14,
  LENS_ST_PROXY_CTRL_SLEEP = 15,
  LENS_ST_PROXY_CTRL_WAKEUP = 16,
  LENS_ST_PROXY_CTRL_APPEND = 17,
  LENS_ST_PROXY_CTRL_APPEND_END = 18,
  LENS_ST_PROXY_OP_IN_PROGRESS = 19,
  LENS_ST_PROXY_STEP_SEND_PEER_WAIT = 20,
  LENS_ST_NET_PLUGIN_UPDATE = 21,
  LENS_ST_KERNEL_CH_STOP = 22,
  LENS_ST_GROUP_START_API_STOP = 23, /* the ncclGroupStart part has ended (first op) */
  LENS_ST_GROUP_END_API_START = 24,  /* ncclGroupEnd has begun */
  LENS_ST_CE_COLL_START = 25,        /* 25-30: defined in v6, never recorded by NCCL core */
  LENS_ST_CE_BATCH_COMPLETE = 30,
  LENS_ST_KERNEL_PHASE_STOP = 31,    /* v7: args.kernelCh.pTimer = the phase's stop %globaltimer */
} lens_nccl_state_t;

/* Net-plugin payload selectors (pluginId = type | version). */
#define LENS_NET_TYPE_IB (1 << 16)
#define LENS_NET_TYPE_SOCK (2 << 16)
#define LENS_NET_VER_MASK 0xFFFFu
#define LENS_NET_TYPE_MASK 0xFFFF0000u

typedef struct {
  uint8_t type; /* 1 = QP */
  struct {
    int device;
    uint64_t wr_id;
    int opcode;
    int qpNum;
    size_t length;
  } qp;
} lens_nccl_net_ib_v1_t; /* 40 bytes */

typedef struct {
  uint8_t type; /* 1 = socket */
  struct {
    int fd;
    int op; /* 0 send, 1 recv */
    size_t length;
  } sock;
} lens_nccl_net_sock_v1_t; /* 24 bytes */

/* ---- Union members shared by v4..v6 ---- */
struct lens_nccl_proxy_op { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; };
struct lens_nccl_proxy_step { int step; };
struct lens_nccl_kernel_ch { uint8_t channelId; uint64_t pTimer; };
struct lens_nccl_net_plugin { int64_t id; void *data; };

/* ---- v4 (NCCL 2.27) ---- */
typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char *func;
      const void *sendBuff;
      void *recvBuff;
      size_t count;
      int root;
      const char *datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char *algo;
      const char *proto;
    } coll;
    struct {
      const char *func;
      void *buff;
      const char *datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct lens_nccl_proxy_op proxyOp;
    struct lens_nccl_proxy_step proxyStep;
    struct lens_nccl_kernel_ch kernelCh;
    struct lens_nccl_net_plugin netPlugin;
  };
} lens_nccl_descr_v4_t; /* 104 bytes */

/* v4..v6 state args: 8 bytes, every member at offset 0. */
typedef union {
  struct { size_t transSize; } proxyStep;
  struct { int appendedProxyOps; } proxyCtrl;
  struct { void *data; } netPlugin;
  struct { uint64_t pTimer; } kernelCh;
} lens_nccl_state_args_v4_t;
typedef lens_nccl_state_args_v4_t lens_nccl_state_args_v5_t;
typedef lens_nccl_state_args_v4_t lens_nccl_state_args_v6_t;
typedef lens_nccl_state_args_v4_t lens_nccl_state_args_v7_t; /* KernelPhaseStop reuses kernelCh.pTimer */

/* ---- v5 (NCCL 2.28) members ---- */
struct lens_nccl_group_api { bool graphCaptured; int groupDepth; };
struct lens_nccl_coll_api {
  const char *func; size_t count; const char *datatype; int root; void *stream; bool graphCaptured;
};
struct lens_nccl_p2p_api { const char *func; size_t count; const char *datatype; void *stream; bool graphCaptured; };
struct lens_nccl_kernel_launch { void *stream; };
struct lens_nccl_coll_v5 {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char *algo;
  const char *proto;
  void *parentGroup;
};
struct lens_nccl_p2p_v5 {
  const char *func; void *buff; const char *datatype; size_t count; int peer; uint8_t nChannels; void *parentGroup;
};

#define LENS_NCCL_V5_UNION_MEMBERS             \
  struct lens_nccl_group_api groupApi;         \
  struct lens_nccl_coll_api collApi;           \
  struct lens_nccl_p2p_api p2pApi;             \
  struct lens_nccl_kernel_launch kernelLaunch; \
  struct lens_nccl_coll_v5 coll;               \
  struct lens_nccl_p2p_v5 p2p;                 \
  struct lens_nccl_proxy_op proxyOp;           \
  struct lens_nccl_proxy_step proxyStep;       \
  struct lens_nccl_kernel_ch kernelCh;         \
  struct lens_nccl_net_plugin netPlugin;

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union { LENS_NCCL_V5_UNION_MEMBERS };
} lens_nccl_descr_v5_t; /* 112 bytes */

/* ---- v6 (NCCL 2.29+) adds the copy-engine members ---- */
struct lens_nccl_ce_coll {
  uint64_t seqNumber;
  const char *func;
  const void *sendBuff;
  void *recvBuff;
  size_t count;
  int root;
  const char *datatype;
  const char *syncStrategy;
  bool intraBatchSync;
  uint32_t batchSize;
  uint32_t numBatches;
  uint32_t ceSeqNum;
  void *stream;
};
struct lens_nccl_ce_sync { bool isComplete; int nRanks; };
struct lens_nccl_ce_batch { int numOps; size_t totalBytes; bool useIntraSync; };

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    LENS_NCCL_V5_UNION_MEMBERS
    struct lens_nccl_ce_coll ceColl;
    struct lens_nccl_ce_sync ceCollSync;
    struct lens_nccl_ce_batch ceCollBatch;
  };
} lens_nccl_descr_v6_t; /* 112 bytes */

/* ---- v7 (NCCL 2.31.2+) ----
 * Every v7 member that grew is its v5/v6 member with fields appended, so it is
 * declared as that member (`base`, at the same offsets) plus the new fields:
 * code written for the v5/v6 member reads a v7 one through &m.base. */
struct lens_nccl_coll_api_v7 { struct lens_nccl_coll_api base; uint64_t userTag; };
struct lens_nccl_p2p_api_v7 { struct lens_nccl_p2p_api base; uint64_t userTag; };
struct lens_nccl_coll_v7 {
  struct lens_nccl_coll_v5 base;
  const char *kernelVariant; /* symmetric kernel's full name ("AllReduce_AGxLL_R"), NULL otherwise */
  bool isSymColl;
  uint64_t userTag;          /* NVIDIA only: RCCL's v7 ends before it (128 bytes) */
};
struct lens_nccl_p2p_v7 { struct lens_nccl_p2p_v5 base; uint64_t userTag; };
struct lens_nccl_ce_coll_v7 { struct lens_nccl_ce_coll base; uint64_t userTag; };
struct lens_nccl_kernel_phase {
  uint8_t channelId;
  uint8_t phaseId;       /* 0 initial sync, 1 compute, 2 final sync */
  const char *phaseName;
  uint64_t pTimer;       /* phase start, GPU %globaltimer */
};

typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    struct lens_nccl_group_api groupApi;
    struct lens_nccl_coll_api_v7 collApi;
    struct lens_nccl_p2p_api_v7 p2pApi;
    struct lens_nccl_kernel_launch kernelLaunch;
    struct lens_nccl_coll_v7 coll;
    struct lens_nccl_p2p_v7 p2p;
    struct lens_nccl_proxy_op proxyOp;
    struct lens_nccl_proxy_step proxyStep;
    struct lens_nccl_kernel_ch kernelCh;
    struct lens_nccl_net_plugin netPlugin;
    struct lens_nccl_ce_coll_v7 ceColl;
    struct lens_nccl_ce_sync ceCollSync;
    struct lens_nccl_ce_batch ceCollBatch;
    struct lens_nccl_kernel_phase kernelPhase;
  };
} lens_nccl_descr_v7_t; /* 136 bytes (RCCL's own v7: 128, no userTag anywhere) */
#define LENS_NCCL_DESCR_V7_RCCL_SIZE 128

/* ---- Plugin tables: six pointer-sized members, 48 bytes ---- */
typedef struct {
  const char *name;
  lens_nccl_result_t (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash,
                             int nNodes, int nranks, int rank, lens_nccl_logger_t logfn);
  lens_nccl_result_t (*startEvent)(void *context, void **eHandle, lens_nccl_descr_v4_t *eDescr);
  lens_nccl_result_t (*stopEvent)(void *eHandle);
  lens_nccl_result_t (*recordEventState)(void *eHandle, lens_nccl_state_t eState,
                                         lens_nccl_state_args_v4_t *eStateArgs);
  lens_nccl_result_t (*finalize)(void *context);
} lens_nccl_profiler_v4_t;

/* v5 and v6: note the init argument order changed (commId second). */
typedef struct {
  const char *name;
  lens_nccl_result_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                             int nNodes, int nranks, int rank, lens_nccl_logger_t logfn);
  lens_nccl_result_t (*startEvent)(void *context, void **eHandle, lens_nccl_descr_v5_t *eDescr);
  lens_nccl_result_t (*stopEvent)(void *eHandle);
  lens_nccl_result_t (*recordEventState)(void *eHandle, lens_nccl_state_t eState,
                                         lens_nccl_state_args_v5_t *eStateArgs);
  lens_nccl_result_t (*finalize)(void *context);
} lens_nccl_profiler_v5_t;

typedef struct {
  const char *name;
  lens_nccl_result_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                             int nNodes, int nranks, int rank, lens_nccl_logger_t logfn);
  lens_nccl_result_t (*startEvent)(void *context, void **eHandle, lens_nccl_descr_v6_t *eDescr);
  lens_nccl_result_t (*stopEvent)(void *eHandle);
  lens_nccl_result_t (*recordEventState)(void *eHandle, lens_nccl_state_t eState,
                                         lens_nccl_state_args_v6_t *eStateArgs);
  lens_nccl_result_t (*finalize)(void *context);
} lens_nccl_profiler_v6_t;

typedef struct {
  const char *name;
  lens_nccl_result_t (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName,
                             int nNodes, int nranks, int rank, lens_nccl_logger_t logfn);
  lens_nccl_result_t (*startEvent)(void *context, void **eHandle, lens_nccl_descr_v7_t *eDescr);
  lens_nccl_result_t (*stopEvent)(void *eHandle);
  lens_nccl_result_t (*recordEventState)(void *eHandle, lens_nccl_state_t eState,
                                         lens_nccl_state_args_v7_t *eStateArgs);
  lens_nccl_result_t (*finalize)(void *context);
} lens_nccl_profiler_v7_t;

/* NCCL's version code (ncclGetVersion): 2.31.2 is the first with userTag. */
#define LENS_NCCL_VERSION_USER_TAG 23102

#ifdef __cplusplus
}
#endif
#endif
