/* The GPU analysis (lens_analyze_gpu, declared in analyses.h), split across
 * tools/analysis/gpu/gpu_*.c: record collection and the CUPTI join (gpu_join.c),
 * clock fits (gpu_clock.c), accuracy flags (gpu_flags.c), and the entry
 * point with its per-model storage (gpu_analyze.c).
 *
 * Beyond the fields of lensread.h, it keeps a report per model: what was
 * joined how, and the exact clock maps (lens_clock_map.offset_ns is a double
 * near 1.7e18, so only good to ~256 ns; map times with lens_gpu_map_ns). */
#ifndef NCCL_LENS_GPU_ANALYSIS_H
#define NCCL_LENS_GPU_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "lensread.h"

/* Per-kernel flags (model->kernels[i]), in the report. */
#define LENS_GPU_K_FOREIGN_EXT_ID 0x1 /* its external id is no KernelLaunch of ours */
#define LENS_GPU_K_NO_EXT_ID 0x2      /* no CUSTOM2 external id (not launched inside our bracket) */
#define LENS_GPU_K_GRAPH 0x4          /* launched from a CUDA graph (graphId != 0) */
#define LENS_GPU_K_GRAPH_NODE_JOIN 0x8 /* joined to a capture-time launch by graph node order */
#define LENS_GPU_K_NO_TIMES 0x10      /* start/end 0: CUPTI could not time it (forced flush) */
#define LENS_GPU_K_CONTRADICT 0x20    /* shorter than the span of the channels joined to it: a wrong join */

/* An exact clock-map segment: host = ref_host + a + b * (gpu - ref_gpu). */
struct lens_gpu_seg {
  int32_t map;             /* index into model->clock_maps */
  uint64_t ref_gpu, ref_host;
  long double a, b;        /* a in ns, b dimensionless (1 + drift) */
  int slope_fixed;         /* window too short (or data too noisy) to measure drift: b = 1 */
};

struct lens_gpu_report {
  int cupti_available;     /* libcupti's walker could be loaded */
  char cupti_note[256];    /* why not, or the first walk error */
  size_t blobs, blob_errors;
  size_t records, kernel_records, ext_records, api_records;
  size_t kernels_joined;   /* to a KernelLaunch by external id */
  size_t kernels_graph, kernels_graph_joined; /* graph replays; of those joined by graph node */
  size_t foreign_ext_ids;  /* CUSTOM2 ext-corr records with an id we never pushed */
  size_t launches_with_ext, launches_no_kernel; /* KernelLaunch with an ext id; of those without kernel */
  const char *graph_join;  /* "graph node", "KernelCh only", or "none" (no graph kernels) */
  uint32_t *kernel_flags;  /* LENS_GPU_K_*, per model->kernels */
  struct lens_gpu_seg *segs; size_t n_segs; /* one per model->clock_maps, same order */
  /* KernelCh totals. */
  size_t kch, kch_mapped, kch_cupti_checked;
  size_t flag_counts[16];  /* per LENS_ACC_* bit */
  size_t kernels_contradict; /* joined kernels that cannot contain their channels (LENS_GPU_K_CONTRADICT) */
};

/* The report of the last lens_analyze_gpu on m, NULL before. */
const struct lens_gpu_report *lens_gpu_report_get(const struct lens_model *m);
/* Frees what the GPU analysis added to m (kernels, clock maps, extra CUPTI
 * files, report). lens_model_free should call it (weakly) first. */
void lens_gpu_release(struct lens_model *m);
/* Host CLOCK_MONOTONIC ns for a GPU time on clock map map_index (exact). */
uint64_t lens_gpu_map_ns(const struct lens_model *m, int32_t map_index, uint64_t gpu_ns);
/* The clock map covering this proxy thread at this GPU time, -1 none. */
int32_t lens_gpu_map_for(const struct lens_model *m, int32_t thread, uint64_t gpu_ns);

/* ---- internal, between gpu_*.c ---- */
struct lens_gpu_state;
struct lens_gpu_state *lens_gpu_state(const struct lens_model *m, int create);
struct lens_gpu_report *lens_gpu_state_report(struct lens_gpu_state *s);
/* Extra CUPTI buffers (from --cupti-buffer files). */
size_t lens_gpu_state_extra(struct lens_gpu_state *s, const struct lens_cupti_blob **blobs);

/* gpu_analyze.c: every result of an earlier analysis of m cleared, the
 * rows' too; the report to fill. */
struct lens_gpu_kch_table;
struct lens_gpu_report *lens_gpu_begin(struct lens_model *m, struct lens_gpu_state *s, struct lens_gpu_kch_table *t);
/* gpu_join.c: read every CUPTI blob into model->kernels and join them to
 * KernelLaunch events (acc.cupti_kernel, kernel.launch_event). */
int lens_gpu_join(struct lens_model *m, struct lens_gpu_report *r, char *err, size_t err_len);
/* The KernelCh table the fits and flags read (gpu_kch.h). */
struct lens_gpu_kch_table;
/* lens_analyze_gpu with the KernelCh given as a table (gpu_kch.h) rather
 * than read from m's events: rows whose event is not in m take part in the
 * fits and flags and are counted in the report; the rows' events get their
 * fields. Without CUPTI evidence (with it, a CUPTI fit walks the launches'
 * KernelCh events: every row must be a built event). */
int lens_gpu_analyze_rows(struct lens_model *m, struct lens_gpu_kch_table *t, char *err, size_t err_len);
/* gpu_clock.c: fit model->clock_maps (and r->segs) per proxy thread from
 * the table's rows, leaving out those their ex keeps out. */
int lens_gpu_fit_clocks(struct lens_model *m, struct lens_gpu_report *r, const struct lens_gpu_kch_table *t,
                        char *err, size_t err_len);
/* gpu_flags.c: per row, why a KernelCh is kept out of clock fits (its ex): */
#define LENS_GPU_EX_SUSPECT 1 /* suspect timers (a later item's): out of every fit */
#define LENS_GPU_EX_OWNER 2   /* shares its timers with earlier-noticed items and, noticed last, presumably
                               * owns them: in notice fits, out of CUPTI fits (the kernels decide later) */
void lens_gpu_fit_exclusions(struct lens_gpu_kch_table *t);
/* gpu_flags.c: map KernelCh times and set LENS_ACC_* flags (rows' flags,
 * and the fields of the rows' events that are built). */
void lens_gpu_flag(struct lens_model *m, struct lens_gpu_report *r, struct lens_gpu_kch_table *t);
/* The same with the sequence flags (the ones that depend on other KernelCh
 * of a channel) taken from a memo of a full pass, sorted by (proc, session,
 * id), instead of computed from rows that may be only some (gpu_memo.c). */
struct lens_gpu_seqflag;
void lens_gpu_flag_memo(struct lens_model *m, struct lens_gpu_report *r, struct lens_gpu_kch_table *t,
                        const struct lens_gpu_seqflag *seq, size_t n_seq);

/* Helpers shared by the files. */
/* 1 if the KernelCh lasts longer (pTimer) than kernel k (a contradictory join). */
int lens_gpu_kch_longer_than_kernel(const struct lens_event *e, const struct lens_kernel *k);
/* The Coll/P2p whose launch_id is this launch's id, iterated: returns the
 * next after index `after` (-1 to start), -1 at the end. */
int32_t lens_gpu_next_op_of_launch(const struct lens_model *m, int32_t launch, int32_t after);
/* KernelCh stop pTimer (0 none) and the host time NCCL reported it. */
uint64_t lens_gpu_kch_stop_notice(const struct lens_model *m, const struct lens_event *e);
/* Whether e's acc.notice_lag_ns is a measured lag, 0 and negative ones
 * included (the lower-envelope clock fit touches its points: lags of 0 are
 * common): a KernelCh the GPU analysis mapped through a clock map
 * (time_source not host notice) with a host notice of the end it maps (its
 * stop notice, its start when it has no stop timer). The one rule for
 * report, export and validate; lens_accuracy has no spare field for it. */
int lens_gpu_notice_lag_known(const struct lens_model *m, const struct lens_event *e);
/* The kernel (index, -1) of a KernelCh: through its Coll/P2p's launch. */
int32_t lens_gpu_kernel_of_kch(const struct lens_model *m, const struct lens_event *e);
/* The same with the model's state and report at hand (lens_gpu_state takes
 * a lock shared by every model: once per KernelCh it was a tenth of the
 * flag pass, and the job's threads contended for it). */
int32_t lens_gpu_state_kernel_of_kch(const struct lens_model *m, const struct lens_gpu_state *s,
                                     const struct lens_event *e);
uint64_t lens_gpu_report_map_ns(const struct lens_gpu_report *r, int32_t map_index, uint64_t gpu_ns);

/* Clock-fit window: refit every this many ns of GPU time (drift reaches tens
 * of ppm, i.e. tens of us per second). */
#define LENS_GPU_FIT_WINDOW_NS 1000000000ull
/* Shortest GPU-time span over which a drift (slope) is fitted at all; below
 * it noise of a few us would fake hundreds of ppm, so the slope is 1. */
#define LENS_GPU_MIN_SLOPE_SPAN_NS 50000000ull

#endif
