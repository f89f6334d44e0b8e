/* Packed job partials (job_part_pack.c): the pass driver keeps every host
 * group's records compressed until the reduce, which reads them back
 * partial by partial and takes each instance's fields from its first
 * record while reading. The job view of packed partials must be the one of
 * the same partials unpacked, field by field, in a job built so that the
 * first record matters: two partials that list each instance's ranks out of
 * order, ranks that disagree on the algorithm, size and flags (the first
 * rank's win), a user tag only on a later rank, and one rank seen twice
 * whose second copy (dropped) carries another tag. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/job/job_part.h"

#define NR 8 /* ranks: partial 0 holds the odd ones, partial 1 the even ones and rank 1 again */
#define NI 5 /* instances */
#define NP 2 /* processes per partial */

static void make_part(struct lens_job_part *p, int which) {
  static const int ranks[2][5] = {{7, 5, 3, 1, -1}, {6, 4, 2, 0, 1}};
  size_t per = which ? 5 : 4;
  memset(p, 0, sizeof *p);
  p->n_procs = NP;
  p->procs = calloc(NP, sizeof *p->procs);
  p->n_recs = NI * per;
  p->recs = calloc(p->n_recs, sizeof *p->recs);
  assert_non_null(p->procs);
  assert_non_null(p->recs);
  for (int q = 0; q < NP; q++) {
    p->procs[q].pid = 100 + (uint32_t)(which * NP + q);
    snprintf(p->procs[q].host, sizeof p->procs[q].host, "%s", which ? "hb" : "ha");
  }
  for (int i = 0; i < NI; i++)
    for (size_t t = 0; t < per; t++) {
      int r = ranks[which][t];
      int dup = which && t == 4; /* rank 1's second copy, from a later process */
      struct lens_job_prec *x = &p->recs[(size_t)i * per + t];
      x->comm_id = 0xC0FFEE;
      x->seq = i + 1;
      x->func = 1;
      x->a = x->b = -1;
      x->nranks = NR;
      x->func_s = "AllReduce";
      x->algo_s = r % 2 ? "Tree" : "Ring"; /* rank 0's: Ring */
      x->proto_s = "Simple";
      x->bytes = (uint64_t)(1 << 20) << (r % 3);
      x->iflags = (uint32_t)r & 1u ? 0x40u : 0u;
      x->user_tag = dup ? 55 : r == 2 ? 77 : 0; /* the first rank with a tag: rank 2 */
      x->r.rank = r;
      x->r.proc = dup ? 1 : 0;
      x->r.event = i * 10 + (int)t;
      x->r.span_ns = 1000000 + (uint64_t)r * 1000 + (uint64_t)i;
      x->r.api_ns = 5000 + (uint64_t)r;
      x->r.starved_ns = (uint64_t)r * 3;
      x->r.end_lo_ns = 2000000 * (uint64_t)(i + 1);
      x->r.end_hi_ns = x->r.end_lo_ns + 500;
    }
}

static void test_packed_reduce_is_unpacked_reduce(void **s) {
  (void)s;
  struct lens_job_part plain[2], packed[2];
  for (int k = 0; k < 2; k++) {
    make_part(&plain[k], k);
    make_part(&packed[k], k);
    size_t raw = packed[k].n_recs * sizeof *packed[k].recs;
    assert_int_equal(lens_job_part_pack(&packed[k]), 0);
    assert_null(packed[k].recs);
    assert_non_null(packed[k].recs_z);
    assert_true(packed[k].recs_z_len < raw);
    /* read back: the same bytes */
    struct lens_job_prec *scratch = NULL;
    size_t cap = 0;
    const struct lens_job_prec *back = lens_job_part_recs(&packed[k], &scratch, &cap);
    assert_non_null(back);
    assert_memory_equal(back, plain[k].recs, raw);
    free(scratch);
  }
  struct lens_job a, b;
  assert_int_equal(lens_job_reduce(plain, 2, &a, 0), 0);
  assert_int_equal(lens_job_reduce_consume(packed, 2, &b, 0), 0);
  for (int k = 0; k < 2; k++) {
    assert_null(packed[k].recs_z);
    assert_int_equal(packed[k].n_recs, 0);
  }
  assert_int_equal(a.n_insts, NI);
  assert_int_equal(b.n_insts, NI);
  assert_int_equal(a.n_ranks, b.n_ranks);
  assert_int_equal(a.n_ranks, NI * NR); /* rank 1's second copy dropped */
  for (size_t i = 0; i < NI; i++) {
    const struct lens_job_inst *x = &a.insts[i], *y = &b.insts[i];
    /* the first rank's (rank 0: Ring, 1 MiB, no flag); the tag of rank 2, not of rank 1's copy */
    assert_string_equal(x->algo, "Ring");
    assert_int_equal(x->bytes, 1 << 20);
    assert_int_equal(x->user_tag, 77);
    assert_int_equal(x->comm_id, y->comm_id);
    assert_int_equal(x->seq, y->seq);
    assert_int_equal(x->nranks, y->nranks);
    assert_int_equal(x->is_p2p, y->is_p2p);
    assert_int_equal(x->peer_lo, y->peer_lo);
    assert_int_equal(x->peer_hi, y->peer_hi);
    assert_string_equal(x->func, y->func);
    assert_string_equal(x->algo, y->algo);
    assert_string_equal(x->proto, y->proto);
    assert_int_equal(x->bytes, y->bytes);
    assert_int_equal(x->flags, y->flags);
    assert_int_equal(x->user_tag, y->user_tag);
    assert_int_equal(x->exec_ns, y->exec_ns);
    assert_int_equal(x->last_rank, y->last_rank);
    assert_int_equal(x->max_wait_ns, y->max_wait_ns);
    assert_int_equal(x->first_rank, y->first_rank);
    assert_int_equal(x->n_ranks, y->n_ranks);
  }
  assert_memory_equal(a.ranks, b.ranks, a.n_ranks * sizeof *a.ranks);
  for (size_t k = 0; k < a.n_ranks; k++) assert_int_equal(a.ranks[k].rank, (int)(k % NR));
  lens_job_free(&a);
  lens_job_free(&b);
  for (int k = 0; k < 2; k++) lens_job_part_free(&plain[k]), lens_job_part_free(&packed[k]);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_packed_reduce_is_unpacked_reduce)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
