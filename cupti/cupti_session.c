/* The CUPTI session: decide per NCCL_LENS_CUPTI whether to use CUPTI, take
 * it (cuptiSubscribe is the lock: one subscriber per process in CUDA 13.0),
 * enable only what the kernel join needs, push/pop external ids around
 * KernelLaunch, and give everything back at the last finalize so a later
 * profiler (PyTorch's) can subscribe. Any failure: one log line, CUPTI stays
 * off (lens_cupti_active == 0), the rest of the plugin carries on. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cupti_internal.h"
#include "hooks.h"
#include "log.h"

/* Kinds we enable, in order; CONCURRENT_KERNEL never KIND_KERNEL (it
 * serialises kernels, which can hang NCCL). DRIVER records carry the
 * correlation id that the external-correlation records point to. All driver
 * APIs, not only the launch calls: CUPTI attaches here after NCCL made its
 * CUDA context, and on a real H100 (driver 580, CUDA 13.0) per-call enabling
 * (cuptiActivityEnableDriverApi) then yields no API records, hence no
 * external correlation at all, while KIND_DRIVER does (tests/gpu,
 * docs/gpu-check.md). */
static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_DRIVER,
                                           CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

static const struct lens_cupti_fns *f;
static CUpti_SubscriberHandle subscriber;
static int subscribed;
static int setup_log_once;
static int push_fail_log_once;
static uint64_t push_failures; /* counted on the hot path, logged at teardown */

static void CUPTIAPI no_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
  (void)userdata, (void)domain, (void)cbid, (void)data; /* we subscribe only to hold the lock */
}

static void give_up(int level, const char *fmt, const char *a, const char *b) {
  char line[512];
  snprintf(line, sizeof(line), fmt, a, b);
  lens_log_once(&setup_log_once, level, "NCCL-lens: CUPTI off: %s; kernel timing from NCCL's KernelCh only",
                line);
}

static void release(size_t kinds_on) {
  for (size_t i = kinds_on; i-- > 0;) f->ActivityDisable(kinds[i]);
  if (subscribed) f->Unsubscribe(subscriber);
  subscribed = 0;
}

void lens_cupti_setup(void) {
  if (__atomic_load_n(&lens_cupti_active, __ATOMIC_ACQUIRE)) return; /* already ours */
  enum lens_cupti_mode mode = lens_config_get()->cupti;
  if (mode == LENS_CUPTI_OFF) return; /* never load libcupti */
  int level = mode == LENS_CUPTI_ON ? LENS_LOG_WARN : LENS_LOG_INFO;
  char why[384];
  why[0] = 0;
  if (mode == LENS_CUPTI_AUTO && lens_cupti_other_user(why, sizeof(why))) {
    give_up(level, "another CUPTI user: %s%s (NCCL_LENS_CUPTI=on to try anyway)", why, "");
    return;
  }
  f = lens_cupti_load(why, sizeof(why));
  if (!f) {
    give_up(level, "%s%s", why, "");
    return;
  }
  lens_cupti_buffers_bind(f);
  CUptiResult r = f->Subscribe(&subscriber, no_callback, NULL);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    give_up(level, "cuptiSubscribe: %s%s", lens_cupti_strerror(f, r), " (another tool holds CUPTI)");
    return;
  }
  if (r != CUPTI_SUCCESS) {
    give_up(level, "cuptiSubscribe: %s%s", lens_cupti_strerror(f, r), " (no GPU driver?)");
    return;
  }
  subscribed = 1;
  /* The clock goes in before any kind is enabled: switching it later would
   * mix time domains inside one session. */
  const char *step = "cuptiActivityRegisterTimestampCallback";
  size_t kinds_on = 0;
  r = f->ActivityRegisterTimestampCallback(lens_cupti_timestamp_mono_ns);
  if (r == CUPTI_SUCCESS) {
    step = "cuptiActivityRegisterCallbacks";
    r = f->ActivityRegisterCallbacks(lens_cupti_buffer_requested, lens_cupti_buffer_completed);
  }
  for (; r == CUPTI_SUCCESS && kinds_on < N_KINDS; kinds_on++) {
    step = "cuptiActivityEnable";
    r = f->ActivityEnable(kinds[kinds_on]);
    if (r != CUPTI_SUCCESS) break;
  }
  if (r != CUPTI_SUCCESS) {
    release(kinds_on);
    give_up(level, "%s: %s", step, lens_cupti_strerror(f, r));
    return;
  }
  __atomic_store_n(&lens_cupti_active, 1, __ATOMIC_RELEASE);
  lens_log(LENS_LOG_INFO, "NCCL-lens: CUPTI on (API version %u): kernel records joined by external id",
           f->version);
}

/* Hot path (NCCL's launching thread): one CUPTI call, no allocation, no I/O. */
uint64_t lens_cupti_launch_begin(uint64_t launch_event_id) {
  if (!__atomic_load_n(&lens_cupti_active, __ATOMIC_ACQUIRE) || !launch_event_id) return 0;
  if (f->ActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, launch_event_id) !=
      CUPTI_SUCCESS) {
    __atomic_fetch_add(&push_failures, 1, __ATOMIC_RELAXED);
    return 0;
  }
  return launch_event_id;
}

void lens_cupti_launch_end(uint64_t ext_id) {
  if (!ext_id || !f) return; /* popped even if teardown began: the push was ours */
  uint64_t last = 0;
  f->ActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &last);
}

void lens_cupti_teardown(void) {
  if (!__atomic_exchange_n(&lens_cupti_active, 0, __ATOMIC_ACQ_REL)) return;
  f->ActivityFlushAll(0);
  for (size_t i = N_KINDS; i-- > 0;) f->ActivityDisable(kinds[i]);
  /* Forced: also hands back buffers holding incomplete records. */
  f->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (subscribed) f->Unsubscribe(subscriber);
  subscribed = 0;
  uint64_t fails = __atomic_load_n(&push_failures, __ATOMIC_RELAXED);
  if (fails)
    lens_log_once(&push_fail_log_once, LENS_LOG_WARN,
                  "NCCL-lens: %llu CUPTI external-id pushes failed; those launches have no kernel join",
                  (unsigned long long)fails);
}

void lens_cupti_at_exit(void) {
  if (!__atomic_load_n(&lens_cupti_active, __ATOMIC_ACQUIRE)) return;
  f->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}
