/* OTLP/HTTP JSON (otlp_json.h). The JSON follows the protobuf JSON mapping of
 * opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest:
 * camelCase field names, 64-bit integers as strings, enums as numbers
 * (aggregationTemporality 2 = CUMULATIVE). */
#define _GNU_SOURCE
#include "otlp_json.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* JSON string escaping. */
static void js(struct strbuf *b, const char *s) {
  sb_printf(b, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      sb_printf(b, "\\%c", c);
    else if (c < 0x20)
      sb_printf(b, "\\u%04x", c);
    else
      sb_printf(b, "%c", c);
  }
  sb_printf(b, "\"");
}

static void attr(struct strbuf *b, int *first, const char *k, const char *v) {
  sb_printf(b, "%s{\"key\":", *first ? "" : ",");
  js(b, k);
  sb_printf(b, ",\"value\":{\"stringValue\":");
  js(b, v);
  sb_printf(b, "}}");
  *first = 0;
}

static void comm_attrs(struct strbuf *b, const struct lens_live_page *p, const struct lens_live_comm *c,
                       const char *func) {
  char v[64];
  int first = 1;
  sb_printf(b, "\"attributes\":[");
  snprintf(v, sizeof v, "%u", p->pid);
  attr(b, &first, "pid", v);
  snprintf(v, sizeof v, "%d", c->rank);
  attr(b, &first, "rank", v);
  attr(b, &first, "comm", c->name);
  snprintf(v, sizeof v, "%016llx", (unsigned long long)c->comm_id);
  attr(b, &first, "comm_id", v);
  if (func) attr(b, &first, "function", func);
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
        dup = p->series[k].comm == s->comm && !strcmp(p->series[k].func, s->func);
      if (dup) continue;
      uint64_t v = 0;
      for (uint32_t k = si; k < p->n_series; k++)
        if (p->series[k].comm == s->comm && !strcmp(p->series[k].func, s->func))
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
    snprintf(id, sizeof id, "%016llx", (unsigned long long)s->comm_id);
    sb_printf(x->b, "%s{\"attributes\":[", i ? "," : "");
    attr(x->b, &first, "comm", s->comm_name);
    attr(x->b, &first, "comm_id", id);
    attr(x->b, &first, "function", s->func);
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
    snprintf(id, sizeof id, "%016llx", (unsigned long long)s->comm_id);
    sb_printf(x->b, "%s{\"attributes\":[", i ? "," : "");
    attr(x->b, &first, "comm_id", id);
    attr(x->b, &first, "function", s->func);
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
    snprintf(v, sizeof v, "%016llx", (unsigned long long)m->ranks[i].comm_id);
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

static const char *env2(const char *a, const char *b) {
  const char *v = getenv(a);
  if (v && *v) return v;
  v = getenv(b);
  return v && *v ? v : NULL;
}

int otlp_push(const struct agent_model *m, const char *host) {
  char url[2048];
  const char *e = getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
  if (e && *e)
    snprintf(url, sizeof url, "%s", e); /* used as is (the specification) */
  else {
    e = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
    if (!e || !*e) e = "http://localhost:4318";
    size_t n = strlen(e);
    snprintf(url, sizeof url, "%.*s/v1/metrics", (int)(n && e[n - 1] == '/' ? n - 1 : n), e);
  }
  const char *t = env2("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT");
  long timeout_ms = t ? strtol(t, NULL, 10) : 10000;
  if (timeout_ms <= 0) timeout_ms = 10000;
  struct strbuf b = {0};
  otlp_render(m, host, &b);
  if (b.oom) return -1;
  CURL *c = curl_easy_init();
  if (!c) {
    sb_free(&b);
    return -1;
  }
  struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
  /* OTEL_EXPORTER_OTLP_HEADERS: key=value pairs, comma-separated, values URL-encoded. */
  const char *hv = env2("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS");
  if (hv) {
    char *dup = strdup(hv), *save = NULL;
    for (char *kv = dup ? strtok_r(dup, ",", &save) : NULL; kv; kv = strtok_r(NULL, ",", &save)) {
      char *eq = strchr(kv, '=');
      if (!eq) continue;
      *eq = 0;
      int n = 0;
      char *val = curl_easy_unescape(c, eq + 1, 0, &n);
      char line[1024];
      while (*kv == ' ') kv++;
      snprintf(line, sizeof line, "%s: %s", kv, val ? val : "");
      curl_free(val);
      hl = curl_slist_append(hl, line);
    }
    free(dup);
  }
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, b.s);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)b.len);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(hl);
  curl_easy_cleanup(c);
  sb_free(&b);
  if (rc != CURLE_OK || status / 100 != 2) {
    fprintf(stderr, "nccl-lens agent: OTLP push to %s failed: %s (HTTP %ld)\n", url,
            rc != CURLE_OK ? curl_easy_strerror(rc) : "status", status);
    return -1;
  }
  return 0;
}
