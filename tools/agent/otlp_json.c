/* OTLP/HTTP JSON (otlp_json.h). The JSON follows the protobuf JSON mapping of
 * opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest:
 * camelCase field names, 64-bit integers as strings, enums as numbers
 * (aggregationTemporality 2 = CUMULATIVE). */
#define _GNU_SOURCE
#include "otlp_json.h"

#include "text_escape.h"
#include "cli/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Keys are ours; values may come from a page: at most a page array's size
 * (the largest is a comm name, 64; the host 256), escaped (text_escape.h). */
#define JS_MAX 256
static void js(struct strbuf *b, const char *s) { json_string(b, s, JS_MAX); }

/* v read to at most vmax bytes: a page's array may lack its terminator. */
static void attr_n(struct strbuf *b, int *first, const char *k, const char *v, size_t vmax) {
  sb_printf(b, "%s{\"key\":", *first ? "" : ",");
  js(b, k);
  sb_printf(b, ",\"value\":{\"stringValue\":");
  json_string(b, v, vmax);
  sb_printf(b, "}}");
  *first = 0;
}
static void attr(struct strbuf *b, int *first, const char *k, const char *v) { attr_n(b, first, k, v, JS_MAX); }

static void comm_attrs(struct strbuf *b, const struct lens_live_page *p, const struct lens_live_comm *c,
                       const char *func) {
  char v[64];
  int first = 1;
  sb_printf(b, "\"attributes\":[");
  snprintf(v, sizeof v, "%u", p->pid);
  attr(b, &first, "pid", v);
  snprintf(v, sizeof v, "%d", c->rank);
  attr(b, &first, "rank", v);
  attr_n(b, &first, "comm", c->name, sizeof c->name);
  lens_fmt_comm_id(c->comm_id, v);
  attr(b, &first, "comm_id", v);
  if (func) attr_n(b, &first, "function", func, LENS_LIVE_FUNC);
  sb_printf(b, "]");
}

struct ctx {
  struct strbuf *b;
  uint64_t start, now;
  int first_metric;
};

static void metric_open(struct ctx *x, const char *name, const char *desc, const char *unit, const char *kind) {
  sb_printf(x->b, "%s{\"name\":\"%s\",\"description\":", x->first_metric ? "" : ",", name);
  js(x->b, desc);
  sb_printf(x->b, ",\"unit\":\"%s\",\"%s\":{\"dataPoints\":[", unit, kind);
  x->first_metric = 0;
}

static void times(struct ctx *x, uint64_t start) {
  sb_printf(x->b, ",\"startTimeUnixNano\":\"%llu\",\"timeUnixNano\":\"%llu\"", (unsigned long long)start,
            (unsigned long long)x->now);
}

/* Per (process, communicator, function) counter: sum with isMonotonic. */
static void per_function_sum(struct ctx *x, const struct agent_model *m, const char *name, const char *desc,
                             const char *unit, int bytes) {
  metric_open(x, name, desc, unit, "sum");
  int first = 1;
  for (size_t pi = 0; pi < m->pages.n; pi++) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    for (uint32_t si = 0; si < p->n_series; si++) {
      const struct lens_live_series *s = &p->series[si];
      if (s->comm >= p->n_comms || (!bytes && s->is_p2p)) continue;
      int dup = 0;
      for (uint32_t k = 0; k < si && !dup; k++)
        dup = p->series[k].comm == s->comm && !strncmp(p->series[k].func, s->func, LENS_LIVE_FUNC);
      if (dup) continue;
      uint64_t v = 0;
      for (uint32_t k = si; k < p->n_series; k++)
        if (p->series[k].comm == s->comm && !strncmp(p->series[k].func, s->func, LENS_LIVE_FUNC))
          v += bytes ? p->series[k].bytes : p->series[k].count;
      sb_printf(x->b, "%s{", first ? "" : ",");
      comm_attrs(x->b, p, &p->comms[s->comm], s->func);
      times(x, p->start_real_ns);
      sb_printf(x->b, ",\"asInt\":\"%llu\"}", (unsigned long long)v);
      first = 0;
    }
  }
  sb_printf(x->b, "],\"aggregationTemporality\":2,\"isMonotonic\":true}}");
}

static void hist_point(struct ctx *x, const struct lens_live_hist *h) {
  sb_printf(x->b, ",\"count\":\"%llu\",\"sum\":%.3f,\"bucketCounts\":[", (unsigned long long)h->count,
            (double)h->sum_ns / 1000.0);
  for (int i = 0; i < LENS_LIVE_TIME_BUCKETS; i++)
    sb_printf(x->b, "%s\"%llu\"", i ? "," : "", (unsigned long long)h->bucket[i]);
  sb_printf(x->b, "],\"explicitBounds\":[");
  for (int i = 0; i < LENS_LIVE_TIME_BUCKETS - 1; i++) sb_printf(x->b, "%s%llu", i ? "," : "", 1ull << i);
  sb_printf(x->b, "]}");
}

static void span_hist(struct ctx *x, const struct agent_model *m) {
  metric_open(x, "nccl_lens_kernel_span", "GPU span of one rank (execution plus waiting)", "us", "histogram");
  int first = 1;
  for (size_t pi = 0; pi < m->pages.n; pi++) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    for (uint32_t si = 0; si < p->n_series; si++) {
      const struct lens_live_series *s = &p->series[si];
      if (s->comm >= p->n_comms) continue;
      sb_printf(x->b, "%s{", first ? "" : ",");
      comm_attrs(x->b, p, &p->comms[s->comm], s->func);
      times(x, p->start_real_ns);
      hist_point(x, &s->span);
      first = 0;
    }
  }
  sb_printf(x->b, "],\"aggregationTemporality\":2}}");
}

static void exec_hist(struct ctx *x, const struct agent_model *m) {
  metric_open(x, "nccl_collective_exec_time", "Execution: shortest span among the node's ranks of an instance", "us",
              "histogram");
  for (uint32_t i = 0; i < m->n_splits; i++) {
    const struct agent_split *s = &m->splits[i];
    char id[32];
    int first = 1;
    lens_fmt_comm_id(s->comm_id, id);
    sb_printf(x->b, "%s{\"attributes\":[", i ? "," : "");
    attr_n(x->b, &first, "comm", s->comm_name, sizeof s->comm_name);
    attr(x->b, &first, "comm_id", id);
    attr_n(x->b, &first, "function", s->func, sizeof s->func);
    attr(x->b, &first, "partial", s->local_ranks < s->nranks ? "true" : "false");
    sb_printf(x->b, "]");
    times(x, x->start);
    hist_point(x, &s->exec);
  }
  sb_printf(x->b, "],\"aggregationTemporality\":2}}");
}

static void busbw_gauge(struct ctx *x, const struct agent_model *m) {
  metric_open(x, "nccl_bus_bandwidth", "Bus bandwidth of the newest matched instance", "GBy/s", "gauge");
  for (uint32_t i = 0; i < m->n_splits; i++) {
    const struct agent_split *s = &m->splits[i];
    char id[32];
    int first = 1;
    lens_fmt_comm_id(s->comm_id, id);
    sb_printf(x->b, "%s{\"attributes\":[", i ? "," : "");
    attr(x->b, &first, "comm_id", id);
    attr_n(x->b, &first, "function", s->func, sizeof s->func);
    sb_printf(x->b, "],\"timeUnixNano\":\"%llu\",\"asDouble\":%.6f}", (unsigned long long)x->now, s->last_busbw_gbs);
  }
  sb_printf(x->b, "]}}");
}

static void wait_sum(struct ctx *x, const struct agent_model *m) {
  metric_open(x, "nccl_lens_wait", "Time a rank waited for the last rank", "s", "sum");
  for (uint32_t i = 0; i < m->n_ranks; i++) {
    char v[32];
    int first = 1;
    sb_printf(x->b, "%s{\"attributes\":[", i ? "," : "");
    snprintf(v, sizeof v, "%d", m->ranks[i].rank);
    attr(x->b, &first, "rank", v);
    lens_fmt_comm_id(m->ranks[i].comm_id, v);
    attr(x->b, &first, "comm_id", v);
    sb_printf(x->b, "]");
    times(x, x->start);
    sb_printf(x->b, ",\"asDouble\":%.9f}", (double)m->ranks[i].wait_ns / 1e9);
  }
  sb_printf(x->b, "],\"aggregationTemporality\":2,\"isMonotonic\":true}}");
}

void otlp_render(const struct agent_model *m, const char *host, struct strbuf *b) {
  static uint64_t agent_start;
  struct ctx x = {b, 0, real_ns(), 1};
  if (!agent_start) agent_start = x.now;
  x.start = agent_start;
  int first = 1;
  sb_printf(b, "{\"resourceMetrics\":[{\"resource\":{\"attributes\":[");
  attr(b, &first, "service.name", "nccl-lens");
  attr(b, &first, "host.name", host);
  sb_printf(b, "]},\"scopeMetrics\":[{\"scope\":{\"name\":\"nccl-lens\"},\"metrics\":[");
  per_function_sum(&x, m, "nccl_lens_collectives_total", "Collectives started", "1", 0);
  per_function_sum(&x, m, "nccl_lens_bytes_total", "Bytes of the operations started", "By", 1);
  span_hist(&x, m);
  exec_hist(&x, m);
  busbw_gauge(&x, m);
  wait_sum(&x, m);
  sb_printf(b, "]}]}]}\n");
}
