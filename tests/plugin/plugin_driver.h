/* Test helper: drives a profiler plugin .so through the ABI only, the way
 * NCCL does (dlopen RTLD_NOW|RTLD_LOCAL, dlsym the table, v5 init order). */
#ifndef NCCL_LENS_TESTS_PLUGIN_DRIVER_H
#define NCCL_LENS_TESTS_PLUGIN_DRIVER_H

#include "nccl-lens/nccl_profiler_abi.h"

struct plugin {
  void *dl;
  lens_nccl_profiler_v5_t *v5;
  lens_nccl_profiler_v6_t *v6;
  lens_nccl_profiler_v4_t *v4;
};

/* Path of the built plugin. */
const char *plugin_path(void);
int plugin_open(struct plugin *p, const char *path);
void plugin_close(struct plugin *p);

/* A logger with NCCL's variadic signature that keeps the lines. */
void test_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);
int test_log_count(const char *needle); /* lines containing needle */
void test_log_clear(void);

/* Descriptor builders (zeroed, on the caller's stack). */
void d5_coll(lens_nccl_descr_v5_t *d, void *parent, const char *func);
void d5_proxy_op(lens_nccl_descr_v5_t *d, void *parent, int pid);

/* The trace file the plugin writes for this process in dir. */
void trace_path_for(char *out, size_t cap, const char *dir, int pid);
/* mkdtemp under /dev/shm or /tmp */
void make_tmp_dir(char *out, size_t cap, const char *tag);

#endif
