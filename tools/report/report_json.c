/* See report_json.h. Every number comes from the analyses the other views
 * print (job.h, net_analysis.h, hang_analysis.h, validate's verdict, the
 * report model); this file only bins and bounds them for plotting.
 *
 * Times: the heatmap and the instances' "t_s" are job time (the hosts on one
 * time base, job_align.h) in seconds after the origin `export --format job`
 * uses without --comm; an instance's "export" window is job time after the
 * origin of `export --format job --comm ID` (the same rule as export's: the
 * earliest aligned event of the selected processes, floored to 1 ms), so the
 * command it names shows that instance. Durations: us on each GPU's or host's
 * own clock. Bandwidth: bus GB/s (1e9 bytes/s, nccl-tests factors) from the
 * execution, wire GB/s from the send steps' wire phase. */
#include "cli/format.h"
#include "report/report_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export/json_out.h"
#include "hang/hang_print.h"
#include "job/job_print.h"
#include "report/report_view.h"
#include "validate/validate_print.h"

struct ctx {
  FILE *f;
  const struct lens_model *m;
  const struct lens_report *r;
  struct lens_report_view v;
};

/* A plotted number: 6 significant digits are more than a plot shows, and
 * keep a 1,024-rank page small. NaN and infinities are null. */
static void num(FILE *f, double v) {
  if (!isfinite(v)) fputs("null", f);
  else fprintf(f, "%.6g", v);
}

static const struct lens_comm *comm_of(const struct lens_model *m, uint64_t comm_id) {
  for (size_t i = 0; i < m->n_comms; i++)
    if (m->comms[i].comm_id == comm_id) return &m->comms[i];
  return NULL;
}

static void comm_keys(FILE *f, const struct lens_model *m, uint64_t comm_id) {
  const struct lens_comm *c = comm_of(m, comm_id);
  fputs("\"comm_id\":", f);
  lens_json_comm_id(f, comm_id);
  fputs(",\"comm_name\":", f);
  lens_json_str(f, c && c->name[0] ? c->name : NULL);
}

/* ---- verdict ---- */

static void verdict_line(FILE *f, int *n, const char *key, const char *status, const char *section, const char *text) {
  fputs(*n ? ",{" : "{", f);
  (*n)++;
  fprintf(f, "\"key\":\"%s\",\"status\":\"%s\",\"section\":\"%s\",\"text\":", key, status, section);
  lens_json_str(f, text);
  fputc('}', f);
}

static const char *host_of(const struct lens_model *m, int32_t proc) {
  return proc >= 0 && (size_t)proc < m->n_procs ? m->procs[proc].host : "?";
}

/* The job view's slow links: instances whose cause is a slow link, per
 * (sender, receiver), the most instances first; ratio: the median of their
 * instances' slowdowns. */
struct job_link { int src, dst; size_t n; double ratio; };

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static size_t job_slow_links(const struct ctx *x, struct job_link *out, size_t max) {
  const struct lens_job *j = &x->v.j;
  size_t n = 0;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    if (in->cause != LENS_CAUSE_SLOW_LINK) continue;
    int seen = 0;
    for (size_t k = 0; k < n && !seen; k++) seen = out[k].src == in->cause_rank && out[k].dst == in->cause_peer;
    for (size_t k = 0; k < i && !seen && n == max; k++) /* below max every link seen is in out */
      seen = j->insts[k].cause == LENS_CAUSE_SLOW_LINK && j->insts[k].cause_rank == in->cause_rank &&
             j->insts[k].cause_peer == in->cause_peer;
    if (seen) continue;
    double *r = malloc((j->n_insts - i) * sizeof *r);
    size_t m = 0;
    for (size_t k = i; k < j->n_insts; k++) {
      const struct lens_job_inst *o = &j->insts[k];
      if (o->cause == LENS_CAUSE_SLOW_LINK && o->cause_rank == in->cause_rank && o->cause_peer == in->cause_peer) {
        if (r) r[m] = (double)o->cause_excess_ns / 1000.0; /* the link ratio x1000 (job.h) */
        m++;
      }
    }
    double med = 0;
    if (r) {
      qsort(r, m, sizeof *r, cmp_dbl);
      med = m ? r[m / 2] : 0;
      free(r);
    }
    struct job_link l = {in->cause_rank, in->cause_peer, m, med};
    size_t at = n < max ? n++ : max; /* insertion by count, the most first */
    while (at > 0 && out[at - 1].n < l.n) {
      if (at < max) out[at] = out[at - 1];
      at--;
    }
    if (at < max) out[at] = l;
  }
  return n;
}

static void verdict(struct ctx *x) {
  FILE *f = x->f;
  const struct lens_model *m = x->m;
  const struct lens_report *r = x->r;
  char t[4096];
  int n = 0;
  fputs("\"verdict\":[", f);
  /* hung? the same headline as `nccl-lens hang` and `job` print */
  if (x->v.h.n_stuck_comms) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    if (mf) {
      lens_hang_print_headline(mf, &x->v.h);
      fclose(mf);
    }
    if (buf && len && buf[len - 1] == '\n') buf[len - 1] = 0;
    snprintf(t, sizeof t, "Hung: %s.", buf && !strncmp(buf, "hang: ", 6) ? buf + 6 : buf ? buf : "?");
    free(buf);
    verdict_line(f, &n, "hang", "bad", "sec-hang", t);
  } else {
    verdict_line(f, &n, "hang", "ok", "sec-hang", "Not hung: every collective recorded completed.");
  }
  /* who made the others wait */
  if (!x->v.j.n_insts) {
    verdict_line(f, &n, "stragglers", "unknown", "sec-stragglers",
                 "No collective matched across ranks: waiting not measured.");
  } else if (!x->v.j.n_stragglers) {
    snprintf(t, sizeof t, "No straggler: no rank made the others wait %.1f us or more (and %.0f%% of an execution).",
             x->v.j.min_wait_ns / 1e3, LENS_JOB_MIN_WAIT_FRAC * 100);
    verdict_line(f, &n, "stragglers", "ok", "sec-stragglers", t);
  } else {
    size_t o = 0;
    o += (size_t)snprintf(t + o, sizeof t - o, "Stragglers: ");
    for (size_t i = 0; i < x->v.j.n_stragglers && i < 3 && o < sizeof t - 200; i++) {
      const struct lens_job_straggler *s = &x->v.j.stragglers[i];
      const struct lens_comm *c = comm_of(m, s->comm_id);
      char cl[LENS_COMM_ID_LEN + 160];
      o += (size_t)snprintf(t + o, sizeof t - o,
                            "%srank %d of %s (%s:%u) made the others wait %.3f ms in %" PRIu64
                            " instance%s, %.1f%% of the job's collective time (mostly %s)",
                            i ? "; " : "", s->rank, lens_fmt_comm_label(c ? c->name : NULL, s->comm_id, cl, sizeof cl),
                            host_of(m, s->proc),
                            s->proc >= 0 ? m->procs[s->proc].pid : 0, s->wait_caused_ns / 1e6, s->times_last,
                            s->times_last == 1 ? "" : "s",
                            x->v.coll_ns ? 100.0 * (double)s->wait_caused_ns / (double)x->v.coll_ns : 0.0,
                            lens_job_straggler_top_words(s));
    }
    /* the others by rank (and communicator when not the first's), as many as one line of a page holds */
    for (size_t i = 3; i < x->v.j.n_stragglers && o < sizeof t - 80; i++) {
      const struct lens_job_straggler *s = &x->v.j.stragglers[i];
      const struct lens_comm *c = comm_of(m, s->comm_id);
      char cl[LENS_COMM_ID_LEN + 160];
      if (i == 3) o += (size_t)snprintf(t + o, sizeof t - o, "; %zu more: ", x->v.j.n_stragglers - 3);
      o += (size_t)snprintf(t + o, sizeof t - o, "%srank %d%s%s", i > 3 ? ", " : "", s->rank,
                            s->comm_id != x->v.j.stragglers[0].comm_id ? " of " : "",
                            s->comm_id != x->v.j.stragglers[0].comm_id
                                ? lens_fmt_comm_label(c ? c->name : NULL, s->comm_id, cl, sizeof cl)
                                : "");
      if (i == 63 && x->v.j.n_stragglers > 64) {
        o += (size_t)snprintf(t + o, sizeof t - o, " and %zu others", x->v.j.n_stragglers - 64);
        break;
      }
    }
    if (o > sizeof t - 2) o = sizeof t - 2;
    if (o < sizeof t - 2) snprintf(t + o, sizeof t - o, ".");
    verdict_line(f, &n, "stragglers", "bad", "sec-stragglers", t);
  }
  /* a slow link: the job view's (a link slower than the same proxies' other links, per instance) and the
   * network view's, each said. Both by the one rule (lens_net_link_is_slow, in c->slow): a connection
   * that stands out by its pace alone, its sender waiting on its GPU or its receiver's GPU holding it,
   * is no slow link here either (net prints "slow links: none; ... not on the network" for it). */
  const struct lens_net *net = r->net;
  size_t slow = 0, out = 0;
  const struct lens_net_conn *first_slow = NULL, *first_out = NULL;
  for (size_t i = 0; net && i < net->n_conns; i++) {
    const struct lens_net_conn *c = &net->conns[i];
    if (c->slow && !slow++) first_slow = c;
    if (c->stands_out && !c->slow && !out++) first_out = c;
  }
  struct job_link jl[4];
  size_t njl = job_slow_links(x, jl, 4), decomposed = 0;
  for (size_t i = 0; i < x->v.j.n_insts; i++) decomposed += (size_t)lens_job_inst_decomposed(&x->v.j.insts[i]);
  size_t o = 0;
  t[0] = 0;
  if (njl)
    o += (size_t)snprintf(t, sizeof t, "Slow link r%d -> r%d: in %zu of %zu instances the job waited on it, its steps "
                                       "%.1fx slower (median) than its proxies' other links (job view)",
                          jl[0].src, jl[0].dst, jl[0].n, decomposed, jl[0].ratio);
  if (net && net->n_conns && slow) {
    const struct lens_net_conn *c = first_slow;
    char why[128];
    if (c->own_ratio > 0) /* lens_net_conn_slow_ratio: judged by its wire */
      snprintf(why, sizeof why, "moves its bytes on the wire %.1fx slower than typical, its steps %.1fx",
               c->wire_ratio, c->own_ratio);
    else /* without its sender's trace: by its pace */
      snprintf(why, sizeof why, "moves its steps %.1fx slower than typical for their size", c->score);
    o += (size_t)snprintf(t + o, sizeof t - o,
                          "%sr%d -> r%d (channel %d) %s, mostly "
                          "%s%s; %zu connection(s) slow on the network (network view)",
                          o ? "; " : "Slow link: ", c->src, c->dst, c->channel, why, lens_net_phase_text(c->dominant),
                          c->reverse >= 0 && c->asymmetry >= 1.5 ? " (the other direction is not)" : "", slow);
  } else if (net && net->n_conns && njl) {
    o += (size_t)snprintf(t + o, sizeof t - o, "; against the typical step time of their size no connection stands "
                                               "out (network view, %zu connections)", net->n_conns);
  }
  if (o) {
    if (o < sizeof t - 1) snprintf(t + o, sizeof t - o, ".");
    verdict_line(f, &n, "link", "bad", "sec-net", t);
  } else if (!net || !net->n_conns) {
    verdict_line(f, &n, "link", "unknown", "sec-net", "No network steps recorded: links not measured.");
  } else if (out && lens_net_phase_on_network(first_out->dominant, first_out->send_link >= 0,
                                               first_out->recv_link >= 0)) {
    snprintf(t, sizeof t, "No slow link: %zu of %zu connections take %.0fx the typical step time or more, but their "
                          "wire does not make them %.0fx slower: they wait; no instance waited on one link.",
             out, net->n_conns, LENS_NET_STANDOUT, LENS_NET_STANDOUT);
    verdict_line(f, &n, "link", "ok", "sec-net", t);
  } else if (out) {
    snprintf(t, sizeof t, "No slow link: %zu of %zu connections take %.0fx the typical step time or more, mostly "
                          "%s: not the network; no instance waited on one link.",
             out, net->n_conns, LENS_NET_STANDOUT, lens_net_phase_text(first_out->dominant));
    verdict_line(f, &n, "link", "ok", "sec-net", t);
  } else {
    if (net->n_conns == 1)
      snprintf(t, sizeof t, "No slow link: the one connection moves its steps within %.0fx the typical time, and no "
                            "instance waited on it.", LENS_NET_STANDOUT);
    else
      snprintf(t, sizeof t, "No slow link: all %zu connections move their steps within %.0fx the typical time, and "
                            "no instance waited on one link.", net->n_conns, LENS_NET_STANDOUT);
    verdict_line(f, &n, "link", "ok", "sec-net", t);
  }
  /* proxy and profiler threads */
  if (!r->n_sched) {
    snprintf(t, sizeof t, "Starvation not measured: no scheduler trace (run the job under `nccl-lens sched`)%s.",
             r->lag_n ? "; the notice lag is plotted" : "");
    verdict_line(f, &n, "threads", "unknown", "sec-threads", t);
  } else if (r->kernel_ch_starved) {
    const struct lens_rep_starve *w = NULL;
    for (size_t i = 0; i < r->n_starve; i++)
      if (!w || r->starve[i].starved_ns > w->starved_ns) w = &r->starve[i];
    const struct lens_thread *th = w ? &m->threads[w->thread] : NULL;
    snprintf(t, sizeof t, "Starved: %.1f%% of KernelCh (%" PRIu64 " of %" PRIu64 ") completed while their proxy "
                          "thread waited for a CPU; worst thread tid %u of %s:%u, %.3f ms starved.",
             r->kernel_ch ? 100.0 * (double)r->kernel_ch_starved / (double)r->kernel_ch : 0.0, r->kernel_ch_starved,
             r->kernel_ch, th ? th->tid : 0, th ? m->procs[th->proc].host : "?", th ? m->procs[th->proc].pid : 0,
             w ? w->starved_ns / 1e6 : 0.0);
    verdict_line(f, &n, "threads", "bad", "sec-threads", t);
  } else {
    verdict_line(f, &n, "threads", "ok", "sec-threads",
                 "Not starved: no KernelCh completed while its proxy thread waited for a CPU.");
  }
  /* GPU times: validate's verdict */
  if (!r->gpu_ran) {
    verdict_line(f, &n, "gpu", "unknown", "sec-gpu", "GPU analysis not built in: KernelCh times are host notices.");
  } else {
    const struct lens_validate_verdict *v = &r->gpu;
    /* "GPU times trusted", "GPU times unreliable"; "GPU durations trusted" (not "GPU times durations trusted") */
    int dur = !strncmp(v->level, "durations ", 10);
    snprintf(t, sizeof t, "GPU %s %s: %s.", dur ? "durations" : "times", dur ? v->level + 10 : v->level, v->text);
    verdict_line(f, &n, "gpu", !strcmp(v->level, "trusted") ? "ok" : "warn", "sec-gpu", t);
  }
  fputs("]", f);
}

/* ---- bus bandwidth against size ---- */

struct bw_pt { uint64_t comm_id; const char *func; uint64_t bytes, exec_ns; double fbytes, gbps; };

static int cmp_bw(const void *pa, const void *pb) {
  const struct bw_pt *a = pa, *b = pb;
  if (a->comm_id != b->comm_id) return a->comm_id < b->comm_id ? -1 : 1;
  int c = strcmp(a->func ? a->func : "", b->func ? b->func : "");
  if (c) return c;
  return (a->bytes > b->bytes) - (a->bytes < b->bytes);
}

static int busbw(struct ctx *x) {
  FILE *f = x->f;
  const struct lens_job *j = &x->v.j;
  struct bw_pt *v = malloc((j->n_insts + 1) * sizeof *v);
  if (!v) return -1;
  size_t n = 0, p2p = 0, partial = 0, undecomposed = 0;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    /* the job view's rule, then a curve's own: no p2p (its factor 1 is not a bus's), no partial instance (an
     * unseen rank may have started last: its execution is an upper bound). Counted, so that an empty plot
     * says which of them left it empty. */
    if (!lens_job_inst_decomposed(in) || !in->bytes) {
      undecomposed++;
      continue;
    }
    if (in->is_p2p) {
      p2p++;
      continue;
    }
    if (in->flags & LENS_JOB_PARTIAL) {
      partial++;
      continue;
    }
    v[n++] = (struct bw_pt){in->comm_id, in->func, in->bytes, in->exec_ns,
                            (double)in->bytes * lens_job_busbw_factor(in->func, in->nranks), in->busbw_gbps};
  }
  qsort(v, n, sizeof *v, cmp_bw);
  fprintf(f, "\"busbw\":{\"unit\":\"GB/s\",\"left_out\":{\"p2p\":%zu,\"partial\":%zu,\"undecomposed\":%zu},"
          "\"series\":[", p2p, partial, undecomposed);
  int series = 0;
  for (size_t i = 0; i < n;) {
    size_t k = i;
    while (k < n && v[k].comm_id == v[i].comm_id && !strcmp(v[k].func ? v[k].func : "", v[i].func ? v[i].func : ""))
      k++;
    fputs(series++ ? ",{" : "{", f);
    comm_keys(f, x->m, v[i].comm_id);
    fputs(",\"func\":", f);
    lens_json_str(f, v[i].func);
    fputs(",\"points\":[", f);
    int pts = 0;
    for (size_t a = i; a < k;) {
      size_t b = a;
      double fb = 0, ex = 0, lo = INFINITY, hi = 0;
      while (b < k && v[b].bytes == v[a].bytes) {
        fb += v[b].fbytes, ex += (double)v[b].exec_ns;
        if (v[b].gbps < lo) lo = v[b].gbps;
        if (v[b].gbps > hi) hi = v[b].gbps;
        b++;
      }
      fprintf(f, "%s{\"bytes\":%" PRIu64 ",\"count\":%zu,\"busbw\":", pts++ ? "," : "", v[a].bytes, b - a);
      num(f, ex > 0 ? fb / ex : 0); /* bytes/ns = GB/s: the rows' rule (sum over sum) */
      fputs(",\"min\":", f);
      num(f, lo);
      fputs(",\"max\":", f);
      num(f, hi);
      fputc('}', f);
      a = b;
    }
    fputs("]}", f);
    i = k;
  }
  fputs("]}", f);
  free(v);
  return 0;
}

/* ---- wait per rank over time ---- */

static int waits(struct ctx *x) {
  FILE *f = x->f;
  const struct lens_job *j = &x->v.j;
  uint64_t best = 0, best_wait = 0;
  int best_n = 0;
  /* the communicator whose ranks waited most (ties: the most ranks) */
  for (size_t i = 0; i < j->n_insts; i++) {
    uint64_t id = j->insts[i].comm_id, w = 0;
    if (id == best) continue;
    int seen = 0;
    for (size_t k = 0; k < i && !seen; k++) seen = j->insts[k].comm_id == id;
    if (seen) continue;
    for (size_t k = i; k < j->n_insts; k++)
      if (j->insts[k].comm_id == id) w += j->insts[k].wait_sum_ns;
    if (!best_n || w > best_wait || (w == best_wait && j->insts[i].nranks > best_n))
      best = id, best_wait = w, best_n = j->insts[i].nranks;
  }
  fputs("\"waits\":", f);
  if (!best_n || !best_wait) {
    fputs("null", f);
    return 0;
  }
  int nranks = best_n > 0 ? best_n : 1;
  int group = (nranks + LENS_REPORT_RANK_ROWS - 1) / LENS_REPORT_RANK_ROWS;
  int rows = (nranks + group - 1) / group;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  size_t unplaced = 0;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    if (in->comm_id != best || !lens_job_inst_decomposed(in)) continue;
    for (size_t k = 0; k < in->n_ranks; k++) {
      const struct lens_job_rank *rk = &j->ranks[in->first_rank + k];
      uint64_t start;
      if (!lens_report_rank_start(x->r, rk, &start)) continue;
      int placed;
      int64_t t = lens_report_job_time(&x->v, rk->proc, start, &placed);
      if (!placed) continue;
      if (t < lo) lo = t;
      if (t > hi) hi = t;
    }
  }
  if (lo > hi) { /* no decomposed instance whose host was placed: nothing on the time axis */
    fputs("null", f);
    return 0;
  }
  int bins = LENS_REPORT_TIME_BINS;
  uint64_t bin_ns = ((uint64_t)hi - (uint64_t)lo) / (uint64_t)bins + 1; /* unsigned: hostile times do not overflow */
  if (!bin_ns) bin_ns = 1;
  double *cell = calloc((size_t)rows * (size_t)bins, sizeof *cell);
  if (!cell) return -1;
  double total = 0;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    if (in->comm_id != best || !lens_job_inst_decomposed(in)) continue;
    for (size_t k = 0; k < in->n_ranks; k++) {
      const struct lens_job_rank *rk = &j->ranks[in->first_rank + k];
      uint64_t start;
      if (rk->rank < 0 || rk->rank >= nranks || !lens_report_rank_start(x->r, rk, &start)) continue;
      int placed;
      int64_t t = lens_report_job_time(&x->v, rk->proc, start, &placed);
      if (!placed) {
        unplaced++;
        continue;
      }
      size_t b = (size_t)(((uint64_t)t - (uint64_t)lo) / bin_ns);
      if (b >= (size_t)bins) b = (size_t)bins - 1;
      cell[(size_t)(rk->rank / group) * (size_t)bins + b] += (double)rk->wait_ns / 1e3;
    }
  }
  fputc('{', f);
  comm_keys(f, x->m, best);
  fprintf(f, ",\"nranks\":%d,\"rank_group\":%d,\"unit\":\"us\",\"t0_s\":", nranks, group);
  num(f, ((double)lo - (double)x->v.origin) / 1e9);
  fputs(",\"bin_s\":", f);
  num(f, (double)bin_ns / 1e9);
  fprintf(f, ",\"n_bins\":%d,\"unplaced\":%zu,\"rows\":[", bins, unplaced);
  for (int rw = 0; rw < rows; rw++) {
    fprintf(f, "%s[", rw ? "," : "");
    for (int b = 0; b < bins; b++) {
      double w = round(cell[(size_t)rw * (size_t)bins + (size_t)b] * 10) / 10; /* 0.1 us */
      total += w;
      if (b) fputc(',', f);
      num(f, w);
    }
    fputc(']', f);
  }
  fputs("],\"total_us\":", f);
  num(f, total);
  fputc('}', f);
  free(cell);
  return 0;
}

/* ---- stragglers and their instances ---- */

static void instance(struct ctx *x, const struct lens_job_inst *in, int64_t comm_origin) {
  FILE *f = x->f;
  struct lens_report_window w;
  lens_report_window_of(&x->v, in, comm_origin, &w);
  fprintf(f, "{\"seq\":%" PRId64 ",\"func\":", in->seq);
  lens_json_str(f, in->func);
  fprintf(f, ",\"bytes\":%" PRIu64 ",\"exec_us\":", in->bytes);
  num(f, in->exec_ns / 1e3);
  fputs(",\"max_wait_us\":", f);
  num(f, in->max_wait_ns / 1e3);
  fputs(",\"wait_sum_us\":", f);
  num(f, in->wait_sum_ns / 1e3);
  fprintf(f, ",\"cause\":\"%s\",\"cause_words\":", lens_job_cause_name(in->cause));
  lens_json_str(f, lens_job_inst_cause_words(in));
  if (w.ok) {
    char cmd[256];
    lens_report_export_cmd(in, &w, cmd, sizeof cmd);
    fputs(",\"t_s\":", f);
    num(f, w.t_s);
    fprintf(f, ",\"since_us\":%" PRId64 ",\"until_us\":%" PRId64 ",\"export\":", w.since_us, w.until_us);
    lens_json_str(f, cmd);
  } else {
    fputs(",\"t_s\":null,\"export\":null", f);
  }
  fputc('}', f);
}

static int stragglers(struct ctx *x) {
  FILE *f = x->f;
  const struct lens_job *j = &x->v.j;
  fputs("\"stragglers\":{\"collective_us\":", f);
  num(f, x->v.coll_ns / 1e3);
  fprintf(f, ",\"threshold_us\":");
  num(f, j->min_wait_ns / 1e3);
  fputs(",\"cause_words\":{", f); /* what the text says of each key (the page's legend) */
  for (int c = 1; c < 8; c++)
    fprintf(f, "%s\"%s\":\"%s\"", c > 1 ? "," : "", lens_job_cause_name(c),
            lens_fmt_cause_words(lens_job_cause_name(c)));
  fputs("},\"host_spans_words\":\"" LENS_JOB_HOST_SPANS_WORDS "\"", f); /* the unknown cause on host spans */
  fprintf(f, ",\"total\":%zu,\"list\":[", j->n_stragglers);
  const struct lens_job_inst *mine[LENS_REPORT_INSTANCES];
  for (size_t i = 0; i < j->n_stragglers && i < LENS_REPORT_STRAGGLERS; i++) {
    const struct lens_job_straggler *s = &j->stragglers[i];
    fputs(i ? ",{" : "{", f);
    comm_keys(f, x->m, s->comm_id);
    fprintf(f, ",\"rank\":%d,\"host\":", s->rank);
    lens_json_str(f, host_of(x->m, s->proc));
    fprintf(f, ",\"pid\":%u,\"wait_caused_us\":", s->proc >= 0 ? x->m->procs[s->proc].pid : 0);
    num(f, s->wait_caused_ns / 1e3);
    fputs(",\"share_pct\":", f);
    num(f, x->v.coll_ns ? 100.0 * (double)s->wait_caused_ns / (double)x->v.coll_ns : 0);
    fprintf(f, ",\"times_last\":%" PRIu64 ",\"causes\":{", s->times_last);
    int c1 = 0;
    for (int c = 1; c < 8; c++)
      if (s->cause_count[c])
        fprintf(f, "%s\"%s\":%" PRIu64, c1++ ? "," : "", lens_job_cause_name(c), s->cause_count[c]);
    fputs("},\"causes_text\":", f); /* as the Markdown's causes column says them */
    {
      struct lens_job_cause_item it[LENS_JOB_CAUSE_ITEMS];
      size_t n_it = lens_job_straggler_causes(s, it, NULL);
      char ct[LENS_JOB_CAUSE_ITEMS * 40] = "";
      size_t o = 0;
      uint64_t hs = 0;
      for (size_t c = 0; c < n_it; c++) {
        if (o < sizeof ct)
          o += (size_t)snprintf(ct + o, sizeof ct - o, "%s%s %" PRIu64, c ? ", " : "", it[c].words, it[c].n);
        if (it[c].host_spans) hs += it[c].n; /* every item's, whether its words fit or not */
      }
      lens_json_str(f, ct);
      fprintf(f, ",\"host_spans\":%" PRIu64, hs); /* of causes.unknown: on host spans (causes_text's words) */
    }
    fputs(",\"instances\":[", f);
    size_t n = lens_report_straggler_instances(&x->v, s, mine, LENS_REPORT_INSTANCES);
    int64_t co = lens_report_origin(&x->v, s->comm_id);
    for (size_t k = 0; k < n; k++) {
      if (k) fputc(',', f);
      instance(x, mine[k], co);
    }
    fputs("]}", f);
  }
  fputs("]}", f);
  return 0;
}

/* ---- network ---- */

struct cellv { uint64_t bytes, wire_ns; };

static int network(struct ctx *x) {
  FILE *f = x->f;
  const struct lens_net *net = x->r->net;
  fputs("\"net\":", f);
  if (!net || !net->n_links) {
    fputs("null", f);
    return 0;
  }
  /* the matrix: the communicator that sent the most bytes */
  uint64_t best = 0, best_bytes = 0;
  int found = 0;
  for (size_t i = 0; i < net->n_links; i++) {
    const struct lens_net_link *l = &net->links[i];
    if (l->dir != LENS_NET_DIR_SEND || !l->comm_id) continue;
    uint64_t b = 0;
    int seen = 0;
    for (size_t k = 0; k < i && !seen; k++) seen = net->links[k].comm_id == l->comm_id;
    if (seen) continue;
    for (size_t k = i; k < net->n_links; k++)
      if (net->links[k].comm_id == l->comm_id && net->links[k].dir == LENS_NET_DIR_SEND) b += net->links[k].t.bytes;
    if (!found || b > best_bytes) best = l->comm_id, best_bytes = b, found = 1;
  }
  fputs("{\"matrix\":", f);
  if (!found) {
    fputs("null", f);
  } else {
    const struct lens_comm *c = comm_of(x->m, best);
    int nranks = c && c->nranks > 0 ? c->nranks : 1;
    for (size_t i = 0; i < net->n_links; i++) /* ranks past nranks (hostile traces) widen the axis */
      if (net->links[i].comm_id == best) {
        if (net->links[i].rank >= nranks) nranks = net->links[i].rank + 1;
        if (net->links[i].peer >= nranks) nranks = net->links[i].peer + 1;
      }
    if (nranks > 1 << 20) nranks = 1 << 20;
    int group = (nranks + LENS_REPORT_MATRIX_AXIS - 1) / LENS_REPORT_MATRIX_AXIS, axis = (nranks + group - 1) / group;
    struct cellv *cv = calloc((size_t)axis * (size_t)axis, sizeof *cv);
    if (!cv) return -1;
    for (size_t i = 0; i < net->n_links; i++) {
      const struct lens_net_link *l = &net->links[i];
      if (l->comm_id != best || l->dir != LENS_NET_DIR_SEND || l->rank < 0 || l->peer < 0 || l->rank >= nranks ||
          l->peer >= nranks)
        continue;
      struct cellv *q = &cv[(size_t)(l->rank / group) * (size_t)axis + (size_t)(l->peer / group)];
      q->bytes += l->t.bytes;
      q->wire_ns += l->t.phase_ns[LENS_NET_SEND_WIRE];
    }
    fputc('{', f);
    comm_keys(f, x->m, best);
    fprintf(f, ",\"nranks\":%d,\"rank_group\":%d,\"unit\":\"GB/s\",\"cells\":[", nranks, group);
    int nc = 0;
    for (int a = 0; a < axis; a++)
      for (int b = 0; b < axis; b++) {
        const struct cellv *q = &cv[(size_t)a * (size_t)axis + (size_t)b];
        if (!q->wire_ns) continue;
        fprintf(f, "%s[%d,%d,", nc++ ? "," : "", a * group, b * group);
        num(f, lens_net_wire_gbps(q->bytes, q->wire_ns)); /* GB/s as net's links, not bits */
        fprintf(f, ",%" PRIu64 "]", q->bytes);
      }
    fputs("]}", f);
    free(cv);
  }
  fputs(",\"phases\":[", f);
  for (int p = 0; p < LENS_NET_NPHASES; p++) fprintf(f, "%s\"%s\"", p ? "," : "", lens_net_phase_name(p));
  fputs("],\"slowest\":[", f);
  for (size_t i = 0; i < net->n_conns && i < LENS_REPORT_SLOW_LINKS; i++) {
    const struct lens_net_conn *c = &net->conns[i];
    const struct lens_net_link *s = c->send_link >= 0 ? &net->links[c->send_link] : NULL;
    const struct lens_net_link *rv = c->recv_link >= 0 ? &net->links[c->recv_link] : NULL;
    fputs(i ? ",{" : "{", f);
    comm_keys(f, x->m, c->comm_id);
    fprintf(f, ",\"src\":%d,\"dst\":%d,\"channel\":%d,\"score\":", c->src, c->dst, c->channel);
    num(f, c->score);
    /* slow_link: stands out with its time on the network (lens_net_link_is_slow, the verdict's rule); one
     * standing out by its pace alone waits on a GPU */
    fprintf(f, ",\"stands_out\":%s,\"slow_link\":%s,\"dominant\":", c->stands_out ? "true" : "false",
            c->slow ? "true" : "false");
    lens_json_str(f, c->dominant >= 0 ? lens_net_phase_name(c->dominant) : NULL);
    fputs(",\"gbps\":", f);
    num(f, s ? s->gbps : rv ? rv->gbps : 0);
    fprintf(f, ",\"steps\":%" PRIu64 ",\"split_us\":[", (s ? s->t.steps : 0) + (rv ? rv->t.steps : 0));
    for (int p = 0; p < LENS_NET_NPHASES; p++) {
      if (p) fputc(',', f);
      num(f, ((s ? (double)s->t.phase_ns[p] : 0) + (rv ? (double)rv->t.phase_ns[p] : 0)) / 1e3);
    }
    fputs("]}", f);
  }
  struct job_link jl[LENS_REPORT_SLOW_LINKS];
  size_t njl = job_slow_links(x, jl, LENS_REPORT_SLOW_LINKS);
  fputs("],\"job_slow_links\":[", f);
  for (size_t i = 0; i < njl; i++) {
    fprintf(f, "%s{\"src\":%d,\"dst\":%d,\"instances\":%zu,\"ratio\":", i ? "," : "", jl[i].src, jl[i].dst, jl[i].n);
    num(f, jl[i].ratio);
    fputc('}', f);
  }
  fprintf(f, "],\"connections\":%zu,\"standing_out\":", net->n_conns);
  size_t out = 0;
  for (size_t i = 0; i < net->n_conns; i++) out += net->conns[i].stands_out != 0;
  fprintf(f, "%zu}", out);
  return 0;
}

/* ---- proxy and profiler threads ---- */

#define LAG_BINS LENS_REPORT_LAG_BINS /* report_model.h: [2^(b-3), 2^(b-2)) us */

static void threads(struct ctx *x) {
  FILE *f = x->f;
  const struct lens_model *m = x->m;
  const struct lens_report *r = x->r;
  const uint64_t *hist = r->lag_hist; /* binned by the report's map (lens_report_lag_bin) */
  fprintf(f, "\"threads\":{\"lag\":{\"n\":%" PRIu64 ",\"avg_us\":", r->lag_n);
  num(f, r->lag_n ? (double)r->lag_sum_ns / (double)r->lag_n / 1e3 : 0);
  fputs(",\"max_us\":", f);
  num(f, r->lag_max_ns / 1e3);
  fputs(",\"bins_lo_us\":[", f);
  for (int b = 0; b < LAG_BINS; b++) {
    if (b) fputc(',', f);
    num(f, b ? ldexp(1.0, b - 3) : 0.0); /* the first bin holds every lag under the second's edge */
  }
  fputs("],\"counts\":[", f);
  for (int b = 0; b < LAG_BINS; b++) fprintf(f, "%s%" PRIu64, b ? "," : "", hist[b]);
  fprintf(f, "]},\"sched_samples\":%zu,\"starved\":[", r->n_sched);
  for (size_t i = 0; r->n_sched && i < r->n_starve; i++) {
    const struct lens_rep_starve *s = &r->starve[i];
    const struct lens_thread *t = &m->threads[s->thread];
    char who[160];
    snprintf(who, sizeof who, "%s:%u tid %u", m->procs[t->proc].host, m->procs[t->proc].pid, t->tid);
    fputs(i ? ",{\"thread\":" : "{\"thread\":", f);
    lens_json_str(f, who);
    fputs(",\"name\":", f);
    lens_json_str(f, t->name);
    fputs(",\"starved_us\":", f);
    num(f, s->starved_ns / 1e3);
    fprintf(f, ",\"kernel_ch\":%" PRIu64 ",\"kernel_ch_starved\":%" PRIu64 ",\"proxy\":%" PRIu64
               ",\"proxy_starved\":%" PRIu64 "}",
            s->kernel_ch, s->kernel_ch_starved, s->proxy, s->proxy_starved);
  }
  fputs("],\"sched\":", f);
  if (r->n_sched) lens_starvation_print_json(f, &r->sum.starvation); /* culprits: the same as summary --json's */
  else fputs("null", f);
  fputc('}', f);
}

/* ---- GPU timing ---- */

enum { LENS_REPORT_CLOCK_MAPS = 48 }; /* the clock maps the page plots, widest error bound first */

/* widest error bound first; equal bounds in the model's order (qsort is not stable: the index decides) */
static int cmp_map_wide(const void *pa, const void *pb) {
  const struct lens_clock_map *a = *(const struct lens_clock_map *const *)pa;
  const struct lens_clock_map *b = *(const struct lens_clock_map *const *)pb;
  double wa = isnan(a->error_bound_ns) ? -INFINITY : a->error_bound_ns; /* a NaN bound last: an order for qsort */
  double wb = isnan(b->error_bound_ns) ? -INFINITY : b->error_bound_ns;
  if (wa != wb) return wa < wb ? 1 : -1;
  return (a > b) - (a < b);
}

static void gpu(struct ctx *x) {
  FILE *f = x->f;
  const struct lens_model *m = x->m;
  fputs("\"gpu\":{", f);
  if (x->r->gpu_ran) {
    const struct lens_validate_verdict *v = &x->r->gpu;
    fputs("\"level\":", f);
    lens_json_str(f, v->level);
    fputs(",\"text\":", f);
    lens_json_str(f, v->text);
  } else {
    fputs("\"level\":null,\"text\":null", f);
  }
  /* the widest LENS_REPORT_CLOCK_MAPS maps, the ones the page plots: a 1,024-rank job has 2,048 maps, a third
   * of its page were they all written */
  size_t nm = m->n_clock_maps < LENS_REPORT_CLOCK_MAPS ? m->n_clock_maps : LENS_REPORT_CLOCK_MAPS;
  const struct lens_clock_map **wide = malloc((m->n_clock_maps + 1) * sizeof *wide);
  if (!wide) nm = 0;
  for (size_t i = 0; wide && i < m->n_clock_maps; i++) wide[i] = &m->clock_maps[i];
  if (wide) qsort(wide, m->n_clock_maps, sizeof *wide, cmp_map_wide);
  fprintf(f, ",\"kernel_ch\":%" PRIu64 ",\"clock_maps_total\":%zu,\"clock_maps\":[", x->r->kernel_ch,
          m->n_clock_maps);
  for (size_t i = 0; i < nm; i++) {
    const struct lens_clock_map *c = wide[i];
    const struct lens_thread *t = c->thread >= 0 && (size_t)c->thread < m->n_threads ? &m->threads[c->thread] : NULL;
    char who[160];
    snprintf(who, sizeof who, "%s:%u tid %u", m->procs[c->proc].host, m->procs[c->proc].pid, t ? t->tid : 0);
    fputs(i ? ",{\"gpu\":" : "{\"gpu\":", f);
    lens_json_str(f, who);
    fprintf(f, ",\"rank\":%d,\"source\":\"%s\",\"points\":%u,\"slope\":", c->rank, lens_clock_map_source_name(c->source),
            c->n_points);
    lens_json_double(f, c->slope);
    fputs(",\"residual_us\":", f);
    num(f, c->residual_ns / 1e3);
    fputs(",\"bound_us\":", f);
    num(f, c->error_bound_ns / 1e3);
    fputc('}', f);
  }
  free(wide);
  fputs("],\"flags\":[", f);
  int n = 0;
  for (int b = 0; b < 32; b++) {
    const char *name = lens_acc_name(1u << b);
    if (!name) continue;
    fprintf(f, "%s{\"flag\":", n++ ? "," : "");
    lens_json_str(f, name);
    fprintf(f, ",\"events\":%" PRIu64 "}", x->r->sum.acc_counts[b]);
  }
  fputs("]}", f);
}

/* ---- hang ---- */

#define HANG_WAITS 64 /* stuck proxy ops listed per communicator */

static void hang(struct ctx *x) {
  FILE *f = x->f;
  fputs("\"hang\":", f);
  if (!x->v.h.n_stuck_comms) {
    fputs("null", f);
    return;
  }
  fputs("{\"comms\":[", f);
  int n = 0;
  for (size_t i = 0; i < x->v.h.n_comms; i++) {
    const struct lens_hang_comm *c = &x->v.h.comms[i];
    if (!c->stuck) continue;
    fputs(n++ ? ",{\"comm_id\":" : "{\"comm_id\":", f);
    lens_json_comm_id(f, c->comm_id);
    fputs(",\"comm_name\":", f);
    lens_json_str(f, c->name[0] ? c->name : NULL);
    fputs(",\"func\":", f);
    lens_json_str(f, c->stuck_func >= 0 && (size_t)c->stuck_func < c->n_funcs ? c->funcs[c->stuck_func] : NULL);
    fprintf(f, ",\"seq\":%" PRId64 ",\"nranks\":%d,\"ranks\":[", c->stuck_seq, c->nranks);
    /* per rank: where it is, and the last seq of the stuck func it started and completed */
    for (int32_t k = 0; k < c->nranks; k++) {
      const struct lens_hang_rank *rk = &c->ranks[k];
      const char *st = rk->proc < 0 ? "untraced" : rk->stuck ? "stuck" : !rk->entered ? "missing" : "passed";
      int64_t ls = -1, lc = -1;
      if (c->stuck_func >= 0 && c->stuck_func < LENS_HANG_MAX_FUNCS)
        ls = rk->last_started[c->stuck_func], lc = rk->last_completed[c->stuck_func];
      fprintf(f, "%s[\"%s\",%" PRId64 ",%" PRId64 "]", k ? "," : "", st, ls, lc);
    }
    fputs("],\"waiting\":[", f);
    for (size_t w = 0; w < c->n_waiting && w < HANG_WAITS; w++) {
      const struct lens_hang_wait *hw = &c->waiting[w];
      fprintf(f, "%s{\"rank\":%d,\"peer\":%d,\"channel\":%d,\"send\":%s,\"step\":%d,\"state\":", w ? "," : "",
              hw->rank, hw->peer, hw->channel, hw->is_send ? "true" : "false", hw->step);
      lens_json_str(f, lens_hang_state_meaning(hw->state, hw->is_send, hw->step_started));
      fputc('}', f);
    }
    fprintf(f, "],\"waiting_total\":%zu,\"waiting_groups\":", c->n_waiting);
    lens_hang_print_wait_groups_json(f, c);
    fputc('}', f);
  }
  /* which ranks' proxies froze (the verdict names them): the page marks their squares */
  fprintf(f, "],\"frozen_proxies\":%zu,\"frozen\":[", x->v.h.n_frozen);
  int nf = 0;
  for (size_t i = 0; i < x->v.h.n_proxies && nf < HANG_WAITS; i++) {
    const struct lens_hang_proxy *p = &x->v.h.proxies[i];
    if (!p->frozen) continue;
    fprintf(f, "%s{\"rank\":%d,\"blocked_rank\":%d,\"channel\":%d,\"step\":%d}", nf++ ? "," : "", p->rank,
            p->blocked_rank, p->blocked_channel, p->blocked_step);
  }
  fputs("]}", f);
}

int lens_report_print_json(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  struct ctx x = {.f = f, .m = m, .r = r};
  if (lens_report_view_build(m, r, &x.v)) return -1;
  int rc = -1;
  fprintf(f, "{\"schema\":\"nccl-lens-report/1\",\"generator\":\"nccl-lens %s\",", LENS_VERSION);
  fprintf(f, "\"inputs\":{\"files\":%zu,\"processes\":%zu,\"events\":%zu,\"instances\":%zu,\"origin_job_ns\":%" PRId64
             "},",
          m->n_files, m->n_procs, (size_t)r->n_events, x.v.j.n_insts, x.v.origin);
  verdict(&x);
  fputc(',', f);
  if (busbw(&x)) goto out;
  fputc(',', f);
  if (waits(&x)) goto out;
  fputc(',', f);
  if (stragglers(&x)) goto out;
  fputc(',', f);
  if (network(&x)) goto out;
  fputc(',', f);
  threads(&x);
  fputc(',', f);
  gpu(&x);
  fputc(',', f);
  hang(&x);
  fputs("}\n", f);
  rc = 0;
out:
  lens_report_view_free(&x.v);
  return rc;
}
