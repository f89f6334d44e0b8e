/* See net_print.h. Text and Markdown share one row builder, so the report's
 * section and `nccl-lens net` never disagree. */
#include "net/net_print.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/json_out.h"
#include "cli/format.h"

#define TOP_INSTANCES LENS_NET_PRINT_TOP_INSTANCES
#define TOP_ASYM 5
#define ASYM_RATIO 1.5 /* A->B at least this many times B->A's score */

static double pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0.0; }

/* The connections table's bytes column holds any lens_fmt_bytes text. */
#define BYTES_WIDTH LENS_FMT_BYTES_WIDTH

static int digits(uint64_t v) {
  int d = 1;
  while (v >= 10) v /= 10, d++;
  return d;
}

static const char *comm_label(const struct lens_model *m, int32_t comm, uint64_t comm_id, char *buf, size_t len) {
  const char *name = comm >= 0 && (size_t)comm < m->n_comms ? m->comms[comm].name : NULL;
  if (name && *name) return name;
  return lens_fmt_comm_label(NULL, comm_id, buf, len);
}

/* Time shares of a split's own step time, by phase. */
static double share(const struct lens_net_split *s, int phase) { return pct(s->phase_ns[phase], s->step_ns); }

/* One connection as table cells. */
struct conn_row {
  char comm[128], link[40], bytes[24], gbps[16], p50[20], p99[20], send[40], recv[40], dom[48];
  uint64_t steps;
  int ch;
  double score;
  int stands_out;
};

static void conn_row(const struct lens_model *m, const struct lens_net *n, const struct lens_net_conn *c,
                     struct conn_row *r) {
  memset(r, 0, sizeof *r);
  const struct lens_net_link *s = c->send_link >= 0 ? &n->links[c->send_link] : NULL;
  const struct lens_net_link *v = c->recv_link >= 0 ? &n->links[c->recv_link] : NULL;
  const struct lens_net_link *a = s ? s : v;
  char cb[32];
  snprintf(r->comm, sizeof r->comm, "%s", comm_label(m, c->comm, c->comm_id, cb, sizeof cb));
  snprintf(r->link, sizeof r->link, "r%d -> r%d", c->src, c->dst);
  r->ch = c->channel;
  r->steps = a->t.steps;
  lens_fmt_bytes(a->t.bytes, r->bytes, sizeof r->bytes);
  lens_fmt_gbps(a->gbps, r->gbps, sizeof r->gbps); /* "-": no wire time */
  lens_fmt_ns((double)a->p50_step_ns, r->p50, sizeof r->p50);
  lens_fmt_ns((double)a->p99_step_ns, r->p99, sizeof r->p99);
  if (s)
    snprintf(r->send, sizeof r->send, "%.0f/%.0f/%.0f", share(&s->t, LENS_NET_SEND_GPU_WAIT),
             share(&s->t, LENS_NET_SEND_PEER_WAIT), share(&s->t, LENS_NET_SEND_WIRE));
  else snprintf(r->send, sizeof r->send, "-");
  if (v)
    snprintf(r->recv, sizeof r->recv, "%.0f/%.0f/%.0f", share(&v->t, LENS_NET_RECV_DATA_WAIT),
             share(&v->t, LENS_NET_RECV_FLUSH), share(&v->t, LENS_NET_RECV_GPU_WAIT));
  else snprintf(r->recv, sizeof r->recv, "-");
  snprintf(r->dom, sizeof r->dom, "%s", lens_net_phase_name(c->dominant));
  r->score = c->score;
  r->stands_out = c->stands_out;
}

static size_t count_standing_out(const struct lens_net *n) {
  size_t k = 0;
  for (size_t i = 0; i < n->n_conns; i++) k += n->conns[i].stands_out;
  return k;
}

static void headline(FILE *f, const struct lens_net *n, const char *pre) {
  char b[24];
  lens_fmt_bytes(n->total.bytes, b, sizeof b);
  fprintf(f, "%s%zu links (%zu directed connections) of %d ranks: %" PRIu64 " network ops, %" PRIu64
             " steps timed, %s",
          pre, n->n_links, n->n_conns, n->n_ranks, n->total.ops, n->total.steps, b);
  if (n->total.untimed_steps)
    fprintf(f, ",\n%s%" PRIu64 " steps not timed (never stopped or restarted)", pre, n->total.untimed_steps);
  fputs("\n", f);
  const struct lens_net_split *s = &n->send_total, *r = &n->recv_total;
  char line[512], un[32] = "", run[32] = "";
  if (s->phase_ns[LENS_NET_UNKNOWN]) snprintf(un, sizeof un, ", unsplit %.1f%%", share(s, LENS_NET_UNKNOWN));
  if (r->phase_ns[LENS_NET_UNKNOWN]) snprintf(run, sizeof run, ", unsplit %.1f%%", share(r, LENS_NET_UNKNOWN));
  snprintf(line, sizeof line,
           "send time: GPU %.1f%%, peer %.1f%%, wire %.1f%%%s; receive time: waiting for data %.1f%%, flush %.1f%%, "
           "GPU %.1f%%%s",
           share(s, LENS_NET_SEND_GPU_WAIT), share(s, LENS_NET_SEND_PEER_WAIT), share(s, LENS_NET_SEND_WIRE), un,
           share(r, LENS_NET_RECV_DATA_WAIT), share(r, LENS_NET_RECV_FLUSH), share(r, LENS_NET_RECV_GPU_WAIT), run);
  /* text wraps at 120 columns; a Markdown list item (pre "- ") stays one line */
  lens_fmt_wrap(f, pre, "  ", line, *pre ? 1 << 20 : LENS_FMT_COLUMNS);
}

static void starvation_line(FILE *f, const struct lens_net *n, const char *pre) {
  if (!n->starvation_known) {
    fprintf(f, "%sstarvation: not measured (no scheduler probe trace given; `nccl-lens sched` records one)\n", pre);
    return;
  }
  char t[24];
  lens_fmt_ns((double)n->total.starved_ns, t, sizeof t);
  fprintf(f, "%s%" PRIu64 " steps (%s) overlapped a starved proxy thread: flagged and left out of the ranking, "
             "not blamed on the network\n",
          pre, n->total.starved_steps, t);
}

/* The slow links (lens_net_link_is_slow of lens_net_conn_slow_ratio: the
 * rule job and the report share; "pace": a connection without its
 * sender's trace, whose wire is not known, judged by its score),
 * one entry per sender -> receiver with its channels counted; or why none
 * is, when some connections stand out by pace alone. */
#define SLOW_LISTED 8
#define NET_COLUMNS 120
static void slow_line(FILE *f, const struct lens_net *n, const char *pre) {
  size_t links = 0, out = 0, listed = 0, few = 0;
  int col = 0;
  const struct lens_net_conn *first_out = NULL, *first_few = NULL;
  for (size_t i = 0; i < n->n_conns; i++) {
    const struct lens_net_conn *c = &n->conns[i];
    if (c->few_steps && !first_few) first_few = c;
    few += c->few_steps != 0;
    if (c->stands_out && !c->slow && !c->few_steps && !first_out) first_out = c;
    out += c->stands_out && !c->slow && !c->few_steps;
    if (!c->slow) continue;
    int seen = 0;
    for (size_t k = 0; k < i && !seen; k++) {
      const struct lens_net_conn *x = &n->conns[k];
      seen = x->slow && x->comm_id == c->comm_id && x->src == c->src && x->dst == c->dst;
    }
    if (seen) continue;
    links++;
    if (listed == SLOW_LISTED) continue;
    int chans = 0;
    for (size_t k = i; k < n->n_conns; k++) {
      const struct lens_net_conn *x = &n->conns[k];
      chans += x->slow && x->comm_id == c->comm_id && x->src == c->src && x->dst == c->dst;
    }
    char e[96];
    int len = c->own_ratio > 0
                  ? snprintf(e, sizeof e, "r%d -> r%d on %d channel%s (%s; %.1fx per byte, steps %.1fx)", c->src,
                             c->dst, chans, chans > 1 ? "s" : "", lens_net_phase_name(c->dominant), c->wire_ratio,
                             c->own_ratio)
                  : snprintf(e, sizeof e, "r%d -> r%d on %d channel%s (%s; pace %.1fx)", c->src, c->dst, chans,
                             chans > 1 ? "s" : "", lens_net_phase_name(c->dominant), c->score);
    if (!listed) {
      col = fprintf(f, "%sslow links (their wire makes steps >= %.1fx slower): ", pre, LENS_NET_STANDOUT);
      if (col + len > NET_COLUMNS) col = fprintf(f, "\n  ") - 1;
    } else if (col + 2 + len > NET_COLUMNS - 12) { /* room left for ", N more" */
      col = fprintf(f, ",\n  ") - 2;
    } else {
      col += fprintf(f, ", ");
    }
    col += fprintf(f, "%s", e);
    listed++;
  }
  if (links > listed) fprintf(f, ", %zu more", links - listed);
  if (links) {
    fputs("\n", f);
    return;
  }
  fprintf(f, "%sslow links: none", pre);
  if (out && lens_net_phase_on_network(first_out->dominant, first_out->send_link >= 0, first_out->recv_link >= 0))
    fprintf(f, "; the %zu connection%s standing out wait%s: %s wire does not make %s steps %.1fx slower", out,
            out > 1 ? "s" : "", out > 1 ? "" : "s", out > 1 ? "their" : "its", out > 1 ? "their" : "its",
            LENS_NET_STANDOUT);
  else if (out)
    fprintf(f, "; the %zu connection%s standing out wait%s on %s, not on the network", out, out > 1 ? "s" : "",
            out > 1 ? "" : "s", lens_net_phase_name(first_out->dominant));
  fputs("\n", f);
  if (few) /* slow by the rule on a step or three: a moment, not a link's pace */
    fprintf(f, "%s%zu connection%s slow by the rule on fewer than %d timed steps, too few to judge (r%d -> r%d ch %d)\n",
            pre, few, few > 1 ? "s" : "", LENS_NET_SLOW_MIN_STEPS, first_few->src, first_few->dst, first_few->channel);
}

static size_t shown(const struct lens_net *n, int top) { return top <= 0 || (size_t)top > n->n_conns ? n->n_conns : (size_t)top; }

/* Asymmetric pairs, each listed once from its slower side. */
static void asymmetry(FILE *f, const struct lens_net *n, int md) {
  int k = 0;
  for (size_t i = 0; i < n->n_conns && k < TOP_ASYM; i++) {
    const struct lens_net_conn *c = &n->conns[i];
    if (c->reverse < 0 || c->asymmetry < ASYM_RATIO) continue;
    const struct lens_net_conn *r = &n->conns[c->reverse];
    if (!k++) fprintf(f, md ? "\nAsymmetry (A -> B against B -> A on the same channel):\n\n"
                            : "\nasymmetry (A -> B against B -> A on the same channel)\n");
    fprintf(f, "%sr%d -> r%d ch %d: %.1fx as slow as r%d -> r%d (score %.2f vs %.2f; %s vs %s)\n", md ? "- " : "  ",
            c->src, c->dst, c->channel, c->asymmetry, r->src, r->dst, c->score, r->score,
            lens_net_phase_name(c->dominant), lens_net_phase_name(r->dominant));
  }
  if (!k) fprintf(f, md ? "\nNo asymmetry: every pair's directions are within %.1fx of each other.\n"
                        : "\nasymmetry: none (every pair's directions within %.1fx)\n", ASYM_RATIO);
}

/* Who arrived last at an instance, by the job view's rule (the view's
 * last_rank): "r363 +989.43 us" (how long the first rank waited for it),
 * "none" (no rank past the straggler threshold), "?" (not decomposed). */
static const char *last_in(const struct lens_net *n, const struct lens_net_inst *e, char *buf, size_t len) {
  if (!n->arrival_known || e->last_rank == LENS_NET_LAST_UNKNOWN) return "?";
  if (e->last_rank < 0) return "none";
  char t[24];
  lens_fmt_ns((double)e->last_wait_ns, t, sizeof t);
  snprintf(buf, len, "r%d +%s", e->last_rank, t);
  return buf;
}

/* Under the table: an instance whose first row (its rank with the most
 * network step time: rows go most first) is not its last rank's. Its steps
 * waited most (a late rank's neighbours wait on the wire for its data); the
 * job view's rule says who came late. */
static int same_inst(const struct lens_net_inst *a, const struct lens_net_inst *b) {
  return a->kind == b->kind && a->comm_id == b->comm_id && a->seq == b->seq && !strcmp(a->func, b->func);
}
static void last_notes(FILE *f, const struct lens_net_inst *v, size_t show, int md) {
  int said = 0;
  for (size_t i = 0; i < show; i++) {
    const struct lens_net_inst *e = &v[i];
    if (e->kind != LENS_T_COLL || e->last_rank < 0 || e->last_rank == e->rank) continue;
    size_t k = 0;
    while (k < i && !same_inst(&v[k], e)) k++;
    if (k < i) continue; /* not the instance's first row */
    char t[24];
    lens_fmt_ns((double)e->last_wait_ns, t, sizeof t);
    if (md && !said++) fputc('\n', f);
    char fb[LENS_FMT_MD_SIZE(128)];
    if (md)
      fprintf(f, "- %s seq %" PRIu64 ": r%d waited most on the network; r%d arrived last (the job view's rule, the "
                 "first rank waited %s for it): look at r%d first.\n",
              lens_fmt_md(e->func, fb, sizeof fb), e->seq, e->rank, e->last_rank, t, e->last_rank);
    else
      fprintf(f, "  %s seq %" PRIu64 ": r%d waited most on the network; last to arrive: r%d (job's rule, +%s)\n",
              e->func, e->seq, e->rank, e->last_rank, t);
  }
}

/* Instances of Coll/P2p with the most step time on the network (the view
 * holds them all for JSON, or only the top ones). */
static void top_instances(FILE *f, const struct lens_net *n, int md) {
  size_t k = n->n_insts;
  if (!k) return;
  const struct lens_net_inst *v = n->insts;
  struct lens_net_inst *sorted = NULL;
  if (!n->insts_top) { /* all of them, in event order */
    sorted = malloc(k * sizeof *sorted);
    if (!sorted) return;
    memcpy(sorted, v, k * sizeof *sorted);
    qsort(sorted, k, sizeof *sorted, lens_net_inst_by_step_ns);
    v = sorted;
  }
  size_t show = k < TOP_INSTANCES ? k : TOP_INSTANCES;
  if (md)
    fprintf(f, "\nCollective instances with the most network step time (%zu of %" PRIu64 "; a row is one rank's "
               "network ops; *last in*: the rank that arrived last by the job view's rule, and how long the first "
               "rank waited for it; none: no rank was late; ?: the job view did not decompose the instance):\n\n"
               "| rank | op | seq | steps | step time | GPU | peer | wire | recv data | recv GPU | dominant | last in |\n"
               "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
            show, n->insts_total);
  else
    fprintf(f, "\ncollective instances with the most network step time (%zu of %" PRIu64 "; a row: one rank's "
               "network ops;\n  last in: who arrived last by the job view's rule, +the first rank's wait; none: no one late; "
               "?: not decomposed)\n"
               "  rank  op                seq   steps  step time   GPU%%  peer%%  wire%%  rdata%%  rGPU%%  dominant"
               "        last in\n",
            show, n->insts_total);
  for (size_t i = 0; i < show; i++) {
    const struct lens_net_inst *e = &v[i];
    const struct lens_net_split *s = &e->s;
    char t[24], last[48];
    lens_fmt_ns((double)s->step_ns, t, sizeof t);
    char seq[24] = "-"; /* p2p has no seqNumber */
    if (e->has_seq) snprintf(seq, sizeof seq, "%" PRIu64, e->seq);
    char fb[LENS_FMT_MD_SIZE(128)];
    if (md)
      fprintf(f, "| %d | %s | %s | %" PRIu64 " | %s | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %s | %s |\n",
              e->rank, lens_fmt_md(e->func, fb, sizeof fb), seq, s->steps, t, share(s, 0), share(s, 1), share(s, 2), share(s, 3),
              share(s, 5), lens_net_phase_name(lens_net_split_dominant(s)), last_in(n, e, last, sizeof last));
    else
      fprintf(f, "  %4d  %-14s %6s  %6" PRIu64 "  %-10s %5.0f  %5.0f  %5.0f  %6.0f  %5.0f  %-14s  %s\n", e->rank,
              e->func, seq, s->steps, t, share(s, 0), share(s, 1), share(s, 2), share(s, 3), share(s, 5),
              lens_net_phase_name(lens_net_split_dominant(s)), last_in(n, e, last, sizeof last));
  }
  if (n->arrival_known) last_notes(f, v, show, md);
  free(sorted);
}

static void qps(FILE *f, const struct lens_net *n, int md) {
  if (!n->net_plugin_events) {
    fprintf(f, md ? "\nNo NetPlugin events (NCCL reports them only when built with NET_PROFILER=1, and "
                    "`NCCL_LENS_EVENT_MASK` must include `net`).\n"
                  : "\nNetPlugin: no events (NCCL reports them only when built with NET_PROFILER=1; "
                    "NCCL_LENS_EVENT_MASK must include net)\n");
    return;
  }
  fprintf(f, md ? "\nNetPlugin events: %" PRIu64 " on %zu QPs/sockets%s\n\n"
                  "| rank | transport | dev | qp/fd | peer | ch | dir | events | bytes | p50 | max |\n"
                  "|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|\n"
                : "\nNetPlugin: %" PRIu64 " events on %zu QPs/sockets%s\n"
                  "  rank  transport  dev  qp/fd  peer  ch  dir   events  bytes        p50        max\n",
          n->net_plugin_events, n->n_qps, n->net_plugin_unparented ? " (some not under a known step)" : "");
  size_t show = n->n_qps < 16 ? n->n_qps : 16;
  for (size_t i = 0; i < show; i++) {
    const struct lens_net_qp *q = &n->qps[i];
    char b[24], p50[20], mx[20];
    lens_fmt_bytes(q->bytes, b, sizeof b);
    lens_fmt_ns((double)q->p50_ns, p50, sizeof p50);
    lens_fmt_ns((double)q->max_ns, mx, sizeof mx);
    const char *dir = q->dir == LENS_NET_DIR_SEND ? "send" : q->dir == LENS_NET_DIR_RECV ? "recv" : "-";
    if (md)
      fprintf(f, "| %d | %s | %d | %d | %d | %d | %s | %" PRIu64 " | %s | %s | %s |\n", q->rank,
              lens_net_transport_name(q->transport), q->device, q->qp_num, q->peer, q->channel, dir, q->events, b,
              p50, mx);
    else
      fprintf(f, "  %4d  %-9s  %3d  %5d  %4d  %2d  %-4s  %6" PRIu64 "  %-11s  %-9s  %s\n", q->rank,
              lens_net_transport_name(q->transport), q->device, q->qp_num, q->peer, q->channel, dir, q->events, b,
              p50, mx);
  }
  if (show < n->n_qps) fprintf(f, md ? "\n(%zu more in `nccl-lens net --json`)\n" : "  (%zu more: --json)\n", n->n_qps - show);
}

void lens_net_print_text(FILE *f, const struct lens_model *m, const struct lens_net *n, int top) {
  if (!n->n_links) {
    fprintf(f, "network: no ProxyOp events (no network transport, or the mask left out proxyop/proxystep)\n");
    return;
  }
  headline(f, n, "");
  starvation_line(f, n, "");
  slow_line(f, n, "");
  size_t show = shown(n, top), out = count_standing_out(n);
  fprintf(f, "\nslowest connections first: %zu of %zu stand out (score >= %.1f: steps %.1fx the typical time of "
             "steps of their size)\n",
          out, n->n_conns, LENS_NET_STANDOUT, LENS_NET_STANDOUT);
  /* Columns as wide as what they hold on the rows shown, so a big job stays
   * aligned: the row number (4 digits with --top 0 on 1024 ranks), the link
   * ("r1000 -> r1001"), steps, bytes (9, up to BYTES_WIDTH), score; GB/s
   * LENS_FMT_GBPS_WIDTH (7), the send and receive splits 9 (three shares of
   * 100: at most "xx/xx/xx"). The communicator name is cut to what is left
   * of 120 columns, at most 12 (the phase name, last, up to 14 letters:
   * recv_data_wait). */
  int wn = 2, wl = 12, ws = 6, wsc = 5, wdom = 0, wch = 2, wb = 9;
  wn = digits(show) > wn ? digits(show) : wn;
  for (size_t i = 0; i < show; i++) {
    struct conn_row r;
    conn_row(m, n, &n->conns[i], &r);
    int l = (int)strlen(r.link), d = (int)strlen(r.dom), sc = snprintf(NULL, 0, "%.2f", r.score);
    if (l > wl) wl = l;
    if ((int)strlen(r.bytes) > wb) wb = (int)strlen(r.bytes);
    if (d > wdom) wdom = d;
    if (digits(r.steps) > ws) ws = digits(r.steps);
    if (sc > wsc) wsc = sc;
    if (r.ch > 99 && digits((uint64_t)r.ch) > wch) wch = digits((uint64_t)r.ch);
  }
  int rest = 1 + wn + 1 + 1 + wl + 1 + wch + 1 + ws + 1 + wb + 1 + LENS_FMT_GBPS_WIDTH + 4 * 10 + 1 + wsc + 3 + wdom;
  int wc = LENS_FMT_COLUMNS - rest;
  wc = wc > 12 ? 12 : wc < 4 ? 4 : wc;
  fprintf(f, " %*s %-*s %-*s %*s %*s %-*s %*s %-9s %-9s %-9s %-9s %*s   dominant\n", wn, "#", wc, "comm", wl, "link",
          wch, "ch", ws, "steps", wb, "bytes", LENS_FMT_GBPS_WIDTH, "GB/s", "p50 step", "p99 step",
          "snd g/p/w", "rcv d/f/g", wsc, "score");
  for (size_t i = 0; i < show; i++) {
    struct conn_row r;
    conn_row(m, n, &n->conns[i], &r);
    fprintf(f, " %*zu %-*.*s %-*s %*d %*" PRIu64 " %-*s %*s %-9s %-9s %-9s %-9s %*.2f%s %s\n", wn, i + 1, wc, wc,
            r.comm, wl, r.link, wch, r.ch, ws, r.steps, wb, r.bytes, LENS_FMT_GBPS_WIDTH, r.gbps, r.p50,
            r.p99, r.send, r.recv, wsc, r.score, r.stands_out ? " !" : "  ", r.dom);
  }
  if (show < n->n_conns) fprintf(f, "  (%zu more: --top N or --json)\n", n->n_conns - show);
  asymmetry(f, n, 0);
  top_instances(f, n, 0);
  qps(f, n, 0);
}

void lens_net_print_md(FILE *f, const struct lens_model *m, const struct lens_net *n, int top) {
  fprintf(f, "## Network\n\n");
  if (!n->n_links) {
    fprintf(f, "No ProxyOp events: no network transport was used, or the event mask left out ProxyOp and "
               "ProxyStep.\n\n");
    return;
  }
  headline(f, n, "- ");
  starvation_line(f, n, "- ");
  slow_line(f, n, "- ");
  size_t show = shown(n, top), out = count_standing_out(n);
  fprintf(f, "\nSlowest connections first (%zu of %zu shown; %zu stand out, marked !, with steps at least %.1fx "
             "the typical time for their size). Send: GPU/peer/wire %% of the sender's step time; receive: "
             "data/flush/GPU %% of the receiver's; `nccl-lens net` has the rest.\n\n"
             "| # | comm | link | ch | steps | bytes | GB/s | p50 step | p99 step | send g/p/w | recv d/f/g | score | "
             "dominant |\n|---:|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|---|\n",
          show, n->n_conns, out, LENS_NET_STANDOUT);
  for (size_t i = 0; i < show; i++) {
    struct conn_row r;
    conn_row(m, n, &n->conns[i], &r);
    char cb[LENS_FMT_MD_SIZE(sizeof r.comm)]; /* the communicator's name from the trace, escaped (format.h) */
    fprintf(f, "| %zu | %s | %s | %d | %" PRIu64 " | %s | %s | %s | %s | %s | %s | %.2f%s | %s |\n", i + 1,
            lens_fmt_md(r.comm, cb, sizeof cb), r.link, r.ch, r.steps, r.bytes, r.gbps, r.p50, r.p99, r.send, r.recv, r.score, r.stands_out ? " !" : "",
            r.dom);
  }
  asymmetry(f, n, 1);
  top_instances(f, n, 1);
  qps(f, n, 1);
  fputs("\n", f);
}

/* ---- JSON ---- */
static void jsplit(FILE *f, const struct lens_net_split *s) {
  fprintf(f, "\"ops\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"untimed_steps\":%" PRIu64 ",\"bytes\":%" PRIu64
             ",\"step_ns\":%" PRIu64,
          s->ops, s->steps, s->untimed_steps, s->bytes, s->step_ns);
  fputs(",\"phases_ns\":{", f);
  for (int p = 0; p < LENS_NET_NPHASES; p++)
    fprintf(f, "%s\"%s\":%" PRIu64, p ? "," : "", lens_net_phase_name(p), s->phase_ns[p]);
  fputc('}', f);
  fprintf(f, ",\"starved_steps\":%" PRIu64 ",\"starved_ns\":%" PRIu64, s->starved_steps, s->starved_ns);
}

static void jlink(FILE *f, const struct lens_model *m, const struct lens_net *n, size_t i) {
  const struct lens_net_link *l = &n->links[i];
  const struct lens_net_split *s = &l->t;
  int send = l->dir == LENS_NET_DIR_SEND;
  /* The contract's three waits, per direction (docs/net.md). */
  uint64_t gpu = send ? s->phase_ns[LENS_NET_SEND_GPU_WAIT] : s->phase_ns[LENS_NET_RECV_GPU_WAIT];
  uint64_t peer = send ? s->phase_ns[LENS_NET_SEND_PEER_WAIT] : s->phase_ns[LENS_NET_RECV_DATA_WAIT];
  uint64_t wire = send ? s->phase_ns[LENS_NET_SEND_WIRE] : 0;
  fprintf(f, "{\"rank\":%d,\"peer\":%d,\"channel\":%d,\"dir\":\"%s\",\"comm_id\":", l->rank, l->peer,
          l->channel, send ? "send" : "recv");
  lens_json_comm_id(f, l->comm_id);
  fputs(",\"comm_name\":", f);
  lens_json_str(f, l->comm >= 0 && (size_t)l->comm < m->n_comms && m->comms[l->comm].name[0] ? m->comms[l->comm].name
                                                                                             : NULL);
  fprintf(f, ",\"transport\":\"%s\",", lens_net_transport_name(l->transport));
  jsplit(f, s);
  fprintf(f, ",\"gpu_wait_ns\":%" PRIu64 ",\"peer_wait_ns\":%" PRIu64 ",\"wire_ns\":%" PRIu64, gpu, peer, wire);
  fputs(",\"gpu_share\":", f);
  lens_json_double(f, s->step_ns ? (double)gpu / (double)s->step_ns : 0);
  fputs(",\"peer_share\":", f);
  lens_json_double(f, s->step_ns ? (double)peer / (double)s->step_ns : 0);
  fputs(",\"wire_share\":", f);
  lens_json_double(f, s->step_ns ? (double)wire / (double)s->step_ns : 0);
  fputs(",\"wire_gbps\":", f);
  if (l->gbps > 0) lens_json_double(f, l->gbps);
  else fputs("null", f);
  fprintf(f, ",\"wire_gbps_from\":\"%s\"", send ? "own wire time" : l->gbps > 0 ? "sender's wire time" : "none");
  fprintf(f, ",\"p50_step_ns\":%" PRIu64 ",\"p99_step_ns\":%" PRIu64 ",\"max_step_ns\":%" PRIu64 ",\"dominant\":\"%s\"",
          l->p50_step_ns, l->p99_step_ns, l->max_step_ns, lens_net_phase_name(l->dominant));
  fputs(",\"score\":", f);
  lens_json_double(f, l->score);
  fprintf(f, ",\"connection\":%d,\"order\":%zu}", l->conn, i);
}

/* A connection the text names: standing out, slow, or the slower side of an
 * asymmetric pair. --json lists every one of them. */
static int conn_flagged(const struct lens_net_conn *c) {
  return c->stands_out || c->slow || (c->reverse >= 0 && c->asymmetry >= ASYM_RATIO);
}

/* What --json lists without --all (lens_fmt_json_ok_listed): every flagged
 * connection and the first ok ones (slowest first), with their links; the
 * instances with the most step time; the first QPs. 1 per item listed. */
struct json_listed {
  unsigned char *conn, *link, *inst, *qp;
  size_t conns, links, insts, qps; /* how many listed */
};

static void json_listed_free(struct json_listed *x) {
  free(x->conn), free(x->link), free(x->inst), free(x->qp);
  memset(x, 0, sizeof *x);
}

/* 0, or -1 out of memory (then x says every item is listed). */
static int json_listed_of(const struct lens_net *n, int all, struct json_listed *x) {
  memset(x, 0, sizeof *x);
  x->conn = calloc(n->n_conns + 1, 1), x->link = calloc(n->n_links + 1, 1);
  x->inst = calloc(n->n_insts + 1, 1), x->qp = calloc(n->n_qps + 1, 1);
  if (!x->conn || !x->link || !x->inst || !x->qp) goto oom;
  size_t used = 0;
  for (size_t i = 0; i < n->n_conns; i++) {
    const struct lens_net_conn *c = &n->conns[i];
    size_t entries = 1 + (c->send_link >= 0) + (c->recv_link >= 0);
    x->conn[i] = conn_flagged(c) || lens_fmt_json_ok_listed(&used, entries, all);
    x->conns += x->conn[i];
  }
  for (size_t i = 0; i < n->n_links; i++) { /* a link with its connection (one without: listed) */
    int32_t c = n->links[i].conn;
    x->link[i] = c < 0 || (size_t)c >= n->n_conns || x->conn[c];
    x->links += x->link[i];
  }
  used = 0;
  if (all) {
    memset(x->inst, 1, n->n_insts);
    x->insts = n->n_insts;
  } else { /* the most step time first, as the text ranks them; listed in the list's order */
    double *key = malloc(n->n_insts * sizeof *key);
    size_t *o;
    if (!key) goto oom;
    for (size_t i = 0; i < n->n_insts; i++) key[i] = (double)n->insts[i].s.step_ns;
    o = lens_fmt_order_desc(key, n->n_insts);
    free(key);
    if (!o) goto oom;
    for (size_t k = 0; k < n->n_insts && lens_fmt_json_ok_listed(&used, 1, 0); k++) x->inst[o[k]] = 1, x->insts++;
    free(o);
  }
  used = 0;
  for (size_t i = 0; i < n->n_qps && lens_fmt_json_ok_listed(&used, 1, all); i++) x->qp[i] = 1, x->qps++;
  return 0;
oom:
  json_listed_free(x);
  x->conns = n->n_conns, x->links = n->n_links, x->insts = n->n_insts, x->qps = n->n_qps;
  return -1;
}
#define LISTED(v, i) (!(v) || (v)[i]) /* NULL: all */

void lens_net_print_json(FILE *f, const struct lens_model *m, const struct lens_net *n) {
  lens_net_print_json_listed(f, m, n, 1);
}

void lens_net_print_json_listed(FILE *f, const struct lens_model *m, const struct lens_net *n, int all) {
  struct json_listed x;
  json_listed_of(n, all, &x); /* out of memory: every item */
  fputs("{\"links\":[", f);
  for (size_t i = 0, k = 0; i < n->n_links; i++) {
    if (!LISTED(x.link, i)) continue;
    fputs(k++ ? ",\n" : "\n", f);
    jlink(f, m, n, i);
  }
  fputs("],\n\"connections\":[", f);
  for (size_t i = 0, k = 0; i < n->n_conns; i++) {
    const struct lens_net_conn *c = &n->conns[i];
    if (!LISTED(x.conn, i)) continue;
    fprintf(f, "%s{\"comm_id\":", k++ ? ",\n" : "\n");
    lens_json_comm_id(f, c->comm_id);
    fprintf(f, ",\"src\":%d,\"dst\":%d,\"channel\":%d,\"send_link\":%d,\"recv_link\":%d,\"reverse\":%d,"
               "\"dominant\":\"%s\",\"score\":",
            c->src, c->dst, c->channel, c->send_link, c->recv_link, c->reverse, lens_net_phase_name(c->dominant));
    lens_json_double(f, c->score);
    fputs(",\"asymmetry\":", f);
    if (c->reverse >= 0) lens_json_double(f, c->asymmetry);
    else fputs("null", f);
    fprintf(f, ",\"stands_out\":%s,\"slow\":%s,\"few_steps\":%s,\"order\":%d}", c->stands_out ? "true" : "false",
            c->slow ? "true" : "false", c->few_steps ? "true" : "false", c->order);
  }
  fputs("],\n\"instances\":[", f);
  for (size_t i = 0, k = 0; i < n->n_insts; i++) {
    const struct lens_net_inst *e = &n->insts[i];
    if (!LISTED(x.inst, i)) continue;
    fprintf(f, "%s{\"event\":%" PRIu64 ",\"comm_id\":", k++ ? ",\n" : "\n", e->event);
    lens_json_comm_id(f, e->comm_id);
    fprintf(f, ",\"rank\":%d,\"kind\":\"%s\",\"func\":", e->rank, e->kind == LENS_T_COLL ? "coll" : "p2p");
    lens_json_str(f, e->func);
    if (e->has_seq) fprintf(f, ",\"seq\":%" PRIu64, e->seq);
    else fprintf(f, ",\"seq\":null,\"peer\":%d", e->peer);
    fputc(',', f);
    jsplit(f, &e->s);
    fprintf(f, ",\"dominant\":\"%s\"", lens_net_phase_name(lens_net_split_dominant(&e->s)));
    /* the job view's answer (docs/net.md): null when it did not decompose the instance */
    if (n->arrival_known && e->last_rank != LENS_NET_LAST_UNKNOWN) {
      if (e->last_rank >= 0) fprintf(f, ",\"last_to_arrive\":%d", e->last_rank);
      else fputs(",\"last_to_arrive\":null", f);
      fprintf(f, ",\"last_wait_ns\":%" PRIu64 "}", e->last_wait_ns);
    } else {
      fputs(",\"last_to_arrive\":null,\"last_wait_ns\":null}", f);
    }
  }
  fprintf(f, "],\n\"net_plugin\":{\"events\":%" PRIu64 ",\"unparented\":%" PRIu64 ",\"qps\":[", n->net_plugin_events,
          n->net_plugin_unparented);
  for (size_t i = 0, k = 0; i < n->n_qps; i++) {
    const struct lens_net_qp *q = &n->qps[i];
    if (!LISTED(x.qp, i)) continue;
    fprintf(f,
            "%s{\"rank\":%d,\"transport\":\"%s\",\"device\":%d,\"qp\":%d,\"peer\":%d,\"channel\":%d,\"dir\":%s,"
            "\"events\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"timed\":%" PRIu64 ",\"total_ns\":%" PRIu64
            ",\"p50_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}",
            k++ ? ",\n" : "\n", q->rank, lens_net_transport_name(q->transport), q->device, q->qp_num, q->peer,
            q->channel,
            q->dir == LENS_NET_DIR_SEND ? "\"send\"" : q->dir == LENS_NET_DIR_RECV ? "\"recv\"" : "null", q->events,
            q->bytes, q->timed, q->total_ns, q->p50_ns, q->max_ns);
  }
  fputs("]},\n", f);
  /* What the default left out, absent when every item is listed: ok
   * connections and their links, the instances with the least step time
   * (the view holds insts_total - n_insts fewer when it kept the top ones),
   * QPs past the first. */
  uint64_t insts_left = n->insts_total - x.insts;
  if (x.links < n->n_links || x.conns < n->n_conns || insts_left || x.qps < n->n_qps)
    fprintf(f, "\"left_out\":{\"links_ok\":%zu,\"connections_ok\":%zu,\"instances\":%" PRIu64 ",\"qps\":%zu},\n",
            n->n_links - x.links, n->n_conns - x.conns, insts_left, n->n_qps - x.qps);
  json_listed_free(&x);
  fputs("\"totals\":{", f);
  jsplit(f, &n->total);
  size_t slow = 0;
  for (size_t i = 0; i < n->n_conns; i++) slow += n->conns[i].slow != 0;
  fprintf(f, ",\"slow_connections\":%zu", slow);
  fprintf(f, ",\"links\":%zu,\"connections\":%zu,\"ranks\":%d,\"steps_without_op\":%" PRIu64
             ",\"starvation_measured\":%s,\"standout_score\":",
          n->n_links, n->n_conns, n->n_ranks, n->proxy_ops_unresolved, n->starvation_known ? "true" : "false");
  lens_json_double(f, LENS_NET_STANDOUT);
  fputs("}}\n", f);
}
