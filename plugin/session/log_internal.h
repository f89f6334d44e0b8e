/* Core-side controls of the logger (log.h is the emitters' view). */
#ifndef NCCL_LENS_PLUGIN_LOG_INTERNAL_H
#define NCCL_LENS_PLUGIN_LOG_INTERNAL_H

#include "nccl-lens/nccl_profiler_abi.h"

/* The logfn of the latest init (NULL: stderr when NCCL_LENS_DEBUG=1). */
void lens_log_set_logger(lens_nccl_logger_t fn);

#endif
