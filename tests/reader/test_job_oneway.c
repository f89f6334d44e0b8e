/* One-way pairs (job_oneway.c, job_align.c; docs/timeline.md "One-way
 * bounds"): two hosts whose CLOCK_MONOTONICs are D apart exactly, one rank
 * each, a ring of two links. Host A's send is provably not yet posted at
 * true time T1 and B has it in 3 us later; B's send at T2, A has it 5 us
 * later. So x_B - x_A (x = job - mono) lies in [-D - 3 us, -D + 5 us]:
 * offset -D + 1 us, bound 4 us (and 1 ns of drift slack each side). A slower transfer (50 us) does
 * not widen it (the minimum-delay filter); a link with two send ops in one
 * instance is ambiguous and not paired; a pair on one host says nothing;
 * pairs that contradict REALTIME are dropped, never trusted over it; the
 * partial file keeps the evidence (section WAYS). No privileges needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lens_test_tmp.h"
#include "analysis/job/job_align.h"
#include "analysis/job/job_part.h"

#define MONO_A(t) ((uint64_t)(t) + 1000000000000ull)              /* host A's clock at true time t */
#define D_NS (5000000000ll)                                       /* B's clock runs 5 s ahead of A's */
#define MONO_B(t) ((uint64_t)(t) + 1000000000000ull + (uint64_t)D_NS)
#define T1 1000000ull
#define T2 2000000ull
#define T3 3000000ull

/* One host's partial: its rank's records (instances 1 and 2) and evidence. */
static void make_part(struct lens_job_part *p, int host, const char *name, int64_t rt_err_ns, uint64_t rt_bound_ns) {
  memset(p, 0, sizeof *p);
  p->n_procs = 1;
  p->procs = calloc(1, sizeof *p->procs);
  p->clocks = calloc(1, sizeof *p->clocks);
  p->recs = calloc(2, sizeof *p->recs);
  p->wops = calloc(8, sizeof *p->wops);
  assert_non_null(p->procs);
  assert_non_null(p->clocks);
  assert_non_null(p->recs);
  assert_non_null(p->wops);
  p->procs[0].pid = 100 + (uint32_t)host;
  snprintf(p->procs[0].host, sizeof p->procs[0].host, "%s", name);
  struct lens_align_proc_clock *c = &p->clocks[0];
  snprintf(c->host, sizeof c->host, "%s", name);
  c->has_clock = 1;
  c->n_ranks = 1;
  c->bound_ns = rt_bound_ns;
  c->ref_mono_ns = host ? MONO_B(T1) : MONO_A(T1);
  /* REALTIME = true time + 1.7e18: real - mono = 1.7e18 - (mono - true) */
  c->real_minus_mono_ns = 1700000000000000000ll - (int64_t)(host ? MONO_B(0) : MONO_A(0)) + rt_err_ns;
  c->drift_err_ppm = 0; /* exact rates: 1 ns of slack a time */
  for (int i = 0; i < 2; i++) {
    struct lens_job_prec *x = &p->recs[p->n_recs++];
    x->comm_id = 0xC0FFEE;
    x->seq = i + 1;
    x->a = x->b = -1;
    x->nranks = 2;
    x->func_s = "AllReduce";
    x->r.rank = host;
    x->r.proc = 0;
    x->r.event = i;
    x->r.span_ns = 1000000;
  }
#define WOP(rec, t, peer, ch, snd) \
  p->wops[p->n_wops++] = (struct lens_job_wop){(t), (rec), (peer), (ch), (snd), 0, 0}
  if (host == 0) {
    WOP(0, MONO_A(T1), 1, 0, 1);        /* A -> B sent */
    WOP(0, MONO_A(T2 + 5000), 1, 0, 0); /* B -> A in, 5 us later */
    WOP(1, MONO_A(T3), 1, 0, 1);        /* A -> B sent, in 50 us later */
    WOP(1, MONO_A(T3), 1, 1, 1);        /* channel 1: two send ops of one link: ambiguous */
    WOP(1, MONO_A(T3 + 10), 1, 1, 1);
  } else {
    WOP(0, MONO_B(T1 + 3000), 0, 0, 0); /* A -> B in, 3 us later */
    WOP(0, MONO_B(T2), 0, 0, 1);        /* B -> A sent */
    WOP(1, MONO_B(T3 + 50000), 0, 0, 0);
    WOP(1, MONO_B(T3 + 1), 0, 1, 0);
  }
#undef WOP
}

static void align_of(struct lens_job_part *parts, const struct lens_align_opts *o, struct lens_job *j,
                     struct lens_align *a) {
  assert_int_equal(lens_job_reduce(parts, 2, j, 0), 0);
  size_t np = 0;
  struct lens_align_proc_clock *pc = lens_job_parts_clocks(parts, 2, &np);
  assert_non_null(pc);
  assert_int_equal(np, 2);
  assert_int_equal(lens_align_build_ends(pc, np, j, o, a), 0);
  free(pc);
  assert_int_equal(a->n_hosts, 2);
  assert_int_equal(a->ref, 0); /* A: the tighter REALTIME */
}

/* B's offset against A's and its bound, exactly as the pairs give them. */
static void expect_interval(const struct lens_align *a) {
  const struct lens_align_host *A = &a->hosts[0], *B = &a->hosts[1];
  /* x = job - mono; the truth: x_B - x_A = -D */
  int64_t truth = -D_NS;
  /* A -> B: x_A - x_B <= r - s = D + 3 us; B -> A: x_B - x_A <= -D + 5 us; each + 1 ns of drift
   * slack at either end: x_B - x_A in [-D - 3 us - 2, -D + 5 us + 2] */
  int64_t lo = truth - 3002, hi = truth + 5002;
  assert_int_equal(B->offset_ns - A->offset_ns, lo + (hi - lo) / 2);
  assert_int_equal(B->bound_ns, (uint64_t)(hi - lo + 1) / 2);
  int64_t err = B->offset_ns - A->offset_ns - truth;
  assert_true(err <= (int64_t)B->bound_ns && -err <= (int64_t)B->bound_ns);
  assert_int_equal(B->n_oneway, 3); /* the two of instance 1 and the slow one of instance 2 */
  assert_int_equal(A->n_oneway, 3);
}

static void test_pair_interval(void **s) {
  (void)s;
  struct lens_job_part parts[2];
  make_part(&parts[0], 0, "ha", 20000, 100000000);   /* REALTIME: 20 us off, within 100 ms */
  make_part(&parts[1], 1, "hb", -70000, 200000000);  /* 70 us off, within 200 ms */
  struct lens_job j;
  struct lens_align a;
  align_of(parts, NULL, &j, &a);
  assert_int_equal(j.n_oneway, 3);
  assert_int_equal(j.oneway_ambiguous, 1);
  assert_int_equal(a.oneway_pairs, 3);
  assert_int_equal(a.oneway_dropped, 0);
  expect_interval(&a);
  assert_int_equal(a.hosts[1].source, LENS_ALIGN_ONEWAY); /* no collective end: the pairs narrowed it */
  lens_align_free(&a);
  /* the pairs alone: the same interval, REALTIME's offsets unread */
  struct lens_align_opts o = {.oneway_only = 1};
  assert_int_equal(lens_align_build_ends(parts[0].clocks, 1, &j, &o, &a), 0); /* one process: nothing to pair */
  assert_int_equal(a.oneway_pairs, 0);
  lens_align_free(&a);
  size_t np = 0;
  struct lens_align_proc_clock *pc = lens_job_parts_clocks(parts, 2, &np);
  assert_int_equal(lens_align_build_ends(pc, np, &j, &o, &a), 0);
  expect_interval(&a);
  lens_align_free(&a);
  /* without them: REALTIME's 300 ms */
  struct lens_align_opts no = {.no_oneway = 1};
  assert_int_equal(lens_align_build_ends(pc, np, &j, &no, &a), 0);
  assert_int_equal(a.oneway_pairs, 0);
  assert_int_equal(a.hosts[1].bound_ns, 300000000);
  assert_int_equal(a.hosts[1].source, LENS_ALIGN_REALTIME);
  lens_align_free(&a);
  free(pc);
  lens_job_free(&j);
  lens_job_part_free(&parts[0]);
  lens_job_part_free(&parts[1]);
}

/* One host name: the pairs share a CLOCK_MONOTONIC, none is kept. */
static void test_same_host(void **s) {
  (void)s;
  struct lens_job_part parts[2];
  make_part(&parts[0], 0, "ha", 0, 100000000);
  make_part(&parts[1], 1, "ha", 0, 200000000);
  struct lens_job j;
  assert_int_equal(lens_job_reduce(parts, 2, &j, 0), 0);
  assert_int_equal(j.n_oneway, 0);
  lens_job_free(&j);
  lens_job_part_free(&parts[0]);
  lens_job_part_free(&parts[1]);
}

/* REALTIME within 1 us but 1 ms wrong on B: the pairs prove it wrong; both
 * cannot hold, and the pairs are the ones left out (said so), never
 * trusted over the rest. */
static void test_contradiction_drops(void **s) {
  (void)s;
  struct lens_job_part parts[2];
  make_part(&parts[0], 0, "ha", 0, 500);
  make_part(&parts[1], 1, "hb", 1000000, 500);
  struct lens_job j;
  struct lens_align a;
  align_of(parts, NULL, &j, &a);
  assert_int_equal(a.oneway_dropped, 1);
  assert_int_equal(a.hosts[1].n_oneway, 0);
  assert_int_equal(a.hosts[1].source, LENS_ALIGN_REALTIME);
  lens_align_free(&a);
  lens_job_free(&j);
  lens_job_part_free(&parts[0]);
  lens_job_part_free(&parts[1]);
}

/* The partial file keeps the evidence: written, read back, the same
 * interval; a streamed merge of the two files gives it too. */
static void test_partial_file(void **s) {
  (void)s;
  char dir[256], path[2][300], err[512];
  lens_test_tmpdir(dir, sizeof dir, "oneway");
  struct lens_job_part parts[2], back[2];
  for (int h = 0; h < 2; h++) {
    make_part(&parts[h], h, h ? "hb" : "ha", h ? -70000 : 20000, h ? 200000000 : 100000000);
    snprintf(path[h], sizeof path[h], "%s/p%d.lensjob", dir, h);
    FILE *f = fopen(path[h], "wb");
    assert_non_null(f);
    assert_int_equal(lens_job_part_write(f, &parts[h]), 0);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(lens_job_part_read(path[h], &back[h], err, sizeof err), 0);
    assert_int_equal(back[h].n_wops, parts[h].n_wops);
    assert_memory_equal(back[h].wops, parts[h].wops, parts[h].n_wops * sizeof *parts[h].wops);
  }
  struct lens_job j;
  struct lens_align a;
  align_of(back, NULL, &j, &a);
  expect_interval(&a);
  lens_align_free(&a);
  lens_job_free(&j);
  for (int h = 0; h < 2; h++) lens_job_part_free(&parts[h]), lens_job_part_free(&back[h]);
  lens_test_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest t[] = {cmocka_unit_test(test_pair_interval), cmocka_unit_test(test_same_host),
                                 cmocka_unit_test(test_contradiction_drops), cmocka_unit_test(test_partial_file)};
  return cmocka_run_group_tests(t, NULL, NULL);
}
