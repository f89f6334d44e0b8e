/* Round trip: the sample trace (every record type, every payload field)
 * read back through lens_model_load, field by field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "reader_test_util.h"
#include "sample_trace.h"
#include "trace_builder.h"

static struct lens_model *m;

static int setup(void **state) {
  (void)state;
  char path[128], err[256];
  sample_trace_write(rt_path(path, sizeof path, "sample.lens"));
  m = rt_load1(path, err, sizeof err);
  if (!m) fprintf(stderr, "load: %s\n", err);
  return m ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  lens_model_free(m);
  rt_cleanup();
  return 0;
}

static void test_file_proc_comm_threads(void **state) {
  (void)state;
  assert_int_equal(m->n_files, 1);
  assert_int_equal(m->files[0].producer, LENS_PRODUCER_PLUGIN);
  assert_int_equal(m->files[0].truncated_bytes, 0);
  assert_null(m->files[0].truncation);
  assert_int_equal(m->files[0].n_sessions, 1);
  assert_true(m->files[0].clean_end);
  assert_int_equal(m->files[0].fini_reason, 1);
  assert_int_equal(m->n_procs, 1);
  assert_int_equal(m->procs[0].pid, S_PID);
  assert_int_equal(m->procs[0].outer_pid, S_PID + 100000);
  assert_string_equal(m->procs[0].host, "nodeA");
  assert_int_equal(m->procs[0].nccl_api_version, 5);
  assert_int_equal(m->procs[0].event_mask, 0x7FFF);
  assert_int_equal(m->n_comms, 1);
  assert_int_equal(m->comms[0].comm_id, S_COMM_ID);
  assert_int_equal(m->comms[0].context, S_CTX);
  assert_int_equal(m->comms[0].rank, 1);
  assert_int_equal(m->comms[0].nranks, 4);
  assert_int_equal(m->comms[0].nnodes, 2);
  assert_int_equal(m->comms[0].init_mono_ns, 2000);
  assert_int_equal(m->comms[0].fini_mono_ns, 3000000);
  assert_string_equal(m->comms[0].name, "world");
  assert_int_equal(m->n_threads, 3);
  int seen = 0;
  for (size_t i = 0; i < m->n_threads; i++) {
    const struct lens_thread *t = &m->threads[i];
    if (t->slot == 2) {
      assert_int_equal(t->tid, 12);
      assert_int_equal(t->outer_tid, 100012);
      assert_int_equal(t->roles, LENS_ROLE_PROXY);
      assert_int_equal(t->proxy_rank, 1);
      assert_int_equal(t->proxy_comm, 0);
      assert_string_equal(t->name, "ncclProxy");
      seen++;
    } else if (t->slot == 1) {
      assert_int_equal(t->proxy_comm, -1);
      assert_string_equal(t->name, "app");
      seen++;
    }
  }
  assert_int_equal(seen, 2);
}

static void test_counts_and_order(void **state) {
  (void)state;
  assert_int_equal(m->n_events, 15);
  assert_int_equal(m->orphan_stops, 0);
  assert_int_equal(m->bad_records, 0);
  for (size_t i = 1; i < m->n_events; i++) assert_true(m->events[i - 1].start_mono_ns <= m->events[i].start_mono_ns);
  for (size_t i = 0; i < m->n_events; i++) {
    assert_int_equal(m->events[i].comm, 0);
    assert_int_equal(m->events[i].type, (int)LENS_ID_TYPE(m->events[i].id));
    assert_false(m->events[i].flags & (LENS_EVF_NO_STOP | LENS_EVF_DUP_STOP | LENS_EVF_PARENT_MISSING));
  }
}

static void test_api_payloads(void **state) {
  (void)state;
  const struct lens_event *ga = rt_ev(m, 0, S_GROUP_API), *ca = rt_ev(m, 0, S_COLL_API), *kl = rt_ev(m, 0, S_LAUNCH);
  assert_non_null(ga);
  assert_int_equal(ga->p.group_api.group_depth, 1);
  assert_int_equal(ga->p.group_api.graph_captured, 0);
  assert_int_equal(ga->start_mono_ns, 100);
  assert_int_equal(ga->stop_mono_ns, 230);
  assert_int_equal(ga->n_states, 2);
  assert_int_equal(m->states[ga->first_state].state, 23);
  assert_int_equal(m->states[ga->first_state].ts_mono_ns, 105);
  assert_int_equal(m->states[ga->first_state + 1].state, 24);
  assert_int_equal(ga->parent, -1);
  assert_non_null(ca);
  assert_string_equal(ca->p.coll_api.func, "AllReduce");
  assert_string_equal(ca->p.coll_api.datatype, "ncclFloat32");
  assert_int_equal(ca->p.coll_api.count, S_COLL_COUNT);
  assert_int_equal(ca->p.coll_api.stream, 0x5);
  assert_int_equal(&m->events[ca->parent], ga);
  assert_int_equal(lens_event_bytes(m, ca), S_COLL_COUNT * 4);
  assert_non_null(kl);
  assert_int_equal(kl->p.kernel_launch.stream, 0x5);
  assert_int_equal(kl->p.kernel_launch.ext_corr_id, 77);
  assert_int_equal(kl->stop_mono_ns, 130);
  const struct lens_event *pa = rt_ev(m, 0, S_P2P_API), *p = rt_ev(m, 0, S_P2P);
  assert_string_equal(pa->p.p2p_api.func, "Send");
  assert_string_equal(pa->p.p2p_api.datatype, "ncclInt8");
  assert_int_equal(pa->p.p2p_api.count, 100);
  assert_int_equal(pa->p.p2p_api.stream, 0x6);
  assert_string_equal(p->p.p2p.func, "Send");
  assert_int_equal(p->p.p2p.buff, 0x3000);
  assert_int_equal(p->p.p2p.count, 100);
  assert_int_equal(p->p.p2p.peer, 2);
  assert_int_equal(p->p.p2p.n_channels, 1);
  assert_int_equal(p->p.p2p.parent_group, S_GROUP);
  assert_int_equal(p->p.p2p.launch_id, S_LAUNCH);
  assert_int_equal(lens_event_bytes(m, p), 100);
  assert_int_equal(&m->events[p->parent], pa);
}

static void test_coll_and_children(void **state) {
  (void)state;
  const struct lens_event *c = rt_ev(m, 0, S_COLL), *g = rt_ev(m, 0, S_GROUP);
  assert_non_null(c);
  assert_int_equal(g->p.group.launch_id, S_LAUNCH);
  assert_int_equal(c->p.coll.seq, 7);
  assert_string_equal(c->p.coll.func, "AllReduce");
  assert_string_equal(c->p.coll.datatype, "ncclFloat32");
  assert_string_equal(c->p.coll.algo, "Ring");
  assert_string_equal(c->p.coll.proto, "Simple");
  assert_int_equal(c->p.coll.send_buff, 0x1000);
  assert_int_equal(c->p.coll.recv_buff, 0x2000);
  assert_int_equal(c->p.coll.count, S_COLL_COUNT);
  assert_int_equal(c->p.coll.parent_group, S_GROUP);
  assert_int_equal(c->p.coll.launch_id, S_LAUNCH);
  assert_int_equal(c->p.coll.root, 3);
  assert_int_equal(c->p.coll.n_channels, 2);
  assert_int_equal(c->p.coll.n_warps, 16);
  assert_int_equal(c->rank, 1);
  assert_int_equal(c->stop_mono_ns, S_COLL_STOP);
  assert_int_equal(m->events[c->parent].id, S_COLL_API);
  /* children: ProxyOp (160) then KernelCh (165), in start order */
  int32_t k = c->first_child;
  assert_true(k >= 0);
  assert_int_equal(m->events[k].id, S_OP);
  k = m->events[k].next_sibling;
  assert_int_equal(m->events[k].id, S_KCH);
  assert_int_equal(m->events[k].next_sibling, -1);
  int src = -1;
  assert_int_equal(lens_event_completion(m, c, &src), S_OP_STOP);
  assert_int_equal(src, LENS_TS_HOST_NOTICE);
}

static void test_proxy_payloads(void **state) {
  (void)state;
  const struct lens_event *op = rt_ev(m, 0, S_OP), *st = rt_ev(m, 0, S_STEP), *kc = rt_ev(m, 0, S_KCH);
  const struct lens_event *ctrl = rt_ev(m, 0, S_CTRL), *net = rt_ev(m, 0, S_NET);
  assert_int_equal(op->p.proxy_op.pid, S_PID);
  assert_int_equal(op->p.proxy_op.peer, 2);
  assert_int_equal(op->p.proxy_op.n_steps, 4);
  assert_int_equal(op->p.proxy_op.chunk_size, 4096);
  assert_int_equal(op->p.proxy_op.is_send, 1);
  assert_int_equal(op->p.proxy_op.channel, 1);
  assert_int_equal(op->n_states, 1);
  assert_int_equal(m->states[op->first_state].state, 19);
  assert_string_equal(m->threads[op->thread].name, "ncclProxy");
  assert_int_equal(st->p.proxy_step.step, 0);
  assert_int_equal(&m->events[st->parent], op);
  assert_int_equal(st->n_states, 3);
  assert_int_equal(m->states[st->first_state + 2].state, 9);
  assert_int_equal(m->states[st->first_state + 2].arg, 4096);
  assert_int_equal(m->states[st->first_state + 2].has_args, 1);
  assert_int_equal(kc->p.kernel_ch.start_gpu_ns, S_GPU0);
  assert_int_equal(kc->p.kernel_ch.stop_gpu_ns, S_GPU0 + 5000);
  assert_int_equal(kc->p.kernel_ch.channel, 1);
  assert_int_equal(kc->acc.sched_sample, -1);
  assert_int_equal(kc->acc.cupti_kernel, -1);
  assert_int_equal(ctrl->n_states, 4);
  assert_int_equal(m->states[ctrl->first_state + 1].arg, 1);
  assert_int_equal(ctrl->parent, -1);
  assert_int_equal(net->p.net_plugin.plugin_id, 0x10001);
  assert_int_equal(net->p.net_plugin.data, 0xdead);
  assert_int_equal(net->p.net_plugin.payload_len, 40);
  for (int i = 0; i < 40; i++) assert_int_equal(net->p.net_plugin.payload[i], i + 1);
  assert_int_equal(&m->events[net->parent], st);
  assert_int_equal(m->states[net->first_state].arg, 0xbeef);
  assert_string_equal(m->threads[net->thread].name, "ncclSock");
}

static void test_ce_payloads(void **state) {
  (void)state;
  const struct lens_event *ce = rt_ev(m, 0, S_CE_COLL), *cs = rt_ev(m, 0, S_CE_SYNC), *cb = rt_ev(m, 0, S_CE_BATCH);
  assert_int_equal(ce->p.ce_coll.seq, 9);
  assert_string_equal(ce->p.ce_coll.func, "AllReduce");
  assert_string_equal(ce->p.ce_coll.sync_strategy, "memcpy");
  assert_int_equal(ce->p.ce_coll.send_buff, 0x10);
  assert_int_equal(ce->p.ce_coll.recv_buff, 0x20);
  assert_int_equal(ce->p.ce_coll.count, 64);
  assert_int_equal(ce->p.ce_coll.stream, 0x7);
  assert_int_equal(ce->p.ce_coll.root, 1);
  assert_int_equal(ce->p.ce_coll.intra_batch_sync, 1);
  assert_int_equal(ce->p.ce_coll.batch_size, 4);
  assert_int_equal(ce->p.ce_coll.num_batches, 2);
  assert_int_equal(ce->p.ce_coll.ce_seq_num, 11);
  assert_int_equal(cs->p.ce_sync.is_complete, 1);
  assert_int_equal(cs->p.ce_sync.n_ranks, 4);
  assert_int_equal(cb->p.ce_batch.total_bytes, 4096);
  assert_int_equal(cb->p.ce_batch.num_ops, 3);
  assert_int_equal(cb->p.ce_batch.use_intra_sync, 1);
  assert_int_equal(&m->events[cs->parent], ce);
}

static void test_drops_notes_cupti(void **state) {
  (void)state;
  const struct lens_drops *d = &m->procs[0].drops;
  assert_int_equal(d->ring_full, 3);
  assert_int_equal(d->no_thread_slot, 4);
  assert_int_equal(d->null_handle, 5);
  assert_int_equal(d->bad_handle, 6);
  assert_int_equal(d->write_errors, 7);
  assert_int_equal(d->cupti_records, 8);
  assert_int_equal(d->blob_queue_full, 9);
  assert_int_equal(m->n_notes, 1);
  assert_string_equal(m->notes[0].text, "ring full on thread 3");
  assert_int_equal(m->notes[0].level, 2);
  assert_int_equal(m->n_cupti, 1);
  assert_int_equal(m->cupti[0].len, 16);
  assert_int_equal(m->cupti[0].data[15], 16);
  assert_int_equal(m->cupti[0].delivered_mono_ns, 5555);
}

static void test_names(void **state) {
  (void)state;
  assert_string_equal(lens_type_name(LENS_T_PROXY_STEP), "ProxyStep");
  assert_string_equal(lens_type_name(99), "Unknown");
  assert_string_equal(lens_state_name(8), "SendGPUWait");
  assert_string_equal(lens_state_name(22), "KernelChStop");
  assert_string_equal(lens_state_name(1000), "Unknown");
  assert_int_equal(lens_datatype_size("ncclBfloat16"), 2);
  assert_int_equal(lens_datatype_size("ncclFloat64"), 8);
  assert_int_equal(lens_datatype_size("bogus"), 0);
  assert_int_equal(lens_datatype_size(NULL), 0);
  assert_int_equal(lens_model_find(m, 0, 0x1234), -1);
  assert_int_equal(lens_model_find(m, 5, S_COLL), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_file_proc_comm_threads), cmocka_unit_test(test_counts_and_order),
      cmocka_unit_test(test_api_payloads),          cmocka_unit_test(test_coll_and_children),
      cmocka_unit_test(test_proxy_payloads),        cmocka_unit_test(test_ce_payloads),
      cmocka_unit_test(test_drops_notes_cupti),     cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
