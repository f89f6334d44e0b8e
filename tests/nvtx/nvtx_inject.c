/* A recording NVTX tool for tests (see nvtx_inject.h). Built with
 * -DNVTX_NO_IMPL: it uses NVTX's types only and is reached through
 * InitializeInjectionNvtx2 (core, core2) and InitializeInjectionNvtxExtension
 * (payload module 2, counters module 4).
 *
 * Knobs, read at load, to test the emitter's fallbacks:
 *   NVTX_INJ_NO_PAYLOAD=1   payload module offers only nvtxDomainIsEnabled
 *   NVTX_INJ_NO_COUNTERS=1  counters module refused
 *   NVTX_INJ_COUNT_ONLY=1   record nothing, only count calls (for benchmarks:
 *                           the cost left is the caller's plus NVTX dispatch)
 *   NVTX_INJ_DUMP=<file>    at process exit, write the log there ("%p" = pid; struct
 *                           nvtx_inject_log up to ev[count]), so a test can
 *                           inspect a child process such as `nccl-lens replay` */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCounters.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "nvtx_inject.h"

#define EXPORT __attribute__((visibility("default")))

struct nvtxDomainRegistration_st { int index; };
struct nvtxStringRegistration_st { uint64_t index; char text[NVTX_INJ_MSG]; };

static struct nvtx_inject_log g_log_mem;
static struct nvtx_inject_log *g_logp = &g_log_mem; /* or a MAP_SHARED file (NVTX_INJ_DUMP) */
#define g_log (*g_logp)
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct nvtxDomainRegistration_st g_domains[NVTX_INJ_MAX_DOMAINS];
#define MAX_STRINGS 256
static struct nvtxStringRegistration_st g_strings[MAX_STRINGS];
static int g_n_strings;
static uint64_t g_next_range = 1;
static uint64_t g_next_counter = 1;

#define MAX_SCHEMAS 32
#define MAX_STR_FIELDS 4
struct schema {
  uint64_t id;
  int n_str;
  size_t str_off[MAX_STR_FIELDS]; /* offsets of CSTRING entries */
};
static struct schema g_schemas[MAX_SCHEMAS];
static int g_n_schemas;

static __thread int t_depth[NVTX_INJ_MAX_DOMAINS + 1]; /* push depth per domain, [0] = default */
static int g_count_only;
static uint64_t g_calls;
static __thread struct nvtx_ev t_sink;

static uint32_t tid(void) { return (uint32_t)syscall(SYS_gettid); }
static int dom_index(nvtxDomainHandle_t d) { return d ? d->index : -1; }

/* Locks; the caller fills the event and calls ev_done. */
static struct nvtx_ev *ev_begin(int kind, int domain) {
  if (g_count_only) {
    __atomic_fetch_add(&g_calls, 1, __ATOMIC_RELAXED);
    return &t_sink; /* fields written but never read */
  }
  pthread_mutex_lock(&g_mu);
  if (g_log.count >= NVTX_INJ_MAX_EVENTS) {
    g_log.dropped++;
    static struct nvtx_ev sink;
    memset(&sink, 0, sizeof(sink));
    return &sink;
  }
  struct nvtx_ev *e = &g_log.ev[g_log.count];
  memset(e, 0, sizeof(*e));
  e->seq = g_log.count++;
  e->kind = kind;
  e->domain = domain;
  e->tid = tid();
  return e;
}
static void ev_done(void) {
  if (!g_count_only) pthread_mutex_unlock(&g_mu);
}

static void copy_msg(struct nvtx_ev *e, const char *s) {
  if (!s || g_count_only) return;
  size_t n = strnlen(s, NVTX_INJ_MSG - 1);
  memcpy(e->msg, s, n);
  e->msg[n] = '\0';
}

/* Payload bytes, plus CSTRING fields of known schemas rewritten as offsets
 * into msg-like storage is overkill: strings are copied after the bytes. */
static void copy_payload(struct nvtx_ev *e, const nvtxPayloadData_t *pd, size_t n) {
  if (!pd || n == 0 || g_count_only) return;
  e->schema_id = pd[0].schemaId;
  size_t sz = pd[0].size < NVTX_INJ_PAYLOAD ? pd[0].size : NVTX_INJ_PAYLOAD;
  e->size = (uint32_t)sz;
  if (pd[0].payload) memcpy(e->payload, pd[0].payload, sz);
  /* Copy the strings a CSTRING field points at into the tail of msg, after
   * a NUL, as "<msg>\0<s1>\0<s2>..." so tests need not trust the pointers. */
  for (int i = 0; i < g_n_schemas; i++) {
    if (g_schemas[i].id != pd[0].schemaId) continue;
    size_t pos = strlen(e->msg) + 1;
    for (int k = 0; k < g_schemas[i].n_str; k++) {
      const char *s = NULL;
      if (g_schemas[i].str_off[k] + sizeof(char *) <= pd[0].size)
        memcpy(&s, (const char *)pd[0].payload + g_schemas[i].str_off[k], sizeof(s));
      if (!s) s = "";
      size_t len = strlen(s);
      if (pos + len + 1 > NVTX_INJ_MSG) break;
      memcpy(e->msg + pos, s, len + 1);
      pos += len + 1;
    }
  }
}

static void copy_attr(struct nvtx_ev *e, const nvtxEventAttributes_t *a) {
  if (!a || g_count_only) return;
  e->category = a->category;
  if (a->colorType == NVTX_COLOR_ARGB) e->color = a->color;
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) copy_msg(e, a->message.ascii);
  else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && a->message.registered)
    copy_msg(e, a->message.registered->text);
  if (a->payloadType == NVTX_PAYLOAD_TYPE_EXT)
    copy_payload(e, (const nvtxPayloadData_t *)(uintptr_t)a->payload.ullValue, a->reserved0);
}

/* ---- core2 (domains) ---- */
static nvtxDomainHandle_t h_domain_create(const char *name) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_DOMAIN_CREATE, -1);
  nvtxDomainHandle_t h = NULL;
  for (int i = 0; i < g_log.n_domains; i++)
    if (strcmp(g_log.domains[i], name) == 0) h = &g_domains[i];
  if (!h && g_log.n_domains < NVTX_INJ_MAX_DOMAINS) {
    int i = g_log.n_domains++;
    strncpy(g_log.domains[i], name, sizeof(g_log.domains[i]) - 1);
    g_domains[i].index = i;
    h = &g_domains[i];
  }
  e->domain = h ? h->index : -1;
  copy_msg(e, name);
  ev_done();
  return h;
}
static void h_domain_destroy(nvtxDomainHandle_t d) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_DOMAIN_OTHER, dom_index(d));
  copy_msg(e, "DomainDestroy");
  ev_done();
}
static nvtxStringHandle_t h_register_string(nvtxDomainHandle_t d, const char *s) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_REGISTER_STRING, dom_index(d));
  nvtxStringHandle_t h = NULL;
  if (g_n_strings < MAX_STRINGS) {
    h = &g_strings[g_n_strings];
    h->index = (uint64_t)g_n_strings++;
    strncpy(h->text, s ? s : "", NVTX_INJ_MSG - 1);
    e->id = h->index;
  }
  copy_msg(e, s);
  ev_done();
  return h;
}
static void h_name_category(nvtxDomainHandle_t d, uint32_t cat, const char *name) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_NAME_CATEGORY, dom_index(d));
  e->id = cat;
  copy_msg(e, name);
  ev_done();
}
static int h_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_PUSH, dom_index(d));
  copy_attr(e, a);
  int lvl = ++t_depth[dom_index(d) + 1];
  e->level = lvl;
  ev_done();
  return lvl - 1;
}
static int h_pop(nvtxDomainHandle_t d) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_POP, dom_index(d));
  int *depth = &t_depth[dom_index(d) + 1];
  e->level = *depth > 0 ? (*depth)-- : -1;
  ev_done();
  return e->level;
}
static nvtxRangeId_t h_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_START, dom_index(d));
  copy_attr(e, a);
  e->id = __atomic_fetch_add(&g_next_range, 1, __ATOMIC_RELAXED);
  nvtxRangeId_t id = e->id;
  ev_done();
  return id;
}
static void h_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_END, dom_index(d));
  e->id = id;
  ev_done();
}
static void h_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_MARK, dom_index(d));
  copy_attr(e, a);
  ev_done();
}
static void h_initialize(const void *reserved) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_INIT, -1);
  ev_done();
  (void)e;
}

/* ---- core (default domain) ---- */
static void h_core_mark_ex(const nvtxEventAttributes_t *a) { h_mark(NULL, a); }
static void h_core_mark_a(const char *m) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_MARK, -1);
  copy_msg(e, m);
  ev_done();
}
static int h_core_push_ex(const nvtxEventAttributes_t *a) { return h_push(NULL, a); }
static int h_core_push_a(const char *m) {
  nvtxEventAttributes_t a = {0};
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = m;
  return h_push(NULL, &a);
}
static int h_core_pop(void) { return h_pop(NULL); }
static nvtxRangeId_t h_core_start_ex(const nvtxEventAttributes_t *a) { return h_start(NULL, a); }
static void h_core_end(nvtxRangeId_t id) { h_end(NULL, id); }
static void h_name_thread(uint32_t t, const char *name) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_NAME_THREAD, -1);
  e->id = t;
  copy_msg(e, name);
  ev_done();
}
static void h_core_name_category(uint32_t cat, const char *name) { h_name_category(NULL, cat, name); }

/* ---- payload extension ---- */
static uint64_t h_schema_register(nvtxDomainHandle_t d, const nvtxPayloadSchemaAttr_t *a) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_SCHEMA, dom_index(d));
  uint64_t id = (a->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID) ? a->schemaId : 0;
  e->id = id;
  e->value = (int64_t)a->numEntries;
  e->size = (uint32_t)a->payloadStaticSize;
  copy_msg(e, a->name);
  if (id && g_n_schemas < MAX_SCHEMAS) {
    struct schema *s = &g_schemas[g_n_schemas++];
    s->id = id;
    for (size_t i = 0; i < a->numEntries && s->n_str < MAX_STR_FIELDS; i++)
      if (a->entries[i].type == NVTX_PAYLOAD_ENTRY_TYPE_CSTRING) s->str_off[s->n_str++] = a->entries[i].offset;
  }
  ev_done();
  return id;
}
static void h_mark_payload(nvtxDomainHandle_t d, const nvtxPayloadData_t *pd, size_t n) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_MARK, dom_index(d));
  copy_payload(e, pd, n);
  ev_done();
}
static int h_push_payload(nvtxDomainHandle_t d, const nvtxPayloadData_t *pd, size_t n) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_PUSH, dom_index(d));
  copy_payload(e, pd, n);
  int lvl = ++t_depth[dom_index(d) + 1];
  e->level = lvl;
  ev_done();
  return lvl - 1;
}
static int h_pop_payload(nvtxDomainHandle_t d, const nvtxPayloadData_t *pd, size_t n) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_POP, dom_index(d));
  copy_payload(e, pd, n);
  int *depth = &t_depth[dom_index(d) + 1];
  e->level = *depth > 0 ? (*depth)-- : -1;
  ev_done();
  return e->level;
}
static nvtxRangeId_t h_start_payload(nvtxDomainHandle_t d, const nvtxPayloadData_t *pd, size_t n) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_START, dom_index(d));
  copy_payload(e, pd, n);
  e->id = __atomic_fetch_add(&g_next_range, 1, __ATOMIC_RELAXED);
  nvtxRangeId_t id = e->id;
  ev_done();
  return id;
}
static void h_end_payload(nvtxDomainHandle_t d, nvtxRangeId_t id, const nvtxPayloadData_t *pd, size_t n) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_END, dom_index(d));
  e->id = id;
  copy_payload(e, pd, n);
  ev_done();
}
static uint8_t h_is_enabled(nvtxDomainHandle_t d) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_IS_ENABLED, dom_index(d));
  ev_done();
  (void)e;
  return 1;
}

/* ---- counters extension ---- */
static uint64_t h_counter_register(nvtxDomainHandle_t d, const nvtxCounterAttr_t *a) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_COUNTER_REG, dom_index(d));
  uint64_t id = a->counterId ? a->counterId : g_next_counter++;
  e->id = id;
  e->value = (int64_t)a->scopeId;
  copy_msg(e, a->name);
  ev_done();
  return id;
}
static void h_counter_int64(nvtxDomainHandle_t d, uint64_t id, int64_t v) {
  struct nvtx_ev *e = ev_begin(NVTX_EV_COUNTER_SAMPLE, dom_index(d));
  e->id = id;
  e->value = v;
  ev_done();
}

/* NVTX_INJ_DUMP: the log lives in a MAP_SHARED file, so it is complete on
 * disk even when the process ends with _exit (as forked replay nodes do). A
 * forked child gets its own file and keeps the domains it inherited. */
static int map_log(void) {
  const char *tmpl = getenv("NVTX_INJ_DUMP");
  if (!tmpl || !tmpl[0]) return 0;
  char path[512];
  const char *pp = strstr(tmpl, "%p"); /* one file per process: %p = pid */
  if (pp)
    snprintf(path, sizeof(path), "%.*s%d%s", (int)(pp - tmpl), tmpl, (int)getpid(), pp + 2);
  else
    snprintf(path, sizeof(path), "%s", tmpl);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  void *m = MAP_FAILED;
  if (ftruncate(fd, sizeof(struct nvtx_inject_log)) == 0)
    m = mmap(NULL, sizeof(struct nvtx_inject_log), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return -1;
  struct nvtx_inject_log *nl = m;
  /* carry over what this process registered so far (domains), not the events */
  memcpy(nl, g_logp, offsetof(struct nvtx_inject_log, ev));
  nl->count = 0;
  nl->dropped = 0;
  g_logp = nl;
  return 1;
}

static void atfork_child(void) {
  pthread_mutex_init(&g_mu, NULL);
  map_log();
}

static void map_and_watch_forks(void) {
  map_log();
  pthread_atfork(NULL, NULL, atfork_child);
}

/* NVTX calls InitializeInjectionNvtx2 once per NVTX instance (per DSO). */
static void map_once(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, map_and_watch_forks);
}

/* ---- entry points ---- */
#define SET(table, size, cbid, fn) \
  do { if ((unsigned)(cbid) < (size) && (table)[cbid]) *(table)[cbid] = (NvtxFunctionPointer)(fn); } while (0)

EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  map_once();
  const char *co = getenv("NVTX_INJ_COUNT_ONLY");
  g_count_only = co && co[0] == '1';
  const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
  if (!cb || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable t;
  unsigned int n;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) && t) {
    SET(t, n + 1, NVTX_CBID_CORE_MarkEx, h_core_mark_ex);
    SET(t, n + 1, NVTX_CBID_CORE_MarkA, h_core_mark_a);
    SET(t, n + 1, NVTX_CBID_CORE_RangeStartEx, h_core_start_ex);
    SET(t, n + 1, NVTX_CBID_CORE_RangeEnd, h_core_end);
    SET(t, n + 1, NVTX_CBID_CORE_RangePushEx, h_core_push_ex);
    SET(t, n + 1, NVTX_CBID_CORE_RangePushA, h_core_push_a);
    SET(t, n + 1, NVTX_CBID_CORE_RangePop, h_core_pop);
    SET(t, n + 1, NVTX_CBID_CORE_NameCategoryA, h_core_name_category);
    SET(t, n + 1, NVTX_CBID_CORE_NameOsThreadA, h_name_thread);
  }
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t) {
    SET(t, n + 1, NVTX_CBID_CORE2_DomainMarkEx, h_mark);
    SET(t, n + 1, NVTX_CBID_CORE2_DomainRangeStartEx, h_start);
    SET(t, n + 1, NVTX_CBID_CORE2_DomainRangeEnd, h_end);
    SET(t, n + 1, NVTX_CBID_CORE2_DomainRangePushEx, h_push);
    SET(t, n + 1, NVTX_CBID_CORE2_DomainRangePop, h_pop);
    SET(t, n + 1, NVTX_CBID_CORE2_DomainNameCategoryA, h_name_category);
    SET(t, n + 1, NVTX_CBID_CORE2_DomainRegisterStringA, h_register_string);
    SET(t, n + 1, NVTX_CBID_CORE2_DomainCreateA, h_domain_create);
    SET(t, n + 1, NVTX_CBID_CORE2_DomainDestroy, h_domain_destroy);
    SET(t, n + 1, NVTX_CBID_CORE2_Initialize, h_initialize);
  }
  return 1;
}

EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info) {
  if (!info || info->segmentsCount < 1) return 0;
  intptr_t *slot = info->segments[0].functionSlots;
  size_t n = info->segments[0].slotCount;
#define SLOT(cbid, fn) do { if ((cbid) < n) slot[cbid] = (intptr_t)(fn); } while (0)
  if (info->moduleId == NVTX_EXT_PAYLOAD_MODULEID) {
    pthread_mutex_lock(&g_mu);
    g_log.ext_payload_inits++;
    pthread_mutex_unlock(&g_mu);
    SLOT(NVTX3EXT_CBID_nvtxDomainIsEnabled, h_is_enabled);
    const char *no = getenv("NVTX_INJ_NO_PAYLOAD");
    if (no && no[0] == '1') return 1;
    SLOT(NVTX3EXT_CBID_nvtxPayloadSchemaRegister, h_schema_register);
    SLOT(NVTX3EXT_CBID_nvtxMarkPayload, h_mark_payload);
    SLOT(NVTX3EXT_CBID_nvtxRangePushPayload, h_push_payload);
    SLOT(NVTX3EXT_CBID_nvtxRangePopPayload, h_pop_payload);
    SLOT(NVTX3EXT_CBID_nvtxRangeStartPayload, h_start_payload);
    SLOT(NVTX3EXT_CBID_nvtxRangeEndPayload, h_end_payload);
    return 1;
  }
  if (info->moduleId == NVTX_EXT_COUNTERS_MODULEID) {
    const char *no = getenv("NVTX_INJ_NO_COUNTERS");
    if (no && no[0] == '1') return 0;
    pthread_mutex_lock(&g_mu);
    g_log.ext_counter_inits++;
    pthread_mutex_unlock(&g_mu);
    SLOT(NVTX3EXT_CBID_nvtxCounterRegister, h_counter_register);
    SLOT(NVTX3EXT_CBID_nvtxCounterSampleInt64, h_counter_int64);
    return 1;
  }
  return 0;
#undef SLOT
}

/* Test accessors. */
EXPORT const struct nvtx_inject_log *nvtx_inject_log(void) { return &g_log; }
EXPORT uint64_t nvtx_inject_calls(void) { return __atomic_load_n(&g_calls, __ATOMIC_RELAXED); }
EXPORT void nvtx_inject_reset(void) {
  pthread_mutex_lock(&g_mu);
  g_log.count = 0;
  g_log.dropped = 0;
  pthread_mutex_unlock(&g_mu);
}

