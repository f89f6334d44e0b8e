/* See summary_print.h. */
#include "cli/format.h"
#include "summary/summary_print.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/json_out.h"
#include "hang/hang_print.h"

static const struct lens_model *comm_m;
static int cmp_comm(const void *a, const void *b) {
  const struct lens_comm *x = &comm_m->comms[*(const size_t *)a], *y = &comm_m->comms[*(const size_t *)b];
  if (x->comm_id != y->comm_id) return x->comm_id < y->comm_id ? -1 : 1;
  return strcmp(x->name, y->name);
}

size_t lens_summary_distinct_comms(const struct lens_model *m) {
  size_t *o = malloc((m->n_comms + 1) * sizeof *o), n = 0;
  if (!o) return m->n_comms;
  for (size_t c = 0; c < m->n_comms; c++) o[c] = c;
  comm_m = m;
  qsort(o, m->n_comms, sizeof *o, cmp_comm);
  for (size_t c = 0; c < m->n_comms; c++) n += !c || cmp_comm(&o[c - 1], &o[c]);
  free(o);
  return n;
}

/* Bytes over the job view's execution, never over a completion time: a
 * rank's completion holds its wait for the last rank to arrive, and bytes
 * over it read a late peer as a slow network. */
double lens_summary_algbw(const struct lens_sum_row *r) {
  return r->exec_tasks && r->exec_ns ? (double)r->exec_bytes / (double)r->exec_ns : 0.0;
}

const char *lens_summary_algbw_text(const struct lens_sum_row *r, char *buf, size_t len) {
  /* "-" when no task of the row was decomposed; else GB/s (10^9 bytes a
   * second = bytes per ns, the unit of every view: docs/cli.md) as every
   * view writes it (lens_fmt_gbps: three significant digits, so small
   * operations do not print 0.000). */
  if (!r->exec_tasks || !r->exec_ns) {
    snprintf(buf, len, "-");
    return buf;
  }
  return lens_fmt_gbps(lens_summary_algbw(r), buf, len);
}

static double avg_us(const struct lens_stat *s) { return s->n ? (double)s->sum / (double)s->n / 1e3 : 0.0; }

static const char *nz(const char *s) { return s && *s ? s : "-"; }

static const struct lens_summary *sort_s;
static int cmp_row(const void *a, const void *b) {
  const struct lens_sum_row *x = &sort_s->rows[*(const size_t *)a], *y = &sort_s->rows[*(const size_t *)b];
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  int c = strcmp(nz(x->func), nz(y->func));
  if (c) return c;
  if (x->user_tag != y->user_tag) return x->user_tag < y->user_tag ? -1 : 1;
  if ((c = strcmp(nz(x->algo), nz(y->algo)))) return c;
  if ((c = strcmp(nz(x->kernel_variant), nz(y->kernel_variant)))) return c;
  if ((c = strcmp(nz(x->proto), nz(y->proto)))) return c;
  return (x->bucket > y->bucket) - (x->bucket < y->bucket);
}

static size_t *row_order(const struct lens_summary *s) {
  size_t *o = malloc((s->n_rows + 1) * sizeof *o);
  if (!o) return NULL;
  for (size_t i = 0; i < s->n_rows; i++) o[i] = i;
  sort_s = s;
  qsort(o, s->n_rows, sizeof *o, cmp_row);
  return o;
}

static const char *const proxy_state_names[4] = {"active", "sleep", "idle", "append"};

/* Fractions of the thread's ProxyCtrl span: active + sleep + idle <= 1 (the rest is before its first
 * Active/Idle record); append is part of active or idle. */
static uint64_t proxy_total(const struct lens_sum_proxy *p) { return p->span_ns; }

/* A row per process, capped (lens_fmt_rows, NONZERO): the processes that lost the most first, and with the
 * table capped, processes that lost nothing are not listed (a thousand rows of zeros say one thing). */
static void print_drops_text(FILE *f, const struct lens_model *m, int all) {
  fprintf(f, "\ndrops and losses\n");
  struct lens_fmt_rows rows;
  size_t n = m->n_procs;
  double *key = lens_fmt_rows_begin(&rows, n, all, LENS_FMT_ROWS_NONZERO);
  for (size_t p = 0; key && p < n; p++) key[p] = (double)lens_drops_total(&m->procs[p].drops);
  lens_fmt_rows_order(&rows);
  size_t listed = rows.listed, with = 0; /* counted here: without memory for the key, rows.nonzero says 0 */
  for (size_t p = 0; p < n; p++) with += lens_drops_total(&m->procs[p].drops) > 0;
  if (listed)
    fprintf(f, "  %-28s %10s %10s %10s %10s %10s %10s %10s\n", "process", "ring_full", "no_slot", "null_hdl",
            "bad_hdl", "write_err", "cupti_rec", "blob_q");
  for (size_t p; lens_fmt_rows_next(&rows, &p);) {
    const struct lens_drops *d = &m->procs[p].drops;
    char who[96];
    snprintf(who, sizeof who, "%s:%u", m->procs[p].host, m->procs[p].pid);
    fprintf(f, "  %-28s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64
               " %10" PRIu64 "\n",
            who, d->ring_full, d->no_thread_slot, d->null_handle, d->bad_handle, d->write_errors, d->cupti_records,
            d->blob_queue_full);
  }
  if (listed < n) {
    if (with > listed)
      fprintf(f, "  (%zu more processes with drops and %zu without not listed: --all lists every one; --json has "
                 "all)\n", with - listed, n - with);
    else if (with)
      fprintf(f, "  the other %zu processes: no drops (--all lists every one)\n", n - with);
    else
      fprintf(f, "  no drops in any of the %zu processes (--all lists every one)\n", n);
  }
  lens_fmt_rows_end(&rows);
  fprintf(f, "  orphan stops (start lost): %" PRIu64 "   unparsable records: %" PRIu64 "\n", m->orphan_stops,
          m->bad_records);
  int cut = 0;
  for (size_t i = 0; i < m->n_files; i++) {
    const struct lens_file *fl = &m->files[i];
    if (fl->truncated_bytes) {
      fprintf(f, "  truncated: %s: %s, last %" PRIu64 " bytes not read\n", fl->path, fl->truncation,
              fl->truncated_bytes);
      cut = 1;
    }
    if (fl->lost_chunks) {
      fprintf(f, "  lost: %s: %" PRIu64 " chunks were never written (write errors: disk full?); the counts above "
                 "miss their events\n",
              fl->path, fl->lost_chunks);
      cut = 1;
    }
    if (fl->damaged_bytes) {
      fprintf(f, "  damaged: %s: %" PRIu64 " chunks (%" PRIu64 " bytes) fail their CRC and were skipped; the counts "
                 "above miss their events\n",
              fl->path, fl->damaged_chunks, fl->damaged_bytes);
      cut = 1;
    }
    if (!fl->n_sessions && !fl->truncated_bytes) {
      fprintf(f, "  empty: %s holds its header only: the process wrote nothing more (killed at once? disk full?)\n",
              fl->path);
      cut = 1;
    } else if (!fl->clean_end && fl->producer != LENS_PRODUCER_SCHED)
      fprintf(f, "  no clean end (FINI) in %s: %s\n", fl->path,
              fl->lost_chunks ? "its end marker may be among the lost chunks, or the process was killed"
                              : "the process may have been killed");
  }
  for (size_t i = 0; i < m->n_same_traces; i++)
    fprintf(f, "  read once: %s is %s %s\n", m->same_traces[i].path,
            m->same_traces[i].same_file ? "the same file as" : "a copy of the trace in", m->same_traces[i].same_as);
  if (!cut) fprintf(f, "  all %zu files intact\n", m->n_files);
}

static void stat_json(FILE *f, const char *key, const struct lens_stat *s) {
  fprintf(f, ",\"%s\":{\"n\":%" PRIu64 ",\"sum_ns\":%" PRIu64 ",\"avg_ns\":", key, s->n, s->sum);
  lens_json_double(f, s->n ? (double)s->sum / (double)s->n : 0.0);
  fprintf(f, ",\"max_ns\":%" PRIu64 "}", s->max);
}

/* "avg/max" in us within width columns: ns precision while it fits, fewer
 * decimals for long waits (a loaded machine's 100+ ms enqueue max ran the
 * table past 120 columns). */
static void us_pair_fit(double avg_us_v, double max_us_v, int width, char *buf, size_t len) {
  for (int prec = 3; prec >= 0; prec--) {
    int n = snprintf(buf, len, "%.*f/%.*f", prec, avg_us_v, prec, max_us_v);
    if (n <= width) return;
  }
}

/* A stat's "avg/max" in us within width columns, "-" when it has no sample. */
static void us_pair(const struct lens_stat *st, int width, char *buf, size_t len) {
  if (st->n) us_pair_fit(avg_us(st), st->max / 1e3, width, buf, len);
  else snprintf(buf, len, "-");
}

/* Copy-engine collectives, apart from the kernel ones: their times are the
 * host's enqueue only. */
static void print_ce_text(FILE *f, const struct lens_summary *s) {
  if (!s->n_ce_rows) return;
  fprintf(f, "\ncopy-engine (CE) collectives: host enqueue times (CeColl start -> stop, and the CeSync/CeBatch inside "
             "it);\nthe copy engines' own work is not recorded, so there is no completion time\n");
  fprintf(f, "  %-22s %-10s %-4s %-14s %7s %10s %19s %19s", "communicator", "func", "sync", "size", "count", "bytes",
          "enqueue avg/max us", "CeColl avg/max us");
  if (s->wide) fprintf(f, " %17s %17s %10s", "CeSync n, avg us", "CeBatch n, avg us", "batch bytes");
  fputc('\n', f);
  for (size_t i = 0; i < s->n_ce_rows; i++) {
    const struct lens_sum_ce_row *r = &s->ce_rows[i];
    const struct lens_sum_group *g = &s->groups[r->group];
    char size[32], bytes[32], bb[32], enq[40], ce[40], sy[40] = "0", ba[40] = "0", fn[96];
    lens_size_bucket_label(r->bucket, size, sizeof size);
    lens_fmt_bytes(r->bytes, bytes, sizeof bytes);
    lens_fmt_bytes(r->batch_bytes, bb, sizeof bb);
    us_pair(&r->enqueue, 19, enq, sizeof enq);
    us_pair(&r->ce, 19, ce, sizeof ce);
    if (r->sync.n) snprintf(sy, sizeof sy, "%" PRIu64 ", %.3f", r->sync.n, avg_us(&r->sync));
    if (r->batch.n) snprintf(ba, sizeof ba, "%" PRIu64 ", %.3f", r->batch.n, avg_us(&r->batch));
    const char *func = r->func && *r->func ? r->func : "-";
    if (r->user_tag) {
      char tb[32];
      snprintf(fn, sizeof fn, "%s, %s", func, lens_tag_label(r->user_tag, tb, sizeof tb));
      func = fn;
    }
    fprintf(f, "  %-22.22s %-10s %-4s %-14s %7" PRIu64 " %10s %19s %19s", g->name[0] ? g->name : "-", func,
            nz(r->sync_strategy), size, r->count, bytes, enq, ce);
    if (s->wide) fprintf(f, " %17s %17s %10s", sy, ba, bb);
    fputc('\n', f);
  }
}

static void print_ce_json(FILE *f, const struct lens_summary *s) {
  fputs(",\"ce_collectives\":[", f);
  for (size_t i = 0; i < s->n_ce_rows; i++) {
    const struct lens_sum_ce_row *r = &s->ce_rows[i];
    const struct lens_sum_group *g = &s->groups[r->group];
    char size[32];
    lens_size_bucket_label(r->bucket, size, sizeof size);
    fprintf(f, "%s{\"communicator\":", i ? "," : "");
    lens_json_str(f, g->name);
    fputs(",\"comm_id\":", f);
    lens_json_comm_id(f, g->comm_id);
    fputs(",\"func\":", f);
    lens_json_str(f, r->func);
    fputs(",\"sync_strategy\":", f);
    lens_json_str(f, r->sync_strategy);
    if (r->user_tag) fprintf(f, ",\"user_tag\":%" PRIu64, r->user_tag);
    fprintf(f, ",\"size_bucket\":\"%s\",\"size_log2\":%d,\"count\":%" PRIu64 ",\"bytes\":%" PRIu64, size, r->bucket,
            r->count, r->bytes);
    stat_json(f, "enqueue", &r->enqueue);
    stat_json(f, "ce_coll", &r->ce);
    stat_json(f, "ce_sync", &r->sync);
    stat_json(f, "ce_batch", &r->batch);
    fprintf(f, ",\"batch_bytes\":%" PRIu64 ",\"batch_ops\":%" PRIu64 "}", r->batch_bytes, r->batch_ops);
  }
  fputc(']', f);
}

void lens_summary_print_text(FILE *f, const struct lens_model *m, const struct lens_summary *s,
                             const struct lens_summary_align *align) {
  /* m->comms holds one entry per init (each rank of each process): count
   * the communicators themselves, and say the inits when they differ. */
  size_t distinct = lens_summary_distinct_comms(m);
  char inits[48] = "";
  if (distinct != m->n_comms) snprintf(inits, sizeof inits, " (%zu rank inits)", m->n_comms);
  fprintf(f, "nccl-lens summary: %zu files, %zu processes, %zu communicator%s%s, %" PRIu64 " events\n", m->n_files,
          m->n_procs, distinct, distinct == 1 ? "" : "s", inits, s->events);
  size_t *o = row_order(s);
  int32_t cur = -1;
  /* func and algo columns as wide as their longest label ("AllReduce, backward", "sym RSxLD_AGxST"), from
   * 9 and 8 ("AllReduce", "RING/LL"): 120 columns hold func and algo of 24 together (AllReduce with "sym
   * RSxLD_AGxST"); a longer pair (a named tag) widens the table */
  int wf = 9, wa = 8;
  char fl[96], al[96];
  for (size_t k = 0; k < s->n_rows; k++) {
    int lf = (int)strlen(lens_summary_func_label(&s->rows[k], fl, sizeof fl));
    int la = (int)strlen(lens_summary_algo_label(&s->rows[k], al, sizeof al));
    if (lf > wf) wf = lf;
    if (la > wa) wa = la;
  }
  for (size_t k = 0; o && k < s->n_rows; k++) {
    const struct lens_sum_row *r = &s->rows[o[k]];
    if (r->group != cur) {
      cur = r->group;
      const struct lens_sum_group *g = &s->groups[cur];
      char idb[LENS_COMM_ID_LEN];
      fprintf(f, "\ncommunicator %s (id %s, %d ranks, %d seen)\n", lens_fmt_comm_name(g->name), lens_fmt_comm_id(g->comm_id, idb),
              g->nranks, g->ranks_seen);
      /* proto 6 ("SIMPLE"), size 13 ("512 KiB-1 MiB") */
      fprintf(f, "  %-*s %-*s %-6s %-13s %7s %10s %19s %21s %10s", wf, "func", wa, "algo", "proto", "size", "count",
              "bytes", "enqueue avg/max us", "completion avg/max us", "algbw GB/s");
      if (s->wide) fprintf(f, " %14s %21s", "ch GPU avg us", "proxy ops/steps/bytes");
      fputc('\n', f);
    }
    char size[32], bytes[32], pbytes[32], enq[40], comp[40];
    lens_size_bucket_label(r->bucket, size, sizeof size);
    lens_fmt_bytes(r->bytes, bytes, sizeof bytes);
    lens_fmt_bytes(r->proxy_bytes, pbytes, sizeof pbytes);
    us_pair_fit(avg_us(&r->enqueue), r->enqueue.max / 1e3, 19, enq, sizeof enq);
    us_pair(&r->completion, 21, comp, sizeof comp);
    char ch[24] = "-";
    if (r->gpu_channel.n) snprintf(ch, sizeof ch, "%.3f", avg_us(&r->gpu_channel));
    char pr[64];
    snprintf(pr, sizeof pr, "%" PRIu64 "/%" PRIu64 "/%s", r->proxy_ops, r->proxy_steps, pbytes);
    char bw[24];
    fprintf(f, "  %-*s %-*s %-6s %-13s %7" PRIu64 " %10s %19s %21s %10s", wf,
            lens_summary_func_label(r, fl, sizeof fl), wa, lens_summary_algo_label(r, al, sizeof al), nz(r->proto),
            size, r->count, bytes, enq, comp, lens_summary_algbw_text(r, bw, sizeof bw));
    if (s->wide) fprintf(f, " %14s %21s", ch, pr);
    fputc('\n', f);
  }
  free(o);
  if (s->n_rows)
    fprintf(f, "  completion: kernel launch (else Coll start) -> last channel/proxy stop on each rank,\n"
               "  so it includes the rank's wait for the last rank (the job view splits it);\n"
               "  algbw: bytes / the job view's execution of the ops it decomposed, no wait (- if none)%s\n",
            s->wide ? "" : "\n  (--wide adds per-channel GPU time and proxy ops/steps/bytes)");
  print_ce_text(f, s);
  if (!s->n_rows && !s->n_ce_rows) fprintf(f, "\nno collective or point-to-point operations in these traces\n");
  if (s->n_proxies) {
    fprintf(f, "\nproxy threads (share of time from first to last ProxyCtrl: active, sleep and idle (awake) do not overlap;\n"
               "append is time within active or idle)\n");
    fprintf(f, "  %-28s %-16s %8s %8s %10s %7s %7s %7s %7s\n", "thread", "name", "ops", "steps", "bytes", "active%",
            "sleep%", "idle%", "append%");
    /* capped: the busiest threads (active share) first */
    struct lens_fmt_rows rows;
    double *key = lens_fmt_rows_begin(&rows, s->n_proxies, s->all, LENS_FMT_ROWS_EVERY);
    for (size_t i = 0; key && i < s->n_proxies; i++) {
      uint64_t tot = proxy_total(&s->proxies[i]);
      key[i] = tot ? (double)s->proxies[i].state_ns[0] / (double)tot : 0.0;
    }
    lens_fmt_rows_order(&rows);
    for (size_t i; lens_fmt_rows_next(&rows, &i);) {
      const struct lens_sum_proxy *p = &s->proxies[i];
      const struct lens_thread *t = &m->threads[p->thread];
      char who[96], b[32];
      snprintf(who, sizeof who, "%s:%u tid %u", m->procs[t->proc].host, m->procs[t->proc].pid, t->tid);
      lens_fmt_bytes(p->bytes, b, sizeof b);
      uint64_t tot = proxy_total(p);
      fprintf(f, "  %-28s %-16s %8" PRIu64 " %8" PRIu64 " %10s", who, t->name[0] ? t->name : "-", p->ops, p->steps, b);
      /* no ProxyCtrl span (its events masked out, or a writer that records none): not recorded, not 0 % */
      for (int k2 = 0; k2 < 4; k2++)
        if (tot) fprintf(f, " %7.1f", 100.0 * (double)p->state_ns[k2] / (double)tot);
        else fprintf(f, " %7s", "-");
      fputc('\n', f);
    }
    lens_fmt_rows_end(&rows);
    lens_fmt_left_out(f, rows.n - rows.listed, "proxy threads", 1);
  }
  print_drops_text(f, m, s->all);
  lens_summary_print_notes(f, m, 0);
  lens_summary_print_clocks_text(f, m, align, s->all);
  int any = 0;
  for (int b = 0; b < 32; b++)
    if (s->evf_counts[b] && lens_evf_name(1u << b)) {
      if (!any) fprintf(f, "\nevent flags\n");
      any = 1;
      fprintf(f, "  %-18s %10" PRIu64 "\n", lens_evf_name(1u << b), s->evf_counts[b]);
    }
  if (s->analyses_ran) {
    fprintf(f, "\naccuracy flags (GPU/CUPTI and starvation analyses)\n");
    for (int b = 0; b < 32; b++)
      if (lens_acc_name(1u << b)) fprintf(f, "  %-18s %10" PRIu64 "\n", lens_acc_name(1u << b), s->acc_counts[b]);
    fprintf(f, "  KernelCh time source: host-notice %" PRIu64 ", gpu-ptimer %" PRIu64 ", cupti %" PRIu64 "\n",
            s->time_source[0], s->time_source[1], s->time_source[2]);
  }
  if (s->starvation.n_samples) {
    fprintf(f, "\nstarvation (scheduler probe, %zu samples)\n", s->starvation.n_samples);
    lens_starvation_print_text(f, &s->starvation);
  }
}

void lens_summary_print_json(FILE *f, const struct lens_model *m, const struct lens_summary *s,
                             const struct lens_summary_align *al) {
  fprintf(f, "{\"files\":[");
  for (size_t i = 0; i < m->n_files; i++) {
    const struct lens_file *fl = &m->files[i];
    fprintf(f, "%s{\"path\":", i ? "," : "");
    lens_json_str(f, fl->path);
    fprintf(f, ",\"producer\":%u,\"size_bytes\":%" PRIu64 ",\"truncated_bytes\":%" PRIu64 ",\"truncation\":",
            fl->producer, fl->size_bytes, fl->truncated_bytes);
    lens_json_str(f, fl->truncation);
    fprintf(f, ",\"lost_chunks\":%" PRIu64 ",\"damaged_bytes\":%" PRIu64 ",\"damaged_chunks\":%" PRIu64
               ",\"sessions\":%u,\"clean_end\":%s}",
            fl->lost_chunks, fl->damaged_bytes, fl->damaged_chunks, fl->n_sessions, fl->clean_end ? "true" : "false");
  }
  fprintf(f, "],\"processes\":%zu,\"events\":%" PRIu64 ",\"hang\":", m->n_procs, s->events);
  lens_hang_print_headline_json(f, s->hang);
  fputs(",\"communicators\":[", f);
  size_t *o = row_order(s);
  for (size_t g = 0; g < s->n_groups; g++) {
    const struct lens_sum_group *gr = &s->groups[g];
    fprintf(f, "%s{\"name\":", g ? "," : "");
    lens_json_str(f, gr->name);
    fputs(",\"comm_id\":", f);
    lens_json_comm_id(f, gr->comm_id);
    fprintf(f, ",\"nranks\":%d,\"ranks_seen\":%d,\"ops\":[", gr->nranks,
            gr->ranks_seen);
    int first = 1;
    for (size_t k = 0; o && k < s->n_rows; k++) {
      const struct lens_sum_row *r = &s->rows[o[k]];
      if (r->group != (int32_t)g) continue;
      char size[32];
      lens_size_bucket_label(r->bucket, size, sizeof size);
      fprintf(f, "%s{\"func\":", first ? "" : ",");
      first = 0;
      lens_json_str(f, r->func);
      fputs(",\"algo\":", f);
      lens_json_str(f, r->algo);
      fputs(",\"proto\":", f);
      lens_json_str(f, r->proto);
      if (r->kernel_variant) {
        fputs(",\"kernel_variant\":", f);
        lens_json_str(f, r->kernel_variant);
      }
      if (r->user_tag) {
        char tb[32];
        fprintf(f, ",\"user_tag\":%" PRIu64 ",\"user_tag_name\":", r->user_tag);
        lens_json_str(f, lens_tag_label(r->user_tag, tb, sizeof tb));
      }
      fprintf(f, ",\"size_bucket\":\"%s\",\"size_log2\":%d,\"count\":%" PRIu64 ",\"bytes\":%" PRIu64
                 ",\"graph_ops\":%" PRIu64,
              size, r->bucket, r->count, r->bytes, r->graph);
      stat_json(f, "enqueue", &r->enqueue);
      stat_json(f, "completion", &r->completion);
      fprintf(f, ",\"completed_bytes\":%" PRIu64 ",\"exec_tasks\":%" PRIu64 ",\"exec_bytes\":%" PRIu64
                 ",\"exec_ns\":%" PRIu64 ",\"algbw_gbps\":",
              r->completed_bytes, r->exec_tasks, r->exec_bytes, r->exec_ns);
      lens_json_double(f, lens_summary_algbw(r));
      stat_json(f, "gpu_channel", &r->gpu_channel);
      fprintf(f, ",\"proxy\":{\"ops\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"bytes\":%" PRIu64 "}}", r->proxy_ops,
              r->proxy_steps, r->proxy_bytes);
    }
    fputs("]}", f);
  }
  free(o);
  fputc(']', f);
  print_ce_json(f, s);
  fputs(",\"proxy_threads\":[", f);
  for (size_t i = 0; i < s->n_proxies; i++) {
    const struct lens_sum_proxy *p = &s->proxies[i];
    const struct lens_thread *t = &m->threads[p->thread];
    fprintf(f, "%s{\"host\":", i ? "," : "");
    lens_json_str(f, m->procs[t->proc].host);
    fprintf(f, ",\"pid\":%u,\"tid\":%u,\"name\":", m->procs[t->proc].pid, t->tid);
    lens_json_str(f, t->name);
    fprintf(f, ",\"ops\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"bytes\":%" PRIu64, p->ops, p->steps, p->bytes);
    uint64_t tot = proxy_total(p);
    for (int k = 0; k < 4; k++) {
      fprintf(f, ",\"%s_ns\":%" PRIu64 ",\"%s_fraction\":", proxy_state_names[k], p->state_ns[k], proxy_state_names[k]);
      if (tot) lens_json_double(f, (double)p->state_ns[k] / (double)tot);
      else fputs("null", f); /* no ProxyCtrl span: not recorded */
    }
    fputc('}', f);
  }
  fputs("],\"drops\":{\"processes\":[", f);
  for (size_t p = 0; p < m->n_procs; p++) {
    const struct lens_drops *d = &m->procs[p].drops;
    fprintf(f, "%s{\"host\":", p ? "," : "");
    lens_json_str(f, m->procs[p].host);
    fprintf(f,
            ",\"pid\":%u,\"ring_full\":%" PRIu64 ",\"no_thread_slot\":%" PRIu64 ",\"null_handle\":%" PRIu64
            ",\"bad_handle\":%" PRIu64 ",\"write_errors\":%" PRIu64 ",\"cupti_records\":%" PRIu64
            ",\"blob_queue_full\":%" PRIu64 "}",
            m->procs[p].pid, d->ring_full, d->no_thread_slot, d->null_handle, d->bad_handle, d->write_errors,
            d->cupti_records, d->blob_queue_full);
  }
  uint64_t cut = 0, damaged = 0, damaged_chunks = 0;
  for (size_t i = 0; i < m->n_files; i++)
    cut += m->files[i].truncated_bytes, damaged += m->files[i].damaged_bytes,
        damaged_chunks += m->files[i].damaged_chunks;
  fprintf(f,
          "],\"orphan_stops\":%" PRIu64 ",\"bad_records\":%" PRIu64 ",\"truncated_bytes\":%" PRIu64
          ",\"damaged_bytes\":%" PRIu64 ",\"damaged_chunks\":%" PRIu64 "}",
          m->orphan_stops, m->bad_records, cut, damaged, damaged_chunks);
  fputs(",\"event_flags\":{", f);
  int first = 1;
  for (int b = 0; b < 32; b++)
    if (lens_evf_name(1u << b)) {
      fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", lens_evf_name(1u << b), s->evf_counts[b]);
      first = 0;
    }
  fputc('}', f);
  if (s->analyses_ran) {
    fputs(",\"accuracy\":{", f);
    first = 1;
    for (int b = 0; b < 32; b++)
      if (lens_acc_name(1u << b)) {
        fprintf(f, "%s\"%s\":%" PRIu64, first ? "" : ",", lens_acc_name(1u << b), s->acc_counts[b]);
        first = 0;
      }
    fprintf(f, ",\"kernel_ch_time_source\":{\"host-notice\":%" PRIu64 ",\"gpu-ptimer\":%" PRIu64 ",\"cupti\":%" PRIu64
               "}}",
            s->time_source[0], s->time_source[1], s->time_source[2]);
  }
  lens_summary_print_clocks_json(f, m, al);
  if (s->starvation.n_samples) {
    fputs(",\"starvation\":", f);
    lens_starvation_print_json(f, &s->starvation);
  }
  fputs("}\n", f);
}
