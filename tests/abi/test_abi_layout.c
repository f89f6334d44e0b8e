/* Every offset and size of spec §1.6 (and nccl-2.31.md §2) for our declarations
 * of the v4, v5, v6 and v7 descriptors, state args and plugin tables, plus every trace_format.h
 * struct size: a wrong layout here silently corrupts every event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nccl-lens/nccl_profiler_abi.h"
#include "nccl-lens/trace_format.h"

#define OFF(T, m, v) assert_int_equal(offsetof(T, m), v)
#define SZ(T, v) assert_int_equal(sizeof(T), v)

static void test_header_v4_v5_v6(void **state) {
  OFF(lens_nccl_descr_v4_t, type, 0);
  OFF(lens_nccl_descr_v4_t, parentObj, 8);
  OFF(lens_nccl_descr_v4_t, rank, 16);
  SZ(((lens_nccl_descr_v4_t *)0)->type, 1);
  OFF(lens_nccl_descr_v5_t, type, 0);
  OFF(lens_nccl_descr_v5_t, parentObj, 8);
  OFF(lens_nccl_descr_v5_t, rank, 16);
  SZ(((lens_nccl_descr_v5_t *)0)->type, 8);
  OFF(lens_nccl_descr_v6_t, type, 0);
  OFF(lens_nccl_descr_v6_t, parentObj, 8);
  OFF(lens_nccl_descr_v6_t, rank, 16);
  SZ(lens_nccl_descr_v4_t, 104);
  SZ(lens_nccl_descr_v5_t, 112);
  SZ(lens_nccl_descr_v6_t, 112);
}

#define V5_MEMBERS_CHECK(T)                        \
  do {                                             \
    OFF(T, groupApi.graphCaptured, 24);            \
    OFF(T, groupApi.groupDepth, 28);               \
    OFF(T, collApi.func, 24);                      \
    OFF(T, collApi.count, 32);                     \
    OFF(T, collApi.datatype, 40);                  \
    OFF(T, collApi.root, 48);                      \
    OFF(T, collApi.stream, 56);                    \
    OFF(T, collApi.graphCaptured, 64);             \
    OFF(T, p2pApi.func, 24);                       \
    OFF(T, p2pApi.count, 32);                      \
    OFF(T, p2pApi.datatype, 40);                   \
    OFF(T, p2pApi.stream, 48);                     \
    OFF(T, p2pApi.graphCaptured, 56);              \
    OFF(T, kernelLaunch.stream, 24);               \
    OFF(T, coll.seqNumber, 24);                    \
    OFF(T, coll.func, 32);                         \
    OFF(T, coll.sendBuff, 40);                     \
    OFF(T, coll.recvBuff, 48);                     \
    OFF(T, coll.count, 56);                        \
    OFF(T, coll.root, 64);                         \
    OFF(T, coll.datatype, 72);                     \
    OFF(T, coll.nChannels, 80);                    \
    OFF(T, coll.nWarps, 81);                       \
    OFF(T, coll.algo, 88);                         \
    OFF(T, coll.proto, 96);                        \
    OFF(T, coll.parentGroup, 104);                 \
    OFF(T, p2p.func, 24);                          \
    OFF(T, p2p.buff, 32);                          \
    OFF(T, p2p.datatype, 40);                      \
    OFF(T, p2p.count, 48);                         \
    OFF(T, p2p.peer, 56);                          \
    OFF(T, p2p.nChannels, 60);                     \
    OFF(T, p2p.parentGroup, 64);                   \
    OFF(T, proxyOp.pid, 24);                       \
    OFF(T, proxyOp.channelId, 28);                 \
    OFF(T, proxyOp.peer, 32);                      \
    OFF(T, proxyOp.nSteps, 36);                    \
    OFF(T, proxyOp.chunkSize, 40);                 \
    OFF(T, proxyOp.isSend, 44);                    \
    OFF(T, proxyStep.step, 24);                    \
    OFF(T, kernelCh.channelId, 24);                \
    OFF(T, kernelCh.pTimer, 32);                   \
    OFF(T, netPlugin.id, 24);                      \
    OFF(T, netPlugin.data, 32);                    \
  } while (0)

static void test_v5_members(void **state) { V5_MEMBERS_CHECK(lens_nccl_descr_v5_t); }

static void test_v6_members(void **state) {
  V5_MEMBERS_CHECK(lens_nccl_descr_v6_t);
  OFF(lens_nccl_descr_v6_t, ceColl.seqNumber, 24);
  OFF(lens_nccl_descr_v6_t, ceColl.func, 32);
  OFF(lens_nccl_descr_v6_t, ceColl.sendBuff, 40);
  OFF(lens_nccl_descr_v6_t, ceColl.recvBuff, 48);
  OFF(lens_nccl_descr_v6_t, ceColl.count, 56);
  OFF(lens_nccl_descr_v6_t, ceColl.root, 64);
  OFF(lens_nccl_descr_v6_t, ceColl.datatype, 72);
  OFF(lens_nccl_descr_v6_t, ceColl.syncStrategy, 80);
  OFF(lens_nccl_descr_v6_t, ceColl.intraBatchSync, 88);
  OFF(lens_nccl_descr_v6_t, ceColl.batchSize, 92);
  OFF(lens_nccl_descr_v6_t, ceColl.numBatches, 96);
  OFF(lens_nccl_descr_v6_t, ceColl.ceSeqNum, 100);
  OFF(lens_nccl_descr_v6_t, ceColl.stream, 104);
  OFF(lens_nccl_descr_v6_t, ceCollSync.isComplete, 24);
  OFF(lens_nccl_descr_v6_t, ceCollSync.nRanks, 28);
  OFF(lens_nccl_descr_v6_t, ceCollBatch.numOps, 24);
  OFF(lens_nccl_descr_v6_t, ceCollBatch.totalBytes, 32);
  OFF(lens_nccl_descr_v6_t, ceCollBatch.useIntraSync, 40);
}

/* v7 (NCCL 2.31.2, spec nccl-2.31.md §2): every offset of the table, the new
 * fields, and the 136-byte size; RCCL's v7 ends at 128, before coll.userTag. */
static void test_v7_members(void **state) {
  typedef lens_nccl_descr_v7_t T;
  SZ(T, 136);
  OFF(T, type, 0);
  OFF(T, parentObj, 8);
  OFF(T, rank, 16);
  OFF(T, groupApi.graphCaptured, 24);
  OFF(T, groupApi.groupDepth, 28);
  OFF(T, collApi.base.func, 24);
  OFF(T, collApi.base.count, 32);
  OFF(T, collApi.base.datatype, 40);
  OFF(T, collApi.base.root, 48);
  OFF(T, collApi.base.stream, 56);
  OFF(T, collApi.base.graphCaptured, 64);
  OFF(T, collApi.userTag, 72);
  OFF(T, p2pApi.base.func, 24);
  OFF(T, p2pApi.base.count, 32);
  OFF(T, p2pApi.base.datatype, 40);
  OFF(T, p2pApi.base.stream, 48);
  OFF(T, p2pApi.base.graphCaptured, 56);
  OFF(T, p2pApi.userTag, 64);
  OFF(T, kernelLaunch.stream, 24);
  OFF(T, coll.base.seqNumber, 24);
  OFF(T, coll.base.func, 32);
  OFF(T, coll.base.sendBuff, 40);
  OFF(T, coll.base.recvBuff, 48);
  OFF(T, coll.base.count, 56);
  OFF(T, coll.base.root, 64);
  OFF(T, coll.base.datatype, 72);
  OFF(T, coll.base.nChannels, 80);
  OFF(T, coll.base.nWarps, 81);
  OFF(T, coll.base.algo, 88);
  OFF(T, coll.base.proto, 96);
  OFF(T, coll.base.parentGroup, 104);
  OFF(T, coll.kernelVariant, 112);
  OFF(T, coll.isSymColl, 120);
  OFF(T, coll.userTag, 128);
  OFF(T, p2p.base.func, 24);
  OFF(T, p2p.base.buff, 32);
  OFF(T, p2p.base.datatype, 40);
  OFF(T, p2p.base.count, 48);
  OFF(T, p2p.base.peer, 56);
  OFF(T, p2p.base.nChannels, 60);
  OFF(T, p2p.base.parentGroup, 64);
  OFF(T, p2p.userTag, 72);
  OFF(T, proxyOp.pid, 24);
  OFF(T, proxyOp.channelId, 28);
  OFF(T, proxyOp.peer, 32);
  OFF(T, proxyOp.nSteps, 36);
  OFF(T, proxyOp.chunkSize, 40);
  OFF(T, proxyOp.isSend, 44);
  OFF(T, proxyStep.step, 24);
  OFF(T, kernelCh.channelId, 24);
  OFF(T, kernelCh.pTimer, 32);
  OFF(T, netPlugin.id, 24);
  OFF(T, netPlugin.data, 32);
  OFF(T, ceColl.base.seqNumber, 24);
  OFF(T, ceColl.base.func, 32);
  OFF(T, ceColl.base.sendBuff, 40);
  OFF(T, ceColl.base.recvBuff, 48);
  OFF(T, ceColl.base.count, 56);
  OFF(T, ceColl.base.root, 64);
  OFF(T, ceColl.base.datatype, 72);
  OFF(T, ceColl.base.syncStrategy, 80);
  OFF(T, ceColl.base.intraBatchSync, 88);
  OFF(T, ceColl.base.batchSize, 92);
  OFF(T, ceColl.base.numBatches, 96);
  OFF(T, ceColl.base.ceSeqNum, 100);
  OFF(T, ceColl.base.stream, 104);
  OFF(T, ceColl.userTag, 112);
  OFF(T, ceCollSync.isComplete, 24);
  OFF(T, ceCollSync.nRanks, 28);
  OFF(T, ceCollBatch.numOps, 24);
  OFF(T, ceCollBatch.totalBytes, 32);
  OFF(T, ceCollBatch.useIntraSync, 40);
  OFF(T, kernelPhase.channelId, 24);
  OFF(T, kernelPhase.phaseId, 25);
  OFF(T, kernelPhase.phaseName, 32);
  OFF(T, kernelPhase.pTimer, 40);
  /* Only the tags lie at or past RCCL's end, or inside its other members. */
  assert_true(offsetof(T, coll.userTag) >= LENS_NCCL_DESCR_V7_RCCL_SIZE);
  assert_true(offsetof(T, coll.isSymColl) < LENS_NCCL_DESCR_V7_RCCL_SIZE);
  assert_int_equal(LENS_EV_KERNEL_PHASE, 1 << 15);
  assert_int_equal(LENS_ST_KERNEL_PHASE_STOP, 31);
}

static void test_v4_members(void **state) {
  typedef lens_nccl_descr_v4_t T;
  OFF(T, coll.seqNumber, 24);
  OFF(T, coll.func, 32);
  OFF(T, coll.sendBuff, 40);
  OFF(T, coll.recvBuff, 48);
  OFF(T, coll.count, 56);
  OFF(T, coll.root, 64);
  OFF(T, coll.datatype, 72);
  OFF(T, coll.nChannels, 80);
  OFF(T, coll.nWarps, 81);
  OFF(T, coll.algo, 88);
  OFF(T, coll.proto, 96);
  OFF(T, p2p.func, 24);
  OFF(T, p2p.buff, 32);
  OFF(T, p2p.datatype, 40);
  OFF(T, p2p.count, 48);
  OFF(T, p2p.peer, 56);
  OFF(T, p2p.nChannels, 60);
  OFF(T, proxyOp.pid, 24);
  OFF(T, proxyOp.channelId, 28);
  OFF(T, proxyOp.peer, 32);
  OFF(T, proxyOp.nSteps, 36);
  OFF(T, proxyOp.chunkSize, 40);
  OFF(T, proxyOp.isSend, 44);
  OFF(T, proxyStep.step, 24);
  OFF(T, kernelCh.channelId, 24);
  OFF(T, kernelCh.pTimer, 32);
  OFF(T, netPlugin.id, 24);
  OFF(T, netPlugin.data, 32);
}

static void test_state_args_and_net_payloads(void **state) {
  SZ(lens_nccl_state_args_v4_t, 8);
  SZ(lens_nccl_state_args_v5_t, 8);
  SZ(lens_nccl_state_args_v6_t, 8);
  SZ(lens_nccl_state_args_v7_t, 8);
  OFF(lens_nccl_state_args_v7_t, kernelCh.pTimer, 0);
  OFF(lens_nccl_state_args_v4_t, proxyStep.transSize, 0);
  OFF(lens_nccl_state_args_v4_t, proxyCtrl.appendedProxyOps, 0);
  OFF(lens_nccl_state_args_v4_t, netPlugin.data, 0);
  OFF(lens_nccl_state_args_v4_t, kernelCh.pTimer, 0);
  SZ(lens_nccl_net_ib_v1_t, 40);
  OFF(lens_nccl_net_ib_v1_t, qp.device, 8);
  OFF(lens_nccl_net_ib_v1_t, qp.wr_id, 16);
  OFF(lens_nccl_net_ib_v1_t, qp.opcode, 24);
  OFF(lens_nccl_net_ib_v1_t, qp.qpNum, 28);
  OFF(lens_nccl_net_ib_v1_t, qp.length, 32);
  SZ(lens_nccl_net_sock_v1_t, 24);
  OFF(lens_nccl_net_sock_v1_t, sock.fd, 8);
  OFF(lens_nccl_net_sock_v1_t, sock.op, 12);
  OFF(lens_nccl_net_sock_v1_t, sock.length, 16);
  SZ(lens_nccl_state_t, 4);
}

#define TABLE_CHECK(T)          \
  do {                          \
    SZ(T, 48);                  \
    OFF(T, name, 0);            \
    OFF(T, init, 8);            \
    OFF(T, startEvent, 16);     \
    OFF(T, stopEvent, 24);      \
    OFF(T, recordEventState, 32); \
    OFF(T, finalize, 40);       \
  } while (0)

static void test_tables(void **state) {
  TABLE_CHECK(lens_nccl_profiler_v4_t);
  TABLE_CHECK(lens_nccl_profiler_v5_t);
  TABLE_CHECK(lens_nccl_profiler_v6_t);
  TABLE_CHECK(lens_nccl_profiler_v7_t);
}

static void test_trace_format_sizes(void **state) {
  SZ(struct lens_file_hdr, 64);
  SZ(struct lens_chunk_hdr, 32);
  OFF(struct lens_chunk_hdr, hdr_crc, 28);
  SZ(struct lens_session, 168);
  SZ(struct lens_comm_rec, 176);
  SZ(struct lens_comm_fini, 24);
  SZ(struct lens_thread_rec, 48);
  SZ(struct lens_events_hdr, 8);
  SZ(struct lens_rec_hdr, 8);
  SZ(struct lens_rec_start, 48);
  SZ(struct lens_rec_stop, 24);
  SZ(struct lens_rec_state, 40);
  SZ(struct lens_p_group_api, 8);
  SZ(struct lens_p_coll_api, 48);
  SZ(struct lens_p_p2p_api, 48);
  SZ(struct lens_p_kernel_launch, 16);
  SZ(struct lens_p_group, 8);
  SZ(struct lens_p_coll, 104);
  SZ(struct lens_p_p2p, 64);
  SZ(struct lens_p_proxy_op, 24);
  SZ(struct lens_p_proxy_step, 8);
  SZ(struct lens_p_kernel_ch, 16);
  SZ(struct lens_p_kernel_phase, 24);
  SZ(struct lens_p_net_plugin, 64);
  SZ(struct lens_p_ce_coll, 96);
  SZ(struct lens_p_ce_sync, 8);
  SZ(struct lens_p_ce_batch, 16);
  SZ(struct lens_drops, 96);
  SZ(struct lens_cupti_hdr, 24);
  SZ(struct lens_sched_hdr, 8);
  SZ(struct lens_sched_sample, 64);
  SZ(struct lens_sched_hist, 264);
  SZ(struct lens_note_hdr, 16);
  SZ(struct lens_fini, 32);
  /* ids: the handle is never NULL and decodes back */
  uint64_t id = LENS_ID_MAKE(LENS_T_PROXY_STEP, 0x1234, 0xABCDEF0123ull);
  assert_true(id & LENS_ID_TAG);
  assert_int_equal(LENS_ID_TYPE(id), LENS_T_PROXY_STEP);
  assert_int_equal(LENS_ID_SLOT(id), 0x1234);
  assert_int_equal(LENS_ID_SEQ(id), 0xABCDEF0123ull);
  assert_false(id & LENS_ID_REMOTE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_v4_v5_v6), cmocka_unit_test(test_v5_members),
      cmocka_unit_test(test_v6_members),      cmocka_unit_test(test_v7_members),      cmocka_unit_test(test_v4_members),
      cmocka_unit_test(test_state_args_and_net_payloads), cmocka_unit_test(test_tables),
      cmocka_unit_test(test_trace_format_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
