/* Loading libcupti at run time. The plugin never links it: on a machine
 * without CUPTI (or with one too old for the record layouts we read) the
 * plugin must still load and run, just without kernel records. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_internal.h"

static struct lens_cupti_fns fns;
static void *handle;
static int loaded;
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;

int lens_cupti_loaded_by_us(void) { return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE); }

const char *lens_cupti_strerror(const struct lens_cupti_fns *f, CUptiResult r) {
  const char *s = NULL;
  if (f && f->GetResultString && f->GetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "unknown CUPTI result";
}

static void *open_first(char *why, size_t why_len) {
  const char *override = getenv("NCCL_LENS_CUPTI_PATH");
  if (override && *override) {
    void *h = dlopen(override, RTLD_NOW | RTLD_LOCAL);
    if (!h) snprintf(why, why_len, "cannot load NCCL_LENS_CUPTI_PATH=%s: %s", override, dlerror());
    return h;
  }
  static const char *const names[] = {"libcupti.so.13", "libcupti.so"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  snprintf(why, why_len, "libcupti.so.13 not found (set NCCL_LENS_CUPTI_PATH or LD_LIBRARY_PATH)");
  return NULL;
}

#define RESOLVE(field, sym)                                                   \
  do {                                                                        \
    *(void **)&t.field = dlsym(h, #sym);                                      \
    if (!t.field) {                                                           \
      snprintf(why, why_len, "libcupti lacks %s (wrong or too old library)", #sym); \
      goto fail;                                                              \
    }                                                                         \
  } while (0)

const struct lens_cupti_fns *lens_cupti_load(char *why, size_t why_len) {
  pthread_mutex_lock(&load_mu);
  if (loaded) {
    pthread_mutex_unlock(&load_mu);
    return &fns;
  }
  struct lens_cupti_fns t;
  memset(&t, 0, sizeof(t));
  void *h = open_first(why, why_len);
  if (!h) goto out;
  RESOLVE(GetVersion, cuptiGetVersion);
  RESOLVE(GetResultString, cuptiGetResultString);
  RESOLVE(Subscribe, cuptiSubscribe);
  RESOLVE(Unsubscribe, cuptiUnsubscribe);
  RESOLVE(ActivityRegisterTimestampCallback, cuptiActivityRegisterTimestampCallback);
  RESOLVE(ActivityRegisterCallbacks, cuptiActivityRegisterCallbacks);
  RESOLVE(ActivityEnable, cuptiActivityEnable);
  RESOLVE(ActivityDisable, cuptiActivityDisable);
  RESOLVE(ActivityFlushAll, cuptiActivityFlushAll);
  RESOLVE(ActivityGetNumDroppedRecords, cuptiActivityGetNumDroppedRecords);
  RESOLVE(ActivityPushExternalCorrelationId, cuptiActivityPushExternalCorrelationId);
  RESOLVE(ActivityPopExternalCorrelationId, cuptiActivityPopExternalCorrelationId);
  CUptiResult r = t.GetVersion(&t.version);
  if (r != CUPTI_SUCCESS) {
    snprintf(why, why_len, "cuptiGetVersion failed: %s", lens_cupti_strerror(&t, r));
    goto fail;
  }
  if (t.version < LENS_CUPTI_MIN_VERSION) {
    snprintf(why, why_len, "libcupti API version %u is older than %u (CUDA 13.0)", t.version,
             LENS_CUPTI_MIN_VERSION);
    goto fail;
  }
  fns = t;
  handle = h;
  __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE);
  goto out;
fail:
  /* Nothing of ours was registered with it yet, so closing is safe. */
  dlclose(h);
out:
  pthread_mutex_unlock(&load_mu);
  return loaded ? &fns : NULL;
}
