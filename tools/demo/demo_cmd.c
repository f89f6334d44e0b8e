/* nccl-lens demo [--out DIR] [--plugin PATH]: replay a 2-node x 2-rank
 * workload (every scenario) through our plugin, then export and summarise
 * what it recorded. Everything it writes goes under DIR
 * (./nccl-lens-demo by default). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "lens_exe_dir.h"
#include "lens_safe_fs.h"
#include "demo/demo_hooks.h"

#define CMD "demo"

__attribute__((weak)) int lens_cmd_replay(int argc, char **argv);
int lens_cmd_export(int argc, char **argv);
int lens_cmd_summary(int argc, char **argv);
int lens_cmd_job(int argc, char **argv);
int lens_cmd_report(int argc, char **argv);

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens demo [--out DIR] [--plugin PATH]\n"
             "  Replays a realistic 2-node x 2-rank NCCL workload (all scenarios) through the nccl-lens plugin,\n"
             "  then writes DIR/trace.json (open at https://ui.perfetto.dev), DIR/summary.txt and\n"
             "  DIR/summary.json. DIR defaults to ./nccl-lens-demo; traces go to DIR/traces.\n"
             "  Then a job with a late rank (job-late-app: rank 1 calls each AllReduce 20 ms late, the GPUs\n"
             "  coupled across processes) into DIR/late/traces, what nccl-lens job says of it (DIR/late/job.txt)\n"
             "  and its report page (DIR/late/report.html).\n");
}

static int file_exists(const char *p) {
  struct stat st;
  return !stat(p, &st) && S_ISREG(st.st_mode);
}

/* Next to the executable (installed layout: bin/nccl-lens, lib/...so), else the build tree's. */
static const char *find_plugin(char *buf, size_t len) {
  if (lens_lib_beside_exe("libnccl-profiler-lens.so", buf, len) == 0 && file_exists(buf)) return buf;
#ifdef LENS_PLUGIN_BUILD_PATH
  if (file_exists(LENS_PLUGIN_BUILD_PATH)) return LENS_PLUGIN_BUILD_PATH;
#endif
  return NULL;
}

/* DIR and DIR/traces: ours alone (created 0700 when missing; an existing
 * one owned by another user, writable by others or a symbolic link is
 * refused). The demo's files are written into them by the commands, whose
 * -o follows a symbolic link a user names: in a directory nobody else can
 * write, nobody else can plant one (./nccl-lens-demo in a shared /tmp). */
static int own_dir(const char *p) {
  char why[256];
  int fd = lens_dir_open(p, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why);
  if (fd < 0) return lens_cli_error(CMD, "%s: %s", p, why);
  close(fd);
  return 0;
}

/* Old traces in DIR/traces would mix into this run's export: remove them. */
static int list_traces(const char *dir, int remove_them, char ***out, size_t *n) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *e;
  size_t cap = 0;
  *n = 0;
  *out = NULL;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".lens")) continue;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (remove_them) {
      unlink(path);
      continue;
    }
    if (*n == cap) {
      cap = cap ? cap * 2 : 8;
      char **g = realloc(*out, cap * sizeof *g);
      if (!g) break;
      *out = g;
    }
    (*out)[(*n)++] = strdup(path);
  }
  closedir(d);
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int run_replay(const char *plugin, const char *traces, const char *truth) {
  const char *argv[32] = {"replay", "--plugin", plugin, "--scenario", "all", "--nodes", "2", "--ranks-per-node", "2",
                          "--out", traces, "--truth", truth, "--quiet"};
  int argc = 14;
  /* Starvation scenario from the probe's owner, when there is one. */
  const char *const *extra = lens_demo_sched_scenario ? lens_demo_sched_scenario() : NULL;
  for (size_t i = 0; extra && extra[i] && argc < 31; i++) argv[argc++] = extra[i];
  argv[argc] = NULL;
  return lens_cmd_replay(argc, (char **)argv);
}

/* A job with a late rank: the replay's GPUs are coupled across processes
 * only in its job scenarios (docs/replay.md), so `all` leaves most of the
 * job view's rows undecomposed ("-"); this one shows the view find the rank
 * the others waited for, and why, beside the truth. 20 ms late: what the
 * view can place on two cores (docs/replay.md, "A late rank the job view
 * can name"). */
static int run_late(const char *plugin, const char *traces, const char *truth) {
  const char *argv[] = {"replay", "--plugin", plugin, "--scenario", "job-late-app", "--nodes", "2", "--ranks-per-node",
                        "2", "--iters", "3", "--delay-us", "20000", "--out", traces, "--truth", truth, "--quiet", NULL};
  return lens_cmd_replay((int)(sizeof argv / sizeof *argv) - 1, (char **)argv);
}

/* The timeline and the summaries are written by the commands a user runs
 * next (`nccl-lens export`, `nccl-lens summary`), on the same directory: the
 * demo's files are their answers, not a second path to them (the summary
 * leads with the job view, as `nccl-lens summary` does). */
static int run_cmd(int (*cmd)(int, char **), const char *name, const char *flag, const char *out,
                   const char *traces) {
  const char *argv[6] = {name, "-o", out, traces, NULL, NULL};
  int argc = 4;
  if (flag) argv[3] = flag, argv[4] = traces, argc = 5;
  return cmd(argc, (char **)argv);
}

static int write_outputs(const char *dir, const char *traces) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/trace.json", dir);
  int rc = run_cmd(lens_cmd_export, "export", NULL, path, traces);
  for (int json = 0; json < 2 && !rc; json++) {
    snprintf(path, sizeof path, "%s/%s", dir, json ? "summary.json" : "summary.txt");
    rc = run_cmd(lens_cmd_summary, "summary", json ? "--json" : NULL, path, traces);
  }
  return rc ? lens_cli_error(CMD, "cannot write the timeline and summaries into %s", dir) : 0;
}

int lens_cmd_demo(int argc, char **argv) {
  const char *dir = "nccl-lens-demo", *plugin = NULL;
  for (int i = 1; i < argc; i++) {
    int r;
    if (lens_opt_flag(argv[i], "--help", 'h')) {
      usage(stdout);
      return 0;
    } else if ((r = lens_opt_val(CMD, &i, argc, argv, "--out", 'o', "a directory", &dir)) ||
               (r = lens_opt_val(CMD, &i, argc, argv, "--plugin", 0, "a plugin path", &plugin))) {
      if (r < 0) return 2;
      if (!*dir || (plugin && !*plugin)) return lens_cli_usage(CMD, "--out and --plugin want a path, not ''");
    } else {
      return lens_cli_usage(CMD, "unknown argument '%s'", argv[i]);
    }
  }
  if (!lens_cmd_replay) return lens_cli_error(CMD, "the replay driver is not built into this binary");
  char pbuf[PATH_MAX];
  if (!plugin && !(plugin = find_plugin(pbuf, sizeof pbuf)))
    return lens_cli_error(CMD, "cannot find libnccl-profiler-lens.so next to nccl-lens (use --plugin PATH)");
  if (!file_exists(plugin)) return lens_cli_error(CMD, "plugin %s does not exist", plugin);
  char traces[PATH_MAX], truth[PATH_MAX];
  snprintf(traces, sizeof traces, "%s/traces", dir);
  snprintf(truth, sizeof truth, "%s/truth.json", dir);
  if (own_dir(dir) || own_dir(traces)) return 1;
  char **files;
  size_t n;
  list_traces(traces, 1, &files, &n);

  double t0 = now_s();
  int probe = 0;
  if (lens_demo_sched_start) {
    char why[256] = "";
    probe = lens_demo_sched_start(traces, why, sizeof why) == 0;
    if (!probe) printf("note: scheduler probe not started: %s\n", why[0] ? why : "unavailable");
  }
  printf("replaying 2 nodes x 2 ranks (all scenarios) through %s ...\n", plugin);
  fflush(stdout);
  int rr = run_replay(plugin, traces, truth);
  if (probe && lens_demo_sched_stop) lens_demo_sched_stop();
  if (rr) return lens_cli_error(CMD, "the replay failed (exit %d)", rr);
  double t1 = now_s();

  if (list_traces(traces, 0, &files, &n) || !n)
    return lens_cli_error(CMD, "the replay wrote no traces into %s", traces);
  for (size_t i = 0; i < n; i++) free(files[i]);
  free(files);
  int rc = write_outputs(dir, traces);
  if (rc) return rc;
  double t2 = now_s();
  printf("recorded %zu trace files (replay %.1f s, export and summary %.1f s)\n\n", n, t1 - t0, t2 - t1);
  printf("  traces        %s/*.lens\n", traces);
  printf("  ground truth  %s\n", truth);
  printf("  timeline      %s/trace.json   -> open https://ui.perfetto.dev and drag the file in\n", dir);
  printf("                                   (or chrome://tracing > Load)\n");
  printf("  summary       %s/summary.txt  (JSON: %s/summary.json)\n", dir, dir);

  /* The late rank: a second, small job. Its failure is said, not the demo's. */
  char late[PATH_MAX], late_traces[PATH_MAX], late_truth[PATH_MAX], late_job[PATH_MAX], late_html[PATH_MAX];
  int l0 = snprintf(late, sizeof late, "%s/late", dir);
  int l1 = snprintf(late_traces, sizeof late_traces, "%s/traces", late);
  int l2 = snprintf(late_truth, sizeof late_truth, "%s/truth.json", late);
  int l3 = snprintf(late_job, sizeof late_job, "%s/job.txt", late);
  int l4 = snprintf(late_html, sizeof late_html, "%s/report.html", late);
  if (l0 < 0 || l1 < 0 || l2 < 0 || l3 < 0 || l4 < 0 || (size_t)l1 >= sizeof late_traces ||
      (size_t)l2 >= sizeof late_truth || (size_t)l3 >= sizeof late_job || (size_t)l4 >= sizeof late_html)
    return lens_cli_error(CMD, "%s: the path is too long", dir);
  if (own_dir(late) || own_dir(late_traces)) return 1;
  list_traces(late_traces, 1, &files, &n);
  fflush(stdout);
  if (run_late(plugin, late_traces, late_truth) || run_cmd(lens_cmd_job, "job", NULL, late_job, late_traces) ||
      run_cmd(lens_cmd_report, "report", "--html", late_html, late_traces)) {
    printf("  late rank     not written (the job-late-app replay, nccl-lens job or report failed: see above)\n\n");
  } else {
    printf("  late rank     %s  (nccl-lens job on a replay where rank 1 calls 20 ms late;\n", late_job);
    printf("                                   truth: %s)\n", late_truth);
    printf("  its report    %s  -> open in a browser: the verdict on top\n\n", late_html);
  }
  printf("next: nccl-lens summary %s/*.lens\n", traces);
  printf("      nccl-lens job %s\n", late_traces);
  return 0;
}
