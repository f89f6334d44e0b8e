/* See job_print.h. All durations are differences on one clock: GPU spans
 * on each GPU's own globaltimer, stages on each host's CLOCK_MONOTONIC. */
#include "job/align_print.h"
#include "job/job_print.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/format.h"
#include "export/json_out.h"
#include "hang/hang_print.h"
#include "summary/summary_model.h"

static const char *const flag_names[] = {"partial", "host_spans", "approx_rule", "ends_apart",
                                         "no_span", "by_order",   "graph",       "one_rank"};

/* Widest line of the text tables (docs/cli.md). */
#define LENS_JOB_TEXT_COLS 120

static unsigned pid_of(const struct lens_model *m, int32_t proc) {
  return proc >= 0 && (size_t)proc < m->n_procs ? m->procs[proc].pid : 0;
}

const char *lens_job_inst_cause_words(const struct lens_job_inst *in) {
  /* host spans end at the proxy's completion notices: neither the GPU start
   * nor a late call is seen there (docs/job.md) */
  if (in->cause == LENS_CAUSE_UNKNOWN && (in->flags & LENS_JOB_HOST_SPANS)) return LENS_JOB_HOST_SPANS_WORDS;
  return lens_fmt_cause_words(lens_job_cause_name(in->cause));
}

size_t lens_job_straggler_causes(const struct lens_job_straggler *s, struct lens_job_cause_item *out, int *top) {
  size_t n = 0;
  int t = -1;
  for (int c = 1; c < 8; c++) {
    uint64_t k = s->cause_count[c], hs = c == LENS_CAUSE_UNKNOWN ? s->unknown_host_spans : 0;
    if (hs > k) hs = k; /* not reached: a subset */
    if (k - hs) out[n++] = (struct lens_job_cause_item){lens_fmt_cause_words(lens_job_cause_name(c)), k - hs, 0};
    if (hs) out[n++] = (struct lens_job_cause_item){LENS_JOB_HOST_SPANS_WORDS, hs, 1};
  }
  for (size_t i = 0; i < n; i++)
    if (t < 0 || out[i].n > out[t].n) t = (int)i;
  if (top) *top = t;
  return n;
}

const char *lens_job_straggler_top_words(const struct lens_job_straggler *s) {
  struct lens_job_cause_item it[LENS_JOB_CAUSE_ITEMS];
  int top;
  lens_job_straggler_causes(s, it, &top);
  if (top >= 0 && it[top].host_spans)
    return "on " LENS_JOB_HOST_SPANS_WORDS ", where no GPU-side cause is named";
  return top >= 0 ? it[top].words : "-";
}

/* A cause in the instance table, short enough for 120 columns (the legend
 * under the table says what each means). */
static void cause_text(const struct lens_job_inst *in, char *buf, size_t len) {
  double us = (double)in->cause_excess_ns / 1e3;
  switch (in->cause) {
  case LENS_CAUSE_NONE: snprintf(buf, len, "-"); break;
  case LENS_CAUSE_SLOW_LINK:
    snprintf(buf, len, "slow link %d->%d (%.1fx)", in->cause_rank, in->cause_peer, (double)in->cause_excess_ns / 1000.0);
    break;
  case LENS_CAUSE_STARVED_PROXY: snprintf(buf, len, "r%d starved proxy (%.1f us)", in->cause_rank, us); break;
  case LENS_CAUSE_LATE_APP: snprintf(buf, len, "r%d late app call (+%.1f us)", in->cause_rank, us); break;
  default: snprintf(buf, len, "r%d %s (+%.1f us)", in->cause_rank, lens_job_inst_cause_words(in), us);
  }
}

static const char cause_legend[] =
    "  causes: late app call = its enqueue, launch and GPU start were on time, the call came late; late or busy GPU =\n"
    "  no GPU clock map tells the two apart; host spans = last on spans that end at the proxy's notices (no KernelCh\n"
    "  on some rank; a stalled proxy delays them): no GPU-side cause is named; other stages: +us = the lateness the\n"
    "  stage explains (its excess over the other ranks' median, at most the max wait); slow link: its sender's time\n"
    "  over that time with its wire at the instance's typical pace per byte; starved proxy: the longest its proxy was\n"
    "  kept from a CPU within one event\n";

/* Instances timed by host spans, not decomposed (a host's ranks ended apart)
 * and waiting on a slow link: the notes of the text and Markdown views. */
/* one: instances of a row (seen on two ranks or more of a communicator of
 * two or more) that only one rank timed, so none decomposed (a "-" in the
 * row when it has no other). none: instances no rank completed (a hang,
 * or a trace cut in them): nothing timed, host spans or not. */
static void inst_counts(const struct lens_job *j, size_t *host, size_t *apart, size_t *one, size_t *links,
                        size_t *none) {
  *host = *apart = *one = *links = *none = 0;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    *host += (in->flags & (LENS_JOB_HOST_SPANS | LENS_JOB_NO_SPAN)) == LENS_JOB_HOST_SPANS;
    *none += !!(in->flags & LENS_JOB_NO_SPAN);
    *apart += !!(in->flags & LENS_JOB_ENDS_APART);
    *one += in->nranks >= 2 && in->ranks_seen >= 2 && (in->flags & LENS_JOB_ONE_RANK);
    *links += j->insts[i].cause == LENS_CAUSE_SLOW_LINK;
  }
}

/* Why an instance was not decomposed, said alike by job, summary and report,
 * with where the causes are: one seen on a real GPU is ranks that share it
 * without MPS, which take turns (docs/gpu-check.md); the replay's uncoupled
 * GPUs are another. The output names no cause it cannot tell apart. */
#define NO_SPAN_WHY "no rank completed them (a hang, or traces cut in them: nccl-lens hang says where)"
#define ENDS_APART_WHY "ranks of one host did not end together on the mapped clock (ends_apart: see docs/job.md)"
#define ONE_RANK_WHY "one rank had a span, the others' records were cut off or untimed"

static void comm_head(FILE *f, const struct lens_model *m, uint64_t comm_id) {
  const char *name = LENS_COMM_UNNAMED;
  int nranks = 0;
  for (size_t i = 0; i < m->n_comms; i++)
    if (m->comms[i].comm_id == comm_id) {
      if (m->comms[i].name[0]) name = m->comms[i].name;
      nranks = m->comms[i].nranks;
    }
  char id[LENS_COMM_ID_LEN];
  fprintf(f, "\ncommunicator %s (id %s, %d ranks)\n", name, lens_fmt_comm_id(comm_id, id), nranks);
}

static void straggler_rows(FILE *f, const struct lens_model *m, const struct lens_job_straggler *v, size_t n,
                           int by_tag) {
  fprintf(f, "  %-18s %s%5s %-24s %16s %10s  %s\n", "communicator", by_tag ? "  user tag " : "", "rank", "host:pid",
          "wait caused ms", "times last", "causes");
  for (size_t i = 0; i < n; i++) {
    const struct lens_job_straggler *s = &v[i];
    char who[96], tag[24] = "", id[LENS_COMM_ID_LEN];
    snprintf(who, sizeof who, "%s:%u", lens_job_host(m, s->proc), pid_of(m, s->proc));
    if (by_tag) snprintf(tag, sizeof tag, "%10" PRIu64 " ", s->user_tag);
    int col = fprintf(f, "  %-18s %s%5d %-24s %16.3f %10" PRIu64 " ", lens_fmt_comm_id(s->comm_id, id), tag, s->rank, who,
                      s->wait_caused_ns / 1e6, s->times_last);
    /* The causes after the columns, wrapped under themselves: a straggler
     * late for several reasons (a loaded machine mixes them) would run past
     * 120 columns on one line. */
    int indent = col > 0 && col + 25 <= LENS_JOB_TEXT_COLS ? col + 1 : 8, at = col, first = 1;
    struct lens_job_cause_item it[LENS_JOB_CAUSE_ITEMS];
    size_t n_it = lens_job_straggler_causes(s, it, NULL);
    for (size_t c = 0; c < n_it; c++) {
      char item[48];
      int w = snprintf(item, sizeof item, "%s %" PRIu64, it[c].words, it[c].n);
      if (!first && at + 2 + w + 1 > LENS_JOB_TEXT_COLS) {
        fprintf(f, ",\n%*s", indent, "");
        at = indent;
      } else if (!first) {
        fputs(", ", f);
        at += 2;
      } else {
        fputc(' ', f);
        at++;
      }
      fputs(item, f);
      at += w, first = 0;
    }
    fputc('\n', f);
  }
}

/* A headline row's execution, wait and busbw cells, for the text and the
 * Markdown table alike (sep between avg/p50/p99): "-" when none of its
 * instances was decomposed, never 0.0 us and 0.00 GB/s, which read as
 * measured. */
struct row_cells { char ex[64], wt[48], bw[16]; };
static void row_cells_of(const struct lens_job_row *r, const char *sep, struct row_cells *c) {
  snprintf(c->ex, sizeof c->ex, "-");
  snprintf(c->wt, sizeof c->wt, "-");
  snprintf(c->bw, sizeof c->bw, "-");
  if (!r->decomposed) return;
  snprintf(c->ex, sizeof c->ex, "%.1f%s%.1f%s%.1f", r->exec_avg / 1e3, sep, r->exec_p50 / 1e3, sep, r->exec_p99 / 1e3);
  snprintf(c->wt, sizeof c->wt, "%.1f%s%.1f", r->wait_avg / 1e3, sep, r->wait_max / 1e3);
  lens_fmt_gbps(r->busbw_gbps, c->bw, sizeof c->bw);
}

/* kineto: the spans are Kineto's NCCL kernels on each file's wall clock, not
 * KernelCh pTimers (job_cmd.c never mixes Kineto files with traces). */
static void note(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The rows, then (notes: summary, where job's notes are not printed) why
 * rows say "-", then the stragglers. */
static void headline(FILE *f, const struct lens_model *m, const struct lens_job *j, int kineto, int notes) {
  if (!j->n_rows) return;
  fprintf(f, "\njob view: execution = span of the rank that started last (ranks end together); wait = a rank's span "
             "- execution;\n  %s;\n  busbw from the execution (nccl-tests factors).\n",
          kineto ? "durations: each NCCL kernel's span in its Kineto file (CUPTI's, on that host's wall clock)"
                 : "durations on each GPU's own clock (KernelCh pTimer), no cross-host clock");
  uint64_t cur = 0;
  int any = 0;
  for (size_t i = 0; i < j->n_rows; i++) {
    const struct lens_job_row *r = &j->rows[i];
    if (!any || r->comm_id != cur) {
      cur = r->comm_id;
      any = 1;
      comm_head(f, m, cur);
      fprintf(f, "  %-14s %-14s %6s %27s %19s %10s %14s\n", "func", "size", "count", "execution avg/p50/p99 us",
              "wait avg/max us", "busbw GB/s", "last rank (n)");
    }
    char size[32], last[32] = "-";
    struct row_cells c;
    lens_size_bucket_label(r->bucket, size, sizeof size);
    /* a Kineto kernel without collective args (pre-2024 files) has no size: not 0 B */
    if (kineto && r->bucket < 0) snprintf(size, sizeof size, "unknown");
    row_cells_of(r, "/", &c);
    if (r->top_last_rank >= 0)
      snprintf(last, sizeof last, "%d (%" PRIu64 "/%" PRIu64 ")", r->top_last_rank, r->top_last_count, r->count);
    fprintf(f, "  %-14s %-14s %6" PRIu64 " %27s %19s %10s %14s\n", r->func ? r->func : "-", size, r->count, c.ex, c.wt,
            c.bw, last);
  }
  if (notes) {
    size_t host, apart, one, links, none;
    inst_counts(j, &host, &apart, &one, &links, &none);
    if (apart)
      note(f, "%zu of %zu instances not decomposed (\"-\"): " ENDS_APART_WHY "; nccl-lens job lists them", apart,
           j->n_insts);
    if (one) note(f, "%zu of %zu instances not decomposed: " ONE_RANK_WHY, one, j->n_insts);
    if (none) note(f, "%zu of %zu instances not decomposed: " NO_SPAN_WHY, none, j->n_insts);
  }
  if (!j->n_stragglers) {
    fprintf(f, "\nstragglers: none (no rank made the others wait >= %.1f us and >= %.0f%% of the execution)\n",
            j->min_wait_ns / 1e3, LENS_JOB_MIN_WAIT_FRAC * 100);
    return;
  }
  fprintf(f, "\nstragglers (ranks that started last, by the others' total wait; threshold %.1f us / %.0f%% of exec)\n",
          j->min_wait_ns / 1e3, LENS_JOB_MIN_WAIT_FRAC * 100);
  straggler_rows(f, m, j->stragglers, j->n_stragglers, 0);
  if (!j->n_tag_stragglers) return;
  fprintf(f, "\nstragglers per user tag (v7 userProfilerTag; tagged instances only)\n");
  straggler_rows(f, m, j->tag_stragglers, j->n_tag_stragglers, 1);
}
void lens_job_print_headline(FILE *f, const struct lens_model *m, const struct lens_job *j) {
  headline(f, m, j, 0, 1);
}

static const struct lens_job *sort_j;
static int by_wait(const void *a, const void *b) {
  const struct lens_job_inst *x = &sort_j->insts[*(const size_t *)a], *y = &sort_j->insts[*(const size_t *)b];
  if (x->max_wait_ns != y->max_wait_ns) return x->max_wait_ns > y->max_wait_ns ? -1 : 1;
  return (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

static size_t insts_by_order(const struct lens_job *j) {
  size_t n = 0;
  for (size_t i = 0; i < j->n_insts; i++) n += !!(j->insts[i].flags & LENS_JOB_BY_ORDER);
  return n;
}

/* A "note: ..." line, wrapped within LENS_FMT_COLUMNS under its first word. */
static void note(FILE *f, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  lens_fmt_wrap(f, "note: ", "      ", text, LENS_FMT_COLUMNS);
}

void lens_job_print_text(FILE *f, const struct lens_model *m, const struct lens_job *j, size_t max_list,
                         const struct lens_align *a, const struct lens_job_sources *src) {
  fprintf(f, "nccl-lens job: %zu files, %zu processes, %zu instances: %zu matched on all ranks, %zu on some, %zu on "
             "one\n",
          m->n_files, m->n_procs, j->n_insts, j->matched_all, j->matched_some, j->matched_one);
  if (src && src->kineto_files) {
    fprintf(f, "kineto: %zu files, %" PRIu64 " NCCL kernels; times are each file's host wall clock (CLOCK_REALTIME,\n"
               "  GPU times mapped by CUPTI), its error unknown unless the hosts table below places it; a span is\n"
               "  the NCCL kernel's (not KernelCh pTimers), stages are differences on one host's clock; a\n"
               "  kineto-rankR host's \"mono\" clock in the hosts table is that file's wall clock\n",
            src->kineto_files, src->kernels);
    if (src->by_order)
      fprintf(f, "kineto: %" PRIu64 " kernels (%zu instances) matched by order, not Seq: ambiguous where a rank's trace\n"
                 "  misses or adds a kernel\n",
              src->by_order, insts_by_order(j));
    if (src->uneven_comms)
      fprintf(f, "kineto: %zu communicators matched by order have different kernel counts on different ranks:\n"
                 "  some of their instances pair kernels of different collectives\n",
              src->uneven_comms);
    if (src->same_rank_files)
      fprintf(f, "kineto: %zu file%s a rank an earlier file named: where two hold one instance, one kernel\n"
                 "  is kept and the other not counted\n",
              src->same_rank_files, src->same_rank_files == 1 ? " names" : "s name");
    if (src->no_launch || src->no_api || src->dropped)
      fprintf(f, "kineto: %" PRIu64 " kernels without their launch, %" PRIu64 " without a record_param_comms op, %" PRIu64
                 " dropped\n",
              src->no_launch, src->no_api, src->dropped);
  }
  size_t host, apart, one, links, none;
  inst_counts(j, &host, &apart, &one, &links, &none);
  if (none) note(f, "%zu instances: " NO_SPAN_WHY "; not decomposed", none);
  if (host)
    note(f, "%zu instances had no KernelCh on some rank: host-side spans (Coll start -> completion) used for them",
            host);
  if (apart)
    note(f, "%zu instances: " ENDS_APART_WHY "; not decomposed", apart);
  if (one)
    note(f, "%zu instances: " ONE_RANK_WHY "; not decomposed", one);
  if (!j->have_clock_map)
    note(f, "no GPU clock map: a late rank's GPU-start stage is unknown (late app vs busy GPU undecided)");
  /* Copy-engine collectives (API v6+): the job view cannot match or
   * decompose them (no GPU timers: their events bracket the host's
   * enqueue), but says they were there; the map counted them. */
  if (j->ce_count)
    note(f, "%" PRIu64 " copy-engine (CE) collectives, not matched here: their events time the host's enqueue only "
            "(CeColl start -> stop, %.1f us on average), not the copies; `nccl-lens summary` lists them",
            j->ce_count, (double)j->ce_enqueue_ns / (double)j->ce_count / 1e3);
  else if (!j->ce_known)
    note(f, "copy-engine collectives unknown (a partial file written before they were counted)");
  headline(f, m, j, src && src->kineto_files, 0);
  if (links) fprintf(f, "\nslow links: %zu instances with arrivals aligned and one link slow (see below)\n", links);
  size_t *o = malloc((j->n_insts + 1) * sizeof *o);
  if (!o) return;
  size_t n = 0;
  for (size_t i = 0; i < j->n_insts; i++)
    if (lens_job_inst_decomposed(&j->insts[i]) && j->insts[i].cause != LENS_CAUSE_NONE) o[n++] = i;
  sort_j = j;
  qsort(o, n, sizeof *o, by_wait);
  if (n) {
    fprintf(f, "\ninstances with a straggler or a slow link (longest wait first%s)\n", max_list && n > max_list ? "" : "");
    fprintf(f, "  %-18s %8s %-13s %10s %11s %6s %12s  %s\n", "communicator", "seq", "func", "bytes", "exec us", "last",
            "max wait us", "cause");
  }
  for (size_t k = 0; k < n && (!max_list || k < max_list); k++) {
    const struct lens_job_inst *in = &j->insts[o[k]];
    char c[160], id[LENS_COMM_ID_LEN], bytes[24];
    cause_text(in, c, sizeof c);
    if (src && src->kineto_files && !in->bytes) snprintf(bytes, sizeof bytes, "unknown"); /* as the rows say */
    else snprintf(bytes, sizeof bytes, "%" PRIu64, in->bytes);
    fprintf(f, "  %-18s %8" PRId64 " %-13s %10s %11.1f %6d %12.1f  %s\n", lens_fmt_comm_id(in->comm_id, id), in->seq,
            in->func ? in->func : "-", bytes, in->exec_ns / 1e3, in->last_rank, in->max_wait_ns / 1e3, c);
  }
  if (max_list && n > max_list) fprintf(f, "  ... %zu more (--all lists every one; --json has all)\n", n - max_list);
  if (n) fputs(cause_legend, f);
  free(o);
  if (a) lens_align_print_text(f, m, a, max_list == 0);
}

static void json_flags(FILE *f, uint32_t flags) {
  fputc('[', f);
  int k = 0;
  for (unsigned b = 0; b < sizeof flag_names / sizeof flag_names[0]; b++)
    if (flags & (1u << b)) {
      if (k++) fputc(',', f);
      lens_json_str(f, flag_names[b]);
    }
  fputc(']', f);
}

static void json_stragglers(FILE *f, const struct lens_model *m, const char *key, const struct lens_job_straggler *v,
                            size_t n, int by_tag) {
  fprintf(f, "],\n\"%s\":[", key);
  for (size_t i = 0; i < n; i++) {
    const struct lens_job_straggler *s = &v[i];
    fprintf(f, "%s\n{\"comm_id\":", i ? "," : "");
    lens_json_comm_id(f, s->comm_id);
    if (by_tag) fprintf(f, ",\"user_tag\":%" PRIu64, s->user_tag);
    fprintf(f, ",\"rank\":%d,\"host\":", s->rank);
    lens_json_str(f, lens_job_host(m, s->proc));
    fprintf(f, ",\"pid\":%u,\"wait_caused_ns\":%" PRIu64 ",\"times_last\":%" PRIu64 ",\"causes\":{", pid_of(m, s->proc),
            s->wait_caused_ns, s->times_last);
    int k = 0;
    for (int c = 1; c < 8; c++)
      if (s->cause_count[c]) fprintf(f, "%s\"%s\":%" PRIu64, k++ ? "," : "", lens_job_cause_name(c), s->cause_count[c]);
    fputs("}}", f);
  }
}

/* An instance --json lists whatever its size: a cause named (a straggler, a
 * slow link) or a flag (not decomposed, host spans, matched by order...). */
static int inst_flagged(const struct lens_job_inst *in) { return in->cause != LENS_CAUSE_NONE || in->flags; }

void lens_job_print_json(FILE *f, const struct lens_model *m, const struct lens_job *j, const struct lens_align *a,
                         const struct lens_hang_report *hang, const struct lens_job_sources *src) {
  lens_job_print_json_listed(f, m, j, a, hang, src, 1);
}

void lens_job_print_json_listed(FILE *f, const struct lens_model *m, const struct lens_job *j,
                                const struct lens_align *a, const struct lens_hang_report *hang,
                                const struct lens_job_sources *src, int all) {
  fprintf(f, "{\"schema\":\"nccl-lens-job/1\",\"threshold_ns\":%" PRIu64 ",\"min_wait_frac\":%.3f,", j->min_wait_ns,
          LENS_JOB_MIN_WAIT_FRAC);
  if (src && src->kineto_files)
    fprintf(f, "\"kineto\":{\"files\":%zu,\"clock\":\"wall clock per host (CLOCK_REALTIME), error unknown unless "
               "aligned\",\"kernels\":%" PRIu64 ",\"by_seq\":%" PRIu64 ",\"by_order\":%" PRIu64
               ",\"instances_by_order\":%zu,\"uneven_comms\":%zu,\"same_rank_files\":%zu,\"no_launch\":%" PRIu64 ",\"no_api\":%" PRIu64 ",\"dropped\":%" PRIu64 "},",
            src->kineto_files, src->kernels, src->by_seq, src->by_order, insts_by_order(j), src->uneven_comms,
            src->same_rank_files, src->no_launch, src->no_api,
            src->dropped);
  fputs("\"hang\":", f);
  lens_hang_print_headline_json(f, hang);
  fputc(',', f);
  if (!j->ce_known) /* a partial file written before they were counted */
    fprintf(f, "\"ce_collectives\":null,");
  else
    fprintf(f, "\"ce_collectives\":{\"count\":%" PRIu64 ",\"host_enqueue_ns\":%" PRIu64 "},", j->ce_count,
            j->ce_enqueue_ns);
  fprintf(f, "\"clock_map\":%s,\"matched\":{\"all\":%zu,\"some\":%zu,\"one\":%zu},\n\"collectives\":[",
          j->have_clock_map ? "true" : "false", j->matched_all, j->matched_some, j->matched_one);
  size_t ok_used = 0, listed = 0, ok_left = 0;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    /* the rows count every instance; the ok ones past the first are left out */
    if (!inst_flagged(in) && !lens_fmt_json_ok_listed(&ok_used, 1 + in->n_ranks, all)) {
      ok_left++;
      continue;
    }
    fprintf(f, "%s\n{\"comm_id\":", listed++ ? "," : "");
    lens_json_comm_id(f, in->comm_id);
    fprintf(f, ",\"seq\":%" PRId64 ",\"func\":", in->seq);
    lens_json_str(f, in->func);
    fprintf(f, ",\"algo\":");
    lens_json_str(f, in->algo);
    fprintf(f, ",\"bytes\":%" PRIu64 ",\"nranks\":%d,\"ranks_seen\":%d,\"user_tag\":%" PRIu64 ",", in->bytes, in->nranks,
            in->ranks_seen, in->user_tag);
    if (in->is_p2p) fprintf(f, "\"sender\":%d,\"receiver\":%d,", in->peer_lo, in->peer_hi);
    int dec = lens_job_inst_decomposed(in); /* the rows' rule: exec, waits, last rank only then */
    if (dec) {
      fprintf(f, "\"exec_ns\":%" PRIu64 ",\"busbw_gbps\":", in->exec_ns);
      lens_json_double(f, in->busbw_gbps);
      fprintf(f, ",\"last_rank\":%d,\"max_wait_ns\":%" PRIu64 ",", in->last_rank, in->max_wait_ns);
    } else {
      fputs("\"exec_ns\":null,\"busbw_gbps\":null,\"last_rank\":null,\"max_wait_ns\":null,", f);
    }
    fputs("\"span_source\":", f);
    lens_json_str(f, src && src->kineto_files            ? "kineto_kernel"
                     : in->flags & LENS_JOB_HOST_SPANS ? "host"
                                                       : "gpu_ptimer");
    fputs(",\"flags\":", f);
    json_flags(f, in->flags);
    fputs(",\"cause\":", f);
    lens_json_str(f, lens_job_cause_name(in->cause));
    fprintf(f, ",\"cause_rank\":%d,\"cause_peer\":%d,\"cause_excess_ns\":%" PRId64 ",\"ranks\":[", in->cause_rank,
            in->cause_peer, in->cause_excess_ns);
    for (size_t k = 0; k < in->n_ranks; k++) {
      const struct lens_job_rank *r = &j->ranks[in->first_rank + k];
      fprintf(f, "%s{\"rank\":%d,\"host\":", k ? "," : "", r->rank);
      lens_json_str(f, lens_job_host(m, r->proc));
      fprintf(f, ",\"pid\":%u,\"span_ns\":%" PRIu64 ",\"map_err_ns\":%" PRIu64 ",", pid_of(m, r->proc), r->span_ns,
              r->map_err_ns);
      if (dec) fprintf(f, "\"wait_ns\":%" PRIu64 "}", r->wait_ns);
      else fputs("\"wait_ns\":null}", f);
    }
    fputs("]}", f);
  }
  json_stragglers(f, m, "stragglers", j->stragglers, j->n_stragglers, 0);
  json_stragglers(f, m, "stragglers_by_tag", j->tag_stragglers, j->n_tag_stragglers, 1);
  fputs("],\n\"rows\":[", f);
  for (size_t i = 0; i < j->n_rows; i++) {
    const struct lens_job_row *r = &j->rows[i];
    fprintf(f, "%s\n{\"comm_id\":", i ? "," : "");
    lens_json_comm_id(f, r->comm_id);
    fputs(",\"func\":", f);
    lens_json_str(f, r->func);
    fprintf(f, ",\"size_log2\":%d,\"count\":%" PRIu64 ",\"decomposed\":%" PRIu64 ",\"exec_avg_ns\":%" PRIu64
               ",\"exec_p50_ns\":%" PRIu64 ",\"exec_p99_ns\":%" PRIu64 ",\"wait_avg_ns\":%" PRIu64
               ",\"wait_max_ns\":%" PRIu64 ",\"busbw_gbps\":",
            r->bucket, r->count, r->decomposed, r->exec_avg, r->exec_p50, r->exec_p99, r->wait_avg, r->wait_max);
    lens_json_double(f, r->busbw_gbps);
    fprintf(f, ",\"top_last_rank\":%d,\"top_last_count\":%" PRIu64 ",\"with_straggler\":%" PRIu64 "}", r->top_last_rank,
            r->top_last_count, r->with_straggler);
  }
  fputc(']', f);
  /* what the default left out; absent when every instance is listed */
  if (ok_left) fprintf(f, ",\n\"left_out\":{\"collectives_ok\":%zu}", ok_left);
  if (a) lens_align_print_json(f, m, a);
  fputs("}\n", f);
}

/* A straggler's causes in a Markdown cell. */
static void md_causes(FILE *f, const struct lens_job_straggler *s) {
  struct lens_job_cause_item it[LENS_JOB_CAUSE_ITEMS];
  size_t n = lens_job_straggler_causes(s, it, NULL);
  for (size_t c = 0; c < n; c++) fprintf(f, "%s %" PRIu64 " ", it[c].words, it[c].n);
}

void lens_job_print_md(FILE *f, const struct lens_model *m, const struct lens_job *j) {
  if (!j->n_rows) return;
  fprintf(f, "## The job: execution and waiting\n\n");
  fprintf(f, "Execution = GPU span of the rank that started last (the ranks end together); wait = a rank's span "
             "minus the execution; bus bandwidth from the execution. Durations on each GPU's own clock (KernelCh "
             "pTimer). %zu instances: %zu matched on all ranks, %zu on some, %zu on one.",
          j->n_insts, j->matched_all, j->matched_some, j->matched_one);
  size_t host, apart, one, links, none;
  inst_counts(j, &host, &apart, &one, &links, &none);
  if (none) fprintf(f, " %zu not decomposed: " NO_SPAN_WHY ".", none);
  if (host) fprintf(f, " %zu had no KernelCh on some rank: host-side spans (Coll start → completion) used.", host);
  if (apart)
    fprintf(f, " %zu not decomposed: " ENDS_APART_WHY " (\"-\" where no instance of a row was).", apart);
  if (one)
    fprintf(f, " %zu not decomposed: " ONE_RANK_WHY ".", one);
  fprintf(f, "\n\n");
  fprintf(f, "| communicator | func | size | count | exec avg / p50 / p99 us | wait avg / max us | busbw GB/s | "
             "last rank (n) |\n|---|---|---|---:|---:|---:|---:|---|\n");
  for (size_t i = 0; i < j->n_rows; i++) {
    const struct lens_job_row *r = &j->rows[i];
    char size[32];
    lens_size_bucket_label(r->bucket, size, sizeof size);
    char id[LENS_COMM_ID_LEN];
    struct row_cells c;
    row_cells_of(r, " / ", &c);
    char fb[LENS_FMT_MD_SIZE(128)]; /* a func name from the trace, escaped (format.h) */
    fprintf(f, "| %s | %s | %s | %" PRIu64 " | %s | %s | %s | ", lens_fmt_comm_id(r->comm_id, id),
            lens_fmt_md(r->func ? r->func : "-", fb, sizeof fb), size, r->count, c.ex, c.wt, c.bw);
    if (r->top_last_rank >= 0) fprintf(f, "%d (%" PRIu64 "/%" PRIu64 ") |\n", r->top_last_rank, r->top_last_count, r->count);
    else fprintf(f, "- |\n");
  }
  fprintf(f, "\n");
  if (!j->n_stragglers) {
    fprintf(f, "No straggler: no rank made the others wait %.1f us or more.\n\n", j->min_wait_ns / 1e3);
    return;
  }
  fprintf(f, "| communicator | rank | host:pid | wait caused ms | times last | causes |\n|---|---:|---|---:|---:|---|\n");
  for (size_t i = 0; i < j->n_stragglers; i++) {
    const struct lens_job_straggler *s = &j->stragglers[i];
    char id[LENS_COMM_ID_LEN], hb[LENS_FMT_MD_SIZE(64)];
    fprintf(f, "| %s | %d | %s:%u | %.3f | %" PRIu64 " | ", lens_fmt_comm_id(s->comm_id, id), s->rank,
            lens_fmt_md(lens_job_host(m, s->proc), hb, sizeof hb), pid_of(m, s->proc), s->wait_caused_ns / 1e6, s->times_last);
    md_causes(f, s);
    fprintf(f, "|\n");
  }
  fprintf(f, "\n");
  if (!j->n_tag_stragglers) return;
  fprintf(f, "Per user tag (v7 userProfilerTag; tagged instances only):\n\n| communicator | user tag | rank | host:pid | "
             "wait caused ms | times last | causes |\n|---|---:|---:|---|---:|---:|---|\n");
  for (size_t i = 0; i < j->n_tag_stragglers; i++) {
    const struct lens_job_straggler *s = &j->tag_stragglers[i];
    char id[LENS_COMM_ID_LEN], hb[LENS_FMT_MD_SIZE(64)];
    fprintf(f, "| %s | %" PRIu64 " | %d | %s:%u | %.3f | %" PRIu64 " | ", lens_fmt_comm_id(s->comm_id, id), s->user_tag, s->rank,
            lens_fmt_md(lens_job_host(m, s->proc), hb, sizeof hb), pid_of(m, s->proc), s->wait_caused_ns / 1e6, s->times_last);
    md_causes(f, s);
    fprintf(f, "|\n");
  }
  fprintf(f, "\n");
}
