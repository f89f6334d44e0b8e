/* nccl-lens agent hardened as a Prometheus exporter (docs/metrics.md): 240
 * slow connections never delay a scrape; an OTLP collector that never answers
 * neither slows /metrics nor the exit on SIGTERM; retries only on "later"
 * statuses, after Retry-After; HEAD /metrics; forged page names escaped in
 * the exposition and the OTLP JSON; the web configuration file (TLS, basic
 * auth, headers, client certificates) with Debian's real prometheus scraping.
 * Every peer is on loopback, every wait bounded; the time bounds (1 s, 2 s)
 * are several times what the agent takes on a loaded 2-core machine. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lens_test_tmp.h"
#include "../lens_test_file.h"
#include "../lens_test_proc.h"
#include "nccl-lens/live.h"

#define CLI LENS_BUILD_DIR "/bin/nccl-lens"
#define NET_PY LENS_SOURCE_DIR "/tests/agent/agent_net.py"
#define PY (access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3")

static char g_dir[256];
static int lines_starting(const char *text, const char *prefix);

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_dir, name); }

/* Waits at most limit_s; -1 (and SIGKILL) if it did not end. */
static int wait_bounded(pid_t p, double limit_s, double *took) {
  double t0 = now_s();
  for (;;) {
    int st;
    pid_t r = waitpid(p, &st, WNOHANG);
    if (r == p) {
      if (took) *took = now_s() - t0;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (now_s() - t0 > limit_s) {
      kill(p, SIGKILL);
      waitpid(p, NULL, 0);
      if (took) *took = now_s() - t0;
      return -1;
    }
    usleep(10000);
  }
}

static int have(const char *prog) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
  return system(cmd) == 0;
}

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  int port = 0;
  if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &l) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

/* A connected socket from local address `from` (127.x.y.z) to 127.0.0.1:port; -1 on failure. */
static int connect_from(const char *from, int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET};
  inet_pton(AF_INET, from, &a.sin_addr);
  if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
    close(s);
    return -1;
  }
  struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
  if (connect(s, (struct sockaddr *)&d, sizeof d) != 0) {
    close(s);
    return -1;
  }
  return s;
}

/* One HTTP/1.0 request from 127.0.0.1, the whole answer read (bounded 10 s). */
static char *http(int port, const char *request, size_t *len) {
  int s = connect_from("127.0.0.1", port);
  if (s < 0) return NULL;
  size_t cap = 1 << 20, n = 0;
  char *buf = malloc(cap + 1);
  if (write(s, request, strlen(request)) != (ssize_t)strlen(request)) n = 0;
  double t0 = now_s();
  while (n < cap && now_s() - t0 < 10) {
    struct pollfd p = {s, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t r = read(s, buf + n, cap - n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(s);
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}

static char *scrape(int port) { return http(port, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", NULL); }

/* Waits (bounded 20 s) until the agent answers /metrics. */
static int agent_ready(int port, pid_t agent) {
  for (int i = 0; i < 200; i++) {
    char *r = scrape(port);
    int ok = r && !strncmp(r, "HTTP/1.", 7) && strstr(r, " 200 ");
    free(r);
    if (ok) return 1;
    if (waitpid(agent, NULL, WNOHANG) == agent) return 0;
    usleep(100000);
  }
  return 0;
}

/* A live page of this process (alive, so the agent keeps it): one comm, two
 * series. forged: names a plugin never writes, meant to break the output: a
 * comm name with a quote, a backslash, newlines and a whole metric line; a
 * function name of 24 bytes with no terminator (its neighbour algo follows
 * it in memory); an algo with an exposition line and a byte that is not
 * UTF-8; a proto of 16 bytes with no terminator. */
static void write_page(const char *dir, int forged) {
  struct lens_live_page *p = calloc(1, sizeof *p);
  assert_non_null(p);
  struct timespec t;
  p->magic = LENS_LIVE_MAGIC;
  p->version = LENS_LIVE_VERSION;
  p->size = sizeof *p;
  p->seq = 2;
  p->pid = (uint32_t)getpid();
  p->state = LENS_LIVE_RUNNING;
  clock_gettime(CLOCK_REALTIME, &t);
  p->start_real_ns = p->updated_real_ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
  clock_gettime(CLOCK_MONOTONIC, &t);
  p->start_mono_ns = p->updated_mono_ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
  strcpy(p->host, "page-host");
  p->n_comms = 1;
  p->n_series = 2;
  p->comms[0].comm_id = 0x1234;
  p->comms[0].nranks = 2;
  p->comms[0].live = 1;
  strcpy(p->comms[0].name, forged ? "a\"b\\c\nforged_metric 42\n# x" : "victimcomm");
  for (int i = 0; i < 2; i++) {
    struct lens_live_series *s = &p->series[i];
    strcpy(s->func, "AllReduce");
    strcpy(s->algo, "RING");
    strcpy(s->proto, "LL");
    s->count = 5 + (uint64_t)i;
    s->bytes = 500;
    s->size_bucket = (uint8_t)(8 + i);
  }
  if (forged) {
    memset(p->series[1].func, 'B', LENS_LIVE_FUNC);
    strcpy(p->series[1].algo, "\"} 7\nnccl_lens_up 0\n\xff#");
    memset(p->series[1].proto, 'D', LENS_LIVE_PROTO);
    p->series[1].user_tag = 0; /* the bytes after proto are the counters: zero here */
  }
  char path[400];
  snprintf(path, sizeof path, "%s/%d.live", dir, (int)getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fwrite(p, sizeof *p, 1, f), 1);
  fclose(f);
  free(p);
}

static void make_reg(char *reg, size_t cap, int forged) {
  path_of(reg, cap, "reg");
  mkdir(reg, 0755);
  write_page(reg, forged);
}

static pid_t start_agent(int port, const char *reg, const char *const *extra, const char *const *env,
                         const char *err_path) {
  char listen[64];
  snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
  const char *argv[32] = {CLI, "agent", "--listen", listen, "--dir", reg, "--duration", "120"};
  int n = 8;
  for (int i = 0; extra && extra[i] && n < 30; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  return lens_test_spawn(argv, NULL, err_path, env);
}

/* 200 slow connections from 20 other loopback addresses (10 each, under the
 * per-address limit) and 40 from one more (over it), each with half a
 * request header and one more byte now and then: a scrape from 127.0.0.1 is
 * still answered at once, whole. */
static void test_slow_clients_never_block_a_scrape(void **state) {
  (void)state;
  lens_test_tmpdir(g_dir, sizeof g_dir, "agent-slow");
  char reg[300], errp[300];
  make_reg(reg, sizeof reg, 0);
  path_of(errp, sizeof errp, "agent.err");
  int port = free_port();
  pid_t agent = start_agent(port, reg, NULL, NULL, errp);
  assert_true(agent_ready(port, agent));
  enum { SPREAD = 200, CROWD = 40 };
  int fd[SPREAD + CROWD];
  static const char half[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
  for (int i = 0; i < SPREAD + CROWD; i++) {
    char from[32];
    if (i < SPREAD) snprintf(from, sizeof from, "127.0.0.%d", 2 + i / 10);
    else snprintf(from, sizeof from, "127.0.0.99");
    fd[i] = connect_from(from, port);
    assert_true(fd[i] >= 0);
    (void)!write(fd[i], half, sizeof half - 1); /* the crowd's may be closed already */
  }
  /* The agent accepts the connections from its backlog and closes those over
   * the per-address limit as it goes: wait (bounded: 20 s) until it has (at
   * load 4.5 round 0 once came before any). The crowd connected last, so by
   * then the 200 before it are the agent's, not the kernel's backlog's. */
  int closed_crowd = 0;
  for (double t0 = now_s(); closed_crowd < CROWD - 16 && now_s() - t0 < 20; usleep(50000)) {
    closed_crowd = 0;
    for (int i = SPREAD; i < SPREAD + CROWD; i++) {
      struct pollfd pf = {fd[i], POLLIN, 0};
      closed_crowd += poll(&pf, 1, 0) == 1 && (pf.revents & (POLLIN | POLLHUP | POLLERR));
    }
  }
  double worst = 0;
  for (int round = 0; round < 3; round++) {
    int open_spread = 0;
    closed_crowd = 0;
    for (int i = 0; i < SPREAD + CROWD; i++) {
      char c;
      /* still open: nothing to read (EAGAIN); closed by the agent: EOF or a reset */
      ssize_t r = recv(fd[i], &c, 1, MSG_DONTWAIT);
      int open = r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      if (open) (void)!write(fd[i], "x", 1); /* one byte: still a live, slow client */
      if (i < SPREAD) open_spread += open;
      else closed_crowd += !open;
    }
    double t0 = now_s();
    char *r = scrape(port);
    double took = now_s() - t0;
    if (took > worst) worst = took;
    printf("round %d: %d of %d slow connections open, %d of %d over the per-address limit closed; scrape %.3f s\n",
           round, open_spread, SPREAD, closed_crowd, CROWD, took);
    assert_non_null(r);
    assert_non_null(strstr(r, "HTTP/1.0 200") ? r : strstr(r, "HTTP/1.1 200"));
    assert_non_null(strstr(r, "nccl_lens_ops_total{"));
    assert_non_null(strstr(r, "comm=\"victimcomm\""));
    assert_non_null(strstr(r, "nccl_lens_agent_untracked_instances_total{")); /* the last family: whole */
    free(r);
    assert_int_equal(open_spread, SPREAD);
    assert_true(closed_crowd >= CROWD - 16);
    assert_true(took < 1.0);
    usleep(300000);
  }
  printf("slow clients: worst scrape %.3f s with %d slow connections open\n", worst, SPREAD);
  for (int i = 0; i < SPREAD + CROWD; i++) close(fd[i]);
  kill(agent, SIGTERM);
  assert_int_equal(wait_bounded(agent, 10, NULL), 0);
  /* 24 refusals and more: libmicrohttpd's messages reach stderr at most one per 10 s */
  char *e = lens_test_slurp(errp, NULL);
  assert_non_null(e);
  printf("agent stderr: %s", e);
  assert_true(lines_starting(e, "") <= 3);
  free(e);
  lens_test_rmtree(g_dir);
}

/* GET and HEAD answer /metrics (HEAD: the headers, no body); other methods 405, other paths 404. */
static void test_head_and_methods(void **state) {
  (void)state;
  lens_test_tmpdir(g_dir, sizeof g_dir, "agent-head");
  char reg[300];
  make_reg(reg, sizeof reg, 0);
  int port = free_port();
  pid_t agent = start_agent(port, reg, NULL, NULL, NULL);
  assert_true(agent_ready(port, agent));
  size_t n = 0;
  char *r = http(port, "HEAD /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", &n);
  assert_non_null(r);
  assert_non_null(strstr(r, " 200 "));
  assert_non_null(strstr(r, "Content-Type: text/plain; version=0.0.4"));
  char *end = strstr(r, "\r\n\r\n");
  assert_non_null(end);
  assert_int_equal((size_t)(end + 4 - r), n); /* nothing after the headers */
  free(r);
  r = http(port, "POST /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n", NULL);
  assert_non_null(r);
  assert_non_null(strstr(r, " 405 "));
  assert_non_null(strstr(r, "Allow: GET, HEAD"));
  free(r);
  r = http(port, "GET /other HTTP/1.0\r\n\r\n", NULL);
  assert_non_null(r);
  assert_non_null(strstr(r, " 404 "));
  free(r);
  kill(agent, SIGTERM);
  assert_int_equal(wait_bounded(agent, 10, NULL), 0);
  lens_test_rmtree(g_dir);
}

static int lines_starting(const char *text, const char *prefix) {
  int n = 0;
  size_t pl = strlen(prefix);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (!strncmp(l, prefix, pl)) n++;
  return n;
}

static char *wait_file(const char *path, double limit_s) {
  char *s = NULL;
  for (double t0 = now_s(); !(s = lens_test_slurp(path, NULL)) && now_s() - t0 < limit_s;) usleep(50000);
  return s;
}

static pid_t start_py(const char *mode, const char *spec, int *port) {
  char portf[300];
  path_of(portf, sizeof portf, "port");
  unlink(portf);
  const char *argv[] = {PY, NET_PY, mode, g_dir, spec, NULL};
  pid_t p = lens_test_spawn(argv, NULL, NULL, NULL);
  char *s = wait_file(portf, 20);
  assert_non_null(s);
  *port = atoi(s);
  free(s);
  return p;
}

/* A forged page: valid exposition (promtool), no injected line, the
 * unterminated 24-byte function name cut inside its array (the reader,
 * live_read.c, terminates every name at its last byte: 23 bytes kept) and nothing of its neighbour; the OTLP JSON parses and
 * carries the names as they are. */
static void test_forged_names_escaped(void **state) {
  (void)state;
  lens_test_tmpdir(g_dir, sizeof g_dir, "agent-escape");
  char reg[300], prom[300], cmd[1200];
  make_reg(reg, sizeof reg, 1);
  path_of(prom, sizeof prom, "m.prom");
  const char *ag[] = {CLI, "agent", "--once", "--dir", reg, NULL};
  assert_int_equal(lens_test_wait_status(lens_test_spawn(ag, prom, NULL, NULL)), 0);
  char *e = lens_test_slurp(prom, NULL);
  assert_non_null(e);
  assert_int_equal(lines_starting(e, "forged_metric"), 0);
  assert_int_equal(lines_starting(e, "nccl_lens_up"), 0);
  assert_int_equal(lines_starting(e, "# x"), 0);
  assert_non_null(strstr(e, "comm=\"a\\\"b\\\\c\\nforged_metric 42\\n# x\""));
  assert_non_null(strstr(e, "function=\"BBBBBBBBBBBBBBBBBBBBBBB\",algo=\"\\\"} 7\\nnccl_lens_up 0\\n?#\""));
  assert_non_null(strstr(e, "proto=\"DDDDDDDDDDDDDDD\","));
  /* every sample line is a metric name, labels, a value: nothing else */
  for (const char *l = e; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    assert_true(*l == '#' || !strncmp(l, "nccl_", 5));
  free(e);
  if (have("promtool")) {
    snprintf(cmd, sizeof cmd, "promtool check metrics < %s", prom);
    assert_int_equal(system(cmd), 0);
  }
  /* the same names through OTLP JSON */
  int cport = 0;
  pid_t col = start_py("collector", "200", &cport);
  char ep[128];
  snprintf(ep, sizeof ep, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", cport);
  const char *env[] = {ep, NULL};
  const char *ag2[] = {CLI, "agent", "--once", "--otlp", "--dir", reg, NULL};
  assert_int_equal(lens_test_wait_status(lens_test_spawn(ag2, NULL, NULL, env)), 0);
  kill(col, SIGTERM);
  lens_test_wait_status(col);
  char jp[300];
  path_of(jp, sizeof jp, "comms.json");
  snprintf(cmd, sizeof cmd,
           "%s -c 'import json,sys; v=json.load(open(sys.argv[1])); "
           "assert [\"comm\",\"a\\\"b\\\\c\\nforged_metric 42\\n# x\"] in v, v; "
           "assert [\"function\",\"B\"*23] in v, v' %s",
           PY, jp);
  assert_int_equal(system(cmd), 0);
  lens_test_rmtree(g_dir);
}

/* A collector that accepts and never answers, a timeout of 10 minutes: the
 * push thread waits on it, /metrics does not, and SIGTERM ends the agent at once. */
static void test_stuck_collector(void **state) {
  (void)state;
  lens_test_tmpdir(g_dir, sizeof g_dir, "agent-stuck");
  char reg[300], accepted[300], errp[300];
  make_reg(reg, sizeof reg, 0);
  int cport = 0;
  pid_t col = start_py("stuck", "", &cport);
  char ep[128];
  snprintf(ep, sizeof ep, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", cport);
  const char *env[] = {ep, "OTEL_EXPORTER_OTLP_TIMEOUT=600000", NULL};
  const char *extra[] = {"--otlp", "--interval", "0.2", NULL};
  int port = free_port();
  path_of(errp, sizeof errp, "agent.err");
  pid_t agent = start_agent(port, reg, extra, env, errp);
  path_of(accepted, sizeof accepted, "accepted");
  char *a = wait_file(accepted, 20);
  assert_non_null(a);
  free(a);
  assert_true(agent_ready(port, agent));
  double worst = 0;
  char *last = NULL;
  for (int i = 0; i < 10; i++) {
    double t0 = now_s();
    char *r = scrape(port);
    double took = now_s() - t0;
    if (took > worst) worst = took;
    assert_non_null(r);
    assert_non_null(strstr(r, " 200 "));
    assert_true(took < 1.0);
    free(last);
    last = r;
    usleep(200000);
  }
  /* 2 s of pushes every 0.2 s behind one stuck POST: the queue of 4 dropped some */
  assert_non_null(strstr(last, "nccl_lens_agent_otlp_dropped_total{"));
  const char *dl = strstr(last, "\nnccl_lens_agent_otlp_dropped_total{");
  assert_non_null(dl);
  assert_true(atof(strstr(dl, "} ") + 2) > 0);
  free(last);
  double took = 0;
  kill(agent, SIGTERM);
  int st = wait_bounded(agent, 10, &took);
  printf("stuck collector: worst scrape %.3f s; SIGTERM to exit %.3f s\n", worst, took);
  assert_int_equal(st, 0);
  assert_true(took < 2.0);
  /* --once waits for its push, but not past SIGTERM */
  const char *once[] = {CLI, "agent", "--once", "--otlp", "--dir", reg, NULL};
  pid_t o = lens_test_spawn(once, NULL, NULL, env);
  sleep(1);
  assert_true(waitpid(o, NULL, WNOHANG) == 0); /* still waiting on the collector */
  kill(o, SIGTERM);
  st = wait_bounded(o, 10, &took);
  printf("stuck collector, --once: SIGTERM to exit %.3f s (status %d)\n", took, st);
  assert_int_equal(st, 1); /* the push did not happen */
  assert_true(took < 2.0);
  kill(col, SIGKILL);
  lens_test_wait_status(col);
  lens_test_rmtree(g_dir);
}

/* Retries: 503 with Retry-After: 1 then 200: two POSTs about 1 s apart (gzip
 * bodies, valid JSON); 400: one POST, the agent fails; http/protobuf refused. */
static void test_otlp_retries(void **state) {
  (void)state;
  lens_test_tmpdir(g_dir, sizeof g_dir, "agent-retry");
  char reg[300], reqs[300], errp[300];
  make_reg(reg, sizeof reg, 0);
  path_of(reqs, sizeof reqs, "requests.txt");
  path_of(errp, sizeof errp, "agent.err");
  const char *ag[] = {CLI, "agent", "--once", "--otlp", "--dir", reg, NULL};
  int cport = 0;
  pid_t col = start_py("collector", "503:1,200", &cport);
  char ep[128];
  snprintf(ep, sizeof ep, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", cport);
  const char *env[] = {ep, "OTEL_EXPORTER_OTLP_COMPRESSION=gzip", NULL};
  assert_int_equal(wait_bounded(lens_test_spawn(ag, NULL, errp, env), 30, NULL), 0);
  kill(col, SIGTERM);
  lens_test_wait_status(col);
  char *t = lens_test_slurp(reqs, NULL);
  assert_non_null(t);
  double t1 = 0, t2 = 0;
  int s1 = 0, s2 = 0;
  char ok1[8], ok2[8], z1[8], z2[8];
  assert_int_equal(sscanf(t, "%lf %d %7s %7s\n%lf %d %7s %7s", &t1, &s1, ok1, z1, &t2, &s2, ok2, z2), 8);
  printf("503 then 200: retried after %.3f s\n", t2 - t1);
  assert_int_equal(s1, 503);
  assert_int_equal(s2, 200);
  assert_string_equal(ok1, "ok");
  assert_string_equal(z1, "gzip");
  assert_true(t2 - t1 >= 0.9 && t2 - t1 < 5.0);
  assert_int_equal(lines_starting(t, ""), 2);
  free(t);
  unlink(reqs);
  col = start_py("collector", "400", &cport);
  snprintf(ep, sizeof ep, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", cport);
  const char *env2[] = {ep, NULL};
  assert_int_equal(wait_bounded(lens_test_spawn(ag, NULL, errp, env2), 30, NULL), 1);
  usleep(300000);
  kill(col, SIGTERM);
  lens_test_wait_status(col);
  t = lens_test_slurp(reqs, NULL);
  assert_non_null(t);
  int n400 = 0;
  for (const char *l = t; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) n400++;
  assert_int_equal(n400, 1);
  free(t);
  char *err = lens_test_slurp(errp, NULL);
  assert_non_null(err);
  assert_non_null(strstr(err, "HTTP 400"));
  free(err);
  /* no Retry-After: the backoff's first step, 1 s; an HTTP date 2 s ahead: 1..2 s (whole seconds) */
  static const struct {
    const char *spec;
    double lo, hi;
  } waits[] = {{"429,200", 0.9, 5.0}, {"504:+2,200", 0.9, 5.0}};
  for (size_t w = 0; w < sizeof waits / sizeof waits[0]; w++) {
    unlink(reqs);
    col = start_py("collector", waits[w].spec, &cport);
    snprintf(ep, sizeof ep, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:%d", cport);
    assert_int_equal(wait_bounded(lens_test_spawn(ag, NULL, errp, env2), 30, NULL), 0);
    kill(col, SIGTERM);
    lens_test_wait_status(col);
    t = lens_test_slurp(reqs, NULL);
    assert_non_null(t);
    assert_int_equal(sscanf(t, "%lf %d %7s %7s\n%lf %d", &t1, &s1, ok1, z1, &t2, &s2), 6);
    printf("%s: retried after %.3f s\n", waits[w].spec, t2 - t1);
    assert_int_equal(s2, 200);
    assert_true(t2 - t1 >= waits[w].lo && t2 - t1 < waits[w].hi);
    free(t);
  }
  const char *env3[] = {ep, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", NULL};
  assert_int_equal(wait_bounded(lens_test_spawn(ag, NULL, errp, env3), 30, NULL), 2);
  err = lens_test_slurp(errp, NULL);
  assert_non_null(err);
  assert_non_null(strstr(err, "http/protobuf is not supported"));
  free(err);
  lens_test_rmtree(g_dir);
}

static void sh_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh_ok(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  int rc = system(cmd);
  if (rc != 0) print_message("failed: %s\n", cmd);
  assert_int_equal(rc, 0);
}

/* Self-signed certificates (server: SAN IP 127.0.0.1; client) and a bcrypt
 * hash of "s3cret" for user lens. */
static void make_tls_files(void) {
  sh_ok("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 "
        "-addext subjectAltName=IP:127.0.0.1 -keyout key.pem -out cert.pem 2>/dev/null && "
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=lens-client "
        "-keyout ckey.pem -out ccert.pem 2>/dev/null && "
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=stranger "
        "-keyout skey.pem -out scert.pem 2>/dev/null",
        g_dir);
  sh_ok("%s -W ignore -c 'import crypt; print(crypt.crypt(\"s3cret\", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))' "
        "> %s/hash.txt",
        PY, g_dir);
}

static char *slurp_line(const char *name) {
  char p[300];
  path_of(p, sizeof p, name);
  char *s = lens_test_slurp(p, NULL);
  if (s && strchr(s, '\n')) *strchr(s, '\n') = 0;
  return s;
}

static void write_web(const char *name, const char *body) {
  char p[300];
  path_of(p, sizeof p, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(body, f);
  fclose(f);
}

/* One HTTPS GET through agent_net.py: its output (status line first). */
static char *tls_get(int port, const char *args) {
  char out[300], cmd[1500];
  path_of(out, sizeof out, "get.txt");
  snprintf(cmd, sizeof cmd, "cd %s && %s %s get https://127.0.0.1:%d/metrics cert.pem %s > %s 2>/dev/null", g_dir, PY,
           NET_PY, port, args, out);
  if (system(cmd) != 0) return NULL;
  return lens_test_slurp(out, NULL);
}

/* tls_get once the agent listens (up to 10 s): while its port is still
 * closed the client prints "error ..." and exits 0. */
static char *tls_get_ready(int port, const char *args) {
  for (int i = 0; i < 100; i++) {
    char *r = tls_get(port, args);
    if (r && strncmp(r, "error", 5) != 0) return r;
    free(r);
    usleep(100000);
  }
  return NULL;
}

/* The web configuration file: bad files refused (2) with one clear line;
 * TLS with basic auth (401 and WWW-Authenticate without the password, the
 * configured header on every answer); client certificates required and
 * verified. */
static void test_web_config(void **state) {
  (void)state;
  lens_test_tmpdir(g_dir, sizeof g_dir, "agent-web");
  char reg[300], web[300], errp[300], cfg[4096];
  make_reg(reg, sizeof reg, 0);
  path_of(errp, sizeof errp, "agent.err");
  make_tls_files();
  char *hash = slurp_line("hash.txt");
  assert_non_null(hash);
  assert_true(!strncmp(hash, "$2b$", 4) && strlen(hash) == 60);
  static const struct {
    const char *yaml, *says;
  } bad[] = {
      {"tls_server_config:\n  cert_file: cert.pem\n", "needs both cert_file and key_file"},
      {"basic_auth_users:\n  lens: plain\n", "not a bcrypt hash"},
      {"tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  cipher_suites: [x]\n", "not supported"},
      {"colour: blue\n", "unknown key 'colour'"},
      {"http_server_config:\n  headers:\n    Set-Cookie: a=b\n", "not a supported header"},
      {"http_server_config:\n  headers:\n    X-Frame-Options: allow\n", "deny or sameorigin"},
      {"tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  min_version: TLS10\n", "TLS10"},
      {"tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: RequireAndVerifyClientCert\n",
       "client_ca_file is needed"},
      {"tls_server_config: [\n", "YAML error"},
      {"tls_server_config:\n  cert_file: cert.pem\n  key_file: cert.pem\n", "cert_file and key_file: "},
      {"tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_ca_file: hash.txt\n"
       "  client_auth_type: RequireAndVerifyClientCert\n",
       "client_ca_file: "},
  };
  int port = free_port();
  char listen[64];
  snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
  path_of(web, sizeof web, "web.yml");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_web("web.yml", bad[i].yaml);
    const char *ag[] = {CLI, "agent", "--listen", listen, "--dir", reg, "--web.config.file", web, NULL};
    assert_int_equal(wait_bounded(lens_test_spawn(ag, NULL, errp, NULL), 10, NULL), 2);
    char *e = lens_test_slurp(errp, NULL);
    assert_non_null(e);
    if (!strstr(e, bad[i].says)) print_message("case %zu: %s", i, e);
    assert_non_null(strstr(e, bad[i].says));
    assert_int_equal(lines_starting(e, ""), 1);
    free(e);
  }
  snprintf(cfg, sizeof cfg,
           "# comment\ntls_server_config:\n  cert_file: cert.pem\n  key_file: %s/key.pem\n  min_version: TLS12\n"
           "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
           "basic_auth_users:\n  lens: %s\n",
           g_dir, hash);
  write_web("web.yml", cfg);
  const char *extra[] = {"--web.config.file", web, NULL};
  pid_t agent = start_agent(port, reg, extra, NULL, errp);
  char *r = NULL;
  r = tls_get_ready(port, "lens s3cret");
  assert_non_null(r);
  assert_true(!strncmp(r, "200\n", 4));
  assert_non_null(strstr(r, "x-frame-options: deny\n"));
  free(r);
  r = tls_get(port, "lens wrong");
  assert_non_null(r);
  assert_true(!strncmp(r, "401\n", 4));
  assert_non_null(strstr(r, "www-authenticate: Basic realm=\"nccl-lens\""));
  assert_non_null(strstr(r, "x-frame-options: deny\n"));
  free(r);
  r = tls_get(port, "");
  assert_non_null(r);
  assert_true(!strncmp(r, "401\n", 4));
  free(r);
  r = tls_get(port, "nobody s3cret");
  assert_non_null(r);
  assert_true(!strncmp(r, "401\n", 4));
  free(r);
  /* plain HTTP to the TLS port gets no metrics */
  char *p = http(port, "GET /metrics HTTP/1.0\r\n\r\n", NULL);
  assert_true(!p || !strstr(p, "nccl_lens_"));
  free(p);
  kill(agent, SIGTERM);
  assert_int_equal(wait_bounded(agent, 10, NULL), 0);
  /* client certificates: the client CA's certificate passes, another and none do not */
  snprintf(cfg, sizeof cfg,
           "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_ca_file: ccert.pem\n"
           "  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS13\n");
  write_web("web.yml", cfg);
  agent = start_agent(port, reg, extra, NULL, errp);
  r = NULL;
  r = tls_get_ready(port, "x x ccert.pem ckey.pem");
  assert_non_null(r);
  assert_true(!strncmp(r, "200\n", 4));
  free(r);
  r = tls_get(port, "x x scert.pem skey.pem");
  assert_true(!r || strncmp(r, "200\n", 4) != 0);
  free(r);
  r = tls_get(port, "");
  assert_true(!r || strncmp(r, "200\n", 4) != 0);
  free(r);
  kill(agent, SIGTERM);
  assert_int_equal(wait_bounded(agent, 10, NULL), 0);
  free(hash);
  lens_test_rmtree(g_dir);
}

/* Basic auth under a flood of wrong passwords (8 clients, bcrypt cost 12):
 * Prometheus' password, checked once and cached, is still answered in < 1 s.
 * With one server thread it is not (tried: over 1 s behind the bcrypt
 * checks); the bound of 2 bcrypt checks at once is a further margin this
 * 2-core measure does not tell apart. */
static void test_auth_flood(void **state) {
  (void)state;
  lens_test_tmpdir(g_dir, sizeof g_dir, "agent-flood");
  char reg[300], web[300], errp[300], cfg[600];
  make_reg(reg, sizeof reg, 0);
  path_of(errp, sizeof errp, "agent.err");
  sh_ok("%s -W ignore -c 'import crypt; print(crypt.crypt(\"s3cret\", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=4096)))' "
        "> %s/hash.txt",
        PY, g_dir);
  char *hash = slurp_line("hash.txt");
  assert_non_null(hash);
  snprintf(cfg, sizeof cfg, "basic_auth_users:\n  lens: '%s'\n", hash);
  free(hash);
  write_web("web.yml", cfg);
  path_of(web, sizeof web, "web.yml");
  const char *extra[] = {"--web.config.file", web, NULL};
  int port = free_port();
  pid_t agent = start_agent(port, reg, extra, NULL, errp);
  static const char good[] = "GET /metrics HTTP/1.0\r\nAuthorization: Basic bGVuczpzM2NyZXQ=\r\n\r\n"; /* lens:s3cret */
  static const char bad[] = "GET /metrics HTTP/1.0\r\nAuthorization: Basic bGVuczp3cm9uZw==\r\n\r\n"; /* lens:wrong */
  char *r = NULL;
  for (int i = 0; i < 100; i++) { /* the first check: bcrypt, then cached */
    free(r);
    r = http(port, good, NULL);
    if (r && strstr(r, " 200 ")) break;
    usleep(100000);
  }
  assert_non_null(r);
  assert_non_null(strstr(r, " 200 "));
  free(r);
  enum { FLOOD = 8 };
  pid_t kid[FLOOD];
  for (int k = 0; k < FLOOD; k++) {
    kid[k] = fork();
    if (kid[k] == 0) {
      double t0 = now_s();
      int n401 = 0;
      while (now_s() - t0 < 4) {
        char *a = http(port, bad, NULL);
        n401 += a && strstr(a, " 401 ");
        free(a);
      }
      _exit(n401 > 0 ? 0 : 1);
    }
  }
  usleep(500000);
  double worst = 0;
  for (int i = 0; i < 5; i++) {
    double t0 = now_s();
    r = http(port, good, NULL);
    double took = now_s() - t0;
    if (took > worst) worst = took;
    assert_non_null(r);
    assert_non_null(strstr(r, " 200 "));
    assert_non_null(strstr(r, "comm=\"victimcomm\""));
    free(r);
    assert_true(took < 1.0);
    usleep(300000);
  }
  printf("wrong-password flood (%d clients, bcrypt cost 12): worst scrape %.3f s\n", FLOOD, worst);
  for (int k = 0; k < FLOOD; k++) assert_int_equal(wait_bounded(kid[k], 20, NULL), 0);
  kill(agent, SIGTERM);
  assert_int_equal(wait_bounded(agent, 10, NULL), 0);
  lens_test_rmtree(g_dir);
}

/* up{job} and a sample of the agent's from Prometheus' query API; -2 when none yet. */
static double prom_query(const char *url, const char *q) {
  char cmd[1500], out[300];
  path_of(out, sizeof out, "q.txt");
  snprintf(cmd, sizeof cmd,
           "%s -c 'import json,sys,urllib.parse,urllib.request\n"
           "u=sys.argv[1]+\"/api/v1/query?\"+urllib.parse.urlencode({\"query\":sys.argv[2]})\n"
           "r=json.load(urllib.request.urlopen(u,timeout=5))[\"data\"][\"result\"]\n"
           "print(r[0][\"value\"][1] if r else -2)' '%s' '%s' > %s 2>/dev/null",
           PY, url, q, out);
  if (system(cmd) != 0) return -3;
  char *s = lens_test_slurp(out, NULL);
  double v = s ? atof(s) : -3;
  free(s);
  return v;
}

/* Debian's prometheus scrapes the agent over TLS with basic auth: up 1 with
 * the password, 0 with a wrong one; the agent's samples in its store. */
static void test_prometheus_tls_basic_auth(void **state) {
  (void)state;
  if (!have("prometheus") || !have("openssl")) {
    print_message("skipped: prometheus or openssl missing (scripts/setup.sh installs them)\n");
    skip();
  }
  lens_test_tmpdir(g_dir, sizeof g_dir, "agent-ptls");
  char reg[300], web[300], errp[300], cfg[4096], pcfg[300], tsdb[300];
  make_reg(reg, sizeof reg, 0);
  make_tls_files();
  char *hash = slurp_line("hash.txt");
  assert_non_null(hash);
  snprintf(cfg, sizeof cfg,
           "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  lens: '%s'\n", hash);
  free(hash);
  write_web("web.yml", cfg);
  path_of(web, sizeof web, "web.yml");
  path_of(errp, sizeof errp, "agent.err");
  int port = free_port(), pport = free_port();
  /* Each port is released before the next is asked for: the kernel may hand the same one out twice. */
  for (int i = 0; i < 20 && port > 0 && pport == port; i++) pport = free_port();
  assert_true(port > 0 && pport > 0 && port != pport);
  const char *extra[] = {"--web.config.file", web, NULL};
  pid_t agent = start_agent(port, reg, extra, NULL, errp);
  snprintf(cfg, sizeof cfg,
           "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
           "  - job_name: good\n    scheme: https\n    tls_config:\n      ca_file: %s/cert.pem\n"
           "    basic_auth:\n      username: lens\n      password: s3cret\n"
           "    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
           "  - job_name: bad\n    scheme: https\n    tls_config:\n      ca_file: %s/cert.pem\n"
           "    basic_auth:\n      username: lens\n      password: wrong\n"
           "    static_configs:\n      - targets: ['127.0.0.1:%d']\n",
           g_dir, port, g_dir, port);
  write_web("prometheus.yml", cfg);
  path_of(pcfg, sizeof pcfg, "prometheus.yml");
  path_of(tsdb, sizeof tsdb, "tsdb");
  char cfg_arg[400], tsdb_arg[400], web_arg[100], url[100];
  snprintf(cfg_arg, sizeof cfg_arg, "--config.file=%s", pcfg);
  snprintf(tsdb_arg, sizeof tsdb_arg, "--storage.tsdb.path=%s", tsdb);
  snprintf(web_arg, sizeof web_arg, "--web.listen-address=127.0.0.1:%d", pport);
  snprintf(url, sizeof url, "http://127.0.0.1:%d", pport);
  const char *pr[] = {"prometheus", cfg_arg, tsdb_arg, web_arg, "--log.level=error", NULL};
  pid_t prom = lens_test_spawn(pr, NULL, NULL, NULL);
  double good = -3, bad = -3, ops = -3;
  for (int i = 0; i < 60 && !(good == 1 && bad == 0 && ops >= 5); i++) { /* bounded: ~60 s */
    sleep(1);
    good = prom_query(url, "up{job=\"good\"}");
    bad = prom_query(url, "up{job=\"bad\"}");
    ops = prom_query(url, "sum(nccl_lens_ops_total{job=\"good\",comm=\"victimcomm\"})");
  }
  printf("prometheus over TLS with basic auth: up{job=good} %g, up{job=bad} %g, ops %g\n", good, bad, ops);
  kill(prom, SIGTERM);
  kill(agent, SIGTERM);
  assert_int_equal(wait_bounded(agent, 10, NULL), 0);
  wait_bounded(prom, 20, NULL);
  assert_true(good == 1);
  assert_true(bad == 0);
  assert_true(ops == 11); /* 5 + 6, the page's two series */
  lens_test_rmtree(g_dir);
}

/* Without --listen nothing listens; --listen :PORT is loopback only. */
static void test_default_listen_is_loopback(void **state) {
  (void)state;
  lens_test_tmpdir(g_dir, sizeof g_dir, "agent-lo");
  char reg[300], listen[64], errp[300];
  make_reg(reg, sizeof reg, 0);
  path_of(errp, sizeof errp, "agent.err");
  int port = free_port();
  snprintf(listen, sizeof listen, ":%d", port);
  const char *ag[] = {CLI, "agent", "--listen", listen, "--dir", reg, "--duration", "60", NULL};
  pid_t agent = lens_test_spawn(ag, NULL, errp, NULL);
  assert_true(agent_ready(port, agent));
  char cmd[600];
  /* the listening socket's local address, from the kernel's table */
  snprintf(cmd, sizeof cmd, "grep -qi ':%04X 00000000:0000 0A' /proc/net/tcp && ! grep -i ':%04X 00000000:0000 0A' /proc/net/tcp | grep -vqi '^ *[0-9]*: 0100007F:'",
           port, port);
  assert_int_equal(system(cmd), 0);
  kill(agent, SIGTERM);
  assert_int_equal(wait_bounded(agent, 10, NULL), 0);
  lens_test_rmtree(g_dir);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_head_and_methods),
      cmocka_unit_test(test_default_listen_is_loopback),
      cmocka_unit_test(test_forged_names_escaped),
      cmocka_unit_test(test_slow_clients_never_block_a_scrape),
      cmocka_unit_test(test_stuck_collector),
      cmocka_unit_test(test_otlp_retries),
      cmocka_unit_test(test_web_config),
      cmocka_unit_test(test_auth_flood),
      cmocka_unit_test(test_prometheus_tls_basic_auth),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
