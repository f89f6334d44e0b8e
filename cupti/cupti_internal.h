/* Internals of the CUPTI emitter (the cupti folder): the libcupti entry points we
 * resolve at run time, and the pieces split across files (loading, detecting
 * other CUPTI users, activity buffers, the session). Nothing here is linked
 * against libcupti: the plugin must load where CUPTI is absent. */
#ifndef NCCL_LENS_CUPTI_INTERNAL_H
#define NCCL_LENS_CUPTI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

/* Oldest CUPTI whose record layouts (CUpti_ActivityKernel10) we read. */
#define LENS_CUPTI_MIN_VERSION 130000u

/* Entry points, typed from CUPTI's own prototypes (no link dependency). */
struct lens_cupti_fns {
  __typeof__(&cuptiGetVersion) GetVersion;
  __typeof__(&cuptiGetResultString) GetResultString;
  __typeof__(&cuptiSubscribe) Subscribe;
  __typeof__(&cuptiUnsubscribe) Unsubscribe;
  __typeof__(&cuptiActivityRegisterTimestampCallback) ActivityRegisterTimestampCallback;
  __typeof__(&cuptiActivityRegisterCallbacks) ActivityRegisterCallbacks;
  __typeof__(&cuptiActivityEnable) ActivityEnable;
  __typeof__(&cuptiActivityDisable) ActivityDisable;
  __typeof__(&cuptiActivityFlushAll) ActivityFlushAll;
  __typeof__(&cuptiActivityGetNumDroppedRecords) ActivityGetNumDroppedRecords;
  __typeof__(&cuptiActivityPushExternalCorrelationId) ActivityPushExternalCorrelationId;
  __typeof__(&cuptiActivityPopExternalCorrelationId) ActivityPopExternalCorrelationId;
  uint32_t version; /* cuptiGetVersion */
};

/* cupti_load.c: dlopen libcupti (NCCL_LENS_CUPTI_PATH, else libcupti.so.13,
 * else libcupti.so) with RTLD_NOW|RTLD_LOCAL, resolve every entry point and
 * check the version. Returns the table, or NULL with a reason in why. Loads
 * once per process; never dlcloses (CUPTI keeps our callbacks and threads). */
const struct lens_cupti_fns *lens_cupti_load(char *why, size_t why_len);
/* Did we load libcupti ourselves (so a mapped libcupti is ours)? */
int lens_cupti_loaded_by_us(void);
/* "CUPTI_ERROR_..." for a result, never NULL. */
const char *lens_cupti_strerror(const struct lens_cupti_fns *f, CUptiResult r);

/* cupti_detect.c: another CUPTI user in this process? Returns 1 and a
 * description in who (env var or mapped library), else 0. A libcupti that
 * we mapped ourselves does not count. */
int lens_cupti_other_user(char *who, size_t who_len);

/* cupti_buffers.c: the activity-buffer and timestamp callbacks. */
void CUPTIAPI lens_cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void CUPTIAPI lens_cupti_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size,
                                          size_t valid_size);
uint64_t CUPTIAPI lens_cupti_timestamp_mono_ns(void);
/* Tells the buffer callbacks which table to use for the dropped-record count. */
void lens_cupti_buffers_bind(const struct lens_cupti_fns *f);
/* Bytes per activity buffer and the most buffers lent to CUPTI at once:
 * beyond that CUPTI drops records (and counts them) rather than the job
 * growing without bound. */
#define LENS_CUPTI_BUFFER_BYTES (4u << 20)
#define LENS_CUPTI_MAX_BUFFERS_OUT 16
/* Buffers lent to CUPTI and not yet returned (for tests and teardown). */
int lens_cupti_buffers_out(void);

#endif
