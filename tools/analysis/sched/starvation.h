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

/* Per watched thread (host tid): waits, worst wait, top culprits, flagged
 * events. Called by `summary` when linked (weak there). */
void lens_print_starvation(FILE *f, const struct lens_model *m);
/* The same as one JSON object (no trailing newline):
 * {"threads":[{"host_pid","host_tid","ns_tid","plugin_pid","plugin_tid","proxy_rank",
 *   "runq_waits","preempts","offcpu_sleeps","wait_ns","worst_wait_ns","worst_start_mono_ns",
 *   "flagged_events","culprits":[{"comm","pid","tid","waits","wait_ns"}]}],
 *  "flagged_events":N} */
void lens_json_starvation(FILE *f, const struct lens_model *m);

#endif
