/* Ground-truth tables and their JSON (schema: docs/replay.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay/rp_couple.h"
#include "replay/rp_internal.h"
#include "replay/rp_net.h"
#include "replay/rp_truth.h"
#include "replay/rp_kineto.h"

struct rp_truth *rp_truth_new(void) {
  struct rp_truth *t = calloc(1, sizeof *t);
  t->ops = calloc(RP_TRUTH_MAX_OPS, sizeof *t->ops);
  t->kch = calloc(RP_TRUTH_MAX_KCH, sizeof *t->kch);
  t->haz = calloc(RP_TRUTH_MAX_HAZ, sizeof *t->haz);
  t->phase = calloc(RP_TRUTH_MAX_PHASE, sizeof *t->phase);
  return t;
}

void rp_truth_free(struct rp_truth *t) {
  if (!t) return;
  free(t->ops);
  free(t->kch);
  free(t->haz);
  free(t->phase);
  free(t);
}

static int take(atomic_int *n, int cap, atomic_int *drops) {
  int i = atomic_fetch_add(n, 1);
  if (i < cap) return i;
  atomic_fetch_sub(n, 1);
  atomic_fetch_add(drops, 1);
  return -1;
}

int rp_truth_op_new(struct rp_truth *t) { return take(&t->nops, RP_TRUTH_MAX_OPS, &t->drops); }
struct rp_truth_op *rp_truth_op_at(struct rp_truth *t, int id) {
  return id >= 0 && id < RP_TRUTH_MAX_OPS ? &t->ops[id] : NULL;
}
int rp_truth_kch_new(struct rp_truth *t) { return take(&t->nkch, RP_TRUTH_MAX_KCH, &t->drops); }
struct rp_truth_kch *rp_truth_kch_at(struct rp_truth *t, int id) {
  return id >= 0 && id < RP_TRUTH_MAX_KCH ? &t->kch[id] : NULL;
}

struct rp_truth_phase *rp_truth_phase_new(struct rp_truth *t) {
  int i = take(&t->nphase, RP_TRUTH_MAX_PHASE, &t->drops);
  return i < 0 ? NULL : &t->phase[i];
}

void rp_truth_hazard(struct rp_truth *t, const char *kind, int rank, int64_t detail) {
  int i = take(&t->nhaz, RP_TRUTH_MAX_HAZ, &t->drops);
  if (i < 0) return;
  t->haz[i].kind = kind;
  t->haz[i].rank = rank;
  t->haz[i].t_ns = rp_now();
  t->haz[i].detail = detail;
}

struct rp_truth_starve *rp_truth_starve_new(struct rp_truth *t) {
  int i = take(&t->nstarve, RP_TRUTH_MAX_STARVE, &t->drops);
  return i < 0 ? NULL : &t->starve[i];
}

void rp_truth_mask_change(struct rp_truth *t, int iter, int old_mask, int new_mask, const char *via) {
  int i = take(&t->nmask, RP_TRUTH_MAX_MASK, &t->drops);
  if (i < 0) return;
  t->mask[i] = (struct rp_truth_mask){iter, old_mask, new_mask, rp_now(), via};
}

static void jstr(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", *s);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

static void write_comms(struct rp_node *n, FILE *f) {
  fputs("\"comms\":[", f);
  for (int i = 0; i < n->ncomms; i++) {
    struct rp_comm *c = &n->comms[i];
    fprintf(f, "%s\n {\"index\":%d,\"commId\":\"0x%016" PRIx64 "\",\"rank\":%d,\"local\":%d,\"nranks\":%d,"
               "\"nNodes\":%d,\"name\":",
            i ? "," : "", c->index, c->commId, c->rank, c->local, c->nranks, c->nNodes);
    jstr(f, c->name);
    fprintf(f, ",\"blocking\":%s,\"init_rc\":%d,\"init_tid\":%d,\"context_null\":%s}",
            c->nonblocking ? "false" : "true", c->init_rc, c->init_tid, c->ctx ? "false" : "true");
  }
  fputs("],\n", f);
}

static void write_ranks(struct rp_node *n, FILE *f) {
  fputs("\"ranks\":[", f);
  for (int l = 0; l < n->rpn; l++) {
    struct rp_proxy *px = &n->proxy[l];
    if (n->prof_threads) /* 2.31: the profiler thread that reported this rank's KernelCh */
      fprintf(f, "%s\n {\"rank\":%d,\"local\":%d,\"profiler_tid\":%d,\"profiler\":{\"kernel_ch_started\":%ld,"
                 "\"kernel_ch_stopped\":%ld},",
              l ? "," : "", n->node * n->rpn + l, l, atomic_load(&n->prof[l].tid), atomic_load(&n->prof[l].kch_started),
              atomic_load(&n->prof[l].kch_stopped));
    fprintf(f,
            "%s%s\"rank\":%d,\"local\":%d,\"gpu_offset_ns\":%" PRId64 ",\"gpu_drift_ppm\":%.3f,\"proxy_tid\":%d,"
            "\"proxy\":{\"ops_started\":%ld,\"ops_stopped\":%ld,\"steps_started\":%ld,\"steps_stopped\":%ld,"
            "\"ctrl_events\":%ld,\"kernel_ch_started\":%ld,\"kernel_ch_stopped\":%ld,\"dup_step_starts\":%ld}}",
            n->prof_threads || !l ? "" : ",", n->prof_threads ? "" : "\n {", n->node * n->rpn + l, l, n->gpu[l].offset_ns, n->gpu[l].drift_ppm, atomic_load(&px->tid),
            atomic_load(&px->ops_started), atomic_load(&px->ops_stopped), atomic_load(&px->steps_started),
            atomic_load(&px->steps_stopped), atomic_load(&px->ctrl_events), atomic_load(&px->kch_started),
            atomic_load(&px->kch_stopped), atomic_load(&px->dup_starts));
  }
  fputs("],\n", f);
}

static void write_ops(struct rp_truth *t, FILE *f) {
  fputs("\"ops\":[", f);
  int nops = atomic_load(&t->nops);
  for (int i = 0; i < nops; i++) {
    struct rp_truth_op *o = &t->ops[i];
    fprintf(f, "%s\n {\"id\":%d,\"comm\":%d,\"rank\":%d,\"kind\":\"%s\",\"func\":\"%s\",\"datatype\":", i ? "," : "",
            i, o->comm, o->rank, o->is_p2p ? "p2p" : "coll", rp_func_name(o->func));
    jstr(f, o->datatype);
    fprintf(f, ",\"count\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"algo\":", o->count, o->bytes);
    jstr(f, o->algo);
    fputs(",\"proto\":", f);
    jstr(f, o->proto);
    fprintf(f,
            ",\"nChannels\":%d,\"root\":%d,\"peer\":%d,\"seqNumber\":%" PRId64 ",\"iter\":%d,\"graph_replay\":%d,"
            "\"mask\":%d,\"emitted\":%s,\"tid\":%d,\"launch_start_ns\":%" PRId64 ",\"launch_end_ns\":%" PRId64
            ",\"kernel_start_ns\":%" PRId64 ",\"kernel_end_ns\":%" PRId64 ",\"net_ops\":%d,\"proxy_rank\":%d",
            o->nChannels, o->root, o->peer, o->seq, o->iter, o->graph_replay, o->mask, o->emitted ? "true" : "false",
            o->tid, o->launch_start, o->launch_end, o->kernel_start, o->kernel_end, o->net_ops, o->proxy_rank);
    /* added for NCCL 2.31 */
    fprintf(f, ",\"api_ns\":%" PRId64, o->api_ns);
    fprintf(f, ",\"userTag\":%" PRIu64 ",\"isSymColl\":%s,\"kernelVariant\":", o->user_tag, o->is_sym ? "true" : "false");
    jstr(f, o->kernel_variant);
    fputc('}', f);
  }
  fputs("],\n", f);
}

static void write_kch(struct rp_truth *t, FILE *f) {
  fputs("\"kernel_ch\":[", f);
  int nk = atomic_load(&t->nkch);
  for (int i = 0; i < nk; i++) {
    struct rp_truth_kch *k = &t->kch[i];
    fprintf(f,
            "%s\n {\"rank\":%d,\"channel\":%d,\"op\":%d,\"counter\":%" PRIu64 ",\"start_counter\":%" PRIu64
            ",\"stop_counter\":%" PRIu64 ",\"start_ptimer\":%" PRIu64 ",\"stop_ptimer\":%" PRIu64
            ",\"true_start_gpu\":%" PRIu64 ",\"true_stop_gpu\":%" PRIu64 ",\"true_start_ns\":%" PRId64
            ",\"true_stop_ns\":%" PRId64 ",\"notice_start_ns\":%" PRId64 ",\"notice_stop_ns\":%" PRId64
            ",\"posted_ns\":%" PRId64 ",\"appended_ns\":%" PRId64
            ",\"proxy_tid\":%d,\"started\":%s,\"stopped\":%s,\"overrun\":%s,\"reporter\":\"%s\"}",
            i ? "," : "", k->rank, k->channel, k->op, k->counter, k->start_counter, k->stop_counter, k->start_ptimer,
            k->stop_ptimer, k->true_start_gpu, k->true_stop_gpu, k->true_start_ns, k->true_stop_ns,
            k->notice_start_ns, k->notice_stop_ns, k->posted_ns, k->appended_ns, k->proxy_tid, k->started ? "true" : "false",
            k->stopped ? "true" : "false", k->overrun ? "true" : "false", k->by_profiler ? "profiler" : "proxy");
  }
  fputs("],\n\"kernel_phase\":[", f);
  int np = atomic_load(&t->nphase);
  for (int i = 0; i < np; i++) {
    struct rp_truth_phase *p = &t->phase[i];
    fprintf(f,
            "%s\n {\"kch\":%d,\"rank\":%d,\"channel\":%d,\"phase\":%d,\"name\":\"%s\",\"start_ptimer\":%" PRIu64
            ",\"stop_ptimer\":%" PRIu64 ",\"tid\":%d}",
            i ? "," : "", p->kch, p->rank, p->channel, p->phase, rp_phase_names[p->phase], p->start_ptimer,
            p->stop_ptimer, p->tid);
  }
  fputs("],\n", f);
}

static void write_misc(struct rp_truth *t, FILE *f) {
  fputs("\"hazards\":[", f);
  int nh = atomic_load(&t->nhaz);
  for (int i = 0; i < nh; i++) {
    fprintf(f, "%s\n {\"kind\":", i ? "," : "");
    jstr(f, t->haz[i].kind);
    fprintf(f, ",\"rank\":%d,\"t_ns\":%" PRId64 ",\"detail\":%" PRId64 "}", t->haz[i].rank, t->haz[i].t_ns,
            t->haz[i].detail);
  }
  fputs("],\n\"starvation\":[", f);
  int ns = atomic_load(&t->nstarve);
  for (int i = 0; i < ns; i++) {
    struct rp_truth_starve *s = &t->starve[i];
    fprintf(f, "%s\n {\"rank\":%d,\"proxy_tid\":%d,\"cpu\":%d,\"hog_tids\":[", i ? "," : "", s->rank, s->proxy_tid,
            s->cpu);
    for (int h = 0; h < s->nhogs; h++) fprintf(f, "%s%d", h ? "," : "", s->hog_tids[h]);
    fprintf(f, "],\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 "}", s->start_ns, s->end_ns);
  }
  fputs("],\n\"mask_changes\":[", f);
  int nm = atomic_load(&t->nmask);
  for (int i = 0; i < nm; i++) {
    struct rp_truth_mask *m = &t->mask[i];
    fprintf(f, "%s\n {\"iter\":%d,\"t_ns\":%" PRId64 ",\"old\":%d,\"new\":%d,\"via\":", i ? "," : "", m->iter,
            m->t_ns, m->old_mask, m->new_mask);
    jstr(f, m->via);
    fputc('}', f);
  }
  fprintf(f, "],\n\"truth_drops\":%d", atomic_load(&t->drops));
}

/* Seconds and ns of "monotonic" in /proc/self/timens_offsets; 0 without time namespaces. */
static int64_t timens_mono_offset(void) {
  FILE *f = fopen("/proc/self/timens_offsets", "r");
  if (!f) return 0;
  char name[32];
  long long s, ns;
  int64_t off = 0;
  while (fscanf(f, "%31s %lld %lld", name, &s, &ns) == 3)
    if (!strcmp(name, "monotonic")) off = (int64_t)s * 1000000000LL + ns;
  fclose(f);
  return off;
}

void rp_truth_write_process(struct rp_node *n, FILE *f) {
  fprintf(f, "{\"node\":%d,\"pid\":%d,\"app_tid\":%d,\"host_cb_tid\":%d,\"api\":%d,\"nccl_version\":%d,\"plugin\":",
          n->node, (int)getpid(), n->app_tid, atomic_load(&n->cb_tid), n->plugin.api, rp_nccl_version);
  jstr(f, n->plugin.path);
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  fputs(",\"host\":", f);
  jstr(f, host);
  /* Ground truth for aligning "hosts" (time namespaces): this process's
   * CLOCK_MONOTONIC = the machine's + timens_mono_offset_ns, exactly; and
   * REALTIME - MONOTONIC as measured here (bracketed, ~100 ns). */
  fprintf(f, ",\"timens_mono_offset_ns\":%" PRId64 ",\"realtime_minus_mono_ns\":%" PRId64, timens_mono_offset(),
          rp_board_delta());
  /* --kineto: the wall clock error its Kineto files carry (rp_kineto.h) */
  if (n->o->kineto_dir) fprintf(f, ",\"kineto_wall_error_ns\":%" PRId64, rp_kineto_wall_error_ns(n));
  fprintf(f, ",\"warn_count\":%d,\"calls\":%ld,\"finalized\":%s,\"reloaded\":%s,\"final_mask\":%d,\n",
          atomic_load(&rp_warn_count), n->calls_before + (n->o->no_finalize ? atomic_load(&n->plugin.calls) : 0),
          n->o->no_finalize ? "false" : "true",
          n->o->reload ? "true" : "false", rp_mask_load());
  write_comms(n, f);
  write_ranks(n, f);
  write_ops(n->truth, f);
  write_kch(n->truth, f);
  write_misc(n->truth, f);
  rp_net_truth_write(n, f);
  rp_hang_truth_write(n, f);
  fputs("}", f);
}
