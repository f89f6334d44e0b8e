/* `nccl-lens report` on a replay run (`replay --scenario all`): the report
 * has every section, and its numbers are the summary's (`summary --json`):
 * one table row per (communicator, func, algo, proto, size) with the same
 * count, bytes and times, the same event/process totals, losses and
 * accuracy flag counts. Bad input: one line on stderr, exit status 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "mini_json.h"
#include "../lens_test_file.h"

static struct cli_result res;
static char trace[512], report[512], json[512];
static char *md; /* the report's text */

/* Replays once; the traces, summary JSON and report serve every test. */
static int setup(void **state) {
  (void)state;
  char dir[256], truth[256];
  snprintf(dir, sizeof dir, "%s/traces", cli_tmpdir());
  snprintf(truth, sizeof truth, "%s/truth.json", cli_tmpdir());
  const char *rp[] = {"replay", "--scenario", "all", "--out", dir, "--truth", truth, NULL};
  if (cli_run(&res, rp) || res.status) {
    fprintf(stderr, "replay failed (%d): %s\n", res.status, res.err);
    return -1;
  }
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *de;
  while ((de = readdir(d)))
    if (strstr(de->d_name, ".lens")) snprintf(trace, sizeof trace, "%s/%s", dir, de->d_name);
  closedir(d);
  if (!trace[0]) return -1;
  snprintf(report, sizeof report, "%s/report.md", cli_tmpdir());
  snprintf(json, sizeof json, "%s/summary.json", cli_tmpdir());
  const char *rep[] = {"report", trace, "-o", report, NULL};
  if (cli_run(&res, rep) || res.status) {
    fprintf(stderr, "report failed (%d): %s\n", res.status, res.err);
    return -1;
  }
  const char *sum[] = {"summary", "--json", "-o", json, trace, NULL};
  if (cli_run(&res, sum) || res.status) return -1;
  md = lens_test_slurp(report, NULL);
  return md ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  free(md);
  cli_cleanup();
  return 0;
}

static void test_sections(void **state) {
  (void)state;
  static const char *const sections[] = {
      "# nccl-lens report\n", "\n## What was recorded\n", "\n## Collectives and point-to-point, per communicator\n",
      "\n## Completion vs enqueue\n", "\n## Timing accuracy (GPU analysis)\n", "\n## Proxy threads and starvation\n",
      "\n## Hang diagnosis\n", "\n## Network\n", "\n## Data losses\n", "\n## What to look at next\n"};
  const char *prev = md;
  for (size_t i = 0; i < sizeof sections / sizeof *sections; i++) {
    const char *at = strstr(md, sections[i]);
    if (!at) fail_msg("section missing: %s", sections[i]);
    assert_true(at >= prev); /* in this order */
    prev = at;
  }
  assert_non_null(strstr(md, "## Hang diagnosis\n\nEvery collective recorded completed: nothing hung.\n")); /* a healthy run */
  /* The hints section has findings (the replay has ring overruns and shared timers). */
  const char *h = strstr(md, "## What to look at next\n\n- ");
  assert_non_null(h);
  assert_non_null(strstr(h, "timer-ring overrun"));
  /* Same report on standard output. */
  const char *rep[] = {"report", trace, NULL};
  assert_int_equal(cli_run(&res, rep), 0);
  assert_int_equal(res.status, 0);
  assert_int_equal(strncmp(res.out, md, strlen(res.out) < strlen(md) ? strlen(res.out) : strlen(md)), 0);
}

static void row_expect(const struct mj *op, char *buf, size_t len) {
  const struct mj *enq = mj_get(op, "enqueue");
  uint64_t n = mj_uint(enq, "n", 0), sum = mj_uint(enq, "sum_ns", 0), mx = mj_uint(enq, "max_ns", 0);
  const char *algo = mj_str(op, "algo"), *proto = mj_str(op, "proto");
  snprintf(buf, len, "| %s | %s | %s | %s | %" PRIu64 " | %" PRIu64 " | %.3f | %.3f | ", mj_str(op, "func"),
           algo && *algo ? algo : "-", proto && *proto ? proto : "-", mj_str(op, "size_bucket"), mj_uint(op, "count", 0),
           mj_uint(op, "bytes", 0), n ? (double)sum / (double)n / 1e3 : 0.0, (double)mx / 1e3);
  const struct mj *comp = mj_get(op, "completion");
  n = mj_uint(comp, "n", 0);
  size_t o = strlen(buf);
  if (n)
    snprintf(buf + o, len - o, "%.3f | %.3f | ", (double)mj_uint(comp, "sum_ns", 0) / (double)n / 1e3,
             (double)mj_uint(comp, "max_ns", 0) / 1e3);
}

static void test_numbers_match_summary(void **state) {
  (void)state;
  struct mj *s = mj_parse_file(json);
  assert_non_null(s);
  char want[512];
  snprintf(want, sizeof want, "%" PRIu64 " process(es)", mj_uint(s, "processes", 0));
  assert_non_null(strstr(md, want));
  snprintf(want, sizeof want, "%" PRIu64 " events", mj_uint(s, "events", 0));
  assert_non_null(strstr(md, want));
  const struct mj *comms = mj_get(s, "communicators");
  assert_non_null(comms);
  assert_true(comms->n >= 2);
  size_t rows = 0;
  for (const struct mj *c = comms->child; c; c = c->next) {
    /* Each communicator's table starts with its id. */
    snprintf(want, sizeof want, "(comm id %s, %" PRIu64 " ranks, %" PRIu64 " seen)", mj_str(c, "comm_id"),
             mj_uint(c, "nranks", 0), mj_uint(c, "ranks_seen", 0));
    const char *sec = strstr(md, want);
    if (!sec) {
      fail_msg("no table for %s", want);
      return; /* not reached: said for the compiler */
    }
    const char *end = strstr(sec + 1, "\n### ");
    if (!end) end = strstr(sec, "\n## ");
    for (const struct mj *op = mj_get(c, "ops")->child; op; op = op->next) {
      row_expect(op, want, sizeof want);
      const char *at = strstr(sec, want);
      if (!at || (end && at > end)) fail_msg("row not in its communicator's table: %s", want);
      rows++;
    }
  }
  assert_true(rows >= 10);
  /* Losses and accuracy flags. */
  const struct mj *drops = mj_get(s, "drops");
  snprintf(want, sizeof want, "- orphan stops (start lost): %" PRIu64 "\n", mj_uint(drops, "orphan_stops", 99));
  assert_non_null(strstr(md, want));
  snprintf(want, sizeof want, "- unparsable records: %" PRIu64 "\n", mj_uint(drops, "bad_records", 99));
  assert_non_null(strstr(md, want));
  const struct mj *acc = mj_get(s, "accuracy");
  assert_non_null(acc);
  size_t flags = 0;
  for (const struct mj *a = acc->child; a; a = a->next) {
    if (a->type != MJ_NUM) continue;
    snprintf(want, sizeof want, "| %s | %" PRIu64 " |\n", a->key, a->u);
    if (!strstr(md, want)) fail_msg("accuracy flag row missing: %s", want);
    flags++;
  }
  assert_true(flags >= 5);
  assert_true(mj_uint(acc, "ring_overrun", 0) > 0); /* the replay overruns the timer ring on purpose */
  /* Proxy threads: one row per thread of the summary, with its ops and steps. */
  for (const struct mj *p = mj_get(s, "proxy_threads")->child; p; p = p->next) {
    snprintf(want, sizeof want, "tid %" PRIu64 " | %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " |", mj_uint(p, "tid", 0),
             mj_str(p, "name") && *mj_str(p, "name") ? mj_str(p, "name") : "-", mj_uint(p, "ops", 0),
             mj_uint(p, "steps", 0), mj_uint(p, "bytes", 0));
    if (!strstr(md, want)) fail_msg("proxy thread row missing: %s", want);
  }
  mj_free(s);
}

/* status: 2 for a usage error, 1 for a failure (issue 9: one set of exit codes). */
static void expect_bad(const char *const *args, const char *needle, int status) {
  assert_int_equal(cli_run(&res, args), 0);
  assert_int_equal(res.status, status);
  assert_int_equal(res.err_lines, 1);
  assert_non_null(strstr(res.err, "nccl-lens report: "));
  if (needle && !strstr(res.err, needle)) fail_msg("expected '%s' in: %s", needle, res.err);
  assert_int_equal(res.out[0], 0);
}

/* Proxy-thread shares partition the thread's time: a thread cannot be both
 * asleep and active (the replay's proxies sleep without an Idle record). */
static void test_proxy_shares_partition(void **state) {
  (void)state;
  struct mj *s = mj_parse_file(json);
  assert_non_null(s);
  const struct mj *px = mj_get(s, "proxy_threads");
  assert_non_null(px);
  assert_true(px->n >= 2);
  int slept = 0;
  for (const struct mj *p = px->child; p; p = p->next) {
    double a = mj_get(p, "active_fraction")->num, sl = mj_get(p, "sleep_fraction")->num,
           id = mj_get(p, "idle_fraction")->num, ap = mj_get(p, "append_fraction")->num;
    printf("proxy tid %" PRIu64 ": active %.3f sleep %.3f idle %.3f (sum %.3f) append %.3f\n", mj_uint(p, "tid", 0), a,
           sl, id, a + sl + id, ap);
    assert_true(a + sl + id <= 1.0 + 1e-9);
    assert_true(ap <= a + id + 1e-9);
    slept += sl > 0.01;
  }
  assert_true(slept > 0); /* the check saw sleeping threads */
  mj_free(s);
}

/* Every mapped KernelCh has a known notice lag, 0 included: lens-gen-job's
 * lags are 0 or 1 ns (the clock fit touches its points), and a report that
 * counted only lags above 0 said about half of the channels (625,205 of
 * 1,249,280) and averaged over them. threads.lag.n is validate's mapped
 * count; the first bin (0 up to 0.25 us) holds them all. */
static void test_lag_counts_zero(void **state) {
  (void)state;
  char dir[256], cmd[768], rj[300], vj[300];
  snprintf(dir, sizeof dir, "%s/lagjob", cli_tmpdir());
  snprintf(cmd, sizeof cmd, "%s/bin/lens-gen-job -o %s --ranks 8 --hosts 2 --events 20000 >/dev/null 2>&1",
           LENS_BUILD_DIR, dir);
  assert_int_equal(system(cmd), 0);
  snprintf(rj, sizeof rj, "%s/lag_report.json", cli_tmpdir());
  snprintf(vj, sizeof vj, "%s/lag_validate.json", cli_tmpdir());
  struct cli_result r;
  const char *rep[] = {"report", "--json", dir, "-o", rj, NULL};
  assert_int_equal(cli_run(&r, rep), 0);
  assert_int_equal(r.status, 0);
  const char *val[] = {"validate", "--json", "--limit", "1", dir, "-o", vj, NULL};
  assert_int_equal(cli_run(&r, val), 0);
  assert_true(r.status == 0 || r.status == 1); /* the verdict may say "unreliable" */
  struct mj *R = mj_parse_file(rj), *V = mj_parse_file(vj);
  assert_non_null(R);
  assert_non_null(V);
  const struct mj *lag = mj_get(mj_get(R, "threads"), "lag");
  const struct mj *tot = mj_get(V, "totals");
  assert_non_null(lag);
  assert_non_null(tot);
  uint64_t mapped = mj_uint(tot, "mapped", 0);
  assert_true(mapped > 1000);
  if (mj_uint(lag, "n", 0) != mapped)
    fail_msg("report counts %" PRIu64 " notice lags, validate maps %" PRIu64 " KernelCh", mj_uint(lag, "n", 0), mapped);
  mj_free(R);
  mj_free(V);
}

static size_t count_of(const char *s, const char *needle) {
  size_t n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* "What was recorded" on a job past the row cap (64 ranks on 8 hosts:
 * rank = host * 8 + pid - 10000): what the processes share is counted, only
 * the ones that differ are listed, and the comm inits are a row per
 * communicator. Rank 3 and ranks 17-20 have no trace (removed), rank 13's is
 * cut short (no clean end): 59 processes, one differing, 5 ranks without an
 * init. --all gives a row per process and per init back. */
static void test_recorded_condensed(void **state) {
  (void)state;
  char dir[256], cmd[1024], out[300];
  snprintf(dir, sizeof dir, "%s/recjob", cli_tmpdir());
  snprintf(cmd, sizeof cmd,
           "%s/bin/lens-gen-job -o %s --ranks 64 --hosts 8 --events 200000 >/dev/null 2>&1 && cd %s && "
           "rm nccl-lens-gen-host000-10003.lens nccl-lens-gen-host002-1000[1-4].lens && "
           "truncate -s 6000 nccl-lens-gen-host001-10005.lens",
           LENS_BUILD_DIR, dir, dir);
  assert_int_equal(system(cmd), 0);
  snprintf(out, sizeof out, "%s/rec.md", cli_tmpdir());
  struct cli_result r;
  const char *rep[] = {"report", dir, "-o", out, NULL};
  assert_int_equal(cli_run(&r, rep), 0);
  assert_int_equal(r.status, 0);
  char *t = lens_test_slurp(out, NULL);
  assert_non_null(t);
  const char *want[] = {
      "\nWhat the 59 processes share ",
      "\n- NCCL profiler API: v5 (all 59)\n",
      "\n- sessions: 1 (all 59)\n",
      "\n- clean end: yes (58), no (1)\n",
      "\n- file: intact (58), truncated (1)\n",
      "\n- drops: none (all 59)\n",
      "\n1 process differs from the others ",
      "\n| gen-host001:10005 | no clean end, truncated | v5 | 0xffff | ",
      "\n59 communicator init(s) in 1 communicator(s) ",
      /* finalized but the cut one (rank 13: its COMM_FINI, near the file's end, was cut away) */
      " | 64 | 8 | 59 | 58 | 5: ranks 3,17-20 | 1: rank 13 | ",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(t, want[i])) fail_msg("the report lacks \"%s\"", want[i]);
  /* the processes that do not differ are counted, not listed */
  assert_int_equal(count_of(t, " | v5 | 0xffff"), 1);
  assert_null(strstr(t, "| process | NCCL profiler API | event mask | recorded | sessions | clean end | file |"));
  free(t);
  const char *all[] = {"report", "--all", dir, "-o", out, NULL};
  assert_int_equal(cli_run(&r, all), 0);
  assert_int_equal(r.status, 0);
  t = lens_test_slurp(out, NULL);
  assert_non_null(t);
  assert_null(strstr(t, "processes share"));
  assert_int_equal(count_of(t, " | v5 | 0xffff ("), 59);        /* a row per process */
  assert_int_equal(count_of(t, " | 64 | 8 | gen-host"), 59);    /* a row per comm init */
  free(t);
}

/* The same job with the golden `all` traces beside it (2 processes of
 * another event mask, 0xf7e, that dropped events; 3 communicators of 4
 * ranks, each init finalized): the mask line counts both values, the two
 * processes are listed after the cut one (no clean end first), and each
 * communicator has its row, the job's (ranks missing) first. Needs
 * test_recorded_condensed's job. */
static void test_recorded_condensed_mixed(void **state) {
  (void)state;
  char dir[256], gold[512], out[300];
  snprintf(dir, sizeof dir, "%s/recjob", cli_tmpdir());
  snprintf(gold, sizeof gold, "%s/tests/golden/traces/all", LENS_SOURCE_DIR);
  snprintf(out, sizeof out, "%s/recmix.md", cli_tmpdir());
  struct cli_result r;
  const char *rep[] = {"report", dir, gold, "-o", out, NULL};
  assert_int_equal(cli_run(&r, rep), 0);
  assert_int_equal(r.status, 0);
  char *t = lens_test_slurp(out, NULL);
  assert_non_null(t);
  const char *want[] = {
      "\nWhat the 61 processes share ",
      "\n- event mask: 0xffff (59), 0xf7e (2); 0xffff is Group, Coll, ",
      "\n- clean end: yes (60), no (1)\n",
      "\n- drops: none (59), some (2)\n",
      "\n3 processes differ from the others ",
      "\n| gen-host001:10005 | no clean end, truncated | v5 | 0xffff | ",
      " | event mask, drops | v5 | 0xf7e (Coll, P2p, ",
      "\n71 communicator init(s) in 4 communicator(s) ",
      " | 64 | 8 | 59 | 58 | 5: ranks 3,17-20 | 1: rank 13 | ",
      "\n| replay-world | 0xd1fd171bd81a5d20 | 4 | 2 | 4 | 4 | none | none | ",
      "\n| - | 0xca8216fa9058d0fa | 4 | 2 | 4 | 4 | none | none | ",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(t, want[i])) fail_msg("the report lacks \"%s\"", want[i]);
  /* the cut process before the two of another mask */
  const char *cut = strstr(t, "| no clean end, truncated |"), *mask = strstr(t, "| event mask, drops |");
  assert_true(cut && mask && cut < mask);
  assert_int_equal(count_of(t, "| event mask, drops |"), 2);
  free(t);
}

static void test_bad_input(void **state) {
  (void)state;
  char notrace[256];
  snprintf(notrace, sizeof notrace, "%s/not-a-trace.lens", cli_tmpdir());
  FILE *f = fopen(notrace, "w");
  assert_non_null(f);
  fputs("this is not a trace, but it is longer than the sixty-four bytes of a file header......\n", f);
  fclose(f);
  const char *missing[] = {"report", "/nonexistent/x.lens", NULL};
  expect_bad(missing, "cannot open", 1);
  const char *junk[] = {"report", notrace, NULL};
  expect_bad(junk, "not a .lens trace", 1);
  const char *none[] = {"report", NULL};
  expect_bad(none, "no trace files", 2);
  const char *opt[] = {"report", "--bogus", trace, NULL};
  expect_bad(opt, "unknown option", 2);
  const char *noval[] = {"report", trace, "-o", NULL};
  expect_bad(noval, "needs a file name", 2);
  const char *unwritable[] = {"report", trace, "-o", "/nonexistent/dir/r.md", NULL};
  expect_bad(unwritable, "cannot write", 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_sections), cmocka_unit_test(test_numbers_match_summary),
                                     cmocka_unit_test(test_proxy_shares_partition),
                                     cmocka_unit_test(test_lag_counts_zero),
                                     cmocka_unit_test(test_recorded_condensed),
                                     cmocka_unit_test(test_recorded_condensed_mixed),
                                     cmocka_unit_test(test_bad_input)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
