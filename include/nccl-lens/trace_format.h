/* nccl-lens trace format, version 1: "nccl-lens-<host>-<pid>.lens".
 *
 * Public, so other tools can read our traces without our code.
 *
 * Layout: a 64-byte file header, then an append-only sequence of chunks.
 * Each chunk = lens_chunk_hdr (32 bytes) + payload (payload_len bytes,
 * padded with zeros to a multiple of 8). payload_crc is CRC-32C of the
 * payload bytes (without padding); hdr_crc is CRC-32C of the first 28 header
 * bytes. A reader skips a chunk whose payload fails its CRC (its header says
 * how long it is) and, after a header that fails its check, goes on at the
 * next 8-byte aligned offset holding a header that checks and whose payload
 * fits the file, reporting the bytes skipped as damaged; a chunk that runs
 * past the end of the file (or a bad header with no valid one after it) ends
 * the walk, and the bytes after the last whole chunk are reported as cut. A file may hold several sessions (the
 * plugin is finalized, then NCCL loads it again): each starts with a SESSION
 * chunk.
 *
 * Clocks: every timestamp field names its clock in its name:
 *   *_mono_ns  CLOCK_MONOTONIC nanoseconds (host; same clock as bpf_ktime_get_ns)
 *   *_real_ns  CLOCK_REALTIME nanoseconds
 *   *_gpu_ns   a GPU %globaltimer value, raw (per GPU; mapped offline)
 * Event record "ts" fields are CLOCK_MONOTONIC ns (the writer converts TSC).
 *
 * All integers little-endian, all structs naturally aligned, no padding
 * surprises: sizes are asserted in tests. */
#ifndef NCCL_LENS_TRACE_FORMAT_H
#define NCCL_LENS_TRACE_FORMAT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LENS_FILE_MAGIC "NCCLLENS" /* 8 bytes, no NUL */
#define LENS_FORMAT_VERSION 1u
#define LENS_CHUNK_MAGIC 0x4B484C43u /* "CLHK" */

struct lens_file_hdr {
  char magic[8];           /* LENS_FILE_MAGIC */
  uint32_t format_version; /* LENS_FORMAT_VERSION */
  uint32_t hdr_size;       /* 64 */
  uint32_t producer;       /* LENS_PRODUCER_* */
  uint32_t reserved0;
  uint64_t created_real_ns;
  uint8_t reserved[32];
};

enum lens_producer {
  LENS_PRODUCER_PLUGIN = 1, /* libnccl-profiler-lens.so */
  LENS_PRODUCER_SCHED = 2,  /* nccl-lens sched (eBPF probe) */
  LENS_PRODUCER_TEST = 3,
};

struct lens_chunk_hdr {
  uint32_t magic;       /* LENS_CHUNK_MAGIC */
  uint16_t type;        /* enum lens_chunk_type */
  uint16_t flags;       /* reserved, 0 */
  uint32_t payload_len; /* bytes, excluding padding */
  uint32_t payload_crc; /* CRC-32C of payload */
  uint64_t seq;         /* chunk number within the file, from 0 */
  uint32_t session;     /* session number within the file, from 0 */
  uint32_t hdr_crc;     /* CRC-32C of the 28 bytes above */
};

enum lens_chunk_type {
  LENS_CHUNK_SESSION = 1,    /* struct lens_session */
  LENS_CHUNK_COMM = 2,       /* struct lens_comm_rec */
  LENS_CHUNK_THREAD = 3,     /* struct lens_thread_rec */
  LENS_CHUNK_STRINGS = 4,    /* repeated { u32 id; u16 len; bytes[len]; } packed, no NUL */
  LENS_CHUNK_EVENTS = 5,     /* struct lens_events_hdr + records */
  LENS_CHUNK_DROPS = 6,      /* struct lens_drops */
  LENS_CHUNK_CUPTI = 7,      /* struct lens_cupti_hdr + raw CUPTI activity buffer bytes */
  LENS_CHUNK_SCHED = 8,      /* struct lens_sched_hdr + struct lens_sched_sample[] */
  LENS_CHUNK_FINI = 9,       /* struct lens_fini */
  LENS_CHUNK_NOTE = 10,      /* struct lens_note_hdr + UTF-8 text: a logged condition */
  LENS_CHUNK_COMM_FINI = 11, /* struct lens_comm_fini */
  LENS_CHUNK_SCHED_HIST = 12,/* struct lens_sched_hist */
  LENS_CHUNK_CLOCK = 13,     /* struct lens_clock_rec: evidence for aligning this host's clock */
  LENS_CHUNK_EVENTS_PACKED = 14, /* struct lens_packed_hdr + the records of an EVENTS chunk, packed */
  LENS_CHUNK_INDEX = 15,         /* struct lens_index_hdr [+ touches] [+ open set]: the events chunk before it */
};

/* ---- SESSION ---- */
#define LENS_CLOCK_MONOTONIC 1
#define LENS_CLOCK_REALTIME 2
#define LENS_CLOCK_TSC 3
struct lens_session {
  uint32_t pid;              /* getpid() in the process's own pid namespace */
  uint32_t nccl_api_version; /* 4 to 7: the ncclProfiler_vN NCCL called; 0 = none yet / probe */
  uint64_t start_mono_ns;
  uint64_t start_real_ns;    /* taken back to back with start_mono_ns */
  uint32_t ts_clock;         /* clock of event "ts": LENS_CLOCK_MONOTONIC */
  uint32_t hot_clock;        /* clock read on the hot path: LENS_CLOCK_TSC or LENS_CLOCK_MONOTONIC */
  double tsc_ns_per_tick;    /* TSC rate measured since the anchor when SESSION was written (0 when
                              * hot_clock is MONOTONIC); ts are converted by a continuous chain slewing
                              * onto each new measured rate (docs/trace-format.md, "Clocks": bound) */
  uint32_t event_mask;       /* activation mask written into NCCL's int */
  uint32_t buffer_bytes;     /* per-thread ring size */
  uint32_t max_threads;
  uint32_t flags;            /* LENS_SESSION_F_* */
  char host[64];             /* NUL-terminated */
  char plugin_version[32];   /* NUL-terminated */
  uint32_t outer_pid;        /* pid in the outermost pid namespace visible (NSpid first), or = pid */
  uint32_t lib_version;      /* ncclGetVersion() of the library in the process (23102 = 2.31.2), 0 = unknown */
  uint32_t lib_kind;         /* LENS_LIB_*: whose library that version is */
  uint32_t lib_flags;        /* LENS_LIB_F_* */
};
#define LENS_LIB_UNKNOWN 0
#define LENS_LIB_NCCL 1 /* NVIDIA NCCL */
#define LENS_LIB_RCCL 2 /* AMD RCCL (exports rccl-only symbols) */
#define LENS_LIB_F_USER_TAGS 0x1 /* userTag was read from v7 descriptors (NVIDIA NCCL >= 2.31.2) */
#define LENS_SESSION_F_NVTX 0x1
#define LENS_SESSION_F_CUPTI 0x2

/* ---- COMM: one per init ---- */
struct lens_comm_rec {
  uint64_t context;   /* the opaque value returned to NCCL in *context; START records carry it */
  uint64_t comm_id;   /* commHash (v4) / commId (v5+) */
  int32_t rank;
  int32_t nranks;
  int32_t nnodes;
  uint32_t comm_index;    /* index in this process, from 0 */
  uint64_t init_mono_ns;
  uint32_t api_version;   /* 4 to 7 */
  uint32_t flags;         /* reserved */
  char name[128];         /* commName, NUL-terminated ("" if NULL) */
};
struct lens_comm_fini {
  uint64_t context;
  uint64_t fini_mono_ns;
  uint32_t comm_index;
  uint32_t reserved;
};

/* ---- THREAD: one per thread that called the plugin (re-sent when roles change) ---- */
#define LENS_ROLE_APP 0x1        /* API or enqueue events */
#define LENS_ROLE_PROXY 0x2      /* ProxyCtrl / ProxyOp / ProxyStep (and KernelCh before NCCL 2.31): a proxy progress thread */
#define LENS_ROLE_NET 0x4        /* NetPlugin only */
#define LENS_ROLE_INIT 0x8       /* called init / finalize */
#define LENS_ROLE_HOSTCB 0x10    /* Group/Coll/P2p without API events: host callback (graph replay) */
#define LENS_ROLE_PROFILER 0x20  /* KernelCh / KernelPhase on NCCL >= 2.31: NCCL's profiler thread (never ProxyOp) */
struct lens_thread_rec {
  uint32_t slot;      /* thread slot: bits 40..55 of event ids */
  uint32_t tid;       /* gettid() in the process's pid namespace */
  uint32_t outer_tid; /* tid in the outermost visible pid namespace (NSpid first), or = tid */
  uint32_t roles;     /* LENS_ROLE_* */
  int32_t proxy_rank; /* rank of the communicator whose ProxyCtrl ran here, -1 unknown */
  uint32_t proxy_comm_index; /* comm_index of that communicator, UINT32_MAX unknown */
  uint64_t first_mono_ns;
  char name[16];      /* OS thread name (comm), NUL-terminated */
};

/* ---- EVENTS ----
 * A chunk holds the records drained from one thread's ring, in order. */
struct lens_events_hdr {
  uint32_t slot;     /* thread slot that produced them */
  uint32_t count;    /* number of records */
};

/* ---- EVENTS_PACKED (NCCL_LENS_COMPRESS=packed|zstd) ----
 * The same records as an EVENTS chunk, as a stream of varints predicted
 * field by field (docs/trace-format.md "Packed events"; the codec is
 * common/lens_pack.c), optionally compressed by zstd. Decoding gives back
 * the fixed records byte for byte. The first 8 bytes are a lens_events_hdr. */
#define LENS_PACK_CODEC_VARINT 1 /* body = the varint stream */
#define LENS_PACK_CODEC_ZSTD 2   /* body = one zstd frame holding the varint stream */
struct lens_packed_hdr {
  uint32_t slot;       /* as lens_events_hdr */
  uint32_t count;      /* records */
  uint32_t raw_bytes;  /* the records' size in fixed form */
  uint32_t body_bytes; /* the varint stream's size (after zstd decompression) */
  uint32_t codec;      /* LENS_PACK_CODEC_* */
  uint32_t reserved;
};

/* ---- INDEX ----
 * Written right after each EVENTS or EVENTS_PACKED chunk (same session), so
 * that a reader can tell what that chunk holds without decompressing it
 * (docs/trace-format.md, "The index"): a window of a long run then decodes
 * the chunks it needs. It names its events chunk by position; a reader
 * checks slot and records against that chunk's header and ignores an INDEX
 * that does not match. Not written into the recorder's store (dumps have
 * none); a chunk without one is always decoded. */
#define LENS_INDEX_F_TOUCH_ANY 0x1 /* its STOP/STATE records touch ids of more slots than the touches list */
#define LENS_INDEX_F_OPEN 0x2      /* a struct lens_index_open (and its arrays) follows the touches */
struct lens_index_hdr {
  uint32_t slot;     /* the events chunk's thread slot */
  uint32_t records;  /* its header's count (a folded run of STATEs is one record) */
  uint64_t first_ts; /* the lowest and highest ts of its records (CLOCK_MONOTONIC ns; a run's last too) */
  uint64_t last_ts;
  uint64_t start_lo; /* LENS_ID_SEQ of its first and last START (a slot's STARTs come in sequence order); */
  uint64_t start_hi; /* 0 and 0 when it holds none */
  uint32_t types;    /* bit t: it holds a record of an event of type t (enum lens_type) */
  uint16_t n_touch;  /* struct lens_index_touch after this header */
  uint16_t flags;    /* LENS_INDEX_F_* */
};
/* Its STOP and STATE records whose START is not in the chunk touch the
 * events of this slot with sequence numbers in [seq_lo, seq_hi]: where a
 * reader finds the end of an event it started elsewhere. */
struct lens_index_touch {
  uint32_t slot;
  uint32_t reserved;
  uint64_t seq_lo, seq_hi;
};
/* The process's events open when the INDEX was written, from every record
 * drained before taken_mono_ns (of every thread, in chunks written or not):
 * a START drained, its STOP not. With drained[], the highest START sequence
 * number drained per slot, a reader finds every event running at a time
 * t >= taken_mono_ns: one listed here, or one whose START comes after
 * drained[] (docs/trace-format.md, "The index"). Written at most every
 * 50 ms. The events are listed by key: LENS_INDEX_KEY(id), the slot and
 * sequence bits of the id (its type and flag bits left out), ascending. */
#define LENS_INDEX_KEY(id) ((id) & 0x00FFFFFFFFFFFFFFull)
#define LENS_INDEX_OPEN_F_INCOMPLETE 0x1 /* the writer's table of open events overflowed once this session: the
                                          * list may miss events (read from the session's start) */
struct lens_index_open {
  uint64_t taken_mono_ns;
  uint32_t n_slots; /* struct lens_index_drained after this */
  uint32_t n_open;  /* uint64_t keys (LENS_INDEX_KEY) after those, ascending */
  uint32_t flags;   /* LENS_INDEX_OPEN_F_* */
  uint32_t reserved;
};
struct lens_index_drained {
  uint32_t slot;
  uint32_t reserved;
  uint64_t seq_hi;
};

/* Event ids (the handle returned to NCCL is the id cast to void*):
 *   bit 63      always 1 (never NULL)
 *   bits 56..59 event type index (LENS_T_*)
 *   bit 60      REMOTE: ProxyOp whose pid is not ours (PXN); children inherit
 *   bits 40..55 thread slot
 *   bits 0..39  per-thread sequence number
 * Ids are unique within one process session; across processes pair with pid. */
#define LENS_ID_TAG (1ull << 63)
#define LENS_ID_REMOTE (1ull << 60)
#define LENS_ID_TYPE(id) ((unsigned)(((id) >> 56) & 0xF))
#define LENS_ID_SLOT(id) ((unsigned)(((id) >> 40) & 0xFFFF))
#define LENS_ID_SEQ(id) ((id) & 0xFFFFFFFFFFull)
#define LENS_ID_MAKE(type, slot, seq) \
  (LENS_ID_TAG | ((uint64_t)((type) & 0xF) << 56) | ((uint64_t)((slot) & 0xFFFF) << 40) | ((seq) & 0xFFFFFFFFFFull))

/* Event type index = bit position in NCCL's mask. */
enum lens_type {
  LENS_T_GROUP = 0, LENS_T_COLL = 1, LENS_T_P2P = 2, LENS_T_PROXY_OP = 3, LENS_T_PROXY_STEP = 4,
  LENS_T_PROXY_CTRL = 5, LENS_T_KERNEL_CH = 6, LENS_T_NET_PLUGIN = 7, LENS_T_GROUP_API = 8,
  LENS_T_COLL_API = 9, LENS_T_P2P_API = 10, LENS_T_KERNEL_LAUNCH = 11, LENS_T_CE_COLL = 12,
  LENS_T_CE_SYNC = 13, LENS_T_CE_BATCH = 14, LENS_T_KERNEL_PHASE = 15 /* v7 */, LENS_T_COUNT = 16
};

/* Every record starts with this 8-byte header; size includes it and is a multiple of 8. */
struct lens_rec_hdr {
  uint16_t size;
  uint8_t kind;  /* LENS_REC_* */
  uint8_t type;  /* enum lens_type */
  uint32_t aux;  /* STATE: the NCCL state value; START: LENS_START_F_* */
};
enum { LENS_REC_START = 1, LENS_REC_STOP = 2, LENS_REC_STATE = 3 };

#define LENS_START_F_REMOTE 0x1       /* PXN: pid != ours; parent and context are foreign values */
#define LENS_START_F_NULL_CONTEXT 0x2 /* context was NULL */
#define LENS_START_F_BAD_CONTEXT 0x4  /* context was not one we issued (or stale) */
#define LENS_START_F_NULL_PARENT 0x8
#define LENS_START_F_DROPPED_BEFORE 0x10 /* this ring dropped records right before this one */

/* Strings: in the ring they hold the const char* NCCL passed; on disk they
 * hold an id from a STRINGS chunk (0 = NULL). */
typedef uint64_t lens_str_t;

struct lens_rec_start {
  struct lens_rec_hdr h;
  uint64_t id;
  uint64_t parent;  /* parentObj as passed, raw (an id of ours, or foreign, or 0) */
  uint64_t context; /* context as passed, raw */
  uint64_t ts;      /* CLOCK_MONOTONIC ns (TSC in the ring) */
  int32_t rank;     /* descriptor rank as passed */
  uint32_t tid_slot_reserved;
  /* followed by the type's payload, below */
};
struct lens_rec_stop {
  struct lens_rec_hdr h;
  uint64_t id; /* 0 for a NULL handle (NetPlugin) */
  uint64_t ts;
};
struct lens_rec_state {
  struct lens_rec_hdr h; /* aux = state */
  uint64_t id;
  uint64_t ts;
  uint64_t arg;      /* transSize, appendedProxyOps, pTimer (gpu ns), or net data pointer */
  uint32_t has_args; /* 0 when eStateArgs was NULL */
  uint32_t reserved;
};

/* A run of identical STATEs (the writer collapses them in the compact
 * modes, NCCL_LENS_COMPRESS=packed|zstd): `repeats` more STATE records of
 * the same event with the same state (aux), arg and has_args as the STATE of
 * that event before it in the same chunk, the first at s.ts, the last at
 * last_ts. NCCL records SendPeerWait on every pass of the proxy loop while a
 * send waits for the peer's credit (net.cc, sendProxyProgress): millions a
 * second in a hang. A longer STATE: a reader that does not know it reads one
 * STATE at s.ts. */
struct lens_rec_state_run {
  struct lens_rec_state s; /* h.size = sizeof(struct lens_rec_state_run) */
  uint64_t last_ts;
  uint32_t repeats;        /* >= 1 */
  uint32_t max_gap_ns;     /* the longest time between two records of the run, the STATE before it included
                            * (saturates); a run never spans a gap over 1 ms (the proxy stopped polling) */
};

/* ---- START payloads (after struct lens_rec_start) ---- */
struct lens_p_group_api { uint32_t graph_captured; int32_t group_depth; };
/* user_tag (v7, NVIDIA NCCL >= 2.31.2): the call's ncclCollConfig_t.userProfilerTag, 0 = untagged or not
 * known. Fields appended after the first release: a shorter record of an older writer reads them as 0. */
struct lens_p_coll_api {
  lens_str_t func; uint64_t count; lens_str_t datatype; uint64_t stream; int32_t root; uint32_t graph_captured;
  uint64_t user_tag;
};
struct lens_p_p2p_api {
  lens_str_t func; uint64_t count; lens_str_t datatype; uint64_t stream; uint32_t graph_captured; uint32_t reserved;
  uint64_t user_tag;
};
struct lens_p_kernel_launch {
  uint64_t stream;
  uint64_t ext_corr_id; /* CUPTI external id pushed (CUSTOM2), 0 = none pushed */
};
struct lens_p_group {
  uint64_t launch_id; /* id of this thread's preceding KernelLaunch in the same plan, 0 = none */
};
struct lens_p_coll {
  uint64_t seq; lens_str_t func; uint64_t send_buff; uint64_t recv_buff; uint64_t count;
  lens_str_t datatype; lens_str_t algo; lens_str_t proto;
  uint64_t parent_group; /* v5+: parentGroup; v4: 0 (parentObj is the Group) */
  uint64_t launch_id;    /* as in lens_p_group */
  int32_t root; uint8_t n_channels; uint8_t n_warps;
  uint8_t is_sym_coll; /* v7: a symmetric kernel (then algo = the variant's algorithm part, proto = "") */
  uint8_t reserved;
  uint64_t user_tag;        /* v7 */
  lens_str_t kernel_variant; /* v7: symmetric kernel's full name, 0 = none */
};
struct lens_p_p2p {
  lens_str_t func; uint64_t buff; lens_str_t datatype; uint64_t count;
  uint64_t parent_group; uint64_t launch_id;
  int32_t peer; uint8_t n_channels; uint8_t reserved[3];
  uint64_t user_tag; /* v7 */
};
struct lens_p_proxy_op {
  int32_t pid; int32_t peer; int32_t n_steps; int32_t chunk_size; int32_t is_send;
  uint8_t channel; uint8_t reserved[3];
};
struct lens_p_proxy_step { int32_t step; uint32_t reserved; };
struct lens_p_kernel_ch { uint64_t start_gpu_ns; /* pTimer at start */ uint8_t channel; uint8_t reserved[7]; };
/* v7 KernelPhase: parent = its KernelCh; the stop pTimer comes in STATE 31's arg. */
struct lens_p_kernel_phase {
  uint64_t start_gpu_ns; /* pTimer at start */
  lens_str_t name;       /* phaseName ("initial_sync", "compute", "final_sync") */
  uint8_t channel; uint8_t phase_id; uint8_t reserved[6];
};
struct lens_p_net_plugin {
  int64_t plugin_id; uint64_t data; /* raw pointer value */
  uint32_t payload_len;             /* bytes of payload copied (IB v1: 40, socket v1: 24, else 0) */
  uint32_t reserved;
  uint8_t payload[40];              /* copy of the IB/socket descriptor, taken during the call */
};
struct lens_p_ce_coll {
  uint64_t seq; lens_str_t func; uint64_t send_buff; uint64_t recv_buff; uint64_t count; lens_str_t datatype;
  lens_str_t sync_strategy; uint64_t stream; int32_t root; uint32_t intra_batch_sync;
  uint32_t batch_size; uint32_t num_batches; uint32_t ce_seq_num; uint32_t reserved;
  uint64_t user_tag; /* v7 */
};
struct lens_p_ce_sync { uint32_t is_complete; int32_t n_ranks; };
struct lens_p_ce_batch { uint64_t total_bytes; int32_t num_ops; uint32_t use_intra_sync; };

/* ---- DROPS: cumulative counters, written periodically and at the end ---- */
struct lens_drops {
  uint64_t at_mono_ns;
  uint64_t ring_full;       /* records dropped because a thread's ring was full */
  uint64_t no_thread_slot;  /* records dropped because max_threads was reached */
  uint64_t null_handle;     /* stop/record calls with a NULL handle (ignored) */
  uint64_t bad_handle;      /* stop/record calls with a handle we never issued */
  uint64_t write_errors;    /* chunks the writer failed to write (disk full...) */
  uint64_t cupti_records;   /* CUPTI records dropped (cuptiActivityGetNumDroppedRecords) */
  uint64_t blob_queue_full; /* CUPTI buffers dropped because the writer queue was full */
  uint64_t recorder_evicted; /* event records the flight recorder evicted (NCCL_LENS_MODE=recorder) */
  uint64_t reserved[3];
};

/* ---- CUPTI raw activity buffer ---- */
struct lens_cupti_hdr {
  uint64_t delivered_mono_ns; /* when CUPTI handed us the buffer */
  uint32_t valid_bytes;       /* bytes of records that follow */
  uint32_t cupti_api_version; /* CUPTI_API_VERSION of the library that produced them */
  uint64_t dropped_records;   /* CUPTI's own drop count at delivery */
};

/* ---- SCHED samples (producer = nccl-lens sched) ---- */
enum lens_sched_kind {
  LENS_SCHED_RUNQ_WAIT = 1, /* woken (or preempted-runnable) until on CPU */
  LENS_SCHED_PREEMPT = 2,   /* switched out while runnable (includes sched_yield); end = back on CPU */
  LENS_SCHED_OFFCPU = 3,    /* blocked (sleep) longer than the threshold */
};
struct lens_sched_hdr { uint32_t count; uint32_t reserved; };
struct lens_sched_sample {
  uint64_t start_mono_ns;
  uint64_t end_mono_ns;
  uint32_t kind;          /* enum lens_sched_kind */
  uint32_t host_pid;      /* tgid as the kernel sees it (init pid namespace) */
  uint32_t host_tid;
  uint32_t ns_tid;        /* tid in the plugin process's namespace (0 unknown) */
  uint32_t culprit_pid;   /* task that held the CPU (0 unknown) */
  uint32_t culprit_tid;
  uint32_t cpu;
  uint32_t prev_state;    /* state at switch-out */
  char culprit_comm[16];
};
struct lens_sched_hist {
  uint32_t host_tid;
  uint32_t kind;
  uint64_t buckets[32];   /* log2(us) buckets */
};

/* ---- CLOCK: evidence for putting this host's CLOCK_MONOTONIC on a job time
 * base. Written by the writer thread (never NCCL's) when a session starts,
 * about every second, and at its end. CLOCK_REALTIME is read between two
 * CLOCK_MONOTONIC reads, so real_ns - mono is known within half their gap;
 * adjtimex says how far REALTIME itself may be off (NTP). ---- */
#define LENS_CLOCK_F_NTP_SYNCED 0x1  /* adjtimex: not STA_UNSYNC, and maxerror is meaningful */
#define LENS_CLOCK_F_NTP_UNKNOWN 0x2 /* adjtimex failed */
#define LENS_CLOCK_F_TIMENS 0x4      /* timens_mono_offset_ns was read (a time namespace may apply) */
struct lens_clock_rec {
  uint64_t mono_before_ns;        /* CLOCK_MONOTONIC, just before real_ns */
  uint64_t real_ns;               /* CLOCK_REALTIME */
  uint64_t mono_after_ns;         /* CLOCK_MONOTONIC, just after real_ns */
  uint64_t boottime_ns;           /* CLOCK_BOOTTIME right after (grows faster than MONOTONIC across suspend) */
  int64_t timens_mono_offset_ns;  /* this process's time namespace's MONOTONIC offset (0: none or unknown) */
  int64_t ntp_offset_ns;          /* adjtimex offset: REALTIME's current correction by NTP */
  uint64_t ntp_maxerror_ns;       /* adjtimex maxerror: REALTIME's error is at most this (when synced) */
  uint64_t ntp_esterror_ns;       /* adjtimex esterror */
  uint32_t ntp_status;            /* adjtimex status bits */
  uint32_t flags;                 /* LENS_CLOCK_F_* */
  char boot_id[40];               /* /proc/sys/kernel/random/boot_id: one value per host boot */
  char host[64];                  /* gethostname (UTS namespace) */
};

/* ---- NOTE: a condition worth telling the reader (log line mirror) ---- */
struct lens_note_hdr { uint64_t at_mono_ns; uint32_t level; uint32_t len; };

/* ---- FINI: clean end of a session ---- */
struct lens_fini {
  uint64_t at_mono_ns;
  uint64_t events_written;
  uint64_t chunks_written;
  uint32_t reason; /* 1 = last finalize, 2 = process exit without finalize */
  uint32_t reserved;
};

#ifdef __cplusplus
}
#endif
#endif
