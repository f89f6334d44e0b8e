/* A stand-in libcupti for the plugin's CUPTI session tests (loaded through
 * NCCL_LENS_CUPTI_PATH): implements the entry points the plugin resolves,
 * records every call in order, and fails on request:
 *   FAKE_CUPTI_VERSION=N        cuptiGetVersion result (default 130001)
 *   FAKE_CUPTI_FAIL=name[:n]    the n-th call (default 1st) of that function fails (CUPTI_ERROR_UNKNOWN)
 *   FAKE_CUPTI_HELD=1           cuptiSubscribe answers MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
 * FlushAll hands one buffer with one external-correlation record back through
 * the registered callbacks, as CUPTI's worker would. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#define MAX_CALLS 256
static char calls[MAX_CALLS][64];
static int n_calls;
static CUpti_BuffersCallbackRequestFunc req_cb;
static CUpti_BuffersCallbackCompleteFunc done_cb;
static CUpti_TimestampCallbackFunc ts_cb;
static uint64_t stack[64];
static int depth;

__attribute__((visibility("default"))) int fake_cupti_n_calls(void) { return n_calls; }
__attribute__((visibility("default"))) const char *fake_cupti_call(int i) { return i < n_calls ? calls[i] : ""; }
__attribute__((visibility("default"))) uint64_t fake_cupti_now(void) { return ts_cb ? ts_cb() : 0; }

static CUptiResult call(const char *fmt, const char *name, long arg) {
  static int counts[64];
  static char names[64][48];
  if (n_calls < MAX_CALLS) snprintf(calls[n_calls++], sizeof(calls[0]), fmt, name, arg);
  const char *f = getenv("FAKE_CUPTI_FAIL");
  if (!f) return CUPTI_SUCCESS;
  size_t len = strcspn(f, ":");
  if (strlen(name) != len || strncmp(f, name, len)) return CUPTI_SUCCESS;
  int nth = f[len] == ':' ? atoi(f + len + 1) : 1;
  int slot = 0;
  while (slot < 63 && names[slot][0] && strcmp(names[slot], name)) slot++;
  snprintf(names[slot], sizeof(names[slot]), "%s", name);
  return ++counts[slot] == nth ? CUPTI_ERROR_UNKNOWN : CUPTI_SUCCESS;
}

CUptiResult cuptiGetVersion(uint32_t *v) {
  const char *e = getenv("FAKE_CUPTI_VERSION");
  *v = e ? (uint32_t)atoi(e) : 130001;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiGetResultString(CUptiResult r, const char **s) {
  *s = r == CUPTI_ERROR_UNKNOWN ? "CUPTI_ERROR_UNKNOWN"
       : r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                                                              : "CUPTI_OTHER";
  return CUPTI_SUCCESS;
}
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud) {
  (void)cb, (void)ud;
  *s = (CUpti_SubscriberHandle)0x1;
  CUptiResult r = call("%s%ld", "cuptiSubscribe", 0);
  if (getenv("FAKE_CUPTI_HELD")) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  return r;
}
CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s) { (void)s; return call("%s%ld", "cuptiUnsubscribe", 0); }
CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
  ts_cb = f;
  return call("%s%ld", "cuptiActivityRegisterTimestampCallback", 0);
}
CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r, CUpti_BuffersCallbackCompleteFunc c) {
  req_cb = r, done_cb = c;
  return call("%s%ld", "cuptiActivityRegisterCallbacks", 0);
}
CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) { return call("%s %ld", "cuptiActivityEnable", k); }
CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) { return call("%s %ld", "cuptiActivityDisable", k); }
CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId id, uint8_t on) {
  return call("%s %ld", on ? "cuptiActivityEnableDriverApi" : "cuptiActivityDisableDriverApi", (long)id);
}
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *n) {
  (void)c, (void)s;
  *n = 3; /* pretend CUPTI lost some: the plugin must count them */
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  CUptiResult r = call("%s %ld", "cuptiActivityFlushAll", (long)flag);
  if (r == CUPTI_SUCCESS && req_cb && done_cb) {
    uint8_t *buf = NULL;
    size_t size = 0, max = 0;
    req_cb(&buf, &size, &max);
    if (buf) {
      CUpti_ActivityExternalCorrelation *x = (CUpti_ActivityExternalCorrelation *)buf;
      memset(x, 0, sizeof(*x));
      x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
      x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
      x->externalId = 0xABCDEF;
      x->correlationId = 9;
      done_cb(NULL, 0, buf, size, sizeof(*x));
    }
  }
  return r;
}
CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind k, uint64_t id) {
  if (depth < 64) stack[depth++] = id;
  return call("%s %ld", k == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 ? "push(CUSTOM2)" : "push(other)", (long)id);
}
CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind k, uint64_t *last) {
  if (!depth) return CUPTI_ERROR_QUEUE_EMPTY;
  *last = stack[--depth];
  return call("%s %ld", k == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 ? "pop(CUSTOM2)" : "pop(other)", (long)*last);
}
