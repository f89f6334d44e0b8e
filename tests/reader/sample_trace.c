/* See sample_trace.h. */
#include "sample_trace.h"

#include <string.h>

#include "trace_builder.h"

void sample_trace_session(struct tb *t, uint32_t session, uint32_t pid, const char *host) {
  tb_session(t, session, pid, host, 5);
  tb_comm(t, S_CTX, S_COMM_ID, 1, 4, 2, 0, "world");
  tb_thread(t, 1, 11, LENS_ROLE_APP, "app", -1, UINT32_MAX);
  tb_thread(t, 2, 12, LENS_ROLE_PROXY, "ncclProxy", 1, 0);
  tb_thread(t, 3, 13, LENS_ROLE_NET, "ncclSock", -1, UINT32_MAX);
  tb_string(t, 1, "AllReduce");
  tb_string(t, 2, "ncclFloat32");
  tb_string(t, 3, "Ring");
  tb_string(t, 4, "Simple");
  tb_string(t, 5, "Send");
  tb_string(t, 6, "ncclInt8");
  tb_string(t, 7, "memcpy");

  tb_events_begin(t, 1);
  struct lens_p_group_api ga = {.graph_captured = 0, .group_depth = 1};
  tb_start(t, LENS_T_GROUP_API, S_GROUP_API, 0, S_CTX, 100, 0, 0, &ga, sizeof ga);
  tb_state(t, S_GROUP_API, 23, 105, 0, 0);
  struct lens_p_coll_api ca = {.func = 1, .count = S_COLL_COUNT, .datatype = 2, .stream = 0x5, .root = 0};
  tb_start(t, LENS_T_COLL_API, S_COLL_API, S_GROUP_API, S_CTX, S_COLL_API_START, 0, 0, &ca, sizeof ca);
  struct lens_p_kernel_launch kl = {.stream = 0x5, .ext_corr_id = 77};
  tb_start(t, LENS_T_KERNEL_LAUNCH, S_LAUNCH, S_GROUP_API, S_CTX, 120, 0, 0, &kl, sizeof kl);
  tb_stop(t, S_LAUNCH, 130);
  struct lens_p_group g = {.launch_id = S_LAUNCH};
  tb_start(t, LENS_T_GROUP, S_GROUP, 0, S_CTX, 140, 0, 0, &g, sizeof g);
  struct lens_p_coll c = {.seq = 7, .func = 1, .send_buff = 0x1000, .recv_buff = 0x2000, .count = S_COLL_COUNT,
                          .datatype = 2, .algo = 3, .proto = 4, .parent_group = S_GROUP, .launch_id = S_LAUNCH,
                          .root = 3, .n_channels = 2, .n_warps = 16};
  tb_start(t, LENS_T_COLL, S_COLL, S_COLL_API, S_CTX, S_COLL_START, 1, 0, &c, sizeof c);
  tb_stop(t, S_COLL, S_COLL_STOP);
  tb_stop(t, S_GROUP, 210);
  tb_stop(t, S_COLL_API, 220);
  struct lens_p_p2p_api pa = {.func = 5, .count = 100, .datatype = 6, .stream = 0x6, .graph_captured = 0};
  tb_start(t, LENS_T_P2P_API, S_P2P_API, S_GROUP_API, S_CTX, 221, 0, 0, &pa, sizeof pa);
  struct lens_p_p2p p = {.func = 5, .buff = 0x3000, .datatype = 6, .count = 100, .parent_group = S_GROUP,
                         .launch_id = S_LAUNCH, .peer = 2, .n_channels = 1};
  tb_start(t, LENS_T_P2P, S_P2P, S_P2P_API, S_CTX, 222, 0, 0, &p, sizeof p);
  tb_stop(t, S_P2P, 223);
  tb_stop(t, S_P2P_API, 224);
  tb_state(t, S_GROUP_API, 24, 225, 0, 0);
  tb_stop(t, S_GROUP_API, 230);
  struct lens_p_ce_coll ce = {.seq = 9, .func = 1, .send_buff = 0x10, .recv_buff = 0x20, .count = 64, .datatype = 2,
                              .sync_strategy = 7, .stream = 0x7, .root = 1, .intra_batch_sync = 1, .batch_size = 4,
                              .num_batches = 2, .ce_seq_num = 11};
  tb_start(t, LENS_T_CE_COLL, S_CE_COLL, S_COLL_API, S_CTX, 240, 0, 0, &ce, sizeof ce);
  struct lens_p_ce_sync cs = {.is_complete = 1, .n_ranks = 4};
  tb_start(t, LENS_T_CE_SYNC, S_CE_SYNC, S_CE_COLL, S_CTX, 241, 0, 0, &cs, sizeof cs);
  tb_stop(t, S_CE_SYNC, 242);
  struct lens_p_ce_batch cb = {.total_bytes = 4096, .num_ops = 3, .use_intra_sync = 1};
  tb_start(t, LENS_T_CE_BATCH, S_CE_BATCH, S_CE_COLL, S_CTX, 243, 0, 0, &cb, sizeof cb);
  tb_stop(t, S_CE_BATCH, 244);
  tb_stop(t, S_CE_COLL, 245);
  tb_flush(t);

  tb_events_begin(t, 2);
  tb_start(t, LENS_T_PROXY_CTRL, S_CTRL, 0, S_CTX, 90, 0, 0, NULL, 0);
  tb_state(t, S_CTRL, 14, 95, 0, 0);
  tb_state(t, S_CTRL, 17, 155, 1, 1);
  tb_state(t, S_CTRL, 18, 158, 0, 0);
  tb_state(t, S_CTRL, 15, 1000200, 0, 0);
  tb_stop(t, S_CTRL, 1000300);
  struct lens_p_proxy_op po = {.pid = (int32_t)S_PID, .peer = 2, .n_steps = 4, .chunk_size = 4096, .is_send = 1,
                               .channel = 1};
  tb_start(t, LENS_T_PROXY_OP, S_OP, S_COLL, S_CTX, 160, 0, 0, &po, sizeof po);
  tb_state(t, S_OP, 19, 161, 0, 0);
  struct lens_p_kernel_ch kc = {.start_gpu_ns = S_GPU0, .channel = 1};
  tb_start(t, LENS_T_KERNEL_CH, S_KCH, S_COLL, S_CTX, 165, 0, 0, &kc, sizeof kc);
  struct lens_p_proxy_step ps = {.step = 0};
  tb_start(t, LENS_T_PROXY_STEP, S_STEP, S_OP, S_CTX, 170, 0, 0, &ps, sizeof ps);
  tb_state(t, S_STEP, 8, 171, 0, 1);
  tb_state(t, S_STEP, 20, 172, 0, 1);
  tb_state(t, S_STEP, 9, 180, 4096, 1);
  tb_stop(t, S_STEP, 185);
  tb_state(t, S_KCH, 22, 890000, S_GPU0 + 5000, 1);
  tb_stop(t, S_KCH, S_KCH_STOP);
  tb_stop(t, S_OP, S_OP_STOP);
  tb_flush(t);

  tb_events_begin(t, 3);
  struct lens_p_net_plugin np = {.plugin_id = 0x10001, .data = 0xdead, .payload_len = 40};
  for (int i = 0; i < 40; i++) np.payload[i] = (uint8_t)(i + 1);
  tb_start(t, LENS_T_NET_PLUGIN, S_NET, S_STEP, S_CTX, 175, 0, 0, &np, sizeof np);
  tb_state(t, S_NET, 21, 176, 0xbeef, 1);
  tb_stop(t, S_NET, 177);
  tb_stop(t, 0, 178); /* NULL handle: ignored, not an orphan */
  tb_flush(t);

  struct lens_drops d = {.at_mono_ns = 2000000, .ring_full = 3, .no_thread_slot = 4, .null_handle = 5,
                         .bad_handle = 6, .write_errors = 7, .cupti_records = 8, .blob_queue_full = 9};
  tb_drops(t, &d);
  tb_note(t, 1234, 2, "ring full on thread 3");
  const uint8_t blob[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  tb_cupti(t, 5555, blob, sizeof blob);
  tb_comm_fini(t, S_CTX, 3000000, 0);
  tb_fini(t, 3000001, 1);
}

void sample_trace_write_as(const char *path, uint32_t pid, const char *host) {
  struct tb *t = tb_open(path, LENS_PRODUCER_PLUGIN);
  sample_trace_session(t, 0, pid, host);
  tb_close(t);
}

void sample_trace_write(const char *path) { sample_trace_write_as(path, S_PID, "nodeA"); }
