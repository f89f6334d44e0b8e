/* One CLI, one set of habits (issue 9): every command answers a usage error
 * with exit 2 and one line naming --help; options take --opt=VALUE, -oFILE,
 * "-" for standard output and "--" before paths; the selection (--comm,
 * --rank, --func, --since/--until) and --top change what the reader
 * commands count exactly as the replay's truth says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"

static char traces[256], truth[256];

static int setup(void **state) {
  (void)state;
  const char *d = cli_tmpdir();
  snprintf(traces, sizeof traces, "%s/t", d);
  snprintf(truth, sizeof truth, "%s/truth.json", d);
  /* mixed: two communicators (one named replay-world), collectives and
   * send/recv, 2 ranks in one process; iterations apart in time. */
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "%s/bin/nccl-lens replay --scenario mixed --ranks-per-node 2 --iters 3 --out %s --truth %s --quiet",
           LENS_BUILD_DIR, traces, truth);
  return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  cli_cleanup();
  return 0;
}

static void expect_usage_error(const char *const *args, const char *also) {
  struct cli_result r;
  assert_int_equal(cli_run(&r, args), 0);
  char hint[128];
  snprintf(hint, sizeof hint, "(try 'nccl-lens %s --help')", args[0]);
  if (!strcmp(args[0], "replay")) snprintf(hint, sizeof hint, "try 'nccl-lens replay --help'");
  if (r.status != 2 || r.err_lines != 1 || !strstr(r.err, hint) || (also && !strstr(r.err, also)))
    fprintf(stderr, "%s %s: status %d, stderr <%s>\n", args[0], args[1] ? args[1] : "", r.status, r.err);
  assert_int_equal(r.status, 2);
  assert_int_equal(r.err_lines, 1);
  assert_non_null(strstr(r.err, hint));
  if (also) assert_non_null(strstr(r.err, also));
  assert_null(strstr(r.out, "usage:")); /* never the whole usage on an error */
}

static void test_usage_errors_exit_2(void **state) {
  (void)state;
  const char *cmds[] = {"summary", "report", "export", "validate", "net", "job", "hang",
                        "replay",  "sched",  "agent",  "top",      "demo", "dump",   "diff"};
  for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
    const char *a[] = {cmds[c], "--no-such-option", traces, NULL};
    expect_usage_error(a, "--no-such-option");
  }
  /* a missing or bad value, no trace given */
  const char *m1[] = {"summary", traces, "-o", NULL};
  expect_usage_error(m1, NULL);
  const char *m2[] = {"job", "--threads", "0", traces, NULL};
  expect_usage_error(m2, NULL);
  const char *m3[] = {"validate", NULL};
  expect_usage_error(m3, "no trace files");
  const char *m4[] = {"net", "--top", "x", traces, NULL};
  expect_usage_error(m4, NULL);
  const char *m5[] = {"agent", "--interval", "nan", NULL};
  expect_usage_error(m5, NULL);
  const char *m6[] = {"top", "--period", "abc", NULL};
  expect_usage_error(m6, NULL);
  const char *m7[] = {"dump", "--wait-s", "-1", "1", NULL};
  expect_usage_error(m7, NULL);
  const char *m8[] = {"summary", "--since", "5 parsecs", traces, NULL};
  expect_usage_error(m8, "200ms");
  /* errors list the valid values */
  const char *v1[] = {"export", "--format", "svg", traces, NULL};
  expect_usage_error(v1, "chrome, job, perfetto");
  const char *v2[] = {"replay", "--scenario", "nope", NULL};
  expect_usage_error(v2, "job-late-app");
  const char *v3[] = {"summary", "--comm", "nope", traces, NULL};
  expect_usage_error(v3, "replay-world");
  const char *v4[] = {"summary", "--func", "AllToNone", traces, NULL};
  expect_usage_error(v4, "ReduceScatter");
  /* a runtime failure stays 1 */
  struct cli_result r;
  const char *f1[] = {"summary", "/nonexistent/x.lens", NULL};
  assert_int_equal(cli_run(&r, f1), 0);
  assert_int_equal(r.status, 1);
  const char *none[] = {NULL};
  assert_int_equal(cli_run(&r, none), 0);
  assert_int_equal(r.status, 2);
  assert_int_equal(r.err_lines, 1);
}

/* Runs a command; 0 status expected; its output file checked by a Python
 * expression over d (the JSON), printed and compared with want. */
static void json_check(const char *const *args, const char *file, const char *expr, const char *want) {
  struct cli_result r;
  assert_int_equal(cli_run(&r, args), 0);
  if (r.status) fprintf(stderr, "%s: status %d <%s>\n", args[0], r.status, r.err);
  assert_int_equal(r.status, 0);
  char script[2048], got[4096];
  snprintf(script, sizeof script,
           "import json,sys\nd=json.load(open(sys.argv[1]))\nt=json.load(open('%s'))\nprint(%s)\n", truth, expr);
  int rc = cli_python(script, file, got, sizeof got);
  if (rc || strcmp(got, want)) {
    for (size_t i = 0; args[i]; i++) fprintf(stderr, "%s ", args[i]);
    fprintf(stderr, "... %s: got <%s> want <%s>\n", expr, got, want);
    if (getenv("LENS_TEST_KEEP")) abort(); /* keep the files to look at */
  }
  assert_int_equal(rc, 0);
  assert_string_equal(got, want);
}

static void test_option_forms(void **state) {
  (void)state;
  char f1[300], o1[310], f2[300], o2[310];
  snprintf(f1, sizeof f1, "%s/eq.json", cli_tmpdir());
  snprintf(o1, sizeof o1, "--output=%s", f1);
  snprintf(f2, sizeof f2, "%s/short.json", cli_tmpdir());
  snprintf(o2, sizeof o2, "-o%s", f2);
  const char *count = "sum(o['count'] for c in d['communicators'] for o in c['ops'])";
  const char *a1[] = {"summary", "--json", o1, traces, NULL};
  json_check(a1, f1, count, "60\n");
  const char *a2[] = {"summary", "--json", o2, traces, NULL};
  json_check(a2, f2, count, "60\n");
  /* -o - is standard output */
  struct cli_result r;
  const char *a3[] = {"summary", "--json", "-o", "-", traces, NULL};
  assert_int_equal(cli_run(&r, a3), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "\"communicators\""));
  /* "--": a path that starts with '-' */
  char dash[300];
  snprintf(dash, sizeof dash, "%s/-dash", cli_tmpdir());
  assert_int_equal(symlink(traces, dash), 0);
  assert_int_equal(chdir(cli_tmpdir()), 0);
  const char *a4[] = {"summary", "--json", "--", "-dash", NULL};
  assert_int_equal(cli_run(&r, a4), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "\"communicators\""));
  const char *a5[] = {"summary", "--json", "-dash", NULL};
  expect_usage_error(a5, "-dash");
  /* --name=VALUE on a command's own options too */
  const char *a6[] = {"job", "--threads=1", "--top=1", traces, NULL};
  assert_int_equal(cli_run(&r, a6), 0);
  assert_int_equal(r.status, 0);
  const char *a7[] = {"replay", "--scenario=allreduce", "--iters=1", "--quiet", "--out", cli_tmpdir(), NULL};
  assert_int_equal(cli_run(&r, a7), 0);
  assert_int_equal(r.status, 0);
}

/* Operations of the truth (one per rank) matching a Python condition on o (the op) and c (its communicator). */
static void truth_ops(const char *cond, char *want, size_t len) {
  char expr[1024];
  snprintf(expr, sizeof expr,
           "sum(1 for p in t['processes'] for o in p['ops'] for c in [p['comms'][o['comm']]] "
           "if o['emitted'] and o['kind'] in ('coll','p2p') and (%s))",
           cond);
  char script[2048];
  snprintf(script, sizeof script, "import json,sys\nt=json.load(open(sys.argv[1]))\nprint(%s)\n", expr);
  assert_int_equal(cli_python(script, truth, want, len), 0);
}

static void summary_count(const char *const *sel, const char *cond) {
  char out[300], want[64];
  snprintf(out, sizeof out, "%s/sel.json", cli_tmpdir());
  const char *args[16] = {"summary", "--json", "-o", out};
  size_t n = 4;
  for (size_t i = 0; sel[i]; i++) args[n++] = sel[i];
  args[n++] = traces;
  args[n] = NULL;
  truth_ops(cond, want, sizeof want);
  assert_true(atoi(want) > 0);
  json_check(args, out, "sum(o['count'] for c in d['communicators'] for o in c['ops'])", want);
}

/* A time between iteration 0 and 1, after the trace's first event. The app
 * thread issues every operation in turn, so the first n0 Coll/P2p events of
 * the Chrome export (n0 = the truth's operations of iteration 0; each event's
 * args carry its id and host times) are that iteration's; the time is the
 * middle of the gap after them. The origin is the earliest event start. */
static void iteration_gap_us(char *buf, size_t len) {
  char ex[300];
  snprintf(ex, sizeof ex, "%s/all.json", cli_tmpdir());
  struct cli_result r;
  const char *args[] = {"export", "--format", "chrome", "-o", ex, traces, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  char script[2048];
  snprintf(script, sizeof script,
           "import json,sys\n"
           "d=json.load(open(sys.argv[1])); t=json.load(open('%s'))\n"
           "a=[e['args'] for e in d['traceEvents'] if 'start_mono_ns' in e.get('args',{})]\n"
           "origin=min(x['start_mono_ns'] for x in a)\n"
           "ops=sorted({x['id']:x for x in a if x.get('type') in ('Coll','P2p')}.values(), key=lambda x:x['start_mono_ns'])\n"
           "n0=sum(1 for p in t['processes'] for o in p['ops'] if o['emitted'] and o['iter']==0)\n"
           "end0=max(x['stop_mono_ns'] for x in ops[:n0]); start1=min(x['start_mono_ns'] for x in ops[n0:])\n"
           "assert 0 < end0 < start1, (end0, start1)\n"
           "print('%%.3fus' %% ((end0+start1)/2e3-origin/1e3), end='')\n",
           truth);
  int rc = cli_python(script, ex, buf, len);
  if (rc) fprintf(stderr, "iteration gap: %s\n", buf);
  assert_int_equal(rc, 0);
}

static void test_filters_summary(void **state) {
  (void)state;
  const char *all[] = {NULL};
  summary_count(all, "True");
  const char *c1[] = {"--comm", "replay-world", NULL};
  summary_count(c1, "c['name']=='replay-world'");
  {
    char script[512], got[128], arg[160];
    snprintf(script, sizeof script,
             "import json,sys\nt=json.load(open(sys.argv[1]))\n"
             "print([c['commId'] for c in t['processes'][0]['comms'] if c['name']!='replay-world'][0], end='')\n");
    assert_int_equal(cli_python(script, truth, got, sizeof got), 0);
    snprintf(arg, sizeof arg, "--comm=%s", got); /* the unnamed one, by its id */
    const char *c2[] = {arg, NULL};
    summary_count(c2, "c['name']!='replay-world'");
    /* repeatable, or a comma list: both communicators */
    const char *c3[] = {"--comm", "replay-world", "--comm", got, NULL};
    summary_count(c3, "True");
    snprintf(arg, sizeof arg, "replay-world,%s", got + 2); /* hex without 0x */
    const char *c4[] = {"--comm", arg, NULL};
    summary_count(c4, "True");
  }
  const char *r1[] = {"--rank", "1", NULL};
  summary_count(r1, "o['rank']==1");
  const char *r2[] = {"--rank", "0-1", NULL};
  summary_count(r2, "True");
  const char *f1[] = {"--func", "AllReduce", NULL};
  summary_count(f1, "o['func']=='AllReduce'");
  const char *f2[] = {"--func", "send,RECV", NULL};
  summary_count(f2, "o['func'] in ('Send','Recv')");
  const char *mix[] = {"--comm", "replay-world", "--rank", "0", "--func", "AllReduce", NULL};
  summary_count(mix, "c['name']=='replay-world' and o['rank']==0 and o['func']=='AllReduce'");
  char gap[2048];
  iteration_gap_us(gap, sizeof gap);
  const char *u1[] = {"--until", gap, NULL};
  summary_count(u1, "o['iter']==0");
  const char *s1[] = {"--since", gap, NULL};
  summary_count(s1, "o['iter']>=1");
  const char *s2[] = {"--since", gap, "--func", "Broadcast", NULL};
  summary_count(s2, "o['iter']>=1 and o['func']=='Broadcast'");
}

/* --top N: per communicator the N rows that took the most time. */
static void test_top(void **state) {
  (void)state;
  char full[300], top[300];
  snprintf(full, sizeof full, "%s/full.json", cli_tmpdir());
  snprintf(top, sizeof top, "%s/top.json", cli_tmpdir());
  struct cli_result r;
  const char *a1[] = {"summary", "--json", "-o", full, traces, NULL};
  assert_int_equal(cli_run(&r, a1), 0);
  const char *a2[] = {"summary", "--json", "--top", "1", "-o", top, traces, NULL};
  assert_int_equal(cli_run(&r, a2), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.err, "operation rows left out"));
  char script[1024], got[256];
  snprintf(script, sizeof script,
           "import json,sys\nd=json.load(open(sys.argv[1])); f=json.load(open('%s'))\n"
           "tm=lambda o: o['completion']['sum_ns'] if o['completion']['n'] else o['enqueue']['sum_ns']\n"
           "ok=all(len(c['ops'])==1 and tm(c['ops'][0])==max(tm(o) for o in fc['ops'])\n"
           "       for c,fc in zip(d['communicators'], f['communicators']))\n"
           "print(ok, len(d['communicators']), end='')\n",
           full);
  assert_int_equal(cli_python(script, top, got, sizeof got), 0);
  assert_string_equal(got, "True 2");
  const char *a3[] = {"report", "--top", "2", traces, NULL};
  assert_int_equal(cli_run(&r, a3), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.err, "operation rows left out"));
}

/* The same selection in the other reader commands. */
static void test_filters_other_commands(void **state) {
  (void)state;
  char out[300], want[64], expr[512];
  snprintf(out, sizeof out, "%s/o.json", cli_tmpdir());
  /* job: instances of the selected operation only, one per (communicator, seq) */
  truth_ops("o['func']=='AllReduce' and o['rank']==0", want, sizeof want);
  const char *j1[] = {"job", "--json", "--func", "allreduce", "-o", out, traces, NULL};
  snprintf(expr, sizeof expr, "len([c for c in d['collectives'] if c['func']=='AllReduce']), len(d['collectives'])");
  char want2[80];
  snprintf(want2, sizeof want2, "%d %d\n", atoi(want), atoi(want));
  json_check(j1, out, expr, want2);
  /* job: one rank seen in every instance */
  const char *j2[] = {"job", "--json", "--rank", "1", "-o", out, traces, NULL};
  json_check(j2, out, "set(c['ranks_seen'] for c in d['collectives'])", "{1}\n");
  /* export (per-trace): only the selected operations' slices */
  truth_ops("o['func']=='Send'", want, sizeof want);
  const char *e1[] = {"export", "--format", "chrome", "--func", "Send", "-o", out, traces, NULL};
  snprintf(want2, sizeof want2, "%d %d\n", atoi(want), atoi(want)); /* Sends, and nothing else */
  json_check(e1, out,
             "len({e['args']['id'] for e in d['traceEvents'] if e.get('args',{}).get('type')=='P2p' and "
             "e['args'].get('func')=='Send'}), len({e['args']['id'] for e in d['traceEvents'] if "
             "e.get('args',{}).get('type') in ('Coll','P2p')})",
             want2);
  /* validate, net, hang take it too (exit 0, JSON) */
  const char *v1[] = {"validate", "--json", "--comm", "replay-world", "-o", out, traces, NULL};
  json_check(v1, out, "type(d).__name__", "dict\n");
  const char *n1[] = {"net", "--json", "--rank", "0", "-o", out, traces, NULL};
  json_check(n1, out, "type(d).__name__", "dict\n");
  const char *h1[] = {"hang", "--json", "--func", "Send", "-o", out, traces, NULL};
  json_check(h1, out, "type(d).__name__", "dict\n");
  /* a directory of traces everywhere, the job's too */
  struct cli_result r;
  const char *d1[] = {"validate", traces, NULL};
  assert_int_equal(cli_run(&r, d1), 0);
  assert_int_equal(r.status, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_usage_errors_exit_2),
      cmocka_unit_test(test_option_forms),
      cmocka_unit_test(test_filters_summary),
      cmocka_unit_test(test_top),
      cmocka_unit_test(test_filters_other_commands),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
