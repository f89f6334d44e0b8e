/* lens_replay_run: one process per node. --nodes 1 runs in the caller;
 * more fork one child per node before anything is loaded, and the parent
 * gathers their results and truth parts into one JSON file. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "replay/rp_couple.h"
#include "replay/rp_job.h"
#include "replay/rp_node.h"

void lens_replay_opts_init(struct lens_replay_opts *o) {
  memset(o, 0, sizeof *o);
  o->scenario = "allreduce";
  o->ranks_per_node = 2;
  o->nodes = 1;
  o->iters = 3;
  o->api = LENS_REPLAY_API_NCCL2289;
  o->seed = 1;
  o->straggler = -1;
  o->node = -1;
}

/* What the scenario cannot do with these options, said instead of running something else: a
 * straggler that is no rank, CE collectives through an API that has none, net-*, hang-proxy or
 * job-slow-link on one node, where no inter-node link has proxy ops. NULL: fine. */
static const char *unhonoured(const struct lens_replay_opts *o, char *buf, size_t len) {
  int nranks = o->nodes * o->ranks_per_node;
  bool job = rp_job_kind_of(o->scenario) != RP_JOB_OFF;
  if (o->straggler >= 0 && !job) return "--straggler is for job-* scenarios";
  if (o->straggler == LENS_REPLAY_STRAGGLER_ROTATE && !job) return "--straggler rotate is for job-* scenarios";
  if (o->straggler != -1 && rp_job_kind_of(o->scenario) == RP_JOB_STARVED_PROXY)
    return "--straggler: job-starved-proxy always starves rank 0's proxy";
  if (o->straggler >= nranks) {
    snprintf(buf, len, "--straggler %d is not a rank of the %d ranks (0..%d)", o->straggler, nranks, nranks - 1);
    return buf;
  }
  if (!strcmp(o->scenario, "ce") && o->api != LENS_REPLAY_API_AUTO && o->api < 6)
    return "scenario ce needs --api 6, 7 or auto (v4, v5 have no CE collectives)";
  /* A frozen proxy, a network fault or a slow link act on inter-node proxy ops only; a missing
   * rank (hang-missing, hang-graph) needs another rank to wait for it. */
  bool multi = !strcmp(o->scenario, "hang-proxy") || !strncmp(o->scenario, "net-", 4) ||
               rp_job_kind_of(o->scenario) == RP_JOB_SLOW_LINK;
  if (multi && o->nodes < 2) {
    snprintf(buf, len, "scenario %s needs --nodes 2+ (one node has no network)", o->scenario);
    return buf;
  }
  if (rp_hang_known(o->scenario) && nranks < 2) {
    snprintf(buf, len, "scenario %s needs 2 ranks or more (one hangs, one waits)", o->scenario);
    return buf;
  }
  return NULL;
}

static int check_opts(const struct lens_replay_opts *o) {
  const char *why = NULL;
  static char buf[160];
  if (!o->plugin || !*o->plugin) why = "no plugin given";
  else if (!o->scenario || !rp_scenario_known(o->scenario)) why = "unknown scenario";
  else if (o->ranks_per_node < 1 || o->ranks_per_node > RP_MAX_LOCAL) why = "--ranks-per-node must be 1..16";
  else if (o->nodes < 1 || o->nodes > 16) why = "--nodes must be 1..16";
  else if (o->iters < 1 || o->iters > 1000) why = "--iters must be 1..1000";
  else if (o->api != 0 && o->api != -1 && (o->api < 4 || o->api > 7)) why = "--api must be 4, 5, 6, 7 or auto";
  else if (o->node >= o->nodes) why = "--node must be below --nodes";
  else if ((o->node >= 0) != (o->board != NULL)) why = "--node and --board go together";
  else if (o->kineto_2023 && !o->kineto_dir) why = "--kineto-layout goes with --kineto DIR";
  else if (o->board && rp_job_kind_of(o->scenario) == RP_JOB_OFF) why = "--board needs a job-* scenario";
  else why = unhonoured(o, buf, sizeof buf);
  if (why && !strcmp(why, "unknown scenario"))
    fprintf(stderr, "nccl-lens replay: unknown scenario '%s' (allreduce, sendrecv, mixed, graph, pxn, starved, overrun, "
                    "tagged, symmetric, phases, all, hang-missing, hang-proxy, hang-graph, job-none, job-late-app, "
                    "job-slow-launch, job-gpu-busy, job-slow-link, job-starved-proxy, net-even, net-slow-link, net-gpu-bound, "
                    "net-slow-recv, net-ib; try 'nccl-lens replay --help')\n",
            o->scenario ? o->scenario : "");
  else if (why)
    fprintf(stderr, "nccl-lens replay: %s (try 'nccl-lens replay --help')\n", why);
  return why ? 2 : 0;
}

static void truth_header(const struct lens_replay_opts *o, FILE *f) {
  fprintf(f, "{\"schema\":\"nccl-lens-replay-truth/1\",\"clock\":\"CLOCK_MONOTONIC_ns\",");
  fprintf(f, "\"gpu_clock\":\"gpu_ns = offset_ns + host_ns + host_ns*drift_ppm*1e-6\",");
  fprintf(f, "\"scenario\":\"%s\",\"requested_plugin\":\"%s\",\"nodes\":%d,\"ranks_per_node\":%d,\"nranks\":%d,",
          o->scenario, o->plugin, o->nodes, o->ranks_per_node, o->nodes * o->ranks_per_node);
  fprintf(f, "\"iters\":%d,\"seed\":%" PRIu64 ",\"api_choice\":%d,\"no_finalize\":%s,\"reload\":%s,", o->iters,
          o->seed, o->api, o->no_finalize ? "true" : "false", o->reload ? "true" : "false");
  fprintf(f, "\"mask_change\":%s,\n\"processes\":[\n", o->mask_change ? "true" : "false");
}

static void add_result(struct lens_replay_result *to, const struct lens_replay_result *r) {
  if (r->api) to->api = r->api;
  to->warn_count += r->warn_count;
  to->init_failures += r->init_failures;
  to->calls += r->calls;
  to->kernel_ch += r->kernel_ch;
  to->overruns += r->overruns;
  to->processes += 1;
}

static int copy_file(const char *from, FILE *to) {
  FILE *f = fopen(from, "r");
  if (!f) return -1;
  char buf[65536];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, k, to);
  fclose(f);
  return 0;
}

static int run_forked(const struct lens_replay_opts *o, FILE *truth, struct lens_replay_result *res) {
  pid_t pids[16];
  int fds[16];
  char parts[16][1100];
  fflush(NULL);
  for (int i = 0; i < o->nodes; i++) {
    int p[2];
    if (pipe(p) != 0) return 1;
    snprintf(parts[i], sizeof parts[i], "%s.node%d.part", o->truth ? o->truth : "/tmp/replay", i);
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      struct lens_replay_result r = {0};
      FILE *tf = o->truth ? fopen(parts[i], "w") : NULL; /* nofollow-ok: beside --truth FILE, named on the command line */
      int rc = rp_node_run(o, i, tf, &r);
      if (tf) fclose(tf);
      ssize_t w = write(p[1], &r, sizeof r);
      (void)w;
      close(p[1]);
      fflush(NULL);
      /* A process that ends normally runs its at-exit handlers, the plugin's
       * last flush among them (end marker, registry removed), as NCCL's
       * processes do; a hang scenario plays a killed job, which does not. */
      if (!strncmp(o->scenario, "hang-", 5)) _exit(rc);
      exit(rc);
    }
    close(p[1]);
    pids[i] = pid;
    fds[i] = p[0];
  }
  int rc = 0;
  for (int i = 0; i < o->nodes; i++) {
    struct lens_replay_result r = {0};
    ssize_t k = read(fds[i], &r, sizeof r);
    close(fds[i]);
    int st = 0;
    while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR) {
    }
    bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && k == (ssize_t)sizeof r;
    if (!ok) {
      if (WIFSIGNALED(st))
        fprintf(stderr, "nccl-lens replay: node %d process died of signal %d\n", i, WTERMSIG(st));
      else
        fprintf(stderr, "nccl-lens replay: node %d process failed (status 0x%x)\n", i, st);
      rc = 1;
    } else {
      add_result(res, &r);
    }
    if (truth) { /* a crashed child's part may be half written: null instead */
      if (i) fputs(",\n", truth);
      /* a child that exited after sending its result closed its part first:
       * a failed hang's truth is whole, and says why (frozen_ns 0) */
      struct stat pst;
      bool whole = WIFEXITED(st) && k == (ssize_t)sizeof r && stat(parts[i], &pst) == 0 && pst.st_size > 0;
      if (!whole || copy_file(parts[i], truth) != 0) fputs("null", truth);
    }
    if (o->truth) unlink(parts[i]); /* without --truth no part was written: /tmp/replay.node<i>.part is not ours */
  }
  return rc;
}

int lens_replay_run(const struct lens_replay_opts *o, struct lens_replay_result *res) {
  struct lens_replay_result local = {0};
  if (!res) res = &local;
  memset(res, 0, sizeof *res);
  if (check_opts(o) != 0) return 2;
  FILE *truth = NULL;
  if (o->truth) {
    truth = fopen(o->truth, "w"); /* nofollow-ok: --truth FILE, named on the command line */
    if (!truth) {
      fprintf(stderr, "nccl-lens replay: cannot write %s: %s\n", o->truth, strerror(errno));
      return 2;
    }
    truth_header(o, truth);
  }
  int rc;
  /* Job scenarios couple the GPUs of every process through one board. */
  bool job = rp_job_kind_of(o->scenario) != RP_JOB_OFF;
  char err[600] = "";
  rp_board_current = !job ? NULL : o->board ? rp_board_file(o->board, err, sizeof err) : rp_board_anon();
  if (job && !rp_board_current) {
    fprintf(stderr, "nccl-lens replay: %s\n", err[0] ? err : "no shared memory for the board");
    if (truth) fclose(truth);
    return 1;
  }
  if ((o->nodes == 1 && !rp_hang_known(o->scenario)) || o->node >= 0) { /* a hang ends its process: always a child */
    struct lens_replay_result r = {0};
    rc = rp_node_run(o, o->node >= 0 ? o->node : 0, truth, &r);
    add_result(res, &r);
  } else {
    rc = run_forked(o, truth, res);
  }
  if (truth) {
    fputs("\n]", truth);
    if (rp_board_current && o->node <= 0) {
      /* node 0 of a multi-host run writes the instances once every host is done */
      for (int i = 0; i < 60000 && o->node == 0 && atomic_load(&rp_board_current->procs_done) < o->nodes; i++)
        usleep(1000);
      rp_couple_write_instances(rp_board_current, o, truth);
    }
    fputs("}\n", truth);
    fclose(truth);
  }
  rp_board_unmap(rp_board_current);
  rp_board_current = NULL;
  return rc;
}
