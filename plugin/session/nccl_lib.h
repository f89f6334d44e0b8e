/* Which communication library runs in the process, and what that allows:
 * NVIDIA NCCL or AMD RCCL, its version code, whether v7 descriptors carry
 * userTag, and which NCCL thread reports KernelCh. Resolved once per session,
 * at the first init (off the hot path); read on the hot path as plain ints. */
#ifndef NCCL_LENS_PLUGIN_NCCL_LIB_H
#define NCCL_LENS_PLUGIN_NCCL_LIB_H

#include <stdint.h>

#include "nccl-lens/nccl_profiler_abi.h"
#include "nccl-lens/trace_format.h"

struct lens_lib_info {
  uint32_t version; /* ncclGetVersion() code, 0 = unknown */
  uint32_t kind;    /* LENS_LIB_* (trace_format.h) */
  uint32_t flags;   /* LENS_LIB_F_* */
};
extern struct lens_lib_info lens_lib;
extern uint32_t lens_kernel_ch_role; /* LENS_ROLE_PROFILER on NCCL >= 2.31, else LENS_ROLE_PROXY */

/* Finds the library through the logger NCCL passed to init (a function of
 * libnccl itself: dladdr names the library even when it was loaded with
 * RTLD_LOCAL), else through the global scope. api_version is the ncclProfiler
 * table NCCL looked up (used when no version can be found). */
void lens_lib_detect(lens_nccl_logger_t logfn, int api_version);

static inline int lens_lib_user_tags_readable(void) {
  return (__atomic_load_n(&lens_lib.flags, __ATOMIC_RELAXED) & LENS_LIB_F_USER_TAGS) != 0;
}

/* The rule, for tests: NVIDIA NCCL (not RCCL) at 2.31.2 or newer. */
int lens_lib_tags_allowed(uint32_t version, uint32_t kind);

#endif
