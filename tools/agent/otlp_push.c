/* OTLP/HTTP push (otlp_push.h). libcurl's multi interface drives each POST so
 * that the stop flag is looked at every 100 ms whatever the collector does
 * (a blocking easy_perform would wait out OTEL_EXPORTER_OTLP_TIMEOUT). */
#define _GNU_SOURCE
#include "otlp_push.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static const char *env2(const char *a, const char *b) {
  const char *v = getenv(a);
  if (v && *v) return v;
  v = getenv(b);
  return v && *v ? v : NULL;
}

static int fail(char *err, size_t n, const char *fmt, const char *arg) {
  snprintf(err, n, fmt, arg);
  return -1;
}

/* OTEL_EXPORTER_OTLP_HEADERS: k=v,k=v with URL-encoded values. A key must be
 * an HTTP token and a decoded value must hold no CR, LF or NUL: a variable
 * must never add header lines of its own. */
static int parse_headers(struct otlp_cfg *c, const char *hv, char *err, size_t errlen) {
  if (strlen(hv) > 8192) return fail(err, errlen, "OTEL_EXPORTER_OTLP_HEADERS is longer than %s bytes", "8192");
  char *dup = strdup(hv), *save = NULL;
  if (!dup) return fail(err, errlen, "%s", "out of memory");
  int rc = 0;
  for (char *kv = strtok_r(dup, ",", &save); kv && rc == 0; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq) {
      rc = fail(err, errlen, "OTEL_EXPORTER_OTLP_HEADERS: '%s' is not key=value", kv);
      break;
    }
    *eq = 0;
    char *k = kv, *ke = eq;
    while (*k == ' ' || *k == '\t') k++;
    while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t')) *--ke = 0;
    int ok = *k != 0;
    for (char *q = k; *q && ok; q++) ok = isalnum((unsigned char)*q) || strchr("!#$%&'*+-.^_`|~", *q);
    if (!ok) {
      rc = fail(err, errlen, "OTEL_EXPORTER_OTLP_HEADERS: bad header name '%s'", k);
      break;
    }
    int n = 0;
    char *val = curl_easy_unescape(NULL, eq + 1, 0, &n);
    if (!val || memchr(val, '\r', (size_t)n) || memchr(val, '\n', (size_t)n) || memchr(val, 0, (size_t)n)) {
      curl_free(val);
      rc = fail(err, errlen, "OTEL_EXPORTER_OTLP_HEADERS: the value of '%s' holds a line break or NUL", k);
      break;
    }
    char *v = val;
    while (*v == ' ' || *v == '\t') v++;
    char line[9000];
    snprintf(line, sizeof line, "%s: %s", k, v);
    curl_free(val);
    struct curl_slist *h = curl_slist_append(c->headers, line);
    if (!h) rc = fail(err, errlen, "%s", "out of memory");
    else c->headers = h;
  }
  free(dup);
  return rc;
}

static int file_var(char *dst, size_t cap, const char *a, const char *b, char *err, size_t errlen) {
  const char *v = env2(a, b);
  if (!v) return 0;
  if (strlen(v) >= cap) return fail(err, errlen, "%s is too long", b);
  if (access(v, R_OK) != 0) {
    char m[1200];
    snprintf(m, sizeof m, "%s: cannot read %s", b, v);
    return fail(err, errlen, "%s", m);
  }
  snprintf(dst, cap, "%s", v);
  return 0;
}

int otlp_config_from_env(struct otlp_cfg *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  /* here, in the main thread before any other: libcurl's global setup */
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return fail(err, errlen, "%s", "libcurl cannot start");
  const char *e = getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
  if (e && *e) {
    if (strlen(e) >= sizeof c->url) return fail(err, errlen, "%s is too long", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
    snprintf(c->url, sizeof c->url, "%s", e); /* used as is (the specification) */
  } else {
    e = getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
    if (!e || !*e) e = "http://localhost:4318";
    size_t n = strlen(e);
    if (n + 12 >= sizeof c->url) return fail(err, errlen, "%s is too long", "OTEL_EXPORTER_OTLP_ENDPOINT");
    snprintf(c->url, sizeof c->url, "%.*s/v1/metrics", (int)(n && e[n - 1] == '/' ? n - 1 : n), e);
  }
  if (strncasecmp(c->url, "http://", 7) != 0 && strncasecmp(c->url, "https://", 8) != 0)
    return fail(err, errlen, "the OTLP endpoint '%s' is not an http:// or https:// URL", c->url);
  const char *p = env2("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
  if (p && strcmp(p, "http/json") != 0)
    return fail(err, errlen,
                "OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported: the agent pushes http/json only (set it to http/json)",
                p);
  const char *t = env2("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT");
  c->timeout_ms = 10000;
  if (t) {
    char *end;
    errno = 0;
    long v = strtol(t, &end, 10);
    if (errno || end == t || *end || v < 1 || v > 86400000)
      return fail(err, errlen, "OTEL_EXPORTER_OTLP_TIMEOUT wants milliseconds 1..86400000, not '%s'", t);
    c->timeout_ms = v;
  }
  const char *z = env2("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION");
  if (z && strcmp(z, "gzip") != 0 && strcmp(z, "none") != 0)
    return fail(err, errlen, "OTEL_EXPORTER_OTLP_COMPRESSION wants gzip or none, not '%s'", z);
  c->gzip = z && !strcmp(z, "gzip");
  if (file_var(c->ca_file, sizeof c->ca_file, "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE",
               err, errlen) ||
      file_var(c->client_cert, sizeof c->client_cert, "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE",
               "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", err, errlen) ||
      file_var(c->client_key, sizeof c->client_key, "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY",
               "OTEL_EXPORTER_OTLP_CLIENT_KEY", err, errlen))
    return -1;
  c->headers = curl_slist_append(NULL, "Content-Type: application/json");
  if (c->gzip) c->headers = curl_slist_append(c->headers, "Content-Encoding: gzip");
  if (!c->headers) return fail(err, errlen, "%s", "out of memory");
  const char *hv = env2("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS");
  if (hv && parse_headers(c, hv, err, errlen) != 0) {
    otlp_config_free(c);
    return -1;
  }
  return 0;
}

void otlp_config_free(struct otlp_cfg *c) {
  curl_slist_free_all(c->headers);
  c->headers = NULL;
}

static int gzip_body(const char *in, size_t len, unsigned char **out, size_t *out_len) {
  z_stream z = {0};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16 /* gzip wrapper */, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return -1;
  uLong cap = deflateBound(&z, (uLong)len);
  *out = malloc(cap);
  if (!*out) {
    deflateEnd(&z);
    return -1;
  }
  z.next_in = (Bytef *)in;
  z.avail_in = (uInt)len;
  z.next_out = *out;
  z.avail_out = (uInt)cap;
  int r = deflate(&z, Z_FINISH);
  *out_len = z.total_out;
  deflateEnd(&z);
  if (r != Z_STREAM_END) {
    free(*out);
    *out = NULL;
    return -1;
  }
  return 0;
}

/* One line per distinct failure: a collector down for an hour must not write
 * a line every interval. */
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_last_err[512];
static void log_failure(const char *msg) {
  pthread_mutex_lock(&g_log_mu);
  if (strcmp(msg, g_last_err) != 0) {
    fprintf(stderr, "nccl-lens agent: %s\n", msg);
    snprintf(g_last_err, sizeof g_last_err, "%s", msg);
  }
  pthread_mutex_unlock(&g_log_mu);
}
static void log_success(void) {
  pthread_mutex_lock(&g_log_mu);
  g_last_err[0] = 0;
  pthread_mutex_unlock(&g_log_mu);
}

static size_t discard(char *p, size_t sz, size_t n, void *u) {
  (void)p, (void)u;
  return sz * n; /* the answer's body is not needed; curl reads it to keep the connection sane */
}

/* One attempt. Returns the HTTP status (0: none), *retry_after seconds (-1: none). */
static long attempt(const struct otlp_cfg *c, const void *body, size_t len, int (*stop)(void *), void *arg,
                    long *retry_after, CURLcode *cc, int *stopped) {
  *retry_after = -1;
  *stopped = 0;
  *cc = CURLE_FAILED_INIT;
  CURL *e = curl_easy_init();
  CURLM *m = curl_multi_init();
  long status = 0;
  if (!e || !m) goto out;
  curl_easy_setopt(e, CURLOPT_URL, c->url);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->timeout_ms);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
  if (c->ca_file[0]) curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
  if (c->client_cert[0]) curl_easy_setopt(e, CURLOPT_SSLCERT, c->client_cert);
  if (c->client_key[0]) curl_easy_setopt(e, CURLOPT_SSLKEY, c->client_key);
  curl_multi_add_handle(m, e);
  int running = 1;
  while (running) {
    if (stop(arg)) {
      *stopped = 1;
      break;
    }
    if (curl_multi_perform(m, &running) != CURLM_OK) break;
    if (running) curl_multi_poll(m, NULL, 0, 100, NULL);
  }
  CURLMsg *msg;
  int left;
  while ((msg = curl_multi_info_read(m, &left)))
    if (msg->msg == CURLMSG_DONE) *cc = msg->data.result;
  if (!*stopped && *cc == CURLE_OK) {
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_off_t ra = -1;
    /* curl parses both forms of Retry-After: delay-seconds and an HTTP date */
    if (curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0) *retry_after = (long)ra;
  }
  curl_multi_remove_handle(m, e);
out:
  if (e) curl_easy_cleanup(e);
  if (m) curl_multi_cleanup(m);
  return status;
}

/* Sleeps s seconds in 50 ms steps; 1 if stopped meanwhile. */
static int nap(double s, int (*stop)(void *), void *arg) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (stop(arg)) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= s) return 0;
    struct timespec step = {0, 50000000};
    nanosleep(&step, NULL);
  }
}

static _Atomic uint64_t g_retries;

int otlp_send(const struct otlp_cfg *c, const char *body, size_t len, int (*stop)(void *), void *arg) {
  unsigned char *gz = NULL;
  size_t gz_len = 0;
  if (c->gzip && gzip_body(body, len, &gz, &gz_len) != 0) {
    log_failure("OTLP push: gzip compression failed");
    return -1;
  }
  const void *data = gz ? (const void *)gz : (const void *)body;
  size_t n = gz ? gz_len : len;
  char msg[600];
  int rc = -1;
  for (int i = 0; i < OTLP_ATTEMPTS; i++) {
    long ra;
    CURLcode cc;
    int stopped;
    long status = attempt(c, data, n, stop, arg, &ra, &cc, &stopped);
    if (stopped) break; /* the agent stops: nothing to say */
    if (cc != CURLE_OK) { /* no answer: the next interval pushes newer cumulative values */
      snprintf(msg, sizeof msg, "OTLP push to %.300s failed: %s", c->url, curl_easy_strerror(cc));
      log_failure(msg);
      break;
    }
    if (status / 100 == 2) {
      log_success();
      rc = 0;
      break;
    }
    /* Only the answers that say "later" are retried (the OTLP/HTTP
     * specification); any other, a 400 above all, would fail again. */
    int retryable = status == 429 || status == 502 || status == 503 || status == 504;
    if (!retryable || i == OTLP_ATTEMPTS - 1) {
      snprintf(msg, sizeof msg, "OTLP push to %.300s failed: HTTP %ld%s", c->url, status,
               retryable ? " (retries exhausted)" : "");
      log_failure(msg);
      break;
    }
    long delay = ra >= 0 ? ra : 1L << i;
    if (ra < 0 && delay > OTLP_BACKOFF_MAX_S) delay = OTLP_BACKOFF_MAX_S;
    if (ra > OTLP_RETRY_AFTER_MAX_S) {
      snprintf(msg, sizeof msg, "OTLP push to %.300s: HTTP %ld with Retry-After %ld s (over %d s): this push given up",
               c->url, status, ra, OTLP_RETRY_AFTER_MAX_S);
      log_failure(msg);
      break;
    }
    atomic_fetch_add(&g_retries, 1);
    if (nap((double)delay, stop, arg)) break;
  }
  free(gz);
  return rc;
}

struct otlp_pusher {
  const struct otlp_cfg *cfg;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct strbuf q[OTLP_QUEUE];
  unsigned head, n;
  atomic_int stop;
  _Atomic uint64_t sent, failed, dropped;
};

static int pusher_stopped(void *arg) { return atomic_load(&((struct otlp_pusher *)arg)->stop); }

static void *pusher_main(void *arg) {
  struct otlp_pusher *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (!p->n && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
    if (atomic_load(&p->stop)) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    struct strbuf b = p->q[p->head];
    memset(&p->q[p->head], 0, sizeof b);
    p->head = (p->head + 1) % OTLP_QUEUE;
    p->n--;
    pthread_mutex_unlock(&p->mu);
    int rc = otlp_send(p->cfg, b.s, b.len, pusher_stopped, p);
    if (rc == 0) atomic_fetch_add(&p->sent, 1);
    else if (!atomic_load(&p->stop)) atomic_fetch_add(&p->failed, 1);
    sb_free(&b);
  }
}

struct otlp_pusher *otlp_pusher_start(const struct otlp_cfg *cfg) {
  struct otlp_pusher *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->cfg = cfg;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  if (pthread_create(&p->th, NULL, pusher_main, p) != 0) {
    fprintf(stderr, "nccl-lens agent: cannot start the OTLP push thread\n");
    free(p);
    return NULL;
  }
  return p;
}

void otlp_pusher_enqueue(struct otlp_pusher *p, struct strbuf *b) {
  pthread_mutex_lock(&p->mu);
  if (p->n == OTLP_QUEUE) { /* the collector is behind: the oldest values are the least useful */
    sb_free(&p->q[p->head]);
    p->head = (p->head + 1) % OTLP_QUEUE;
    p->n--;
    atomic_fetch_add(&p->dropped, 1);
  }
  p->q[(p->head + p->n) % OTLP_QUEUE] = *b;
  p->n++;
  memset(b, 0, sizeof *b);
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

void otlp_pusher_stats(struct otlp_pusher *p, struct otlp_stats *s) {
  s->sent = atomic_load(&p->sent);
  s->failed = atomic_load(&p->failed);
  s->dropped = atomic_load(&p->dropped);
  s->retries = atomic_load(&g_retries);
}

void otlp_pusher_stop(struct otlp_pusher *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  pthread_join(p->th, NULL);
  for (unsigned i = 0; i < OTLP_QUEUE; i++) sb_free(&p->q[i]);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
}
