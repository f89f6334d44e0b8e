/* Finding other CUPTI users before we touch CUPTI. CUDA 13.0's CUPTI allows a
 * single subscriber per process and its activity buffers are process-wide: a
 * second client (Kineto, Nsight Systems, compute-sanitizer) would fail or
 * lose records. In auto mode we step aside when any of these is seen. */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_internal.h"

struct mapped_search {
  char *who;
  size_t who_len;
  int found;
};

static int find_mapped_cupti(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct mapped_search *s = arg;
  const char *name = info->dlpi_name;
  if (!name || !*name) return 0;
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (strncmp(base, "libcupti", 8) != 0) return 0;
  snprintf(s->who, s->who_len, "%s is already loaded in this process", name);
  s->found = 1;
  return 1;
}

int lens_cupti_other_user(char *who, size_t who_len) {
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  if (inj && *inj) {
    snprintf(who, who_len, "CUDA_INJECTION64_PATH=%s (a CUDA tool is injected)", inj);
    return 1;
  }
  const char *nvtx = getenv("NVTX_INJECTION64_PATH");
  if (nvtx && strstr(nvtx, "cupti")) {
    snprintf(who, who_len, "NVTX_INJECTION64_PATH=%s (libcupti handles NVTX)", nvtx);
    return 1;
  }
  if (lens_cupti_loaded_by_us()) return 0; /* the mapped libcupti is ours */
  struct mapped_search s = {who, who_len, 0};
  dl_iterate_phdr(find_mapped_cupti, &s);
  return s.found;
}
