/* Analyses over a loaded model. Each lives in its own file(s) of
 * tools/reader/ and is declared weak here, so a tool calls it only if it is
 * linked in (if (lens_analyze_gpu) ...). They fill lens_event.acc,
 * model->kernels and model->clock_maps. */
#ifndef NCCL_LENS_ANALYSES_H
#define NCCL_LENS_ANALYSES_H

#include "lensread.h"

/* GPU side (CUPTI engineer, tools/analysis/gpu/gpu_*.c): parse CUPTI blobs and extra
 * buffers with libcupti's record walker, join ext id -> correlation id ->
 * kernel -> KernelLaunch -> Coll/P2p -> KernelCh, fit per-GPU clock maps,
 * map KernelCh/kernels to host time, set LENS_ACC_* flags (stop before start,
 * non-monotonic, shared timer, ring overrun, outside kernel, no kernel record,
 * foreign ext id, no clock map) and acc.time_source/notice_lag_ns.
 * Returns 0, or -1 with a one-line reason in err. */
__attribute__((weak)) int lens_analyze_gpu(struct lens_model *m, char *err, size_t err_len);
/* Add raw CUPTI activity-buffer bytes saved from a GPU machine (a file exactly
 * as CUPTI delivered the buffer). Call before lens_analyze_gpu. */
__attribute__((weak)) int lens_model_add_cupti_file(struct lens_model *m, const char *path, char *err, size_t err_len);

/* The GPU memo (tools/analysis/gpu/gpu_memo.c): what a time window of the
 * same files needs of the whole run's GPU analysis that its own KernelCh
 * cannot give (the clock maps fitted on every KernelCh, the flags that
 * compare a KernelCh with the others of its channel), a few hundred bytes a
 * GPU and second of GPU time.
 * lens_gpu_memo_save: of the analysis just run on m (lens_analyze_gpu, before
 * any selection): *blob (malloc'ed) and *len; 0, 1 when it cannot be
 * memoized (CUPTI evidence, an ambiguous KernelCh id), -1 out of memory.
 * lens_analyze_gpu_memo: lens_analyze_gpu with those parts from a memo of
 * the same files, for a model that may hold only some of their KernelCh (a
 * window loaded with kch_no_light): the same results for the KernelCh it
 * holds. 0; 1 when the memo is not this model's (analyse it whole
 * instead, from all its KernelCh); -1 with err. */
__attribute__((weak)) int lens_gpu_memo_save(const struct lens_model *m, void **blob, size_t *len);
__attribute__((weak)) int lens_analyze_gpu_memo(struct lens_model *m, const void *blob, size_t len, char *err,
                                                size_t err_len);

/* Starvation (eBPF engineer, tools/analysis/sched/starvation.c): merge probe samples
 * with the plugin's events by thread (outer tid) and time; set
 * LENS_ACC_STARVED, acc.starved_ns, acc.sched_sample on every KernelCh,
 * ProxyOp and ProxyStep whose timing overlaps a starvation interval of its
 * proxy thread. min_wait_ns: ignore shorter waits. Returns the number of
 * flagged events. */
__attribute__((weak)) long lens_analyze_starvation(struct lens_model *m, uint64_t min_wait_ns);

#endif
