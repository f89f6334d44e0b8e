/* A recording NVTX tool for tests: loaded through NVTX_INJECTION64_PATH, it
 * keeps every NVTX call it receives in memory. A test reaches the log by
 * dlopen()ing the same path (the loader already holds it, so it is the same
 * instance) and dlsym("nvtx_inject_log"). */
#ifndef NCCL_LENS_TESTS_NVTX_INJECT_H
#define NCCL_LENS_TESTS_NVTX_INJECT_H

#include <stdint.h>

enum nvtx_ev_kind {
  NVTX_EV_INIT = 1,
  NVTX_EV_DOMAIN_CREATE,   /* domain = new index, msg = name */
  NVTX_EV_REGISTER_STRING, /* id = string index, msg */
  NVTX_EV_NAME_CATEGORY,   /* id = category, msg */
  NVTX_EV_PUSH,            /* level = depth after push, msg, category, payload */
  NVTX_EV_POP,             /* level = depth before pop (-1: underflow) */
  NVTX_EV_START,           /* id = range id, msg, category */
  NVTX_EV_END,             /* id = range id, payload when ended with nvtxRangeEndPayload */
  NVTX_EV_MARK,            /* msg, category, payload */
  NVTX_EV_NAME_THREAD,     /* id = OS tid named, msg */
  NVTX_EV_SCHEMA,          /* id = schema id, value = numEntries, size = static size, msg = name */
  NVTX_EV_COUNTER_REG,     /* id = counter id, value = scope, msg = name */
  NVTX_EV_COUNTER_SAMPLE,  /* id = counter id, value */
  NVTX_EV_IS_ENABLED,
  NVTX_EV_DOMAIN_OTHER,    /* any core call we do not model: msg = its name */
};

#define NVTX_INJ_MSG 160
#define NVTX_INJ_PAYLOAD 128

struct nvtx_ev {
  uint64_t seq;
  int kind;
  int domain;    /* index into domains[], -1 = default domain */
  uint32_t tid;  /* OS tid of the caller */
  int32_t level;
  uint32_t category;
  uint32_t color; /* ARGB when the caller set one, else 0 */
  uint64_t id;
  int64_t value;
  uint64_t schema_id; /* payload attached (0 = none) */
  uint32_t size;      /* payload bytes copied, or schema static size */
  uint8_t payload[NVTX_INJ_PAYLOAD];
  char msg[NVTX_INJ_MSG];
};

#define NVTX_INJ_MAX_EVENTS (1u << 16)
#define NVTX_INJ_MAX_DOMAINS 16

struct nvtx_inject_log {
  uint64_t count;   /* events recorded (capped at NVTX_INJ_MAX_EVENTS) */
  uint64_t dropped; /* events past the cap */
  int n_domains;
  char domains[NVTX_INJ_MAX_DOMAINS][64];
  int ext_payload_inits, ext_counter_inits; /* InitializeInjectionNvtxExtension calls per module */
  struct nvtx_ev ev[NVTX_INJ_MAX_EVENTS];
};

typedef const struct nvtx_inject_log *(*nvtx_inject_log_fn)(void);
typedef void (*nvtx_inject_reset_fn)(void);
typedef uint64_t (*nvtx_inject_calls_fn)(void); /* calls seen in NVTX_INJ_COUNT_ONLY mode */

#endif
