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

/* Starvation (eBPF engineer, tools/analysis/sched/starvation.c): merge probe samples
 * with the plugin's events by thread (outer tid) and time; set
 * LENS_ACC_STARVED, acc.starved_ns, acc.sched_sample on every KernelCh,
 * ProxyOp and ProxyStep whose timing overlaps a starvation interval of its
 * proxy thread. min_wait_ns: ignore shorter waits. Returns the number of
 * flagged events. */
__attribute__((weak)) long lens_analyze_starvation(struct lens_model *m, uint64_t min_wait_ns);

#endif
