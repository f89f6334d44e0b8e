/* Handles and contexts are never trusted: NULL, garbage, stale and foreign
 * values are counted or flagged and never dereferenced (run under ASan);
 * PXN ProxyOps of another pid are marked remote and their children inherit
 * it through the parent id alone. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "comm_table.h"
#include "core_fixture.h"
#include "nccl-lens/nccl_profiler_abi.h"

extern lens_nccl_profiler_v5_t ncclProfiler_v5;
extern lens_nccl_profiler_v4_t ncclProfiler_v4;
extern lens_nccl_profiler_v6_t ncclProfiler_v6;
static const struct lens_comm_info *g_comm;

static void *start_v5(void *ctx, lens_nccl_descr_v5_t *d) {
  void *h = (void *)0x5a5a;
  assert_int_equal(ncclProfiler_v5.startEvent(ctx, &h, d), 0);
  return h;
}

static void test_stop_and_record_with_bad_handles(void **state) {
  struct lens_drops d0 = fix_drops();
  lens_nccl_state_args_v5_t a = {.proxyStep = {.transSize = 7}};
  /* NULL (NetPlugin stop): counted, ignored */
  ncclProfiler_v5.stopEvent(NULL);
  ncclProfiler_v5.recordEventState(NULL, LENS_ST_NET_PLUGIN_UPDATE, &a);
  /* garbage without our tag: counted, ignored, never dereferenced */
  void *unmapped = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *garbage[] = {(void *)0x1, (void *)0x1234, unmapped, (void *)&d0, (void *)0x7fffffffffffull};
  for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
    ncclProfiler_v5.stopEvent(garbage[i]);
    ncclProfiler_v5.recordEventState(garbage[i], LENS_ST_PROXY_STEP_SEND_WAIT, &a);
  }
  struct lens_drops d1 = fix_drops();
  assert_int_equal(d1.null_handle - d0.null_handle, 2);
  assert_int_equal(d1.bad_handle - d0.bad_handle, 10);
  fix_drain_and_load();
  int n_before = fix_nrecs;
  /* a stale handle (stopped twice) and a foreign tagged one are recorded as is */
  lens_nccl_descr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_COLL_API;
  d.collApi.func = "AllReduce";
  void *h = start_v5((void *)(uintptr_t)g_comm->context, &d);
  ncclProfiler_v5.stopEvent(h);
  ncclProfiler_v5.stopEvent(h);
  uint64_t foreign = LENS_ID_MAKE(LENS_T_COLL, 4000, 77);
  ncclProfiler_v5.stopEvent((void *)(uintptr_t)foreign);
  ncclProfiler_v5.recordEventState((void *)(uintptr_t)foreign, LENS_ST_PROXY_STEP_SEND_WAIT, NULL);
  fix_drain_and_load();
  assert_int_equal(fix_nrecs - n_before, 5);
  const struct lens_rec_stop *s1 = (const void *)fix_recs[n_before + 1].bytes;
  const struct lens_rec_stop *s2 = (const void *)fix_recs[n_before + 2].bytes;
  assert_int_equal(s1->id, (uint64_t)(uintptr_t)h);
  assert_int_equal(s2->id, (uint64_t)(uintptr_t)h);
  const struct lens_rec_state *st = (const void *)fix_recs[n_before + 4].bytes;
  assert_int_equal(st->id, foreign);
  assert_int_equal(st->has_args, 0);
  munmap(unmapped, 4096);
}

static void test_contexts_are_checked_not_trusted(void **state) {
  lens_nccl_descr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_GROUP_API;
  void *h_null = start_v5(NULL, &d);
  void *h_foreign = start_v5((void *)0xdeadbeefull, &d);
  const struct lens_comm_info *tmp;
  assert_int_equal(lens_comm_add(99, "stale", 0, 1, 1, &tmp), 0);
  uint64_t stale = tmp->context;
  assert_non_null(lens_comm_remove(stale));
  void *h_stale = start_v5((void *)(uintptr_t)stale, &d);
  void *h_good = start_v5((void *)(uintptr_t)g_comm->context, &d);
  /* a context from "another process": our salt, wrong generation */
  void *h_gen = start_v5((void *)(uintptr_t)(g_comm->context ^ 0x10000), &d);
  /* the no-op context of a disabled/failed init: no handle, no record */
  void *h_noop = start_v5((void *)(uintptr_t)LENS_CTX_NOOP, &d);
  assert_null(h_noop);
  fix_drain_and_load();
  int i;
  assert_true((i = fix_find_start((uint64_t)(uintptr_t)h_null)) >= 0);
  assert_true(fix_start(i)->h.aux & LENS_START_F_NULL_CONTEXT);
  assert_true((i = fix_find_start((uint64_t)(uintptr_t)h_foreign)) >= 0);
  assert_true(fix_start(i)->h.aux & LENS_START_F_BAD_CONTEXT);
  assert_int_equal(fix_start(i)->context, 0xdeadbeefull);
  assert_true((i = fix_find_start((uint64_t)(uintptr_t)h_stale)) >= 0);
  assert_true(fix_start(i)->h.aux & LENS_START_F_BAD_CONTEXT);
  assert_true((i = fix_find_start((uint64_t)(uintptr_t)h_gen)) >= 0);
  assert_true(fix_start(i)->h.aux & LENS_START_F_BAD_CONTEXT);
  assert_true((i = fix_find_start((uint64_t)(uintptr_t)h_good)) >= 0);
  assert_int_equal(fix_start(i)->h.aux & (LENS_START_F_BAD_CONTEXT | LENS_START_F_NULL_CONTEXT), 0);
  assert_true(fix_start(i)->h.aux & LENS_START_F_NULL_PARENT);
  assert_null(lens_comm_lookup(0));
  assert_null(lens_comm_lookup(0xdeadbeefull));
  assert_null(lens_comm_lookup(stale));
  assert_non_null(lens_comm_lookup(g_comm->context));
}

static void test_pxn_proxy_op_is_remote_and_children_inherit(void **state) {
  lens_nccl_descr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_PROXY_OP;
  d.parentObj = (void *)0x7f0000001000ull; /* the originator's Coll handle: foreign */
  d.proxyOp.pid = getpid() + 1;
  d.proxyOp.channelId = 5;
  d.proxyOp.peer = 3;
  void *op = start_v5((void *)0x1, &d); /* the originator's context: garbage here */
  assert_true((uint64_t)(uintptr_t)op & LENS_ID_REMOTE);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_PROXY_STEP;
  d.parentObj = op;
  d.proxyStep.step = 2;
  void *step = start_v5((void *)0x1, &d);
  assert_true((uint64_t)(uintptr_t)step & LENS_ID_REMOTE);
  lens_nccl_net_ib_v1_t ib;
  memset(&ib, 0, sizeof ib);
  ib.type = 1;
  ib.qp.qpNum = 42;
  ib.qp.length = 8192;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_NET_PLUGIN;
  d.parentObj = step;
  d.netPlugin.id = LENS_NET_TYPE_IB | 1;
  d.netPlugin.data = &ib;
  void *net = start_v5((void *)0x1, &d);
  ib.qp.qpNum = 0; /* NCCL reuses the struct right after the call */
  assert_true((uint64_t)(uintptr_t)net & LENS_ID_REMOTE);
  /* a local ProxyOp (our pid) is not remote */
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_PROXY_OP;
  d.proxyOp.pid = getpid();
  void *local = start_v5((void *)(uintptr_t)g_comm->context, &d);
  assert_false((uint64_t)(uintptr_t)local & LENS_ID_REMOTE);
  fix_drain_and_load();
  int i = fix_find_start((uint64_t)(uintptr_t)op);
  assert_true(i >= 0);
  assert_true(fix_start(i)->h.aux & LENS_START_F_REMOTE);
  assert_int_equal(fix_start(i)->h.aux & LENS_START_F_BAD_CONTEXT, 0); /* context never looked at */
  assert_int_equal(fix_start(i)->parent, 0x7f0000001000ull);
  const struct lens_p_proxy_op *po = (const void *)(fix_start(i) + 1);
  assert_int_equal(po->pid, getpid() + 1);
  assert_int_equal(po->channel, 5);
  assert_int_equal(po->peer, 3);
  i = fix_find_start((uint64_t)(uintptr_t)step);
  assert_true(fix_start(i)->h.aux & LENS_START_F_REMOTE);
  i = fix_find_start((uint64_t)(uintptr_t)net);
  assert_true(fix_start(i)->h.aux & LENS_START_F_REMOTE);
  const struct lens_p_net_plugin *np = (const void *)(fix_start(i) + 1);
  assert_int_equal(np->payload_len, 40);
  lens_nccl_net_ib_v1_t copy;
  memcpy(&copy, np->payload, sizeof copy);
  assert_int_equal(copy.qp.qpNum, 42);
  assert_int_equal(copy.qp.length, 8192);
  i = fix_find_start((uint64_t)(uintptr_t)local);
  assert_int_equal(fix_start(i)->h.aux & LENS_START_F_REMOTE, 0);
}

static void test_net_plugin_payload_selection(void **state) {
  lens_nccl_net_sock_v1_t sock = {.type = 1, .sock = {.fd = 9, .op = 1, .length = 100}};
  lens_nccl_descr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_NET_PLUGIN;
  d.netPlugin.id = LENS_NET_TYPE_SOCK | 1;
  d.netPlugin.data = &sock;
  void *hs = start_v5((void *)(uintptr_t)g_comm->context, &d);
  d.netPlugin.id = LENS_NET_TYPE_SOCK | 2; /* unknown version: no copy */
  void *hv = start_v5((void *)(uintptr_t)g_comm->context, &d);
  d.netPlugin.id = LENS_NET_TYPE_IB | 1;
  d.netPlugin.data = NULL;
  void *hn = start_v5((void *)(uintptr_t)g_comm->context, &d);
  ncclProfiler_v5.stopEvent(NULL); /* NetPlugin stop with NULL: ignored */
  fix_drain_and_load();
  const struct lens_p_net_plugin *p = (const void *)(fix_start(fix_find_start((uint64_t)(uintptr_t)hs)) + 1);
  assert_int_equal(p->payload_len, 24);
  assert_int_equal(((const lens_nccl_net_sock_v1_t *)p->payload)->sock.fd, 9);
  p = (const void *)(fix_start(fix_find_start((uint64_t)(uintptr_t)hv)) + 1);
  assert_int_equal(p->payload_len, 0);
  p = (const void *)(fix_start(fix_find_start((uint64_t)(uintptr_t)hn)) + 1);
  assert_int_equal(p->payload_len, 0);
}

static void test_unknown_types_and_state_args(void **state) {
  lens_nccl_descr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = 0x3; /* two bits */
  assert_null(start_v5((void *)(uintptr_t)g_comm->context, &d));
  d.type = 1ull << 40;
  assert_null(start_v5((void *)(uintptr_t)g_comm->context, &d));
  d.type = LENS_EV_CE_COLL; /* a v6 type through the v5 table */
  assert_null(start_v5((void *)(uintptr_t)g_comm->context, &d));
  /* v4: uint8 type, old layout */
  lens_nccl_descr_v4_t d4;
  memset(&d4, 0, sizeof d4);
  d4.type = LENS_EV_PROXY_CTRL;
  void *h = NULL;
  ncclProfiler_v4.startEvent((void *)(uintptr_t)g_comm->context, &h, &d4);
  assert_non_null(h);
  lens_nccl_state_args_v4_t a;
  memset(&a, 0xFF, sizeof a); /* upper bytes garbage: only the int counts */
  a.proxyCtrl.appendedProxyOps = 5;
  ncclProfiler_v4.recordEventState(h, LENS_ST_PROXY_CTRL_APPEND_END, &a);
  ncclProfiler_v4.stopEvent(h);
  fix_drain_and_load();
  int i = fix_find_start((uint64_t)(uintptr_t)h);
  assert_true(i >= 0);
  const struct lens_rec_state *st = (const void *)fix_recs[i + 1].bytes;
  assert_int_equal(st->h.kind, LENS_REC_STATE);
  assert_int_equal(st->arg, 5);
  assert_int_equal(st->has_args, 1);
}

/* v6: the copy-engine members, and the v5 members through the v6 table. */
static void test_v6_ce_and_shared_members(void **state) {
  lens_nccl_descr_v6_t d;
  void *hc = NULL, *hs = NULL, *hb = NULL, *hk = NULL;
  void *ctx = (void *)(uintptr_t)g_comm->context;
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_CE_COLL;
  d.ceColl.seqNumber = 77;
  d.ceColl.func = "AllGather";
  d.ceColl.datatype = "ncclInt8";
  d.ceColl.syncStrategy = "batch";
  d.ceColl.count = 4096;
  d.ceColl.batchSize = 3;
  d.ceColl.numBatches = 5;
  d.ceColl.ceSeqNum = 9;
  d.ceColl.intraBatchSync = true;
  ncclProfiler_v6.startEvent(ctx, &hc, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_CE_SYNC;
  d.parentObj = hc;
  d.ceCollSync.isComplete = true;
  d.ceCollSync.nRanks = 8;
  ncclProfiler_v6.startEvent(ctx, &hs, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_CE_BATCH;
  d.parentObj = hc;
  d.ceCollBatch.numOps = 4;
  d.ceCollBatch.totalBytes = 1 << 20;
  ncclProfiler_v6.startEvent(ctx, &hb, &d);
  memset(&d, 0, sizeof d);
  d.type = LENS_EV_KERNEL_CH;
  d.parentObj = hc;
  d.kernelCh.channelId = 63;
  d.kernelCh.pTimer = 1700000000123456789ull;
  ncclProfiler_v6.startEvent(ctx, &hk, &d);
  fix_drain_and_load();
  int i = fix_find_start((uint64_t)(uintptr_t)hc);
  assert_true(i >= 0);
  assert_int_equal(fix_hdr(i)->type, LENS_T_CE_COLL);
  const struct lens_p_ce_coll *c = (const void *)(fix_start(i) + 1);
  assert_int_equal(c->seq, 77);
  assert_int_equal(c->count, 4096);
  assert_int_equal(c->batch_size, 3);
  assert_int_equal(c->num_batches, 5);
  assert_int_equal(c->ce_seq_num, 9);
  assert_int_equal(c->intra_batch_sync, 1);
  assert_true(c->func != 0 && c->datatype != 0 && c->sync_strategy != 0); /* interned ids */
  assert_true(c->func != c->datatype);
  i = fix_find_start((uint64_t)(uintptr_t)hs);
  const struct lens_p_ce_sync *sy = (const void *)(fix_start(i) + 1);
  assert_int_equal(sy->is_complete, 1);
  assert_int_equal(sy->n_ranks, 8);
  assert_int_equal(fix_start(i)->parent, (uint64_t)(uintptr_t)hc);
  i = fix_find_start((uint64_t)(uintptr_t)hb);
  const struct lens_p_ce_batch *cb = (const void *)(fix_start(i) + 1);
  assert_int_equal(cb->num_ops, 4);
  assert_int_equal(cb->total_bytes, 1 << 20);
  i = fix_find_start((uint64_t)(uintptr_t)hk);
  const struct lens_p_kernel_ch *k = (const void *)(fix_start(i) + 1);
  assert_int_equal(k->channel, 63);
  assert_int_equal(k->start_gpu_ns, 1700000000123456789ull); /* GPU clock: never converted */
}

static int group_setup(void **state) {
  fix_setup(8, 256 * 1024);
  if (lens_comm_add(0xC0FFEE, "unit", 0, 2, 1, &g_comm) != 0) return -1;
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stop_and_record_with_bad_handles),
      cmocka_unit_test(test_contexts_are_checked_not_trusted),
      cmocka_unit_test(test_pxn_proxy_op_is_remote_and_children_inherit),
      cmocka_unit_test(test_net_plugin_payload_selection),
      cmocka_unit_test(test_unknown_types_and_state_args),
      cmocka_unit_test(test_v6_ce_and_shared_members),
  };
  return cmocka_run_group_tests(tests, group_setup, NULL);
}
