/* `nccl-lens sched`: load the scheduling probe, keep its watch map in step
 * with the proxy threads that nccl-lens processes publish, and write the
 * samples into a .lens trace of its own. */
#ifdef LENS_HAVE_BPF
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "sched/sched_page.h"
#include "sched/sched_probe.h"
#include "sched/sched_report.h"
#include "sched/sched_targets.h"
#include "sched/sched_trace.h"
#include "lens_safe_fs.h"
#include "lensread.h"
#include "nccl-lens/registry.h"
#include "lens_utf8.h"

#define CMD "sched"
#define LENS_SCHED_MAX_DURATION_S 2592000.0
#define MAX_TARGETS 64
#define MAX_WATCH 4096
#define REFRESH_NS 50000000ull      /* registry poll: proxy threads appear as communicators start */
#define FLUSH_NS 200000000ull       /* samples reach the file at least this often */
#define SCAN_NS 1000000000ull       /* --follow: look for new plugin processes */
#define PAGE_NS 1000000000ull       /* the starvation page for the agent (sched_page.h) */
#define REGISTRY_WAIT_NS 5000000000ull /* plugin mapped but registry not yet written */
#define NOTE_WARN 2
#define NOTE_INFO 3

struct opts {
  int pid, follow, all_threads, quiet, verbose, stats;
  int registry_only; /* --follow: only the registry dir, no /proc scan (the demo's own processes) */
  int page_dir_explicit; /* named by --page-dir, --registry-dir or NCCL_LENS_REGISTRY_DIR, not the default */
  const char *out_dir, *btf, *registry_dir, *page_dir;
  double duration_s;
  uint64_t min_offcpu_ns, min_wait_ns;
};

struct watch { uint32_t host_tid, ns_tid; int pid; };

struct run {
  struct opts o;
  struct lens_sched_probe *probe;
  struct lens_sched_trace *trace;
  struct lens_sched_page *page;      /* NULL: --page-dir none, or its directory was refused */
  int page_dirfd;                    /* the checked page directory (lens_sched_page_open_dir) */
  int page_failed;
  int scan_refused;                  /* the registry directory was refused (said once) */
  struct lens_sched_target *targets; /* MAX_TARGETS */
  size_t n_targets;
  struct watch cur[MAX_WATCH];
  size_t n_cur;
  uint64_t samples;
};

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-lens sched (--pid PID | --follow) [options]\n"
          "  Watches the NCCL proxy progress threads that the nccl-lens plugin publishes and records\n"
          "  their run-queue waits, preemptions and long sleeps (eBPF, tp_btf sched_* tracepoints).\n"
          "  --pid PID            the process to watch (its registry must exist, see --all-threads)\n"
          "  --follow             every process that loads libnccl-profiler-lens.so, as they come and go\n"
          "  --all-threads        with --pid: watch every thread when the process has no registry\n"
          "  --out DIR            where nccl-lens-sched-<host>-<pid>.lens goes (default .)\n"
          "  --duration S         stop after S seconds (default: until SIGINT/SIGTERM or the pid exits)\n"
          "  --min-wait-us N      waits shorter than N us go to histograms only (default 10)\n"
          "  --min-offcpu-us N    sleeps shorter than N us go to histograms only (default 1000)\n"
          "  --registry-only      with --follow: find processes only by their registry files in --registry-dir\n"
          "                       (no /proc scan), so only processes that publish there are watched\n"
          "  --registry-dir DIR   registry directory inside the target (default: its NCCL_LENS_REGISTRY_DIR\n"
          "                       or " LENS_REGISTRY_DEFAULT_DESC " as the target computes it)\n"
          "  --page-dir DIR       where <pid>.sched, the live starvation totals for `nccl-lens agent`, goes\n"
          "                       (default: --registry-dir, else $NCCL_LENS_REGISTRY_DIR, else your own\n"
          "                       " LENS_REGISTRY_DEFAULT_DESC "; 'none': no page). It must be yours, or\n"
          "                       sticky and owned by root; it is created 0700 when missing\n"
          "  --btf PATH           kernel BTF to use instead of /sys/kernel/btf/vmlinux\n"
          "  --stats              print the probe's in-kernel cost (bpf_stats) at exit\n"
          "  --quiet, --verbose   fewer messages / libbpf's own messages too\n"
          "  Needs CAP_BPF and CAP_PERFMON, or root.\n");
}

static int parse_u64(const char *s, uint64_t *v) {
  char *e;
  errno = 0;
  unsigned long long x = strtoull(s, &e, 10);
  if (errno || e == s || *e || s[0] == '-') return -1;
  *v = x;
  return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o) {
  static const struct option lo[] = {
      {"pid", required_argument, 0, 'p'},        {"follow", no_argument, 0, 'f'},
      {"all-threads", no_argument, 0, 'a'},      {"out", required_argument, 0, 'o'},
      {"duration", required_argument, 0, 'd'},   {"min-offcpu-us", required_argument, 0, 'm'},
      {"min-wait-us", required_argument, 0, 'w'}, {"btf", required_argument, 0, 'b'},
      {"registry-dir", required_argument, 0, 'r'}, {"stats", no_argument, 0, 's'},
      {"registry-only", no_argument, 0, 'R'},   {"page-dir", required_argument, 0, 'P'},
      {"quiet", no_argument, 0, 'q'},            {"verbose", no_argument, 0, 'v'},
      {"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->out_dir = ".";
  o->min_offcpu_ns = 1000000;
  o->min_wait_ns = 10000;
  optind = 1;
  opterr = 0; /* one line of ours, not getopt's and then the usage */
  int c;
  uint64_t v;
  while ((c = getopt_long(argc, argv, ":p:fao:d:qvh", lo, NULL)) != -1) {
    switch (c) {
    case 'p':
      if (parse_u64(optarg, &v) || v == 0 || v > 0x3fffffff)
        return lens_cli_usage(CMD, "bad pid '%s'", optarg), -1;
      o->pid = (int)v;
      break;
    case 'f': o->follow = 1; break;
    case 'a': o->all_threads = 1; break;
    case 'o':
      if (!*optarg) return lens_cli_usage(CMD, "--out wants a directory, not ''"), -1;
      o->out_dir = optarg;
      break;
    case 'd': {
      char *e;
      o->duration_s = strtod(optarg, &e);
      /* Written so NaN fails too: nan never compares greater than 0. */
      if (e == optarg || *e || !(o->duration_s > 0 && o->duration_s <= LENS_SCHED_MAX_DURATION_S))
        return lens_cli_usage(CMD, "bad --duration '%s' (seconds, more than 0 and at most 30 days = 2592000)",
                              optarg), -1;
      break;
    }
    case 'm':
      if (parse_u64(optarg, &v)) return lens_cli_usage(CMD, "bad --min-offcpu-us '%s'", optarg), -1;
      o->min_offcpu_ns = v * 1000;
      break;
    case 'w':
      if (parse_u64(optarg, &v)) return lens_cli_usage(CMD, "bad --min-wait-us '%s'", optarg), -1;
      o->min_wait_ns = v * 1000;
      break;
    case 'b': o->btf = optarg; break;
    case 'r': o->registry_dir = optarg; break;
    case 'R': o->registry_only = 1; break;
    case 'P': o->page_dir = optarg; break;
    case 's': o->stats = 1; break;
    case 'q': o->quiet = 1; break;
    case 'v': o->verbose = 1; break;
    case 'h': usage(stdout); exit(0);
    case ':': return lens_cli_usage(CMD, "%s needs a value", argv[optind - 1]), -1;
    default: return lens_cli_usage(CMD, "unknown option '%s'", argv[optind - 1]), -1;
    }
  }
  if (optind < argc) return lens_cli_usage(CMD, "unexpected argument '%s'", argv[optind]), -1;
  if (!!o->pid == !!o->follow) return lens_cli_usage(CMD, "give exactly one of --pid PID or --follow"), -1;
  if (o->all_threads && !o->pid) return lens_cli_usage(CMD, "--all-threads needs --pid"), -1;
  if (o->registry_only && (!o->follow || !o->registry_dir))
    return lens_cli_usage(CMD, "--registry-only needs --follow and --registry-dir"), -1;
  if (!o->page_dir) o->page_dir = o->registry_dir;
  if (!o->page_dir) o->page_dir = getenv("NCCL_LENS_REGISTRY_DIR");
  o->page_dir_explicit = o->page_dir && *o->page_dir;
  if (!o->page_dir || !*o->page_dir) {
    static char dflt[512];
    lens_registry_default_dir(dflt, sizeof dflt);
    o->page_dir = dflt;
  }
  if (!strcmp(o->page_dir, "none")) o->page_dir = NULL;
  return 0;
}

/* ---- targets and the watch map ---- */
static struct lens_sched_target *target_add(struct run *r, int pid) {
  for (size_t i = 0; i < r->n_targets; i++)
    if (r->targets[i].host_pid == pid) return &r->targets[i];
  if (r->n_targets == MAX_TARGETS) return NULL;
  struct lens_sched_target *t = &r->targets[r->n_targets++];
  memset(t, 0, sizeof *t);
  t->host_pid = pid;
  return t;
}

static void note(struct run *r, uint32_t level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(struct run *r, uint32_t level, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (r->trace) lens_sched_trace_note(r->trace, level, buf);
  if (!r->o.quiet) fprintf(stderr, "nccl-lens sched: %s\n", buf);
}

static void on_hist(void *ctx, const struct lens_bpf_hist_key *k, const struct lens_bpf_hist *h);

/* Makes the kernel's watch map equal the union of the targets' tids. */
static void sync_watch(struct run *r) {
  static struct watch want[MAX_WATCH];
  size_t n_want = 0;
  for (size_t i = 0; i < r->n_targets; i++)
    for (size_t k = 0; k < r->targets[i].n_tids && n_want < MAX_WATCH; k++)
      want[n_want++] = (struct watch){r->targets[i].tids[k].host_tid, r->targets[i].tids[k].ns_tid,
                                      r->targets[i].host_pid};
  for (size_t i = 0; i < r->n_cur;) {
    int keep = 0;
    for (size_t k = 0; k < n_want && !keep; k++) keep = want[k].host_tid == r->cur[i].host_tid;
    if (keep) {
      i++;
      continue;
    }
    lens_sched_probe_unwatch(r->probe, r->cur[i].host_tid);
    /* Its histograms go into the trace now; their map slots are freed. */
    lens_sched_probe_take_hists(r->probe, r->cur[i].host_tid, on_hist, r);
    r->cur[i] = r->cur[--r->n_cur];
  }
  for (size_t k = 0; k < n_want; k++) {
    int have = 0;
    for (size_t i = 0; i < r->n_cur && !have; i++) have = r->cur[i].host_tid == want[k].host_tid;
    if (have) continue;
    int rc = lens_sched_probe_watch(r->probe, want[k].host_tid, want[k].ns_tid);
    if (rc) {
      note(r, NOTE_WARN, "cannot watch tid %u: %s", want[k].host_tid, strerror(-rc));
      continue;
    }
    r->cur[r->n_cur++] = want[k];
    if (r->o.verbose)
      fprintf(stderr, "nccl-lens sched: watching tid %u (pid %d, tid %u in its namespace)\n", want[k].host_tid,
              want[k].pid, want[k].ns_tid);
  }
}

static void follow_found(void *ctx, int pid) {
  struct run *r = ctx;
  size_t before = r->n_targets;
  if (target_add(r, pid) && r->n_targets > before) note(r, NOTE_INFO, "following pid %d", pid);
}

/* Re-reads every target's registry; drops targets that exited. Returns 0 while
 * there is something left to watch (always in --follow mode). */
static int refresh(struct run *r, int scan) {
  char err[512];
  if (r->o.follow) {
    char dflt[512], why[256];
    if (!r->o.registry_dir) lens_registry_default_dir(dflt, sizeof dflt);
    const char *dir = r->o.registry_dir ? r->o.registry_dir : dflt;
    if (lens_sched_scan_registry_dir(dir, follow_found, r, why, sizeof why) < 0) {
      /* Once per run: a missing default directory is only a node without jobs yet. */
      if (!r->scan_refused && (r->o.registry_dir || errno != ENOENT))
        note(r, NOTE_WARN, "not scanning registry directory %s: %s", dir, why);
      r->scan_refused = 1;
    }
    if (scan && !r->o.registry_only) lens_sched_scan_plugin_procs(follow_found, r);
  }
  for (size_t i = 0; i < r->n_targets;) {
    struct lens_sched_target *t = &r->targets[i];
    size_t kept = t->n_tids;
    int rc = lens_sched_target_refresh(t, r->o.registry_dir, r->o.all_threads, err, sizeof err);
    int gone = rc < 0 && lens_proc_start_ticks(t->host_pid) != t->start_ticks;
    if (gone) {
      note(r, NOTE_INFO, "pid %d exited", t->host_pid);
      r->targets[i] = r->targets[--r->n_targets];
      continue;
    }
    if (rc < 0 && t->refused) {
      /* A planted or foreign registry: nothing of it is watched, said once per target. */
      if (!t->refusal_noted) note(r, NOTE_WARN, "%s", err);
      t->refusal_noted = 1;
    } else if (rc < 0)
      t->n_tids = kept; /* registry removed at finalize: keep what we had */
    i++;
  }
  sync_watch(r);
  return r->o.follow || r->n_targets ? 0 : -1;
}

/* --pid: the process must exist and publish a registry (or --all-threads). */
static int first_target(struct run *r) {
  char err[512];
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/%d", r->o.pid);
  struct stat sb;
  if (stat(proc, &sb) != 0) return lens_cli_error(CMD, "no process with pid %d", r->o.pid);
  struct lens_sched_target *t = target_add(r, r->o.pid);
  uint64_t deadline = lens_sched_mono_ns() + REGISTRY_WAIT_NS;
  for (;;) {
    if (lens_sched_target_refresh(t, r->o.registry_dir, r->o.all_threads, err, sizeof err) >= 0) return 0;
    if (lens_proc_start_ticks(r->o.pid) == 0) return lens_cli_error(CMD, "process %d has exited", r->o.pid);
    /* A registry that is there but refused will not become the process's own by waiting. */
    if (t->refused) return lens_cli_error(CMD, "%s", err);
    /* The plugin writes its registry after the first init: give a process that
     * has it loaded a moment; anything else fails now. */
    if (lens_sched_maps_plugin(r->o.pid) != 1 || lens_sched_mono_ns() > deadline || stop_signal)
      return lens_cli_error(CMD, "%s; is it running with NCCL_PROFILER_PLUGIN=libnccl-profiler-lens.so? "
                                 "(--all-threads watches every thread instead)", err);
    usleep(100000);
  }
}

/* ---- samples, histograms, stats ---- */
/* The registry's roles of a watched thread (0 with --all-threads). */
static uint32_t roles_of(const struct run *r, uint32_t pid, uint32_t tid) {
  for (size_t i = 0; i < r->n_targets; i++)
    if (r->targets[i].host_pid == (int)pid)
      for (size_t k = 0; k < r->targets[i].n_tids; k++)
        if (r->targets[i].tids[k].host_tid == tid) return r->targets[i].tids[k].roles;
  return 0;
}

static void on_sample(void *ctx, const struct lens_bpf_sample *b) {
  struct run *r = ctx;
  struct lens_sched_sample s;
  memset(&s, 0, sizeof s);
  s.start_mono_ns = b->start_ns;
  s.end_mono_ns = b->end_ns;
  s.kind = b->kind;
  s.host_pid = b->pid;
  s.host_tid = b->tid;
  s.ns_tid = b->ns_tid;
  s.culprit_pid = b->culprit_pid;
  s.culprit_tid = b->culprit_tid;
  s.cpu = b->cpu;
  s.prev_state = b->prev_state;
  memcpy(s.culprit_comm, b->culprit_comm, sizeof s.culprit_comm);
  s.culprit_comm[sizeof s.culprit_comm - 1] = 0;
  lens_label_clean(s.culprit_comm, sizeof s.culprit_comm); /* another user's process name */
  lens_sched_trace_add(r->trace, &s);
  r->samples++;
  if (r->page) lens_sched_page_add(r->page, &s, roles_of(r, b->pid, b->tid));
}

static void write_page(struct run *r) {
  if (!r->page || lens_sched_page_write(r->page, r->page_dirfd, r->o.min_wait_ns) == 0) return;
  if (!r->page_failed++) note(r, NOTE_WARN, "cannot write the starvation page in %s: %s (the agent will not see it)",
                              r->o.page_dir, strerror(errno));
}

static void on_hist(void *ctx, const struct lens_bpf_hist_key *k, const struct lens_bpf_hist *h) {
  struct run *r = ctx;
  struct lens_sched_hist out;
  memset(&out, 0, sizeof out);
  out.host_tid = k->tid;
  out.kind = k->kind;
  memcpy(out.buckets, h->buckets, sizeof out.buckets);
  lens_sched_trace_hist(r->trace, &out);
}

static void print_stats(struct run *r, double seconds, const uint64_t cnt[LENS_CNT_N]) {
  struct lens_sched_prog_stats ps[3];
  int n = lens_sched_probe_prog_stats(r->probe, ps);
  printf("probe cost over %.2f s (kernel bpf_stats):\n", seconds);
  for (int i = 0; i < n; i++)
    printf("  %-14s %10llu runs  %8.0f runs/s  %7.1f ns/run\n", ps[i].name, (unsigned long long)ps[i].run_cnt,
           ps[i].run_cnt / seconds, ps[i].run_cnt ? (double)ps[i].run_time_ns / ps[i].run_cnt : 0.0);
  printf("  samples %llu, lost (ring buffer full) %llu, histogram updates lost %llu, watched threads %zu\n",
         (unsigned long long)cnt[LENS_CNT_SAMPLES], (unsigned long long)cnt[LENS_CNT_RINGBUF_FULL],
         (unsigned long long)cnt[LENS_CNT_HIST_FULL], r->n_cur);
  fflush(stdout);
}

/* Everything after option parsing; r->targets and trace are the caller's. */
static int run_probe(struct run *r, struct lens_sched_trace *trace) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal; /* no SA_RESTART: poll returns EINTR */
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  /* Privileges first: without them the target's registry (read through
   * /proc/<pid>/root) is unreadable too, and that message would mislead. */
  if (!lens_sched_has_bpf_caps())
    return lens_cli_error(CMD, "needs CAP_BPF and CAP_PERFMON, or root (run it with sudo, or give the binary those "
                               "capabilities)");
  if (r->o.pid && first_target(r) != 0) return 1;

  char err[512];
  struct lens_sched_probe_opts po = {.btf_path = r->o.btf, .min_wait_ns = r->o.min_wait_ns,
                                     .min_offcpu_ns = r->o.min_offcpu_ns, .verbose = r->o.verbose,
                                     .stats = r->o.stats};
  if (lens_sched_probe_open(&r->probe, &po, err, sizeof err) != 0) return lens_cli_error(CMD, "%s", err);
  if (lens_cli_make_dir(r->o.out_dir) != 0) { /* created (0755) as the other commands' outputs */
    lens_sched_probe_close(r->probe);
    return lens_cli_error(CMD, "cannot write to --out %s: %s", r->o.out_dir, strerror(errno));
  }
  if (lens_sched_trace_open(trace, r->o.out_dir, err, sizeof err) != 0) {
    lens_sched_probe_close(r->probe);
    return lens_cli_error(CMD, "%s", err);
  }
  r->trace = trace;
  if (r->page) {
    /* Checked once, used by descriptor: a directory swapped later is not ours to follow. */
    r->page_dirfd = lens_sched_page_open_dir(r->o.page_dir, r->o.page_dir_explicit, err, sizeof err);
    if (r->page_dirfd < 0) {
      note(r, NOTE_WARN, "not writing the starvation page: %s: %s (the agent will not see it)", r->o.page_dir, err);
      free(r->page);
      r->page = NULL;
    }
  }

  uint64_t t0 = lens_sched_mono_ns(), last_refresh = 0, last_scan = 0, last_flush = t0, last_page = t0;
  uint64_t end = r->o.duration_s > 0 ? t0 + (uint64_t)(r->o.duration_s * 1e9) : UINT64_MAX;
  refresh(r, 1);
  last_refresh = last_scan = t0;
  if (!r->o.quiet) {
    if (r->o.follow)
      printf("nccl-lens sched: following processes that load the nccl-lens plugin (%zu now, %zu threads); "
             "writing %s\n", r->n_targets, r->n_cur, trace->path);
    else
      printf("nccl-lens sched: watching %zu threads of pid %d; writing %s\n", r->n_cur, r->o.pid, trace->path);
    fflush(stdout);
  }

  const char *why = "duration reached";
  for (;;) {
    int rc = lens_sched_probe_poll(r->probe, 50, on_sample, r);
    if (stop_signal) {
      why = stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
      break;
    }
    if (rc < 0 && rc != -EINTR) {
      note(r, NOTE_WARN, "ring buffer poll failed: %s", strerror(-rc));
      why = "ring buffer error";
      break;
    }
    uint64_t now = lens_sched_mono_ns();
    if (now >= end) break;
    if (now - last_flush >= FLUSH_NS) {
      last_flush = now;
      lens_sched_trace_flush(trace); /* a kill loses at most this interval */
    }
    if (now - last_page >= PAGE_NS) {
      last_page = now;
      write_page(r);
    }
    if (now - last_refresh >= REFRESH_NS) {
      int scan = now - last_scan >= SCAN_NS;
      if (scan) last_scan = now;
      last_refresh = now;
      if (refresh(r, scan) != 0) {
        why = "target exited";
        break;
      }
    }
  }
  lens_sched_probe_poll(r->probe, 0, on_sample, r); /* what is left in the ring */
  write_page(r); /* the final totals stay for the agent (its --keep) */
  double seconds = (lens_sched_mono_ns() - t0) / 1e9;
  uint64_t cnt[LENS_CNT_N];
  lens_sched_probe_counters(r->probe, cnt);
  lens_sched_probe_hists(r->probe, on_hist, r);
  if (cnt[LENS_CNT_RINGBUF_FULL])
    note(r, NOTE_WARN, "%llu samples lost: the ring buffer was full (the loader fell behind)",
         (unsigned long long)cnt[LENS_CNT_RINGBUF_FULL]);
  lens_sched_trace_drops(trace, cnt[LENS_CNT_RINGBUF_FULL]);
  lens_sched_trace_close(trace, 1);
  if (!r->o.quiet) {
    fprintf(stderr, "nccl-lens sched: stopped (%s) after %.1f s: %llu samples in %s\n", why, seconds,
            (unsigned long long)r->samples, trace->path);
    lens_sched_print_report(stdout, trace->path);
  }
  if (r->o.stats) print_stats(r, seconds, cnt);
  lens_sched_probe_close(r->probe);
  if (r->page) close(r->page_dirfd);
  return 0;
}

int lens_cmd_sched(int argc, char **argv) {
  static struct run run;
  struct run *r = &run;
  memset(r, 0, sizeof *r);
  if (parse_opts(argc, argv, &r->o) != 0) return 2;
  r->targets = calloc(MAX_TARGETS, sizeof *r->targets);
  if (r->o.page_dir) r->page = calloc(1, sizeof *r->page);
  struct lens_sched_trace *trace = calloc(1, sizeof *trace); /* r->trace stays NULL until it is open */
  int rc = r->targets && trace ? run_probe(r, trace) : lens_cli_error(CMD, "out of memory");
  free(r->targets);
  free(r->page);
  free(trace);
  return rc;
}
#endif
