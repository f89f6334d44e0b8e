/* The agent's /metrics server (agent_http.h). */
#define _GNU_SOURCE
#include "agent_http.h"

#include <crypt.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

/* libmicrohttpd's messages (a refused connection over a limit, a failed
 * handshake) come at the rate clients make them: at most one line per 10 s
 * reaches stderr, with a count of those held back, so a flood of hostile
 * connections cannot flood the log too. */
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
/* Until the daemon runs its messages are left out: a failed start is told by
 * agent_http_start's caller in one line of its own. */
static volatile int g_log_on;
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  if (!__atomic_load_n(&g_log_on, __ATOMIC_RELAXED)) return;
  static time_t last;
  static unsigned long held;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  pthread_mutex_lock(&g_log_mu);
  if (last && t.tv_sec - last < 10) {
    held++;
  } else {
    char m[512];
    vsnprintf(m, sizeof m, fmt, ap);
    size_t n = strlen(m);
    while (n && (m[n - 1] == '\n' || m[n - 1] == '\r')) m[--n] = 0;
    if (held) fprintf(stderr, "nccl-lens agent: http: %s (and %lu messages held back)\n", m, held);
    else fprintf(stderr, "nccl-lens agent: http: %s\n", m);
    held = 0;
    last = t.tv_sec ? t.tv_sec : 1;
  }
  pthread_mutex_unlock(&g_log_mu);
}

struct agent_http {
  struct MHD_Daemon *d;
  const struct web_config *wc;
  agent_render_fn render;
  void *arg;
  /* Passwords that matched their user's bcrypt hash, so that a scrape every
   * few seconds does not pay a bcrypt (tens of ms) each time; compared in
   * constant time. Only ever a password the hash accepted. */
  pthread_mutex_t mu;
  char *cached[WEB_CONFIG_MAX_USERS];
  int hashing; /* bcrypt checks running, under mu: at most AGENT_HTTP_BCRYPTS */
};

static void add_headers(const struct agent_http *h, struct MHD_Response *r) {
  if (!h->wc) return;
  for (int i = 0; i < h->wc->n_headers; i++) MHD_add_response_header(r, h->wc->headers[i].name, h->wc->headers[i].value);
}

static enum MHD_Result answer(struct agent_http *h, struct MHD_Connection *c, unsigned status, const char *text,
                              const char *allow) {
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
  if (allow) MHD_add_response_header(r, "Allow", allow);
  add_headers(h, r);
  enum MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

static int same(const char *a, const char *b) { /* constant time for equal lengths */
  size_t n = strlen(a), m = strlen(b);
  unsigned char d = n != m;
  for (size_t i = 0; i < n && i < m; i++) d |= (unsigned char)(a[i] ^ b[i]);
  return d == 0;
}

/* 1 if user and password match basic_auth_users. An unknown user still costs
 * one bcrypt, so the time does not tell which users exist. */
static int password_ok(struct agent_http *h, const char *user, const char *pass) {
  static const char dummy[] = "$2b$10$abcdefghijklmnopqrstuu4T826PRnz0Hu6YlprUuxkZxOOj5Fw5S";
  int u = -1;
  for (int i = 0; i < h->wc->n_users && u < 0; i++)
    if (!strcmp(h->wc->users[i].user, user)) u = i;
  if (u >= 0) {
    pthread_mutex_lock(&h->mu);
    int hit = h->cached[u] && same(h->cached[u], pass);
    pthread_mutex_unlock(&h->mu);
    if (hit) return 1;
  }
  /* A flood of wrong passwords must not take every thread for bcrypt: past
   * AGENT_HTTP_BCRYPTS at once, a password not in the cache is refused
   * unchecked. A scraper whose password was checked once is in the cache. */
  pthread_mutex_lock(&h->mu);
  int busy = h->hashing >= AGENT_HTTP_BCRYPTS;
  if (!busy) h->hashing++;
  pthread_mutex_unlock(&h->mu);
  if (busy) return 0;
  struct crypt_data *cd = calloc(1, sizeof *cd);
  if (!cd) {
    pthread_mutex_lock(&h->mu);
    h->hashing--;
    pthread_mutex_unlock(&h->mu);
    return 0;
  }
  const char *hash = u >= 0 ? h->wc->users[u].hash : dummy;
  const char *out = crypt_r(pass, hash, cd);
  int ok = u >= 0 && out && out[0] != '*' && same(out, hash);
  free(cd);
  char *copy = ok ? strdup(pass) : NULL;
  pthread_mutex_lock(&h->mu);
  h->hashing--;
  if (copy) {
    free(h->cached[u]);
    h->cached[u] = copy;
  }
  pthread_mutex_unlock(&h->mu);
  return ok;
}

/* With client_auth_type verifying: 1 if the peer's chain checks out against
 * client_ca_file, or (VerifyClientCertIfGiven) it sent none. */
static int client_cert_ok(const struct agent_http *h, struct MHD_Connection *c) {
  if (!h->wc || !h->wc->tls || h->wc->client_auth == WEB_NO_CLIENT_CERT) return 1;
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  gnutls_session_t s = ci ? (gnutls_session_t)ci->tls_session : NULL;
  if (!s) return 0;
  unsigned n = 0;
  const gnutls_datum_t *peers = gnutls_certificate_get_peers(s, &n);
  if (!peers || n == 0) return h->wc->client_auth == WEB_VERIFY_IF_GIVEN;
  unsigned status = 0;
  return gnutls_certificate_verify_peers2(s, &status) == GNUTLS_E_SUCCESS && status == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_len, void **state) {
  (void)version, (void)upload, (void)state;
  struct agent_http *h = cls;
  if (*upload_len) { /* a body is never wanted: refuse rather than buffer it */
    *upload_len = 0;
    return answer(h, c, MHD_HTTP_METHOD_NOT_ALLOWED, "nccl-lens agent: GET or HEAD /metrics\n", "GET, HEAD");
  }
  if (!client_cert_ok(h, c)) return answer(h, c, MHD_HTTP_FORBIDDEN, "client certificate required\n", NULL);
  if (h->wc && h->wc->n_users) {
    char *pass = NULL;
    char *user = MHD_basic_auth_get_username_password(c, &pass);
    int ok = user && pass && password_ok(h, user, pass);
    if (pass) {
      explicit_bzero(pass, strlen(pass));
      MHD_free(pass);
    }
    if (user) MHD_free(user);
    if (!ok) {
      static const char text[] = "Unauthorized\n";
      struct MHD_Response *r = MHD_create_response_from_buffer(sizeof text - 1, (void *)text, MHD_RESPMEM_PERSISTENT);
      if (!r) return MHD_NO;
      add_headers(h, r);
      enum MHD_Result rc = MHD_queue_basic_auth_fail_response(c, "nccl-lens", r); /* 401, WWW-Authenticate */
      MHD_destroy_response(r);
      return rc;
    }
  }
  if (strcmp(url, "/metrics") != 0) return answer(h, c, MHD_HTTP_NOT_FOUND, "nccl-lens agent: GET /metrics\n", NULL);
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return answer(h, c, MHD_HTTP_METHOD_NOT_ALLOWED, "nccl-lens agent: GET or HEAD /metrics\n", "GET, HEAD");
  /* HEAD renders too: its Content-Length is the GET's (libmicrohttpd sends no body) */
  struct strbuf b = {0};
  h->render(h->arg, &b);
  if (b.oom) {
    sb_free(&b);
    return MHD_NO;
  }
  struct MHD_Response *r = MHD_create_response_from_buffer(b.len, b.s ? b.s : (char *)"", b.s ? MHD_RESPMEM_MUST_FREE
                                                                                             : MHD_RESPMEM_PERSISTENT);
  if (!r) {
    sb_free(&b);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
  add_headers(h, r);
  enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return rc;
}

struct agent_http *agent_http_start(const struct sockaddr_in *sa, const struct web_config *wc, agent_render_fn render,
                                    void *arg, char *err, size_t errlen) {
  int tls = wc && wc->tls;
  if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    snprintf(err, errlen, "this libmicrohttpd has no TLS");
    return NULL;
  }
  struct agent_http *h = calloc(1, sizeof *h);
  if (!h) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  h->wc = wc;
  h->render = render;
  h->arg = arg;
  pthread_mutex_init(&h->mu, NULL);
  struct MHD_OptionItem o[16];
  int n = 0;
#define OPT(opt, v, p) o[n++] = (struct MHD_OptionItem){opt, (intptr_t)(v), (void *)(p)}
  OPT(MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL); /* first, or libmicrohttpd says so */
  OPT(MHD_OPTION_SOCK_ADDR, 0, sa);
  OPT(MHD_OPTION_THREAD_POOL_SIZE, AGENT_HTTP_THREADS, NULL);
  OPT(MHD_OPTION_CONNECTION_LIMIT, AGENT_HTTP_CONNECTIONS, NULL);
  OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, AGENT_HTTP_PER_IP, NULL);
  OPT(MHD_OPTION_CONNECTION_TIMEOUT, AGENT_HTTP_TIMEOUT_S, NULL);
  OPT(MHD_OPTION_LISTEN_BACKLOG_SIZE, 512, NULL);
  if (tls) {
    OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, wc->cert_pem);
    OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, wc->key_pem);
    OPT(MHD_OPTION_HTTPS_PRIORITIES, 0, web_config_priorities(wc));
    /* a trust list makes libmicrohttpd ask for a client certificate; on_request checks it */
    if (wc->client_auth != WEB_NO_CLIENT_CERT) OPT(MHD_OPTION_HTTPS_MEM_TRUST, 0, wc->client_ca_pem);
  }
  OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
  unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | (tls ? MHD_USE_TLS : 0);
  errno = 0;
  h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_ARRAY, o, MHD_OPTION_END);
  if (!h->d) {
    snprintf(err, errlen, "%s", errno ? strerror(errno) : "libmicrohttpd refused the options (a bad key or certificate?)");
    pthread_mutex_destroy(&h->mu);
    free(h);
    return NULL;
  }
  __atomic_store_n(&g_log_on, 1, __ATOMIC_RELAXED);
  return h;
}

void agent_http_stop(struct agent_http *h) {
  if (!h) return;
  MHD_stop_daemon(h->d);
  for (int i = 0; i < WEB_CONFIG_MAX_USERS; i++)
    if (h->cached[i]) {
      explicit_bzero(h->cached[i], strlen(h->cached[i]));
      free(h->cached[i]);
    }
  pthread_mutex_destroy(&h->mu);
  free(h);
}
