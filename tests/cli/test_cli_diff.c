/* `nccl-lens diff A B` on replays that differ in a known way: one run's
 * AllGathers work 3x longer on the GPU (replay --slow AllGather:3): the diff
 * ranks AllGather first, slower from A to B and faster from B to A; a run
 * against itself is "no change"; communicators are matched by name or size
 * when their hashes differ; more iterations change the counts;
 * a rank late on every AllReduce (job-late-app against job-none) is a change
 * of the wait, the injected delay, though execution held;
 * usage errors give one line and exit 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"

static char base[256], slow[256], more[256], seed[256];

static void replay(const char *out, const char *iters, const char *extra) {
  struct cli_result r;
  const char *args[] = {"replay", "--scenario", "mixed", "--ranks-per-node", "4", "--iters", iters, "--out", out,
                        "--quiet", "--seed", out == seed ? "7" : "1", extra ? "--slow" : NULL, extra, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  if (r.status) fail_msg("replay: %s", r.err);
}

static int setup(void **state) {
  (void)state;
  snprintf(base, sizeof base, "%s/base", cli_tmpdir());
  snprintf(slow, sizeof slow, "%s/slow", cli_tmpdir());
  snprintf(more, sizeof more, "%s/more", cli_tmpdir());
  snprintf(seed, sizeof seed, "%s/seed", cli_tmpdir());
  replay(base, "6", NULL);
  replay(slow, "6", "AllGather:3");
  replay(more, "9", NULL);
  replay(seed, "6", NULL);
  return 0;
}
static int teardown(void **state) {
  (void)state;
  cli_cleanup();
  return 0;
}

/* First changed row and every row's summary, from the JSON. */
static const char *TOP_PY =
    "import json,sys\n"
    "d=json.load(open(sys.argv[1]))\n"
    "print('no_change', d['no_change'], 'changed', d['changed'])\n"
    "print('matched', ' '.join(c['matched_by'] for c in d['communicators']))\n"
    "r=d['rows'][0]\n"
    "print('top', r['func'], r['status'], '%+.0f' % (r['time_change_pct'] or 0), r['time'])\n"
    "ag=[x for x in d['rows'] if x['func']=='AllGather']\n"
    "print('allgather_rows', len(ag), 'all_slower', all(x['status']=='slower' for x in ag))\n"
    "other=[x for x in d['rows'] if x['func']!='AllGather' and x['status'] in ('slower','faster')]\n"
    "print('other_changed', len(other), ' '.join(x['func']+':%.0f' % x['time_change_pct'] for x in other))\n"
    "ar=[x for x in d['rows'] if x['func']=='AllReduce']\n"
    "print('allreduce_counts', all(x['a'] and x['b'] and x['b']['count']*6==x['a']['count']*9 for x in ar), len(ar))\n";

static void diff_json(const char *a, const char *b, char *rep, size_t len) {
  char out[300];
  snprintf(out, sizeof out, "%s/diff.json", cli_tmpdir());
  struct cli_result r;
  const char *args[] = {"diff", "--json", a, b, "-o", out, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  if (r.status) fail_msg("diff: %s", r.err);
  assert_int_equal(cli_python(TOP_PY, out, rep, len), 0);
  printf("%s", rep);
}

static void test_slow_allgather_ranked_first(void **state) {
  (void)state;
  char rep[4096];
  diff_json(base, slow, rep, sizeof rep);
  assert_non_null(strstr(rep, "no_change False"));
  assert_non_null(strstr(rep, "top AllGather slower +"));
  assert_non_null(strstr(rep, "all_slower True"));
  assert_null(strstr(rep, "matched none"));
  /* the way back: faster */
  diff_json(slow, base, rep, sizeof rep);
  assert_non_null(strstr(rep, "top AllGather faster -"));
  /* The text leads with it too. */
  struct cli_result r;
  const char *args[] = {"diff", base, slow, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  const char *head = strstr(r.out, "changes, most important first");
  assert_non_null(head);
  const char *hdr = strchr(head, '\n') + 1, *first = strchr(hdr, '\n') + 1; /* after the column header */
  const char *func = strstr(hdr, " func ");
  assert_non_null(func);
  assert_true(!strncmp(first + (func + 1 - hdr), "AllGather", 9)); /* the first row's func column */
  assert_non_null(strstr(first, "% "));
}

static void test_same_run_no_change(void **state) {
  (void)state;
  char rep[4096];
  diff_json(base, base, rep, sizeof rep);
  assert_non_null(strstr(rep, "no_change True changed 0"));
  assert_null(strstr(rep, "matched none"));
  struct cli_result r;
  const char *args[] = {"diff", base, base, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "no change:"));
  /* Several traces a side: --vs splits them. */
  char a[300];
  snprintf(a, sizeof a, "%s", base);
  const char *args2[] = {"diff", "--json", a, "--vs", base, NULL};
  assert_int_equal(cli_run(&r, args2), 0);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "\"no_change\":true"));
}

/* Another seed gives the communicators other hashes: the named one is
 * matched by name, the unnamed one by size and order. */
static void test_comms_matched_without_hash(void **state) {
  (void)state;
  char rep[4096];
  diff_json(base, seed, rep, sizeof rep);
  assert_non_null(strstr(rep, "matched name size"));
}

static void test_more_iterations_change_counts(void **state) {
  (void)state;
  char rep[4096];
  diff_json(base, more, rep, sizeof rep);
  assert_non_null(strstr(rep, "no_change False"));
  assert_non_null(strstr(rep, "allreduce_counts True"));
}

/* job-none against job-late-app (2 x 2): the late rank's AllReduces execute
 * as before and the other three ranks wait ~3 ms each time. diff said "no
 * change" (it compared execution only). Each row's wait change must be
 * within 10% of what the truths give (per row: the mean over its instances
 * of the longest rank wait, late run minus healthy run), and the row must
 * say "wait" moved where the truths' waits moved clearly by diff's own rule
 * (mean and 75th percentile both beyond twice the threshold of A's wall
 * time, the same way) and must not where they clearly did not (both within
 * half of it). On a loaded machine the healthy run's ranks wait milliseconds
 * too (a run at load: its waits 0, 0.07 and 1.8 ms against the late run's
 * 3.1-4.5 ms; three instances a row), so a row may be neither: it is then
 * checked for its wait change only, and the test says so. A row without a
 * wait change (a side without a decomposed instance: a CI run under ASan)
 * prints both sides whole. */
static const char *WAIT_PY =
    "import json,sys,math\n"
    "d=json.load(open(sys.argv[1]))\n"
    "def waits(p):\n"
    "  w={}\n"
    "  for i in json.load(open(p))['instances']:\n"
    "    k=(i['func'],int(math.log2(i['bytes'])) if i['bytes'] else -1)\n"
    "    w.setdefault(k,[]).append(max(r['wait_ns'] for r in i['ranks']))\n"
    "  return w\n"
    "def p75(v):\n"
    "  v=sorted(v)\n"
    "  return v[(3*(len(v)-1))//4]\n"
    "a=waits(sys.argv[1].replace('diff.json','none/truth.json'))\n"
    "b=waits(sys.argv[1].replace('diff.json','late/truth.json'))\n"
    "thr=d['threshold_pct']/100\n"
    "print('no_change', d['no_change'], 'rows', len(d['rows']))\n"
    "ok=clear=must=0\n"
    "for r in d['rows']:\n"
    "  k=(r['func'],r['size_log2'])\n"
    "  want=sum(b[k])/len(b[k])-sum(a[k])/len(a[k])\n"
    "  got=r['wait_change_ns']\n"
    "  wall=r['a']['wall_ns']\n"
    "  m,q=(want/wall,(p75(b[k])-p75(a[k]))/wall) if wall else (0,0)\n"
    "  moved=abs(m)>=2*thr and abs(q)>=2*thr and (m>0)==(q>0)\n"
    "  still=abs(m)<thr/2 and abs(q)<thr/2\n"
    "  said='wait' in r['moved']\n"
    "  good=r['time']=='execution' and got is not None and abs(got-want)<=0.1*abs(want)"
    " and (said if moved else (not said) if still else True)\n"
    "  clear+=moved or still\n"
    "  must+=moved\n"
    "  ok+=good\n"
    "  print(r['func'], r['size_bucket'], r['status'], r['moved'], 'wait change', got, 'truth', want,"
    " 'truth moved' if moved else 'truth still' if still else 'truth unclear', 'ok' if good else 'BAD')\n"
    "  if got is None: print(' a', json.dumps(r['a']), '\\n b', json.dumps(r['b']))\n"
    "print('rows_ok', ok==len(d['rows']) and ok>0)\n"
    "print('clear', clear, 'must_change', must>0)\n";

static void test_late_app_is_a_wait_change(void **state) {
  (void)state;
  char none[300], late[300], truth[320], out[300], rep[4096];
  snprintf(none, sizeof none, "%s/none", cli_tmpdir());
  snprintf(late, sizeof late, "%s/late", cli_tmpdir());
  const char *dirs[] = {none, late}, *scen[] = {"job-none", "job-late-app"};
  for (int i = 0; i < 2; i++) {
    struct cli_result r;
    snprintf(truth, sizeof truth, "%s/truth.json", dirs[i]);
    const char *args[] = {"replay", "--scenario", scen[i], "--nodes", "2", "--ranks-per-node", "2", "--out", dirs[i],
                          "--truth", truth, "--quiet", NULL};
    assert_int_equal(cli_run(&r, args), 0);
    if (r.status) fail_msg("replay: %s", r.err);
  }
  snprintf(out, sizeof out, "%s/diff.json", cli_tmpdir());
  struct cli_result r;
  const char *args[] = {"diff", "--json", none, late, "-o", out, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  assert_int_equal(cli_python(WAIT_PY, out, rep, sizeof rep), 0);
  printf("%s", rep);
  if (strstr(rep, "must_change True")) assert_non_null(strstr(rep, "no_change False"));
  assert_non_null(strstr(rep, "rows_ok True"));
  if (strstr(rep, "clear 0")) printf("no row's wait moved clearly in the truths (a loaded machine): the rule not tested\n");
  /* the text says it, not "no change", when a row said the wait moved */
  const char *t[] = {"diff", none, late, NULL};
  assert_int_equal(cli_run(&r, t), 0);
  if (strstr(rep, "'wait']")) {
    assert_null(strstr(r.out, "no change"));
    assert_non_null(strstr(r.out, "wait (last rank's lateness)"));
  }
  /* a run against itself: still no change */
  const char *same[] = {"diff", late, late, NULL};
  assert_int_equal(cli_run(&r, same), 0);
  assert_non_null(strstr(r.out, "no change:"));
}

/* A straggler in about half the instances (lens-gen-job: 100 of 208
 * instances with a late rank against none): a wait change. The median
 * wait held (most instances on time, 2.4 -> 2.9 us) while the mean went
 * 2.3 us -> 247 us; diff said nothing moved but the count. It guards on the
 * 75th percentile now, which a rank late in a quarter of the instances or
 * more moves. */
static void test_half_late_is_a_wait_change(void **state) {
  (void)state;
  char a[300], b[300], cmd[800], out[320], rep[1024];
  snprintf(a, sizeof a, "%s/half-a", cli_tmpdir());
  snprintf(b, sizeof b, "%s/half-b", cli_tmpdir());
  const char *dirs[] = {a, b}, *n[] = {"0", "100"};
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd,
             "%s/bin/lens-gen-job -o %s --ranks 8 --hosts 2 --events 40000 --stragglers %s >/dev/null 2>&1",
             LENS_BUILD_DIR, dirs[i], n[i]);
    assert_int_equal(system(cmd), 0);
  }
  snprintf(out, sizeof out, "%s/half.json", cli_tmpdir());
  struct cli_result r;
  const char *args[] = {"diff", "--json", a, b, "-o", out, NULL};
  assert_int_equal(cli_run(&r, args), 0);
  assert_int_equal(r.status, 0);
  assert_int_equal(cli_python("import json,sys\n"
                              "r=json.load(open(sys.argv[1]))['rows'][0]\n"
                              "print(r['func'], r['status'], ','.join(r['moved']), r['b']['wait_ns'] > 50 * r['a']['wait_ns'],"
                              " r['b']['wait_p50_ns'] < 2 * r['a']['wait_p50_ns'])\n",
                              out, rep, sizeof rep),
                   0);
  printf("%s", rep);
  /* the mean moved, the median did not: the case the median guard missed */
  assert_string_equal(rep, "AllReduce slower wait True True\n");
}

static void test_usage_errors(void **state) {
  (void)state;
  struct cli_result r;
  const char *one[] = {"diff", base, NULL};
  assert_int_equal(cli_run(&r, one), 0);
  assert_int_equal(r.status, 2);
  assert_int_equal(r.err_lines, 1);
  const char *three[] = {"diff", base, slow, more, NULL};
  assert_int_equal(cli_run(&r, three), 0);
  assert_int_equal(r.status, 2);
  const char *thr[] = {"diff", "--threshold", "abc", base, slow, NULL};
  assert_int_equal(cli_run(&r, thr), 0);
  assert_int_not_equal(r.status, 0);
  assert_int_equal(r.err_lines, 1);
  const char *vs[] = {"diff", "--vs", base, slow, NULL};
  assert_int_equal(cli_run(&r, vs), 0);
  assert_int_equal(r.status, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slow_allgather_ranked_first),
      cmocka_unit_test(test_same_run_no_change),
      cmocka_unit_test(test_comms_matched_without_hash),
      cmocka_unit_test(test_more_iterations_change_counts),
      cmocka_unit_test(test_late_app_is_a_wait_change),
      cmocka_unit_test(test_half_late_is_a_wait_change),
      cmocka_unit_test(test_usage_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
