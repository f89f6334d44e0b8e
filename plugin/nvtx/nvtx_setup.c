/* NVTX emitter setup and teardown: domain "nccl-lens", registered strings,
 * categories, payload schemas and counters, then the decision whether the
 * hot path emits at all.
 *
 * NCCL_LENS_NVTX=0 makes no NVTX call whatsoever (so no tool is even loaded
 * by our NVTX instance). With no tool attached, nvtxDomainCreateA returns
 * NULL (or nvtxDomainIsEnabled says 0) and lens_nvtx_active stays 0: the
 * core then never calls the hot-path hooks. */
#include <stddef.h>
#include <time.h>

#include "config.h"
#include "log.h"
#include "nvtx_emit.h"

struct lens_nvtx_globals lens_nvtx_g;
static int setup_done; /* setup runs at the first init; a later setup only re-arms */
static int setup_ok;

uint64_t lens_nvtx_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define ENTRY(t, n, d, s, f) \
  { 0, NVTX_PAYLOAD_ENTRY_TYPE_##t, n, d, 0, offsetof(s, f), NULL, NULL }

static const nvtxPayloadSchemaEntry_t plan_entries[] = {
    ENTRY(CSTRING, "func", "NCCL function", struct lens_nvtx_plan_payload, func),
    ENTRY(CSTRING, "algo", "algorithm (empty when predicted)", struct lens_nvtx_plan_payload, algo),
    ENTRY(CSTRING, "proto", "protocol (empty when predicted)", struct lens_nvtx_plan_payload, proto),
    ENTRY(CSTRING, "datatype", "NCCL datatype", struct lens_nvtx_plan_payload, datatype),
    ENTRY(UINT64, "bytes", "count x datatype size", struct lens_nvtx_plan_payload, bytes),
    ENTRY(UINT64, "count", "elements", struct lens_nvtx_plan_payload, count),
    ENTRY(UINT64, "seq", "seqNumber (predicted before the launch)", struct lens_nvtx_plan_payload, seq),
    ENTRY(UINT64, "commId", "NCCL commId (commHash)", struct lens_nvtx_plan_payload, comm_id),
    ENTRY(UINT64, "extCorrId", "CUPTI external correlation id (CUSTOM2) of the launch", struct lens_nvtx_plan_payload,
          ext_corr_id),
    ENTRY(INT32, "rank", "communicator rank", struct lens_nvtx_plan_payload, rank),
    ENTRY(INT32, "peer", "P2p peer", struct lens_nvtx_plan_payload, peer),
    ENTRY(UINT32, "nChannels", "channels (0 when predicted)", struct lens_nvtx_plan_payload, n_channels),
    ENTRY(UINT32, "ops", "API operations in the plan", struct lens_nvtx_plan_payload, n_ops),
    ENTRY(UINT32, "flags", "1 predicted, 2 p2p", struct lens_nvtx_plan_payload, flags),
};
static const nvtxPayloadSchemaEntry_t proxy_op_entries[] = {
    ENTRY(INT32, "channel", NULL, struct lens_nvtx_proxy_op_payload, channel),
    ENTRY(INT32, "peer", NULL, struct lens_nvtx_proxy_op_payload, peer),
    ENTRY(INT32, "isSend", NULL, struct lens_nvtx_proxy_op_payload, is_send),
    ENTRY(INT32, "nSteps", "steps announced", struct lens_nvtx_proxy_op_payload, n_steps),
    ENTRY(INT32, "chunkSize", NULL, struct lens_nvtx_proxy_op_payload, chunk_size),
    ENTRY(INT32, "rank", "originating rank", struct lens_nvtx_proxy_op_payload, rank),
    ENTRY(UINT32, "stepsStarted", NULL, struct lens_nvtx_proxy_op_payload, steps_started),
    ENTRY(UINT32, "stepsDone", NULL, struct lens_nvtx_proxy_op_payload, steps_done),
    ENTRY(UINT64, "bytes", "sum of transSize", struct lens_nvtx_proxy_op_payload, bytes),
};
static const nvtxPayloadSchemaEntry_t ch_lag_entries[] = {
    ENTRY(INT64, "lagNs", "host notice time - GPU stop time", struct lens_nvtx_ch_lag_payload, lag_ns),
    ENTRY(UINT64, "gpuStopNs", "pTimer, raw globaltimer", struct lens_nvtx_ch_lag_payload, gpu_stop_ns),
    ENTRY(UINT32, "channel", NULL, struct lens_nvtx_ch_lag_payload, channel),
};

static uint64_t register_schema(const char *name, uint64_t id, const nvtxPayloadSchemaEntry_t *e, size_t n,
                                size_t size) {
  nvtxPayloadSchemaAttr_t a = {0};
  a.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NAME | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE |
                NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
                NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
  a.name = name;
  a.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
  a.entries = e;
  a.numEntries = n;
  a.payloadStaticSize = size;
  a.schemaId = id;
  return nvtxPayloadSchemaRegister(lens_nvtx_g.domain, &a);
}

static uint64_t register_counter(const char *name, const char *desc, uint64_t id) {
  nvtxCounterAttr_t a = {0};
  a.structSize = sizeof(a);
  a.schemaId = NVTX_PAYLOAD_ENTRY_TYPE_INT64;
  a.name = name;
  a.description = desc;
  a.scopeId = NVTX_SCOPE_CURRENT_SW_THREAD; /* one curve per proxy thread (= per GPU) */
  a.counterId = id;
  return nvtxCounterRegister(lens_nvtx_g.domain, &a);
}

static void register_all(void) {
  struct lens_nvtx_globals *g = &lens_nvtx_g;
  g->str[LENS_NVTX_STR_SLEEP] = nvtxDomainRegisterStringA(g->domain, "Proxy sleep");
  g->str[LENS_NVTX_STR_ACTIVE] = nvtxDomainRegisterStringA(g->domain, "Proxy active");

  nvtxDomainNameCategoryA(g->domain, LENS_NVTX_CAT_LAUNCH, "KernelLaunch");
  nvtxDomainNameCategoryA(g->domain, LENS_NVTX_CAT_PLAN, "Plan");
  nvtxDomainNameCategoryA(g->domain, LENS_NVTX_CAT_PROXY_OP, "ProxyOp");
  nvtxDomainNameCategoryA(g->domain, LENS_NVTX_CAT_PROXY_CTRL, "ProxyCtrl");
  nvtxDomainNameCategoryA(g->domain, LENS_NVTX_CAT_KERNEL_CH, "KernelCh");

  /* A tool without the payload extension returns 0: then no payloads are
   * attached (nvtxRangeEndPayload would be a no-op and leave ranges open). */
  uint64_t a = register_schema("nccl-lens plan", LENS_NVTX_SID_PLAN, plan_entries,
                               sizeof(plan_entries) / sizeof(plan_entries[0]),
                               sizeof(struct lens_nvtx_plan_payload));
  uint64_t b = register_schema("nccl-lens ProxyOp", LENS_NVTX_SID_PROXY_OP, proxy_op_entries,
                               sizeof(proxy_op_entries) / sizeof(proxy_op_entries[0]),
                               sizeof(struct lens_nvtx_proxy_op_payload));
  uint64_t c = register_schema("nccl-lens KernelCh lag", LENS_NVTX_SID_CH_LAG, ch_lag_entries,
                               sizeof(ch_lag_entries) / sizeof(ch_lag_entries[0]),
                               sizeof(struct lens_nvtx_ch_lag_payload));
  g->payload_ok = a == LENS_NVTX_SID_PLAN && b == LENS_NVTX_SID_PROXY_OP && c == LENS_NVTX_SID_CH_LAG;

  g->counter_lag = register_counter("KernelCh notice lag (ns)",
                                    "host time when the proxy noticed a channel's end minus the GPU end, "
                                    "offset = running min per proxy thread",
                                    LENS_NVTX_CID_CH_LAG);
  g->counter_steps = register_counter("Proxy steps in flight", "ProxyStep started - stopped, per proxy thread",
                                      LENS_NVTX_CID_STEPS);
  g->counters_ok = g->counter_lag != 0 && g->counter_steps != 0;
}

void lens_nvtx_setup(void) {
  if (setup_done) { /* re-init after a last finalize, same load */
    if (setup_ok) __atomic_store_n(&lens_nvtx_active, 1, __ATOMIC_RELEASE);
    return;
  }
  setup_done = 1;
  if (!lens_config_get()->nvtx) {
    lens_log(LENS_LOG_INFO, "nccl-lens: NVTX ranges off (NCCL_LENS_NVTX=0)");
    return;
  }
  lens_nvtx_g.domain = nvtxDomainCreateA(LENS_NVTX_DOMAIN);
  if (!lens_nvtx_g.domain || !nvtxDomainIsEnabled(lens_nvtx_g.domain)) {
    lens_log(LENS_LOG_INFO, "nccl-lens: no NVTX tool attached, NVTX ranges off");
    return;
  }
  register_all();
  lens_log(LENS_LOG_INFO, "nccl-lens: NVTX ranges on in domain \"%s\" (payloads %s, counters %s)",
           LENS_NVTX_DOMAIN, lens_nvtx_g.payload_ok ? "yes" : "no",
           lens_nvtx_g.counters_ok ? "yes" : "no (lag marks instead)");
  setup_ok = 1;
  __atomic_store_n(&lens_nvtx_active, 1, __ATOMIC_RELEASE); /* publishes lens_nvtx_g */
}

void lens_nvtx_teardown(void) {
  __atomic_store_n(&lens_nvtx_active, 0, __ATOMIC_RELEASE);
  if (!setup_ok) return;
  lens_nvtx_proxy_close_all();
  const struct lens_nvtx_drops *d = &lens_nvtx_g.drops;
  uint64_t cap = __atomic_load_n(&d->proxy_ops_over_cap, __ATOMIC_RELAXED);
  uint64_t orph = __atomic_load_n(&d->proxy_ops_orphaned, __ATOMIC_RELAXED);
  uint64_t ev = __atomic_load_n(&d->steps_evicted, __ATOMIC_RELAXED);
  uint64_t deep = __atomic_load_n(&d->launch_too_deep, __ATOMIC_RELAXED);
  uint64_t noslot = __atomic_load_n(&d->no_slot, __ATOMIC_RELAXED);
  /* Lost NVTX detail (the trace file still has every event): WARN. */
  if (cap || ev || deep || noslot)
    lens_log(LENS_LOG_WARN,
             "nccl-lens: NVTX view incomplete (the trace has everything): %llu ProxyOp ranges drawn only as "
             "one \"ProxyOps past %d open\" range a thread, %llu proxy step entries evicted, %llu launches "
             "nested too deep, %llu events from threads past slot %d",
             (unsigned long long)cap, LENS_NVTX_MAX_OPEN_OPS, (unsigned long long)ev, (unsigned long long)deep,
             (unsigned long long)noslot, LENS_NVTX_MAX_SLOTS);
  /* NCCL's own behaviour (transports that never stop their ProxyOps): INFO. */
  if (orph)
    lens_log(LENS_LOG_INFO, "nccl-lens: NVTX: %llu ProxyOp ranges that NCCL never stopped were ended at proxy sleep",
             (unsigned long long)orph);
}
