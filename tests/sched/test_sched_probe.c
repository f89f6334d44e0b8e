/* The probe end to end, on threads of this process (no NCCL, no replay):
 *   proxy  registered with LENS_ROLE_PROXY: steps of busy work + sched_yield,
 *          measuring each step's wall and own CPU time, and sleeping now and then;
 *   app    registered with LENS_ROLE_APP, same habits: must not be watched;
 *   2 hogs spin only inside known intervals;
 * all pinned to one CPU while `nccl-lens sched --pid <us>` runs. Then, from
 * the probe's trace: samples only for the proxy, waits with the hogs as
 * culprits inside the hog intervals, long sleeps, histograms; and the
 * starvation analysis against an independent truth: a step was starved when
 * its wall time exceeds its CPU time (the kernel's per-thread accounting)
 * and the kernel's run_delay (schedstat) grew as much, >= 90% recall and
 * precision. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nccl-lens/trace_format.h"
#include "analysis/analyses.h"
#include "reader/lensread.h"
#include "analysis/sched/starvation.h"
#include "sched_test_util.h"
#include "../lens_test_tmp.h"

#define CYCLES 4
#define PHASE_MS 150
#define MAX_STEPS 20000
#define STEP_ITERS 4       /* busy+yield rounds per step */
#define BUSY_US 50
#define TRUTH_NS 200000ull /* a step lost >= 200 us of wall time to not running */
#define TOLERANCE_NS 50000ull
#define HOG_SLACK_NS 20000000ull

static int cpu;
/* Shared between the workload threads: atomics, so TSan builds stay quiet. */
static int running = 1, hog_on;
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pid_t proxy_tid, app_tid, hog_tid[2];
struct step { uint64_t a, b, cpu_ns, rq_ns; };
static struct step steps[MAX_STEPS];
static int n_steps;
static uint64_t hog_from[CYCLES], hog_to[CYCLES], hogs_exit; /* at exit the hogs wake once more */

static uint64_t clk(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t mono(void) { return clk(CLOCK_MONOTONIC); }

static void pin(void) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void busy_us(unsigned us) {
  uint64_t end = clk(CLOCK_THREAD_CPUTIME_ID) + us * 1000ull;
  while (clk(CLOCK_THREAD_CPUTIME_ID) < end) {
  }
}

/* The kernel's run_delay of the calling thread (/proc/thread-self/schedstat,
 * second field): ns it spent runnable on a runqueue, not running. 0 if
 * unreadable (then the CPU-time truth is used alone). */
static uint64_t run_delay(int fd) {
  char b[128];
  ssize_t n = fd >= 0 ? pread(fd, b, sizeof b - 1, 0) : -1;
  if (n <= 0) return 0;
  b[n] = 0;
  unsigned long long on_cpu = 0, delay = 0;
  return sscanf(b, "%llu %llu", &on_cpu, &delay) == 2 ? delay : 0;
}

static void *proxy_main(void *arg) {
  (void)arg;
  pin();
  STORE(proxy_tid, gettid());
  int sfd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  uint64_t next_sleep = mono() + 20000000ull;
  while (LOAD(running)) {
    uint64_t a = mono(), c0 = clk(CLOCK_THREAD_CPUTIME_ID), r0 = run_delay(sfd);
    for (int i = 0; i < STEP_ITERS; i++) {
      busy_us(BUSY_US);
      sched_yield();
    }
    uint64_t r1 = run_delay(sfd), b = mono(), c1 = clk(CLOCK_THREAD_CPUTIME_ID);
    int n = LOAD(n_steps);
    if (n < MAX_STEPS) {
      steps[n] = (struct step){a, b, c1 - c0, sfd >= 0 ? r1 - r0 : UINT64_MAX};
      STORE(n_steps, n + 1);
    }
    if (b > next_sleep) { /* between steps: an idle proxy blocks */
      usleep(2000);
      next_sleep = mono() + 20000000ull;
    }
  }
  if (sfd >= 0) close(sfd);
  return NULL;
}

static void *app_main(void *arg) {
  (void)arg;
  pin();
  STORE(app_tid, gettid());
  while (LOAD(running)) {
    busy_us(BUSY_US);
    sched_yield();
    usleep(500);
  }
  return NULL;
}

static void *hog_main(void *arg) {
  int k = (int)(intptr_t)arg;
  pin();
  pthread_setname_np(pthread_self(), "lens-hog");
  STORE(hog_tid[k], gettid());
  while (LOAD(running)) {
    pthread_mutex_lock(&mu);
    while (!LOAD(hog_on) && LOAD(running)) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    while (LOAD(hog_on) && LOAD(running)) {
    }
  }
  return NULL;
}

static void set_hogs(int on) {
  pthread_mutex_lock(&mu);
  STORE(hog_on, on);
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static int in_hog(uint64_t a, uint64_t b) {
  if (b >= hogs_exit) return 1;
  for (int c = 0; c < CYCLES; c++)
    if (a < hog_to[c] + HOG_SLACK_NS && b > hog_from[c]) return 1;
  return 0;
}

static void write_registry(const char *dir) {
  char path[512];
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/%d.reg", dir, getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "nccl-lens-registry 1\npid %d\nnspid %d\ntrace /dev/null\n", getpid(), getpid());
  fprintf(f, "thread %d %d 2 0 0\nthread %d %d 1 -1 -1\n", proxy_tid, proxy_tid, app_tid, app_tid);
  fclose(f);
}

static int find_trace(const char *dir, char *out, size_t len) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int n = 0;
  while (d && (de = readdir(d)))
    if (!strncmp(de->d_name, "nccl-lens-sched-", 16)) {
      snprintf(out, len, "%s/%s", dir, de->d_name);
      n++;
    }
  if (d) closedir(d);
  return n;
}

static pthread_t proxy_th, app_th, hog_th[2];

static void start_threads(void) {
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &allowed)) cpu = c; /* the last allowed CPU */
  STORE(running, 1);
  STORE(hog_on, 0);
  STORE(proxy_tid, 0);
  STORE(app_tid, 0);
  STORE(hog_tid[0], 0);
  STORE(hog_tid[1], 0);
  hogs_exit = UINT64_MAX;
  pthread_create(&proxy_th, NULL, proxy_main, NULL);
  pthread_create(&app_th, NULL, app_main, NULL);
  for (int k = 0; k < 2; k++) pthread_create(&hog_th[k], NULL, hog_main, (void *)(intptr_t)k);
  while (!LOAD(proxy_tid) || !LOAD(app_tid) || !LOAD(hog_tid[0]) || !LOAD(hog_tid[1])) usleep(1000);
}

/* Alternating idle and hog phases; returns the number of proxy steps recorded. */
static int run_phases(int cycles) {
  STORE(n_steps, 0); /* count steps only while the probe watches */
  for (int c = 0; c < cycles; c++) {
    usleep(PHASE_MS * 1000);
    hog_from[c] = mono();
    set_hogs(1);
    usleep(PHASE_MS * 1000);
    set_hogs(0);
    hog_to[c] = mono();
  }
  usleep(50000);
  return LOAD(n_steps);
}

static void stop_threads(void) {
  hogs_exit = mono();
  pthread_mutex_lock(&mu);
  STORE(running, 0);
  pthread_mutex_unlock(&mu);
  set_hogs(0);
  pthread_join(proxy_th, NULL);
  pthread_join(app_th, NULL);
  for (int k = 0; k < 2; k++) pthread_join(hog_th[k], NULL);
}

static void test_probe_on_own_threads(void **state) {
  (void)state;
  const char *why = sched_test_cannot_probe();
  if (why) {
    printf("skip: %s\n", why);
    skip();
  }
  start_threads();

  char regdir[256], outdir[64], pidbuf[32];
  lens_test_tmpdir(outdir, sizeof outdir, "sched-probe");
  const char *env = getenv("NCCL_LENS_REGISTRY_DIR");
  snprintf(regdir, sizeof regdir, "%s", env ? env : outdir);
  write_registry(regdir);
  snprintf(pidbuf, sizeof pidbuf, "%d", getpid());
  char *argv[] = {LENS_CLI, "sched", "--pid", pidbuf, "--out", outdir, "--registry-dir", regdir, NULL};
  struct sched_child loader;
  assert_int_equal(sched_child_start(&loader, argv, 0), 0);
  static char out[16384], err[16384];
  int ready = sched_child_wait_line(&loader, "watching", 15000, out, sizeof out);
  if (!ready) {
    stop_threads();
    sched_child_finish(&loader, 2000, err, sizeof err, NULL, 0);
    print_error("loader not ready: stdout=[%s] stderr=[%s]\n", out, err);
  }
  assert_true(ready);
  /* Only the PROXY-role thread of the registry is watched. */
  assert_non_null(strstr(out, "watching 1 threads of pid"));

  int steps_done = run_phases(CYCLES);
  stop_threads();
  kill(loader.pid, SIGINT);
  int rc = sched_child_finish(&loader, 10000, err, sizeof err, out, sizeof out);
  if (rc != 0) print_error("loader rc=%d stderr=[%s]\n", rc, err);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(err, "stopped (SIGINT)"));
  /* Its exit report, read back through the reader, lists the proxy. */
  assert_non_null(strstr(out, "Proxy thread scheduling (eBPF probe): 1 thread(s)"));
  char tidline[64];
  snprintf(tidline, sizeof tidline, "tid %d\n", proxy_tid);
  assert_non_null(strstr(out, tidline));

  char path[512], lerr[256];
  assert_int_equal(find_trace(outdir, path, sizeof path), 1);
  const char *paths[] = {path};
  struct lens_model *m = lens_model_load(paths, 1, lerr, sizeof lerr, NULL);
  if (!m) print_error("load: %s\n", lerr);
  assert_non_null(m);
  assert_int_equal(m->n_files, 1);
  assert_int_equal(m->files[0].producer, LENS_PRODUCER_SCHED);
  assert_true(m->files[0].clean_end);

  /* Samples: the proxy only (not the app thread, not the hogs), all well formed. */
  size_t waits = 0, hog_waits = 0, hog_waits_in_interval = 0, offcpu = 0;
  uint64_t hog_wait_ns = 0;
  assert_true(m->n_sched > 0);
  for (size_t i = 0; i < m->n_sched; i++) {
    const struct lens_sched_sample *s = &m->sched[i].s;
    assert_int_equal(s->host_tid, (uint32_t)proxy_tid);
    assert_int_equal(s->host_pid, (uint32_t)getpid());
    assert_int_equal(s->ns_tid, (uint32_t)proxy_tid);
    assert_true(s->end_mono_ns > s->start_mono_ns);
    if (s->kind == LENS_SCHED_OFFCPU) {
      offcpu++;
      assert_true(s->end_mono_ns - s->start_mono_ns >= 1000000); /* --min-offcpu-us default */
      continue;
    }
    assert_true(s->kind == LENS_SCHED_RUNQ_WAIT || s->kind == LENS_SCHED_PREEMPT);
    assert_true(s->end_mono_ns - s->start_mono_ns >= 10000); /* --min-wait-us default */
    waits++;
    if (s->culprit_tid == (uint32_t)hog_tid[0] || s->culprit_tid == (uint32_t)hog_tid[1]) {
      hog_waits++;
      hog_wait_ns += s->end_mono_ns - s->start_mono_ns;
      assert_string_equal(s->culprit_comm, "lens-hog");
      assert_int_equal(s->culprit_pid, (uint32_t)getpid());
      hog_waits_in_interval += in_hog(s->start_mono_ns, s->end_mono_ns);
    }
  }
  uint64_t hog_total_ns = 0;
  for (int c = 0; c < CYCLES; c++) hog_total_ns += hog_to[c] - hog_from[c];
  printf("samples %zu: waits %zu (hog culprit %zu, %.1f ms of %.1f ms hog time), long sleeps %zu, steps %d\n",
         m->n_sched, waits, hog_waits, hog_wait_ns / 1e6, hog_total_ns / 1e6, offcpu, steps_done);
  assert_true(hog_waits >= CYCLES);
  assert_int_equal(hog_waits_in_interval, hog_waits); /* a hog is blamed only while it spins */
  /* With two hogs on its CPU the proxy gets about a third of it and waits
   * most of each hog phase (on an idle host ~70%; other load and sanitizer
   * builds take their share, hence the margin). */
  assert_true(hog_wait_ns * 10 >= hog_total_ns);
  assert_true(offcpu >= 5); /* it sleeps 2 ms every 20 ms */

  /* Histograms: the proxy's only, and they count at least every sample. */
  uint64_t hist_waits = 0;
  assert_true(m->n_sched_hist > 0);
  for (size_t i = 0; i < m->n_sched_hist; i++) {
    assert_int_equal(m->sched_hist[i].host_tid, (uint32_t)proxy_tid);
    if (m->sched_hist[i].kind == LENS_SCHED_OFFCPU) continue;
    for (int b = 0; b < 32; b++) hist_waits += m->sched_hist[i].buckets[b];
  }
  assert_true(hist_waits >= waits);

  /* Starvation flags on the proxy's steps vs the CPU-time truth. */
  struct lens_proc proc = {.pid = (uint32_t)getpid(), .outer_pid = (uint32_t)getpid()};
  struct lens_thread th = {.proc = 0, .tid = (uint32_t)proxy_tid, .outer_tid = (uint32_t)proxy_tid,
                           .roles = LENS_ROLE_PROXY, .proxy_rank = 0};
  struct lens_event *ev = calloc((size_t)steps_done, sizeof *ev);
  assert_non_null(ev);
  for (int i = 0; i < steps_done; i++) {
    ev[i].type = LENS_T_PROXY_STEP;
    ev[i].thread = 0;
    ev[i].start_mono_ns = steps[i].a;
    ev[i].stop_mono_ns = steps[i].b;
  }
  struct lens_model fake = {.procs = &proc, .n_procs = 1, .threads = &th, .n_threads = 1, .events = ev,
                            .n_events = (size_t)steps_done, .sched = m->sched, .n_sched = m->n_sched};
  /* Every wait the probe recorded counts; a step is called starved when the
   * waits overlapping it add up to TRUTH_NS, and truly was when it lost that
   * much wall time to not running. The probe must also never claim more lost
   * time than the step lost (beyond clock-read jitter). */
  long flagged = lens_analyze_starvation(&fake, 0);
  int tp = 0, fp = 0, fn = 0, overclaim = 0, rq_only = 0;
  for (int i = 0; i < steps_done; i++) {
    uint64_t wall = steps[i].b - steps[i].a;
    uint64_t lost = wall > steps[i].cpu_ns ? wall - steps[i].cpu_ns : 0; /* clocks read ns apart */
    /* Truly starved: the step lost TRUTH_NS of wall time to not running,
     * and the kernel counts that much of it as waiting on a runqueue (what
     * the probe sees): a VM's stolen time or interrupts also leave a step's
     * wall time above its CPU time, with no wait to see (a fresh-clone CI at
     * load 2.2: recall 52 of 61 on the CPU-time truth alone). */
    int truth = lost >= TRUTH_NS && (steps[i].rq_ns == UINT64_MAX || steps[i].rq_ns >= TRUTH_NS);
    rq_only += lost >= TRUTH_NS && !truth;
    int flag = (ev[i].acc.flags & LENS_ACC_STARVED) && ev[i].acc.starved_ns >= TRUTH_NS;
    assert_int_equal(!!(ev[i].acc.flags & LENS_ACC_STARVED), ev[i].acc.starved_ns > 0);
    overclaim += ev[i].acc.starved_ns > lost + TOLERANCE_NS;
    tp += truth && flag;
    fp += !truth && flag;
    fn += truth && !flag;
  }
  double recall = tp + fn ? (double)tp / (tp + fn) : 0, precision = tp + fp ? (double)tp / (tp + fp) : 0;
  printf("steps %d, starved (truth) %d, flagged %ld (>= %llu us: %d): recall %.3f precision %.3f, overclaims %d; "
         "%d more lost the time without waiting on a runqueue\n",
         steps_done, tp + fn, flagged, TRUTH_NS / 1000, tp + fp, recall, precision, overclaim, rq_only);
  assert_true(overclaim * 100 <= steps_done); /* <= 1% */
  assert_true(tp + fn >= CYCLES); /* the hogs did starve it */
  /* Under TSan the probe's consumer and the hogs run many times slower than
   * the scheduling they measure: the figures are printed, not judged (the
   * normal and ASan builds judge them). It failed 1 run in 4 there. */
  if (strcmp(LENS_SANITIZER, "thread") != 0) {
    assert_true(recall >= 0.90);
    assert_true(precision >= 0.90);
  }

  lens_print_starvation(stdout, &fake); /* also keeps starvation.o linked: analyses.h only declares it weak */
  free(ev);
  lens_model_free(m);
  unlink(path);
  rmdir(outdir);
}

/* --follow: a process that maps the plugin (simulated by mapping a file of
 * that name) and publishes a registry is found and watched, though it showed
 * up after the loader started. */
static void test_follow(void **state) {
  (void)state;
  const char *why = sched_test_cannot_probe();
  if (why) {
    printf("skip: %s\n", why);
    skip();
  }
  char outdir[64], regdir[256], so[512], path[512], lerr[256];
  static char out[16384], err[16384];
  lens_test_tmpdir(outdir, sizeof outdir, "sched-follow");
  const char *env = getenv("NCCL_LENS_REGISTRY_DIR");
  snprintf(regdir, sizeof regdir, "%s", env ? env : outdir);
  char *argv[] = {LENS_CLI, "sched", "--follow", "--out", outdir, "--registry-dir", regdir, "--verbose", NULL};
  struct sched_child loader;
  assert_int_equal(sched_child_start(&loader, argv, 0), 0);
  assert_true(sched_child_wait_line(&loader, "following processes", 15000, out, sizeof out));

  start_threads();
  write_registry(regdir);
  snprintf(so, sizeof so, "%s/libnccl-profiler-lens-follow-test.so", outdir);
  FILE *f = fopen(so, "w");
  fputs("not really a plugin", f);
  fclose(f);
  int fd = open(so, O_RDONLY);
  void *map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  assert_true(map != MAP_FAILED);
  usleep(1500000); /* the loader scans /proc once a second */
  run_phases(1);
  stop_threads();
  kill(loader.pid, SIGINT);
  int rc = sched_child_finish(&loader, 10000, err, sizeof err, out, sizeof out);
  munmap(map, 4096);
  close(fd);
  unlink(so);
  if (rc != 0 || !strstr(err, "following pid")) print_error("loader rc=%d stderr=[%s]\n", rc, err);
  assert_int_equal(rc, 0);
  char want[64];
  snprintf(want, sizeof want, "following pid %d", getpid());
  assert_non_null(strstr(err, want));
  snprintf(want, sizeof want, "watching tid %d ", proxy_tid);
  assert_non_null(strstr(err, want));
  snprintf(want, sizeof want, "watching tid %d ", app_tid);
  assert_null(strstr(err, want));

  assert_int_equal(find_trace(outdir, path, sizeof path), 1);
  const char *paths[] = {path};
  struct lens_model *m = lens_model_load(paths, 1, lerr, sizeof lerr, NULL);
  assert_non_null(m);
  size_t ours = 0, hogged = 0;
  for (size_t i = 0; i < m->n_sched; i++) {
    const struct lens_sched_sample *s = &m->sched[i].s;
    if (s->host_pid != (uint32_t)getpid()) continue; /* other plugin users on this host */
    assert_int_equal(s->host_tid, (uint32_t)proxy_tid);
    ours++;
    hogged += s->culprit_tid == (uint32_t)hog_tid[0] || s->culprit_tid == (uint32_t)hog_tid[1];
  }
  printf("follow: %zu samples of ours, %zu blaming a hog\n", ours, hogged);
  assert_true(hogged > 0);
  lens_model_free(m);
  unlink(path);
  rmdir(outdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_probe_on_own_threads), cmocka_unit_test(test_follow)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
