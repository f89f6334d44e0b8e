/* Optional controls exported by libnccl-profiler-lens.so, for applications
 * (dlsym them; they are absent in other plugins). */
#ifndef NCCL_LENS_CONTROL_H
#define NCCL_LENS_CONTROL_H
#ifdef __cplusplus
extern "C" {
#endif
/* Change the activation mask NCCL reads, at run time. Takes effect for the
 * next nccl* call (NCCL snapshots the mask per enqueue). Returns the old mask,
 * or -1 when no communicator is initialised. */
int ncclLensSetEventMask(int mask);
#ifdef __cplusplus
}
#endif
#endif
