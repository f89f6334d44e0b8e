/* Prometheus text exposition (prom_text.h). Each family is written whole
 * (HELP, TYPE, every sample), as the format requires. */
#include "prom_text.h"

#include "text_escape.h"
#include "cli/format.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sb_printf(struct strbuf *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 65536;
    while (cap - b->len <= (size_t)n) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->oom = 1;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
}

void sb_free(struct strbuf *b) {
  free(b->s);
  memset(b, 0, sizeof *b);
}

/* Every name below comes from a page: LV reads it bounded by its array and
 * escapes it (text_escape.h). */
#define LV(src, buf) prom_label_value((src), sizeof(src), (buf), sizeof(buf))

static void family(struct strbuf *b, const char *name, const char *type, const char *help) {
  sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* host, pid, rank, comm, comm_id: the labels of every per-rank sample. */
static void comm_labels(char *buf, size_t cap, const char *host, const struct lens_live_page *p,
                        const struct lens_live_comm *c) {
  char h[200], n[200], idb[LENS_COMM_ID_LEN];
  snprintf(buf, cap, "host=\"%s\",pid=\"%u\",rank=\"%d\",comm=\"%s\",comm_id=\"%s\"",
           prom_label_value(host, 256, h, sizeof h), p->pid, c->rank, LV(c->name, n), lens_fmt_comm_id(c->comm_id, idb));
}

static void series_labels(char *buf, size_t cap, const char *host, const struct lens_live_page *p,
                          const struct lens_live_series *s) {
  char cl[600], size[32];
  comm_labels(cl, sizeof cl, host, p, &p->comms[s->comm]);
  agent_size_label(s->size_bucket == 255 ? -1 : s->size_bucket, size, sizeof size);
  char tag[32] = "";
  if (s->user_tag) snprintf(tag, sizeof tag, "%llu", (unsigned long long)s->user_tag);
  char f[80], a[80], pr[80];
  snprintf(buf, cap, "%s,function=\"%s\",algo=\"%s\",proto=\"%s\",size=\"%s\",tag=\"%s\"", cl, LV(s->func, f),
           LV(s->algo, a), LV(s->proto, pr), size, tag);
}

static void hist(struct strbuf *b, const char *name, const char *labels, const struct lens_live_hist *h) {
  uint64_t cum = 0;
  for (int i = 0; i < LENS_LIVE_TIME_BUCKETS - 1; i++) {
    cum += h->bucket[i];
    sb_printf(b, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, (double)(1ull << i) * 1e-6, (unsigned long long)cum);
  }
  sb_printf(b, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
  sb_printf(b, "%s_sum{%s} %.9f\n", name, labels, (double)h->sum_ns / 1e9);
  sb_printf(b, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

#define FOR_SERIES(m)                                                      \
  for (size_t pi = 0; pi < (m)->pages.n; pi++)                             \
    for (uint32_t si = 0; si < (m)->pages.procs[pi].page->n_series; si++)  \
      if ((m)->pages.procs[pi].page->series[si].comm < (m)->pages.procs[pi].page->n_comms)

/* Sums of the series of one (page, comm, function, is_p2p). */
static void per_function(struct strbuf *b, const struct agent_model *m, const char *host, const char *name, int p2p,
                         int bytes) {
  for (size_t pi = 0; pi < m->pages.n; pi++) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    for (uint32_t si = 0; si < p->n_series; si++) {
      const struct lens_live_series *s = &p->series[si];
      if (s->comm >= p->n_comms || s->is_p2p != p2p) continue;
      int first = 1; /* only the first series of its (comm, function) prints the sum */
      for (uint32_t k = 0; k < si && first; k++)
        if (p->series[k].comm == s->comm && p->series[k].is_p2p == p2p &&
            !strncmp(p->series[k].func, s->func, LENS_LIVE_FUNC))
          first = 0;
      if (!first) continue;
      uint64_t v = 0;
      for (uint32_t k = si; k < p->n_series; k++)
        if (p->series[k].comm == s->comm && p->series[k].is_p2p == p2p &&
            !strncmp(p->series[k].func, s->func, LENS_LIVE_FUNC))
          v += bytes ? p->series[k].bytes : p->series[k].count;
      char cl[600], f[80];
      comm_labels(cl, sizeof cl, host, p, &p->comms[s->comm]);
      sb_printf(b, "%s{%s,function=\"%s\"} %llu\n", name, cl, LV(s->func, f), (unsigned long long)v);
    }
  }
}

void prom_render(const struct agent_model *m, const char *host, struct strbuf *b) {
  char l[1024], h[200], idb[LENS_COMM_ID_LEN];
  prom_label_value(host, 256, h, sizeof h);

  family(b, "nccl_lens_process_info", "gauge", "A process with a live page on this node (1); state running/finished/gone.");
  for (size_t pi = 0; pi < m->pages.n; pi++) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    sb_printf(b, "nccl_lens_process_info{host=\"%s\",pid=\"%u\",state=\"%s\"} 1\n", h, p->pid,
              m->pages.procs[pi].alive ? "running" : p->state == LENS_LIVE_FINISHED ? "finished" : "gone");
  }
  family(b, "nccl_lens_events_total", "counter", "Profiler records the plugin's writer aggregated.");
  for (size_t pi = 0; pi < m->pages.n; pi++)
    sb_printf(b, "nccl_lens_events_total{host=\"%s\",pid=\"%u\"} %llu\n", h, m->pages.procs[pi].page->pid,
              (unsigned long long)m->pages.procs[pi].page->events);
  family(b, "nccl_lens_dropped_records_total", "counter",
         "Records lost before the writer (a full ring, no thread slot); the trace counts the same.");
  for (size_t pi = 0; pi < m->pages.n; pi++)
    sb_printf(b, "nccl_lens_dropped_records_total{host=\"%s\",pid=\"%u\"} %llu\n", h, m->pages.procs[pi].page->pid,
              (unsigned long long)m->pages.procs[pi].page->drops);
  family(b, "nccl_lens_series_overflow_total", "counter",
         "Collectives not aggregated because the process had 256 series already.");
  for (size_t pi = 0; pi < m->pages.n; pi++)
    sb_printf(b, "nccl_lens_series_overflow_total{host=\"%s\",pid=\"%u\"} %llu\n", h, m->pages.procs[pi].page->pid,
              (unsigned long long)m->pages.procs[pi].page->series_overflow);
  family(b, "nccl_lens_unmatched_channels_total", "counter",
         "KernelCh events whose collective was never seen (its record dropped).");
  for (size_t pi = 0; pi < m->pages.n; pi++)
    sb_printf(b, "nccl_lens_unmatched_channels_total{host=\"%s\",pid=\"%u\"} %llu\n", h, m->pages.procs[pi].page->pid,
              (unsigned long long)m->pages.procs[pi].page->unmatched);

  family(b, "nccl_lens_collectives_total", "counter", "Collectives started, per communicator rank and function.");
  per_function(b, m, host, "nccl_lens_collectives_total", 0, 0);
  family(b, "nccl_lens_p2p_total", "counter", "Send/Recv operations started, per communicator rank and function.");
  per_function(b, m, host, "nccl_lens_p2p_total", 1, 0);
  family(b, "nccl_lens_bytes_total", "counter",
         "Bytes of the operations started (count x datatype size), per communicator rank and function.");
  per_function(b, m, host, "nccl_lens_bytes_total", 0, 1);
  per_function(b, m, host, "nccl_lens_bytes_total", 1, 1);
  family(b, "nccl_lens_ce_collectives_total", "counter",
         "Copy-engine (CE) collectives started (API v6+), per communicator rank and function.");
  per_function(b, m, host, "nccl_lens_ce_collectives_total", LENS_LIVE_KIND_CE, 0);
  family(b, "nccl_lens_ce_bytes_total", "counter", "Bytes of the copy-engine collectives started (count x datatype size).");
  per_function(b, m, host, "nccl_lens_ce_bytes_total", LENS_LIVE_KIND_CE, 1);

  family(b, "nccl_lens_ops_total", "counter",
         "Operations started per series (communicator rank, function, algo, proto, size bucket, tag).");
  FOR_SERIES(m) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    series_labels(l, sizeof l, host, p, &p->series[si]);
    sb_printf(b, "nccl_lens_ops_total{%s} %llu\n", l, (unsigned long long)p->series[si].count);
  }
  family(b, "nccl_lens_kernel_span_seconds", "histogram",
         "GPU span of one rank: first channel start to last channel stop (execution plus waiting for peers).");
  FOR_SERIES(m) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    if (p->series[si].is_p2p == LENS_LIVE_KIND_CE) continue; /* no GPU channels to time */
    series_labels(l, sizeof l, host, p, &p->series[si]);
    hist(b, "nccl_lens_kernel_span_seconds", l, &p->series[si].span);
  }
  family(b, "nccl_lens_enqueue_time_seconds", "histogram",
         "Host: API call start to the end of the enqueue (Coll/P2p stop); algo=\"CE\" (copy-engine collectives): "
         "CeColl start to stop.");
  FOR_SERIES(m) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    series_labels(l, sizeof l, host, p, &p->series[si]);
    hist(b, "nccl_lens_enqueue_time_seconds", l, &p->series[si].enqueue);
  }
  family(b, "nccl_lens_proxy_notice_lag_seconds", "histogram",
         "Proxy's notice of a channel stop after the GPU stop, relative to the quickest notice seen (lower bound).");
  FOR_SERIES(m) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    if (p->series[si].is_p2p == LENS_LIVE_KIND_CE) continue; /* no GPU channels to time */
    series_labels(l, sizeof l, host, p, &p->series[si]);
    hist(b, "nccl_lens_proxy_notice_lag_seconds", l, &p->series[si].notice);
  }
  family(b, "nccl_lens_last_seq_started", "gauge", "Highest NCCL seqNumber started + 1 (0: none), per function.");
  FOR_SERIES(m) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    const struct lens_live_series *s = &p->series[si];
    if (s->is_p2p) continue;
    series_labels(l, sizeof l, host, p, s);
    sb_printf(b, "nccl_lens_last_seq_started{%s} %llu\n", l, (unsigned long long)s->last_seq_started);
  }
  family(b, "nccl_lens_last_seq_completed", "gauge",
         "Highest NCCL seqNumber whose every channel stopped + 1 (0: none), per function.");
  FOR_SERIES(m) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    const struct lens_live_series *s = &p->series[si];
    if (s->is_p2p) continue;
    series_labels(l, sizeof l, host, p, s);
    sb_printf(b, "nccl_lens_last_seq_completed{%s} %llu\n", l, (unsigned long long)s->last_seq_completed);
  }

  /* The job view across the node's ranks. */
  family(b, "nccl_collective_exec_time_seconds", "histogram",
         "Execution of a collective: the shortest span among the node's ranks of one instance (waiting excluded); "
         "partial=\"true\": not every rank is on this node, an upper bound.");
  for (uint32_t i = 0; i < m->n_splits; i++) {
    const struct agent_split *s = &m->splits[i];
    char n[200], f[80];
    snprintf(l, sizeof l, "host=\"%s\",comm=\"%s\",comm_id=\"%s\",function=\"%s\",partial=\"%s\"", h,
             LV(s->comm_name, n), lens_fmt_comm_id(s->comm_id, idb), LV(s->func, f),
             s->local_ranks < s->nranks ? "true" : "false");
    hist(b, "nccl_collective_exec_time_seconds", l, &s->exec);
  }
  family(b, "nccl_bus_bandwidth_gbs", "gauge",
         "Bus bandwidth (nccl-tests' factor) of the newest matched instance, from its execution, GB/s.");
  for (uint32_t i = 0; i < m->n_splits; i++) {
    const struct agent_split *s = &m->splits[i];
    char n[200], f[80];
    sb_printf(b, "nccl_bus_bandwidth_gbs{host=\"%s\",comm=\"%s\",comm_id=\"%s\",function=\"%s\"} %.6f\n", h,
              LV(s->comm_name, n), lens_fmt_comm_id(s->comm_id, idb), LV(s->func, f), s->last_busbw_gbs);
  }
  family(b, "nccl_lens_last_rank", "gauge", "The rank that started last (shortest span) in the newest matched instance.");
  for (uint32_t i = 0; i < m->n_splits; i++) {
    const struct agent_split *s = &m->splits[i];
    char n[200], f[80];
    sb_printf(b, "nccl_lens_last_rank{host=\"%s\",comm=\"%s\",comm_id=\"%s\",function=\"%s\"} %d\n", h,
              LV(s->comm_name, n), lens_fmt_comm_id(s->comm_id, idb), LV(s->func, f), s->last_rank);
  }
  family(b, "nccl_lens_wait_seconds_total", "counter",
         "Time a rank's kernels waited for the last rank (its span minus the execution), matched instances.");
  for (uint32_t i = 0; i < m->n_ranks; i++)
    sb_printf(b, "nccl_lens_wait_seconds_total{host=\"%s\",pid=\"%u\",rank=\"%d\",comm_id=\"%s\"} %.9f\n", h,
              m->ranks[i].pid, m->ranks[i].rank, lens_fmt_comm_id(m->ranks[i].comm_id, idb),
              (double)m->ranks[i].wait_ns / 1e9);
  family(b, "nccl_lens_exec_seconds_total", "counter", "Execution time of the matched instances a rank took part in.");
  for (uint32_t i = 0; i < m->n_ranks; i++)
    sb_printf(b, "nccl_lens_exec_seconds_total{host=\"%s\",pid=\"%u\",rank=\"%d\",comm_id=\"%s\"} %.9f\n", h,
              m->ranks[i].pid, m->ranks[i].rank, lens_fmt_comm_id(m->ranks[i].comm_id, idb),
              (double)m->ranks[i].exec_ns / 1e9);
  family(b, "nccl_lens_last_rank_total", "counter", "Matched instances in which this rank started last.");
  for (uint32_t i = 0; i < m->n_ranks; i++)
    sb_printf(b, "nccl_lens_last_rank_total{host=\"%s\",pid=\"%u\",rank=\"%d\",comm_id=\"%s\"} %llu\n", h,
              m->ranks[i].pid, m->ranks[i].rank, lens_fmt_comm_id(m->ranks[i].comm_id, idb),
              (unsigned long long)m->ranks[i].last_count);
  family(b, "nccl_lens_agent_expired_instances_total", "counter",
         "Instances whose other local ranks never reported within 10 s (not in the split).");
  sb_printf(b, "nccl_lens_agent_expired_instances_total{host=\"%s\"} %llu\n", h, (unsigned long long)m->expired);
  /* From `nccl-lens sched` (its <pid>.sched pages), when it runs on this node. */
  family(b, "nccl_lens_thread_starved_seconds_total", "counter",
         "Time a watched NCCL proxy or profiler thread waited for a CPU: kind runqueue (woken, not yet running) or "
         "preempted (switched out while runnable); waits of at least nccl-lens sched --min-wait-us.");
  for (size_t i = 0; i < m->n_sched; i++) {
    const struct lens_sched_page_thread *t = &m->sched[i];
    const char *role = lens_sched_page_role_name(t->roles);
    sb_printf(b, "nccl_lens_thread_starved_seconds_total{host=\"%s\",pid=\"%u\",tid=\"%u\",role=\"%s\",kind=\"runqueue\"} %.9f\n",
              h, t->pid, t->tid, role, (double)t->runq_ns / 1e9);
    sb_printf(b, "nccl_lens_thread_starved_seconds_total{host=\"%s\",pid=\"%u\",tid=\"%u\",role=\"%s\",kind=\"preempted\"} %.9f\n",
              h, t->pid, t->tid, role, (double)t->preempt_ns / 1e9);
  }
  family(b, "nccl_lens_thread_starved_waits_total", "counter",
         "Waits for a CPU of a watched thread counted in nccl_lens_thread_starved_seconds_total.");
  for (size_t i = 0; i < m->n_sched; i++) {
    const struct lens_sched_page_thread *t = &m->sched[i];
    const char *role = lens_sched_page_role_name(t->roles);
    sb_printf(b, "nccl_lens_thread_starved_waits_total{host=\"%s\",pid=\"%u\",tid=\"%u\",role=\"%s\",kind=\"runqueue\"} %llu\n",
              h, t->pid, t->tid, role, (unsigned long long)t->runq_waits);
    sb_printf(b, "nccl_lens_thread_starved_waits_total{host=\"%s\",pid=\"%u\",tid=\"%u\",role=\"%s\",kind=\"preempted\"} %llu\n",
              h, t->pid, t->tid, role, (unsigned long long)t->preempt_waits);
  }
  family(b, "nccl_lens_agent_missed_instances_total", "counter",
         "Instances that left a page's ring of recent instances before the agent read them (not in the split).");
  for (uint32_t i = 0; i < m->n_cursors; i++)
    sb_printf(b, "nccl_lens_agent_missed_instances_total{host=\"%s\",pid=\"%u\"} %llu\n", h, m->cursors[i].pid,
              (unsigned long long)m->cursors[i].missed);
  family(b, "nccl_lens_agent_untracked_instances_total", "counter",
         "Instances not split because a table of the agent (pending instances, communicator and function pairs) was full.");
  sb_printf(b, "nccl_lens_agent_untracked_instances_total{host=\"%s\"} %llu\n", h, (unsigned long long)m->full);
}
