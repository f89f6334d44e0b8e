/* See event_args.h. */
#include "cli/format.h"
#include "export/event_args.h"

#include <inttypes.h>

#include "analysis/gpu/gpu_analysis.h"
#include "export/json_out.h"

#define K(name) (fputc(',', f), lens_json_key(f, name))
#define KS(name, v) (K(name), lens_json_str(f, v))
#define KI(name, v) (K(name), fprintf(f, "%" PRId64, (int64_t)(v)))
#define KU(name, v) (K(name), fprintf(f, "%" PRIu64, (uint64_t)(v)))
#define KH(name, v) (K(name), lens_json_hex(f, v))

void lens_json_flag_list(FILE *f, uint32_t flags, const char *(*name)(uint32_t)) {
  fputc('[', f);
  int first = 1;
  for (uint32_t b = 1; b; b <<= 1) {
    if (!(flags & b)) continue;
    if (!first) fputc(',', f);
    first = 0;
    const char *n = name(b);
    if (n) lens_json_str(f, n);
    else fprintf(f, "\"0x%x\"", b);
  }
  fputc(']', f);
}

/* v7 user tag: the number and its name (NCCL_LENS_TAG_NAMES / --tag-names); nothing when untagged. */
static void user_tag(FILE *f, uint64_t tag) {
  if (!tag) return;
  char buf[32];
  KU("user_tag", tag);
  KS("user_tag_name", lens_tag_label(tag, buf, sizeof buf));
}

static void payload(FILE *f, const struct lens_event *e) {
  const struct lens_payload *p = &e->p;
  switch (e->type) {
  case LENS_T_GROUP_API:
    KI("graph_captured", p->group_api.graph_captured);
    KI("group_depth", p->group_api.group_depth);
    break;
  case LENS_T_COLL_API:
    KS("func", p->coll_api.func);
    KU("count", p->coll_api.count);
    KS("datatype", p->coll_api.datatype);
    KI("root", p->coll_api.root);
    KH("stream", p->coll_api.stream);
    KI("graph_captured", p->coll_api.graph_captured);
    user_tag(f, p->coll_api.user_tag);
    break;
  case LENS_T_P2P_API:
    KS("func", p->p2p_api.func);
    KU("count", p->p2p_api.count);
    KS("datatype", p->p2p_api.datatype);
    KH("stream", p->p2p_api.stream);
    KI("graph_captured", p->p2p_api.graph_captured);
    user_tag(f, p->p2p_api.user_tag);
    break;
  case LENS_T_KERNEL_LAUNCH:
    KH("stream", p->kernel_launch.stream);
    KU("ext_corr_id", p->kernel_launch.ext_corr_id);
    break;
  case LENS_T_GROUP: KH("launch_id", p->group.launch_id); break;
  case LENS_T_COLL:
    KU("seq", p->coll.seq);
    KS("func", p->coll.func);
    KH("send_buff", p->coll.send_buff);
    KH("recv_buff", p->coll.recv_buff);
    KU("count", p->coll.count);
    KI("root", p->coll.root);
    KS("datatype", p->coll.datatype);
    KI("n_channels", p->coll.n_channels);
    KI("n_warps", p->coll.n_warps);
    KS("algo", p->coll.algo);
    KS("proto", p->coll.proto);
    KH("parent_group", p->coll.parent_group);
    KH("launch_id", p->coll.launch_id);
    if (p->coll.kernel_variant || p->coll.is_sym_coll) {
      KS("kernel_variant", p->coll.kernel_variant);
      KI("is_sym_coll", p->coll.is_sym_coll);
    }
    user_tag(f, p->coll.user_tag);
    break;
  case LENS_T_P2P:
    KS("func", p->p2p.func);
    KH("buff", p->p2p.buff);
    KS("datatype", p->p2p.datatype);
    KU("count", p->p2p.count);
    KI("peer", p->p2p.peer);
    KI("n_channels", p->p2p.n_channels);
    KH("parent_group", p->p2p.parent_group);
    KH("launch_id", p->p2p.launch_id);
    user_tag(f, p->p2p.user_tag);
    break;
  case LENS_T_PROXY_OP:
    KI("pid", p->proxy_op.pid);
    KI("channel", p->proxy_op.channel);
    KI("peer", p->proxy_op.peer);
    KI("n_steps", p->proxy_op.n_steps);
    KI("chunk_size", p->proxy_op.chunk_size);
    KI("is_send", p->proxy_op.is_send);
    break;
  case LENS_T_PROXY_STEP: KI("step", p->proxy_step.step); break;
  case LENS_T_KERNEL_CH:
    KI("channel", p->kernel_ch.channel);
    KU("start_ptimer_gpu_ns", p->kernel_ch.start_gpu_ns);
    KU("stop_ptimer_gpu_ns", p->kernel_ch.stop_gpu_ns);
    break;
  case LENS_T_KERNEL_PHASE:
    KI("channel", p->kernel_phase.channel);
    KI("phase_id", p->kernel_phase.phase_id);
    KS("phase", p->kernel_phase.name);
    KU("start_ptimer_gpu_ns", p->kernel_phase.start_gpu_ns);
    KU("stop_ptimer_gpu_ns", p->kernel_phase.stop_gpu_ns);
    break;
  case LENS_T_NET_PLUGIN:
    KH("plugin_id", (uint64_t)p->net_plugin.plugin_id);
    KH("data", p->net_plugin.data);
    KU("payload_len", p->net_plugin.payload_len);
    K("payload_hex");
    fputc('"', f);
    for (uint32_t i = 0; i < p->net_plugin.payload_len && i < sizeof p->net_plugin.payload; i++)
      fprintf(f, "%02x", p->net_plugin.payload[i]);
    fputc('"', f);
    break;
  case LENS_T_CE_COLL:
    KU("seq", p->ce_coll.seq);
    KS("func", p->ce_coll.func);
    KH("send_buff", p->ce_coll.send_buff);
    KH("recv_buff", p->ce_coll.recv_buff);
    KU("count", p->ce_coll.count);
    KI("root", p->ce_coll.root);
    KS("datatype", p->ce_coll.datatype);
    KS("sync_strategy", p->ce_coll.sync_strategy);
    KI("intra_batch_sync", p->ce_coll.intra_batch_sync);
    KU("batch_size", p->ce_coll.batch_size);
    KU("num_batches", p->ce_coll.num_batches);
    KU("ce_seq_num", p->ce_coll.ce_seq_num);
    KH("stream", p->ce_coll.stream);
    user_tag(f, p->ce_coll.user_tag);
    break;
  case LENS_T_CE_SYNC:
    KI("is_complete", p->ce_sync.is_complete);
    KI("n_ranks", p->ce_sync.n_ranks);
    break;
  case LENS_T_CE_BATCH:
    KU("total_bytes", p->ce_batch.total_bytes);
    KI("num_ops", p->ce_batch.num_ops);
    KI("use_intra_sync", p->ce_batch.use_intra_sync);
    break;
  default: break;
  }
}

void lens_json_event_args(FILE *f, const struct lens_model *m, const struct lens_event *e) {
  lens_json_key(f, "type");
  lens_json_str(f, lens_type_name(e->type));
  KH("id", e->id);
  KH("parent_obj", e->parent_raw);
  KH("context", e->context);
  KI("descr_rank", e->rank);
  KU("session", e->session);
  KU("start_mono_ns", e->start_mono_ns);
  KU("stop_mono_ns", e->stop_mono_ns);
  if (e->comm >= 0) {
    const struct lens_comm *c = &m->comms[e->comm];
    KS("comm", c->name);
    K("comm_id"), lens_json_comm_id(f, c->comm_id); /* 0x + 16 digits, as every view */
    KI("comm_rank", c->rank);
  }
  if (e->parent >= 0) {
    const struct lens_event *p = &m->events[e->parent];
    K("parent");
    fputc('"', f);
    fprintf(f, "%s 0x%" PRIx64, lens_type_name(p->type), p->id);
    fputc('"', f);
    if (p->proc != e->proc) KU("parent_pid", m->procs[p->proc].pid);
  }
  uint64_t bytes = lens_event_bytes(m, e);
  if (bytes) KU("bytes", bytes);
  payload(f, e);
  K("flags");
  lens_json_flag_list(f, e->flags, lens_evf_name);
  if (e->acc.flags) {
    K("accuracy");
    lens_json_flag_list(f, e->acc.flags, lens_acc_name);
  }
  KS("time_source", lens_time_source_name(e->acc.time_source));
  if (e->acc.gpu_start_mono_ns) KU("gpu_start_mono_ns", e->acc.gpu_start_mono_ns);
  if (e->acc.gpu_stop_mono_ns) KU("gpu_stop_mono_ns", e->acc.gpu_stop_mono_ns);
  if (lens_gpu_notice_lag_known(m, e)) KI("notice_lag_ns", e->acc.notice_lag_ns); /* 0 too: measured */
  if (e->acc.starved_ns) KU("starved_ns", e->acc.starved_ns);
  if (e->n_states) {
    K("states");
    fputc('[', f);
    for (uint32_t i = 0; i < e->n_states; i++) {
      const struct lens_state_ev *s = &m->states[e->first_state + i];
      fprintf(f, "%s{", i ? "," : "");
      lens_json_key(f, "state");
      lens_json_str(f, lens_state_name(s->state));
      fprintf(f, ",\"value\":%u,\"ts_mono_ns\":%" PRIu64, s->state, s->ts_mono_ns);
      if (s->has_args) fprintf(f, ",\"arg\":%" PRIu64, s->arg);
      fputc('}', f);
    }
    fputc(']', f);
  }
}
