/* "What to look at next": findings derived from the report's numbers, each a
 * Markdown bullet that says what was seen (with the numbers) and where to
 * look. Thresholds are deliberately coarse; each says why it is what it is. */
#include <inttypes.h>
#include <string.h>

#include "nccl-lens/nccl_profiler_abi.h"
#include "report/report_md.h"
#include "validate/validate_print.h"
#include "hang/hang_print.h"
#include "job/job_print.h"
#include "report/report_view.h"

static const char *nz(const char *s) { return s && *s ? s : "-"; }

/* Names from the traces are escaped (lens_fmt_md, format.h); a command
 * line to copy names a communicator by its hex id and holds nothing else
 * from a trace (lens_report_export_cmd): no name needs shell quoting. */
#define MD_LABEL LENS_FMT_MD_SIZE(128)
static double avg(const struct lens_stat *s) { return s->n ? (double)s->sum / (double)s->n : 0.0; }

/* Whether the job view names this rank of this communicator a straggler. */
static int job_names(const struct lens_report_view *v, uint64_t comm_id, int rank) {
  for (size_t i = 0; v && i < v->j.n_stragglers; i++)
    if (v->j.stragglers[i].comm_id == comm_id && v->j.stragglers[i].rank == rank) return 1;
  return 0;
}

/* The latest rank of each communicator, when it is late by at least 10 us
 * on average (below that, launch jitter) and at least twice the next one.
 * Not a rank the job view names a straggler (v, may be NULL): its hint
 * already gives the cause by the job view's rule, and a second guess here
 * (launch order) would contradict it. */
static int late_ranks(FILE *f, const struct lens_model *m, const struct lens_report *r,
                      const struct lens_report_view *v) {
  int n = 0;
  for (size_t i = 0; i < r->n_late; i++) {
    const struct lens_rep_late *w = &r->late[i];
    if (job_names(v, w->comm_id, w->rank)) continue;
    double a = w->n ? (double)w->sum_ns / (double)w->n : 0;
    int worst = 1;
    double second = 0;
    for (size_t j = 0; j < r->n_late; j++) {
      const struct lens_rep_late *o = &r->late[j];
      if (j == i || o->comm_id != w->comm_id) continue;
      double b = o->n ? (double)o->sum_ns / (double)o->n : 0;
      if (b > a || (b == a && j < i)) worst = 0;
      if (b > second) second = b;
    }
    if (!worst || a < 10e3 || a < 2 * second) continue;
    char s[32], mx[32], lb[48], mb[MD_LABEL], hb[MD_LABEL];
    lens_fmt_ns(a, s, sizeof s);
    lens_fmt_ns((double)w->max_ns, mx, sizeof mx);
    if (w->same_thread_n * 2 > w->n) { /* mostly one thread launching several ranks: launch order */
      const struct lens_thread *t = w->thread >= 0 ? &m->threads[w->thread] : NULL;
      fprintf(f, "- **Rank %d of %s starts %s after the first rank on average** (max %s, last in %" PRIu64 " of %" PRIu64
                 " operations), but one thread (tid %u of %s:%u) starts its collectives and those of other ranks of "
                 "this communicator one after another: that is the order in which one thread drives several GPUs, "
                 "not compute imbalance. One thread or process per GPU removes it.\n",
              w->rank, lens_fmt_md(lens_fmt_comm_label(w->comm_name, w->comm_id, lb, sizeof lb), mb, sizeof mb), s, mx,
              w->last_n, w->n, t ? t->tid : 0, lens_fmt_md(t ? m->procs[t->proc].host : "?", hb, sizeof hb),
              t ? m->procs[t->proc].pid : 0);
      n++;
      continue;
    }
    fprintf(f, "- **Rank %d of %s arrives %s late on average** (max %s, last to arrive in %" PRIu64 " of %" PRIu64
               " operations): the other ranks wait for it inside the collective. Look at what rank %d does before "
               "its collectives (compute imbalance, data loading, host synchronisation).\n",
            w->rank, lens_fmt_md(lens_fmt_comm_label(w->comm_name, w->comm_id, lb, sizeof lb), mb, sizeof mb), s, mx,
            w->last_n, w->n, w->rank);
    n++;
  }
  return n;
}

/* Rows whose slowest completion is 10x their average (at least 4 ops):
 * stragglers rather than steady cost. At most three, slowest first. */
static int outliers(FILE *f, const struct lens_report *r) {
  const struct lens_summary *s = &r->sum;
  int n = 0;
  uint64_t prev_max = UINT64_MAX;
  for (int k = 0; k < 3; k++) {
    const struct lens_sum_row *best = NULL;
    for (size_t i = 0; i < s->n_rows; i++) {
      const struct lens_sum_row *w = &s->rows[i];
      if (w->completion.n < 4 || (double)w->completion.max < 10 * avg(&w->completion)) continue;
      if (w->completion.max >= prev_max) continue;
      if (!best || w->completion.max > best->completion.max) best = w;
    }
    if (!best) break;
    prev_max = best->completion.max;
    char size[32], a[32], mx[32], lb[48], fl[96], al[96];
    char mf[LENS_FMT_MD_SIZE(sizeof fl)], ma[LENS_FMT_MD_SIZE(sizeof al)], mp[MD_LABEL], mb[MD_LABEL];
    lens_size_bucket_label(best->bucket, size, sizeof size);
    lens_fmt_ns(avg(&best->completion), a, sizeof a);
    lens_fmt_ns((double)best->completion.max, mx, sizeof mx);
    /* The average is over the operations with a completion time; the row
     * counts them all: say both when they differ. */
    char over[96];
    if (best->completion.n == best->count)
      snprintf(over, sizeof over, "%" PRIu64 " operations", best->count);
    else
      snprintf(over, sizeof over, "the %" PRIu64 " of %" PRIu64 " operations that have a completion time",
               best->completion.n, best->count);
    fprintf(f, "- **Stragglers: %s %s/%s %s on %s**: slowest completion %s is %.0fx the average %s over %s. Find that "
               "operation in the timeline (`nccl-lens export`) and see what its ranks and proxy thread were doing.\n",
            lens_fmt_md(lens_summary_func_label(best, fl, sizeof fl), mf, sizeof mf),
            lens_fmt_md(lens_summary_algo_label(best, al, sizeof al), ma, sizeof ma), lens_fmt_md(nz(best->proto), mp, sizeof mp),
            size,
            lens_fmt_md(lens_fmt_comm_label(s->groups[best->group].name, s->groups[best->group].comm_id, lb, sizeof lb),
                        mb, sizeof mb),
            mx,
            (double)best->completion.max / avg(&best->completion), a, over);
    n++;
  }
  return n;
}

/* Host enqueue slower than the operations themselves: launch-bound. By a
 * margin (LAUNCH_BOUND_RATIO): averages 0.6 % apart (229.6 against 228.3 us
 * on a 1,024-rank job) are the same time, not a bound. */
#define LAUNCH_BOUND_RATIO 1.25
static int launch_bound(FILE *f, const struct lens_report *r) {
  const struct lens_summary *s = &r->sum;
  int n = 0;
  for (size_t g = 0; g < s->n_groups; g++) {
    struct lens_stat enq = {0}, comp = {0};
    for (size_t i = 0; i < s->n_rows; i++) {
      const struct lens_sum_row *w = &s->rows[i];
      if (w->group != (int32_t)g) continue;
      enq.n += w->enqueue.n;
      enq.sum += w->enqueue.sum;
      comp.n += w->completion.n;
      comp.sum += w->completion.sum;
    }
    if (!comp.n || !enq.n || avg(&enq) < LAUNCH_BOUND_RATIO * avg(&comp)) continue;
    char a[32], b[32], lb[48], mb[MD_LABEL];
    lens_fmt_ns(avg(&enq), a, sizeof a);
    lens_fmt_ns(avg(&comp), b, sizeof b);
    fprintf(f, "- **%s is launch-bound**: enqueueing an operation takes %s on the host on average, %.1fx "
               "the %s it takes to complete. Group or fuse small operations, or capture them in a CUDA graph.\n",
            lens_fmt_md(lens_fmt_comm_label(s->groups[g].name, s->groups[g].comm_id, lb, sizeof lb), mb, sizeof mb), a,
            avg(&enq) / avg(&comp), b);
    n++;
  }
  return n;
}

static int starved(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  if (!r->n_sched || !r->kernel_ch_starved) return 0;
  const struct lens_rep_starve *w = NULL;
  for (size_t i = 0; i < r->n_starve; i++)
    if (!w || r->starve[i].starved_ns > w->starved_ns) w = &r->starve[i];
  char ns[32];
  lens_fmt_ns(w ? (double)w->starved_ns : 0, ns, sizeof ns);
  fprintf(f, "- **%.1f%% of KernelCh starved** (%" PRIu64 " of %" PRIu64 "): their proxy thread was runnable but "
             "not running while they completed; worst thread tid %u (%s starved). Give the proxy thread a core of "
             "its own (CPU affinity, fewer data-loader threads).\n",
          r->kernel_ch ? 100.0 * (double)r->kernel_ch_starved / (double)r->kernel_ch : 0.0, r->kernel_ch_starved,
          r->kernel_ch, w ? m->threads[w->thread].tid : 0, ns);
  return 1;
}

static int accuracy(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  if (!r->gpu_ran || !r->kernel_ch) return 0;
  const struct lens_validate_verdict *v = &r->gpu;
  int n = 0;
  if (strcmp(v->level, "trusted")) {
    fprintf(f, "- **GPU timing %s**: %s. `nccl-lens validate` lists each launch.\n", v->level, v->text);
    n++;
  }
  uint64_t over = r->sum.acc_counts[__builtin_ctz(LENS_ACC_RING_OVERRUN)];
  if (over) {
    fprintf(f, "- **%" PRIu64 " KernelCh suspected of a timer-ring overrun**: the proxy thread fell more than 64 "
               "work items behind the GPU, so those timers may belong to later items.\n",
            over);
    n++;
  }
  return n;
}

static int losses(FILE *f, const struct lens_model *m) {
  uint64_t ring = 0, slot = 0, werr = 0;
  for (size_t p = 0; p < m->n_procs; p++) {
    ring += m->procs[p].drops.ring_full;
    slot += m->procs[p].drops.no_thread_slot;
    werr += m->procs[p].drops.write_errors;
  }
  int n = 0;
  if (ring) {
    fprintf(f, "- **%" PRIu64 " records dropped on full rings**: raise `NCCL_LENS_BUFFER_SIZE`.\n", ring);
    n++;
  }
  if (slot) {
    fprintf(f, "- **%" PRIu64 " records from threads without a slot**: raise `NCCL_LENS_MAX_THREADS`.\n", slot);
    n++;
  }
  if (werr) {
    fprintf(f, "- **%" PRIu64 " trace writes failed**: check the trace directory's disk.\n", werr);
    n++;
  }
  size_t cut = 0, unclean = 0;
  for (size_t i = 0; i < m->n_files; i++) {
    cut += m->files[i].truncated_bytes != 0;
    unclean += !m->files[i].clean_end && m->files[i].producer != LENS_PRODUCER_SCHED;
  }
  if (cut || unclean) {
    fprintf(f, "- **%zu file(s) cut short, %zu without a clean end**: the job (or a rank) was killed; the last "
               "operations before the cut are missing.\n",
            cut, unclean);
    n++;
  }
  if (m->orphan_stops) {
    fprintf(f, "- **%" PRIu64 " orphan stops**: their starts were lost (drops or a cut); counts above are low by "
               "about that much.\n",
            m->orphan_stops);
    n++;
  }
  return n;
}

/* Event types the numbers above need but the mask left out. */
static int mask_gaps(FILE *f, const struct lens_model *m) {
  uint32_t all = ~0u;
  for (size_t p = 0; p < m->n_procs; p++) all &= m->procs[p].event_mask;
  if (!m->n_procs) return 0;
  int n = 0;
  if (!(all & LENS_EV_KERNEL_CH)) {
    fprintf(f, "- **KernelCh not recorded everywhere**: without it there is no GPU time per channel; add "
               "`kernelch` to `NCCL_LENS_EVENT_MASK`.\n");
    n++;
  }
  if (!(all & LENS_EV_PROXY_OP)) {
    fprintf(f, "- **ProxyOp not recorded everywhere**: network progress is invisible; add `proxyop` to "
               "`NCCL_LENS_EVENT_MASK`.\n");
    n++;
  }
  return n;
}

/* The network view's slow links (lens_net_link_is_slow: their own wire time
 * makes their steps >= 2x slower), named by their dominant phase. At most
 * three. */
static int slow_links(FILE *f, const struct lens_report *r) {
  const struct lens_net *net = r->net;
  int n = 0;
  for (size_t i = 0; net && i < net->n_conns && n < 3; i++) {
    const struct lens_net_conn *c = &net->conns[i];
    /* net's rule (lens_net_link_is_slow): a connection that stands out
     * because its sender waits on its GPU, or its receiver on its own, is
     * no slow link; the job view names those causes. */
    if (!c->slow) continue;
    char why[96];
    if (c->own_ratio > 0)
      snprintf(why, sizeof why, "wire time per byte %.1fx the typical, steps %.1fx", c->wire_ratio, c->own_ratio);
    else
      snprintf(why, sizeof why, "steps %.1fx the typical time", c->score);
    fprintf(f, "- **Slow link r%d -> r%d (channel %d): %s**, mostly %s (`%s`)%s. "
               "`nccl-lens net` splits every step of it.\n",
            c->src, c->dst, c->channel, why, lens_net_phase_text(c->dominant), lens_net_phase_name(c->dominant),
            c->reverse >= 0 && c->asymmetry >= 1.5 ? "; the other direction is not" : "");
    n++;
  }
  return n;
}

/* The job view's stragglers (the same as `nccl-lens job`), each with the
 * instance where the others waited longest for it: its seq, its time on the
 * job time base and the export command that shows that window. At most three. */
static int stragglers(FILE *f, const struct lens_model *m, const struct lens_report_view *v) {
  int n = 0;
  for (size_t i = 0; i < v->j.n_stragglers && i < 3; i++) {
    const struct lens_job_straggler *s = &v->j.stragglers[i];
    const struct lens_comm *c = NULL;
    for (size_t k = 0; k < m->n_comms && !c; k++)
      if (m->comms[k].comm_id == s->comm_id) c = &m->comms[k];
    char lb[48], mb[MD_LABEL], hb[MD_LABEL];
    fprintf(f, "- **Straggler: rank %d of %s (%s:%u) made the others wait %.3f ms** in %" PRIu64 " instance%s "
               "(%.1f%% of the ranks' collective time), mostly %s.",
            s->rank, lens_fmt_md(lens_fmt_comm_label(c ? c->name : NULL, s->comm_id, lb, sizeof lb), mb, sizeof mb),
            lens_fmt_md(s->proc >= 0 ? m->procs[s->proc].host : "?", hb, sizeof hb), s->proc >= 0 ? m->procs[s->proc].pid : 0,
            s->wait_caused_ns / 1e6, s->times_last, s->times_last == 1 ? "" : "s",
            v->coll_ns ? 100.0 * (double)s->wait_caused_ns / (double)v->coll_ns : 0.0,
            lens_job_straggler_top_words(s));
    const struct lens_job_inst *worst;
    struct lens_report_window w;
    if (lens_report_straggler_instances(v, s, &worst, 1)) {
      lens_report_window_of(v, worst, lens_report_origin(v, s->comm_id), &w);
      char fb[MD_LABEL];
      fprintf(f, " Look first at %s seq %" PRId64 " (rank %d last, the others waited %.1f us in all",
              lens_fmt_md(nz(worst->func), fb, sizeof fb), worst->seq, s->rank, worst->wait_sum_ns / 1e3);
      if (w.ok) {
        char cmd[256]; /* numbers and fixed words only: safe to paste, and in a code span as it is */
        lens_report_export_cmd(worst, &w, cmd, sizeof cmd);
        fprintf(f, "; at %.6f s job time): `%s`", w.t_s, cmd);
      } else {
        fputs(")", f);
      }
      fputc('.', f);
    }
    fputc('\n', f);
    n++;
  }
  return n;
}

int lens_report_print_hints(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  int n = 0;
  struct lens_report_view v; /* a stuck collective first: the same analysis as `nccl-lens hang` */
  if (lens_report_view_build(m, r, &v) == 0) {
    if (v.h.n_stuck_comms) lens_hang_print_headline_md(f, &v.h), n++;
    n += stragglers(f, m, &v);
    n += late_ranks(f, m, r, &v);
    lens_report_view_free(&v);
  } else {
    n += late_ranks(f, m, r, NULL);
  }
  n += slow_links(f, r);
  n += starved(f, m, r);
  n += outliers(f, r);
  n += launch_bound(f, r);
  n += accuracy(f, m, r);
  n += losses(f, m);
  n += mask_gaps(f, m);
  if (!r->n_sched && r->sum.n_proxies) {
    fprintf(f, "- No scheduler probe trace: run the job under `nccl-lens sched` to see whether the proxy threads "
               "are starved of CPU.\n");
    n++;
  }
  return n;
}
