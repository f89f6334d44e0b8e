/* Who arrived last at each collective instance of the network view: the job
 * view's rule, read from the job view (net_analysis.h, lens_net_insts_arrival).
 *
 * The network view ranks instances by one rank's network step time. When a
 * rank calls late, its ring neighbour's receives wait for the data it sends
 * late: the neighbour has the most step time, and its steps say nothing of
 * why. Only the job view, which lines the ranks' spans up on their GPUs'
 * clocks, says who arrived last; the rows carry its answer beside theirs. */
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "net_analysis.h"

/* The job's collectives matched by seqNumber, sorted by (communicator, seq). */
static int cmp_key(uint64_t ca, int64_t sa, uint64_t cb, int64_t sb) {
  if (ca != cb) return ca < cb ? -1 : 1;
  return (sa > sb) - (sa < sb);
}
static int inst_cmp(const void *a, const void *b) {
  const struct lens_job_inst *x = *(const struct lens_job_inst *const *)a, *y = *(const struct lens_job_inst *const *)b;
  return cmp_key(x->comm_id, x->seq, y->comm_id, y->seq);
}

/* The first of v[0..n) at (comm_id, seq) or after it. */
static size_t lower(const struct lens_job_inst *const *v, size_t n, uint64_t comm_id, int64_t seq) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_key(v[mid]->comm_id, v[mid]->seq, comm_id, seq) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int lens_net_insts_arrival(struct lens_net *n, const struct lens_job *j) {
  if (!n || !j) return 0;
  /* Only collectives matched by seqNumber are the same instance on both
   * sides for sure: one matched by order (no seqNumber, p2p) is numbered by
   * the job's counting, which the network view's rows do not keep. */
  size_t k = 0;
  const struct lens_job_inst **v = malloc((j->n_insts ? j->n_insts : 1) * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < j->n_insts; i++)
    if (!j->insts[i].is_p2p && !(j->insts[i].flags & LENS_JOB_BY_ORDER)) v[k++] = &j->insts[i];
  qsort(v, k, sizeof *v, inst_cmp);
  for (size_t i = 0; i < n->n_insts; i++) {
    struct lens_net_inst *x = &n->insts[i];
    x->last_rank = LENS_NET_LAST_UNKNOWN;
    x->last_wait_ns = 0;
    if (x->kind != LENS_T_COLL || !x->has_seq || x->seq > INT64_MAX) continue;
    for (size_t at = lower(v, k, x->comm_id, (int64_t)x->seq); at < k; at++) {
      const struct lens_job_inst *in = v[at];
      if (in->comm_id != x->comm_id || in->seq != (int64_t)x->seq) break;
      if (!in->func || strcmp(in->func, x->func)) continue;
      if (!lens_job_inst_decomposed(in)) break; /* its spans do not say who came last */
      /* the job view's straggler rule, as its instance table and stragglers read it */
      x->last_rank = lens_job_inst_straggles(j, in) ? in->last_rank : LENS_NET_LAST_NONE;
      x->last_wait_ns = in->max_wait_ns;
      break;
    }
  }
  free(v);
  n->arrival_known = 1;
  return 0;
}
