/* Logging through NCCL's logger (the logfn of the latest init); before any
 * init, or for v1-v3, to stderr when NCCL_LENS_DEBUG=1. Never on the hot path. */
#ifndef NCCL_LENS_PLUGIN_LOG_H
#define NCCL_LENS_PLUGIN_LOG_H

#include "nccl-lens/nccl_profiler_abi.h"

void lens_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs only the first time for a given flag (an int the caller owns, zeroed).
 * Also mirrors the line into the trace as a NOTE chunk. */
void lens_log_once(int *once, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Writes an already formatted line into the trace as a NOTE (no logging). */
void lens_log_mirror(int level, const char *line);

#endif
