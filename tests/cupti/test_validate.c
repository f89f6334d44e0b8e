/* End to end without a GPU: a synthetic run written as a real .lens trace
 * (CUPTI chunks included, or the buffer as a separate file) goes through the
 * reader, the GPU analysis and `nccl-lens validate`. Mapped times are
 * compared with the run's truth; anomalies must show up in the output; bad
 * input must give one line and a non-zero exit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/analyses.h"
#include "analysis/gpu/gpu_analysis.h"
#include "synth.h"
#include "trace_writer.h"
#include "../lens_test_tmp.h"

static char dir[256];

static void path(char *out, size_t len, const char *name) { snprintf(out, len, "%s/%s", dir, name); }

/* Runs the CLI; returns its exit status, output in out (stdout+stderr). */
static int run_cli(const char *args, char *out, size_t len) {
  char cmd[2048];
  snprintf(cmd, sizeof(cmd), "%s/bin/nccl-lens validate %s 2>&1", LENS_BUILD_DIR, args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, len - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

/* The text as one line per paragraph: prose wraps at 120 columns (its next
 * lines indented), so a phrase may straddle a line end. In place. */
static char *unwrap(char *s) {
  char *o = s;
  for (const char *p = s; *p;) {
    if (*p == '\n' && p[1] == ' ') {
      while (*++p == ' ') {
      }
      *o++ = ' ';
    } else {
      *o++ = *p++;
    }
  }
  *o = 0;
  return s;
}

/* The widest line of text. */
static size_t widest_line(const char *s) {
  size_t w = 0;
  for (const char *p = s; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n > w) w = n;
    p += n + (e != NULL);
  }
  return w;
}

static void anomalous_run(struct synth *s) {
  struct synth_opts o;
  synth_default(&o);
  o.launches = 2000;
  o.anomaly_at[0] = SYN_OUTSIDE_KERNEL, o.anomaly_launch[0] = 300;
  o.anomaly_at[1] = SYN_OVERRUN, o.anomaly_launch[1] = 900;
  o.anomaly_at[2] = SYN_NO_KERNEL, o.anomaly_launch[2] = 1500;
  o.n_anomalies = 3;
  o.foreign_ext_ids = 1;
  assert_int_equal(synth_build(s, &o), 0);
}

static int32_t synth_index(const struct synth *s, uint64_t id) {
  for (size_t i = 0; i < s->m.n_events; i++)
    if (s->m.events[i].id == id) return (int32_t)i;
  return -1;
}

static void test_reader_and_analysis(void **st) {
  (void)st;
  struct synth s;
  anomalous_run(&s);
  char tp[512];
  path(tp, sizeof(tp), "run.lens");
  assert_int_equal(synth_write_trace(&s, tp, 1, 64 << 10), 0);
  char err[512];
  const char *paths[] = {tp};
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof(err), NULL);
  if (!m) fail_msg("load: %s", err);
  assert_true(m->n_cupti > 1); /* several CUPTI chunks */
  assert_int_equal(lens_analyze_gpu(m, err, sizeof(err)), 0);
  const struct lens_gpu_report *r = lens_gpu_report_get(m);
  assert_int_equal(r->kernels_joined, 1999);
  assert_int_equal(r->foreign_ext_ids, 1);
  assert_int_equal(r->launches_no_kernel, 1);
  double worst = 0;
  size_t kch = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    int32_t j = synth_index(&s, e->id);
    assert_true(j >= 0);
    uint32_t want = s.expect_flags[j];
    if ((e->acc.flags & want) != want) fail_msg("KernelCh %#llx: flags %#x, want %#x", (unsigned long long)e->id, e->acc.flags, want);
    if (want) continue;
    assert_int_equal(e->acc.flags & (LENS_ACC_OUTSIDE_KERNEL | LENS_ACC_RING_OVERRUN), 0);
    double d = (double)((int64_t)e->acc.gpu_start_mono_ns - s.true_start[j]);
    if (d < 0) d = -d;
    if (d > worst) worst = d;
    kch++;
  }
  printf("  through the reader: %zu KernelCh mapped, worst error %.0f ns\n", kch, worst);
  assert_true(kch > 7000);
  assert_true(worst < 1000);
  lens_gpu_release(m);
  lens_model_free(m);
  synth_free(&s);
}

static void test_cli_json_and_text(void **st) {
  (void)st;
  struct synth s;
  anomalous_run(&s);
  char tp[512], bp[512], np[512], args[2048];
  static char out[1 << 22];
  path(tp, sizeof(tp), "cli.lens");
  path(np, sizeof(np), "nocupti.lens");
  path(bp, sizeof(bp), "cupti.buf");
  assert_int_equal(synth_write_trace(&s, tp, 1, 1 << 20), 0);
  assert_int_equal(synth_write_trace(&s, np, 0, 0), 0);
  assert_int_equal(synth_write_cupti_buffer(&s, bp), 0);

  snprintf(args, sizeof(args), "%s --json", tp);
  assert_int_equal(run_cli(args, out, sizeof(out)), 0);
  assert_non_null(strstr(out, "\"kernels_joined\":1999"));
  assert_non_null(strstr(out, "\"foreign_ext_ids\":1"));
  assert_non_null(strstr(out, "\"launches_without_kernel\":1"));
  assert_non_null(strstr(out, "\"outside_kernel\":2")); /* the shifted one, and the overrun (a later item's span) */
  assert_non_null(strstr(out, "\"source\":\"cupti\""));
  assert_non_null(strstr(out, "\"level\":\"mostly trusted\""));
  assert_int_equal(out[0], '{');

  snprintf(args, sizeof(args), "%s --limit 3", tp);
  assert_int_equal(run_cli(args, out, sizeof(out)), 0);
  assert_non_null(strstr(out, "verdict: mostly trusted"));
  assert_non_null(strstr(out, "inside yes"));
  assert_non_null(strstr(out, "source cupti"));
  assert_non_null(strstr(out, "(1997 more launches not listed"));

  /* Text lists 20 launches unless asked; JSON (above) lists them all. */
  snprintf(args, sizeof(args), "%s", tp);
  assert_int_equal(run_cli(args, out, sizeof(out)), 0);
  assert_non_null(strstr(out, "(1980 more launches not listed"));

  /* The same run with CUPTI's buffer given as a file. */
  snprintf(args, sizeof(args), "%s --cupti-buffer %s --json", np, bp);
  assert_int_equal(run_cli(args, out, sizeof(out)), 0);
  assert_non_null(strstr(out, "\"kernels_joined\":1999"));

  /* A buffer cut inside a kernel record: said once, the records before it used. */
  FILE *cut = fopen(bp, "r+b");
  assert_non_null(cut);
  assert_int_equal(ftruncate(fileno(cut), (off_t)(s.cupti_len / 2) & ~(off_t)7), 0);
  fclose(cut);
  snprintf(args, sizeof(args), "%s --cupti-buffer %s --json", np, bp);
  assert_int_equal(run_cli(args, out, sizeof(out)), 0);
  assert_non_null(strstr(out, "\"buffer_errors\":1"));
  assert_non_null(strstr(out, "\"note\":\"CUPTI records:"));
  assert_null(strstr(out, "\"kernels_joined\":1999"));

  /* No CUPTI at all: notice-time maps, and the verdict says so. */
  snprintf(args, sizeof(args), "%s", np);
  assert_int_equal(run_cli(args, out, sizeof(out)), 0);
  assert_non_null(strstr(out, "source host-notice"));
  assert_true(widest_line(out) <= 120);
  unwrap(out);
  assert_non_null(strstr(out, "proxy notice times"));
  /* its prose gives times in human units, not "spread 7902419 ns" */
  const char *v = strstr(out, "verdict");
  assert_non_null(v);
  const char *sp = strstr(v, "spread ");
  assert_non_null(sp);
  char unit[8] = "";
  double val = 0;
  assert_int_equal(sscanf(sp, "spread %lf %7s", &val, unit), 2);
  assert_true(val < 1000 && (!strncmp(unit, "ns", 2) || !strncmp(unit, "us", 2) || !strncmp(unit, "ms", 2) ||
                             !strncmp(unit, "s:", 2)));
  synth_free(&s);
}

/* A short run, one kernel per GPU, CUPTI given: a CUPTI map, every channel
 * inside, and no advice to enable what was given. A kernel that cannot
 * contain its channels makes the verdict unreliable and says why. */
static void test_cli_short_run(void **st) {
  (void)st;
  static char out[1 << 20];
  char tp[512], args[1024];
  for (int contradict = 0; contradict < 2; contradict++) {
    struct synth_opts o;
    synth_default(&o);
    o.launches = 1;
    if (contradict) o.anomaly_at[0] = SYN_SHORT_KERNEL, o.anomaly_launch[0] = 0, o.n_anomalies = 1;
    struct synth s;
    assert_int_equal(synth_build(&s, &o), 0);
    path(tp, sizeof(tp), contradict ? "short-bad.lens" : "short.lens");
    assert_int_equal(synth_write_trace(&s, tp, 1, 1 << 20), 0);
    snprintf(args, sizeof(args), "%s", tp);
    assert_int_equal(run_cli(args, out, sizeof(out)), 0);
    printf("%s", strstr(out, "verdict") ? strstr(out, "verdict") : out);
    assert_true(widest_line(out) <= 120);
    unwrap(out);
    assert_null(strstr(out, "enable CUPTI"));
    if (!contradict) {
      assert_non_null(strstr(out, "source cupti"));
      assert_non_null(strstr(out, "inside yes"));
      assert_null(strstr(out, "inside no"));
      assert_null(strstr(out, "verdict: unreliable"));
    } else {
      assert_non_null(strstr(out, "verdict: unreliable"));
      assert_non_null(strstr(out, "shorter than the span of their channels"));
      assert_non_null(strstr(out, "inside no"));
      assert_null(strstr(out, "inside yes"));
    }
    synth_free(&s);
  }
}

/* Count of needle in hay. */
static size_t count_of(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* The number after key in s (e.g. "\"kernel_ch\":"), or -1. */
static long num_after(const char *s, const char *key) {
  const char *p = strstr(s, key);
  return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* --json and the text say the same: launches and channels listed, totals,
 * flag counts, verdict; and the JSON names the files read (intact or cut,
 * events each) as summary's does. A cut trace is warned about. */
static void test_cli_json_equals_text(void **st) {
  (void)st;
  struct synth s;
  anomalous_run(&s);
  char tp[512], args[2048];
  static char text[1 << 22], json[1 << 23];
  path(tp, sizeof(tp), "same.lens");
  assert_int_equal(synth_write_trace(&s, tp, 1, 1 << 20), 0);
  snprintf(args, sizeof(args), "%s --limit 100000", tp);
  assert_int_equal(run_cli(args, text, sizeof(text)), 0);
  snprintf(args, sizeof(args), "%s --json", tp);
  assert_int_equal(run_cli(args, json, sizeof(json)), 0);
  assert_int_equal(json[0], '{');
  assert_int_equal(count_of(text, "\n  launch "), 2000);
  assert_int_equal(count_of(json, "{\"launch_id\":"), 2000);
  /* 64-bit ids as strings (a JSON number loses digits past 2^53): every launch, external and event id. */
  assert_int_equal(count_of(json, "{\"launch_id\":\"0x"), 2000);
  assert_int_equal(count_of(json, "\"ext_id\":\"0x"), 2000);
  assert_int_equal(count_of(json, "{\"id\":\"0x"), count_of(json, "\"channel\":"));
  assert_int_equal(count_of(text, "\n    ch "), count_of(json, "\"channel\":"));
  /* every line within 120 columns: CUPTI spans "from kernel start" and flag lists wrap under "span" */
  if (widest_line(text) > 120) fail_msg("validate text has a line of %zu columns", widest_line(text));
  long kch = num_after(text, "totals: ");
  assert_true(kch > 7000);
  assert_int_equal(num_after(json, "\"kernel_ch\":"), kch);
  const char *flags[] = {"stop_before_start", "non_monotonic", "shared_timer", "ring_overrun", "outside_kernel",
                         "no_kernel_record", "foreign_ext_id", "starved", "no_clock_map"};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
    char tk[64], jk[64];
    snprintf(tk, sizeof tk, " %s=", flags[i]);
    snprintf(jk, sizeof jk, "\"%s\":", flags[i]);
    const char *jt = strstr(json, "\"totals\":");
    assert_non_null(jt);
    assert_int_equal(num_after(jt, jk), num_after(text, tk));
  }
  assert_non_null(strstr(text, "verdict: mostly trusted"));
  assert_non_null(strstr(json, "\"level\":\"mostly trusted\""));
  /* files: which, intact, how many events */
  char want[700];
  snprintf(want, sizeof want, "{\"files\":[{\"path\":\"%s\"", tp);
  assert_non_null(strstr(json, want));
  assert_non_null(strstr(json, "\"intact\":true"));
  assert_int_equal(num_after(json, "\"events\":"), (long)s.m.n_events);

  /* The same trace cut in the middle of a chunk: warned on stderr, and
   * the JSON says the file is not intact. */
  FILE *f = fopen(tp, "r+b");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  assert_int_equal(ftruncate(fileno(f), len - 1000), 0);
  fclose(f);
  assert_int_equal(run_cli(args, json, sizeof(json)), 0);
  assert_non_null(strstr(json, "is cut short"));
  assert_non_null(strstr(json, "\"intact\":false"));
  synth_free(&s);
}

/* --json --all lists every launch (the default lists the flagged ones and
 * the first ok ones: docs/cli.md, "JSON at scale"): it looked up each launch's ops by scanning
 * every event (183 s on 1 M events). 150 k launches of one channel (450 k
 * events, ~100 MB of events to scan per launch) must finish well inside the
 * test's TIMEOUT: a scan per launch took over 270 s at 100 k launches (2 loaded cores). */
static void test_cli_json_many_launches(void **st) {
  (void)st;
  struct synth_opts o;
  synth_default(&o);
  /* Under a sanitizer the synthetic run's own construction takes minutes
   * (over the TIMEOUT at 20 k launches under ASan): the normal build proves
   * the scale; the sanitizers run the index in the tests above. */
  if (*LENS_SANITIZER) skip();
  o.launches = 150000;
  o.channels = 1;
  struct synth s;
  assert_int_equal(synth_build(&s, &o), 0);
  char tp[512], jp[512], cmd[2048];
  path(tp, sizeof(tp), "many.lens");
  path(jp, sizeof(jp), "many.json");
  assert_int_equal(synth_write_trace(&s, tp, 1, 1 << 20), 0);
  synth_free(&s);
  snprintf(cmd, sizeof(cmd), "%s/bin/nccl-lens validate --json --all %s > %s", LENS_BUILD_DIR, tp, jp);
  assert_int_equal(system(cmd), 0);
  FILE *f = fopen(jp, "rb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long len = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)len + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
  buf[len] = 0;
  size_t launches = count_of(buf, "{\"launch_id\":"), channels = count_of(buf, "\"channel\":");
  printf("  --json of %d launches: %ld bytes\n", o.launches, len);
  free(buf);
  fclose(f);
  assert_int_equal(launches, o.launches);
  assert_int_equal(channels, o.launches);
}

static void test_cli_bad_input(void **st) {
  (void)st;
  static char out[1 << 16];
  char args[2048], bad[512];
  assert_int_not_equal(run_cli("/nonexistent/x.lens", out, sizeof(out)), 0);
  assert_non_null(strstr(out, "nccl-lens validate:"));
  assert_null(strchr(out, '\n') ? strchr(strchr(out, '\n') + 1, '\n') : NULL); /* one line */
  path(bad, sizeof(bad), "odd.buf");
  FILE *f = fopen(bad, "wb");
  fwrite("12345", 1, 5, f);
  fclose(f);
  char tp[512];
  path(tp, sizeof(tp), "cli.lens");
  snprintf(args, sizeof(args), "%s --cupti-buffer %s", tp, bad);
  assert_int_not_equal(run_cli(args, out, sizeof(out)), 0);
  assert_non_null(strstr(out, "not a CUPTI activity buffer"));
  assert_int_not_equal(run_cli("--bogus", out, sizeof(out)), 0);
  snprintf(args, sizeof(args), "%s --limit", tp);
  assert_int_not_equal(run_cli(args, out, sizeof(out)), 0);
  /* A trace file that is not one. */
  snprintf(args, sizeof(args), "%s", bad);
  assert_int_not_equal(run_cli(args, out, sizeof(out)), 0);
}

/* removed when the test exits (lens_test_tmp.h) */
static int setup(void **st) {
  (void)st;
  lens_test_tmpdir(dir, sizeof dir, "cupti");
  return 0;
}

/* --limit bounds every list, the channels without a launch too (graph replays: 50 x 3 nodes x 4
 * channels here; 161 MB of them on a big job before), and the verdict is the text's first line. */
static void test_cli_limit_bounds_every_list(void **st) {
  (void)st;
  struct synth_opts o;
  synth_default(&o);
  o.launches = 30;
  o.graph_nodes = 3;
  o.graph_replays = 50;
  struct synth s;
  assert_int_equal(synth_build(&s, &o), 0);
  char tp[512], args[1024];
  static char out[1 << 21];
  path(tp, sizeof(tp), "graph-limit.lens");
  assert_int_equal(synth_write_trace(&s, tp, 1, 1 << 20), 0);
  snprintf(args, sizeof(args), "%s --limit 5 2>/dev/null", tp);
  assert_int_equal(run_cli(args, out, sizeof(out)), 0);
  assert_int_equal(strncmp(out, "verdict: ", 9), 0); /* first */
  assert_int_equal(count_of(out, "verdict: "), 1);
  assert_int_equal(count_of(out, "\n  launch "), 5);
  const char *orphans = strstr(out, "channels without a launch");
  assert_non_null(orphans);
  assert_int_equal(count_of(orphans, "\n    ch "), 5);
  assert_non_null(strstr(orphans, "more channels not listed: --limit N lists more"));
  /* all of them without --limit as JSON, five with it, and the count left out */
  static char json[1 << 22];
  snprintf(args, sizeof(args), "%s --json 2>/dev/null", tp);
  assert_int_equal(run_cli(args, json, sizeof(json)), 0);
  const char *jo = strstr(json, "\"channels_without_launch\":[");
  assert_non_null(jo);
  size_t all = count_of(jo, "\"channel\":");
  assert_true(all >= 50 * 3 * 4);
  assert_int_equal(num_after(json, "\"channels_without_launch_unlisted\":"), 0);
  snprintf(args, sizeof(args), "%s --json --limit 5 2>/dev/null", tp);
  assert_int_equal(run_cli(args, json, sizeof(json)), 0);
  jo = strstr(json, "\"channels_without_launch\":[");
  assert_non_null(jo);
  assert_int_equal(count_of(jo, "\"channel\":"), 5);
  assert_int_equal(num_after(json, "\"channels_without_launch_unlisted\":"), (long)all - 5);
  assert_int_equal(num_after(json, "\"launches_unlisted\":"), 30 + 3 - 5); /* the graph captures are launches */
  synth_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reader_and_analysis),
      cmocka_unit_test(test_cli_json_and_text),
      cmocka_unit_test(test_cli_short_run), cmocka_unit_test(test_cli_bad_input),
      cmocka_unit_test(test_cli_json_equals_text), cmocka_unit_test(test_cli_json_many_launches),
      cmocka_unit_test(test_cli_limit_bounds_every_list),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
