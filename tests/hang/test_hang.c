/* `nccl-lens hang` against the replay's hang scenarios: each replay ends
 * without finalize a moment after its collective hangs, as a killed job;
 * the diagnosis must name the stuck collective and the missing rank, and
 * every stuck proxy op's rank, peer, channel, step and state exactly as the
 * driver's ground truth has them. Healthy runs (including NCCL's
 * never-stopped collnet ProxyOp of `mixed`) must show nothing stuck. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>

#include "mini_json.h"
#include "../lens_test_tmp.h"

struct run {
  struct mj *truth, *hang, *summary, *job;
  char report[1 << 16]; /* the report's start: its hang section */
  char summary_txt[1 << 12], job_txt[1 << 12]; /* the first lines of summary's and job's text */
  int hang_status;      /* `hang`'s exit status */
};

static void slurp_head(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = 0;
  fclose(f);
}

static void run(struct run *r, const char *scenario, const char *extra) {
  char dir[400], cmd[4096], path[600];
  lens_test_tmpdir(dir, sizeof dir, scenario);
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s && %s/bin/nccl-lens replay --quiet --scenario %s --nodes 2 %s --out %s --truth %s/truth.json"
           " && %s/bin/nccl-lens report -o %s/report.md %s/*.lens",
           dir, LENS_BUILD_DIR, scenario, extra, dir, dir, LENS_BUILD_DIR, dir, dir);
  assert_int_equal(system(cmd), 0);
  /* summary and job say it too, from the same analysis (text and JSON) */
  snprintf(cmd, sizeof cmd,
           "%s/bin/nccl-lens summary -o %s/summary.txt %s && %s/bin/nccl-lens summary --json -o %s/summary.json %s"
           " && %s/bin/nccl-lens job -o %s/job.txt %s && %s/bin/nccl-lens job --json -o %s/job.json %s",
           LENS_BUILD_DIR, dir, dir, LENS_BUILD_DIR, dir, dir, LENS_BUILD_DIR, dir, dir, LENS_BUILD_DIR, dir, dir);
  assert_int_equal(system(cmd), 0);
  /* hang's exit status: 3 when something is stuck (docs/hang.md), the same for text and JSON */
  snprintf(cmd, sizeof cmd, "%s/bin/nccl-lens hang --json -o %s/hang.json %s", LENS_BUILD_DIR, dir, dir);
  int st = system(cmd);
  assert_true(WIFEXITED(st));
  r->hang_status = WEXITSTATUS(st);
  snprintf(cmd, sizeof cmd, "%s/bin/nccl-lens hang -o %s/hang.txt %s", LENS_BUILD_DIR, dir, dir);
  st = system(cmd);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), r->hang_status);
  /* the text stays within 120 columns (the waiting and proxy lines were up to 142) */
  snprintf(cmd, sizeof cmd, "awk 'length($0) > 120 { print; bad = 1 } END { exit bad }' %s/hang.txt", dir);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof path, "%s/truth.json", dir);
  r->truth = mj_parse_file(path);
  snprintf(path, sizeof path, "%s/hang.json", dir);
  r->hang = mj_parse_file(path);
  snprintf(path, sizeof path, "%s/summary.json", dir);
  r->summary = mj_parse_file(path);
  snprintf(path, sizeof path, "%s/job.json", dir);
  r->job = mj_parse_file(path);
  snprintf(path, sizeof path, "%s/report.md", dir);
  slurp_head(path, r->report, sizeof r->report);
  snprintf(path, sizeof path, "%s/summary.txt", dir);
  slurp_head(path, r->summary_txt, sizeof r->summary_txt);
  snprintf(path, sizeof path, "%s/job.txt", dir);
  slurp_head(path, r->job_txt, sizeof r->job_txt);
  assert_non_null(r->truth);
  assert_non_null(r->hang);
  assert_non_null(r->summary);
  assert_non_null(r->job);
}

static void done(struct run *r) {
  mj_free(r->truth);
  mj_free(r->hang);
  mj_free(r->summary);
  mj_free(r->job);
}

/* hang --json and the replay's truth write comm_id as every view does
 * (docs/cli.md, one vocabulary): a string "0x" + 16 lowercase hex digits */
static uint64_t hex_id(const struct mj *c) {
  const char *s = mj_str(c, "comm_id");
  assert_non_null(s);
  assert_true(s[0] == '0' && s[1] == 'x');
  assert_int_equal(strlen(s), 18);
  assert_int_equal(strspn(s + 2, "0123456789abcdef"), 16);
  return strtoull(s, NULL, 16);
}

static const struct mj *comm_by_id(const struct mj *hang, uint64_t id) {
  const struct mj *cs = mj_get(hang, "communicators");
  for (size_t i = 0; cs && i < cs->n; i++)
    if (hex_id(mj_at(cs, i)) == id) return mj_at(cs, i);
  return NULL;
}

static int has_int(const struct mj *arr, int64_t v) {
  for (size_t i = 0; arr && i < arr->n; i++)
    if (mj_at(arr, i)->i == v) return 1;
  return 0;
}

static const struct mj *find_wait(const struct mj *waiting, const struct mj *t) {
  for (size_t i = 0; waiting && i < waiting->n; i++) {
    const struct mj *w = mj_at(waiting, i);
    if (mj_int(w, "rank", -9) == mj_int(t, "rank", -8) && mj_int(w, "peer", -9) == mj_int(t, "peer", -8) &&
        mj_int(w, "channel", -9) == mj_int(t, "channel", -8))
      return w;
  }
  return NULL;
}

static const struct mj *proxy_of(const struct mj *hang, int64_t rank) {
  const struct mj *ps = mj_get(hang, "proxies");
  for (size_t i = 0; ps && i < ps->n; i++)
    if (mj_int(mj_at(ps, i), "rank", -9) == rank) return mj_at(ps, i);
  return NULL;
}

/* A view's "hang" object (summary --json, job --json) against the truth:
 * the stuck instance, the missing rank and the frozen proxy, nothing else. */
static void check_view_hang(const char *view, const struct mj *v, const struct mj *th) {
  const struct mj *h = mj_get(v, "hang");
  if (!h || !mj_get(h, "stuck") || mj_get(h, "stuck")->num != 1) fail_msg("%s --json: no stuck hang object", view);
  const struct mj *cs = mj_get(h, "communicators");
  assert_int_equal(cs->n, 1);
  const struct mj *c = mj_at(cs, 0);
  assert_int_equal(hex_id(c), hex_id(th));
  assert_string_equal(mj_str(c, "func"), mj_str(th, "func"));
  assert_int_equal(mj_int(c, "seq", -1), mj_int(th, "seq", -2));
  int64_t m = mj_int(th, "missing_rank", -1), fr = mj_int(th, "frozen_rank", -1);
  const struct mj *miss = mj_get(c, "missing_ranks"), *frozen = mj_get(c, "frozen_proxy_ranks");
  assert_int_equal(miss->n, m >= 0 ? 1 : 0);
  if (m >= 0) assert_true(has_int(miss, m));
  if (frozen->n != (fr >= 0 ? 1u : 0u) || (fr >= 0 && !has_int(frozen, fr)))
    fail_msg("%s --json: %zu frozen proxies, truth: rank %d", view, frozen->n, (int)fr);
}

/* The first line of a view's text: "hang: FUNC seq S ..." */
static void check_text_hang(const char *view, const char *txt, const struct mj *th) {
  char want[128];
  snprintf(want, sizeof want, "hang: %s seq %d of ", mj_str(th, "func"), (int)mj_int(th, "seq", -1));
  if (strncmp(txt, want, strlen(want))) fail_msg("%s: first line is not '%s...': %.200s", view, want, txt);
  int64_t fr = mj_int(th, "frozen_rank", -1);
  snprintf(want, sizeof want, "frozen proxy of rank %d", (int)fr);
  const char *eol = strchr(txt, '\n');
  if (fr >= 0 && (!strstr(txt, want) || strstr(txt, want) > eol)) fail_msg("%s: '%s' not on the hang line", view, want);
}

static void check_hang(const char *scenario, const char *extra) {
  static struct run r;
  char args[128];
  snprintf(args, sizeof args, "--hang-exit-after 2 %s", extra);
  run(&r, scenario, args);
  const struct mj *procs = mj_get(r.truth, "processes");
  assert_non_null(procs);
  const struct mj *th = mj_get(mj_at(procs, 0), "hang");
  assert_non_null(th);
  const struct mj *c = comm_by_id(r.hang, hex_id(th));
  assert_non_null(c);
  assert_true(mj_get(c, "stuck")->num == 1);
  assert_int_equal(mj_int(c, "stuck_seq", -1), mj_int(th, "seq", -2));
  assert_string_equal(mj_str(c, "stuck_func"), mj_str(th, "func"));
  assert_int_equal(r.hang_status, 3); /* stuck: documented exit status 3 */
  check_view_hang("summary", r.summary, th);
  check_view_hang("job", r.job, th);
  check_text_hang("summary", r.summary_txt, th);
  check_text_hang("job", r.job_txt, th);
  /* the report's hints name it first */
  const char *hints = strstr(r.report, "## What to look at next\n\n");
  assert_non_null(hints);
  char want[128];
  snprintf(want, sizeof want, "## What to look at next\n\n- **Hang: %s seq %d of ", mj_str(th, "func"),
           (int)mj_int(th, "seq", -1));
  if (strncmp(hints, want, strlen(want))) fail_msg("report: the first hint is not the hang: %.300s", hints);
  char line[128]; /* the report has the same diagnosis */
  snprintf(line, sizeof line, "STUCK at %s seq %d\n", mj_str(th, "func"), (int)mj_int(th, "seq", -1));
  assert_non_null(strstr(r.report, line));
  const struct mj *missing = mj_get(c, "missing_ranks");
  int64_t m = mj_int(th, "missing_rank", -1);
  assert_int_equal(missing->n, m >= 0 ? 1 : 0);
  if (m >= 0) assert_true(has_int(missing, m));
  /* every stuck op of the truth, exactly; nothing else */
  const struct mj *waiting = mj_get(c, "waiting");
  size_t n_truth = 0;
  for (size_t p = 0; p < procs->n; p++) {
    const struct mj *tw = mj_get(mj_get(mj_at(procs, p), "hang"), "waiting");
    for (size_t i = 0; tw && i < tw->n; i++, n_truth++) {
      const struct mj *t = mj_at(tw, i), *w = find_wait(waiting, t);
      if (!w) fail_msg("%s: rank %d peer %d channel %d not reported", scenario, (int)mj_int(t, "rank", -1),
                       (int)mj_int(t, "peer", -1), (int)mj_int(t, "channel", -1));
      assert_int_equal(mj_int(w, "step", -1), mj_int(t, "step", -2));
      assert_string_equal(mj_str(w, "state"), mj_str(t, "state"));
      if (!strcmp(mj_str(t, "state"), "SendPeerWait")) {
        /* NCCL records it on every pass: many records, and the proxy counts as cycling */
        assert_true(mj_uint(w, "state_repeats", 0) > 10);
        const struct mj *px = proxy_of(r.hang, mj_int(t, "rank", -1));
        assert_non_null(px);
        assert_true(mj_get(px, "recording")->num == 1);
      }
    }
  }
  assert_true(n_truth > 0);
  assert_int_equal(waiting->n, n_truth);
  /* every rank that entered it has a channel whose kernel never stopped */
  const struct mj *kch = mj_get(c, "kernel_channels");
  for (int64_t rank = 0; rank < mj_int(c, "nranks", 0); rank++) {
    if (rank == m) continue;
    int seen = 0;
    for (size_t i = 0; i < kch->n; i++) seen |= mj_int(mj_at(kch, i), "rank", -1) == rank;
    assert_true(seen);
  }
  int64_t frozen = mj_int(th, "frozen_rank", -1);
  if (frozen >= 0) {
    /* the process of the frozen rank: its proxy froze, and the process
     * lived --hang-exit-after from the freeze (not from the posts) */
    const struct mj *fh = NULL;
    for (size_t p = 0; p < procs->n; p++)
      if (mj_get(mj_get(mj_at(procs, p), "hang"), "frozen_here")->num == 1) fh = mj_get(mj_at(procs, p), "hang");
    assert_non_null(fh);
    int64_t frozen_ns = mj_int(fh, "frozen_ns", 0), after_ns = mj_int(fh, "exit_after_ms", 0) * 1000000;
    assert_true(frozen_ns >= mj_int(fh, "start_ns", 0) && frozen_ns > 0);
    if (mj_int(fh, "exit_ns", 0) - frozen_ns < after_ns)
      fail_msg("%s: exited %lld ns after the freeze, promised %lld", scenario,
               (long long)(mj_int(fh, "exit_ns", 0) - frozen_ns), (long long)after_ns);
    const struct mj *px = proxy_of(r.hang, frozen);
    assert_non_null(px);
    assert_true(mj_get(px, "recording")->num == 0);
    /* and its trace shows that: silent the whole time (its last records
     * come a few us after frozen_ns, in the pass that froze it) */
    if ((int64_t)mj_uint(px, "silent_ns", 0) < after_ns - 50000000)
      fail_msg("%s: frozen proxy silent for %llu ns of its trace, truth: %lld", scenario,
               (unsigned long long)mj_uint(px, "silent_ns", 0), (long long)after_ns);
  }
  /* the frozen proxy is named, and only it: the other silent proxies' ops
   * wait on their GPU or peer, which a stopped proxy and a polling one show
   * alike (they were all called "silent: stopped, or polling") */
  const struct mj *ps = mj_get(r.hang, "proxies");
  for (size_t i = 0; ps && i < ps->n; i++) {
    const struct mj *px = mj_at(ps, i);
    int64_t rk = mj_int(px, "rank", -9);
    int is_frozen = mj_get(px, "frozen")->num == 1;
    if (is_frozen != (rk == frozen)) fail_msg("%s: proxy of rank %d frozen=%d, truth frozen rank %d", scenario, (int)rk,
                                              is_frozen, (int)frozen);
    if (is_frozen) assert_string_equal(mj_str(px, "verdict"), "frozen");
    if (frozen >= 0 && !is_frozen) assert_true(strcmp(mj_str(px, "verdict"), "silent") != 0);
  }
  done(&r);
}

static void test_missing_rank(void **s) { (void)s; check_hang("hang-missing", ""); }
static void test_frozen_proxy(void **s) { (void)s; check_hang("hang-proxy", ""); }
/* The app thread posts the frozen rank's ops one by one; descheduled between
 * two posts (a loaded machine), its first op reached the stalled step and
 * froze the proxy before the others were appended: the truth said step 2,
 * the trace had step 0 or no ProxyOp at all. The gap forces that order. */
static void test_frozen_proxy_slow_poster(void **s) { (void)s; check_hang("hang-proxy", "--hang-post-gap-ms 20"); }
/* The frozen rank's proxy descheduled for 2.5 s from the hang: it froze
 * after the old exit timer (2 s from the posts) had ended the process; the
 * truth said frozen proxy with frozen_ns 0, and `hang` saw a waiting one.
 * The timer counts from the freeze now. */
static void test_frozen_proxy_late_freeze(void **s) {
  (void)s;
  check_hang("hang-proxy", "--hang-freeze-delay-ms 2500");
}
/* A freeze that cannot come (the proxy away for longer than the replay
 * waits for it, 5 s) fails the run loudly, and the truth says it never froze. */
static void test_frozen_proxy_never_freezes(void **s) {
  (void)s;
  char dir[400], cmd[2048], path[600];
  lens_test_tmpdir(dir, sizeof dir, "hang-never-frozen");
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s && %s/bin/nccl-lens replay --quiet --scenario hang-proxy --nodes 2 --hang-exit-after 1"
           " --hang-freeze-delay-ms 6000 --out %s --truth %s/truth.json 2>%s/err.txt",
           dir, LENS_BUILD_DIR, dir, dir, dir);
  int st = system(cmd);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 1);
  char err[4096];
  snprintf(path, sizeof path, "%s/err.txt", dir);
  slurp_head(path, err, sizeof err);
  if (!strstr(err, "nccl-lens replay: hang-proxy: rank 2's proxy did not freeze within 5 s"))
    fail_msg("stderr: %s", err);
  snprintf(path, sizeof path, "%s/truth.json", dir);
  struct mj *truth = mj_parse_file(path);
  assert_non_null(truth);
  const struct mj *procs = mj_get(truth, "processes");
  int here = 0;
  for (size_t p = 0; procs && p < procs->n; p++) {
    const struct mj *h = mj_get(mj_at(procs, p), "hang");
    assert_non_null(h);
    if (mj_get(h, "frozen_here")->num != 1) continue;
    here++;
    assert_int_equal(mj_int(h, "frozen_rank", -1), 2);
    assert_int_equal(mj_int(h, "frozen_ns", -1), 0);
  }
  assert_int_equal(here, 1);
  mj_free(truth);
}
static void test_graph_replay(void **s) { (void)s; check_hang("hang-graph", ""); }

/* A hang at the scale of a job: 64 ranks, one missing. The text groups the
 * alike (a line per rank, channel, op and proxy was ~6,000 lines at 1,024
 * ranks) and must still say what the JSON says: the missing rank, how many
 * ranks are stuck, every rank whose kernel never stopped, every op in flight
 * (a small group, the send waiting for the missing rank's credit, keeps its
 * own line with the peer); --all gives a line per rank again. */
static int count_lines(const char *path, const char *prefix) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, f)) n += !prefix || !strncmp(line, prefix, strlen(prefix));
  fclose(f);
  return n;
}

/* One "a-b" or "a" of a range list ("8-15,24,40-63") at *p, *p moved past it. */
static int parse_range(const char **p, int *a, int *b) {
  int used = 0;
  if (sscanf(*p, "%d-%d%n", a, b, &used) == 2) return *p += used, 1;
  if (sscanf(*p, "%d%n", a, &used) != 1) return 0;
  *b = *a;
  return *p += used, 1;
}

static void test_many_ranks_grouped(void **s) {
  (void)s;
  char dir[400], cmd[8192], path[600];
  lens_test_tmpdir(dir, sizeof dir, "hang-64");
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s && %s/bin/nccl-lens replay --quiet --scenario hang-missing --nodes 8 --ranks-per-node 8"
           " --hang-exit-after 1 --out %s --truth %s/truth.json; %s/bin/nccl-lens hang -o %s/hang.txt %s;"
           " %s/bin/nccl-lens hang --all -o %s/all.txt %s; %s/bin/nccl-lens hang --json -o %s/hang.json %s;"
           " awk 'length($0) > 120 { print; bad = 1 } END { exit bad }' %s/hang.txt",
           dir, LENS_BUILD_DIR, dir, dir, LENS_BUILD_DIR, dir, dir, LENS_BUILD_DIR, dir, dir, LENS_BUILD_DIR, dir, dir,
           dir);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof path, "%s/hang.json", dir);
  struct mj *h = mj_parse_file(path);
  assert_non_null(h);
  const struct mj *c = mj_at(mj_get(h, "communicators"), 0);
  assert_non_null(c);
  const struct mj *mr = mj_get(c, "missing_ranks");
  int64_t missing = mr && mr->n == 1 ? (int64_t)mj_at(mr, 0)->num : -1;
  const struct mj *ranks = mj_get(c, "ranks"), *kch = mj_get(c, "kernel_channels"), *waiting = mj_get(c, "waiting");
  assert_true(mj_int(c, "nranks", 0) == 64 && missing >= 0 && kch && waiting);
  int stuck = 0, kranks = 0;
  for (size_t i = 0; ranks && i < ranks->n; i++) stuck += mj_get(mj_at(ranks, i), "stuck")->num == 1;
  for (int64_t r = 0; r < 64; r++) {
    int seen = 0;
    for (size_t i = 0; i < kch->n; i++) seen |= mj_int(mj_at(kch, i), "rank", -1) == r;
    kranks += seen;
  }
  /* the text's sums */
  snprintf(path, sizeof path, "%s/hang.txt", dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[4096], want[64];
  int t_stuck = 0, t_never = 0, t_kranks = 0, t_ops = 0, own_ops = 0, hint = 0, peer_line = 0;
  snprintf(want, sizeof want, "send to peer %d,", (int)missing);
  while (fgets(line, sizeof line, f)) {
    int n = 0;
    /* "  31 ranks stuck in it (last ...): 0-23,25-31", "  1 rank NEVER ENTERED (...): 24" */
    if (sscanf(line, "  %d rank", &n) == 1 && strstr(line, " stuck in it (")) t_stuck += n;
    if (sscanf(line, "  %d rank", &n) == 1 && strstr(line, " NEVER ENTERED (")) t_never += n;
    /* "  kernel never stopped on channels 0,1, 31 ranks: ..." */
    const char *k = strstr(line, "  kernel never stopped on channel");
    if (k && sscanf(strstr(line, ", ") + 2, "%d rank", &n) == 1) t_kranks += n;
    /* "  14 receives in flight at step 2, RecvWait, on 7 ranks: ..." */
    if (strstr(line, " in flight at step ") && sscanf(line, "  %d ", &n) == 1) t_ops += n;
    if (!strncmp(line, "  rank ", 7) && (strstr(line, " send to peer ") || strstr(line, " recv from peer "))) own_ops++;
    peer_line |= strstr(line, want) != NULL;
    hint |= strstr(line, "--all lists every one") != NULL;
  }
  fclose(f);
  printf("text: %d lines; stuck %d (json %d), never entered %d, kernel ranks %d (json %d), ops %d + %d "
         "(json %zu)\n",
         count_lines(path, NULL), t_stuck, stuck, t_never, t_kranks, kranks, t_ops, own_ops, waiting->n);
  assert_int_equal(t_stuck, stuck);
  assert_int_equal(t_never, 1);
  assert_int_equal(t_kranks, kranks);
  assert_int_equal(t_ops + own_ops, (int)waiting->n);
  assert_int_equal(t_kranks, 63);
  assert_true(t_ops > 0 && own_ops > 0); /* 32 ops: the large groups share lines, the small keep theirs */
  assert_true(peer_line); /* the send waiting for the missing rank keeps its own line */
  assert_true(hint);
  int lines = count_lines(path, NULL);
  snprintf(path, sizeof path, "%s/all.txt", dir);
  assert_int_equal(count_lines(path, "  rank   pid "), 1); /* --all: the table, a row per rank */
  int all = count_lines(path, NULL);
  printf("%d lines, --all %d\n", lines, all);
  assert_true(all >= 64 + (int)kch->n && 4 * lines < all);
  mj_free(h);

  /* Read with some hosts' traces only (every other node's): the ranks
   * without a trace are a range a line ("8-15,24-31,40-63"), as many as
   * the JSON's untraced_ranks, not a number each wrapped over lines (a
   * host's traces of a 1,024-rank job named a thousand ranks). */
  snprintf(cmd, sizeof cmd,
           "cd %s && ls nccl-lens-*.lens | sort | awk 'NR %% 2' > half.list; %s/bin/nccl-lens hang -o half.txt"
           " $(cat half.list); a=$?; %s/bin/nccl-lens hang --json -o half.json $(cat half.list); b=$?;"
           " [ $a = 3 ] && [ $b = 3 ]", /* 3: a collective is stuck (docs/hang.md) */
           dir, LENS_BUILD_DIR, LENS_BUILD_DIR);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof path, "%s/half.json", dir);
  h = mj_parse_file(path);
  assert_non_null(h);
  const struct mj *ut = mj_get(mj_at(mj_get(h, "communicators"), 0), "untraced_ranks");
  assert_true(ut && ut->n > 0 && ut->n < 64);
  char seen[64] = {0};
  for (size_t i = 0; i < ut->n; i++) seen[(int)mj_at(ut, i)->num] = 1;
  snprintf(path, sizeof path, "%s/half.txt", dir);
  f = fopen(path, "r");
  assert_non_null(f);
  int lines_untraced = 0, named = 0;
  while (fgets(line, sizeof line, f)) {
    static const char lead[] = "  no trace loaded for rank";
    const char *p = strstr(line, lead);
    if (!p) continue;
    lines_untraced++;
    p = strchr(p + strlen(lead), ' ') + 1; /* after "rank " or "ranks " */
    for (int a, b; parse_range(&p, &a, &b); p++) {
      for (int r = a; r <= b; r++) {
        assert_true(r >= 0 && r < 64 && seen[r] == 1); /* each untraced rank named once */
        seen[r] = 2;
        named++;
      }
      if (*p != ',') break;
    }
  }
  fclose(f);
  printf("untraced ranks: %d named on %d line(s), json %zu\n", named, lines_untraced, ut->n);
  assert_int_equal(lines_untraced, 1);
  assert_int_equal(named, (int)ut->n);
  mj_free(h);
}

static void check_healthy(const char *scenario) {
  static struct run r;
  run(&r, scenario, "--iters 2");
  assert_int_equal(r.hang_status, 0); /* nothing stuck */
  assert_true(mj_get(mj_get(r.summary, "hang"), "stuck")->num == 0);
  assert_true(mj_get(mj_get(r.job, "hang"), "stuck")->num == 0);
  assert_null(strstr(r.summary_txt, "hang: "));
  assert_null(strstr(r.job_txt, "hang: "));
  assert_null(strstr(r.report, "- **Hang: "));
  const struct mj *cs = mj_get(r.hang, "communicators");
  assert_true(cs && cs->n > 0);
  for (size_t i = 0; i < cs->n; i++) {
    assert_true(mj_get(mj_at(cs, i), "stuck")->num == 0);
    assert_int_equal(mj_get(mj_at(cs, i), "missing_ranks")->n, 0);
  }
  done(&r);
}

static void test_healthy(void **s) {
  (void)s;
  check_healthy("allreduce");
  check_healthy("mixed");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_missing_rank),
      cmocka_unit_test(test_frozen_proxy),
      cmocka_unit_test(test_frozen_proxy_slow_poster),
      cmocka_unit_test(test_frozen_proxy_late_freeze),
      cmocka_unit_test(test_frozen_proxy_never_freezes),
      cmocka_unit_test(test_graph_replay),
      cmocka_unit_test(test_many_ranks_grouped),
      cmocka_unit_test(test_healthy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
