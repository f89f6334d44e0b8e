/* See job_truth.h. The job view measures every duration on each GPU's own
 * clock; the truth is in host ns. So the expected values are the truth's
 * spans read on each rank's simulated GPU clock (x (1 + drift)), which is
 * what a perfect analysis would report. */
#include "job_truth.h"
#include "lens_test_proc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "mini_json.h"

#ifndef LENS_SANITIZER /* built into a benchmark too (bench/job), outside lens_add_test */
#define LENS_SANITIZER ""
#endif

#define THRESHOLD_NS 20000.0 /* LENS_JOB_MIN_WAIT_NS */
#define THRESHOLD_FRAC 0.02  /* LENS_JOB_MIN_WAIT_FRAC: the straggler threshold is max(20 us, 2 % of exec) */

/* The causes the job view gives a straggler (a late rank), docs/job.md. */
static int late_rank_cause(const char *cause) {
  static const char *const late[] = {"late_app_call", "slow_enqueue", "slow_launch", "gpu_busy", "unknown"};
  for (size_t i = 0; i < sizeof late / sizeof late[0]; i++)
    if (!strcmp(cause, late[i])) return 1;
  return 0;
}

/* CPUs the rest of the machine kept busy while the last job_run_replay
 * ran (-1: none ran). The 1-min load average lags by a minute: a test that
 * started on an idle machine beside a build that had just begun read it as
 * quiet, and its replay's proxies fell behind for the whole run (a link
 * named slow where none was). This is measured over the replay itself: the
 * machine's busy time (/proc/stat) less the replay's own CPU time
 * (RUSAGE_CHILDREN), over its wall time. */
static double g_other_cpus = -1;

int job_machine_overloaded(void) {
  double l = lens_test_load1();
  long n = lens_test_ncpu();
  if (l > 3.0 * (double)n) {
    fprintf(stderr, "load %.1f on %ld CPUs: naming rates not asserted (the simulated proxies stall)\n", l, n);
    return 1;
  }
  /* Three quarters of the CPUs busy with other work during the replay
   * (1.5 of this VM's 2: more than one test beside it, a build): one
   * process's proxies fall behind for whole instances. */
  if (g_other_cpus >= 0.75 * (double)(n > 0 ? n : 1)) {
    fprintf(stderr, "other work used %.2f of %ld CPUs during the replay: naming rates not asserted\n", g_other_cpus,
            n);
    return 1;
  }
  return 0;
}


int job_injection_held(const struct job_check *c) {
  size_t judged = c->instances - c->withheld;
  if (c->truth_last_x * 10 >= judged * 9) return 1;
  if (!job_machine_overloaded()) return 0;
  fprintf(stderr, "injected rank last in %zu of %zu instances on an overloaded machine: not asserted\n",
          c->truth_last_x, judged);
  return 1;
}

static double busy_s(void) { /* all CPUs' non-idle time (not iowait, not steal) */
  unsigned long long us = 0, ni = 0, sy = 0, id = 0, io = 0, irq = 0, sirq = 0;
  FILE *f = fopen("/proc/stat", "r");
  if (!f) return -1;
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &us, &ni, &sy, &id, &io, &irq, &sirq);
  fclose(f);
  long hz = sysconf(_SC_CLK_TCK);
  return n == 7 && hz > 0 ? (double)(us + ni + sy + irq + sirq) / (double)hz : -1;
}

static double children_s(void) {
  struct rusage u;
  getrusage(RUSAGE_CHILDREN, &u);
  return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

static double mono_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int job_machine_quiet(void) {
  if (!strcmp(LENS_SANITIZER, "thread")) { /* every simulated thread runs several times slower */
    fprintf(stderr, "TSan build: the quiet-machine rates are printed, not asserted\n");
    return 0;
  }
  long n = lens_test_ncpu();
  if (g_other_cpus >= 0.25 * (double)n) { /* half a CPU of this VM's 2 */
    fprintf(stderr, "other work used %.2f of %ld CPUs during the replay: the quiet-machine rates are printed, not "
                    "asserted\n",
            g_other_cpus, n);
    return 0;
  }
  double l = lens_test_load1();
  if (l >= (double)n) {
    fprintf(stderr, "load %.1f on %ld CPUs: the quiet-machine rates are printed, not asserted\n", l, n);
    return 0;
  }
  return 1;
}

int job_run_replay(const char *dir, const char *scenario, int nodes, int rpn, int iters, int delay_us) {
  return job_run_replay_with(dir, scenario, nodes, rpn, iters, delay_us, "");
}

int job_run_replay_with(const char *dir, const char *scenario, int nodes, int rpn, int iters, int delay_us,
                        const char *extra) {
  char cmd[3072];
  /* The replay's processes end with finalize and exit, which wait for the
   * plugin's writer at most NCCL_LENS_FLUSH_TIMEOUT_MS each (1 s, meant for
   * stalled mounts): on a loaded machine a trace could lose its end. Here
   * they wait as long as the writer takes (it returns when done). */
  snprintf(cmd, sizeof cmd,
           "NCCL_LENS_FLUSH_TIMEOUT_MS=30000 %s/bin/nccl-lens replay --scenario %s --nodes %d --ranks-per-node %d "
           "--iters %d --delay-us %d --out %s --truth %s/truth.json --quiet %s",
           LENS_BUILD_DIR, scenario, nodes, rpn, iters, delay_us, dir, dir, extra);
  double b0 = busy_s(), c0 = children_s(), w0 = mono_s();
  int rc = system(cmd);
  double b1 = busy_s(), c1 = children_s(), w1 = mono_s();
  g_other_cpus = b0 >= 0 && b1 >= 0 && w1 > w0 ? ((b1 - b0) - (c1 - c0)) / (w1 - w0) : -1;
  /* /proc/stat counts in ticks, RUSAGE_CHILDREN exactly: a little below 0
   * is rounding; far below, the measure is broken (unknown: the load
   * average alone decides) */
  if (g_other_cpus < 0) g_other_cpus = g_other_cpus > -0.2 ? 0 : -1;
  return rc;
}

static const struct mj *more; /* processes of the other hosts (job_check_dir's more_truth) */
uint64_t (*job_truth_comm_of_set)(int set);
int job_truth_host_clock_spans;

static double drift_of(const struct mj *truth, int rank) {
  if (job_truth_host_clock_spans) return 0;
  for (int t = 0; t < 2; t++) {
  const struct mj *procs = mj_get(t ? more : truth, "processes");
  for (size_t p = 0; procs && p < procs->n; p++) {
    const struct mj *rs = mj_get(mj_at(procs, p), "ranks");
    for (size_t i = 0; rs && i < rs->n; i++) {
      const struct mj *r = mj_at(rs, i);
      if (mj_int(r, "rank", -1) == rank) return mj_get(r, "gpu_drift_ppm")->num;
    }
  }
  }
  return 0;
}

/* The truth op of rank `rank` for collective seq on communicator set 0. */
static const struct mj *truth_op(const struct mj *truth, int rank, int64_t seq) {
  for (int t = 0; t < 2; t++) { /* this host's truth, then the other host's (job_check_dir's more_truth) */
    const struct mj *procs = mj_get(t ? more : truth, "processes");
    for (size_t p = 0; procs && p < procs->n; p++) {
      const struct mj *ops = mj_get(mj_at(procs, p), "ops");
      for (size_t i = 0; ops && i < ops->n; i++) {
        const struct mj *o = mj_at(ops, i);
        if (mj_int(o, "rank", -1) == rank && mj_int(o, "seqNumber", -2) == seq && mj_int(o, "comm", -1) < 8) return o;
      }
    }
  }
  return NULL;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* What really made the straggler late, from the driver's own record of its
 * launch bracket and kernel start (host ns): the injected cause, unless the
 * machine added a bigger delay of another kind (a launch call preempted for
 * ms on a loaded machine is a slow launch, whatever was injected). Same
 * rule as docs/job.md: the stage explaining at least half the lateness. */
static const char *actual_cause(const struct mj *truth, int rank, int nranks, int64_t seq, double late,
                                const char *injected) {
  const struct mj *o = truth_op(truth, rank, seq);
  if (!o) return injected;
  /* the launch's excess over the other ranks' median, as docs/job.md
   * defines slow_launch (a loaded machine slows every rank's launch now and then) */
  double others[64];
  int k = 0;
  for (int r = 0; r < nranks && k < 64; r++) {
    const struct mj *x = r == rank ? NULL : truth_op(truth, r, seq);
    if (x) others[k++] = (double)(mj_int(x, "launch_end_ns", 0) - mj_int(x, "launch_start_ns", 0));
  }
  qsort(others, (size_t)k, sizeof *others, cmp_d);
  double launch = (double)(mj_int(o, "launch_end_ns", 0) - mj_int(o, "launch_start_ns", 0)) - (k ? others[k / 2] : 0);
  double gpu = (double)(mj_int(o, "kernel_start_ns", 0) - mj_int(o, "launch_end_ns", 0));
  if (launch >= gpu && 2 * launch >= late) return "slow_launch";
  if (2 * gpu >= late) return "gpu_busy";
  return "late_app_call";
}

static const struct mj *find_coll(const struct mj *job, uint64_t comm, int64_t seq) {
  const struct mj *cs = mj_get(job, "collectives");
  for (size_t i = 0; cs && i < cs->n; i++) {
    const struct mj *c = mj_at(cs, i);
    if (mj_int(c, "seq", -2) == seq && strtoull(mj_str(c, "comm_id"), NULL, 16) == comm) return c;
  }
  return NULL;
}

/* The flag under which the job view gives an instance no execution (docs/job.md
 * "Flags": ends_apart, its clock maps disagree beyond their error bounds; no_span),
 * NULL when it has none of them. */
static const char *withheld_flag(const struct mj *coll) {
  const struct mj *flags = mj_get(coll, "flags");
  for (size_t i = 0; flags && i < flags->n; i++) {
    const struct mj *f = mj_at(flags, i);
    if (f && f->type == MJ_STR && (!strcmp(f->str, "ends_apart") || !strcmp(f->str, "no_span"))) return f->str;
  }
  return NULL;
}

static int64_t rank_field(const struct mj *ranks, int rank, const char *key) {
  for (size_t i = 0; ranks && i < ranks->n; i++)
    if (mj_int(mj_at(ranks, i), "rank", -1) == rank) return mj_int(mj_at(ranks, i), key, -1);
  return -1;
}

int job_check_dir(const char *dir, const char *truth_path, const char *more_truth, struct job_check *c) {
  memset(c, 0, sizeof *c);
  c->top_straggler = -1;
  char cmd[1024], jp[600];
  snprintf(jp, sizeof jp, "%s/job.json", dir);
  snprintf(cmd, sizeof cmd, "%s/bin/nccl-lens job --json -o %s %s", LENS_BUILD_DIR, jp, dir);
  if (system(cmd) != 0) return -1;
  struct mj *truth = mj_parse_file(truth_path), *job = mj_parse_file(jp);
  struct mj *other = more_truth ? mj_parse_file(more_truth) : NULL;
  more = other;
  if (!truth || !job) {
    mj_free(truth), mj_free(job);
    return -1;
  }
  const struct mj *insts = mj_get(truth, "instances");
  const struct mj *st = mj_get(job, "stragglers");
  if (st && st->n) c->top_straggler = (int)mj_int(mj_at(st, 0), "rank", -1);
  for (size_t i = 0; insts && i < insts->n; i++) {
    const struct mj *t = mj_at(insts, i);
    c->instances++;
    snprintf(c->cause, sizeof c->cause, "%s", mj_str(t, "cause"));
    c->straggler = (int)mj_int(t, "straggler", -1);
    c->peer = (int)mj_int(t, "link_peer", -1);
    uint64_t comm = job_truth_comm_of_set ? job_truth_comm_of_set((int)mj_int(t, "set", 0))
                                          : strtoull(mj_str(t, "comm_id"), NULL, 16);
    const struct mj *j = find_coll(job, comm, mj_int(t, "seq", -1));
    const struct mj *tr = mj_get(t, "ranks");
    if (!j || mj_int(j, "ranks_seen", 0) != (int64_t)tr->n) continue;
    c->matched++;
    int last = (int)mj_int(t, "last_rank", -1);
    const struct mj *jexec = mj_get(j, "exec_ns");
    const char *why = withheld_flag(j);
    if ((!jexec || jexec->type != MJ_NUM) && why) {
      c->withheld++;
      fprintf(stderr, "  seq %lld: withheld by the view (%s: no execution, waits or cause), truth exec %lld ns\n",
              (long long)mj_int(t, "seq", -1), why, (long long)mj_int(t, "exec_ns", 0));
      continue;
    }
    double dl = drift_of(truth, last) * 1e-6;
    double exec = (double)mj_int(t, "exec_ns", 0) * (1 + dl);
    double got = (double)mj_int(j, "exec_ns", -1);
    if (fabs(got - exec) <= fmax(2000, 0.01 * exec)) c->exec_ok++;
    int waits_ok = 1;
    double max_wait = 0;
    /* Ranks that arrive together (a slow link's instances) are told apart
     * by their GPU clocks' drifts: which is last, and so each wait, may
     * differ from the truth's by the drifts' spread over the span (40 ppm
     * over an 81 ms instance: 3.2 us). */
    double dmin = 0, dmax = 0;
    for (size_t k = 0; k < tr->n; k++) {
      double d = drift_of(truth, (int)mj_int(mj_at(tr, k), "rank", -1));
      if (!k || d < dmin) dmin = d;
      if (!k || d > dmax) dmax = d;
    }
    for (size_t k = 0; k < tr->n; k++) {
      const struct mj *r = mj_at(tr, k);
      int rank = (int)mj_int(r, "rank", -1);
      double span = (double)mj_int(r, "span_ns", 0) * (1 + drift_of(truth, rank) * 1e-6);
      double want = span - exec;
      if (want < 0) want = 0;
      if (want > max_wait) max_wait = want;
      double tol = 2000 + exec * (dmax - dmin) * 1e-6;
      int64_t got_wait = rank_field(mj_get(j, "ranks"), rank, "wait_ns"); /* -1: absent or null, never right */
      if (got_wait < 0 || fabs((double)got_wait - want) > tol) waits_ok = 0;
    }
    c->wait_ok += waits_ok;
    const char *cause = mj_str(j, "cause");
    int crank = (int)mj_int(j, "cause_rank", -1);
    if (!strcmp(c->cause, "slow_link")) {
      int right = !strcmp(cause, "slow_link") && crank == c->straggler && mj_int(j, "cause_peer", -1) == c->peer;
      /* A rank the loaded machine made late (an app thread descheduled for
       * ms): the job view names the straggler there and judges links only
       * where no rank is late (docs/job.md "Causes"); the truth's own waits
       * say whether one was, with the tolerance of the waits above and the
       * view's execution (its threshold's base) within 1 %. */
      double tol = 2000 + exec * (dmax - dmin) * 1e-6;
      int straggler = max_wait + tol >= fmax(THRESHOLD_NS, THRESHOLD_FRAC * 0.99 * exec) && last >= 0;
      if (right)
        c->link_named++;
      else if (!strcmp(cause, "slow_link"))
        c->link_wrong++;
      else if (straggler && crank == last && late_rank_cause(cause))
        c->link_straggler++;
      if (!right)
        fprintf(stderr, "  seq %lld: named %s %d->%lld (x%.1f), truth slow link %d->%d, max wait %.0f ns (%s %d)\n",
                (long long)mj_int(t, "seq", -1), cause, crank, (long long)mj_int(j, "cause_peer", -1),
                (double)mj_int(j, "cause_excess_ns", 0) / 1000, c->straggler, c->peer, max_wait,
                straggler ? "a straggler: last rank" : "no straggler; last rank", last);
    } else if (c->straggler >= 0 && last == c->straggler && max_wait >= THRESHOLD_NS) {
      c->truth_last_x++;
      const char *want = actual_cause(truth, last, (int)tr->n, mj_int(t, "seq", -1), max_wait, c->cause);
      c->injected_named += !strcmp(cause, c->cause) && crank == c->straggler;
      if (!strcmp(cause, want) && crank == c->straggler) c->named_right++;
      /* the excess a stage is credited with is how late this instance's
       * straggler was, as far as the stage explains it: per instance, not
       * the time a GPU queue or a blocking launch accumulated over the run */
      if (crank == c->straggler &&
          (!strcmp(cause, "slow_enqueue") || !strcmp(cause, "slow_launch") || !strcmp(cause, "gpu_busy"))) {
        double ex = (double)mj_int(j, "cause_excess_ns", 0);
        if (ex > max_wait + fmax(2000, 0.01 * max_wait) || 2 * ex + 4000 < max_wait) {
          c->excess_off++;
          fprintf(stderr, "  seq %lld: %s excess %.1f us, truth: rank %d was %.1f us late\n",
                  (long long)mj_int(t, "seq", -1), cause, ex / 1e3, c->straggler, max_wait / 1e3);
        }
      }
      else if (!strcmp(cause, "unknown") && crank == c->straggler) {
        c->undecided++;
        double map_err = (double)rank_field(mj_get(j, "ranks"), crank, "map_err_ns");
        if (map_err * 4 >= max_wait) c->undecided_coarse++;
        fprintf(stderr, "  seq %lld: unknown with the last rank's clock map bound %.0f ns (%s)\n",
                (long long)mj_int(t, "seq", -1), map_err, map_err * 4 >= max_wait ? "coarse" : "fine");
      }
      if (strcmp(cause, want) || crank != c->straggler)
        fprintf(stderr, "  seq %lld: named %s rank %d (excess %lld ns), truth %s (injected %s) rank %d, wait %.0f ns\n",
                (long long)mj_int(t, "seq", -1), cause, crank, (long long)mj_int(j, "cause_excess_ns", 0), want, c->cause,
                c->straggler, max_wait);
    }
    if (max_wait < THRESHOLD_NS / 2 && strcmp(c->cause, "slow_link")) {
      c->quiet++;
      if (!strcmp(cause, "slow_link") || !strcmp(cause, "starved_proxy")) {
        c->quiet_link++;
        fprintf(stderr, "  seq %lld: no straggler (max wait %.0f ns), named %s %d->%lld (%lld)\n",
                (long long)mj_int(t, "seq", -1), max_wait, cause, crank, (long long)mj_int(j, "cause_peer", -1),
                (long long)mj_int(j, "cause_excess_ns", 0));
      } else if (strcmp(cause, "none")) {
        c->quiet_named++;
        fprintf(stderr, "  seq %lld: no straggler (max wait %.0f ns) but named %s %d->%lld (%lld)\n",
                (long long)mj_int(t, "seq", -1), max_wait, cause, crank, (long long)mj_int(j, "cause_peer", -1),
                (long long)mj_int(j, "cause_excess_ns", 0));
      }
    }
  }
  mj_free(truth);
  mj_free(job);
  mj_free(other);
  more = NULL;
  return 0;
}
