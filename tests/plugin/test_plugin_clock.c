/* CLOCK chunks: the writer records the evidence an offline aligner needs,
 * and the reader places each process's CLOCK_MONOTONIC on the job time base
 * (REALTIME) within the bound it reports. A simulated second host is a child
 * in its own time namespace (MONOTONIC 1000 s ahead) and UTS namespace (its
 * own host name), as root; skipped with the reason otherwise.
 *
 * The writer's TSC conversion (plugin/clock_conv.c), driven with made-up
 * (tsc, mono) pairs: continuous and increasing across its refinements, and
 * within the derived bound of the true line. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock_conv.h"
#include "host_clock.h"
#include "lensread.h"
#include "plugin_driver.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define SIM_HOST "lens-simhost-7"
#define SHIFT_S 1000ll

static int g_mask;
static char g_dir[256];

static int64_t clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int run_session(void) {
  setenv("NCCL_LENS_OUTPUT_DIR", g_dir, 1);
  setenv("NCCL_LENS_REGISTRY_DIR", g_dir, 1);
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 1;
  void *ctx = NULL;
  if (p.v5->init(&ctx, 11, &g_mask, "clk", 1, 1, 0, test_logger) || !ctx) return 2;
  lens_nccl_descr_v5_t d;
  d5_coll(&d, NULL, "AllReduce");
  for (int i = 0; i < 100; i++) {
    void *h;
    p.v5->startEvent(ctx, &h, &d);
    p.v5->stopEvent(h);
  }
  if (p.v5->finalize(ctx)) return 3;
  return 0;
}

static struct lens_model *load_one(void) {
  DIR *dd = opendir(g_dir);
  if (!dd) return NULL;
  char path[512] = "";
  struct dirent *e;
  while ((e = readdir(dd)))
    if (strstr(e->d_name, ".lens")) snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
  closedir(dd);
  const char *paths[] = {path};
  char err[256];
  return path[0] ? lens_model_load(paths, 1, err, sizeof err, NULL) : NULL;
}

/* On this host's own clocks: the placement is within its bound of REALTIME. */
static void test_clock_evidence_same_host(void **state) {
  (void)state;
  make_tmp_dir(g_dir, sizeof g_dir, "clk");
  pid_t pid = fork();
  if (pid == 0) _exit(run_session());
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  int64_t off_here = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
  struct lens_model *m = load_one();
  assert_non_null(m);
  assert_true(m->n_clocks >= 2); /* at least one at the start, one at the end */
  struct lens_host_clock hc;
  assert_int_equal(lens_host_clock_of(m, 0, &hc), 0);
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  assert_string_equal(hc.host, host);
  assert_int_equal(strlen(hc.boot_id), 36); /* a UUID */
  int64_t err = hc.real_minus_mono_ns - off_here;
  if (err < 0) err = -err;
  assert_true((uint64_t)err <= hc.bound_ns + 5000000ull); /* + NTP slew while the test ran */
  lens_model_free(m);
}

/* A second "host": MONOTONIC 1000 s ahead, its own host name. */
static void test_clock_evidence_time_namespace(void **state) {
  (void)state;
  if (geteuid() != 0) {
    fprintf(stderr, "skip: time namespaces need root\n");
    skip();
  }
  make_tmp_dir(g_dir, sizeof g_dir, "clkns");
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    char why = 0;
    if (unshare(CLONE_NEWTIME | CLONE_NEWUTS) != 0) why = 'u';
    if (!why && sethostname(SIM_HOST, strlen(SIM_HOST)) != 0) why = 'h';
    int fd = why ? -1 : open("/proc/self/timens_offsets", O_WRONLY);
    char line[64];
    int n = snprintf(line, sizeof line, "monotonic %lld 0", SHIFT_S);
    if (!why && (fd < 0 || write(fd, line, (size_t)n) != n)) why = 'o';
    if (fd >= 0) close(fd);
    if (why) {
      if (write(pfd[1], &why, 1) != 1) _exit(9);
      _exit(0);
    }
    pid_t g = fork(); /* the time namespace applies to children */
    if (g == 0) _exit(run_session());
    int gst;
    waitpid(g, &gst, 0);
    _exit(WIFEXITED(gst) ? WEXITSTATUS(gst) : 99);
  }
  close(pfd[1]);
  char why = 0;
  ssize_t got = read(pfd[0], &why, 1);
  close(pfd[0]);
  int st;
  waitpid(pid, &st, 0);
  if (got == 1) {
    fprintf(stderr, "skip: cannot make a time/UTS namespace here (step %c)\n", why);
    skip();
  }
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  int64_t off_here = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
  int64_t mono_here = clock_ns(CLOCK_MONOTONIC);
  struct lens_model *m = load_one();
  assert_non_null(m);
  struct lens_host_clock hc;
  assert_int_equal(lens_host_clock_of(m, 0, &hc), 0);
  assert_string_equal(hc.host, SIM_HOST);
  assert_string_equal(m->procs[0].host, SIM_HOST);
  assert_true(hc.timens_mono_offset_ns == SHIFT_S * 1000000000ll);
  /* its MONOTONIC really was 1000 s ahead of ours ... */
  assert_true(m->n_events > 0);
  assert_true((int64_t)m->events[0].start_mono_ns > mono_here + (SHIFT_S - 10) * 1000000000ll);
  /* ... and the placement undoes it, within the bound */
  int64_t err = hc.real_minus_mono_ns + SHIFT_S * 1000000000ll - off_here;
  if (err < 0) err = -err;
  assert_true((uint64_t)err <= hc.bound_ns + 5000000ull);
  int64_t job = lens_host_clock_to_job(&hc, m->events[0].start_mono_ns);
  int64_t real_now = clock_ns(CLOCK_REALTIME);
  assert_true(job <= real_now && job > real_now - 30 * 1000000000ll); /* it happened in the last seconds */
  lens_model_free(m);
}

/* ---- the TSC conversion, simulated ----
 * A TSC at 2.9 GHz on a true line; every (tsc, mono) pair the clock code is
 * given is off the line by up to U ns (uniform, or alternating +-U: the
 * worst case for a rate measured between two pairs). One thread's records
 * every 10 ns to 1 ms (log-uniform) for 100 s; a writer pass every 0.25 to
 * 10 ms converts what was published, then refines once a second has passed
 * since the last refinement, as writer.c does. Records wait in the ring: a
 * few for up to 30 ms, one every ~10 s for 1.5 s (a producer descheduled
 * between its clock read and its publish), across a refinement. */
#define SIM_RHO (1.0 / 2.9) /* true ns per tick */
#define SIM_U 200.0         /* pair noise bound, ns */
#define SIM_X0 123456789012ull
#define SIM_M0 5000000000000ull
#define SIM_S 100.0 /* seconds simulated */
#define SIM_CAL_NS 5000000.0 /* the calibration pair is 5 ms after the anchor (clock.c) */

static uint64_t g_rng;
static double rnd01(void) { /* xorshift64*, fixed seed per scenario */
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return (double)((g_rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}
static double truth(uint64_t x) { return (double)SIM_M0 + (double)(x - SIM_X0) * SIM_RHO; }
static uint64_t ticks_of(double ns) { return (uint64_t)(ns / SIM_RHO); }

static int g_alt;
static double noise(void) {
  if (!g_alt) return (2 * rnd01() - 1) * SIM_U;
  static int sign;
  sign = !sign;
  return sign ? SIM_U : -SIM_U;
}
static uint64_t pair_mono(uint64_t x) { return (uint64_t)llround(truth(x) + noise()); }

/* The derived bound (docs/trace-format.md, "Clocks"): the line measured from
 * the anchor to a pair T ns later is within U of the truth between them and
 * U (1 + 2 d / T) d ns past the later pair. After refinement k (raw t_k,
 * T_k after the anchor) the conversion slews from where it was at t_k onto
 * the new line over H = 1 s: truth and pieces are lines, so its error is at
 * most the larger of the two ends' (bk_in[k] at t_k, U (1 + 2H/T_k) at the
 * end); from t_k + H it is on the measured line: U (1 + 2 d/T_k), the old
 * conversion's bound. Rates: the measured one is off by <= 2U/T_k, the slew
 * adds (offset at t_k)/H <= (bk_in[k] + U)/H. */
#define SIM_MAXREF 256
struct sim_refs {
  int n;                      /* refinements taken; entry 0 is the calibration */
  uint64_t t[SIM_MAXREF];     /* raw of the (later) pair */
  double T[SIM_MAXREF];       /* ns from the anchor to it */
  double bk_in[SIM_MAXREF];   /* error bound of the conversion at t[k], just before it */
};
/* pairs' mono values are whole ns: off by up to U + 0.5 */
static double line_bound(const struct sim_refs *r, int k, double d_ns) {
  return (SIM_U + 0.5) * (1 + 2 * d_ns / r->T[k]);
}
static int ref_of(const struct sim_refs *r, uint64_t x) {
  int k = r->n - 1;
  while (k > 0 && x < r->t[k]) k--;
  return k;
}
static double err_bound(const struct sim_refs *r, uint64_t x) {
  int k = ref_of(r, x);
  double d = (double)(int64_t)(x - r->t[k]) * SIM_RHO;
  if (k == 0) return d <= 0 ? SIM_U + 0.5 : line_bound(r, 0, d); /* between the calibration pairs: U */
  if (d < LENS_CLOCK_SLEW_NS) {
    double end = line_bound(r, k, LENS_CLOCK_SLEW_NS);
    return r->bk_in[k] > end ? r->bk_in[k] : end;
  }
  return line_bound(r, k, d);
}
static double rate_bound(const struct sim_refs *r, uint64_t x) { /* relative */
  int k = ref_of(r, x);
  double d = (double)(int64_t)(x - r->t[k]) * SIM_RHO;
  double b = 2 * SIM_U / r->T[k];
  if (k > 0 && d < LENS_CLOCK_SLEW_NS) b += (r->bk_in[k] + SIM_U) / LENS_CLOCK_SLEW_NS;
  return b;
}

struct sim_result {
  uint64_t records, refinements, backwards;
  double worst_back_ns;   /* largest backward step */
  double worst_step_ns;   /* largest |converted - true| duration of two records around a refinement ... */
  double worst_step_later; /* ... but the first (the calibration's 5 ms rate is 80 ppm off) */
  double worst_err_ns;    /* largest |converted - truth| */
  double worst_err_after; /* the same, from each refinement's horizon on */
  uint64_t over_err, over_step; /* records over their bound */
  uint64_t late, moved; /* raws older than the latest refinement converted after it; of them, to another value */
};

static void simulate(uint64_t seed, int alternate, struct sim_result *res) {
  g_rng = seed;
  g_alt = alternate;
  memset(res, 0, sizeof *res);
  static struct sim_refs r;
  memset(&r, 0, sizeof r);
  static struct lens_clock_conv c, before;
  uint64_t m0 = pair_mono(SIM_X0), tc = SIM_X0 + ticks_of(SIM_CAL_NS), mc = pair_mono(tc);
  lens_clock_conv_init(&c, SIM_X0, m0, (double)(mc - m0) / (double)(tc - SIM_X0));
  r.n = 1;
  r.t[0] = tc;
  r.T[0] = SIM_CAL_NS;
  uint64_t end = SIM_X0 + ticks_of(SIM_S * 1e9);
  uint64_t raw = tc + 1000, pub = raw, pass = tc, last_ref = tc, last_ref_raw = 0;
  uint64_t prev_raw = 0, prev_conv = 0;
  int have_prev = 0, have_before = 0;
  while (raw < end) {
    pass += ticks_of(250000 + rnd01() * 9750000);
    /* the records published by this pass's time, converted in ring order */
    while (pub <= pass) {
      uint64_t v = lens_clock_conv_at(&c, raw);
      res->records++;
      if (have_before && raw < last_ref_raw) {
        res->late++;
        res->moved += lens_clock_conv_at(&before, raw) != v;
      }
      double e = fabs((double)v - truth(raw));
      if (e > res->worst_err_ns) res->worst_err_ns = e;
      if (e > err_bound(&r, raw) + 3) res->over_err++; /* + truncation of piece starts and of the result */
      int k = ref_of(&r, raw);
      if (k > 0 && (double)(raw - r.t[k]) * SIM_RHO >= LENS_CLOCK_SLEW_NS && e > res->worst_err_after)
        res->worst_err_after = e;
      if (have_prev) {
        if (v < prev_conv) {
          res->backwards++;
          if ((double)(prev_conv - v) > res->worst_back_ns) res->worst_back_ns = (double)(prev_conv - v);
        }
        double dt = (double)(raw - prev_raw) * SIM_RHO;
        double step = fabs(((double)v - (double)prev_conv) - dt);
        double ra = rate_bound(&r, prev_raw), rb = rate_bound(&r, raw);
        if (step > 3 + dt * (ra > rb ? ra : rb)) res->over_step++;
        if (ref_of(&r, prev_raw) != k && step > res->worst_step_ns) res->worst_step_ns = step;
        if (ref_of(&r, prev_raw) != k && k > 1 && step > res->worst_step_later) res->worst_step_later = step;
      }
      have_prev = 1;
      prev_raw = raw;
      prev_conv = v;
      /* the next record: 10 ns to 1 ms later; it waits in the ring before it is published */
      raw += 1 + ticks_of(10 * pow(1e5, rnd01()));
      double wait = rnd01() < 0.0005 ? rnd01() * 3e7 : 0;
      if (rnd01() < 1e-5) wait = 1.5e9;
      uint64_t p = raw + ticks_of(wait);
      pub = p > pub ? p : pub;
    }
    if ((double)(pass - last_ref) * SIM_RHO >= 1e9) { /* once a second, after the drain */
      last_ref = pass;
      uint64_t t = pass + ticks_of(100); /* the pair is read after the drain */
      before = c;
      have_before = 1;
      double bin = err_bound(&r, t);
      if (lens_clock_conv_refine(&c, t, pair_mono(t)) == 0 && r.n < SIM_MAXREF) {
        r.t[r.n] = t;
        r.T[r.n] = (double)(t - SIM_X0) * SIM_RHO;
        r.bk_in[r.n] = bin;
        r.n++;
        last_ref_raw = t;
        res->refinements++;
      }
    }
  }
  fprintf(stderr,
          "  %s noise: %llu records, %llu refinements: %llu backwards (worst %.0f ns), worst duration error\n"
          "    across a refinement %.1f ns (%.1f ns but the first), worst error %.0f ns (%.0f ns after the horizons),\n"
          "    %llu over their bound (duration %llu), %llu converted after a refinement, %llu to another value\n",
          alternate ? "alternating" : "uniform", (unsigned long long)res->records,
          (unsigned long long)res->refinements, (unsigned long long)res->backwards, res->worst_back_ns,
          res->worst_step_ns, res->worst_step_later, res->worst_err_ns, res->worst_err_after,
          (unsigned long long)res->over_err, (unsigned long long)res->over_step, (unsigned long long)res->late,
          (unsigned long long)res->moved);
  /* a raw older than the kept pieces (16 s): the measured line, within U */
  uint64_t old = SIM_X0 + ticks_of(SIM_S * 0.5e9);
  double eo = fabs((double)lens_clock_conv_at(&c, old) - truth(old));
  if (eo > SIM_U + 2) {
    res->over_err++;
    fprintf(stderr, "  over: a raw older than the pieces is %.1f ns off\n", eo);
  }
}

static void test_tsc_conversion_slews(void **state) {
  (void)state;
  struct sim_result res[2];
  for (int alt = 0; alt < 2; alt++) simulate(0x9E3779B97F4A7C15ull + (uint64_t)alt, alt, &res[alt]);
  for (int alt = 0; alt < 2; alt++) { /* both printed before either is judged */
    assert_true(res[alt].refinements >= 95); /* once a simulated second */
    assert_true(res[alt].records > 500000);
    assert_int_equal(res[alt].backwards, 0); /* one thread's records keep their order */
    assert_int_equal(res[alt].over_step, 0); /* no duration absorbs a step of the conversion */
    assert_int_equal(res[alt].over_err, 0);  /* within the derived bound of the truth */
    assert_true(res[alt].late > 100);        /* records did wait in the ring across refinements ... */
    assert_int_equal(res[alt].moved, 0);     /* ... and converted as they would have on time */
    assert_true(res[alt].worst_step_ns <= 160);  /* 1 ms at the first slew's 80 + 80 ppm ... */
    assert_true(res[alt].worst_step_later <= 5); /* ... and at most ~1 ppm after it */
    assert_true(res[alt].worst_err_after <= 3 * (SIM_U + 0.5) + 3); /* after each horizon: the old bound */
  }
}

/* A refinement keeps the conversion where it is, and bounded slews take
 * longer than the horizon but never turn time back. */
static void test_tsc_conversion_big_offset(void **state) {
  (void)state;
  struct lens_clock_conv c;
  uint64_t x0 = 1000000, m0 = 7000000000ull;
  lens_clock_conv_init(&c, x0, m0, 0.5);
  assert_int_equal(lens_clock_conv_refine(&c, x0 + 1000, m0 + 600), 1); /* under 1 s of baseline: ignored */
  /* after 2 s the pair says the conversion is 2 ms ahead: beyond 500 ppm over 1 s */
  uint64_t t = x0 + 4000000000ull, m = m0 + 2000000000ull - 2000000;
  uint64_t at = lens_clock_conv_at(&c, t);
  assert_int_equal(lens_clock_conv_refine(&c, t, m), 0);
  assert_int_equal(lens_clock_conv_refine(&c, t, m), 1); /* the same pair again: ignored */
  assert_true(lens_clock_conv_at(&c, t) == at); /* no step */
  assert_true(lens_clock_conv_at(&c, t - 1) <= at);
  assert_int_equal(c.n, 3);
  assert_true(c.piece[1].ns_per_tick >= c.ns_per_tick * (1 - LENS_CLOCK_SLEW_MAX) - 1e-12);
  uint64_t meet = c.piece[2].tsc; /* 2 ms at 500 ppm: 4 s */
  assert_true((meet - t) * 0.5 > 3.99e9 && (meet - t) * 0.5 < 4.01e9);
  double line = (double)m0 + (double)(meet + 1000 - x0) * c.ns_per_tick;
  assert_true(fabs((double)lens_clock_conv_at(&c, meet + 1000) - line) <= 2);
  /* a refinement before the slew ended drops the unreached piece and slews on */
  uint64_t t2 = t + 2000000000ull;
  assert_int_equal(lens_clock_conv_refine(&c, t2, m0 + (uint64_t)((double)(t2 - x0) * 0.5)), 0);
  assert_true(c.n == 4 && c.piece[2].tsc == t2);
  uint64_t prev = 0;
  for (uint64_t x = t - 1000000; x < t2 + 10000000000ull; x += 999983) {
    uint64_t v = lens_clock_conv_at(&c, x);
    assert_true(v >= prev);
    prev = v;
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clock_evidence_same_host),
      cmocka_unit_test(test_clock_evidence_time_namespace),
      cmocka_unit_test(test_tsc_conversion_slews),
      cmocka_unit_test(test_tsc_conversion_big_offset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
