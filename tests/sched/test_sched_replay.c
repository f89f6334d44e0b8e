/* End to end with the replay driver's `starved` scenario (docs/replay.md):
 * local rank 0's proxy runs NCCL's busy loop on one CPU with busy hogs for
 * part of the run; the app thread and the other proxy run elsewhere. The
 * hogs' tids and interval and, per KernelCh, the GPU, post and notice times
 * are in the ground truth. `nccl-lens sched --follow` runs alongside; then,
 * from the plugin's and the probe's traces:
 *   - samples only on the replay's proxy threads (its app, callback, writer
 *     and hog threads are not watched);
 *   - waits on the starved proxy with one of its hogs as culprit, inside the
 *     hog interval;
 *   - the KernelCh starvation flags against the truth: recall and precision
 *     at least 0.90 (docs/sched.md).
 * Twice: as NCCL 2.28.9 (the proxy polls KernelCh) and as NCCL 2.31.2 (--api 7:
 * its profiler thread polls KernelCh; that thread is the one starved, in the
 * registry with the profiler role, watched by `sched`, and blamed). */
#define _GNU_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "nccl-lens/nccl_profiler_abi.h"
#include "nccl-lens/trace_format.h"
#include "analysis/analyses.h"
#include "reader/lensread.h"
#include "analysis/sched/starvation.h"
#include "sched/sched_page.h"
#include "sched_test_util.h"
#include "../lens_test_tmp.h"
#include "../lens_test_file.h"

#define MAX_STARVE 16
#define SLACK_NS 20000000ll   /* hogs stop within a scheduler slice of end_ns */
#define LATE_NS 100000ll    /* a KernelCh held back this long (lag_of) was starved */
#define MIN_WAIT_NS 10000ull /* waits the analysis counts: all the probe records */
#define MATCH_NS 50000ll      /* truth notice vs the plugin's stop time */

struct starve { long proxy_tid, hog[8], nhogs; long long start_ns, end_ns; };
static struct starve st[MAX_STARVE];
static int n_st;
static long replay_pid;
static long proxy_tids[16]; /* every proxy (and 2.31 profiler) thread of the replay (ranks[].proxy_tid, profiler_tid) */
static int n_proxies;

/* A KernelCh as the driver played it: when the GPU really stopped, when the proxy noticed. */
struct kch { long proxy_tid; long long true_start_ns, notice_start_ns, true_stop_ns, notice_stop_ns, posted_ns; };
#define MAX_KCH 32768
static struct kch kch[MAX_KCH];
static int n_kch;

/* Integer value of "key": inside [p, end). */
static int json_int(const char *p, const char *end, const char *key, long long *v) {
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *q = strstr(p, k);
  if (!q || q >= end) return -1;
  *v = strtoll(q + strlen(k), NULL, 10);
  return 0;
}

/* The parts of the truth this test needs: pid and the starvation records. */
static void parse_truth(const char *text) {
  const char *procs = strstr(text, "\"processes\"");
  assert_non_null(procs);
  long long v;
  assert_int_equal(json_int(procs, procs + strlen(procs), "pid", &v), 0);
  replay_pid = (long)v;
  const char *p = strstr(procs, "\"starvation\":[");
  assert_non_null(p);
  const char *arr_end = strchr(p, ']');
  arr_end = strchr(arr_end + 1, ']'); /* the first ']' closes a hog_tids list */
  for (const char *o = strchr(p, '{'); o && n_st < MAX_STARVE; o = strchr(o + 1, '{')) {
    const char *e = strchr(o, '}');
    if (!e || (strstr(p, "],\n") && o > strstr(p, "\"mask_changes\""))) break;
    struct starve *s = &st[n_st];
    if (json_int(o, e, "proxy_tid", &v)) break;
    s->proxy_tid = (long)v;
    json_int(o, e, "start_ns", &s->start_ns);
    json_int(o, e, "end_ns", &s->end_ns);
    const char *h = strstr(o, "\"hog_tids\":[");
    for (h = h ? h + 12 : NULL; h && *h != ']' && s->nhogs < 8;) {
      char *q;
      long t = strtol(h, &q, 10);
      if (q == h) break;
      s->hog[s->nhogs++] = t;
      h = *q == ',' ? q + 1 : q;
    }
    n_st++;
    o = e;
  }
  (void)arr_end;

  const char *r = strstr(procs, "\"ranks\":[");
  assert_non_null(r);
  const char *r_end = strstr(r, "\"ops\":[");
  assert_non_null(r_end);
  for (const char *q = strstr(r, "\"proxy_tid\":"); q && q < r_end && n_proxies < 16; q = strstr(q + 1, "\"proxy_tid\":"))
    proxy_tids[n_proxies++] = strtol(q + 12, NULL, 10);
  for (const char *q = strstr(r, "\"profiler_tid\":"); q && q < r_end && n_proxies < 16;
       q = strstr(q + 1, "\"profiler_tid\":"))
    proxy_tids[n_proxies++] = strtol(q + 15, NULL, 10);

  const char *k = strstr(procs, "\"kernel_ch\":[");
  assert_non_null(k);
  const char *k_end = strstr(k, "\"hazards\"");
  assert_non_null(k_end);
  for (const char *o = strchr(k, '{'); o && o < k_end && n_kch < MAX_KCH; o = strchr(o + 1, '{')) {
    const char *e = strchr(o, '}');
    const char *stopped = strstr(o, "\"stopped\":true");
    if (!stopped || stopped > e) continue;
    json_int(o, e, "proxy_tid", &v);
    kch[n_kch].proxy_tid = (long)v;
    json_int(o, e, "true_start_ns", &kch[n_kch].true_start_ns);
    json_int(o, e, "notice_start_ns", &kch[n_kch].notice_start_ns);
    json_int(o, e, "true_stop_ns", &kch[n_kch].true_stop_ns);
    json_int(o, e, "notice_stop_ns", &kch[n_kch].notice_stop_ns);
    json_int(o, e, "posted_ns", &kch[n_kch].posted_ns);
    n_kch++;
  }
}

static int is_hog_of(const struct starve *s, uint32_t tid) {
  for (int k = 0; k < s->nhogs; k++)
    if ((uint32_t)s->hog[k] == tid) return 1;
  return 0;
}

static const struct starve *starve_of(uint32_t proxy_tid) {
  for (int i = 0; i < n_st; i++)
    if ((uint32_t)st[i].proxy_tid == proxy_tid) return &st[i];
  return NULL;
}

/* How long the proxy failed to notice what it could have noticed: the union
 * of [max(GPU start, posted) .. start notice] and [max(GPU stop, posted) ..
 * stop notice]. The proxy cannot notice anything before the app thread
 * posted the pseudo-op; after that, a proxy that polls without napping
 * notices within a pass (microseconds) unless it cannot run. These are the
 * analysis's KernelCh windows, started no earlier than the post. */
static long long lag_of(const struct kch *k) {
  long long s0 = k->true_start_ns > k->posted_ns ? k->true_start_ns : k->posted_ns;
  long long s1 = k->true_stop_ns > k->posted_ns ? k->true_stop_ns : k->posted_ns;
  long long a = k->notice_start_ns > s0 ? k->notice_start_ns - s0 : 0;
  long long b = k->notice_stop_ns > s1 ? k->notice_stop_ns - s1 : 0;
  if (s1 < k->notice_start_ns) /* the two overlap: one interval */
    return k->notice_stop_ns - (s0 < s1 ? s0 : s1);
  return a + b;
}

/* Start of the probe's first sample on thread tid (host ids), -1 if none. */
static long long watch_from(uint32_t tid, const struct lens_model *m) {
  long long from = -1;
  for (size_t i = 0; i < m->n_sched; i++) {
    const struct lens_sched_sample *s = &m->sched[i].s;
    if (s->host_pid == (uint32_t)replay_pid && s->host_tid == tid && (from < 0 || (long long)s->start_mono_ns < from))
      from = (long long)s->start_mono_ns;
  }
  return from;
}

struct evkey { uint32_t tid; long long stop; const struct lens_event *e; };

static int by_tid_stop(const void *a, const void *b) {
  const struct evkey *x = a, *y = b;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return x->stop < y->stop ? -1 : x->stop > y->stop;
}

/* The plugin's KernelCh on the truth's proxy thread whose stop is nearest the
 * truth's stop notice, within MATCH_NS; NULL if none. */
static const struct lens_event *match_kch(const struct evkey *ek, size_t n, const struct kch *k) {
  size_t lo = 0, hi = n;
  struct evkey key = {(uint32_t)k->proxy_tid, k->notice_stop_ns, NULL};
  while (lo < hi) { /* first entry >= key */
    size_t mid = (lo + hi) / 2;
    if (by_tid_stop(&ek[mid], &key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  const struct lens_event *best = NULL;
  long long best_d = MATCH_NS;
  for (size_t j = lo > 0 ? lo - 1 : 0; j < n && j <= lo; j++) {
    if (ek[j].tid != key.tid) continue;
    long long d = ek[j].stop - key.stop;
    if (d < 0) d = -d;
    if (d < best_d) {
      best_d = d;
      best = ek[j].e;
    }
  }
  return best;
}

static int list_traces(const char *dir, char paths[][512], int max) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int n = 0;
  while (d && (de = readdir(d)) && n < max) {
    size_t l = strlen(de->d_name);
    if (l > 5 && !strcmp(de->d_name + l - 5, ".lens")) snprintf(paths[n++], 512, "%s/%s", dir, de->d_name);
  }
  if (d) closedir(d);
  return n;
}

/* The starvation page for the agent (tools/sched/sched_page.h): per thread,
 * the trace's samples summed, exactly; and `nccl-lens agent` exports them. */
static void check_page(const struct lens_model *m, const char *regdir, pid_t loader, const char *api) {
  static struct lens_sched_page page;
  char path[512];
  snprintf(path, sizeof path, "%s/%d.sched", regdir, (int)loader);
  uint32_t writer = 0;
  uint64_t updated = 0;
  assert_int_equal(lens_sched_page_read(path, &page, &writer, &updated), 0);
  assert_int_equal(writer, (uint32_t)loader);
  int starved_seen = 0;
  for (size_t i = 0; i < page.n; i++) {
    const struct lens_sched_page_thread *t = &page.t[i];
    uint64_t runq = 0, pre = 0, nr = 0, np = 0;
    for (size_t k = 0; k < m->n_sched; k++) {
      const struct lens_sched_sample *s = &m->sched[k].s;
      if (s->host_pid != t->pid || s->host_tid != t->tid) continue;
      if (s->kind == LENS_SCHED_RUNQ_WAIT) runq += s->end_mono_ns - s->start_mono_ns, nr++;
      if (s->kind == LENS_SCHED_PREEMPT) pre += s->end_mono_ns - s->start_mono_ns, np++;
    }
    assert_int_equal(t->runq_ns, runq);
    assert_int_equal(t->preempt_ns, pre);
    assert_int_equal(t->runq_waits, nr);
    assert_int_equal(t->preempt_waits, np);
    for (int k = 0; k < n_st; k++)
      if ((long)t->tid == st[k].proxy_tid) {
        starved_seen++;
        assert_true(t->runq_ns + t->preempt_ns > 0);
        assert_true(t->roles & (!strcmp(api, "7") ? LENS_ROLE_PROFILER : LENS_ROLE_PROXY));
        /* the agent: the same seconds, labelled with the thread's role */
        static char out[8 << 20], err[65536];
        char keep[] = "600";
        char *aargv[] = {LENS_CLI, "agent", "--once", "--dir", (char *)regdir, "--keep", keep, NULL};
        assert_int_equal(sched_run(aargv, 0, err, sizeof err, out, sizeof out), 0);
        double got = 0;
        int lines = 0;
        char needle[96];
        snprintf(needle, sizeof needle, "tid=\"%u\",role=\"%s\"", t->tid, !strcmp(api, "7") ? "profiler" : "proxy");
        for (char *l = strstr(out, "nccl_lens_thread_starved_seconds_total{"); l;
             l = strstr(l + 1, "nccl_lens_thread_starved_seconds_total{")) {
          char *eol = strchr(l, '\n'), *sp = strchr(l, ' ');
          if (!eol || !sp || sp > eol) break;
          *eol = 0;
          if (strstr(l, needle)) got += atof(sp + 1), lines++;
          *eol = '\n';
        }
        printf("starved thread %u: page %.6f s (runqueue %llu waits, preempted %llu), agent %.6f s in %d lines\n",
               t->tid, (double)(t->runq_ns + t->preempt_ns) / 1e9, (unsigned long long)t->runq_waits,
               (unsigned long long)t->preempt_waits, got, lines);
        assert_int_equal(lines, 2);
        assert_true(got > (double)(t->runq_ns + t->preempt_ns) / 1e9 - 1e-6);
        assert_true(got < (double)(t->runq_ns + t->preempt_ns) / 1e9 + 1e-6);
      }
  }
  assert_true(starved_seen >= 1);
  unlink(path);
}

static void run_starved(const char *api) {
  n_st = n_kch = n_proxies = 0;
  const char *why = sched_test_cannot_probe();
  if (why) {
    printf("skip: %s\n", why);
    skip();
  }
  if (access(LENS_BUILD_DIR "/lib/libnccl-profiler-lens.so", R_OK) != 0) {
    printf("skip: the plugin was not built\n");
    skip();
  }
  char outdir[64], regdir[300], truth[300];
  lens_test_tmpdir(outdir, sizeof outdir, "sched-replay");
  snprintf(regdir, sizeof regdir, "%s/registry", outdir);
  snprintf(truth, sizeof truth, "%s/truth.json", outdir);
  mkdir(regdir, 0755);

  static char out[65536], err[65536];
  char *sargv[] = {LENS_CLI, "sched", "--follow", "--out", outdir, "--registry-dir", regdir, NULL};
  struct sched_child loader;
  assert_int_equal(sched_child_start(&loader, sargv, 0), 0);
  assert_true(sched_child_wait_line(&loader, "following processes", 15000, out, sizeof out));

  /* The replay's plugin publishes its registry where the loader looks. */
  setenv("NCCL_LENS_REGISTRY_DIR", regdir, 1);
  char *rargv[] = {LENS_CLI, "replay", "--scenario", "starved", "--iters", "8", "--truth", truth, "--out", outdir,
                   "--quiet", "--api", (char *)api, NULL};
  static char rerr[65536], rout[65536];
  int rrc = sched_run(rargv, 0, rerr, sizeof rerr, rout, sizeof rout);
  if (rrc != 0) {
    kill(loader.pid, SIGINT);
    sched_child_finish(&loader, 10000, err, sizeof err, NULL, 0);
    print_error("replay rc=%d stderr=[%s]\n", rrc, rerr);
  }
  assert_int_equal(rrc, 0);
  usleep(100000);
  kill(loader.pid, SIGINT);
  int rc = sched_child_finish(&loader, 10000, err, sizeof err, out, sizeof out);
  if (rc != 0) print_error("loader rc=%d stderr=[%s]\n", rc, err);
  assert_int_equal(rc, 0);

  char *text = lens_test_slurp(truth, NULL);
  assert_non_null(text);
  parse_truth(text);
  free(text);
  assert_true(n_st >= 1);

  static char paths[8][512];
  int np = list_traces(outdir, paths, 8);
  assert_true(np >= 2); /* the plugin's and the probe's */
  const char *pp[8];
  for (int i = 0; i < np; i++) pp[i] = paths[i];
  char lerr[256];
  struct lens_model *m = lens_model_load(pp, (size_t)np, lerr, sizeof lerr, NULL);
  if (!m) print_error("load: %s\n", lerr);
  assert_non_null(m);

  /* 1. Only the proxy threads of the replay are watched (its app, hog and
   * writer threads are not). Local rank 0's proxy (the starved one) waited
   * on its hogs, and only while they ran. The culprit of a wait is the task
   * that took the CPU when the proxy yielded; with sched_autogroup that is
   * often another session's busy task on a shared machine (a compiler, a
   * test), so the hogs' share of its waits is printed, not asserted. */
  size_t ours = 0;
  int hog_blamed[MAX_STARVE] = {0}, hog_outside = 0;
  long long wait_in[MAX_STARVE] = {0}, hog_wait_in[MAX_STARVE] = {0};
  for (size_t i = 0; i < m->n_sched; i++) {
    const struct lens_sched_sample *s = &m->sched[i].s;
    if (s->host_pid != (uint32_t)replay_pid) continue;
    ours++;
    int known = 0;
    for (int k = 0; k < n_proxies; k++) known |= (uint32_t)proxy_tids[k] == s->host_tid;
    if (!known) print_error("sample on tid %u, not a proxy of the replay\n", s->host_tid);
    assert_true(known);
    const struct starve *sv = starve_of(s->host_tid);
    if (!sv || s->kind == LENS_SCHED_OFFCPU) continue;
    long long d = (long long)(s->end_mono_ns - s->start_mono_ns);
    int during = (long long)s->start_mono_ns >= sv->start_ns && (long long)s->end_mono_ns <= sv->end_ns;
    wait_in[sv - st] += during ? d : 0;
    if (!is_hog_of(sv, s->culprit_tid)) continue;
    hog_blamed[sv - st]++;
    hog_wait_in[sv - st] += during ? d : 0;
    if ((long long)s->end_mono_ns < sv->start_ns || (long long)s->start_mono_ns > sv->end_ns + SLACK_NS) hog_outside++;
  }
  assert_true(ours > 0);
  lens_print_starvation(stdout, m);
  for (int i = 0; i < n_st; i++) {
    printf("proxy tid %ld: %d waits blamed on its hogs, %.1f of %.1f ms waited while they ran\n", st[i].proxy_tid,
           hog_blamed[i], hog_wait_in[i] / 1e6, wait_in[i] / 1e6);
    assert_true(hog_blamed[i] >= 1);
  }
  assert_int_equal(hog_outside, 0);
  /* The starved thread is the one that polls KernelCh: as the plugin saw it,
   * the profiler thread on 2.31 (never a proxy role), the proxy before. */
  for (int i = 0; i < n_st; i++) {
    int found = 0;
    for (size_t t = 0; t < m->n_threads; t++) {
      if (m->threads[t].tid != (uint32_t)st[i].proxy_tid) continue;
      found = 1;
      if (!strcmp(api, "7")) {
        assert_true(m->threads[t].roles & LENS_ROLE_PROFILER);
        assert_false(m->threads[t].roles & LENS_ROLE_PROXY);
      } else {
        assert_true(m->threads[t].roles & LENS_ROLE_PROXY);
      }
    }
    assert_true(found);
  }
  check_page(m, regdir, loader.pid, api);

  /* 2. Starvation flags vs the truth. Per KernelCh the driver records when
   * the GPU really started and stopped it, when the app thread posted its
   * pseudo-op (the proxy cannot notice anything before that) and when the
   * proxy noticed. The app thread and the GPUs run on time (another CPU), and
   * the proxy polls without napping, so the notice lag
   *   lag = notice - max(GPU event, posted)
   * is a few microseconds unless the proxy could not run. A KernelCh is
   * late when the lag of its start or its stop reaches LATE_NS. The analysis
   * flags it when a wait of at least MIN_WAIT_NS overlaps a notice window
   * (GPU times mapped by the GPU analysis first). Both thresholds are equal:
   * a notice held back that long by the scheduler overlaps such a wait
   * unless the delay was made of several shorter waits; a flagged notice
   * is not late only when its GPU event fell in the last LATE_NS of a wait
   * (hog waits last milliseconds). The plugin's KernelCh event is the one on
   * the same proxy thread whose stop is the notice (same clock). */
  if (lens_analyze_gpu && lens_analyze_gpu(m, lerr, sizeof lerr) != 0) printf("gpu analysis: %s\n", lerr);
  int mapped = 0;
  for (size_t j = 0; j < m->n_events; j++)
    mapped += m->events[j].type == LENS_T_KERNEL_CH && m->events[j].acc.gpu_stop_mono_ns != 0;
  printf("KernelCh with a mapped GPU stop: %d\n", mapped);
  long flagged = lens_analyze_starvation(m, MIN_WAIT_NS);
  /* The plugin's KernelCh, sorted by (thread, stop), for the match. */
  size_t n_ev = 0;
  struct evkey *ek = calloc(m->n_events + 1, sizeof *ek);
  assert_non_null(ek);
  for (size_t j = 0; j < m->n_events; j++) {
    const struct lens_event *e = &m->events[j];
    if (e->type != LENS_T_KERNEL_CH || e->thread < 0 || !e->stop_mono_ns) continue;
    ek[n_ev++] = (struct evkey){m->threads[e->thread].outer_tid, (long long)e->stop_mono_ns, e};
  }
  qsort(ek, n_ev, sizeof *ek, by_tid_stop);
  int tp = 0, fp = 0, fn = 0, tn = 0, matched = 0, in_hogs = 0, late_in_hogs = 0, unwatched = 0, shown = 0;
  long long fp_lag_max = 0, fn_lag_min = -1;
  for (int i = 0; i < n_kch; i++) {
    const struct lens_event *best = match_kch(ek, n_ev, &kch[i]);
    if (!best) continue;
    matched++;
    /* The probe sees a thread from when the follower found its process
     * (within 50 ms; its first sample) on. */
    long long from = watch_from((uint32_t)kch[i].proxy_tid, m);
    long long s0 = kch[i].true_start_ns > kch[i].posted_ns ? kch[i].true_start_ns : kch[i].posted_ns;
    if (from < 0 || s0 < from) {
      unwatched++;
      continue;
    }
    long long lag = lag_of(&kch[i]);
    int late = lag >= LATE_NS;
    /* The analysis's claim, in the same unit: how much of the notice windows
     * the proxy spent waiting for a CPU. */
    int flag = (best->acc.flags & LENS_ACC_STARVED) && (long long)best->acc.starved_ns >= LATE_NS;
    const struct starve *sv = starve_of((uint32_t)kch[i].proxy_tid);
    if (sv && kch[i].notice_stop_ns >= sv->start_ns && kch[i].notice_start_ns <= sv->end_ns) {
      in_hogs++;
      late_in_hogs += late;
    }
    tp += late && flag;
    fp += !late && flag;
    fn += late && !flag;
    tn += !late && !flag;
    if (!late && flag && lag > fp_lag_max) fp_lag_max = lag;
    if (late && !flag && (fn_lag_min < 0 || lag < fn_lag_min)) fn_lag_min = lag;
    if (late != flag && shown++ < 5) /* what disagreed, for whoever reads a failure */
      printf("  %s: proxy %ld lag %lld us, flagged %llu us; GPU %lld..%lld posted %lld noticed %lld..%lld\n",
             flag ? "flagged, not late" : "late, not flagged", kch[i].proxy_tid, lag / 1000,
             (unsigned long long)best->acc.starved_ns / 1000, kch[i].true_start_ns, kch[i].true_stop_ns,
             kch[i].posted_ns, kch[i].notice_start_ns, kch[i].notice_stop_ns);
  }
  free(ek);
  double recall = tp + fn ? (double)tp / (tp + fn) : 1, precision = tp + fp ? (double)tp / (tp + fp) : 1;
  printf("KernelCh: %d in the truth, %d matched, %d before the probe watched, %d noticed while hogs ran (%d of them late); late (lag >= %lld us): "
         "%d flagged, %d not (shortest lag %lld us); not late: %d flagged (longest lag %lld us), %d not; %ld proxy "
         "events flagged: recall %.3f precision %.3f\n",
         n_kch, matched, unwatched, in_hogs, late_in_hogs, LATE_NS / 1000, tp, fn, fn_lag_min / 1000, fp, fp_lag_max / 1000, tn,
         flagged, recall, precision);
  assert_true(matched * 10 >= n_kch * 9); /* the truth and the trace tell of the same KernelCh */
  /* The hogs really starve the proxies: most KernelCh noticed while they ran
   * were late, and none before or after them (the scenario, not the probe). */
  assert_true(in_hogs >= 100);
  assert_true(late_in_hogs * 2 >= in_hogs);
  assert_true(tp + fn >= 50);
  assert_true(recall >= 0.90);
  assert_true(precision >= 0.90);

  lens_model_free(m);
  for (int i = 0; i < np; i++) unlink(paths[i]);
  unlink(truth);
  rmdir(regdir);
  rmdir(outdir);
}

static void test_starved_scenario(void **state) {
  (void)state;
  run_starved("5");
}

static void test_starved_profiler_thread_2_31(void **state) {
  (void)state;
  run_starved("7");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_starved_scenario),
                                     cmocka_unit_test(test_starved_profiler_thread_2_31)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
