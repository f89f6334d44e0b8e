/* The network view (tools/analysis/net/net_*.c, `nccl-lens net`) against the
 * replay's ground truth of every proxy step (docs/replay.md, "Network
 * scenarios"): bytes per link exact; every step's phases within 2 % or 1 us
 * (plus the truth's own bracket); the injected slow link ranked first with
 * "wire"; the GPU-bound sender and the slow receiver named by their phases;
 * nothing stands out when nothing was injected; IB QPs as the driver posted
 * them; starved steps not blamed. The scenarios' ms step times keep the
 * ranking checks above the scheduling noise of a moderately loaded machine;
 * whether a link stands out is judged against the truth's own step times
 * (check_standout), which an overloaded machine can squeeze under 2x. */
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
#include "../lens_test_file.h"
#include "mini_json.h"
#include "analysis/net/net_analysis.h"

enum { EVEN, SLOW_LINK, GPU_BOUND, SLOW_RECV, IB, NRUNS };
static const char *const scen[NRUNS] = {"net-even", "net-slow-link", "net-gpu-bound", "net-slow-recv", "net-ib"};

struct run {
  char dir[512], truth[512], json[512];
  struct mj *t, *j;
  struct lens_model *m;
  struct lens_net *n;
  char *paths[16];
  size_t npaths;
};
static struct run runs[NRUNS];
static struct cli_result res;

static const char *const phase_keys[LENS_NET_UNKNOWN] = {"send_gpu_wait_ns", "send_peer_wait_ns", "wire_ns",
                                                         "recv_data_wait_ns", "recv_flush_ns", "recv_gpu_wait_ns"};

static int load_run(int i) {
  struct run *r = &runs[i];
  snprintf(r->dir, sizeof r->dir, "%s/%s", cli_tmpdir(), scen[i]);
  snprintf(r->truth, sizeof r->truth, "%s/%s.truth.json", cli_tmpdir(), scen[i]);
  snprintf(r->json, sizeof r->json, "%s/%s.net.json", cli_tmpdir(), scen[i]);
  const char *rp[] = {"replay", "--scenario", scen[i], "--nodes",    "2",      "--ranks-per-node", "2", "--iters",
                      "2",      "--out",      r->dir,  "--truth", r->truth, "--quiet",          NULL};
  if (cli_run(&res, rp) || res.status) {
    fprintf(stderr, "replay %s failed (%d): %s\n", scen[i], res.status, res.err);
    return -1;
  }
  const char *nj[] = {"net", "--json", "-o", r->json, r->dir, NULL};
  if (cli_run(&res, nj) || res.status) {
    fprintf(stderr, "net --json failed (%d): %s\n", res.status, res.err);
    return -1;
  }
  DIR *d = opendir(r->dir);
  if (!d) return -1;
  struct dirent *de;
  while ((de = readdir(d)) && r->npaths < 16)
    if (strstr(de->d_name, ".lens")) {
      char p[1024];
      snprintf(p, sizeof p, "%s/%s", r->dir, de->d_name);
      r->paths[r->npaths++] = strdup(p);
    }
  closedir(d);
  char err[256];
  r->m = lens_model_load((const char *const *)r->paths, r->npaths, err, sizeof err, NULL);
  r->t = mj_parse_file(r->truth);
  r->j = mj_parse_file(r->json);
  r->n = r->m ? lens_net_build(r->m) : NULL;
  if (!r->m || !r->n || !r->t || !r->j) {
    fprintf(stderr, "%s: load failed (%s)\n", scen[i], r->m ? "" : err);
    return -1;
  }
  return 0;
}

static int setup(void **state) {
  (void)state;
  for (int i = 0; i < NRUNS; i++)
    if (load_run(i)) return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int i = 0; i < NRUNS; i++) {
    struct run *r = &runs[i];
    lens_net_free(r->n);
    if (r->m) lens_model_free(r->m);
    mj_free(r->t);
    mj_free(r->j);
    for (size_t k = 0; k < r->npaths; k++) free(r->paths[k]);
  }
  cli_cleanup();
  return 0;
}

/* Every truth step of a run, calling fn(step, ctx). */
static void each_truth_step(const struct run *r, void (*fn)(const struct mj *s, void *ctx), void *ctx) {
  const struct mj *procs = mj_get(r->t, "processes");
  assert_non_null(procs);
  for (size_t p = 0; p < procs->n; p++) {
    const struct mj *net = mj_get(mj_at(procs, p), "net");
    assert_non_null(net);
    assert_int_equal(mj_int(net, "step_drops", -1), 0);
    const struct mj *steps = mj_get(net, "steps");
    for (size_t i = 0; i < steps->n; i++) fn(mj_at(steps, i), ctx);
  }
}
static int is_send(const struct mj *s) { return !strcmp(mj_str(s, "dir"), "send"); }

/* ---- per link: the JSON contract against the truth's sums ---- */
struct link_sum {
  int rank, peer, channel, send;
  uint64_t steps, bytes, err;
  int64_t phase[LENS_NET_UNKNOWN];
};
struct sums { struct link_sum l[256]; size_t n; };
static void add_sum(const struct mj *s, void *ctx) {
  struct sums *S = ctx;
  int rank = (int)mj_int(s, "rank", -1), peer = (int)mj_int(s, "peer", -1), ch = (int)mj_int(s, "channel", -1),
      send = is_send(s);
  size_t i = 0;
  while (i < S->n && !(S->l[i].rank == rank && S->l[i].peer == peer && S->l[i].channel == ch && S->l[i].send == send)) i++;
  if (i == S->n) {
    assert_true(S->n < 256);
    S->l[S->n++] = (struct link_sum){.rank = rank, .peer = peer, .channel = ch, .send = send};
  }
  struct link_sum *L = &S->l[i];
  L->steps++;
  L->bytes += mj_uint(s, "bytes", 0);
  L->err += mj_uint(s, "err_ns", 0);
  for (int p = 0; p < LENS_NET_UNKNOWN; p++) L->phase[p] += mj_int(s, phase_keys[p], 0);
}

static void check_links(int run) {
  struct run *r = &runs[run];
  struct sums *S = calloc(1, sizeof *S);
  each_truth_step(r, add_sum, S);
  const struct mj *links = mj_get(r->j, "links");
  assert_non_null(links);
  assert_int_equal(links->n, S->n);
  for (size_t i = 0; i < links->n; i++) {
    const struct mj *l = mj_at(links, i);
    /* the contract's keys */
    static const char *const keys[] = {"rank", "peer", "channel", "dir", "steps", "bytes", "gpu_wait_ns",
                                       "peer_wait_ns", "wire_ns", "wire_gbps", "p99_step_ns"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) assert_non_null(mj_get(l, keys[k]));
    int send = !strcmp(mj_str(l, "dir"), "send");
    const struct link_sum *L = NULL;
    for (size_t k = 0; k < S->n; k++)
      if (S->l[k].rank == mj_int(l, "rank", -2) && S->l[k].peer == mj_int(l, "peer", -2) &&
          S->l[k].channel == mj_int(l, "channel", -2) && S->l[k].send == send)
        L = &S->l[k];
    assert_non_null(L);
    assert_int_equal(mj_uint(l, "steps", 0), L->steps);
    assert_int_equal(mj_uint(l, "bytes", 0), L->bytes); /* exact */
    const struct mj *ph = mj_get(l, "phases_ns");
    for (int p = 0; p < LENS_NET_UNKNOWN; p++) {
      int64_t got = mj_int(ph, lens_net_phase_name(p), -1), want = L->phase[p];
      int64_t tol = (int64_t)(0.02 * (double)want);
      int64_t abs_tol = (int64_t)(1000 * L->steps + L->err);
      if (tol < abs_tol) tol = abs_tol;
      if (llabs(got - want) > tol)
        fail_msg("%s: r%d->r%d ch%d %s %s: %" PRId64 " ns, truth %" PRId64 " (tolerance %" PRId64 ")", scen[run],
                 L->rank, L->peer, L->channel, send ? "send" : "recv", lens_net_phase_name(p), got, want, tol);
    }
    assert_int_equal(mj_int(ph, "unknown", -1), 0);
    /* the contract's waits are the direction's phases */
    assert_int_equal(mj_int(l, "gpu_wait_ns", -1), mj_int(ph, send ? "send_gpu_wait" : "recv_gpu_wait", -2));
    assert_int_equal(mj_int(l, "peer_wait_ns", -1), mj_int(ph, send ? "send_peer_wait" : "recv_data_wait", -2));
    assert_int_equal(mj_int(l, "wire_ns", -1), send ? mj_int(ph, "wire", -2) : 0);
  }
  free(S);
}

static void test_links_match_truth(void **state) {
  (void)state;
  for (int i = 0; i < NRUNS; i++) check_links(i);
}

/* ---- per step: every ProxyStep against its truth step ---- */
struct step_match {
  const struct run *r;
  uint64_t matched, checked;
  int32_t *steps; /* ProxyStep event indexes, sorted by step number */
  size_t n;
};
static const struct lens_model *sort_model;
static int by_step(const void *a, const void *b) {
  int x = sort_model->events[*(const int32_t *)a].p.proxy_step.step, y = sort_model->events[*(const int32_t *)b].p.proxy_step.step;
  return (x > y) - (x < y);
}
static void index_steps(struct step_match *M) {
  const struct lens_model *m = M->r->m;
  M->steps = malloc(m->n_events * sizeof *M->steps);
  for (size_t i = 0; i < m->n_events; i++)
    if (m->events[i].type == LENS_T_PROXY_STEP && m->events[i].parent >= 0) M->steps[M->n++] = (int32_t)i;
  sort_model = m;
  qsort(M->steps, M->n, sizeof *M->steps, by_step);
}
static void match_step(const struct mj *s, void *ctx) {
  struct step_match *M = ctx;
  const struct lens_model *m = M->r->m;
  int64_t start = mj_int(s, "start_ns", 0);
  int32_t best = -1;
  int64_t bestd = INT64_MAX;
  int want = (int)mj_int(s, "step", -1);
  size_t lo = 0, hi = M->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m->events[M->steps[mid]].p.proxy_step.step < want) lo = mid + 1;
    else hi = mid;
  }
  for (size_t x = lo; x < M->n && m->events[M->steps[x]].p.proxy_step.step == want; x++) {
    size_t i = (size_t)M->steps[x];
    const struct lens_event *e = &m->events[i];
    const struct lens_event *op = &m->events[e->parent];
    if (op->rank != mj_int(s, "rank", -1) || op->p.proxy_op.peer != mj_int(s, "peer", -1) ||
        op->p.proxy_op.channel != mj_int(s, "channel", -1) || op->p.proxy_op.is_send != is_send(s))
      continue;
    int64_t d = llabs((int64_t)e->start_mono_ns - start);
    if (d < bestd) bestd = d, best = (int32_t)i;
  }
  /* a preempted driver widens its bracket; the plugin's time lies inside it */
  if (best < 0 || bestd > 20000 + 2 * mj_int(s, "err_ns", 0)) fail_msg("truth step without its ProxyStep (start %" PRId64 ", nearest %" PRId64 " ns away)", start, best < 0 ? -1 : bestd);
  M->matched++;
  struct lens_net_step st;
  assert_int_equal(lens_net_step_split(m, best, &st), 1);
  assert_int_equal(st.bytes, mj_uint(s, "bytes", 0));
  int64_t err = mj_int(s, "err_ns", 0), whole = 0;
  for (int p = 0; p < LENS_NET_UNKNOWN; p++) {
    int64_t want = mj_int(s, phase_keys[p], 0), got = (int64_t)st.phase_ns[p];
    int64_t tol = (int64_t)(0.02 * (double)want);
    if (tol < 1000 + err) tol = 1000 + err;
    if (llabs(got - want) > tol)
      fail_msg("r%d->r%d ch%d step %d %s: %" PRId64 " ns, truth %" PRId64 " (tolerance %" PRId64 ")",
               (int)mj_int(s, "rank", -1), (int)mj_int(s, "peer", -1), (int)mj_int(s, "channel", -1),
               (int)mj_int(s, "step", -1), lens_net_phase_name(p), got, want, tol);
    whole += got;
    M->checked++;
  }
  assert_int_equal(whole, (int64_t)(st.stop_ns - st.start_ns)); /* phases add up to the step */
}

static void test_steps_match_truth(void **state) {
  (void)state;
  for (int i = 0; i < NRUNS; i++) {
    struct step_match M = {.r = &runs[i]};
    index_steps(&M);
    each_truth_step(&runs[i], match_step, &M);
    free(M.steps);
    assert_true(M.matched > 100);
    assert_int_equal(M.matched, runs[i].n->total.steps);
  }
}

/* ---- what the truth's own step times say ----
 * The ranking claims are about what happened. On a loaded machine the
 * replay's proxy threads are descheduled for ms at a time (its truth lists
 * those gaps), which lengthens every step and can squeeze an injected delay
 * under the 2x threshold: at load 12 a 40 ms/step slow receiver's steps
 * really were only 1.93x the typical step. The truth's step times are what
 * the analysis measures (within 2 % or 1 us: test_steps_match_truth), so a
 * score computed from the truth as lens_net computes it (a link's median step
 * over the median step of its direction) bounds the analysis's score: each
 * median within 2 %, a score within ~4 %, a ratio of two scores within ~8 %. */
#define TRUTH_MARGIN 1.1

struct tstep { int rank, peer, ch, send; int64_t ns; };
struct tsteps { struct tstep s[8192]; size_t n; int64_t gaps_ns; };
static void add_tstep(const struct mj *s, void *ctx) {
  struct tsteps *T = ctx;
  assert_true(T->n < sizeof T->s / sizeof T->s[0]);
  T->s[T->n++] = (struct tstep){(int)mj_int(s, "rank", -1), (int)mj_int(s, "peer", -1), (int)mj_int(s, "channel", -1),
                                is_send(s), mj_int(s, "stop_ns", 0) - mj_int(s, "start_ns", 0)};
}
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}
/* Nearest-rank median of the steps that match (rank < 0: every rank), as lens_net's. */
static double tmedian(const struct tsteps *T, int rank, int peer, int ch, int send) {
  static int64_t v[8192];
  size_t n = 0;
  for (size_t i = 0; i < T->n; i++) {
    const struct tstep *x = &T->s[i];
    if (x->send == send && (rank < 0 || (x->rank == rank && x->peer == peer && x->ch == ch))) v[n++] = x->ns;
  }
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_i64);
  return (double)v[(n - 1) / 2];
}
static const struct tsteps *truth_steps(const struct run *r) {
  static struct tsteps T;
  static const struct run *of;
  if (of == r) return &T;
  T.n = 0;
  T.gaps_ns = 0;
  each_truth_step(r, add_tstep, &T);
  const struct mj *procs = mj_get(r->t, "processes");
  for (size_t p = 0; p < procs->n; p++) {
    const struct mj *g = mj_get(mj_get(mj_at(procs, p), "net"), "proxy_gaps");
    for (size_t i = 0; g && i < g->n; i++) T.gaps_ns += mj_int(mj_at(g, i), "end_ns", 0) - mj_int(mj_at(g, i), "start_ns", 0);
  }
  of = r;
  return &T;
}
/* src -> dst on channel ch: the larger score of its send link and its receive link (as lens_net_conn). */
static double truth_conn_score(const struct run *r, int src, int dst, int ch) {
  const struct tsteps *T = truth_steps(r);
  double ms = tmedian(T, -1, 0, 0, 1), mr = tmedian(T, -1, 0, 0, 0);
  double a = ms > 0 ? tmedian(T, src, dst, ch, 1) / ms : 0, b = mr > 0 ? tmedian(T, dst, src, ch, 0) / mr : 0;
  return a > b ? a : b;
}
/* The analysis must agree with the truth wherever the truth is clear; an
 * injected connection (want) that the truth itself shows below the threshold
 * is only excused by proxy gaps in the truth (a loaded machine), else the
 * scenario is broken. Returns whether the connection was judged. */
static int check_standout(const struct run *r, const struct lens_net_conn *k, int want) {
  double ts = truth_conn_score(r, k->src, k->dst, k->channel);
  if (ts >= LENS_NET_STANDOUT * TRUTH_MARGIN) {
    if (!k->stands_out)
      fail_msg("r%d -> r%d ch%d: truth score %.2f, lens_net %.2f does not stand out", k->src, k->dst, k->channel, ts,
               k->score);
    return 1;
  }
  if (ts <= LENS_NET_STANDOUT / TRUTH_MARGIN) {
    if (k->stands_out)
      fail_msg("r%d -> r%d ch%d: truth score %.2f, lens_net %.2f stands out", k->src, k->dst, k->channel, ts, k->score);
    if (!want) return 1;
  }
  if (want) {
    fprintf(stderr, "note: r%d -> r%d ch%d: the injected delay shows as only %.2fx the typical step in the truth "
                    "(its proxies were descheduled %.0f ms in all): stand-out not judged\n",
            k->src, k->dst, k->channel, ts, (double)truth_steps(r)->gaps_ns / 1e6);
    assert_true(truth_steps(r)->gaps_ns > 0);
  }
  return 0;
}

/* ---- ranking and naming ---- */
static const struct mj *injected(const struct run *r) {
  return mj_get(mj_get(mj_at(mj_get(r->t, "processes"), 0), "net"), "injected");
}

static void test_even_nothing_stands_out(void **state) {
  (void)state;
  for (int i = 0; i < NRUNS; i++) {
    if (i != EVEN && i != IB) continue;
    const struct lens_net *n = runs[i].n;
    assert_true(n->n_conns >= 8); /* 2 x 2: every rank to both ranks of the other node, 2 channels */
    for (size_t c = 0; c < n->n_conns; c++)
      if (n->conns[c].stands_out)
        fail_msg("%s: r%d -> r%d ch%d stands out (score %.2f) with nothing injected", scen[i], n->conns[c].src,
                 n->conns[c].dst, n->conns[c].channel, n->conns[c].score);
  }
}

static void test_slow_link_first_on_wire(void **state) {
  (void)state;
  const struct run *r = &runs[SLOW_LINK];
  const struct mj *inj = injected(r);
  assert_non_null(inj);
  assert_string_equal(mj_str(inj, "phase"), "wire");
  int src = (int)mj_int(inj, "src", -1), dst = (int)mj_int(inj, "dst", -1);
  const struct lens_net *n = r->n;
  int standing = 0;
  for (size_t c = 0; c < n->n_conns; c++) {
    const struct lens_net_conn *k = &n->conns[c];
    int injected_link = k->src == src && k->dst == dst;
    if (c == 0) assert_true(injected_link);
    if (injected_link) {
      check_standout(r, k, 1);
      assert_int_equal(k->dominant, LENS_NET_SEND_WIRE);
      assert_true(k->reverse >= 0);
      check_standout(r, &n->conns[k->reverse], 0); /* one direction only */
      double ta = truth_conn_score(r, k->src, k->dst, k->channel) /
                  truth_conn_score(r, k->dst, k->src, k->channel); /* the truth's asymmetry */
      if (ta >= 2.0 * TRUTH_MARGIN * TRUTH_MARGIN) assert_true(k->asymmetry >= 2.0);
      assert_int_equal(n->links[k->send_link].dominant, LENS_NET_SEND_WIRE);
      standing++;
    } else {
      check_standout(r, k, 0); /* nothing beside the injected link */
    }
  }
  assert_int_equal(standing, 2); /* both channels of the link */
  /* the slow-link rule (lens_net_link_is_slow, shared with job and the
   * report): the injected link where it stands out, with its time on the
   * wire; no other connection */
  for (size_t c = 0; c < n->n_conns; c++) {
    const struct lens_net_conn *k = &n->conns[c];
    if (k->src == src && k->dst == dst) assert_int_equal(k->slow, k->stands_out);
    else assert_false(k->slow);
  }
  /* the JSON (no starvation known to it) names the link's phase too */
  const struct mj *links = mj_get(r->j, "links");
  int found = 0;
  for (size_t i = 0; i < links->n; i++) {
    const struct mj *l = mj_at(links, i);
    if (mj_int(l, "rank", -1) != src || mj_int(l, "peer", -1) != dst || strcmp(mj_str(l, "dir"), "send")) continue;
    assert_string_equal(mj_str(l, "dominant"), "wire");
    assert_true(mj_get(l, "wire_gbps")->num > 0);
    found++;
  }
  assert_int_equal(found, 2);
}

static void test_gpu_bound_named(void **state) {
  (void)state;
  const struct run *r = &runs[GPU_BOUND];
  int src = (int)mj_int(injected(r), "src", -1);
  assert_string_equal(mj_str(injected(r), "phase"), "send_gpu_wait");
  const struct lens_net *n = r->n;
  assert_int_equal(n->conns[0].src, src);
  assert_int_equal(n->conns[0].dominant, LENS_NET_SEND_GPU_WAIT);
  /* its 4 connections (both ranks of the other node, 2 channels) first */
  assert_true(n->n_conns >= 8);
  for (size_t c = 0; c < 4; c++) {
    assert_int_equal(n->conns[c].src, src);
    check_standout(r, &n->conns[c], 1);
    assert_int_equal(n->conns[c].dominant, LENS_NET_SEND_GPU_WAIT);
  }
  /* standing out by pace, but the sender waits on its GPU: never a slow
   * link (lens_net_link_is_slow), in the view and in its JSON */
  for (size_t c = 0; c < n->n_conns; c++) assert_false(n->conns[c].slow);
  const struct mj *conns = mj_get(r->j, "connections");
  assert_non_null(conns);
  for (size_t i = 0; i < conns->n; i++) {
    const struct mj *slow = mj_get(mj_at(conns, i), "slow");
    assert_non_null(slow);
    assert_int_equal(slow->type, MJ_BOOL);
    assert_true(slow->num == 0);
  }
  assert_int_equal(mj_int(mj_get(r->j, "totals"), "slow_connections", -1), 0);
  /* per instance: the sender's Send instances say so too (the job view's
   * question), and their GPU wait per step is well above the other ranks' */
  int seen = 0, named = 0;
  double own = 0, others = 0;
  int n_others = 0;
  for (size_t i = 0; i < r->m->n_events; i++) {
    const struct lens_event *e = &r->m->events[i];
    if (e->type != LENS_T_P2P || !e->p.p2p.func || strcmp(e->p.p2p.func, "Send")) continue;
    int rank = e->comm >= 0 ? r->m->comms[e->comm].rank : e->rank;
    struct lens_net_split s;
    if (!lens_net_instance_split(r->m, (int32_t)i, &s)) continue;
    assert_true(s.steps > 0);
    double per_step = (double)s.phase_ns[LENS_NET_SEND_GPU_WAIT] / (double)s.steps;
    if (rank == src) {
      named += lens_net_split_dominant(&s) == LENS_NET_SEND_GPU_WAIT;
      own += per_step;
      seen++;
    } else {
      others += per_step;
      n_others++;
    }
  }
  assert_true(seen >= 4 && n_others >= 4);
  assert_true(named * 4 >= seen * 3); /* a few instances may be dominated by a descheduled proxy */
  assert_true(own / seen > 3 * (others / n_others));
}

static void test_slow_recv_named(void **state) {
  (void)state;
  const struct run *r = &runs[SLOW_RECV];
  int dst = (int)mj_int(injected(r), "dst", -1);
  assert_string_equal(mj_str(injected(r), "phase"), "recv_gpu_wait");
  const struct lens_net *n = r->n;
  assert_int_equal(n->conns[0].dst, dst);
  assert_int_equal(n->conns[0].dominant, LENS_NET_RECV_GPU_WAIT);
  /* its 4 connections (from both ranks of the other node, 2 channels) first */
  assert_true(n->n_conns >= 8);
  for (size_t c = 0; c < 4; c++) {
    const struct lens_net_conn *k = &n->conns[c];
    assert_int_equal(k->dst, dst);
    check_standout(r, k, 1);
    assert_int_equal(k->dominant, LENS_NET_RECV_GPU_WAIT);
    assert_int_equal(n->links[k->recv_link].dominant, LENS_NET_RECV_GPU_WAIT);
    assert_int_equal(n->links[k->send_link].dominant, LENS_NET_SEND_PEER_WAIT); /* its senders wait for credit */
  }
}

/* ---- net and job name the same slow links (issue 26 item 8) ---- */
/* The links job --json names slow_link, as src * 1000 + dst, into v; their count. */
static size_t job_slow_links(const struct run *r, int *v, size_t cap) {
  char out[600];
  snprintf(out, sizeof out, "%s.job.json", r->json);
  const char *args[] = {"job", "--json", "-o", out, r->dir, NULL};
  assert_int_equal(cli_run(&res, args), 0);
  assert_int_equal(res.status, 0);
  struct mj *j = mj_parse_file(out);
  assert_non_null(j);
  const struct mj *cs = mj_get(j, "collectives");
  assert_non_null(cs);
  size_t n = 0;
  for (size_t i = 0; i < cs->n; i++) {
    const struct mj *c = mj_at(cs, i);
    const char *cause = mj_str(c, "cause");
    if (!cause || strcmp(cause, "slow_link") || n == cap) continue;
    v[n++] = (int)(mj_int(c, "cause_rank", -1) * 1000 + mj_int(c, "cause_peer", -1));
  }
  mj_free(j);
  return n;
}
/* net-gpu-bound: the sender waits on its GPU; neither view calls a link
 * slow (one rule, lens_net_link_is_slow; test_net_job_agree checks the
 * three scenarios on the golden traces). */
static void test_gpu_bound_no_slow_link_in_net_or_job(void **state) {
  (void)state;
  const struct run *r = &runs[GPU_BOUND];
  for (size_t c = 0; c < r->n->n_conns; c++) assert_false(r->n->conns[c].slow);
  int v[256];
  size_t n = job_slow_links(r, v, 256);
  if (n) fail_msg("job names %zu slow links on net-gpu-bound (first %d -> %d)", n, v[0] / 1000, v[0] % 1000);
}

/* ---- the slow-link rule itself ---- */
static struct lens_net_split blamed(uint64_t gpu, uint64_t peer, uint64_t wire, uint64_t data, uint64_t rgpu) {
  struct lens_net_split s;
  memset(&s, 0, sizeof s);
  s.blame_ns[LENS_NET_SEND_GPU_WAIT] = gpu;
  s.blame_ns[LENS_NET_SEND_PEER_WAIT] = peer;
  s.blame_ns[LENS_NET_SEND_WIRE] = wire;
  s.blame_ns[LENS_NET_RECV_DATA_WAIT] = data;
  s.blame_ns[LENS_NET_RECV_GPU_WAIT] = rgpu;
  return s;
}
static void test_slow_link_rule(void **state) {
  (void)state;
  struct lens_net_split wire = blamed(10, 5, 100, 110, 1), gpu = blamed(100, 5, 10, 110, 1);
  assert_true(lens_net_link_is_slow(LENS_NET_STANDOUT, &wire, 1, 1));
  assert_false(lens_net_link_is_slow(LENS_NET_STANDOUT * 0.99, &wire, 1, 1)); /* at its peers' pace */
  assert_false(lens_net_link_is_slow(100.0, &gpu, 1, 1));                     /* the sender waits on its GPU */
  assert_false(lens_net_link_is_slow(100.0, &gpu, 1, 0));
  struct lens_net_split rgpu = blamed(1, 100, 2, 110, 200);
  assert_false(lens_net_link_is_slow(100.0, &rgpu, 1, 1)); /* the receiver's GPU holds it */
  /* one side only: its wait for the other end cannot be told from the wire */
  struct lens_net_split credit = blamed(1, 100, 2, 0, 0), data = blamed(0, 0, 0, 100, 1);
  assert_true(lens_net_link_is_slow(3.0, &credit, 1, 0));
  assert_true(lens_net_link_is_slow(3.0, &data, 0, 1));
  /* both sides known: the sender's credit wait is the receiver's time */
  struct lens_net_split both = blamed(1, 100, 2, 0, 50);
  assert_int_equal(lens_net_link_dominant(&both, 1, 1), LENS_NET_RECV_GPU_WAIT);
  assert_false(lens_net_link_is_slow(3.0, &both, 1, 1));
  struct lens_net_split none = blamed(0, 0, 0, 0, 0);
  assert_false(lens_net_link_is_slow(3.0, &none, 1, 1));
}

/* ---- NetPlugin: per QP as the driver posted them ---- */
struct qp_truth { int rank, device, qp; uint64_t events, bytes; };
struct qps { struct qp_truth q[64]; size_t n; };
static void add_qp(const struct mj *s, void *ctx) {
  struct qps *Q = ctx;
  int rank = (int)mj_int(s, "rank", -1), dev = (int)mj_int(s, "device", -1), qp = (int)mj_int(s, "qp", -1);
  size_t i = 0;
  while (i < Q->n && !(Q->q[i].rank == rank && Q->q[i].device == dev && Q->q[i].qp == qp)) i++;
  if (i == Q->n) Q->q[Q->n++] = (struct qp_truth){rank, dev, qp, 0, 0};
  Q->q[i].events++;
  Q->q[i].bytes += mj_uint(s, "bytes", 0);
}
static void test_ib_qps(void **state) {
  (void)state;
  const struct run *r = &runs[IB];
  struct qps Q = {0};
  each_truth_step(r, add_qp, &Q);
  const struct lens_net *n = r->n;
  assert_true(n->net_plugin_events > 0);
  assert_int_equal(n->net_plugin_unparented, 0);
  assert_int_equal(n->n_qps, Q.n);
  for (size_t i = 0; i < n->n_qps; i++) {
    const struct lens_net_qp *q = &n->qps[i];
    assert_int_equal(q->transport, LENS_NET_TRANSPORT_IB);
    const struct qp_truth *t = NULL;
    for (size_t k = 0; k < Q.n; k++)
      if (Q.q[k].rank == q->rank && Q.q[k].device == q->device && Q.q[k].qp == q->qp_num) t = &Q.q[k];
    assert_non_null(t);
    assert_int_equal(q->events, t->events); /* one work request per step */
    assert_int_equal(q->bytes, t->bytes);
    assert_int_equal(q->timed, q->events);
    assert_true(q->p50_ns <= q->max_ns);
  }
  for (size_t l = 0; l < n->n_links; l++) assert_int_equal(n->links[l].transport, LENS_NET_TRANSPORT_IB);
  /* and not in the runs without NetPlugin */
  assert_int_equal(runs[EVEN].n->net_plugin_events, 0);
  assert_int_equal(runs[EVEN].n->links[0].transport, LENS_NET_TRANSPORT_NET);
}

/* ---- per instance: the instance splits partition the links' steps ---- */
static void test_instances_partition(void **state) {
  (void)state;
  for (int i = 0; i < NRUNS; i++) {
    const struct lens_model *m = runs[i].m;
    struct lens_net_split sum, s;
    memset(&sum, 0, sizeof sum);
    for (size_t e = 0; e < m->n_events; e++) {
      int t = m->events[e].type;
      if ((t == LENS_T_COLL || t == LENS_T_P2P) && lens_net_instance_split(m, (int32_t)e, &s)) {
        sum.ops += s.ops;
        sum.steps += s.steps;
        sum.bytes += s.bytes;
        for (int p = 0; p < LENS_NET_NPHASES; p++) sum.phase_ns[p] += s.phase_ns[p];
      }
    }
    const struct lens_net_split *tot = &runs[i].n->total;
    assert_int_equal(sum.ops, tot->ops);
    assert_int_equal(sum.steps, tot->steps);
    assert_int_equal(sum.bytes, tot->bytes);
    for (int p = 0; p < LENS_NET_NPHASES; p++) assert_int_equal(sum.phase_ns[p], tot->phase_ns[p]);
  }
}

/* ---- starvation: a starved step keeps its time but is not blamed ---- */
static void test_starved_steps_not_blamed(void **state) {
  (void)state;
  struct run *r = &runs[SLOW_LINK];
  const struct mj *inj = injected(r);
  int src = (int)mj_int(inj, "src", -1), dst = (int)mj_int(inj, "dst", -1);
  /* As lens_analyze_starvation would: the proxies of the slow link were starved
   * through every one of its steps. */
  uint64_t flagged = 0;
  for (size_t i = 0; i < r->m->n_events; i++) {
    struct lens_event *e = &r->m->events[i];
    if (e->type != LENS_T_PROXY_STEP || e->parent < 0) continue;
    const struct lens_event *op = &r->m->events[e->parent];
    int from = op->p.proxy_op.is_send ? op->rank : op->p.proxy_op.peer;
    int to = op->p.proxy_op.is_send ? op->p.proxy_op.peer : op->rank;
    if (from == src && to == dst && e->stop_mono_ns) {
      e->acc.flags |= LENS_ACC_STARVED;
      flagged++;
    }
  }
  struct lens_net *n = lens_net_build(r->m);
  assert_non_null(n);
  assert_int_equal(n->total.starved_steps, flagged);
  assert_int_equal(n->total.phase_ns[LENS_NET_SEND_WIRE], r->n->total.phase_ns[LENS_NET_SEND_WIRE]); /* kept */
  for (size_t c = 0; c < n->n_conns; c++) {
    const struct lens_net_conn *k = &n->conns[c];
    if (k->src != src || k->dst != dst) continue;
    assert_false(k->stands_out);
    assert_int_equal(k->dominant, -1); /* nothing left to blame */
    assert_int_equal(n->links[k->send_link].t.starved_steps, n->links[k->send_link].t.steps);
    assert_int_equal(n->links[k->send_link].t.blame_ns[LENS_NET_SEND_WIRE], 0);
  }
  lens_net_free(n);
  for (size_t i = 0; i < r->m->n_events; i++) r->m->events[i].acc.flags &= ~LENS_ACC_STARVED;
}

/* ---- the command's text ---- */
static void test_text_fits_a_screen(void **state) {
  (void)state;
  const char *args[] = {"net", runs[SLOW_LINK].dir, NULL};
  assert_int_equal(cli_run(&res, args), 0);
  assert_int_equal(res.status, 0);
  int lines = 0;
  for (const char *p = res.out; *p; p++) lines += *p == '\n';
  assert_true(lines <= 45);
  assert_true(lens_test_max_line(res.out) <= 120);
  /* the injected link's rows name the wire (their rank may move on a machine
   * so busy that the proxies starve: the CLI has no probe trace here) */
  int rows = 0;
  for (const char *row = strstr(res.out, "r1 -> r2"); row; row = strstr(row + 1, "r1 -> r2")) {
    const char *eol = strchr(row, '\n');
    char line[512];
    snprintf(line, sizeof line, "%.*s", eol ? (int)(eol - row) : 200, row);
    if (strstr(line, " ch ") || strstr(line, " channels (")) continue; /* the asymmetry and slow-links lines */
    assert_non_null(strstr(line, "wire"));
    rows++;
  }
  assert_int_equal(rows, 2);
  assert_non_null(strstr(res.out, "asymmetry"));
  /* and the slow-link line names it, alone (unless a busy machine hid it) */
  const char *sl = strstr(res.out, "slow links");
  assert_non_null(sl);
  if (strncmp(sl, "slow links: none", 16)) {
    const char *e = strstr(sl, "slower): r1 -> r2 on 2 channels (wire; "), *eol = strchr(sl, '\n');
    assert_non_null(e);
    assert_non_null(eol);
    assert_true(e < eol && eol[-1] == ')'); /* alone on its line */
    const char *next = strstr(e + strlen("slower): r1 -> r2"), "->"); /* another link on the line */
    assert_true(!next || next > eol);
  }
  /* the report's Network section: the same rows, one screen, and a hint */
  char paths[4][1024];
  const char *rep[8] = {"report"};
  size_t k = 0;
  for (; k < runs[SLOW_LINK].npaths && k < 4; k++) {
    snprintf(paths[k], sizeof paths[k], "%s", runs[SLOW_LINK].paths[k]);
    rep[k + 1] = paths[k];
  }
  rep[k + 1] = NULL;
  assert_int_equal(cli_run(&res, rep), 0);
  assert_int_equal(res.status, 0);
  const char *sec = strstr(res.out, "\n## Network\n"), *end = sec ? strstr(sec, "\n## Data losses\n") : NULL;
  assert_non_null(sec);
  assert_non_null(end);
  int sec_lines = 0, link_rows = 0;
  for (const char *p = sec; p < end; p++) sec_lines += *p == '\n';
  assert_true(sec_lines <= 45);
  for (const char *p = strstr(sec, "| r1 -> r2 |"); p && p < end; p = strstr(p + 1, "| r1 -> r2 |")) {
    const char *eol = strchr(p, '\n');
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(eol - p), p);
    assert_non_null(strstr(line, "| wire |"));
    link_rows++;
  }
  assert_int_equal(link_rows, 2);
  assert_non_null(strstr(res.out, "- **Slow link r1 -> r2")); /* net's rule: wire-bound */
  /* a bad value: one line, exit 2 (a usage error) */
  const char *bad[] = {"net", "--top", "x", runs[SLOW_LINK].dir, NULL};
  assert_int_equal(cli_run(&res, bad), 0);
  assert_int_equal(res.status, 2);
  assert_int_equal(res.err_lines, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_links_match_truth),      cmocka_unit_test(test_steps_match_truth),
      cmocka_unit_test(test_even_nothing_stands_out), cmocka_unit_test(test_slow_link_first_on_wire),
      cmocka_unit_test(test_gpu_bound_named),         cmocka_unit_test(test_slow_recv_named),
      cmocka_unit_test(test_ib_qps),                  cmocka_unit_test(test_instances_partition),
      cmocka_unit_test(test_starved_steps_not_blamed), cmocka_unit_test(test_text_fits_a_screen),
      cmocka_unit_test(test_slow_link_rule),           cmocka_unit_test(test_gpu_bound_no_slow_link_in_net_or_job),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
