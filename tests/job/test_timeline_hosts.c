/* One job, one timeline (docs/timeline.md): replay "hosts", each in its own
 * time and UTS namespaces (CLOCK_MONOTONIC 1000 s apart, own hostname; root
 * only, else processes in this namespace, said on stderr), coupled through a
 * board file; job-late-app with the late rank rotating, so that every host
 * launches on an idle GPU now and then (the tight lower bounds). Checks:
 *   - two hosts: the host alignment of `nccl-lens job` against the truth
 *     (each namespace's exact MONOTONIC offset, which the replay's truth
 *     records): every bound at least the true error; within 10 us where the
 *     sync points were tight (bound <= 50 us) on a machine that is not
 *     overloaded (the simulated proxies' notices set the precision); also
 *     from the sync points alone (--sync-only); the network transfers'
 *     one-way pairs (a receive provably after its send: the replay couples
 *     each receive step to its sender's post) constrain every host, and
 *     alone (--one-way-only) place every host within a bound that holds;
 *     the streamed, partial-file and single-model runs place the hosts
 *     identically;
 *   - four hosts: every bound holds with the one-way pairs, without them
 *     and with them alone (the widths on stderr);
 *   - four hosts: the merged export: valid JSON on one time base, a process
 *     per host, events on every track nest, a flow through the ranks of each
 *     instance, each instance's last rank marked, the selection options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "job_truth.h"
#include "mini_json.h"
#include "timeline_check.h"

#define MAX_HOSTS 4
#define RPN 2

static int hosts_n; /* of the run in dir */
static int with_ns;
static char top[256], dir[300];

static int ns_possible(void) {
  const char *why = NULL;
  if (geteuid() != 0) why = "not root: unshare --time --uts needs CAP_SYS_ADMIN";
  else if (system("unshare --time --uts --fork --monotonic=7 true >/dev/null 2>&1") != 0)
    why = "unshare --time --uts --monotonic failed (no time namespaces here)";
  if (why) fprintf(stderr, "note: %s: two processes in this namespace instead of four hosts\n", why);
  return !why;
}

static pid_t start_host(int i) {
  char cmd[2048], replay[1200];
  snprintf(replay, sizeof replay,
           "%s/bin/nccl-lens replay --scenario job-late-app --straggler rotate --delay-us 5000 --nodes %d "
           "--ranks-per-node %d --node %d --board %s/board --iters %d --out %s --truth %s/truth-%d.json --quiet",
           LENS_BUILD_DIR, hosts_n, RPN, i, dir, hosts_n == 2 ? 12 : 6, dir, dir, i);
  if (with_ns)
    snprintf(cmd, sizeof cmd, "unshare --time --uts --fork --monotonic=%d sh -c 'hostname lens-host-%d && exec %s'",
             1000 * (i + 1), i, replay);
  else
    snprintf(cmd, sizeof cmd, "exec %s", replay);
  pid_t p = fork();
  if (p == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  return p;
}

/* A run of n hosts into top/hN (kept for the tests; dir points at it). */
static int run_hosts(int n) {
  hosts_n = n;
  snprintf(dir, sizeof dir, "%s/h%d", top, n);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
  if (system(cmd)) return -1;
  pid_t p[MAX_HOSTS];
  for (int i = 0; i < hosts_n; i++) p[i] = start_host(i);
  int ok = 1;
  for (int i = 0; i < hosts_n; i++) {
    int st = 0;
    ok &= waitpid(p[i], &st, 0) == p[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  return ok ? 0 : -1;
}

static void use_hosts(int n) {
  hosts_n = n;
  snprintf(dir, sizeof dir, "%s/h%d", top, n);
}

static int setup(void **s) {
  (void)s;
  with_ns = ns_possible();
  lens_test_tmpdir(top, sizeof top, "timeline");
  return run_hosts(2) || run_hosts(with_ns ? MAX_HOSTS : 2) ? -1 : 0;
}

static int teardown(void **s) {
  (void)s;
  lens_test_rmtree(top);
  return 0;
}

static int run(const char *args) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd %s && %s/bin/nccl-lens %s >/dev/null", dir, LENS_BUILD_DIR, args);
  return system(cmd);
}

/* Truth: each host's exact MONOTONIC offset from its namespace. */
static int64_t truth_tau(const char *host, int64_t *first_launch) {
  for (int i = 0; i < hosts_n; i++) {
    char path[400];
    snprintf(path, sizeof path, "%s/truth-%d.json", dir, i);
    struct mj *t = mj_parse_file(path);
    assert_non_null(t);
    const struct mj *pr = mj_at(mj_get(t, "processes"), 0);
    const char *h = mj_str(pr, "host");
    if (h && !strcmp(h, host)) {
      assert_non_null(mj_get(pr, "timens_mono_offset_ns"));
      int64_t tau = mj_int(pr, "timens_mono_offset_ns", 0);
      if (first_launch) *first_launch = mj_int(mj_at(mj_get(pr, "ops"), 0), "launch_start_ns", 0) - tau;
      mj_free(t);
      return tau;
    }
    mj_free(t);
  }
  fail_msg("host %s not in the truth", host);
  return 0;
}

/* What an alignment was asked for (nccl-lens job options). */
enum { ALL = 0, SYNC_ONLY = 1, ONEWAY_ONLY = 2, NO_ONEWAY = 3 };

/* Every host's aligned time of one real instant against the reference's.
 * Returns the widest bound (ns). */
static double check_alignment(const char *json, int mode, int judge) {
  int sync_only = mode == SYNC_ONLY;
  double widest = 0;
  char path[400];
  snprintf(path, sizeof path, "%s/%s", dir, json);
  struct mj *d = mj_parse_file(path);
  assert_non_null(d);
  const struct mj *hosts = mj_get(d, "hosts");
  assert_non_null(hosts);
  assert_int_equal(hosts->n, with_ns ? (size_t)hosts_n : 1);
  /* the instant: the first launch of host 0, on the machine's own clock */
  int64_t root = 0;
  const struct mj *ref = NULL;
  for (const struct mj *h = hosts->child; h; h = h->next)
    if (!strcmp(mj_str(h, "source"), "reference")) ref = h;
  assert_non_null(ref);
  truth_tau(mj_str(ref, "host"), &root);
  int64_t ref_tau = truth_tau(mj_str(ref, "host"), NULL);
  int64_t m_ref = root + ref_tau;
  double aligned_ref = (double)m_ref + (double)mj_int(ref, "offset_ns", 0) +
                       mj_get(ref, "drift_ppm")->num * 1e-6 * (double)(m_ref - mj_int(ref, "ref_mono_ns", 0));
  for (const struct mj *h = hosts->child; h; h = h->next) {
    if (h == ref) continue;
    const char *src = mj_str(h, "source");
    int64_t m = root + truth_tau(mj_str(h, "host"), NULL);
    double dt = (double)(m - mj_int(h, "ref_mono_ns", 0));
    double aligned = (double)m + (double)mj_int(h, "offset_ns", 0) + mj_get(h, "drift_ppm")->num * 1e-6 * dt;
    double err = aligned - aligned_ref;
    const struct mj *b = mj_get(h, "bound_ns");
    assert_true(b && b->type == MJ_NUM);
    double bound = b->num + mj_get(h, "drift_err_ppm")->num * 1e-6 * (dt < 0 ? -dt : dt) + 2;
    long long ow = mj_int(h, "one_way_pairs", -1);
    fprintf(stderr, "%s %s: %s, true error %.0f ns, bound %.0f ns (%lld sync points, %lld one-way pairs)\n", json,
            mj_str(h, "host"), src, err, bound, (long long)mj_int(h, "sync_points", 0), ow);
    assert_true(err <= bound && -err <= bound);
    if (bound > widest) widest = bound;
    if (sync_only) assert_string_equal(src, "sync points");
    if (judge && !strcmp(src, "sync points") && b->num <= 50000) assert_true(err <= 10000 && -err <= 10000);
    /* Links cross between every two neighbouring hosts of the ring: each
     * host's transfers pair (a receive provably after its send) unless
     * they were asked to be left out. */
    if (with_ns) assert_true(mode == NO_ONEWAY ? ow == 0 : ow > 0);
    if (mode == ONEWAY_ONLY) assert_string_equal(src, "one-way"); /* and placed: bound checked above */
  }
  if (with_ns) {
    const struct mj *tb = mj_get(d, "time_base");
    const struct mj *dr = mj_get(tb, "one_way_dropped");
    assert_true(dr && dr->type == MJ_BOOL && dr->num == 0); /* the pairs never contradicted REALTIME */
  }
  mj_free(d);
  return widest;
}

/* Two runs of the alignment placed every host identically. */
static void same_hosts(const char *json_a, const char *json_b) {
  char pa[400], pb[400];
  snprintf(pa, sizeof pa, "%s/%s", dir, json_a);
  snprintf(pb, sizeof pb, "%s/%s", dir, json_b);
  struct mj *a = mj_parse_file(pa), *b = mj_parse_file(pb);
  assert_non_null(a);
  assert_non_null(b);
  const struct mj *x = mj_get(a, "hosts")->child, *y = mj_get(b, "hosts")->child;
  for (; x && y; x = x->next, y = y->next) {
    assert_string_equal(mj_str(x, "host"), mj_str(y, "host"));
    assert_string_equal(mj_str(x, "source"), mj_str(y, "source"));
    assert_int_equal(mj_int(x, "offset_ns", 0), mj_int(y, "offset_ns", 1));
    assert_int_equal(mj_int(x, "bound_ns", -1), mj_int(y, "bound_ns", -1)); /* null (not placed) in both, or equal */
    assert_int_equal(mj_int(x, "one_way_pairs", -1), mj_int(y, "one_way_pairs", -2));
  }
  assert_null(x);
  assert_null(y);
  mj_free(a);
  mj_free(b);
}

/* Whether the 10 us accuracy is judged (the bound is asserted always): not
 * on an overloaded machine, and not under TSan, where every simulated
 * thread runs several times slower and the ranks' end brackets widen (a
 * fresh-clone CI's TSan stage: 10.5 us within a bound of 42 us; the normal
 * and ASan stages judge it). */
static int judge_accuracy(void) { return !job_machine_overloaded() && strcmp(LENS_SANITIZER, "thread") != 0; }

static void test_alignment(void **s) {
  (void)s;
  use_hosts(2);
  int judge = judge_accuracy();
  assert_int_equal(run("job --json . -o job.json"), 0);
  check_alignment("job.json", ALL, judge);
  assert_int_equal(run("job --json --sync-only . -o job-sync.json"), 0);
  if (with_ns) check_alignment("job-sync.json", SYNC_ONLY, judge);
  /* the one-way pairs alone (no REALTIME offset, no collective end) place
   * every host, within a bound that holds */
  assert_int_equal(run("job --json --one-way-only . -o job-oneway.json"), 0);
  if (with_ns) check_alignment("job-oneway.json", ONEWAY_ONLY, 0);
}

/* Four hosts: every bound holds with the one-way pairs, without them and
 * with them alone, and they bound every host alone. The widths go to stderr
 * (docs/timeline.md's figures). Not asserted: that the pairs never widen a
 * bound -- a pair that proves the ranks' ends further apart than the
 * assumed spread doubles it, and so may widen another host's bound. */
static void test_alignment_four_hosts(void **s) {
  (void)s;
  if (!with_ns) skip();
  use_hosts(MAX_HOSTS);
  assert_int_equal(run("job --json . -o job.json"), 0);
  assert_int_equal(run("job --json --no-one-way . -o job-no-oneway.json"), 0);
  assert_int_equal(run("job --json --one-way-only . -o job-oneway.json"), 0);
  double with = check_alignment("job.json", ALL, 0);
  double without = check_alignment("job-no-oneway.json", NO_ONEWAY, 0);
  double alone = check_alignment("job-oneway.json", ONEWAY_ONLY, 0);
  fprintf(stderr, "4 hosts, widest bound: %.1f us with the one-way pairs, %.1f us without, %.1f us from them alone\n",
          with / 1e3, without / 1e3, alone / 1e3);
}

/* Read host by host (--stream), and map-reduced through one partial file per
 * host: the records keep each rank's end bracket and each process's clock,
 * so the hosts are still placed by the sync points, within a bound that
 * holds. */
static void test_alignment_streamed(void **s) {
  (void)s;
  use_hosts(2);
  int judge = judge_accuracy();
  assert_int_equal(run("job --json --stream --sync-only . -o job-stream.json"), 0);
  if (with_ns) check_alignment("job-stream.json", SYNC_ONLY, judge);
  same_hosts("job-sync.json", "job-stream.json");
  assert_int_equal(run("job --json --stream --one-way-only . -o job-stream-oneway.json"), 0);
  same_hosts("job-oneway.json", "job-stream-oneway.json");
  char args[512];
  for (int i = 0; i < (with_ns ? hosts_n : 1); i++) { /* one partial per host (traces: nccl-lens-HOST-PID.lens) */
    snprintf(args, sizeof args, "job --partial -o part-%d.lensjob %s", i,
             with_ns ? (i ? "*-lens-host-1-*.lens" : "*-lens-host-0-*.lens") : "*.lens");
    assert_int_equal(run(args), 0);
  }
  assert_int_equal(run("job --json --sync-only part-*.lensjob -o job-parts.json"), 0);
  if (with_ns) check_alignment("job-parts.json", SYNC_ONLY, judge);
  else check_alignment("job-parts.json", ALL, 0);
  same_hosts("job-sync.json", "job-parts.json");
  /* the partials keep the one-way evidence (section WAYS) */
  assert_int_equal(run("job --json --one-way-only part-*.lensjob -o job-parts-oneway.json"), 0);
  same_hosts("job-oneway.json", "job-parts-oneway.json");
  assert_int_equal(run("job --json part-*.lensjob -o job-parts-all.json"), 0);
  same_hosts("job.json", "job-parts-all.json");
}

/* Instances of the job view with every rank, and their last ranks. */
static size_t full_instances(int nranks, size_t *with_last) {
  char path[400];
  snprintf(path, sizeof path, "%s/job.json", dir);
  struct mj *d = mj_parse_file(path);
  assert_non_null(d);
  size_t n = 0;
  *with_last = 0;
  for (const struct mj *c = mj_get(d, "collectives")->child; c; c = c->next)
    if (mj_int(c, "ranks_seen", 0) == nranks) {
      n++;
      const struct mj *l = mj_get(c, "last_rank");
      *with_last += l && l->type == MJ_NUM;
    }
  mj_free(d);
  return n;
}

static size_t count_in(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = 0, k = strlen(needle);
  char buf[1 << 16];
  size_t have = 0, r;
  while ((r = fread(buf + have, 1, sizeof buf - 1 - have, f)) > 0) {
    have += r;
    buf[have] = 0;
    for (char *p = buf; (p = strstr(p, needle)); p += k) n++;
    size_t keep = have < k ? have : k - 1;
    memmove(buf, buf + have - keep, keep);
    have = keep;
  }
  fclose(f);
  return n;
}

static void test_merged_export(void **s) {
  (void)s;
  use_hosts(with_ns ? MAX_HOSTS : 2);
  int nranks = hosts_n * RPN;
  char jp[320];
  snprintf(jp, sizeof jp, "%s/job.json", dir);
  if (access(jp, F_OK) != 0) assert_int_equal(run("job --json . -o job.json"), 0);
  assert_int_equal(run("export --format job *.lens -o timeline.json"), 0);
  char path[400];
  snprintf(path, sizeof path, "%s/timeline.json", dir);
  struct tl_check c;
  assert_int_equal(tl_check_file(path, &c), 0);
  fprintf(stderr, "merged export: %zu slices on %zu tracks, %zu flows, %zu nesting violations %s\n", c.slices,
          c.tracks, c.n_flows, c.nest_violations, c.first_violation);
  assert_true(c.slices > 100);
  assert_int_equal(c.nest_violations, 0);
  /* one time base, every host on it, a process per host */
  struct mj *d = mj_parse_file(path);
  const struct mj *od = mj_get(d, "otherData");
  assert_non_null(strstr(mj_str(od, "clock"), "job time base"));
  assert_non_null(mj_get(od, "origin_job_ns"));
  const struct mj *hosts = mj_get(od, "hosts");
  assert_int_equal(hosts->n, with_ns ? (size_t)hosts_n : 1);
  for (const struct mj *h = hosts->child; h; h = h->next) assert_string_not_equal(mj_str(h, "source"), "none");
  assert_int_equal(mj_int(od, "procs_unaligned_left_out", -1), 0);
  mj_free(d);
  assert_int_equal(count_in(path, "\"name\":\"process_name\""), with_ns ? (size_t)hosts_n : 1);
  assert_true(c.min_ts_ns >= 0);
  /* a flow through every rank of every full instance, each event inside its rank's slice */
  size_t with_last, full = full_instances(nranks, &with_last), flows_all = 0;
  for (size_t i = 0; i < c.n_flows; i++) {
    assert_int_equal(c.flows[i].unbound, 0);
    assert_true(c.flows[i].n_ranks >= 2);
    flows_all += c.flows[i].n_ranks == (size_t)nranks;
  }
  fprintf(stderr, "instances with every rank: %zu; flows through every rank: %zu; last ranks named: %zu\n", full,
          flows_all, with_last);
  assert_true(full >= 10);
  assert_int_equal(flows_all, full);
  assert_int_equal(count_in(path, "(last rank)"), with_last);
  assert_true(with_last >= full);
  tl_check_free(&c);
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Start (us) of rank's q-quantile slice in an export (nearest rank). */
static double rank_start_quantile(const struct mj *d, int rank, double q) {
  static double v[1 << 16];
  size_t n = 0;
  for (const struct mj *e = mj_get(d, "traceEvents")->child; e && n < sizeof v / sizeof v[0]; e = e->next) {
    const char *ph = mj_str(e, "ph");
    const struct mj *args = mj_get(e, "args");
    if (ph && !strcmp(ph, "X") && args && mj_int(args, "rank", -1) == rank) v[n++] = mj_get(e, "ts")->num;
  }
  assert_true(n >= 2);
  qsort(v, n, sizeof *v, cmp_dbl);
  return v[(size_t)(q * (double)(n - 1))];
}

static void test_export_selection(void **s) {
  (void)s;
  use_hosts(with_ns ? MAX_HOSTS : 2);
  /* A window over the middle of ranks 0 and 3's work: from the earlier of
   * their 30 % slice starts to the later of their 60 % ones, so each of them
   * has slices starting inside it by construction. (30 % to 60 % of the job's
   * span once held no slice of rank 0 or 3 under load 12: how the work spreads
   * over the span depends on how the four hosts' processes were scheduled.) */
  assert_int_equal(run("export --format job *.lens -o all.json"), 0);
  char path[400];
  snprintf(path, sizeof path, "%s/all.json", dir);
  struct mj *all = mj_parse_file(path);
  assert_non_null(all);
  double a0 = rank_start_quantile(all, 0, 0.3), a3 = rank_start_quantile(all, 3, 0.3);
  double b0 = rank_start_quantile(all, 0, 0.6), b3 = rank_start_quantile(all, 3, 0.6);
  mj_free(all);
  int64_t since = (int64_t)((a0 < a3 ? a0 : a3) * 1e3), until = (int64_t)((b0 > b3 ? b0 : b3) * 1e3) + 1000;
  struct tl_check c;
  char args[400];
  snprintf(args, sizeof args, "export --ranks 0,3 --since %.9f --until %.9f *.lens -o sel.json", since / 1e9,
           until / 1e9);
  assert_int_equal(run(args), 0);
  snprintf(path, sizeof path, "%s/sel.json", dir);
  assert_int_equal(tl_check_file(path, &c), 0);
  assert_true(c.slices > 0);
  assert_int_equal(c.nest_violations, 0);
  for (int r = 0; r < 4096; r++)
    if (r != 0 && r != 3) assert_int_equal(c.ranks_seen[r], 0);
  assert_true(c.ranks_seen[0] > 0 && c.ranks_seen[3] > 0);
  assert_true(c.max_end_ns >= since && c.min_ts_ns <= until);
  for (size_t i = 0; i < c.n_flows; i++) assert_true(c.flows[i].n_ranks <= 2);
  tl_check_free(&c);
  /* the window: nothing ends before --since or starts after --until */
  struct mj *d = mj_parse_file(path);
  for (const struct mj *e = mj_get(d, "traceEvents")->child; e; e = e->next) {
    const char *ph = mj_str(e, "ph");
    if (!ph || strcmp(ph, "X")) continue;
    double ts = mj_get(e, "ts")->num, dur = mj_get(e, "dur")->num;
    assert_true(ts + dur >= since / 1e3 - 0.002);
    assert_true(ts <= until / 1e3 + 0.002);
  }
  mj_free(d);
  /* bad selections are refused with one line */
  assert_true(run("export --ranks 3-1 *.lens -o bad.json 2>/dev/null") != 0);
  assert_true(run("export --format chrome --comm 12 *.lens -o bad.json 2>/dev/null") != 0);
  assert_true(run("export --since 2 --until 1 *.lens -o bad.json 2>/dev/null") != 0);
}

/* --format perfetto: protoc reads it back against our declared subset
 * (docs/timeline.md says what that cannot prove); the same slices as the
 * JSON, every SLICE_BEGIN closed by a SLICE_END on its track in order, the
 * flows, no field outside the subset. */
static void test_perfetto(void **s) {
  (void)s;
  use_hosts(with_ns ? MAX_HOSTS : 2);
  if (system("protoc --version >/dev/null 2>&1") != 0) {
    fprintf(stderr, "skipped: protoc not found (Debian protobuf-compiler)\n");
    skip();
  }
  assert_int_equal(run("export --format job *.lens -o timeline.json"), 0);
  assert_int_equal(run("export --format perfetto *.lens -o job.pftrace"), 0);
  char cmd[1200], path[400];
  snprintf(cmd, sizeof cmd,
           "protoc --decode=perfetto.protos.Trace -I %s/tools/export %s/tools/export/perfetto_subset.proto "
           "< %s/job.pftrace > %s/job.txt",
           LENS_SOURCE_DIR, LENS_SOURCE_DIR, dir, dir);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof path, "%s/timeline.json", dir);
  struct tl_check c;
  assert_int_equal(tl_check_file(path, &c), 0);
  size_t json_flow_events = 0;
  for (size_t i = 0; i < c.n_flows; i++) json_flow_events += c.flows[i].events;
  snprintf(path, sizeof path, "%s/job.txt", dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static int depth[1 << 20];
  memset(depth, 0, sizeof depth);
  char line[512];
  size_t begins = 0, ends = 0, flows = 0, unknown = 0, bad = 0, descriptors = 0;
  int type = 0;
  while (fgets(line, sizeof line, f)) {
    char *p = line;
    while (*p == ' ') p++;
    if (*p >= '0' && *p <= '9') unknown++; /* protoc prints fields it does not know by number */
    if (!strncmp(p, "track_descriptor", 16)) descriptors++;
    if (!strncmp(p, "type: TYPE_SLICE_BEGIN", 22)) type = 1, begins++;
    if (!strncmp(p, "type: TYPE_SLICE_END", 20)) type = 2, ends++;
    if (!strncmp(p, "flow_ids:", 9) || !strncmp(p, "terminating_flow_ids:", 21)) flows++;
    unsigned long long u;
    if (sscanf(p, "track_uuid: %llu", &u) == 1 && type) {
      size_t k = (size_t)(u - 1000000ull) & ((1u << 20) - 1);
      depth[k] += type == 1 ? 1 : -1;
      if (depth[k] < 0) bad++;
      type = 0;
    }
  }
  fclose(f);
  for (size_t k = 0; k < (1u << 20); k++) bad += depth[k] != 0;
  fprintf(stderr, "perfetto: %zu begins, %zu ends, %zu flow ids, %zu track descriptors; json: %zu slices, %zu flow "
          "events\n", begins, ends, flows, descriptors, c.slices, json_flow_events);
  assert_int_equal(unknown, 0);
  assert_int_equal(bad, 0);
  assert_int_equal(begins, c.slices);
  assert_int_equal(ends, c.slices);
  assert_int_equal(flows, json_flow_events);
  assert_true(descriptors > (size_t)hosts_n);
  tl_check_free(&c);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_alignment), cmocka_unit_test(test_alignment_streamed),
                                 cmocka_unit_test(test_alignment_four_hosts),
                                 cmocka_unit_test(test_merged_export),
                                 cmocka_unit_test(test_export_selection), cmocka_unit_test(test_perfetto)};
  return cmocka_run_group_tests(t, setup, teardown);
}
