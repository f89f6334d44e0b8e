/* nccl-lens agent: one per node, no privileges. Reads every local rank's live
 * page and serves /metrics (libmicrohttpd), writes node-exporter textfiles
 * and pushes OTLP/HTTP JSON (docs/metrics.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "agent_http.h"
#include "agent_model.h"
#include "cli/cli.h"
#include "cli/opt.h"
#include "lens_safe_fs.h"
#include "nccl-lens/registry.h"
#include "otlp_json.h"
#include "otlp_push.h"
#include "prom_text.h"
#include "text_escape.h"
#include "web_config.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

struct agent {
  pthread_mutex_t mu;
  struct agent_model *m;
  const char *dir;
  unsigned keep_s;
  char host[256];
  uint64_t scrapes;
  struct otlp_pusher *pusher; /* NULL: no OTLP push */
};

static void render_locked(struct agent *a, struct strbuf *b) {
  agent_model_refresh(a->m, a->dir, a->keep_s);
  prom_render(a->m, a->host, b);
  if (a->pusher) { /* the push thread's own account: a collector behind or down shows here */
    struct otlp_stats st;
    char h[600];
    otlp_pusher_stats(a->pusher, &st);
    prom_label_value(a->host, sizeof a->host, h, sizeof h);
    sb_printf(b, "# HELP nccl_lens_agent_otlp_pushes_total OTLP pushes by result (sent: 2xx; failed: no answer, "
                 "an error status or retries exhausted).\n# TYPE nccl_lens_agent_otlp_pushes_total counter\n"
                 "nccl_lens_agent_otlp_pushes_total{host=\"%s\",result=\"sent\"} %llu\n"
                 "nccl_lens_agent_otlp_pushes_total{host=\"%s\",result=\"failed\"} %llu\n",
              h, (unsigned long long)st.sent, h, (unsigned long long)st.failed);
    sb_printf(b, "# HELP nccl_lens_agent_otlp_dropped_total OTLP bodies dropped unsent: the queue of %d was full "
                 "(the oldest goes).\n# TYPE nccl_lens_agent_otlp_dropped_total counter\n"
                 "nccl_lens_agent_otlp_dropped_total{host=\"%s\"} %llu\n",
              OTLP_QUEUE, h, (unsigned long long)st.dropped);
    sb_printf(b, "# HELP nccl_lens_agent_otlp_retries_total OTLP POSTs retried after 429, 502, 503 or 504.\n"
                 "# TYPE nccl_lens_agent_otlp_retries_total counter\n"
                 "nccl_lens_agent_otlp_retries_total{host=\"%s\"} %llu\n",
              h, (unsigned long long)st.retries);
  }
}

/* The /metrics server's renderer: the lock is held only while rendering. */
static void render_scrape(void *arg, struct strbuf *b) {
  struct agent *a = arg;
  pthread_mutex_lock(&a->mu);
  render_locked(a, b);
  a->scrapes++;
  pthread_mutex_unlock(&a->mu);
}

static int stop_requested(void *arg) {
  (void)arg;
  return g_stop != 0;
}

/* node-exporter's textfile collector reads *.prom: written whole, renamed. */
static int write_textfile(struct agent *a, const char *dir) {
  struct strbuf b = {0};
  pthread_mutex_lock(&a->mu);
  render_locked(a, &b);
  pthread_mutex_unlock(&a->mu);
  /* --textfile DIR is the user's; the temporary is still a fresh O_EXCL
   * name (lens_file_replace), so nothing planted in DIR is followed. */
  int dfd = b.oom ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int ok = dfd >= 0 && lens_file_replace(dfd, "nccl_lens.prom", 0644, b.s, b.len) == 0;
  if (dfd >= 0) close(dfd);
  sb_free(&b);
  return ok ? 0 : -1;
}

static int parse_listen(const char *s, struct sockaddr_in *sa) {
  char host[64];
  const char *colon = strrchr(s, ':');
  if (!colon || (size_t)(colon - s) >= sizeof host) return -1;
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = 0;
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (*end || port < 0 || port > 65535) return -1;
  memset(sa, 0, sizeof *sa);
  sa->sin_family = AF_INET;
  sa->sin_port = htons((uint16_t)port);
  if (!*host) strcpy(host, "127.0.0.1");
  return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

static const char usage[] =
    "usage: nccl-lens agent [--listen ADDR:PORT] [--web.config.file FILE] [--textfile DIR] [--otlp] [--dir DIR]\n"
    "                       [--interval S] [--keep S] [--duration S] [--follow S] [--once] [--bench N]\n"
    "  --listen ADDR:PORT   serve /metrics (Prometheus text) there; ADDR empty (:PORT) is 127.0.0.1\n"
    "  --web.config.file FILE  TLS, basic auth and response headers: the exporter-toolkit YAML\n"
    "  --textfile DIR       write nccl_lens.prom there every --interval (node_exporter's textfile collector)\n"
    "  --otlp               push metrics as OTLP/HTTP JSON (OTEL_EXPORTER_OTLP_ENDPOINT)\n"
    "  --dir DIR            the live pages (default NCCL_LENS_REGISTRY_DIR, else\n"
    "                       " LENS_REGISTRY_DEFAULT_DESC "; a --dir that does not exist is an error)\n"
    "  --interval S         textfile/OTLP period, 0.05..86400 s (default 10)\n"
    "  --follow S           how often the pages are read, 0.05..60 s (default 1)\n"
    "  --keep S             keep finished processes' series this long, 0..86400 s (default 300)\n"
    "  --duration S         stop after S seconds, 0..2592000 (default 0: until SIGINT/SIGTERM)\n"
    "  --once               one scrape, then exit\n"
    "  --bench N            measure N scrapes of the pages (1..1000000) and print the cost\n"
    "  Exit status: 0 done, 1 failed, 2 usage error.\n";

int lens_cmd_agent(int argc, char **argv) {
  const char *listen_on = NULL, *textfile = NULL, *web_file = NULL, *dir = getenv("NCCL_LENS_REGISTRY_DIR");
  int otlp = 0, once = 0, bench = 0;
  double interval = 10, duration = 0, follow = 1;
  unsigned keep = 300;
  static char dflt_dir[512];
  if (!dir || !*dir) {
    lens_registry_default_dir(dflt_dir, sizeof dflt_dir);
    dir = dflt_dir;
  }
  int dir_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v;
    double x;
    int r;
#define VAL(name, what) ((r = lens_opt_val("agent", &i, argc, argv, name, 0, what, &v)) != 0)
#define NUM(lo, hi, dst)                                                                              \
  do {                                                                                                \
    if (r < 0) return 2;                                                                              \
    if (lens_opt_num(v, lo, hi, &x))                                                                  \
      return lens_cli_usage("agent", "%s wants a number %g..%g, not '%s'", o, (double)(lo), (double)(hi), v); \
    dst;                                                                                              \
  } while (0)
    if (VAL("--listen", "ADDR:PORT")) {
      if (r < 0) return 2;
      listen_on = v;
    } else if (VAL("--web.config.file", "a YAML file")) {
      if (r < 0) return 2;
      web_file = v;
    } else if (VAL("--textfile", "a directory")) {
      if (r < 0) return 2;
      textfile = v;
    } else if (VAL("--dir", "a directory")) {
      if (r < 0) return 2;
      dir = v;
      dir_given = 1;
    } else if (VAL("--interval", "seconds")) NUM(0.05, 86400, interval = x);
    else if (VAL("--follow", "seconds")) NUM(0.05, 60, follow = x);
    else if (VAL("--keep", "seconds")) NUM(0, 86400, keep = (unsigned)x);
    else if (VAL("--duration", "seconds")) NUM(0, 2592000, duration = x);
    else if (VAL("--bench", "a number of scrapes")) NUM(1, 1000000, bench = (int)x);
    else if (lens_opt_flag(o, "--otlp", 0)) otlp = 1;
    else if (lens_opt_flag(o, "--once", 0)) once = 1;
    else if (lens_opt_flag(o, "--help", 'h')) {
      fputs(usage, stdout);
      return 0;
    } else {
      return lens_cli_usage("agent", "unknown option '%s'", o);
    }
#undef VAL
#undef NUM
  }
  if (interval < 0.05) interval = 0.05;
  if (web_file && !listen_on) return lens_cli_usage("agent", "--web.config.file needs --listen");
  struct sockaddr_in listen_sa;
  if (listen_on && parse_listen(listen_on, &listen_sa) != 0) /* with --once too: never a bad address accepted */
    return lens_cli_usage("agent", "bad --listen '%s' (ADDR:PORT, an IPv4 address, port 0..65535)", listen_on);
  /* A --dir that is not there is a mistake (exit 1); the default one missing is fine: nothing runs yet. */
  if (dir_given && lens_cli_check_dir("agent", dir)) return 1;
  /* Configuration is checked before anything runs: a bad file or variable is
   * a usage error (2), never a server started without what was asked. */
  char err[1200];
  struct web_config wc;
  if (web_file && web_config_load(web_file, &wc, err, sizeof err) != 0) return lens_cli_usage("agent", "%s", err);
  struct otlp_cfg ocfg;
  if (otlp && otlp_config_from_env(&ocfg, err, sizeof err) != 0) {
    if (web_file) web_config_free(&wc);
    return lens_cli_usage("agent", "%s", err);
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  /* A peer that closes first (a scraper, a TLS collector: curl runs with
   * CURLOPT_NOSIGNAL and so leaves SIGPIPE alone) must not end the agent. */
  signal(SIGPIPE, SIG_IGN);
  struct agent a = {.dir = dir, .keep_s = keep};
  pthread_mutex_init(&a.mu, NULL);
  if (gethostname(a.host, sizeof a.host - 1) != 0) strcpy(a.host, "unknown");
  a.m = calloc(1, sizeof *a.m);
  int rc = 0;
  struct agent_http *http = NULL; /* before every goto out */
  if (!a.m) {
    rc = lens_cli_error("agent", "out of memory");
    goto out;
  }
  if (bench > 0) { /* the budget figures: CPU per scrape of the pages in --dir */
    struct rusage r0, r1;
    struct timespec w0, w1;
    size_t bytes = 0;
    getrusage(RUSAGE_SELF, &r0);
    clock_gettime(CLOCK_MONOTONIC, &w0);
    for (int i = 0; i < bench; i++) {
      struct strbuf b = {0};
      render_locked(&a, &b);
      bytes = b.len;
      sb_free(&b);
    }
    clock_gettime(CLOCK_MONOTONIC, &w1);
    getrusage(RUSAGE_SELF, &r1);
    double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                 (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
    double wall = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9;
    size_t series = 0;
    for (size_t i = 0; i < a.m->pages.n; i++) series += a.m->pages.procs[i].page->n_series;
    printf("agent bench: %zu page(s), %zu series, exposition %zu bytes; per scrape: %.3f ms CPU, %.3f ms wall; "
           "at one scrape per 15 s: %.4f %% of a core\n",
           a.m->pages.n, series, bytes, cpu * 1e3 / bench, wall * 1e3 / bench, cpu / bench / 15.0 * 100.0);
    goto out;
  }
  if (once) { /* one exposition on stdout (and one textfile / push when asked) */
    struct strbuf b = {0};
    render_locked(&a, &b);
    if (!b.oom) fwrite(b.s, 1, b.len, stdout);
    sb_free(&b);
    if (textfile && write_textfile(&a, textfile) != 0) rc = lens_cli_error("agent", "cannot write %s", textfile);
    if (otlp) {
      struct strbuf ob = {0};
      otlp_render(a.m, a.host, &ob);
      if (ob.oom || otlp_send(&ocfg, ob.s, ob.len, stop_requested, NULL) != 0) rc = 1;
      sb_free(&ob);
    }
    goto out;
  }
  /* Slow clients each hold a descriptor: room for the connection limit. */
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < 4096 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max < 4096 ? nofile.rlim_max : 4096;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  if (listen_on) {
    struct sockaddr_in sa;
    if (parse_listen(listen_on, &sa) != 0) {
      rc = lens_cli_usage("agent", "bad --listen '%s' (ADDR:PORT, an IPv4 address)", listen_on);
      goto out;
    }
    http = agent_http_start(&sa, web_file ? &wc : NULL, render_scrape, &a, err, sizeof err);
    if (!http) {
      rc = lens_cli_error("agent", "cannot listen on %s: %s", listen_on, err);
      goto out;
    }
    char shown[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &sa.sin_addr, shown, sizeof shown);
    fprintf(stderr, "nccl-lens agent: serving %s://%s:%u/metrics from %s\n", web_file && wc.tls ? "https" : "http",
            shown, (unsigned)ntohs(sa.sin_port), dir);
  }
  if (otlp && !(a.pusher = otlp_pusher_start(&ocfg))) {
    rc = 1;
    goto out;
  }
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  double next = 0, next_follow = 0;
  while (!g_stop) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double el = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
    if (duration > 0 && el >= duration) break;
    /* Follow the pages' rings of recent instances between scrapes, so the
     * split sees every instance whatever the scrape interval (a rank may
     * complete thousands a second; the ring holds LENS_LIVE_RECENT). */
    if (el >= next_follow) {
      next_follow = el + follow;
      pthread_mutex_lock(&a.mu);
      agent_model_refresh(a.m, a.dir, a.keep_s);
      pthread_mutex_unlock(&a.mu);
    }
    if (el >= next) {
      next = el + interval;
      if (textfile && write_textfile(&a, textfile) != 0) fprintf(stderr, "nccl-lens agent: cannot write %s\n", textfile);
      if (a.pusher) { /* rendered under the lock, sent by the push thread without it */
        struct strbuf ob = {0};
        pthread_mutex_lock(&a.mu);
        agent_model_refresh(a.m, a.dir, a.keep_s);
        otlp_render(a.m, a.host, &ob);
        pthread_mutex_unlock(&a.mu);
        if (!ob.oom) otlp_pusher_enqueue(a.pusher, &ob);
        sb_free(&ob);
      }
    }
    struct timespec nap = {0, 50000000};
    nanosleep(&nap, NULL);
  }
  /* the last state for the textfile collector: what a job that just ended left */
  if (textfile && write_textfile(&a, textfile) != 0) fprintf(stderr, "nccl-lens agent: cannot write %s\n", textfile);
out:
  /* The server first: its threads render under a.mu and read a.pusher, so
   * they must be gone before the pusher is (TSan saw the race). Then the
   * push in flight is abandoned within ~0.1 s, whatever the collector does. */
  agent_http_stop(http);
  otlp_pusher_stop(a.pusher);
  a.pusher = NULL;
  if (otlp) otlp_config_free(&ocfg);
  if (web_file) web_config_free(&wc);
  if (a.m) agent_model_free(a.m);
  free(a.m);
  return rc;
}
