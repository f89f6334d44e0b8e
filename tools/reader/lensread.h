/* lensread: the one reader of .lens traces. Every tool (export, summary,
 * validate, sched, report) and every test reads traces through this model;
 * nobody else parses the format.
 *
 * Loading: lens_model_load() reads any number of .lens files (plugin traces
 * and probe traces) into one model. Files cut short are read up to their last
 * complete chunk; the cut is reported in lens_file.truncated_bytes. A chunk
 * that fails its CRC inside a file (a flipped bit) is skipped and the walk
 * goes on from the next valid chunk header: lens_file.damaged_bytes and
 * damaged_chunks say what that cost. A file
 * that isn't a .lens trace, or is unreadable, is an error (one line in err).
 *
 * Joins done at load time: START/STOP/STATE records become lens_event objects
 * (times in CLOCK_MONOTONIC ns of the producing host), parents resolved within
 * the process (and across processes for PXN through (pid, id)), strings
 * resolved, comms and threads attached.
 *
 * Analyses (GPU clock mapping, CUPTI join, starvation flags) live in their own
 * files of tools/reader/ and fill the lens_event.acc fields. */
#ifndef NCCL_LENS_LENSREAD_H
#define NCCL_LENS_LENSREAD_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- event flags (lens_event.flags) ---- */
#define LENS_EVF_REMOTE 0x1         /* PXN: recorded here for another process's op */
#define LENS_EVF_NO_STOP 0x2        /* never stopped (e.g. collnet ProxyOp, process killed) */
#define LENS_EVF_DUP_STOP 0x4       /* stopped more than once (stale handle); first stop kept */
#define LENS_EVF_SUPERSEDED 0x8     /* a later START for the same (parent, step) replaced it */
#define LENS_EVF_PARENT_MISSING 0x10 /* parent value not found (dropped, foreign, or stale) */
#define LENS_EVF_GRAPH 0x20         /* belongs to a graph-captured op (graphCaptured, or parent was) */
#define LENS_EVF_DROPPED_NEAR 0x40  /* its ring dropped records right before it */
#define LENS_EVF_NULL_CONTEXT 0x80
#define LENS_EVF_BAD_CONTEXT 0x100

/* ---- accuracy flags (lens_event.acc.flags), set by analyses ---- */
#define LENS_ACC_STOP_BEFORE_START 0x1  /* KernelCh stop pTimer < start pTimer (also RING_OVERRUN) */
#define LENS_ACC_NON_MONOTONIC 0x2      /* KernelCh start later than an item's noticed after it (also RING_OVERRUN) */
#define LENS_ACC_SHARED_TIMER 0x4       /* start or stop equal to another launch's item (not a pair or batch) */
#define LENS_ACC_RING_OVERRUN 0x8       /* suspected: proxy > 64 items behind, timers of a later item */
#define LENS_ACC_OUTSIDE_KERNEL 0x10    /* channel span not inside its CUPTI kernel span */
#define LENS_ACC_NO_KERNEL_RECORD 0x20  /* launch had an ext id but no CUPTI kernel record */
#define LENS_ACC_FOREIGN_EXT_ID 0x40    /* CUPTI ext-corr record with an id we never pushed */
#define LENS_ACC_STARVED 0x80           /* overlaps a starvation interval of the thread that reported it
                                           (KernelCh: the profiler thread on NCCL >= 2.31, the proxy before) */
#define LENS_ACC_NO_CLOCK_MAP 0x100     /* no GPU clock map for its rank: GPU times not mapped */

/* Where an event's timing came from. */
enum lens_time_source {
  LENS_TS_HOST_NOTICE = 0, /* host time at the callback only */
  LENS_TS_GPU_PTIMER = 1,  /* KernelCh pTimer mapped through a fitted clock map */
  LENS_TS_CUPTI = 2,       /* CUPTI kernel record */
};

struct lens_state_ev {
  uint64_t ts_mono_ns;
  uint64_t arg;
  uint32_t state;    /* NCCL state value */
  uint32_t has_args;
  /* A run of identical records (same state, arg, has_args) in a row on this
   * event, as the writer folds them (lens_rec_state_run): count records,
   * the first at ts_mono_ns, the last at last_mono_ns. 1 and ts_mono_ns
   * for a single record. */
  uint64_t last_mono_ns;
  uint32_t count;
  uint32_t max_gap_ns; /* a run: the longest time between two of its records (0 for one record) */
};

/* Payload with strings resolved (const char*, NULL if absent). */
struct lens_payload {
  union {
    struct { int graph_captured, group_depth; } group_api;
    /* user_tag: v7 (NVIDIA NCCL >= 2.31.2), 0 = untagged or not recorded */
    struct { const char *func, *datatype; uint64_t count, stream, user_tag; int root, graph_captured; } coll_api;
    struct { const char *func, *datatype; uint64_t count, stream, user_tag; int graph_captured; } p2p_api;
    struct { uint64_t stream, ext_corr_id; } kernel_launch;
    struct { uint64_t launch_id; } group;
    struct {
      uint64_t seq, send_buff, recv_buff, count, parent_group, launch_id, user_tag;
      const char *func, *datatype, *algo, *proto; /* symmetric kernels: algo = variant's algorithm, proto = "" */
      const char *kernel_variant;                 /* v7: symmetric kernel name, NULL otherwise */
      int root, n_channels, n_warps, is_sym_coll;
    } coll;
    struct {
      uint64_t buff, count, parent_group, launch_id, user_tag;
      const char *func, *datatype;
      int peer, n_channels;
    } p2p;
    struct {
      int pid, peer, n_steps, chunk_size, is_send, channel;
      /* Loaded with LENS_LOAD_FOLD_STEPS only: its ProxySteps that stopped,
       * and their first and last stop (the steps are not events then). */
      uint32_t folded_stops;
      /* Loaded with LENS_LOAD_FOLD_STEPS only: 1 + its index into
       * model->folded_ops (what else its steps said), 0 = none. */
      uint32_t folded_op;
      uint64_t folded_stop_lo, folded_stop_hi;
      /* Loaded with LENS_LOAD_FOLD_STEPS only: the one-way evidence of its
       * step LENS_ONEWAY_STEP (oneway.h): a send op's latest host time that
       * step was provably not yet posted, a recv op's earliest it was
       * provably in; 0 = none. */
      uint64_t folded_oneway_ns;
      /* Loaded with LENS_LOAD_FOLD_STEPS only: its stopped steps' time per
       * phase (step_phases.h, enum lens_step_phase: the split the network
       * view makes of step events), summed. */
      uint64_t folded_phase_ns[7];
    } proxy_op;
    struct { int step; } proxy_step;
    struct { uint64_t start_gpu_ns, stop_gpu_ns; /* stop from state 22, 0 if none */ int channel; } kernel_ch;
    /* v7: stop from state 31, 0 if none; parent = its KernelCh */
    struct { uint64_t start_gpu_ns, stop_gpu_ns; const char *name; int channel, phase_id; } kernel_phase;
    struct { int64_t plugin_id; uint64_t data; uint32_t payload_len; uint8_t payload[40]; } net_plugin;
    struct {
      uint64_t seq, send_buff, recv_buff, count, stream, user_tag;
      const char *func, *datatype, *sync_strategy;
      int root, intra_batch_sync;
      uint32_t batch_size, num_batches, ce_seq_num;
    } ce_coll;
    struct { int is_complete, n_ranks; } ce_sync;
    struct { uint64_t total_bytes; int num_ops, use_intra_sync; } ce_batch;
  };
};

struct lens_accuracy {
  uint32_t flags;            /* LENS_ACC_* */
  uint32_t time_source;      /* enum lens_time_source */
  uint64_t gpu_start_mono_ns; /* GPU time mapped to host (KernelCh, kernels), 0 = unknown */
  uint64_t gpu_stop_mono_ns;
  int64_t notice_lag_ns;     /* host notice time - mapped GPU time (KernelCh stop); 0 or negative
                              * when measured too: lens_gpu_notice_lag_known says whether it is */
  uint64_t starved_ns;       /* overlap with starvation of its proxy thread */
  int32_t sched_sample;      /* index into the probe's samples of the worst overlap, -1 none */
  int32_t cupti_kernel;      /* index into model->kernels, -1 none */
};

struct lens_event {
  uint64_t id;              /* event id as issued by the plugin */
  uint64_t parent_raw;      /* parentObj as NCCL passed it */
  uint64_t context;         /* context as NCCL passed it */
  uint64_t start_mono_ns;
  uint64_t stop_mono_ns;    /* 0 if never stopped */
  int32_t type;             /* enum lens_type */
  int32_t rank;             /* descriptor rank as passed (often 0, see spec) */
  int32_t proc;             /* index into model->procs */
  int32_t thread;           /* index into model->threads */
  int32_t comm;             /* index into model->comms, -1 unknown / foreign */
  int32_t parent;           /* index into model->events, -1 unresolved */
  int32_t first_child;      /* index of the first child, -1 none; siblings via next_sibling */
  int32_t next_sibling;
  uint32_t flags;           /* LENS_EVF_* */
  uint32_t session;         /* session number within its file */
  uint32_t first_state;     /* index into model->states */
  uint32_t n_states;
  struct lens_payload p;
  struct lens_accuracy acc;
};

struct lens_thread {
  int32_t proc;
  uint32_t slot, tid, outer_tid, roles;
  int32_t proxy_rank;
  int32_t proxy_comm;  /* index into model->comms, -1 */
  uint64_t first_mono_ns;
  char name[16];
  /* Loaded with LENS_LOAD_FOLD_STEPS: the ProxySteps it recorded (not
   * events then): how many, superseded or not (folded_starts), the earliest
   * start and the latest time any reached (its stop, its states' records);
   * how many were not superseded and their bytes, as lens_folded_op counts
   * them. 0 when none. */
  uint64_t folded_starts, folded_steps, folded_bytes, folded_first_ns, folded_last_ns;
  /* Set by lens_analyze_starvation: time the probe saw this thread runnable
   * but not running while its events were open, each ns counted once (the
   * union, not the sum of nested events' overlaps). */
  uint64_t starved_ns;
};

struct lens_comm {
  int32_t proc;
  uint64_t context, comm_id;
  int32_t rank, nranks, nnodes;
  uint32_t comm_index, api_version;
  uint64_t init_mono_ns, fini_mono_ns; /* fini 0 if never finalized */
  char name[128];
};

struct lens_note { int32_t proc; uint64_t at_mono_ns; uint32_t level; const char *text; };

struct lens_cupti_blob {
  int32_t proc;
  uint64_t delivered_mono_ns;
  uint32_t cupti_api_version;
  uint64_t dropped_records;
  const uint8_t *data; /* raw CUPTI activity records */
  size_t len;
};

/* Loaded with LENS_LOAD_FOLD_STEPS: what a ProxyOp's ProxySteps would
 * have said as its children, the steps that a later START of the same
 * (process, session, parent, step) replaced (LENS_EVF_SUPERSEDED) left out. */
struct lens_folded_op {
  uint64_t steps;        /* its steps, stopped or not */
  uint64_t bytes;        /* their bytes: each step's arg of its last state 9 or 11 with args (transSize) */
  int32_t next_step;     /* its highest stopped step + 1, 0 when none stopped */
  /* Its lowest step that never stopped (has_wait 0: none): number, thread,
   * start, and its last run of one state (state 0: no state recorded; then
   * since = last = its start, repeats 0): the first record of that run,
   * the last one, and how many records it holds (runs of the writer folded). */
  int32_t has_wait, wait_step, wait_thread;
  uint32_t wait_state, reserved;
  uint64_t wait_start_ns, wait_since_ns, wait_last_ns, wait_repeats;
};

/* One input file. */
struct lens_file {
  const char *path;
  uint32_t producer;        /* LENS_PRODUCER_* */
  uint64_t size_bytes;
  uint64_t truncated_bytes; /* bytes after the last valid chunk (0 = intact) */
  const char *truncation;   /* why reading stopped early, NULL if intact */
  uint64_t lost_chunks;     /* gaps in the chunk numbers: chunks the writer failed to write */
  uint64_t damaged_bytes;   /* bytes skipped inside the file: chunks that fail a CRC (0 = none) */
  uint64_t damaged_chunks;  /* chunks those bytes held (from the chunk numbers) */
  uint32_t n_sessions;
  int clean_end;            /* last session ended with FINI */
  uint32_t fini_reason;     /* of the last FINI: 1 finalize, 2 exit */
};

/* A CLOCK chunk: clock evidence of the process's host (see trace_format.h). */
struct lens_clock_sample {
  int32_t proc;
  struct lens_clock_rec r;
};

/* An input not read because it is the same trace as another input. */
struct lens_same_trace {
  const char *path;    /* as given */
  const char *same_as; /* the input read in its place */
  int same_file;       /* 1: the same file (path, link, glob); 0: a copy */
};

/* One process (a plugin trace file; sessions of the same file share it). */
struct lens_proc {
  int32_t file;
  uint32_t pid, outer_pid;
  char host[64];
  uint32_t nccl_api_version;
  uint64_t start_mono_ns, start_real_ns;
  uint32_t event_mask, flags;
  struct lens_drops drops; /* last cumulative DROPS seen */
  /* Added after v1 of this API: the library in the process (SESSION), 0 = unknown / older trace. */
  uint32_t lib_version, lib_kind, lib_flags; /* ncclGetVersion code, LENS_LIB_*, LENS_LIB_F_* */
  /* Loaded with LENS_LOAD_FOLD_STEPS: the ProxySteps it recorded (each an
   * event of a full load), counted as model->folded_steps counts them. */
  uint64_t folded_steps;
};

/* Scheduler samples from probe traces (times CLOCK_MONOTONIC ns). */
struct lens_sched {
  int32_t file;
  struct lens_sched_sample s;
};

/* A CUPTI kernel record (from LENS_CHUNK_CUPTI blobs or --cupti-buffer files),
 * filled by the GPU analysis. Times CLOCK_MONOTONIC ns (CUPTI clock callback). */
struct lens_kernel {
  int32_t proc;            /* -1 when it came from a --cupti-buffer file with no process */
  uint64_t start_mono_ns, end_mono_ns;
  uint32_t correlation_id, device_id, context_id, stream_id;
  uint32_t grid_x, graph_id;
  uint64_t graph_node_id;
  uint64_t ext_id;         /* external correlation id (CUSTOM2), 0 none */
  int32_t launch_event;    /* index of the KernelLaunch event joined, -1 */
  const char *name;
};

/* host_mono_ns = offset_ns + slope * gpu_ns, valid for gpu_ns in [gpu_from, gpu_to].
 * One or more segments per GPU (refitted across the run). A GPU is identified
 * by the proxy thread that reports its KernelCh events. */
struct lens_clock_map {
  int32_t proc, thread;    /* proxy thread (index into model->threads) */
  int32_t rank;            /* comm rank seen on it, -1 */
  uint64_t gpu_from, gpu_to;
  double offset_ns;        /* host = offset + slope * gpu; computed in long double where it matters */
  double slope;
  double residual_ns;      /* fit residual (robust spread) */
  double error_bound_ns;   /* bound it puts on a mapped time */
  uint32_t n_points;
  uint32_t source;         /* LENS_TS_CUPTI or LENS_TS_GPU_PTIMER (lower envelope of notice - pTimer) */
};

struct lens_model {
  struct lens_file *files; size_t n_files;
  struct lens_proc *procs; size_t n_procs;
  struct lens_comm *comms; size_t n_comms;
  struct lens_thread *threads; size_t n_threads;
  struct lens_event *events; size_t n_events;   /* sorted by start_mono_ns within each proc */
  struct lens_state_ev *states; size_t n_states;
  struct lens_note *notes; size_t n_notes;
  struct lens_cupti_blob *cupti; size_t n_cupti;
  struct lens_sched *sched; size_t n_sched;
  struct lens_sched_hist *sched_hist; size_t n_sched_hist;
  struct lens_kernel *kernels; size_t n_kernels;         /* filled by the GPU analysis */
  struct lens_clock_map *clock_maps; size_t n_clock_maps;
  /* Totals over all procs. */
  uint64_t orphan_stops;    /* STOP/STATE for ids never started (start dropped or cut) */
  void *priv;               /* reader-owned storage */
  /* Added after v1 of this API. */
  uint64_t bad_records;     /* records inside valid chunks that could not be parsed (skipped) */
  struct lens_clock_sample *clocks; size_t n_clocks; /* CLOCK chunks, in file order per proc */
  /* Inputs named twice or copied: read once, listed here (paths owned by the model). */
  struct lens_same_trace *same_traces; size_t n_same_traces;
  /* Loaded with LENS_LOAD_FOLD_STEPS: no ProxyStep events (see there). */
  int steps_folded;
  /* Loaded with LENS_LOAD_FOLD_STEPS: the ProxySteps folded (each an event
   * of a full load), how many of them carry each LENS_EVF_* bit as that
   * event would (remote, no_stop, dup_stop, superseded, parent_missing,
   * graph, dropped_near, null_context, bad_context), and the ProxyOps'
   * folded children (lens_folded_op, proxy_op.folded_op). */
  uint64_t folded_steps;
  uint64_t folded_evf_counts[32];
  struct lens_folded_op *folded_ops; size_t n_folded_ops;
  /* Loaded with LENS_LOAD_FOLD_LATER: the folded ProxySteps, not yet
   * counted anywhere (lens_model_fold counts those a caller keeps); NULL
   * and 0 once folded. */
  struct lens_pending_step *pending_steps; size_t n_pending_steps;
  struct lens_pending_child *pending_children; size_t n_pending_children;
  /* Loaded with LENS_LOAD_STEP_FACTS: what each folded ProxyStep (those
   * counted in folded_steps) said, and the events whose parent it was. */
  struct lens_step_fact *step_facts; size_t n_step_facts;
  struct lens_step_child *step_children; size_t n_step_children;
  /* Loaded by lens_model_load_window with kch_columns, when it built only
   * some of the KernelCh: every KernelCh of the files as columns (struct
   * lens_kch_col), in the order a full model's events would have; NULL and
   * 0 otherwise. Valid until the events are renumbered (a selection). */
  struct lens_kch_col *kch_cols; size_t n_kch_cols;
};

/* The STATE that ends a KernelCh (KernelChStop, 22) or a KernelPhase (31,
 * API v7), and what it decides: applied in the load's order, the first
 * nonzero arg of one with args is the event's stop pTimer, and (KernelCh)
 * the first one's time its stop notice, else its STOP's. One rule for the
 * model's events (records.c), the window's KernelCh columns (window.c), the
 * columnar reader (columns.c) and the GPU analysis (gpu_clock.c). */
static inline int lens_gpu_stop_state(unsigned type, uint32_t state) {
  return (type == LENS_T_KERNEL_CH && state == 22) || (type == LENS_T_KERNEL_PHASE && state == 31);
}
/* The stop pTimer after one more STATE record: cur until one decides it. */
static inline uint64_t lens_gpu_stop_timer(unsigned type, uint32_t state, int has_args, uint64_t arg,
                                           uint64_t cur) {
  return !cur && has_args && lens_gpu_stop_state(type, state) ? arg : cur;
}

/* A KernelCh as the GPU analysis reads it (tools/analysis/gpu/gpu_kch.h),
 * the fields a full load would give its event: ev the model's event, -1
 * not built; stop_gpu the first nonzero arg of a KernelChStop (22) with
 * args; stop_notice that state's first record's time, else its first
 * STOP's, 0 none; launch_id and parent_group its parent Coll's or P2p's
 * (0 without one), whose process is proc. */
struct lens_kch_col {
  int32_t ev, proc, thread, channel;
  uint32_t session;
  uint64_t id;
  uint64_t start_gpu, stop_gpu, start_notice, stop_notice;
  uint64_t launch_id, parent_group;
};

/* Load files into a new model. Returns NULL on error and writes a one-line
 * reason into err. progress (may be NULL) is called with bytes done/total. */
struct lens_model *lens_model_load(const char *const *paths, size_t n_paths, char *err, size_t err_len,
                                   void (*progress)(uint64_t done, uint64_t total));
void lens_model_free(struct lens_model *m);
/* An analysis that keeps state beside a model (the reader knows none of
 * them) registers how to release it: lens_model_free calls fn(m) first,
 * before the model's address can be reused. The same fn registers once; at
 * most LENS_MODEL_RELEASE_MAX. 0, or -1 when full. */
#define LENS_MODEL_RELEASE_MAX 8
int lens_model_on_free(struct lens_model *m, void (*fn)(struct lens_model *m));
/* lens_model_load with flags. LENS_LOAD_FOLD_STEPS: ProxySteps do not become
 * events; each ProxyOp counts its steps that stopped and keeps their first
 * and last stop (proxy_op.folded_*) and what lens_folded_op holds, each
 * thread what it recorded of them (lens_thread.folded_*), the model their
 * number and flags (folded_steps, folded_evf_counts); their states are not
 * kept. For a reader that needs nothing else of the steps (the job map, the
 * summary's counts, the hang diagnosis, when no starvation is analysed): two
 * thirds of a typical trace's events are steps. An event whose parent is a
 * step (NetPlugin) has parent -1, its flags as in a full load (its parent
 * not missing, graph inherited through the step); its comm, when it has
 * none of its own, comes from the step's ancestors only. */
#define LENS_LOAD_FOLD_STEPS 0x1u
/* With LENS_LOAD_FOLD_STEPS: the steps are resolved (parents, flags, the
 * superseded mark, comm) as a full load resolves their events, but counted
 * nowhere yet (folded_*, folded_ops, the threads' folded_* all 0): each is
 * a lens_pending_step (model->pending_steps) until lens_model_fold counts
 * the ones its caller keeps. For a caller that keeps some steps and not
 * others (the CLI's selection keeps each step on its own test, as it keeps
 * an event): the counts are then those a folded load of a trace holding
 * only the kept steps would give, with the events lens_model_keep kept. */
#define LENS_LOAD_FOLD_LATER 0x2u
/* A folded step while LENS_LOAD_FOLD_LATER keeps it pending: the fields of
 * its event a selection reads. comm: its context's communicator, else its
 * nearest ancestor event's (-1); parent: its parent event's index (-1: none,
 * missing, left out by lens_model_keep, or another folded step). */
struct lens_pending_step {
  uint64_t start_mono_ns, stop_mono_ns; /* stop 0: never stopped */
  int32_t proc, thread, comm, parent;
  uint32_t flags; /* LENS_EVF_*, as its event's */
  int32_t parent_step; /* its parent when that is another folded step: its index here, else -1 */
};
/* LENS_LOAD_FOLD_LATER: an event whose parent is a pending folded step (a
 * NetPlugin under its step; its parent is -1 in the model): the event's
 * index (-1 once lens_model_keep left it out) and the step's. */
struct lens_pending_child { int32_t event, step; };
/* With LENS_LOAD_FOLD_STEPS: each folded step's facts stay, compact, in
 * model->step_facts (the ones counted: under LENS_LOAD_FOLD_LATER those
 * lens_model_fold keeps, in the same order), for a reader that reads each
 * step but not its states (the network view: 64 bytes a step, not an event
 * and its states). */
#define LENS_LOAD_STEP_FACTS 0x4u
/* lens_step_fact.have */
#define LENS_STEP_HAVE_ARG 0x1u    /* arg: its record had args */
#define LENS_STEP_HAVE_BOUND0 0x2u /* bound_ns[0] was recorded */
#define LENS_STEP_HAVE_BOUND1 0x4u /* bound_ns[1] was recorded */
struct lens_step_fact {
  uint64_t start_mono_ns, stop_mono_ns; /* as its event's: stop 0 never stopped */
  /* Only with op >= 0, by its op's direction (is_send: states 20 and 9,
   * else 11 and 12; step_phases.h): the first record of each phase
   * boundary state (lens_step_bounds slots 0, 1 or 2, 3), and the arg of
   * the earliest record of state 9 (a send) or 11 (a receive). */
  uint64_t bound_ns[2];
  uint64_t arg;
  int32_t op;   /* its parent when that is a ProxyOp event, else -1 (none, missing, another step, left out) */
  int32_t proc; /* index into model->procs */
  uint32_t flags; /* LENS_EVF_*, as its event's */
  uint32_t have;  /* LENS_STEP_HAVE_* */
  /* Where its event would be in a full load: the model's events before it
   * (events sort by process, start, then the order their STARTs were read). */
  uint32_t events_before;
  uint32_t reserved;
};
/* An event whose parent is a folded step (parent -1 in the model; a
 * NetPlugin under its step): the event's index and the step's index into
 * step_facts (-1: the step was left out). */
struct lens_step_child { int32_t event, step; };
/* Counts the pending steps with keep[i] != 0 (keep NULL: all) as
 * LENS_LOAD_FOLD_STEPS counts every step (folded_steps, folded_evf_counts,
 * folded_ops and proxy_op.folded_*, the threads' folded_*), a step into its
 * ProxyOp only when that op is still an event of the model; the pending
 * steps go. 0 (also when none are pending), or -1 out of memory (the
 * counts are then partial: the caller gives up on the model). */
int lens_model_fold(struct lens_model *m, const uint8_t *keep);
struct lens_model *lens_model_load_ex(const char *const *paths, size_t n_paths, uint32_t flags, char *err,
                                      size_t err_len, void (*progress)(uint64_t done, uint64_t total));

/* A time window applied while loading (window.c): the events a selection
 * --since/--until (tools/cli/filter.c) keeps are built, and with them
 * whatever decides their fields in a full model (ancestors, a re-posted
 * ProxyStep's twins, each file's earliest event, which fixes its host's
 * origin), the rest not: a window of a huge job costs about the window plus
 * a scan of the bytes. Each kept event is exactly as lens_model_load_ex
 * makes it; the selection then narrows the model as it narrows a full one,
 * to the same events. The STOP and STATE records of the events not built
 * are dropped, not counted as orphans. ProxySteps are folded only with
 * LENS_LOAD_FOLD_STEPS | LENS_LOAD_FOLD_LATER (the steps built, pending:
 * the window's and those that decide their flags, which the selection
 * then keeps or leaves out as it does their events).
 * keep_types (bits 1u << LENS_T_*): types built whole, with their
 * ancestors, for an analysis that reads every one of them before the
 * selection (the GPU clock fits) -- only when the files hold a START of
 * a type in keep_types_if or a CUPTI chunk (keep_types_if 0: always).
 * keep_types_cupti: built whole as well, on the same condition, when there
 * is CUPTI evidence to join them to: a CUPTI chunk or a KernelLaunch that
 * pushed an external id in the files, or cupti_given (the caller adds
 * CUPTI buffers of its own). keep_types_parent: built whole as well, on
 * the same condition as keep_types, each with its parent only, not every
 * ancestor (for an analysis that reads no more of them: the parent's own
 * fields are then those of a trace that lacks its ancestors).
 * kch_columns: the caller reads m->kch_cols: where a full load's KernelCh
 * would be built whole with keep_types_parent only for an analysis of
 * every KernelCh (the GPU clock fits and flags), the scan keeps each
 * KernelCh's columns instead and builds only the window's (not with CUPTI
 * evidence, whose join reads every launch's KernelCh events; nor when a
 * file of the load starts one KernelCh id twice, or its KernelCh ids do not
 * say their type: built whole then, as without kch_columns).
 * kch_no_light (with kch_columns): the caller has what the GPU analysis
 * needs of the KernelCh outside the chunks read (a memo of the whole run's:
 * lens_analyze_gpu_memo), so the chunks the plan leaves out are not read
 * light for them; m->kch_cols holds the KernelCh of the chunks read.
 * events_total (out): the events a full load would have built.
 * chunks_skipped (out): the packed event chunks the load did not decode a
 * second time, the scan having found nothing in them to build or keep. */
struct lens_load_window {
  int have_since, have_until;
  uint64_t since_ns, until_ns; /* after the first event of the host, as the selection's */
  int absolute;             /* since_ns/until_ns are the host's MONOTONIC ns themselves (the timeline's
                             * window on job time, mapped to each host: export_job.c) */
  uint32_t keep_types, keep_types_if, keep_types_cupti, keep_types_parent;
  int cupti_given;
  int kch_columns;
  int kch_no_light;
  int no_plan;              /* read every events chunk (no plan from the traces' INDEX chunks) */
  uint64_t events_total;
  uint64_t chunks_skipped;
  uint64_t chunks_unread;   /* events chunks the plan left out: never decoded */
  int replanned;            /* a plan left out an event a decision needed: read again without plans */
  int columns_refused;      /* a KernelCh built did not match its column: read again, KernelCh built whole */
};
struct lens_model *lens_model_load_window(const char *const *paths, size_t n_paths, uint32_t flags,
                                          struct lens_load_window *win, char *err, size_t err_len,
                                          void (*progress)(uint64_t done, uint64_t total));

/* A model without events (skeleton.c): the files, processes, communicators,
 * threads, notes, CLOCK samples, GPU clock maps and same-trace notes of the
 * models added to it, renumbered, with their totals (orphan stops, bad
 * records); every string copied. What a view prints of a job whose events
 * were read group after group (tools/cli/passes.h) and freed. Freed with
 * lens_model_free. */
struct lens_model_base { size_t file, proc, comm, thread, clock_map; };
struct lens_model *lens_model_skeleton_new(void);
/* Appends m (its events left out); *base (may be NULL): where m's index 0 of
 * each table landed. 0, or -1 out of memory (skel keeps what was added). */
int lens_model_skeleton_add(struct lens_model *skel, const struct lens_model *m, struct lens_model_base *base);

/* Helpers. */
const char *lens_type_name(int type);       /* "Coll", "ProxyStep", ... */
const char *lens_state_name(uint32_t state); /* "SendGPUWait", ... */
/* Name of one LENS_EVF_* / LENS_ACC_* bit ("dup_stop", "ring_overrun"), NULL if unknown. */
const char *lens_evf_name(uint32_t bit);
const char *lens_acc_name(uint32_t bit);
const char *lens_time_source_name(uint32_t source); /* "host-notice", "gpu-ptimer", "cupti" */
/* What a clock map is fitted on: "cupti" (kernel records bound its channels)
 * or "host-notice" (the proxy's notice times; lens_clock_map.source names
 * the time source of what it maps, gpu-ptimer). */
const char *lens_clock_map_source_name(uint32_t source);
/* Every record a process's plugin counted as lost (its DROPS counters summed). */
uint64_t lens_drops_total(const struct lens_drops *d);
/* lens_label_clean (common/lens_utf8.h) cleans every label a reader reads. */
/* Bytes moved by a Coll/P2p/CollApi/P2pApi event: count * datatype size (0 if unknown). */
uint64_t lens_event_bytes(const struct lens_model *m, const struct lens_event *e);
size_t lens_datatype_size(const char *datatype);
/* The v7 user tag an event carries (CollApi, P2pApi, Coll, P2p, CeColl), 0 = none. */
uint64_t lens_event_user_tag(const struct lens_event *e);
/* Tag names (tag_names.c): "1:forward,2:backward" (tags are integers > 0, names
 * 1-31 characters). set: 0, or -1 for a bad spec (the table is unchanged).
 * from_env: NCCL_LENS_TAG_NAMES, read on the first label unless set before.
 * label: "" for 0, the name when known, else "tag N" written into buf. */
int lens_tag_names_set(const char *spec);
int lens_tag_names_from_env(void);
const char *lens_tag_label(uint64_t tag, char *buf, size_t cap);
/* Index of the event with this id in process proc (pid match), -1 if none. */
int32_t lens_model_find(const struct lens_model *m, int32_t proc, uint64_t id);
/* The same within one session of the process (ids are unique per session). */
int32_t lens_model_find_in_session(const struct lens_model *m, int32_t proc, uint32_t session, uint64_t id);
/* The first child of event `parent` whose type is `type`, -1 none. A pass
 * over ops asks this of the same parent many times (every op of a GroupApi
 * looks for the group's KernelLaunch, after all the group's API children:
 * N ops, N^2 steps); memo keeps the latest answers, one per parent modulo
 * LENS_CHILD_MEMO_SLOTS (the groups of several threads or communicators
 * interleave in event order). Start it zeroed (LENS_CHILD_MEMO_INIT), one
 * per pass and model. */
#define LENS_CHILD_MEMO_SLOTS 16
struct lens_child_memo {
  uint32_t parent1[LENS_CHILD_MEMO_SLOTS]; /* 1 + the parent, 0 empty */
  int32_t type[LENS_CHILD_MEMO_SLOTS], child[LENS_CHILD_MEMO_SLOTS];
};
#define LENS_CHILD_MEMO_INIT {{0}, {0}, {0}}
int32_t lens_first_child_of_type(const struct lens_model *m, int32_t parent, int32_t type,
                                 struct lens_child_memo *memo);
/* Completion time of a Coll/P2p: the latest of its KernelCh stop (mapped GPU
 * time if available, else notice) and ProxyOp stops; 0 if none. Sets *source. */
uint64_t lens_event_completion(const struct lens_model *m, const struct lens_event *e, int *source);
/* Narrows m to the events with keep[i] != 0 (n_events entries), in their
 * order: parents, children, CUPTI kernels' launch events and id lookups are
 * renumbered (an event whose parent is left out becomes a root, its flags
 * unchanged; a step fact's op left out is -1, its events_before counts the
 * kept events), the states of the events left out go. Procs, threads, comms,
 * samples and what analyses already computed stay. 0, or -1 when out of
 * memory (m unchanged). */
int lens_model_keep(struct lens_model *m, const uint8_t *keep);

#ifdef __cplusplus
}
#endif
#endif
