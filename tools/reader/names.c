/* Names of event types and NCCL states, and datatype sizes. */
#include <string.h>

#include "lens_utf8.h"
#include "lensread.h"

const char *lens_type_name(int type) {
  static const char *const names[LENS_T_COUNT] = {
      "Group",    "Coll",     "P2p",      "ProxyOp",      "ProxyStep", "ProxyCtrl", "KernelCh", "NetPlugin",
      "GroupApi", "CollApi", "P2pApi", "KernelLaunch", "CeColl",    "CeSync",    "CeBatch",   "KernelPhase"};
  return type >= 0 && type < LENS_T_COUNT ? names[type] : "Unknown";
}

const char *lens_state_name(uint32_t state) {
  /* NCCL's ncclProfilerEventState_t numbering (0-7 are the deprecated v1-v3 ProxyOp states). */
  static const char *const names[] = {
      "SendPosted",     "SendRemFifoWait", "SendTransmitted", "SendDone",       "RecvPosted",
      "RecvReceived",   "RecvTransmitted", "RecvDone",        "SendGPUWait",    "SendWait",
      "RecvWait",       "RecvFlushWait",   "RecvGPUWait",     "Idle",           "Active",
      "Sleep",          "Wakeup",          "Append",          "AppendEnd",      "InProgress",
      "SendPeerWait",   "NetPluginUpdate", "KernelChStop",    "GroupStartApiStop", "GroupEndApiStart",
      "CeCollStart",    "CeCollComplete",  "CeSyncStart",     "CeSyncComplete", "CeBatchStart",
      "CeBatchComplete", "KernelPhaseStop"};
  return state < sizeof names / sizeof names[0] ? names[state] : "Unknown";
}

size_t lens_datatype_size(const char *dt) {
  static const struct { const char *name; size_t size; } t[] = {
      {"ncclInt8", 1},     {"ncclChar", 1},     {"ncclUint8", 1},        {"ncclInt32", 4},
      {"ncclInt", 4},      {"ncclUint32", 4},   {"ncclInt64", 8},        {"ncclUint64", 8},
      {"ncclFloat16", 2},  {"ncclHalf", 2},     {"ncclFloat32", 4},      {"ncclFloat", 4},
      {"ncclFloat64", 8},  {"ncclDouble", 8},   {"ncclBfloat16", 2},     {"ncclFloat8e4m3", 1},
      {"ncclFloat8e5m2", 1}};
  if (!dt) return 0;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(dt, t[i].name)) return t[i].size;
  return 0;
}

uint64_t lens_event_bytes(const struct lens_model *m, const struct lens_event *e) {
  (void)m;
  switch (e->type) {
  case LENS_T_COLL: return e->p.coll.count * lens_datatype_size(e->p.coll.datatype);
  case LENS_T_P2P: return e->p.p2p.count * lens_datatype_size(e->p.p2p.datatype);
  case LENS_T_COLL_API: return e->p.coll_api.count * lens_datatype_size(e->p.coll_api.datatype);
  case LENS_T_P2P_API: return e->p.p2p_api.count * lens_datatype_size(e->p.p2p_api.datatype);
  case LENS_T_CE_COLL: return e->p.ce_coll.count * lens_datatype_size(e->p.ce_coll.datatype);
  default: return 0;
  }
}

uint64_t lens_event_user_tag(const struct lens_event *e) {
  switch (e->type) {
  case LENS_T_COLL: return e->p.coll.user_tag;
  case LENS_T_P2P: return e->p.p2p.user_tag;
  case LENS_T_COLL_API: return e->p.coll_api.user_tag;
  case LENS_T_P2P_API: return e->p.p2p_api.user_tag;
  case LENS_T_CE_COLL: return e->p.ce_coll.user_tag;
  default: return 0;
  }
}

const char *lens_evf_name(uint32_t bit) {
  switch (bit) {
  case LENS_EVF_REMOTE: return "remote";
  case LENS_EVF_NO_STOP: return "no_stop";
  case LENS_EVF_DUP_STOP: return "dup_stop";
  case LENS_EVF_SUPERSEDED: return "superseded";
  case LENS_EVF_PARENT_MISSING: return "parent_missing";
  case LENS_EVF_GRAPH: return "graph";
  case LENS_EVF_DROPPED_NEAR: return "dropped_near";
  case LENS_EVF_NULL_CONTEXT: return "null_context";
  case LENS_EVF_BAD_CONTEXT: return "bad_context";
  default: return NULL;
  }
}

const char *lens_acc_name(uint32_t bit) {
  switch (bit) {
  case LENS_ACC_STOP_BEFORE_START: return "stop_before_start";
  case LENS_ACC_NON_MONOTONIC: return "non_monotonic";
  case LENS_ACC_SHARED_TIMER: return "shared_timer";
  case LENS_ACC_RING_OVERRUN: return "ring_overrun";
  case LENS_ACC_OUTSIDE_KERNEL: return "outside_kernel";
  case LENS_ACC_NO_KERNEL_RECORD: return "no_kernel_record";
  case LENS_ACC_FOREIGN_EXT_ID: return "foreign_ext_id";
  case LENS_ACC_STARVED: return "starved";
  case LENS_ACC_NO_CLOCK_MAP: return "no_clock_map";
  default: return NULL;
  }
}

uint64_t lens_drops_total(const struct lens_drops *d) {
  return d->ring_full + d->no_thread_slot + d->null_handle + d->bad_handle + d->write_errors + d->cupti_records +
         d->blob_queue_full;
}

const char *lens_clock_map_source_name(uint32_t source) {
  return source == LENS_TS_CUPTI ? "cupti" : "host-notice";
}

const char *lens_time_source_name(uint32_t source) {
  switch (source) {
  case LENS_TS_HOST_NOTICE: return "host-notice";
  case LENS_TS_GPU_PTIMER: return "gpu-ptimer";
  case LENS_TS_CUPTI: return "cupti";
  default: return "unknown";
  }
}

