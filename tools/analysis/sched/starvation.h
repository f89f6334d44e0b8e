/* Starvation of proxy progress threads: the probe's scheduler samples
 * (LENS_CHUNK_SCHED, host tids) joined with the plugin's proxy threads and the
 * KernelCh / ProxyOp / ProxyStep events they delivered.
 *
 * lens_analyze_starvation() (declared weak in analyses.h) sets
 * LENS_ACC_STARVED, acc.starved_ns and acc.sched_sample. A starvation interval
 * is a RUNQ_WAIT or PREEMPT sample (the thread was runnable and not running)
 * of at least min_wait_ns; OFFCPU sleeps are the thread's own choice and are
 * not starvation. Windows (docs/sched.md): ProxyOp/ProxyStep start..stop;
 * KernelCh the lags of its notices behind the mapped GPU start/stop (run the
 * GPU analysis first), else the proxy's previous pass .. stop notice.
 *
 * Thread match: a sample belongs to plugin thread T of process P when
 * (sample.host_tid == T.outer_tid and sample.host_pid == P.outer_pid), or,
 * when the plugin ran in a pid namespace it could not see out of,
 * sample.ns_tid == T.tid (ns_tid comes from the registry translation). */
#ifndef NCCL_LENS_STARVATION_H
#define NCCL_LENS_STARVATION_H

#include <stdint.h>
#include <stdio.h>

#include "lensread.h"

/* 1 if sample s belongs to thread index t of the model. */
int lens_starvation_sample_matches(const struct lens_model *m, const struct lens_sched_sample *s, int32_t t);

/* The per-thread report of one model's probe samples, owning what it keeps
 * (no index into the model), so that the reports of host groups read one
 * after the other merge (tools/cli/passes.h): a thread's samples all come
 * from its host's probe trace, which is in one group. */
#define LENS_STARV_MAX_CULPRITS 64
struct lens_starv_culprit { uint32_t pid, tid; char comm[16]; uint64_t waits, wait_ns; };
struct lens_starv_thread {
  uint32_t host_pid, host_tid, ns_tid;
  int plugin_thread;                 /* 1: the samples are of this plugin thread (below) */
  int64_t plugin_pid, plugin_tid, proxy_rank; /* -1 unknown */
  uint64_t runq, preempt, offcpu, wait_ns, worst_ns, worst_start, flagged;
  size_t n_culprits;
  struct lens_starv_culprit c[LENS_STARV_MAX_CULPRITS]; /* by wait, longest first */
  uint64_t other_ns;                 /* culprits past LENS_STARV_MAX_CULPRITS */
};
struct lens_starvation {
  struct lens_starv_thread *threads; size_t n_threads;
  size_t n_samples;                  /* scheduler samples read */
  uint64_t flagged_events;           /* events marked LENS_ACC_STARVED */
};
/* 0, or -1 out of memory (s empty). */
int lens_starvation_gather(const struct lens_model *m, struct lens_starvation *s);
/* Appends part's threads (in the order the parts come) and sums its counts. 0 / -1. */
int lens_starvation_merge(struct lens_starvation *into, const struct lens_starvation *part);
void lens_starvation_free(struct lens_starvation *s);
void lens_starvation_print_text(FILE *f, const struct lens_starvation *s);
void lens_starvation_print_json(FILE *f, const struct lens_starvation *s); /* the object below */

/* Per watched thread (host tid): waits, worst wait, top culprits, flagged
 * events, of one model (gather + print). Called by `report` when linked
 * (weak there). */
void lens_print_starvation(FILE *f, const struct lens_model *m);
/* The same as one JSON object (no trailing newline):
 * {"threads":[{"host_pid","host_tid","ns_tid","plugin_pid","plugin_tid","proxy_rank",
 *   "runq_waits","preempts","offcpu_sleeps","wait_ns","worst_wait_ns","worst_start_mono_ns",
 *   "flagged_events","culprits":[{"comm","pid","tid","waits","wait_ns"}]}],
 *  "flagged_events":N} */
void lens_json_starvation(FILE *f, const struct lens_model *m);

#endif
