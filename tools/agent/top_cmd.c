/* nccl-lens top: a live terminal view of this node's ranks from the same
 * pages as the agent (agent_model.h), refreshed each second: operation rate,
 * bandwidth of the bytes started, mean span, execution and wait (job view,
 * where the node holds several ranks of a communicator), how often the rank
 * was last, drops. 'q' or Ctrl-C quits. */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agent_model.h"
#include "cli/cli.h"
#include "cli/opt.h"
#include "lens_safe_fs.h"
#include "nccl-lens/registry.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

/* The previous sample of one rank: keyed by (pid, communicator, rank), as a
 * process may hold several ranks of one communicator (keyed without the
 * rank, its second rank's count minus the first's wrapped to 1.8e19 ops/s). */
struct prev {
  uint32_t pid;
  int32_t rank;
  uint64_t comm_id;
  uint64_t ops, bytes, wait_ns, exec_ns, last;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct prev *prev_of(struct prev *v, size_t *n, size_t cap, uint32_t pid, uint64_t comm_id, int32_t rank) {
  for (size_t i = 0; i < *n; i++)
    if (v[i].pid == pid && v[i].comm_id == comm_id && v[i].rank == rank) return &v[i];
  if (*n == cap) return NULL;
  memset(&v[*n], 0, sizeof v[*n]);
  v[*n].pid = pid;
  v[*n].rank = rank;
  v[*n].comm_id = comm_id;
  return &v[(*n)++];
}

/* Proxy/profiler threads from `nccl-lens sched`'s pages: the ones that waited
 * most for a CPU since the last refresh first. */
#define TOP_STARVED 8
static void draw_starved(const struct agent_model *m, double dt, int first) {
  static struct { uint32_t pid, tid; uint64_t ns; } prev[4096];
  static size_t n_prev;
  if (!m->n_sched) {
    printf("starved threads: none reported (`nccl-lens sched --follow`, as root, reports them here)\n");
    return;
  }
  struct { size_t i; double rate; } top[TOP_STARVED];
  size_t n_top = 0;
  for (size_t i = 0; i < m->n_sched; i++) {
    const struct lens_sched_page_thread *t = &m->sched[i];
    uint64_t tot = t->runq_ns + t->preempt_ns;
    size_t k = 0;
    while (k < n_prev && (prev[k].pid != t->pid || prev[k].tid != t->tid)) k++;
    double rate = 0;
    if (k < n_prev) {
      if (!first && dt > 0 && tot >= prev[k].ns) rate = (double)(tot - prev[k].ns) / 1e6 / dt;
      prev[k].ns = tot;
    } else if (n_prev < sizeof prev / sizeof prev[0]) {
      prev[n_prev].pid = t->pid, prev[n_prev].tid = t->tid, prev[n_prev].ns = tot;
      n_prev++;
    }
    size_t at = n_top;
    while (at > 0 && top[at - 1].rate < rate) at--;
    if (at >= TOP_STARVED) continue;
    if (n_top < TOP_STARVED) n_top++;
    memmove(&top[at + 1], &top[at], (n_top - 1 - at) * sizeof top[0]);
    top[at].i = i, top[at].rate = rate;
  }
  printf("\nstarved threads (nccl-lens sched; %zu watched)\n%-8s %-8s %-15s %14s %12s\n", m->n_sched, "PID", "TID",
         "ROLE", "STARVED_MS/S", "TOTAL_MS");
  for (size_t j = 0; j < n_top; j++) {
    const struct lens_sched_page_thread *t = &m->sched[top[j].i];
    printf("%-8u %-8u %-15s %14.2f %12.1f\n", t->pid, t->tid,
           *lens_sched_page_role_name(t->roles) ? lens_sched_page_role_name(t->roles) : "-",
           top[j].rate, (double)(t->runq_ns + t->preempt_ns) / 1e6);
  }
}

static void draw(const struct agent_model *m, struct prev *pv, size_t *npv, size_t cap, double dt, int first,
                 const char *dir) {
  printf("\033[H\033[2Jnccl-lens top  %s  %zu process(es)  (q quits)\n", dir, m->pages.n);
  printf("%-8s %-5s %-20s %10s %10s %10s %10s %10s %6s %8s %s\n", "PID", "RANK", "COMM", "OPS/S", "GB/S", "SPAN_US",
         "EXEC_US", "WAIT_US", "LAST%", "DROPS", "STATE");
  for (size_t pi = 0; pi < m->pages.n; pi++) {
    const struct lens_live_page *p = m->pages.procs[pi].page;
    for (uint32_t c = 0; c < p->n_comms; c++) {
      const struct lens_live_comm *lc = &p->comms[c];
      uint64_t ops = 0, bytes = 0, span_n = 0, span_ns = 0;
      for (uint32_t s = 0; s < p->n_series; s++)
        if (p->series[s].comm == c) {
          ops += p->series[s].count;
          bytes += p->series[s].bytes;
          span_n += p->series[s].span.count;
          span_ns += p->series[s].span.sum_ns;
        }
      const struct agent_rank *r = NULL;
      for (uint32_t i = 0; i < m->n_ranks; i++)
        if (m->ranks[i].comm_id == lc->comm_id && m->ranks[i].rank == lc->rank) r = &m->ranks[i];
      uint64_t inst = 0;
      for (uint32_t i = 0; i < m->n_splits; i++)
        if (m->splits[i].comm_id == lc->comm_id) inst += m->splits[i].instances;
      struct prev *q = prev_of(pv, npv, cap, p->pid, lc->comm_id, lc->rank);
      double rate = 0, gbs = 0;
      /* Counters only grow; one that went back is a new process (or a
       * forged page): no rate rather than a wrapped one. */
      if (q && !first && dt > 0 && ops >= q->ops && bytes >= q->bytes) {
        rate = (double)(ops - q->ops) / dt;
        gbs = (double)(bytes - q->bytes) / dt / 1e9;
      }
      char exec[16] = "-", wait[16] = "-", last[16] = "-";
      if (r && inst) {
        snprintf(exec, sizeof exec, "%.1f", (double)r->exec_ns / 1e3 / (double)inst);
        snprintf(wait, sizeof wait, "%.1f", (double)r->wait_ns / 1e3 / (double)inst);
        snprintf(last, sizeof last, "%.0f", 100.0 * (double)r->last_count / (double)inst);
      }
      printf("%-8u %-5d %-20.20s %10.1f %10.3f %10.1f %10s %10s %6s %8llu %s\n", p->pid, lc->rank,
             *lc->name ? lc->name : "-", rate, gbs, span_n ? (double)span_ns / 1e3 / (double)span_n : 0.0, exec, wait,
             last, (unsigned long long)p->drops,
             m->pages.procs[pi].alive ? "running" : p->state == LENS_LIVE_FINISHED ? "finished" : "gone");
      if (q) q->ops = ops, q->bytes = bytes;
    }
  }
  draw_starved(m, dt, first);
  fflush(stdout);
}

int lens_cmd_top(int argc, char **argv) {
  const char *dir = getenv("NCCL_LENS_REGISTRY_DIR");
  double duration = 0, period = 1;
  static char dflt_dir[512];
  if (!dir || !*dir) {
    lens_registry_default_dir(dflt_dir, sizeof dflt_dir);
    dir = dflt_dir;
  }
  int dir_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i], *v;
    int r;
    double x = 0;
    if ((r = lens_opt_val("top", &i, argc, argv, "--dir", 0, "a directory", &v))) {
      if (r < 0) return 2;
      dir = v;
      dir_given = 1;
    } else if ((r = lens_opt_val("top", &i, argc, argv, "--duration", 0, "seconds", &v)) ||
               (r = lens_opt_val("top", &i, argc, argv, "--period", 0, "seconds", &v))) {
      if (r < 0) return 2;
      int dur = !strncmp(o, "--duration", 10);
      if (lens_opt_num(v, dur ? 0 : 0.1, dur ? 2592000 : 3600, &x))
        return lens_cli_usage("top", "%s wants seconds %s, not '%s'", dur ? "--duration" : "--period",
                              dur ? "0..2592000 (0: until q or SIGINT)" : "0.1..3600", v);
      if (dur) duration = x;
      else period = x;
    } else if (lens_opt_flag(o, "--help", 'h')) {
      printf("usage: nccl-lens top [--dir DIR] [--period S] [--duration S]\n"
             "  Live view of this node's ranks from their pages.\n"
             "  --dir DIR       the live pages (default NCCL_LENS_REGISTRY_DIR, else\n"
             "                  " LENS_REGISTRY_DEFAULT_DESC "; a --dir that does not exist is an error)\n"
             "  --period S      redraw every S seconds, 0.1..3600 (default 1)\n"
             "  --duration S    stop after S seconds, 0..2592000 (default 0: until q or SIGINT)\n"
             "  Exit status: 0 done, 1 failed, 2 usage error.\n");
      return 0;
    } else {
      return lens_cli_usage("top", "unknown option '%s'", o);
    }
  }
  if (period < 0.1) period = 0.1;
  /* A --dir that is not there is a mistake (exit 1); the default one missing is fine: nothing runs yet. */
  if (dir_given && lens_cli_check_dir("top", dir)) return 1;
  struct agent_model *m = calloc(1, sizeof *m);
  size_t cap = 4096, npv = 0;
  struct prev *pv = calloc(cap, sizeof *pv);
  if (!m || !pv) return lens_cli_error("top", "out of memory");
  struct termios old;
  int tty = isatty(0) && tcgetattr(0, &old) == 0;
  if (tty) {
    struct termios raw = old;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    tcsetattr(0, TCSANOW, &raw);
  }
  /* No SA_RESTART: a signal ends the poll() of the loop at once. Every read
   * of a page is non-blocking (live_read.c), so nothing else waits long. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  double t0 = now_s(), prev_t = t0;
  int first = 1, stdin_open = 1;
  while (!g_stop) {
    agent_model_refresh(m, dir, 300);
    double t = now_s();
    draw(m, pv, &npv, cap, t - prev_t, first, dir);
    first = 0;
    prev_t = t;
    if (duration > 0 && t - t0 >= duration) break;
    struct pollfd pfd = {stdin_open ? 0 : -1, POLLIN, 0}; /* fd -1: just the timeout */
    if (poll(&pfd, 1, (int)(period * 1000)) > 0) {
      char ch = 0;
      ssize_t n = read(0, &ch, 1);
      if (n <= 0) stdin_open = 0; /* end of input: keep refreshing until the duration or a signal */
      else if (ch == 'q' || ch == 'Q') break;
    }
  }
  if (tty) tcsetattr(0, TCSANOW, &old);
  printf("\n");
  agent_model_free(m);
  free(m);
  free(pv);
  return 0;
}
