/* Library detection (see nccl_lib.h). NCCL 2.31.2 is the first NVIDIA
 * release whose v7 descriptor has userTag and the first that reports
 * KernelCh from its own profiler thread (spec nccl-2.31.md §3, §4). */
#define _GNU_SOURCE
#include "nccl_lib.h"

#include <dlfcn.h>
#include <stddef.h>

#include "log.h"
#include "nccl-lens/trace_format.h"

struct lens_lib_info lens_lib;
uint32_t lens_kernel_ch_role = LENS_ROLE_PROXY;

#define LENS_NCCL_VERSION_PROFILER_THREAD 23100

/* Symbols only RCCL exports: its native version call, its MSCCL entry points,
 * its AllToAllv. Any one of them makes the library RCCL. */
static const char *const k_rccl_only[] = {"rcclGetVersion", "mscclLoadAlgo", "ncclAllToAllv"};

int lens_lib_tags_allowed(uint32_t version, uint32_t kind) {
  return kind == LENS_LIB_NCCL && version >= LENS_NCCL_VERSION_USER_TAG;
}

static void *lookup(void *handle, const char *name) { return handle ? dlsym(handle, name) : NULL; }

void lens_lib_detect(lens_nccl_logger_t logfn, int api_version) {
  struct lens_lib_info info = {0};
  void *lib = NULL;
  Dl_info di;
  if (logfn && dladdr((void *)logfn, &di) && di.dli_fname)
    lib = dlopen(di.dli_fname[0] ? di.dli_fname : NULL, RTLD_LAZY | RTLD_NOLOAD);
  typedef int (*get_version_t)(int *);
  get_version_t gv = (get_version_t)lookup(lib, "ncclGetVersion");
  void *scope = lib;
  if (!gv) {
    scope = RTLD_DEFAULT;
    gv = (get_version_t)dlsym(RTLD_DEFAULT, "ncclGetVersion");
  }
  int v = 0;
  if (gv && gv(&v) == 0 && v > 0) {
    info.version = (uint32_t)v;
    info.kind = LENS_LIB_NCCL;
    for (size_t i = 0; i < sizeof k_rccl_only / sizeof k_rccl_only[0]; i++)
      if (dlsym(scope, k_rccl_only[i])) info.kind = LENS_LIB_RCCL;
  }
  if (lib) dlclose(lib);
  if (lens_lib_tags_allowed(info.version, info.kind)) info.flags |= LENS_LIB_F_USER_TAGS;
  /* KernelCh moved to the profiler thread in 2.31.2; unknown versions go by
   * the table NCCL chose (v7 is looked up first from 2.31 on). */
  int profiler_thread = info.kind == LENS_LIB_NCCL ? info.version >= LENS_NCCL_VERSION_PROFILER_THREAD
                                                   : info.kind == LENS_LIB_UNKNOWN && api_version >= 7;
  lens_kernel_ch_role = profiler_thread ? LENS_ROLE_PROFILER : LENS_ROLE_PROXY;
  __atomic_store_n(&lens_lib.version, info.version, __ATOMIC_RELAXED);
  __atomic_store_n(&lens_lib.kind, info.kind, __ATOMIC_RELAXED);
  __atomic_store_n(&lens_lib.flags, info.flags, __ATOMIC_RELAXED);
  if (api_version >= 7 && !(info.flags & LENS_LIB_F_USER_TAGS))
    lens_log(LENS_LOG_INFO, "nccl-lens: %s %u: user tags are not read from v7 descriptors",
             info.kind == LENS_LIB_RCCL ? "RCCL" : info.kind == LENS_LIB_NCCL ? "NCCL" : "unknown library",
             info.version);
}
