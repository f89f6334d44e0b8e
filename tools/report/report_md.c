/* See report_md.h. Tables are GitHub-flavoured Markdown; every number comes
 * from the summary model (the same numbers as `summary --json`) or from
 * report_model.c. */
#include "report/report_md.h"
#include "report/report_recorded.h"
#include "hang/hang_print.h"
#include "analysis/hang/hang_analysis.h"

#include "cli/format.h"
#include "job/job_print.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_print.h"
#include "summary/summary_print.h"
#include "validate/validate_print.h"

static const char *nz(const char *s) { return s && *s ? s : "-"; }

/* Every label from a trace goes through lens_fmt_md (format.h): a crafted
 * communicator, host, thread or file name neither splits a table row nor
 * brings HTML or markup into the page. MD_LABEL: a buffer that holds any
 * name the reader keeps (comm names: 128 bytes) whole. */
#define MD_LABEL LENS_FMT_MD_SIZE(128)

/* "host:pid" of a process, escaped. */
static const char *md_proc(const struct lens_proc *p, char *buf, size_t len) {
  char h[MD_LABEL];
  snprintf(buf, len, "%s:%u", lens_fmt_md(p->host, h, sizeof h), p->pid);
  return buf;
}

#define REPORT_NET_TOP 10 /* connections in the Network section: one screen */

static double avg(const struct lens_stat *s) { return s->n ? (double)s->sum / (double)s->n : 0.0; }
static double pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0.0; }

void lens_report_left_out(FILE *f, size_t n_left, const char *what) {
  if (n_left) fprintf(f, "%zu more %s not listed: --all lists every one.\n\n", n_left, what);
}

static const struct lens_summary *sort_s;
static int cmp_row(const void *a, const void *b) {
  const struct lens_sum_row *x = &sort_s->rows[*(const size_t *)a], *y = &sort_s->rows[*(const size_t *)b];
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  int c = strcmp(nz(x->func), nz(y->func));
  if (!c) c = strcmp(nz(x->algo), nz(y->algo));
  if (!c && x->user_tag != y->user_tag) c = x->user_tag < y->user_tag ? -1 : 1;
  if (!c) c = strcmp(nz(x->kernel_variant), nz(y->kernel_variant));
  if (!c) c = strcmp(nz(x->proto), nz(y->proto));
  return c ? c : (x->bucket > y->bucket) - (x->bucket < y->bucket);
}

static void collectives(FILE *f, const struct lens_summary *s) {
  fprintf(f, "## Collectives and point-to-point, per communicator\n\n"
             "Times in us. enqueue: API call start → Coll/P2p stop (host). completion: its kernel's launch (else the Coll/P2p start, which NCCL makes after the launch) → its last "
             "ProxyOp/KernelCh stop, on each rank: it includes the rank's wait for the last rank to arrive (the job "
             "view above splits it). algbw: bytes / execution, GB/s, over the operations the job view decomposed "
             "(the span of the rank that started last: no rank's wait counted; - when it decomposed none). ch GPU: "
             "per-channel kernel time.\n\n");
  if (!s->n_rows) {
    fprintf(f, s->n_ce_rows ? "No kernel collective or point-to-point operations: only copy-engine ones (below).\n\n"
                            : "No collective or point-to-point operations in these traces.\n\n");
    return;
  }
  size_t *o = malloc(s->n_rows * sizeof *o);
  if (!o) return;
  for (size_t i = 0; i < s->n_rows; i++) o[i] = i;
  sort_s = s;
  qsort(o, s->n_rows, sizeof *o, cmp_row);
  int32_t cur = -1;
  for (size_t k = 0; k < s->n_rows; k++) {
    const struct lens_sum_row *r = &s->rows[o[k]];
    if (r->group != cur) {
      cur = r->group;
      const struct lens_sum_group *g = &s->groups[cur];
      char lb[48], mb[MD_LABEL];
      char idb[LENS_COMM_ID_LEN];
      fprintf(f, "%s### %s (comm id %s, %d ranks, %d seen)\n\n", k ? "\n" : "",
              lens_fmt_md(lens_fmt_comm_label(g->name, g->comm_id, lb, sizeof lb), mb, sizeof mb),
              lens_fmt_comm_id(g->comm_id, idb), g->nranks, g->ranks_seen);
      fprintf(f, "| func | algo | proto | size | count | bytes | enqueue avg | enqueue max | completion avg | "
                 "completion max | algbw GB/s | ch GPU avg | proxy ops/steps/bytes | graph ops |\n"
                 "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n");
    }
    char size[32], comp_avg[24] = "-", comp_max[24] = "-", ch[24] = "-", fl[96], al[96];
    lens_size_bucket_label(r->bucket, size, sizeof size);
    if (r->completion.n) {
      snprintf(comp_avg, sizeof comp_avg, "%.3f", avg(&r->completion) / 1e3);
      snprintf(comp_max, sizeof comp_max, "%.3f", (double)r->completion.max / 1e3);
    }
    if (r->gpu_channel.n) snprintf(ch, sizeof ch, "%.3f", avg(&r->gpu_channel) / 1e3);
    char bw[24], mf[LENS_FMT_MD_SIZE(sizeof fl)], ma[LENS_FMT_MD_SIZE(sizeof al)], mp[MD_LABEL];
    fprintf(f, "| %s | %s | %s | %s | %" PRIu64 " | %" PRIu64 " | %.3f | %.3f | %s | %s | %s | %s | %" PRIu64
               "/%" PRIu64 "/%" PRIu64 " | %" PRIu64 " |\n",
            lens_fmt_md(lens_summary_func_label(r, fl, sizeof fl), mf, sizeof mf),
            lens_fmt_md(lens_summary_algo_label(r, al, sizeof al), ma, sizeof ma), lens_fmt_md(nz(r->proto), mp, sizeof mp), size,
            r->count, r->bytes, avg(&r->enqueue) / 1e3,
            (double)r->enqueue.max / 1e3, comp_avg, comp_max, lens_summary_algbw_text(r, bw, sizeof bw), ch, r->proxy_ops, r->proxy_steps,
            r->proxy_bytes, r->graph);
  }
  fputc('\n', f);
  free(o);
}

/* Copy-engine collectives: their events bracket the host's enqueue only. */
static void ce_collectives(FILE *f, const struct lens_summary *s) {
  if (!s->n_ce_rows) return;
  fprintf(f, "## Copy-engine (CE) collectives\n\n"
             "Times in us, all on the host: NCCL brackets the enqueue of the copies (CeColl start → stop, with a "
             "CeSync around each memory-op sync and a CeBatch around each batched memcpy inside it); the copy engines' "
             "own work is not recorded, so there is no completion time or bandwidth. enqueue: CollApi start → CeColl "
             "stop.\n\n"
             "| communicator | func | sync | size | count | bytes | enqueue avg | CeColl avg | CeColl max | CeSync n | "
             "CeSync avg | CeBatch n | CeBatch avg | batch bytes |\n"
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < s->n_ce_rows; i++) {
    const struct lens_sum_ce_row *r = &s->ce_rows[i];
    const struct lens_sum_group *g = &s->groups[r->group];
    char size[32], lb[48], enq[24] = "-", ca[24] = "-", cm[24] = "-", sa[24] = "-", ba[24] = "-";
    char mc[MD_LABEL], mf[MD_LABEL], ms[MD_LABEL];
    lens_size_bucket_label(r->bucket, size, sizeof size);
    if (r->enqueue.n) snprintf(enq, sizeof enq, "%.3f", avg(&r->enqueue) / 1e3);
    if (r->ce.n) {
      snprintf(ca, sizeof ca, "%.3f", avg(&r->ce) / 1e3);
      snprintf(cm, sizeof cm, "%.3f", (double)r->ce.max / 1e3);
    }
    if (r->sync.n) snprintf(sa, sizeof sa, "%.3f", avg(&r->sync) / 1e3);
    if (r->batch.n) snprintf(ba, sizeof ba, "%.3f", avg(&r->batch) / 1e3);
    fprintf(f, "| %s | %s | %s | %s | %" PRIu64 " | %" PRIu64 " | %s | %s | %s | %" PRIu64 " | %s | %" PRIu64
               " | %s | %" PRIu64 " |\n",
            lens_fmt_md(lens_fmt_comm_label(g->name, g->comm_id, lb, sizeof lb), mc, sizeof mc),
            lens_fmt_md(nz(r->func), mf, sizeof mf), lens_fmt_md(nz(r->sync_strategy), ms, sizeof ms), size,
            r->count, r->bytes, enq, ca, cm, r->sync.n, sa, r->batch.n, ba, r->batch_bytes);
  }
  fputc('\n', f);
}

/* Per communicator: host enqueue cost against time to completion, then
 * arrival of each rank. */
/* How often the job view names a rank the last of one of its communicator's
 * collectives (the table's scope: Coll starts; no p2p transfer): its rule
 * (lens_job_inst_straggles), as its stragglers' "times last" and net's
 * `last in` count it. The arrival table's own Coll-start
 * order is the host's call, not who the others waited for on the GPU: on
 * the golden `all` it named rank 2 last in 83 of replay-world's 87 operations
 * beside job's stragglers 3 and 1 (one answer). */
static uint64_t job_times_last(const struct lens_job *j, uint64_t comm_id, int rank) {
  uint64_t n = 0;
  for (size_t i = 0; j && i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    n += !in->is_p2p && in->comm_id == comm_id && in->last_rank == rank && lens_job_inst_straggles(j, in);
  }
  return n;
}

static void completion_vs_enqueue(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  const struct lens_summary *s = &r->sum;
  fprintf(f, "## Completion vs enqueue\n\n");
  if (!s->n_groups) {
    fprintf(f, "No operations.\n\n");
    return;
  }
  fprintf(f, "| communicator | ops | completed | enqueue avg | completion avg | completion / enqueue |\n"
             "|---|---:|---:|---:|---:|---:|\n");
  for (size_t g = 0; g < s->n_groups; g++) {
    struct lens_stat enq = {0}, comp = {0};
    uint64_t ops = 0;
    for (size_t i = 0; i < s->n_rows; i++) {
      const struct lens_sum_row *w = &s->rows[i];
      if (w->group != (int32_t)g) continue;
      ops += w->count;
      enq.n += w->enqueue.n;
      enq.sum += w->enqueue.sum;
      comp.n += w->completion.n;
      comp.sum += w->completion.sum;
    }
    char a[32], b[32], ratio[32] = "-";
    lens_fmt_ns(avg(&enq), a, sizeof a);
    lens_fmt_ns(avg(&comp), b, sizeof b);
    if (comp.n && avg(&enq) > 0) snprintf(ratio, sizeof ratio, "%.2f", avg(&comp) / avg(&enq));
    char lb[48], mb[MD_LABEL];
    fprintf(f, "| %s | %" PRIu64 " | %" PRIu64 " | %s | %s | %s |\n",
            lens_fmt_md(lens_fmt_comm_label(s->groups[g].name, s->groups[g].comm_id, lb, sizeof lb), mb, sizeof mb),
            ops, comp.n, a,
            comp.n ? b : "-", ratio);
  }
  fputc('\n', f);
  if (!r->n_late) {
    fprintf(f, "No collective was seen on two ranks of the same host: rank arrival not compared.\n\n");
    return;
  }
  fprintf(f, "Arrival at collectives: each rank's Coll start (its host's call) minus the first rank's, per operation "
             "(same comm, same seq, same host). Last to arrive: the collectives the job view names this rank the "
             "last of (GPU start; a wait over its threshold), as its stragglers and net's `last in`.\n\n"
             "| communicator | rank | ops | late avg | late max | last to arrive |\n"
             "|---|---:|---:|---:|---:|---:|\n");
  /* capped: the latest ranks (late max) first */
  struct lens_fmt_rows rows;
  double *key = lens_fmt_rows_begin(&rows, r->n_late, r->sum.all, LENS_FMT_ROWS_EVERY);
  for (size_t i = 0; key && i < r->n_late; i++) key[i] = (double)r->late[i].max_ns;
  lens_fmt_rows_order(&rows);
  for (size_t i; lens_fmt_rows_next(&rows, &i);) {
    const struct lens_rep_late *l = &r->late[i];
    char a[32], b[32];
    lens_fmt_ns(l->n ? (double)l->sum_ns / (double)l->n : 0, a, sizeof a);
    lens_fmt_ns((double)l->max_ns, b, sizeof b);
    char lb[48], mb[MD_LABEL];
    fprintf(f, "| %s | %d | %" PRIu64 " | %s | %s | %" PRIu64 " |\n",
            lens_fmt_md(lens_fmt_comm_label(l->comm_name, l->comm_id, lb, sizeof lb), mb, sizeof mb), l->rank, l->n, a, b,
            job_times_last(r->job, l->comm_id, l->rank));
  }
  lens_fmt_rows_end(&rows);
  (void)m;
  fputc('\n', f);
  lens_report_left_out(f, rows.n - rows.listed, "ranks");
}

static void accuracy(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  const struct lens_summary *s = &r->sum;
  fprintf(f, "## Timing accuracy (GPU analysis)\n\n");
  if (!r->gpu_ran) {
    fprintf(f, "The GPU analysis is not built in: KernelCh times are host notices.\n\n");
    return;
  }
  const struct lens_validate_verdict *v = &r->gpu;
  fprintf(f, "**Verdict: %s.** %s\n\n", v->level, v->text);
  fprintf(f, "KernelCh: %" PRIu64 " (time source: host-notice %" PRIu64 ", gpu-ptimer %" PRIu64 ", cupti %" PRIu64
             "). CUPTI kernel records: %zu.",
          r->kernel_ch, s->time_source[0], s->time_source[1], s->time_source[2], r->n_kernels);
  if (r->lag_n) {
    char a[32], b[32];
    lens_fmt_ns((double)r->lag_sum_ns / (double)r->lag_n, a, sizeof a);
    lens_fmt_ns((double)r->lag_max_ns, b, sizeof b);
    fprintf(f, " The thread that polls KernelCh (the proxy; on NCCL >= 2.31 its profiler thread) noticed kernel channel completion %s after it on average (max %s, %" PRIu64 " channels).", a,
            b, r->lag_n);
  }
  fprintf(f, "\n\n");
  if (m->n_clock_maps) {
    fprintf(f, "| GPU (KernelCh thread) | rank | source | points | slope | residual | error bound |\n"
               "|---|---:|---|---:|---:|---:|---:|\n");
    /* capped: the widest error bound first */
    struct lens_fmt_rows rows;
    double *key = lens_fmt_rows_begin(&rows, m->n_clock_maps, r->sum.all, LENS_FMT_ROWS_EVERY);
    for (size_t i = 0; key && i < m->n_clock_maps; i++) key[i] = m->clock_maps[i].error_bound_ns;
    lens_fmt_rows_order(&rows);
    for (size_t i; lens_fmt_rows_next(&rows, &i);) {
      const struct lens_clock_map *c = &m->clock_maps[i];
      const struct lens_thread *t = c->thread >= 0 ? &m->threads[c->thread] : NULL;
      char res[32], eb[32];
      lens_fmt_ns(c->residual_ns, res, sizeof res);
      lens_fmt_ns(c->error_bound_ns, eb, sizeof eb);
      char pb[MD_LABEL];
      fprintf(f, "| %s tid %u | %d | %s | %u | %.9f | %s | %s |\n", md_proc(&m->procs[c->proc], pb, sizeof pb),
              t ? t->tid : 0, c->rank, lens_clock_map_source_name(c->source), c->n_points, c->slope, res, eb);
    }
    lens_fmt_rows_end(&rows);
    fputc('\n', f);
    lens_report_left_out(f, rows.n - rows.listed, "clock maps");
  }
  fprintf(f, "| accuracy flag | events |\n|---|---:|\n");
  for (int b = 0; b < 32; b++)
    if (lens_acc_name(1u << b)) fprintf(f, "| %s | %" PRIu64 " |\n", lens_acc_name(1u << b), s->acc_counts[b]);
  fputc('\n', f);
}

/* A text view's lines (hang, starvation) as a fenced code block: inside it
 * Markdown and HTML are inert, and only a line of backticks as long as the
 * fence would end it. The text is written to memory first so that the fence
 * is longer than any run of backticks in it (a thread or communicator named
 * "```" alone on its line would otherwise end the block early). */
static char *fenced_buf;
static size_t fenced_len;
static FILE *fenced_begin(void) {
  fenced_buf = NULL, fenced_len = 0;
  return open_memstream(&fenced_buf, &fenced_len);
}
static void fenced_end(FILE *f, FILE *t) {
  if (!t) {
    fprintf(f, "Not shown (out of memory).\n\n");
    return;
  }
  fclose(t);
  size_t run = 0, most = 2;
  for (size_t i = 0; i < fenced_len; i++) {
    run = fenced_buf[i] == '`' ? run + 1 : 0;
    if (run > most) most = run;
  }
  for (size_t i = 0; i <= most; i++) fputc('`', f);
  fputc('\n', f);
  fwrite(fenced_buf, 1, fenced_len, f);
  for (size_t i = 0; i <= most; i++) fputc('`', f);
  fputs("\n\n", f);
  free(fenced_buf);
  fenced_buf = NULL;
}

static void proxies(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  const struct lens_summary *s = &r->sum;
  fprintf(f, "## Proxy threads and starvation\n\n");
  if (s->n_proxies) {
    fprintf(f, "Share of the time from the thread's first to its last ProxyCtrl. Active, sleep and idle (awake, no work) "
               "do not overlap; append is time within active or idle.\n\n"
               "| thread | name | ops | steps | bytes | active | sleep | idle | append |\n"
               "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    /* capped: the busiest (active share) first */
    struct lens_fmt_rows rows;
    double *key = lens_fmt_rows_begin(&rows, s->n_proxies, s->all, LENS_FMT_ROWS_EVERY);
    for (size_t i = 0; key && i < s->n_proxies; i++) key[i] = pct(s->proxies[i].state_ns[0], s->proxies[i].span_ns);
    lens_fmt_rows_order(&rows);
    for (size_t i; lens_fmt_rows_next(&rows, &i);) {
      const struct lens_sum_proxy *p = &s->proxies[i];
      const struct lens_thread *t = &m->threads[p->thread];
      char pb[MD_LABEL], nb[MD_LABEL];
      fprintf(f, "| %s tid %u | %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " |", md_proc(&m->procs[t->proc], pb, sizeof pb),
              t->tid, lens_fmt_md(nz(t->name), nb, sizeof nb), p->ops, p->steps, p->bytes);
      for (int k2 = 0; k2 < 4; k2++)
        if (p->span_ns) fprintf(f, " %.1f%% |", pct(p->state_ns[k2], p->span_ns));
        else fputs(" - |", f); /* no ProxyCtrl span: not recorded, not 0 % */
      fputc('\n', f);
    }
    lens_fmt_rows_end(&rows);
    fputc('\n', f);
    lens_report_left_out(f, rows.n - rows.listed, "proxy threads");
  }
  if (!r->n_sched) {
    fprintf(f, "No scheduler probe trace loaded: starvation not measured (`nccl-lens sched` records it).\n\n");
    return;
  }
  fprintf(f, "Starvation: events of each proxy thread that overlap a run-queue wait or preemption of it "
             "(%zu scheduler samples).\n\n| thread | KernelCh | starved | ProxyOp/Step | starved | time starved |\n"
             "|---|---:|---:|---:|---:|---:|\n",
          r->n_sched);
  for (size_t i = 0; i < r->n_starve; i++) {
    const struct lens_rep_starve *x = &r->starve[i];
    const struct lens_thread *t = &m->threads[x->thread];
    char ns[32], pb[MD_LABEL];
    lens_fmt_ns((double)x->starved_ns, ns, sizeof ns);
    fprintf(f, "| %s tid %u | %" PRIu64 " | %" PRIu64 " (%.1f%%) | %" PRIu64 " | %" PRIu64 " (%.1f%%) | %s |\n",
            md_proc(&m->procs[t->proc], pb, sizeof pb), t->tid, x->kernel_ch, x->kernel_ch_starved,
            pct(x->kernel_ch_starved, x->kernel_ch), x->proxy, x->proxy_starved, pct(x->proxy_starved, x->proxy), ns);
  }
  fputc('\n', f);
  fprintf(f, "Per watched thread (from the scheduler probe):\n\n");
  FILE *t = fenced_begin();
  if (t) lens_starvation_print_text(t, &r->sum.starvation); /* the summary's: gathered per host group, merged */
  fenced_end(f, t);
}

static void losses(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  /* capped: the processes that lost the most, and none that lost nothing (as summary's drops) */
  struct lens_fmt_rows rows;
  size_t n = m->n_procs;
  double *key = lens_fmt_rows_begin(&rows, n, r->sum.all, LENS_FMT_ROWS_NONZERO);
  for (size_t p = 0; key && p < n; p++) key[p] = (double)lens_drops_total(&m->procs[p].drops);
  lens_fmt_rows_order(&rows);
  size_t listed = rows.listed, with = 0; /* counted here: without memory for the key, rows.nonzero says 0 */
  for (size_t p = 0; p < n; p++) with += lens_drops_total(&m->procs[p].drops) > 0;
  fprintf(f, "## Data losses\n\n");
  if (listed)
    fprintf(f, "| process | ring_full | no_thread_slot | null_handle | bad_handle | write_errors | "
               "cupti_records | blob_queue_full |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t p; lens_fmt_rows_next(&rows, &p);) {
    const struct lens_drops *d = &m->procs[p].drops;
    char pb[MD_LABEL];
    fprintf(f, "| %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64
               " |\n",
            md_proc(&m->procs[p], pb, sizeof pb), d->ring_full, d->no_thread_slot, d->null_handle, d->bad_handle,
            d->write_errors, d->cupti_records, d->blob_queue_full);
  }
  lens_fmt_rows_end(&rows);
  if (listed < n) {
    if (listed) fputc('\n', f);
    if (with > listed)
      fprintf(f, "%zu more processes with drops and %zu without not listed: --all lists every one.\n",
              with - listed, n - with);
    else if (with)
      fprintf(f, "The other %zu processes: no drops (--all lists every one).\n", n - with);
    else
      fprintf(f, "No drops in any of the %zu processes (--all lists every one).\n", n);
  }
  fprintf(f, "\n- orphan stops (start lost): %" PRIu64 "\n- unparsable records: %" PRIu64 "\n", m->orphan_stops,
          m->bad_records);
  int cut = 0;
  for (size_t i = 0; i < m->n_files; i++) {
    const struct lens_file *fl = &m->files[i];
    if (fl->truncated_bytes) {
      fputs("- truncated: ", f);
      lens_fmt_md_code_put(f, fl->path);
      fputs(": ", f);
      lens_fmt_md_put(f, fl->truncation);
      fprintf(f, ", last %" PRIu64 " bytes not read\n", fl->truncated_bytes);
      cut++;
    }
    if (fl->lost_chunks) {
      fputs("- lost: ", f);
      lens_fmt_md_code_put(f, fl->path);
      fprintf(f, ": %" PRIu64 " chunks were never written (write errors: disk full?)\n", fl->lost_chunks);
      cut++;
    }
    if (fl->damaged_bytes) {
      fputs("- damaged: ", f);
      lens_fmt_md_code_put(f, fl->path);
      fprintf(f, ": %" PRIu64 " chunks (%" PRIu64 " bytes) fail their CRC and were skipped\n", fl->damaged_chunks,
              fl->damaged_bytes);
      cut++;
    }
    if (!fl->n_sessions && !fl->truncated_bytes) {
      fputs("- empty: ", f);
      lens_fmt_md_code_put(f, fl->path);
      fputs(" holds its header only: the process wrote nothing more (killed at once? disk full?)\n", f);
      cut++;
    } else if (!fl->clean_end && fl->producer != LENS_PRODUCER_SCHED) {
      fputs("- no clean end (FINI) in ", f);
      lens_fmt_md_code_put(f, fl->path);
      fprintf(f, ": %s\n", fl->lost_chunks ? "its end marker may be among the lost chunks, or the process was killed"
                                           : "the process may have been killed");
    }
  }
  for (size_t i = 0; i < m->n_same_traces; i++) {
    fputs("- read once: ", f);
    lens_fmt_md_code_put(f, m->same_traces[i].path);
    fprintf(f, " is %s ", m->same_traces[i].same_file ? "the same file as" : "a copy of the trace in");
    lens_fmt_md_code_put(f, m->same_traces[i].same_as);
    fputc('\n', f);
  }
  if (!cut) fprintf(f, "- all %zu files intact\n", m->n_files);
  for (int b = 0; b < 32; b++)
    if (r->sum.evf_counts[b] && lens_evf_name(1u << b))
      fprintf(f, "- events flagged %s: %" PRIu64 "\n", lens_evf_name(1u << b), r->sum.evf_counts[b]);
  lens_summary_print_notes(f, m, 1);
  fputc('\n', f);
}

/* `nccl-lens hang`'s diagnosis, when a collective never completed. */
static void hang_section(FILE *f, const struct lens_model *m, const struct lens_hang_report *hr, int all) {
  fprintf(f, "## Hang diagnosis\n\n");
  if (!hr) {
    fprintf(f, "Not computed (out of memory).\n\n");
    return;
  }
  const struct lens_hang_report h = *hr;
  if (!h.n_stuck_comms) {
    fprintf(f, "Every collective recorded completed: nothing hung.\n\n");
  } else {
    fprintf(f, "%zu communicator(s) with a collective that never completed (`nccl-lens hang` for JSON):\n\n",
            h.n_stuck_comms);
    FILE *t = fenced_begin();
    if (t) lens_hang_print_text(t, m, &h, all);
    fenced_end(f, t);
  }
}

void lens_report_print_md(FILE *f, const struct lens_model *m, const struct lens_report *r) {
  fprintf(f, "# nccl-lens report\n\n");
  lens_report_print_recorded(f, m, r);
  /* the job view leads whenever a communicator has more than one rank loaded */
  if (r->job && r->job_skel && r->job->comms_multi) lens_job_print_md(f, r->job_skel, r->job);
  collectives(f, &r->sum);
  ce_collectives(f, &r->sum);
  completion_vs_enqueue(f, m, r);
  accuracy(f, m, r);
  proxies(f, m, r);
  hang_section(f, m, r->hang, r->sum.all);
  lens_net_print_md(f, m, r->net, REPORT_NET_TOP);
  losses(f, m, r);
  fprintf(f, "## What to look at next\n\n");
  if (!lens_report_print_hints(f, m, r)) fprintf(f, "- Nothing stands out in these numbers.\n");
}
