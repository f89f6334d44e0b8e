/* The job view, part 2 (the reduce, job_part.h): the records of any number
 * of partials matched into instances and each instance decomposed.
 *
 * Matching keys: collectives by (communicator id, function, seqNumber);
 * when a rank's trace has no sequence numbers for a communicator (all zero),
 * by order of its collectives per function. P2p by (communicator, sender,
 * receiver, function pair) and order: the k-th Send from a to b is the k-th
 * Recv on b from a. Graph replays advance seqNumber per replay (with
 * KernelCh), so they match by seqNumber too. The map computed the keys; the
 * reduce sorts them.
 *
 * Decomposition: each rank's span is its first channel start to its last
 * channel stop, both pTimer values on that rank's own GPU clock. The ranks
 * of a ring/tree/NVLS/CollNet collective end together, so the rank with the
 * shortest span started last and its span is the execution; every other
 * rank's span minus the execution is its wait. No cross-host clock is
 * used.
 *
 * Cost: a hash of the instance keys, a bucket pass, a small sort per
 * instance, then linear per instance (the same-host end check keeps a min
 * and max per host, not a test per pair). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "job.h"
#include "job_part.h"
#include "lens_checked.h"
#include "job_priv.h"
#include "mem_hint.h"

/* An instance's key. */
struct ikey {
  uint64_t comm_id;
  int64_t seq;
  int32_t kind, func, a, b;
};

static int ikey_cmp(const struct ikey *a, const struct ikey *b) {
#define C(f)                                                                                                           \
  if (a->f != b->f) return a->f < b->f ? -1 : 1
  C(comm_id);
  C(kind);
  C(func);
  C(a);
  C(b);
  C(seq);
#undef C
  return 0;
}

static uint64_t ikey_hash(const struct ikey *k) {
  uint64_t x = k->comm_id * 0x9E3779B97F4A7C15ull ^ (uint64_t)k->seq;
  x ^= ((uint64_t)(uint32_t)k->func << 40) ^ ((uint64_t)(uint32_t)k->a << 20) ^ (uint64_t)(uint32_t)k->b ^
       ((uint64_t)k->kind << 63);
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  return x;
}

/* A rank's record inside its instance, ordered by rank, then where it came
 * from (global proc, event), as the single model's event order had it; with
 * its user tag (the records themselves may be packed: lens_job_part_pack). */
struct rref { int32_t rank, proc, event; uint32_t part; size_t rec; uint64_t user_tag; };
static int rref_cmp(const void *x, const void *y) {
  const struct rref *a = x, *b = y;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->proc != b->proc) return a->proc < b->proc ? -1 : 1;
  return (a->event > b->event) - (a->event < b->event);
}

/* What an instance takes from its first record (the least rref): found
 * while the records are read, partial by partial. */
struct itmpl {
  struct rref first;
  const char *func_s, *algo_s, *proto_s;
  uint64_t bytes;
  int32_t nranks;
  uint32_t iflags;
};
static void itmpl_set(struct itmpl *t, const struct rref *r, const struct lens_job_prec *p) {
  *t = (struct itmpl){*r, p->func_s, p->algo_s, p->proto_s, p->bytes, p->nranks, p->iflags};
}

/* Does record r give instance `key` its facts rather than its current first
 * record? The least record does (the lowest rank), except that a p2p
 * transfer takes them from its sender's record when it has one: a matched
 * Send and Recv are one transfer, named Send whichever rank is lower, so the
 * job view's rows count transfers as summary counts Send ops (docs/job.md;
 * by rank order, rank 3 -> 0 of a ring was a Recv row and 0 -> 1 a Send). */
static int itmpl_first(const struct ikey *key, const struct rref *r, const struct rref *first) {
  if (key->kind && (r->rank == key->a) != (first->rank == key->a)) return r->rank == key->a;
  return rref_cmp(r, first) < 0;
}

static _Thread_local const struct ikey *sort_ikeys; /* per thread: a reduce may run on any (job_causes.c) */
static int inst_order_cmp(const void *x, const void *y) {
  return ikey_cmp(&sort_ikeys[*(const uint32_t *)x], &sort_ikeys[*(const uint32_t *)y]);
}

struct hostid { const char *host; int32_t proc; };
static int hostid_cmp(const void *x, const void *y) {
  const struct hostid *a = x, *b = y;
  int c = strcmp(a->host, b->host);
  return c ? c : a->proc - b->proc;
}

/* Global proc -> host number (procs on one host share CLOCK_MONOTONIC). */
static int32_t *host_ids(const struct lens_job_part *parts, size_t n, size_t n_procs, size_t *n_hosts) {
  struct hostid *h = malloc((n_procs ? n_procs : 1) * sizeof *h);
  int32_t *id = malloc((n_procs ? n_procs : 1) * sizeof *id);
  if (!h || !id) {
    free(h), free(id);
    return NULL;
  }
  size_t g = 0;
  for (size_t k = 0; k < n; k++)
    for (size_t i = 0; i < parts[k].n_procs; i++, g++) h[g] = (struct hostid){parts[k].procs[i].host, (int32_t)g};
  qsort(h, g, sizeof *h, hostid_cmp);
  int32_t cur = -1;
  for (size_t i = 0; i < g; i++) {
    if (!i || strcmp(h[i - 1].host, h[i].host)) cur++;
    id[h[i].proc] = cur;
  }
  *n_hosts = (size_t)(cur + 1);
  free(h);
  return id;
}

/* The ranks an instance runs on: a collective's communicator, a p2p's
 * sender and receiver (one rank when it sends to itself). */
static int participants(const struct lens_job_inst *in) {
  if (in->is_p2p) return in->peer_lo == in->peer_hi ? 1 : 2;
  return in->nranks;
}

/* exec, waits, last rank, flags of one instance. seen/lo/hi: scratch per
 * host (seen holds the last instance that touched the host). */
static void decompose(struct lens_job *j, struct lens_job_inst *in, const int32_t *host_of, size_t inst_no,
                      size_t *seen, int64_t *lo, int64_t *hi) {
  struct lens_job_rank *r = j->ranks + in->first_rank;
  size_t gpu = 0;
  for (size_t i = 0; i < in->n_ranks; i++) gpu += !r[i].host_span && r[i].span_ns;
  int host = gpu < in->n_ranks;
  if (host) {
    in->flags |= LENS_JOB_HOST_SPANS;
    for (size_t i = 0; i < in->n_ranks; i++) r[i].host_span = 1;
  }
  uint64_t exec = UINT64_MAX;
  int32_t last = -1;
  for (size_t i = 0; i < in->n_ranks; i++)
    if (r[i].span_ns && r[i].span_ns < exec) exec = r[i].span_ns, last = r[i].rank;
  if (last < 0) {
    in->flags |= LENS_JOB_NO_SPAN;
    in->last_rank = -1;
    return;
  }
  /* One span is no decomposition: seen alone of several ranks, its span
   * holds its wait for the ranks nobody saw (counting it would count waiting
   * as working); the only rank of its instance (a communicator of one, a
   * send to itself) has no other rank to split it from, its span stays in
   * its rank row. Either way no execution, no last rank: every view asks
   * lens_job_inst_decomposed. */
  size_t spans = 0;
  for (size_t i = 0; i < in->n_ranks; i++) spans += r[i].span_ns != 0;
  if (spans < 2) {
    in->flags |= LENS_JOB_ONE_RANK;
    in->last_rank = -1;
    return;
  }
  /* Ranks of one host share CLOCK_MONOTONIC: with mapped GPU times, check
   * that they really ended together before trusting the rule. Two ranks end
   * apart when |a - b| > tol + err_a + err_b; some pair of a host does so
   * exactly when max(stop - err) - min(stop + err) over the host > tol (a
   * rank against itself gives -2 err <= 0 < tol). */
  uint64_t tol = exec / 10 > 50000 ? exec / 10 : 50000;
  for (size_t i = 0; i < in->n_ranks && !host; i++) {
    if (!r[i].kstop_mono_ns || r[i].proc < 0) continue;
    int32_t h = host_of[r[i].proc];
    /* times from files: saturated, never overflowed (lens_checked.h) */
    int64_t a = lens_i64_sub(lens_u2i64(r[i].kstop_mono_ns), lens_u2i64(r[i].map_err_ns));
    int64_t b = lens_i64_add(lens_u2i64(r[i].kstop_mono_ns), lens_u2i64(r[i].map_err_ns));
    if (seen[h] != inst_no + 1) seen[h] = inst_no + 1, lo[h] = b, hi[h] = a;
    if (b < lo[h]) lo[h] = b;
    if (a > hi[h]) hi[h] = a;
    if (lens_i64_sub(hi[h], lo[h]) > lens_u2i64(tol)) in->flags |= LENS_JOB_ENDS_APART;
  }
  if (in->flags & LENS_JOB_ENDS_APART) { /* do not guess */
    in->last_rank = -1;
    return;
  }
  in->exec_ns = exec;
  in->last_rank = last;
  for (size_t i = 0; i < in->n_ranks; i++) {
    r[i].wait_ns = r[i].span_ns > exec ? r[i].span_ns - exec : 0;
    in->wait_sum_ns += r[i].wait_ns;
    if (r[i].wait_ns > in->max_wait_ns) in->max_wait_ns = r[i].wait_ns;
  }
  if (exec) in->busbw_gbps = (double)in->bytes * lens_job_busbw_factor(in->func, in->nranks) / (double)exec;
}

/* Instances found by a hash of their key (no sort of every record: 10^7
 * records sorted took seconds and twice their size in memory), put in key
 * order (few), then each instance's ranks sorted. */
static int reduce(struct lens_job_part *parts, size_t n, struct lens_job *j, uint64_t min_wait_ns, int consume) {
  memset(j, 0, sizeof *j);
  j->min_wait_ns = min_wait_ns ? min_wait_ns : LENS_JOB_MIN_WAIT_NS;
  size_t nk = 0, n_procs = 0, n_hosts = 0, ni = 0, cap_i = 0;
  j->ce_known = 1;
  for (size_t k = 0; k < n; k++) {
    nk += parts[k].n_recs;
    n_procs += parts[k].n_procs;
    if (parts[k].have_clock_map) j->have_clock_map = 1;
    j->ce_count += parts[k].ce_count;
    j->ce_enqueue_ns += parts[k].ce_enqueue_ns;
    if (!parts[k].have_ce) j->ce_known = 0;
  }
  size_t hcap = 1024; /* instance slots, a power of two, grown to stay at most half full */
  uint32_t *slots = NULL, *inst_of = malloc((nk ? nk : 1) * sizeof *inst_of), *order = NULL, *rank_of_inst = NULL;
  uint32_t *row_of = NULL; /* per record (partial by partial, from rec_base): its row, UINT32_MAX none */
  struct lens_job_wend *wends = NULL; /* the rows' one-way evidence (job_oneway.c) */
  size_t n_wends = 0, cap_wends = 0;
  size_t *start = NULL, *rec_base = NULL;
  struct ikey *ik = NULL;
  struct itmpl *tm = NULL;                 /* per instance, as ik */
  struct lens_job_prec *scratch = NULL;    /* a packed partial's records, read back */
  size_t scratch_cap = 0;
  struct rref *refs = malloc((nk ? nk : 1) * sizeof *refs);
  size_t *proc_base = malloc((n ? n : 1) * sizeof *proc_base);
  int32_t *host_of = host_ids(parts, n, n_procs, &n_hosts);
  size_t *seen = calloc(n_hosts ? n_hosts : 1, sizeof *seen);
  int64_t *lo = malloc((n_hosts ? n_hosts : 1) * sizeof *lo), *hi = malloc((n_hosts ? n_hosts : 1) * sizeof *hi);
  struct lens_job_oprefs o = {0};
  int rc = -1;
  if (!inst_of || !refs || !proc_base || !host_of || !seen || !lo || !hi) goto out;
  /* written whole, record by record: pages faulted in at once (lens_prefault) */
  lens_prefault(inst_of, nk * sizeof *inst_of);
  lens_prefault(refs, nk * sizeof *refs);
  slots = malloc(hcap * sizeof *slots);
  if (!slots) goto out;
  memset(slots, 0xff, hcap * sizeof *slots);
  size_t base = 0, q = 0;
  for (size_t k = 0; k < n; k++) {
    proc_base[k] = base;
    const struct lens_job_prec *recs = lens_job_part_recs(&parts[k], &scratch, &scratch_cap);
    if (!recs && parts[k].n_recs) goto out;
    for (size_t i = 0; i < parts[k].n_recs; i++, q++) {
      const struct lens_job_prec *p = &recs[i];
      struct ikey key = {p->comm_id, p->seq, p->kind, p->func, p->a, p->b};
      if (2 * (ni + 1) > hcap) { /* grow: rehash the instances */
        size_t nc = hcap * 2;
        uint32_t *ns = malloc(nc * sizeof *ns);
        if (!ns) goto out;
        memset(ns, 0xff, nc * sizeof *ns);
        for (size_t t = 0; t < ni; t++) {
          size_t h = (size_t)ikey_hash(&ik[t]) & (nc - 1);
          while (ns[h] != UINT32_MAX) h = (h + 1) & (nc - 1);
          ns[h] = (uint32_t)t;
        }
        free(slots);
        slots = ns, hcap = nc;
      }
      size_t h = (size_t)ikey_hash(&key) & (hcap - 1);
      while (slots[h] != UINT32_MAX && ikey_cmp(&ik[slots[h]], &key)) h = (h + 1) & (hcap - 1);
      int fresh = slots[h] == UINT32_MAX;
      if (fresh) {
        if (ni == cap_i) {
          size_t nc = cap_i ? cap_i * 2 : 1024;
          struct ikey *x = realloc(ik, nc * sizeof *x);
          if (!x) goto out;
          ik = x;
          struct itmpl *y = realloc(tm, nc * sizeof *y);
          if (!y) goto out;
          tm = y, cap_i = nc;
        }
        ik[ni] = key;
        slots[h] = (uint32_t)ni++;
      }
      inst_of[q] = slots[h];
      refs[q] = (struct rref){p->r.rank, p->r.proc < 0 ? -1 : (int32_t)(base + (size_t)p->r.proc), p->r.event,
                              (uint32_t)k, i, p->user_tag};
      /* the instance's first record: the least, the earliest of equals (as a stable sort keeps them); a
       * transfer's sender first (itmpl_first) */
      if (fresh || itmpl_first(&key, &refs[q], &tm[slots[h]].first)) itmpl_set(&tm[slots[h]], &refs[q], p);
    }
    base += parts[k].n_procs;
  }
  free(slots);
  slots = NULL;
  /* instances in key order; records bucketed by instance (stable), then ranks sorted within */
  order = malloc((ni ? ni : 1) * sizeof *order);
  rank_of_inst = malloc((ni ? ni : 1) * sizeof *rank_of_inst);
  start = calloc(ni + 1, sizeof *start);
  if (!order || !rank_of_inst || !start) goto out;
  for (size_t i = 0; i < ni; i++) order[i] = (uint32_t)i;
  sort_ikeys = ik;
  qsort(order, ni, sizeof *order, inst_order_cmp);
  for (size_t i = 0; i < ni; i++) rank_of_inst[order[i]] = (uint32_t)i;
  for (size_t r = 0; r < nk; r++) start[rank_of_inst[inst_of[r]] + 1]++;
  for (size_t i = 0; i < ni; i++) start[i + 1] += start[i];
  {
    struct rref *sorted = malloc((nk ? nk : 1) * sizeof *sorted);
    size_t *fill = malloc((ni ? ni : 1) * sizeof *fill);
    if (!sorted || !fill) {
      free(sorted), free(fill);
      goto out;
    }
    lens_prefault(sorted, nk * sizeof *sorted);
    memcpy(fill, start, ni * sizeof *fill);
    for (size_t r = 0; r < nk; r++) sorted[fill[rank_of_inst[inst_of[r]]]++] = refs[r];
    free(fill);
    free(refs);
    refs = sorted;
  }
  free(inst_of);
  inst_of = NULL;
  j->insts = calloc(ni ? ni : 1, sizeof *j->insts);
  row_of = malloc((nk ? nk : 1) * sizeof *row_of);
  rec_base = malloc((n ? n : 1) * sizeof *rec_base);
  if (!j->insts || !row_of || !rec_base) goto out;
  lens_prefault(row_of, nk * sizeof *row_of);
  memset(row_of, 0xff, nk * sizeof *row_of);
  for (size_t k = 0, b = 0; k < n; b += parts[k].n_recs, k++) rec_base[k] = b;
  /* Instances and where each record's row goes; the rows are filled below,
   * partial by partial. */
  size_t rows = 0;
  for (size_t i = 0; i < ni; i++) {
    struct rref *r0 = refs + start[i];
    size_t cnt = start[i + 1] - start[i];
    /* Partials given in host order with hosts' ranks consecutive bring an
     * instance's ranks in order already: sorted only when not. */
    size_t t0 = 1;
    while (t0 < cnt && rref_cmp(&r0[t0 - 1], &r0[t0]) <= 0) t0++;
    if (t0 < cnt) qsort(r0, cnt, sizeof *r0, rref_cmp);
    /* the key is every record's of the instance, the rest its first record's (r0[0]) */
    const struct ikey *key = &ik[order[i]];
    const struct itmpl *p = &tm[order[i]];
    struct lens_job_inst *in = &j->insts[j->n_insts++];
    in->comm_id = key->comm_id;
    in->seq = key->seq;
    in->nranks = p->nranks;
    in->is_p2p = key->kind;
    in->peer_lo = key->kind ? key->a : -1;
    in->peer_hi = key->kind ? key->b : -1;
    in->func = p->func_s;
    in->algo = p->algo_s;
    in->proto = p->proto_s;
    in->bytes = p->bytes;
    in->flags = p->iflags;
    in->first_rank = rows;
    for (size_t t = 0; t < cnt; t++) {
      if (t && r0[t - 1].rank == r0[t].rank) continue; /* the same rank twice (two traces of one process): first kept */
      row_of[rec_base[r0[t].part] + r0[t].rec] = (uint32_t)rows++;
      in->n_ranks++;
      if (!in->user_tag) in->user_tag = r0[t].user_tag; /* the first rank's that has one */
    }
  }
  free(refs);
  refs = NULL;
  j->ranks = calloc(rows ? rows : 1, sizeof *j->ranks);
  if (j->ranks) lens_prefault(j->ranks, rows * sizeof *j->ranks);
  o.parts = parts;
  o.part = malloc((rows ? rows : 1) * sizeof *o.part);
  o.first_op = malloc((rows ? rows : 1) * sizeof *o.first_op);
  o.n_ops = malloc((rows ? rows : 1) * sizeof *o.n_ops);
  if (!j->ranks || !o.part || !o.first_op || !o.n_ops) goto out;
  lens_prefault(o.part, rows * sizeof *o.part); /* written whole, row by row, below */
  lens_prefault(o.first_op, rows * sizeof *o.first_op);
  lens_prefault(o.n_ops, rows * sizeof *o.n_ops);
  for (size_t k = 0; k < n; k++) {
    struct lens_job_part *pk = &parts[k];
    const struct lens_job_prec *recs = lens_job_part_recs(pk, &scratch, &scratch_cap);
    if (!recs && pk->n_recs) goto out;
    size_t wc = 0; /* the partial's wops are in record order */
    for (size_t i = 0; i < pk->n_recs; i++) {
      uint32_t row = row_of[rec_base[k] + i];
      while (wc < pk->n_wops && pk->wops[wc].rec < i) wc++;
      size_t w0 = wc;
      while (wc < pk->n_wops && pk->wops[wc].rec == i) wc++;
      if (row == UINT32_MAX) continue;
      const struct lens_job_prec *x = &recs[i];
      struct lens_job_rank *r = &j->ranks[row];
      *r = x->r;
      r->proc = x->r.proc < 0 ? -1 : (int32_t)(proc_base[k] + (size_t)x->r.proc);
      o.part[row] = (uint32_t)k;
      o.first_op[row] = x->first_op;
      o.n_ops[row] = x->n_ops;
      if (wc > w0 && lens_job_wends_add(j, row, r, pk->wops + w0, wc - w0, &wends, &n_wends, &cap_wends)) goto out;
    }
    if (!consume) continue;
    free(pk->recs);
    pk->recs = NULL;
    free(pk->recs_z);
    pk->recs_z = NULL;
    pk->recs_z_len = 0;
    free(pk->wops); /* copied into wends */
    pk->wops = NULL;
    pk->n_wops = 0;
    pk->n_recs = 0;
#ifdef __GLIBC__
    /* The records came from the heap (the map keeps it): give their pages
     * back now and then, or the rows' pages only add to them. */
    if (k % 16 == 15) malloc_trim(0);
#endif
  }
  j->n_ranks = rows;
  for (size_t i = 0; i < j->n_insts; i++) {
    struct lens_job_inst *x = &j->insts[i];
    x->ranks_seen = (int)x->n_ranks;
    int want = participants(x);
    if (x->ranks_seen < want) x->flags |= LENS_JOB_PARTIAL;
    if (x->ranks_seen >= want) j->matched_all++;
    else if (x->ranks_seen > 1) j->matched_some++;
    else j->matched_one++;
    decompose(j, x, host_of, i, seen, lo, hi);
  }
  if (lens_job_pair_oneway(j, wends, n_wends, host_of)) goto out;
  free(wends);
  wends = NULL;
  rc = lens_job_finish(j, &o);
out:
  free(slots);
  free(inst_of);
  free(order);
  free(rank_of_inst);
  free(start);
  free(ik);
  free(tm);
  free(scratch);
  free(refs);
  free(proc_base);
  free(host_of);
  free(seen);
  free(lo);
  free(hi);
  free(o.part);
  free(o.first_op);
  free(o.n_ops);
  free(row_of);
  free(rec_base);
  free(wends);
  if (rc) lens_job_free(j);
  return rc;
}

int lens_job_reduce(const struct lens_job_part *parts, size_t n, struct lens_job *j, uint64_t min_wait_ns) {
  return reduce((struct lens_job_part *)parts, n, j, min_wait_ns, 0); /* read only without consume */
}

int lens_job_reduce_consume(struct lens_job_part *parts, size_t n, struct lens_job *j, uint64_t min_wait_ns) {
  return reduce(parts, n, j, min_wait_ns, 1);
}

int lens_job_build(const struct lens_model *m, struct lens_job *j, uint64_t min_wait_ns) {
  struct lens_job_part p;
  if (lens_job_map(m, &p)) {
    memset(j, 0, sizeof *j);
    return -1;
  }
  int rc = lens_job_reduce(&p, 1, j, min_wait_ns);
  lens_job_part_free(&p);
  return rc;
}

/* ---- the partials' own storage ---- */
struct str_block { struct str_block *next; size_t used; char data[]; };
#define STR_BLOCK 65536

static const char *own(struct str_block **head, const char *s) {
  if (!s) return NULL;
  size_t l = strlen(s) + 1;
  struct str_block *b = *head;
  if (!b || STR_BLOCK - b->used < l) {
    size_t cap = l > STR_BLOCK ? l : STR_BLOCK;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->next = *head, b->used = 0, *head = b;
  }
  char *d = b->data + b->used;
  memcpy(d, s, l);
  b->used += l;
  return d;
}

/* Copies of the (few distinct) strings: consecutive records repeat them. */
int lens_job_part_own_strings(struct lens_job_part *p) {
  struct str_block *head = p->strings;
  const char *last_in[3] = {0}, *last_out[3] = {0};
  for (size_t i = 0; i < p->n_recs; i++) {
    const char **f[3] = {&p->recs[i].func_s, &p->recs[i].algo_s, &p->recs[i].proto_s};
    for (int k = 0; k < 3; k++) {
      if (!*f[k]) continue;
      if (*f[k] != last_in[k]) {
        last_in[k] = *f[k];
        if (!(last_out[k] = own(&head, *f[k]))) return p->strings = head, -1;
      }
      *f[k] = last_out[k];
    }
  }
  p->strings = head;
  return 0;
}

void lens_job_part_strings_free(void *strings) {
  struct str_block *b = strings;
  while (b) {
    struct str_block *n = b->next;
    free(b);
    b = n;
  }
}

const char *lens_job_part_intern(void **strings, const char *s) {
  struct str_block *head = *strings;
  const char *r = own(&head, s);
  *strings = head;
  return r;
}

void lens_job_part_free(struct lens_job_part *p) {
  for (size_t i = 0; p->files && i < p->n_files; i++) free(p->files[i]);
  free(p->files);
  free(p->procs);
  free(p->comms);
  free(p->recs);
  free(p->recs_z);
  free(p->ops);
  free(p->wops);
  free(p->clocks);
  lens_job_part_strings_free(p->strings);
  memset(p, 0, sizeof *p);
}

/* ---- what the report prints, without the events ---- */
struct lens_model *lens_job_skeleton(const struct lens_job_part *parts, size_t n) {
  struct lens_model *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  size_t nf = 0, np = 0, nc = 0;
  for (size_t k = 0; k < n; k++) nf += parts[k].n_files, np += parts[k].n_procs, nc += parts[k].n_comms;
  m->files = calloc(nf ? nf : 1, sizeof *m->files);
  m->procs = calloc(np ? np : 1, sizeof *m->procs);
  m->comms = calloc(nc ? nc : 1, sizeof *m->comms);
  if (!m->files || !m->procs || !m->comms) {
    lens_job_skeleton_free(m);
    return NULL;
  }
  size_t base = 0;
  for (size_t k = 0; k < n; k++) {
    const struct lens_job_part *p = &parts[k];
    for (size_t i = 0; i < p->n_files; i++) m->files[m->n_files++].path = p->files[i];
    for (size_t i = 0; i < p->n_procs; i++) {
      struct lens_proc *q = &m->procs[m->n_procs++];
      q->file = -1;
      q->pid = p->procs[i].pid;
      q->outer_pid = p->procs[i].outer_pid;
      memcpy(q->host, p->procs[i].host, sizeof q->host);
      q->host[sizeof q->host - 1] = 0;
    }
    for (size_t i = 0; i < p->n_comms; i++) {
      struct lens_comm *c = &m->comms[m->n_comms++];
      c->proc = p->comms[i].proc < 0 ? -1 : (int32_t)(base + (size_t)p->comms[i].proc);
      c->comm_id = p->comms[i].comm_id;
      c->rank = p->comms[i].rank;
      c->nranks = p->comms[i].nranks;
      memcpy(c->name, p->comms[i].name, sizeof c->name);
      c->name[sizeof c->name - 1] = 0;
    }
    base += p->n_procs;
  }
  return m;
}

void lens_job_skeleton_free(struct lens_model *m) {
  if (!m) return;
  free(m->files);
  free(m->procs);
  free(m->comms);
  free(m);
}

struct lens_align_proc_clock *lens_job_parts_clocks(const struct lens_job_part *parts, size_t n, size_t *n_procs) {
  size_t np = 0;
  for (size_t k = 0; k < n; k++) np += parts[k].n_procs;
  struct lens_align_proc_clock *pc = calloc(np ? np : 1, sizeof *pc);
  if (!pc) return NULL;
  size_t at = 0;
  for (size_t k = 0; k < n; k++) {
    const struct lens_job_part *p = &parts[k];
    if (p->clocks) {
      memcpy(pc + at, p->clocks, p->n_procs * sizeof *pc);
      at += p->n_procs;
      continue;
    }
    for (size_t i = 0; i < p->n_procs; i++, at++) { /* an older partial: placed by nothing */
      snprintf(pc[at].host, sizeof pc[at].host, "%s", p->procs[i].host);
      pc[at].drift_err_ppm = LENS_ALIGN_DRIFT_UNKNOWN_PPM;
    }
  }
  *n_procs = np;
  return pc;
}
