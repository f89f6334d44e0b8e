#define _GNU_SOURCE
#include "plugin_driver.h"
#include "../lens_test_tmp.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *plugin_path(void) { return LENS_BUILD_DIR "/lib/libnccl-profiler-lens.so"; }

int plugin_open(struct plugin *p, const char *path) {
  memset(p, 0, sizeof *p);
  p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!p->dl) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    return -1;
  }
  p->v6 = dlsym(p->dl, "ncclProfiler_v6");
  p->v5 = dlsym(p->dl, "ncclProfiler_v5");
  p->v4 = dlsym(p->dl, "ncclProfiler_v4");
  return p->v5 ? 0 : -1;
}

void plugin_close(struct plugin *p) {
  if (p->dl) dlclose(p->dl);
  memset(p, 0, sizeof *p);
}

static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[64][600];
static int g_nlog;

void test_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&g_log_mu);
  if (g_nlog < 64) snprintf(g_log[g_nlog++], sizeof g_log[0], "%d %lx %s", level, flags, buf);
  pthread_mutex_unlock(&g_log_mu);
  if (getenv("TEST_VERBOSE")) fprintf(stderr, "log: %s\n", buf);
}

int test_log_count(const char *needle) {
  int n = 0;
  pthread_mutex_lock(&g_log_mu);
  for (int i = 0; i < g_nlog; i++) n += strstr(g_log[i], needle) != NULL;
  pthread_mutex_unlock(&g_log_mu);
  return n;
}

void test_log_clear(void) {
  pthread_mutex_lock(&g_log_mu);
  g_nlog = 0;
  pthread_mutex_unlock(&g_log_mu);
}

void d5_coll(lens_nccl_descr_v5_t *d, void *parent, const char *func) {
  memset(d, 0, sizeof *d);
  d->type = LENS_EV_COLL;
  d->parentObj = parent;
  d->coll.func = func;
  d->coll.datatype = "ncclFloat32";
  d->coll.algo = "RING";
  d->coll.proto = "SIMPLE";
  d->coll.count = 1024;
  d->coll.nChannels = 2;
}

void d5_proxy_op(lens_nccl_descr_v5_t *d, void *parent, int pid) {
  memset(d, 0, sizeof *d);
  d->type = LENS_EV_PROXY_OP;
  d->parentObj = parent;
  d->proxyOp.pid = pid;
  d->proxyOp.channelId = 3;
  d->proxyOp.peer = 1;
  d->proxyOp.nSteps = 4;
  d->proxyOp.isSend = 1;
}

void trace_path_for(char *out, size_t cap, const char *dir, int pid) {
  char host[64] = "unknown";
  gethostname(host, sizeof host);
  host[63] = 0;
  snprintf(out, cap, "%s/nccl-lens-%s-%d.lens", dir, host, pid);
}

void make_tmp_dir(char *out, size_t cap, const char *tag) { lens_test_tmpdir(out, cap, tag); }
