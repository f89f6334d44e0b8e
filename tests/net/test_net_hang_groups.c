/* net and hang read a job host group by host group (tools/cli/passes.h):
 * each group's model maps to a partial, the partials merge. The merge must
 * give the view of one model holding every trace, also where the two sides
 * of a link, or a frozen proxy and the send that waits on it, were recorded
 * in two groups. The replay writes one trace per node, all on this host
 * (one group for the command): here every trace is made its own group, as
 * on a real cluster, and the merged view's JSON must be the one-model
 * view's, byte for byte, with the cross-group joins actually made. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "analysis/hang/hang_analysis.h"
#include "analysis/net/net_analysis.h"
#include "hang/hang_print.h"
#include "net/net_print.h"

static struct cli_result res;

struct traces {
  char *paths[16];
  size_t n;
};

static int by_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Replays a scenario on 2 nodes x 2 ranks; its trace files, sorted. */
static void replay(const char *scenario, struct traces *t) {
  static int runs; /* a fresh directory each time: a replay adds its traces to what is there */
  char dir[512];
  snprintf(dir, sizeof dir, "%s/%s.%d", cli_tmpdir(), scenario, runs++);
  const char *rp[] = {"replay", "--scenario", scenario, "--nodes", "2", "--ranks-per-node", "2", "--iters", "2",
                      "--out",  dir,          "--quiet", NULL};
  assert_int_equal(cli_run(&res, rp), 0);
  if (res.status) fail_msg("replay %s: %d %s", scenario, res.status, res.err);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  t->n = 0;
  while ((de = readdir(d)) && t->n < 16)
    if (strstr(de->d_name, ".lens")) {
      char p[1024];
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      t->paths[t->n++] = strdup(p);
    }
  closedir(d);
  qsort(t->paths, t->n, sizeof *t->paths, by_str);
  assert_int_equal(t->n, 2); /* one per node: two groups */
}
static void traces_free(struct traces *t) {
  for (size_t i = 0; i < t->n; i++) free(t->paths[i]);
}

static struct lens_model *load(const char *const *paths, size_t n) {
  char err[256];
  struct lens_model *m = lens_model_load(paths, n, err, sizeof err, NULL);
  if (!m) fail_msg("load: %s", err);
  return m;
}

/* What a printer writes, as a string. */
#define PRINTED(var, call)                                                                                             \
  do {                                                                                                                 \
    size_t len_ = 0;                                                                                                   \
    FILE *f = open_memstream(&(var), &len_);                                                                           \
    assert_non_null(f);                                                                                                \
    call;                                                                                                              \
    fclose(f);                                                                                                         \
  } while (0)

/* Every trace its own group: maps each, adds it to a skeleton (as the
 * driver does), then frees its model before the next. */
struct groups {
  struct lens_model *skel;
  struct lens_model_base bases[16];
  void *parts[16];
  size_t n;
};
static void map_groups(const struct traces *t, void *(*map)(struct lens_model *, void *), void *ctx, struct groups *g) {
  g->skel = lens_model_skeleton_new();
  assert_non_null(g->skel);
  g->n = t->n;
  for (size_t i = 0; i < t->n; i++) {
    struct lens_model *m = load((const char *const *)&t->paths[i], 1);
    g->parts[i] = map(m, ctx);
    assert_non_null(g->parts[i]);
    assert_int_equal(lens_model_skeleton_add(g->skel, m, &g->bases[i]), 0);
    lens_model_free(m);
  }
}

static void test_net_groups_merge_as_one(void **state) {
  (void)state;
  const char *scen[] = {"net-slow-link", "net-gpu-bound"};
  for (size_t s = 0; s < 2; s++) {
    struct traces t;
    replay(scen[s], &t);
    struct lens_model *whole = load((const char *const *)t.paths, t.n);
    struct lens_net *one = lens_net_build(whole);
    assert_non_null(one);
    char *want = NULL, *got = NULL, *want_txt = NULL, *got_txt = NULL;
    PRINTED(want, lens_net_print_json(f, whole, one));
    PRINTED(want_txt, lens_net_print_text(f, whole, one, 0));

    struct groups g;
    map_groups(&t, lens_net_pass_map, NULL, &g);
    struct lens_net *merged = lens_net_merge((struct lens_net_part *const *)g.parts, g.n, g.bases);
    assert_non_null(merged);
    PRINTED(got, lens_net_print_json(f, g.skel, merged));
    assert_string_equal(got, want);
    /* text from a map that keeps only the top instances */
    struct lens_net_map_opts top = {LENS_NET_PRINT_TOP_INSTANCES};
    struct groups g2;
    map_groups(&t, lens_net_pass_map, &top, &g2);
    struct lens_net *merged2 = lens_net_merge((struct lens_net_part *const *)g2.parts, g2.n, g2.bases);
    assert_non_null(merged2);
    assert_true(merged2->n_insts <= LENS_NET_PRINT_TOP_INSTANCES);
    assert_int_equal(merged2->insts_total, one->n_insts);
    PRINTED(got_txt, lens_net_print_text(f, g2.skel, merged2, 0));
    assert_string_equal(got_txt, want_txt);

    /* the joins were made: connections whose sender and receiver were
     * recorded in two groups have both sides */
    size_t across = 0;
    for (size_t c = 0; c < merged->n_conns; c++) {
      const struct lens_net_conn *k = &merged->conns[c];
      if (k->send_link < 0 || k->recv_link < 0) continue;
      int32_t sp = merged->links[k->send_link].proc, rp = merged->links[k->recv_link].proc;
      for (size_t i = 0; i < g.n; i++) {
        size_t lo = g.bases[i].proc, hi = i + 1 < g.n ? g.bases[i + 1].proc : g.skel->n_procs;
        if ((size_t)sp >= lo && (size_t)sp < hi) across += (size_t)rp < lo || (size_t)rp >= hi;
      }
    }
    assert_true(across >= 8); /* 2 x 2: every cross-node connection, 2 channels */

    for (size_t i = 0; i < g.n; i++) lens_net_part_free(g.parts[i]), lens_net_part_free(g2.parts[i]);
    lens_model_free(g.skel);
    lens_model_free(g2.skel);
    lens_net_free(merged);
    lens_net_free(merged2);
    lens_net_free(one);
    lens_model_free(whole);
    free(want), free(got), free(want_txt), free(got_txt);
    traces_free(&t);
  }
}

static void test_hang_groups_merge_as_one(void **state) {
  (void)state;
  struct traces t;
  replay("hang-proxy", &t);
  struct lens_model *whole = load((const char *const *)t.paths, t.n);
  struct lens_hang_report one, merged;
  assert_int_equal(lens_hang_analyze(whole, &one), 0);
  char *want = NULL, *got = NULL, *want_txt = NULL, *got_txt = NULL;
  PRINTED(want, lens_hang_print_json(f, whole, &one));
  PRINTED(want_txt, lens_hang_print_text(f, whole, &one, 0));

  struct groups g;
  map_groups(&t, lens_hang_pass_map, NULL, &g);
  assert_int_equal(lens_hang_merge((struct lens_hang_part *const *)g.parts, g.n, g.bases, &merged), 0);
  PRINTED(got, lens_hang_print_json(f, g.skel, &merged));
  PRINTED(got_txt, lens_hang_print_text(f, g.skel, &merged, 0));
  assert_string_equal(got, want);
  assert_string_equal(got_txt, want_txt);

  /* the communicator's ranks of both nodes joined; the frozen proxy judged
   * against a send recorded in the other group */
  assert_int_equal(merged.n_stuck_comms, 1);
  const struct lens_hang_comm *c = NULL;
  for (size_t i = 0; i < merged.n_comms; i++)
    if (merged.comms[i].stuck) c = &merged.comms[i];
  assert_non_null(c);
  assert_int_equal(c->nranks, 4);
  for (int32_t r = 0; r < c->nranks; r++) assert_true(c->ranks[r].proc >= 0);
  assert_int_equal(merged.n_frozen, 1);
  for (size_t i = 0; i < merged.n_proxies; i++) {
    const struct lens_hang_proxy *p = &merged.proxies[i];
    if (!p->frozen) continue;
    assert_true(p->blocked_rank >= 0 && p->blocked_rank < c->nranks);
    assert_int_not_equal(c->ranks[p->blocked_rank].proc, p->proc); /* the other process: the other group */
  }

  for (size_t i = 0; i < g.n; i++) lens_hang_part_free(g.parts[i]);
  lens_model_free(g.skel);
  lens_hang_free(&merged);
  lens_hang_free(&one);
  lens_model_free(whole);
  free(want), free(got), free(want_txt), free(got_txt);
  traces_free(&t);
}

/* A link recorded in two groups (under PXN, another process's proxy): the
 * merge joins its runs of steps. The same traces mapped as two groups make
 * every link so: its sums double, while its quantiles, score (lower
 * medians, nearest ranks) and so the ranking stay those of one copy. */
static void test_net_link_in_two_groups(void **state) {
  (void)state;
  struct traces t;
  replay("net-slow-link", &t);
  struct lens_model *whole = load((const char *const *)t.paths, t.n);
  struct lens_net *one = lens_net_build(whole);
  struct lens_net_part *parts[2] = {lens_net_map(whole, NULL), lens_net_map(whole, NULL)};
  assert_non_null(one);
  assert_non_null(parts[0]);
  assert_non_null(parts[1]);
  struct lens_net *two = lens_net_merge(parts, 2, NULL);
  assert_non_null(two);
  assert_int_equal(two->n_links, one->n_links);
  assert_int_equal(two->n_conns, one->n_conns);
  assert_true(one->n_links >= 16);
  for (size_t l = 0; l < one->n_links; l++) {
    const struct lens_net_link *a = &one->links[l], *b = &two->links[l];
    assert_int_equal(b->rank, a->rank);
    assert_int_equal(b->peer, a->peer);
    assert_int_equal(b->channel, a->channel);
    assert_int_equal(b->dir, a->dir);
    assert_int_equal(b->t.steps, 2 * a->t.steps);
    assert_int_equal(b->t.step_ns, 2 * a->t.step_ns);
    assert_int_equal(b->p50_step_ns, a->p50_step_ns);
    assert_int_equal(b->p99_step_ns, a->p99_step_ns);
    assert_int_equal(b->max_step_ns, a->max_step_ns);
    assert_true(b->score == a->score);
  }
  for (size_t c = 0; c < one->n_conns; c++) assert_int_equal(two->conns[c].slow, one->conns[c].slow);
  assert_int_equal(two->insts_total, 2 * one->insts_total);
  lens_net_free(two);
  lens_net_part_free(parts[0]);
  lens_net_part_free(parts[1]);
  lens_net_free(one);
  lens_model_free(whole);
  traces_free(&t);
}

/* Many slow links: the text names the first ones within 120 columns and
 * counts the rest. */
static void test_slow_links_line_fits(void **state) {
  (void)state;
  enum { N = 40 };
  struct lens_net_link links[N];
  struct lens_net_conn conns[N];
  memset(links, 0, sizeof links);
  memset(conns, 0, sizeof conns);
  for (int i = 0; i < N; i++) {
    links[i] = (struct lens_net_link){.rank = 1000 + i, .peer = 2000 + i, .dir = LENS_NET_DIR_SEND, .comm = -1,
                                      .conn = i, .dominant = LENS_NET_SEND_WIRE, .score = 9.5};
    links[i].t.steps = links[i].t.ops = 1;
    conns[i] = (struct lens_net_conn){.comm = -1, .src = 1000 + i, .dst = 2000 + i, .send_link = i, .recv_link = -1,
                                      .reverse = -1, .dominant = LENS_NET_SEND_WIRE, .score = 9.5, .stands_out = 1,
                                      .slow = 1, .order = i};
    if (i % 2) conns[i].wire_ratio = 12345.6, conns[i].own_ratio = 99.9; /* the longer entry: judged by the wire */
  }
  struct lens_net n = {.links = links, .n_links = N, .conns = conns, .n_conns = N, .n_ranks = N};
  struct lens_model *skel = lens_model_skeleton_new();
  char *txt = NULL, *md = NULL;
  PRINTED(txt, lens_net_print_text(f, skel, &n, 3));
  PRINTED(md, lens_net_print_md(f, skel, &n, 3));
  const char *doc[] = {txt, md};
  for (int d = 0; d < 2; d++) {
    const char *sl = strstr(doc[d], "slow links (");
    assert_non_null(sl);
    assert_non_null(strstr(sl, "r1000 -> r2000 on 1 channel (wire; pace 9.5x)"));
    assert_non_null(strstr(sl, "r1001 -> r2001 on 1 channel (wire; 12345.6x per byte, steps 99.9x)"));
    assert_non_null(strstr(sl, "more\n"));
    /* text: every line; Markdown (paragraphs are one line): the slow links' */
    const char *end = d ? strstr(sl, "\n\n") : NULL;
    for (const char *p = d ? sl : doc[d]; *p && (!end || p < end);) {
      const char *e = strchr(p, '\n');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      if (len > 120) fail_msg("line of %zu columns: %.*s", len, (int)len, p);
      p += len + (e != NULL);
    }
  }
  free(txt), free(md);
  lens_model_free(skel);
}

static int teardown(void **state) {
  (void)state;
  cli_cleanup();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_net_groups_merge_as_one),
      cmocka_unit_test(test_hang_groups_merge_as_one),
      cmocka_unit_test(test_slow_links_line_fits),
      cmocka_unit_test(test_net_link_in_two_groups),
  };
  return cmocka_run_group_tests(tests, NULL, teardown);
}
