/* The reduce (job_reduce.c, job_causes.c) and the host alignment's sync
 * points (job_align.c) skip their sorts when the rows already come in
 * process and host order (rank order usually is). These jobs are built so
 * that it is not: rank r runs in process r % 4 and process p on host p % 2,
 * so by rank the processes go 0 1 2 3 0 1 2 3 and the hosts a b a b, and
 * the partial lists each instance's ranks last to first. The answers must be
 * those of the grouping by rank, process and host, which a missing sort
 * would break: rows out of rank order, a slow link's ratio against the
 * wrong group, one sync point per rank instead of one per host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/job/job_align.h"
#include "analysis/job/job_part.h"

#define NR 8   /* ranks, one proxy op each */
#define NP 4   /* processes, ranks r and r + 4 in process r */
#define NI 2   /* instances */
#define SLOW 2 /* the rank whose link (SLOW -> SLOW + 1) is slow */

/* A process's ops take 100 x (p + 1) ns a step, the slow rank's ten times
 * its process's pace: against the other link of its own process its ratio
 * is 10; against the fastest op of the instance (process 0's), it would be
 * 30. */
static uint64_t pace(int rank, int slow2) {
  uint64_t p = 100u * (uint64_t)(rank % NP + 1);
  return rank == SLOW || rank == slow2 ? 10 * p : p;
}

/* slow2: a second slow rank (-1 none), its link as slow as SLOW's. */
static void make_part(struct lens_job_part *p, int slow2) {
  memset(p, 0, sizeof *p);
  p->n_procs = NP;
  p->procs = calloc(NP, sizeof *p->procs);
  p->n_recs = NI * NR;
  p->recs = calloc(NI * NR, sizeof *p->recs);
  p->n_ops = NI * NR;
  p->ops = calloc(NI * NR, sizeof *p->ops);
  assert_non_null(p->procs);
  assert_non_null(p->recs);
  assert_non_null(p->ops);
  for (int q = 0; q < NP; q++) {
    p->procs[q].pid = 100 + (uint32_t)q;
    snprintf(p->procs[q].host, sizeof p->procs[q].host, "%s", q % 2 ? "hb" : "ha");
  }
  for (int i = 0; i < NI; i++)
    for (int r = 0; r < NR; r++) {
      size_t k = (size_t)i * NR + (size_t)(NR - 1 - r); /* last rank first */
      struct lens_job_prec *x = &p->recs[k];
      x->comm_id = 0xC0FFEE;
      x->seq = i + 1;
      x->a = x->b = -1;
      x->nranks = NR;
      x->func_s = "AllReduce";
      x->bytes = 1 << 20;
      x->first_op = k;
      x->n_ops = 1;
      x->r.rank = r;
      x->r.proc = r % NP;
      x->r.event = i;
      x->r.span_ns = 1000000; /* all equal: no straggler, so the link is looked at */
      uint64_t end = 2000000 * (uint64_t)(i + 1) + (uint64_t)(r % 2) * 1000;
      x->r.end_lo_ns = end - 500;
      x->r.end_hi_ns = end + 500;
      p->ops[k] = (struct lens_job_op){.snd = r, .rcv = (r + 1) % NR, .dur = pace(r, slow2)};
    }
}

static void test_slow_link_by_process(void **s) {
  struct lens_job_part p;
  make_part(&p, -1);
  struct lens_job j;
  assert_int_equal(lens_job_reduce(&p, 1, &j, 0), 0);
  assert_int_equal(j.n_insts, NI);
  for (size_t i = 0; i < j.n_insts; i++) {
    const struct lens_job_inst *in = &j.insts[i];
    assert_int_equal(in->n_ranks, NR);
    for (size_t k = 0; k < in->n_ranks; k++) assert_int_equal(j.ranks[in->first_rank + k].rank, (int)k);
    assert_int_equal(in->link_snd, SLOW);
    assert_int_equal(in->link_rcv, SLOW + 1);
    /* 10 x 300 ns over process 2's other link (rank 6, 300 ns) */
    assert_true(in->link_ratio == 10.0);
  }
  lens_job_free(&j);
  lens_job_part_free(&p);
}

/* Two links equally slow (10 x their process's other link): the one whose
 * op comes first (rank 1's, rows in rank order) is named. */
static void test_slow_link_tie(void **s) {
  struct lens_job_part p;
  make_part(&p, SLOW - 1);
  struct lens_job j;
  assert_int_equal(lens_job_reduce(&p, 1, &j, 0), 0);
  for (size_t i = 0; i < j.n_insts; i++) {
    assert_int_equal(j.insts[i].link_snd, SLOW - 1);
    assert_int_equal(j.insts[i].link_rcv, SLOW);
    assert_true(j.insts[i].link_ratio == 10.0);
  }
  lens_job_free(&j);
  lens_job_part_free(&p);
}

/* One rule for a slow link (issue 26 item 8): the job view names SLOW ->
 * SLOW + 1 only where the network view's rule (lens_net_link_is_slow)
 * agrees on its ops' phases. Each rank's op here is its send op (the
 * receivers' ops are not in the partial: one side known). */
static void set_phases(struct lens_job_part *p, uint32_t gpu_us, uint32_t peer_us, uint32_t wire_us) {
  for (size_t k = 0; k < p->n_ops; k++) {
    struct lens_job_op *o = &p->ops[k];
    int slow = o->snd == SLOW;
    o->flags = LENS_JOB_OP_SEND | LENS_JOB_OP_SPLIT;
    o->phase_us[0] = slow ? gpu_us : 10;
    o->phase_us[1] = slow ? peer_us : 1;
    o->phase_us[2] = slow ? wire_us : 2;
  }
}
static size_t named_slow(const struct lens_job *j) {
  size_t n = 0;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    if (in->cause != LENS_CAUSE_SLOW_LINK) continue;
    assert_int_equal(in->cause_rank, SLOW);
    assert_int_equal(in->cause_peer, SLOW + 1);
    n++;
  }
  return n;
}
static void test_slow_link_rule_of_net(void **s) {
  (void)s;
  struct { uint32_t gpu, peer, wire; int named; } c[] = {
      {10, 1, 1000, 1},  /* its time on the wire: slow */
      {1000, 1, 10, 0},  /* its sender waits on its GPU: never slow, however slow its pace */
      {10, 1000, 10, 1}, /* waits for the receiver's credit, whose trace is not given: cannot tell from the wire */
  };
  for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
    struct lens_job_part p;
    make_part(&p, -1);
    set_phases(&p, c[k].gpu, c[k].peer, c[k].wire);
    struct lens_job j;
    assert_int_equal(lens_job_reduce(&p, 1, &j, 0), 0);
    assert_int_equal(named_slow(&j), c[k].named ? NI : 0);
    for (size_t i = 0; i < j.n_insts; i++) { /* the candidate is the same either way: only the rule says no */
      assert_int_equal(j.insts[i].link_snd, SLOW);
      assert_int_equal(j.insts[i].link_on_net, c[k].named);
    }
    lens_job_free(&j);
    lens_job_part_free(&p);
  }
  /* ops whose phases were not recorded: the rule cannot say the network, nothing named */
  struct lens_job_part p;
  make_part(&p, -1);
  struct lens_job j;
  assert_int_equal(lens_job_reduce(&p, 1, &j, 0), 0);
  assert_int_equal(named_slow(&j), 0);
  lens_job_free(&j);
  lens_job_part_free(&p);
}

static void test_sync_points_by_host(void **s) {
  struct lens_job_part p;
  make_part(&p, -1);
  struct lens_job j;
  assert_int_equal(lens_job_reduce(&p, 1, &j, 0), 0);
  size_t np = 0;
  struct lens_align_proc_clock *pc = lens_job_parts_clocks(&p, 1, &np);
  assert_non_null(pc);
  assert_int_equal(np, NP);
  struct lens_align a;
  assert_int_equal(lens_align_build_ends(pc, np, &j, NULL, &a), 0);
  assert_int_equal(a.n_hosts, 2);
  assert_int_equal(a.sync_instances, NI);
  /* one point per host and instance: its ranks' ends merged into one */
  for (size_t h = 0; h < a.n_hosts; h++) assert_int_equal(a.hosts[h].n_sync, NI);
  lens_align_free(&a);
  free(pc);
  lens_job_free(&j);
  lens_job_part_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slow_link_by_process),
      cmocka_unit_test(test_slow_link_tie),
      cmocka_unit_test(test_slow_link_rule_of_net),
      cmocka_unit_test(test_sync_points_by_host),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
