/* See diff_model.h. */
#include "diff/diff_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *lens_diff_status_name(int s) {
  static const char *const n[] = {"same", "count", "slower", "faster", "new", "gone"};
  return s >= 0 && s < 6 ? n[s] : "?";
}

const char *lens_diff_match_name(int m) {
  static const char *const n[] = {"none", "hash", "name", "size"};
  return m >= 0 && m < 4 ? n[m] : "?";
}

const struct lens_sum_group *lens_diff_group(const struct lens_diff_run *r, int32_t g) {
  return g >= 0 && (size_t)g < r->s->n_groups ? &r->s->groups[g] : NULL;
}

static int streq(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* A name that says which communicator it is (not a placeholder). */
static int named(const char *n) { return n && n[0] && n[0] != '(' && strcmp(n, "-"); }

/* Communicators of b matched to a's: the same hash (a rerun with the same
 * unique id, e.g. a replay's seed) and size; else the same name and size,
 * when the name is unique in both; else the same size, in order of first
 * appearance (NCCL creates communicators in program order). A pointer or
 * hash alone says nothing across runs. */
static int match_comms(const struct lens_diff_run *ra, const struct lens_diff_run *rb, struct lens_diff *d) {
  size_t na = ra->s->n_groups, nb = rb->s->n_groups;
  int32_t *of_a = malloc((na + 1) * sizeof *of_a), *of_b = malloc((nb + 1) * sizeof *of_b);
  int *how = calloc(na + 1, sizeof *how);
  d->comms = calloc(na + nb + 1, sizeof *d->comms);
  if (!of_a || !of_b || !how || !d->comms) {
    free(of_a), free(of_b), free(how);
    return -1;
  }
  for (size_t i = 0; i < na; i++) of_a[i] = -1;
  for (size_t i = 0; i < nb; i++) of_b[i] = -1;
  const struct lens_sum_group *A = ra->s->groups, *B = rb->s->groups;
  for (int pass = LENS_DIFF_BY_HASH; pass <= LENS_DIFF_BY_SIZE; pass++)
    for (size_t i = 0; i < na; i++) {
      if (of_a[i] >= 0) continue;
      if (pass == LENS_DIFF_BY_NAME) { /* unique among the unmatched of both runs */
        if (!named(A[i].name)) continue;
        size_t same_a = 0;
        for (size_t k = 0; k < na; k++) same_a += of_a[k] < 0 && streq(A[k].name, A[i].name);
        if (same_a != 1) continue;
      }
      int32_t hit = -1;
      size_t hits = 0;
      for (size_t k = 0; k < nb; k++) {
        if (of_b[k] >= 0 || B[k].nranks != A[i].nranks) continue;
        int ok = pass == LENS_DIFF_BY_HASH ? B[k].comm_id == A[i].comm_id && streq(B[k].name, A[i].name)
                 : pass == LENS_DIFF_BY_NAME ? streq(B[k].name, A[i].name)
                                             : 1;
        if (!ok) continue;
        if (hit < 0) hit = (int32_t)k;
        hits++;
      }
      if (hit < 0 || (pass == LENS_DIFF_BY_NAME && hits != 1)) continue;
      of_a[i] = hit, of_b[hit] = (int32_t)i, how[i] = pass;
    }
  for (size_t i = 0; i < na; i++)
    d->comms[d->n_comms++] = (struct lens_diff_comm){(int32_t)i, of_a[i], of_a[i] >= 0 ? how[i] : LENS_DIFF_BY_NONE, 0};
  for (size_t k = 0; k < nb; k++)
    if (of_b[k] < 0) d->comms[d->n_comms++] = (struct lens_diff_comm){-1, (int32_t)k, LENS_DIFF_BY_NONE, 0};
  free(of_a), free(of_b), free(how);
  return 0;
}

/* Whether the job view decomposed any instance of this communicator. */
static int job_has(const struct lens_diff_run *r, const struct lens_sum_group *g) {
  if (!r->j || !g || g->ranks_seen < 2) return 0;
  for (size_t i = 0; i < r->j->n_rows; i++)
    if (r->j->rows[i].comm_id == g->comm_id && r->j->rows[i].decomposed) return 1;
  return 0;
}

/* A row keyed by (func, bucket) in a growing array. */
struct keyed {
  const char *func;
  int bucket;
  struct lens_diff_side s;
  uint64_t best_count; /* summary rows: the most frequent algo's count */
  uint64_t exec_bytes, exec_ns, exec_tasks; /* summary rows: the job view's execution of their tasks */
  double comp_sum;
};

static struct keyed *find_or_add(struct keyed **v, size_t *n, size_t *cap, const char *func, int bucket) {
  for (size_t i = 0; i < *n; i++)
    if ((*v)[i].bucket == bucket && streq((*v)[i].func, func)) return &(*v)[i];
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    struct keyed *nv = realloc(*v, nc * sizeof *nv);
    if (!nv) return NULL;
    *v = nv, *cap = nc;
  }
  struct keyed *k = &(*v)[(*n)++];
  memset(k, 0, sizeof *k);
  k->func = func, k->bucket = bucket, k->s.present = 1;
  return k;
}

/* The row's waits and wall time from the job view's instances: the ones its
 * row counts (seen on more than one rank), decomposed. */
static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}

static int job_waits(const struct lens_job *j, uint64_t comm_id, struct keyed *k) {
  double wait = 0, wall = 0;
  uint64_t *w = malloc((j->n_insts ? j->n_insts : 1) * sizeof *w);
  if (!w) return -1;
  size_t n = 0;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    if (in->comm_id != comm_id || !lens_job_inst_decomposed(in)) continue;
    if (lens_size_bucket(in->bytes) != k->bucket || !streq(in->func, k->func)) continue;
    wait += (double)in->max_wait_ns;
    wall += (double)in->exec_ns + (double)in->max_wait_ns;
    w[n++] = in->max_wait_ns;
  }
  if (n) qsort(w, n, sizeof *w, cmp_u64);
  k->s.wait_ns = n ? wait / (double)n : 0;
  k->s.wait_p50_ns = n ? (double)w[(n - 1) / 2] : 0; /* as the job rows' exec_p50 */
  k->s.wait_p75_ns = n ? (double)w[(3 * (n - 1)) / 4] : 0;
  k->s.wall_ns = n ? wall / (double)n : 0;
  free(w);
  return 0;
}

/* One run's rows of one communicator under the metric. */
static int side_rows(const struct lens_diff_run *r, int32_t gi, int metric, struct keyed **v, size_t *n) {
  size_t cap = 0;
  *v = NULL, *n = 0;
  const struct lens_sum_group *g = lens_diff_group(r, gi);
  if (!g) return 0;
  if (metric == LENS_DIFF_EXECUTION) {
    for (size_t i = 0; i < r->j->n_rows; i++) {
      const struct lens_job_row *jr = &r->j->rows[i];
      if (jr->comm_id != g->comm_id) continue;
      struct keyed *k = find_or_add(v, n, &cap, jr->func, jr->bucket);
      if (!k) return -1;
      double f = lens_job_busbw_factor(jr->func, g->nranks);
      k->s.count += jr->count;
      k->s.timed += jr->decomposed;
      k->s.avg_ns = (double)jr->exec_avg;
      k->s.p50_ns = (double)jr->exec_p50;
      k->s.total_ns = (double)jr->exec_avg * (double)jr->decomposed;
      k->s.busbw_gbps = jr->busbw_gbps;
      k->s.algbw_gbps = f > 0 ? jr->busbw_gbps / f : 0;
      k->s.bw_known = jr->decomposed > 0;
      k->s.wait_rank_ns = (double)jr->wait_avg;
    }
    for (size_t i = 0; i < *n; i++)
      if (job_waits(r->j, g->comm_id, &(*v)[i])) return -1;
    return 0;
  }
  for (size_t i = 0; i < r->s->n_rows; i++) {
    const struct lens_sum_row *sr = &r->s->rows[i];
    if (sr->group != gi) continue;
    struct keyed *k = find_or_add(v, n, &cap, sr->func, sr->bucket);
    if (!k) return -1;
    k->s.count += sr->count;
    k->s.timed += sr->completion.n;
    k->comp_sum += (double)sr->completion.sum;
    k->exec_bytes += sr->exec_bytes;
    k->exec_ns += sr->exec_ns;
    k->exec_tasks += sr->exec_tasks;
    if (sr->count > k->best_count) k->best_count = sr->count, k->s.algo = sr->algo, k->s.proto = sr->proto;
  }
  for (size_t i = 0; i < *n; i++) {
    struct keyed *k = &(*v)[i];
    k->s.total_ns = k->comp_sum;
    k->s.avg_ns = k->s.timed ? k->comp_sum / (double)k->s.timed : 0;
    /* as summary's algbw (lens_summary_algbw): the execution of the tasks the job view decomposed, never the
     * completion time, which holds each rank's wait for the last */
    k->s.bw_known = k->exec_tasks && k->exec_ns;
    k->s.algbw_gbps = k->s.bw_known ? (double)k->exec_bytes / (double)k->exec_ns : 0;
    k->s.busbw_gbps = k->s.algbw_gbps * lens_job_busbw_factor(k->func, g->nranks);
  }
  return 0;
}

static int add_row(struct lens_diff *d, size_t *cap, const struct lens_diff_row *r) {
  if (d->n_rows == *cap) {
    size_t nc = *cap ? *cap * 2 : 32;
    struct lens_diff_row *nv = realloc(d->rows, nc * sizeof *nv);
    if (!nv) return -1;
    d->rows = nv, *cap = nc;
  }
  d->rows[d->n_rows++] = *r;
  return 0;
}

/* Whether a relative change is beyond the threshold. */
static int beyond(double rel, double thr_pct) { return fabs(rel) * 100.0 >= thr_pct; }

static void judge(struct lens_diff_row *r, double total, double thr) {
  double w = total > 0 ? fmax(r->a.total_ns, r->b.total_ns) / total : 0;
  if (!r->a.present || !r->b.present) {
    r->status = r->a.present ? LENS_DIFF_GONE : LENS_DIFF_NEW;
    r->score = w;
    return;
  }
  int counted = r->a.count != r->b.count;
  if (r->a.timed && r->b.timed && r->a.avg_ns > 0) {
    r->change = (r->b.avg_ns - r->a.avg_ns) / r->a.avg_ns;
    int moved = beyond(r->change, thr);
    /* The job view's median too: one outlier instance moves the mean, not
     * the run. Both must move, the same way, for a change. */
    if (moved && r->a.p50_ns > 0 && r->b.p50_ns > 0) {
      double m = (r->b.p50_ns - r->a.p50_ns) / r->a.p50_ns;
      moved = beyond(m, thr) && (m > 0) == (r->change > 0);
    }
    if (moved) r->moved |= LENS_DIFF_MOVED_EXEC;
  }
  /* Waiting (execution rows): a change of the wait counts when it is beyond
   * the threshold of A's wall time, so that 2 -> 3 us of wait on a 70 us
   * operation is noise and 0 -> 3 ms is not. */
  if (r->metric == LENS_DIFF_EXECUTION && r->a.wall_ns > 0 && r->b.wall_ns > 0) {
    r->wait_change_ns = r->b.wait_ns - r->a.wait_ns;
    r->wall_change = (r->b.wall_ns - r->a.wall_ns) / r->a.wall_ns;
    /* the 75th percentile too, the same way: a few late launches move the
     * mean only, and a rank late in a quarter of the instances or more
     * moves both (the median missed a straggler in 40 of 81 instances:
     * the mean wait 20 -> 304 us, the wall time +129 %, the median 3 us) */
    double m = r->b.wait_p75_ns - r->a.wait_p75_ns;
    if (beyond(r->wait_change_ns / r->a.wall_ns, thr) && beyond(m / r->a.wall_ns, thr) && (m > 0) == (r->wait_change_ns > 0))
      r->moved |= LENS_DIFF_MOVED_WAIT;
  }
  if (r->moved & LENS_DIFF_MOVED_EXEC) {
    r->status = r->change > 0 ? LENS_DIFF_SLOWER : LENS_DIFF_FASTER;
    r->score = fabs(r->change) * w;
    if (r->moved & LENS_DIFF_MOVED_WAIT) r->score = fmax(r->score, fabs(r->wall_change) * w);
    return;
  }
  if (r->moved & LENS_DIFF_MOVED_WAIT) { /* slower or faster as a whole: its wall time */
    r->status = r->wait_change_ns > 0 ? LENS_DIFF_SLOWER : LENS_DIFF_FASTER;
    r->score = fabs(r->wall_change) * w;
    return;
  }
  r->status = counted ? LENS_DIFF_COUNT : LENS_DIFF_SAME;
}

static int by_importance(const void *x, const void *y) {
  const struct lens_diff_row *a = x, *b = y;
  int ca = a->status != LENS_DIFF_SAME, cb = b->status != LENS_DIFF_SAME;
  if (ca != cb) return cb - ca;
  /* a change of the operation itself before one of the ranks' arrivals only
   * (on a launch-bound run waits dwarf execution and move with launch order) */
  int wa = a->moved == LENS_DIFF_MOVED_WAIT, wb = b->moved == LENS_DIFF_MOVED_WAIT;
  if (wa != wb) return wa - wb;
  if (a->score != b->score) return a->score < b->score ? 1 : -1;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  int f = strcmp(a->func ? a->func : "", b->func ? b->func : "");
  if (f) return f;
  return (a->bucket > b->bucket) - (a->bucket < b->bucket);
}

int lens_diff_build(const struct lens_diff_run *ra, const struct lens_diff_run *rb, double thr, struct lens_diff *d) {
  memset(d, 0, sizeof *d);
  d->threshold = thr;
  if (match_comms(ra, rb, d)) return -1;
  size_t cap = 0;
  for (size_t c = 0; c < d->n_comms; c++) {
    struct lens_diff_comm *dc = &d->comms[c];
    dc->metric = dc->a >= 0 && dc->b >= 0 && job_has(ra, lens_diff_group(ra, dc->a)) &&
                         job_has(rb, lens_diff_group(rb, dc->b))
                     ? LENS_DIFF_EXECUTION
                     : LENS_DIFF_COMPLETION;
    struct keyed *va = NULL, *vb = NULL;
    size_t na, nb;
    if (side_rows(ra, dc->a, dc->metric, &va, &na) || side_rows(rb, dc->b, dc->metric, &vb, &nb)) goto oom_rows;
    char *used_b = calloc(nb + 1, 1);
    if (!used_b) goto oom_rows;
    for (size_t i = 0; i < na + nb; i++) {
      struct lens_diff_row r = {.comm = c, .metric = dc->metric};
      if (i < na) {
        r.func = va[i].func, r.bucket = va[i].bucket, r.a = va[i].s;
        for (size_t k = 0; k < nb; k++)
          if (!used_b[k] && vb[k].bucket == r.bucket && streq(vb[k].func, r.func)) {
            r.b = vb[k].s, used_b[k] = 1;
            break;
          }
      } else {
        if (used_b[i - na]) continue;
        r.func = vb[i - na].func, r.bucket = vb[i - na].bucket, r.b = vb[i - na].s;
      }
      if (add_row(d, &cap, &r)) {
        free(used_b);
        goto oom_rows;
      }
    }
    free(used_b), free(va), free(vb);
    continue;
  oom_rows:
    free(va), free(vb);
    lens_diff_free(d);
    return -1;
  }
  /* Weights: a row's time against the larger run's total (both metrics are
   * times of the same operations, so they add up per run). */
  double ta = 0, tb = 0;
  for (size_t i = 0; i < d->n_rows; i++) ta += d->rows[i].a.total_ns, tb += d->rows[i].b.total_ns;
  for (size_t i = 0; i < d->n_rows; i++) {
    judge(&d->rows[i], fmax(ta, tb), thr);
    d->n_changed += d->rows[i].status != LENS_DIFF_SAME;
  }
  if (d->n_rows) qsort(d->rows, d->n_rows, sizeof *d->rows, by_importance);
  return 0;
}

void lens_diff_free(struct lens_diff *d) {
  free(d->comms);
  free(d->rows);
  memset(d, 0, sizeof *d);
}
