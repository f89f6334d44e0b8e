/* Checks over a recorded NVTX log (nvtx_inject.h) shared by the NVTX tests. */
#ifndef NCCL_LENS_TESTS_NVTX_CHECK_H
#define NCCL_LENS_TESTS_NVTX_CHECK_H

#include <stddef.h>

#include "nvtx_inject.h"

/* Path of the test injection library in this build. */
#define NVTX_INJECT_PATH LENS_BUILD_DIR "/lib/libnccl-lens-nvtx-inject.so"

/* The injection's log if NVTX already loaded it, else NULL (never loads it). */
const struct nvtx_inject_log *nvtx_log_if_loaded(const char *path);
/* A log written by a child process (NVTX_INJ_DUMP); malloc'd, NULL on error. */
struct nvtx_inject_log *nvtx_log_load(const char *path);
int nvtx_domain_index(const struct nvtx_inject_log *log, const char *name); /* -1 if absent */
int nvtx_category_named(const struct nvtx_inject_log *log, int domain, unsigned id, const char *name);
/* k-th payload string of an event (CSTRING fields in schema order), "" if absent. */
const char *nvtx_ev_str(const struct nvtx_ev *e, int k);

struct nvtx_range_stats {
  int pushes, pops, starts, ends;
  int max_open_per_thread; /* start/end ranges open at once on the thread that started them */
};
/* Every push popped on its thread, no pop underflow, every started id ended
 * exactly once, no end of an unknown id. Returns 0, or -1 with err filled. */
int nvtx_check_ranges(const struct nvtx_inject_log *log, int domain, struct nvtx_range_stats *st, char *err,
                      size_t errlen);

#endif
