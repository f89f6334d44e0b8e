/* The job view, part 2: why the last rank was late (or the execution slow),
 * the straggler ranking per communicator and the headline rows
 * (docs/job.md).
 *
 * A late rank's own pipeline is measured on its own host clock (late_cause
 * below): a stage is the cause when it explains at least half of the
 * lateness; when no stage after the API call does, the application called
 * late. Instances without
 * a straggler are checked for a starved proxy (sched traces) and for a slow
 * link: one sender->receiver link whose own time (its sender's wire time per
 * byte against the instance's typical link's) makes it far slower, on the
 * network (the rule the network view uses, lens_net_own_ratios and
 * lens_net_link_is_slow; docs/job.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "job_priv.h"
#include "lens_checked.h"
#include "net_analysis.h"

const char *lens_job_cause_name(int c) {
  static const char *const n[] = {"none",          "late_app_call", "slow_enqueue", "slow_launch",
                                  "gpu_busy",      "starved_proxy", "slow_link",    "unknown"};
  return c >= 0 && c < (int)(sizeof n / sizeof n[0]) ? n[c] : "unknown";
}

static uint64_t threshold(const struct lens_job *j, const struct lens_job_inst *in) {
  uint64_t f = lens_f2u64((double)in->exec_ns * LENS_JOB_MIN_WAIT_FRAC);
  return f > j->min_wait_ns ? f : j->min_wait_ns;
}

int lens_job_inst_straggles(const struct lens_job *j, const struct lens_job_inst *in) {
  return lens_job_inst_decomposed(in) && in->max_wait_ns >= threshold(j, in) && in->last_rank >= 0;
}

enum { ST_ENQUEUE, ST_LAUNCH };

/* A host-side stage's duration: API call -> launch start, the launch. */
static int stage(const struct lens_job_rank *r, int s, int64_t *v) {
  switch (s) {
  case ST_ENQUEUE:
    if (!r->api_ns || !r->launch_start_ns) return 0;
    *v = lens_u64_diff(r->launch_start_ns, r->api_ns);
    return 1;
  default:
    if (!r->launch_start_ns || !r->launch_stop_ns) return 0;
    *v = lens_u64_diff(r->launch_stop_ns, r->launch_start_ns);
    return 1;
  }
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

static int64_t median_i64(int64_t *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_i64);
  return v[n / 2];
}

/* Where the last rank lost its time, on its own host clock. The kernel
 * starts when both the launch has returned and the stream is free, so the
 * stage that binds is found against the rank's own kernel start: a kernel
 * that started long after its launch returned waited for a busy GPU;
 * otherwise the host side was late -- a slow enqueue or launch (against the
 * other ranks' durations), or the API call itself (the application). The
 * API call is not compared with other ranks' calls: applications run ahead
 * of their GPUs, so an early peer says nothing about being on time. */
static void late_cause(struct lens_job_inst *in, struct lens_job_rank *r, int64_t *tmp) {
  const struct lens_job_rank *L = NULL;
  for (size_t i = 0; i < in->n_ranks; i++)
    if (r[i].rank == in->last_rank) L = &r[i];
  int64_t late = lens_u2i64(in->max_wait_ns); /* against the first rank to arrive */
  in->cause_rank = in->last_rank;
  in->cause = LENS_CAUSE_UNKNOWN;
  in->cause_excess_ns = late;
  if (!L) return;
  int64_t ex[2] = {INT64_MIN, INT64_MIN}; /* enqueue, launch: excess over the other ranks' median */
  for (int s = 0; s < 2; s++) {
    int64_t v;
    size_t k = 0;
    if (!stage(L, s, &v)) continue;
    for (size_t i = 0; i < in->n_ranks; i++)
      if (&r[i] != L && stage(&r[i], s, &tmp[k])) k++;
    ex[s] = lens_i64_sub(v, median_i64(tmp, k));
  }
  /* GPU wait after the launch returned, as an interval: the mapped GPU
   * start +- its clock map's error bound, and the proxy's notice of the
   * start as a further upper bound. A cause is named only when the
   * interval decides it. */
  int64_t gpu_lo = INT64_MIN, gpu_hi = INT64_MAX;
  if (L->launch_stop_ns && L->kstart_mono_ns) {
    int64_t g = lens_u64_diff(L->kstart_mono_ns, L->launch_stop_ns);
    gpu_lo = lens_i64_sub(g, lens_u2i64(L->map_err_ns));
    gpu_hi = lens_i64_add(g, lens_u2i64(L->map_err_ns));
  }
  if (L->launch_stop_ns && L->kstart_notice_ns) {
    int64_t g = lens_u64_diff(L->kstart_notice_ns, L->launch_stop_ns);
    if (g < gpu_hi) gpu_hi = g;
  }
  /* Host spans (some rank had no KernelCh): every span ends at the proxy's
   * completion notice, which a stalled proxy delays by milliseconds, so the
   * lateness itself may be the notices', and no GPU start is compared with
   * it: neither a busy GPU nor a late call is seen. Only a host stage,
   * measured on the same host clock as the spans, may be named. */
  int host_spans = (in->flags & LENS_JOB_HOST_SPANS) != 0;
  if (host_spans) gpu_lo = INT64_MIN, gpu_hi = INT64_MAX;
  int64_t host_best = ex[0] > ex[1] ? ex[0] : ex[1];
  /* INT64_MIN: neither host stage measured. The doubling saturates: the
   * times come from files and may be anything. The excess reported is the
   * part of this instance's lateness the stage explains: the stage's
   * excess, at most the lateness. A stage longer than the lateness holds
   * time the other ranks lost too (a GPU queue that grows each iteration
   * behind an application running ahead of it, a launch that blocks on
   * that queue): it is not how late this rank was here. */
  if (host_best != INT64_MIN && lens_i64_mul(2, host_best) >= late && gpu_lo < host_best) {
    in->cause = ex[1] >= ex[0] ? LENS_CAUSE_SLOW_LAUNCH : LENS_CAUSE_SLOW_ENQUEUE;
    in->cause_excess_ns = host_best < late ? host_best : late;
  } else if (gpu_lo != INT64_MIN && lens_i64_mul(2, gpu_lo) >= late) {
    in->cause = LENS_CAUSE_GPU_BUSY;
    in->cause_excess_ns = gpu_lo < late ? gpu_lo : late;
  } else if (gpu_hi != INT64_MAX && lens_i64_mul(2, gpu_hi) < late && L->api_ns) {
    in->cause = LENS_CAUSE_LATE_APP; /* every stage after the API call was on time */
  } /* else: the GPU clock map is too coarse to tell a busy GPU from a late app, or host spans hide both */
}

struct step { int32_t snd, rcv, rank, proc; uint64_t dur; const struct lens_job_op *op; }; /* one proxy op: its
                                                                                           * link, who ran it, its pace */

static uint64_t link_of(const struct step *s) { return (uint64_t)(uint32_t)s->snd << 32 | (uint32_t)s->rcv; }

/* Ops ordered by a group (rank, proc, or one group for all), then index. */
/* The comparators' arrays, per thread: a reduce on any thread (the Kineto merge maps on several) never reads
 * another's (as gpu_join.c and kineto_match.c). */
static _Thread_local const struct step *grp_steps;
static _Thread_local int grp_field;
static int32_t grp_of(const struct step *s) { return grp_field == 0 ? s->rank : grp_field == 1 ? s->proc : 0; }
static int grp_cmp(const void *x, const void *y) {
  size_t a = *(const size_t *)x, b = *(const size_t *)y;
  int32_t ga = grp_of(&grp_steps[a]), gb = grp_of(&grp_steps[b]);
  if (ga != gb) return ga < gb ? -1 : 1;
  return (a > b) - (a < b);
}

/* For every op: the shortest pace among the ops of its group whose link is
 * another one (UINT64_MAX: none). Per group, the shortest op and the
 * shortest op of another link than that one's answer every op exactly. */
static void min_other_link(const struct step *s, size_t n, int field, size_t *ord, uint64_t *out) {
  for (size_t i = 0; i < n; i++) ord[i] = i;
  grp_steps = s, grp_field = field;
  /* The ops come row by row, rows in rank order: by rank (and for one group)
   * they are already in (group, index) order, and by process too when each
   * process's ranks are consecutive. The sort is only for the other cases
   * (a fifth of a 128-partial merge, sorting sorted arrays). */
  size_t i0 = 1;
  while (i0 < n && grp_of(&s[i0 - 1]) <= grp_of(&s[i0])) i0++;
  if (i0 < n) qsort(ord, n, sizeof *ord, grp_cmp);
  for (size_t i = 0; i < n;) {
    size_t e = i;
    while (e < n && grp_of(&s[ord[e]]) == grp_of(&s[ord[i]])) e++;
    uint64_t b1 = UINT64_MAX, b2 = UINT64_MAX, l1 = 0;
    for (size_t q = i; q < e; q++)
      if (s[ord[q]].dur < b1) b1 = s[ord[q]].dur, l1 = link_of(&s[ord[q]]);
    for (size_t q = i; q < e; q++)
      if (link_of(&s[ord[q]]) != l1 && s[ord[q]].dur < b2) b2 = s[ord[q]].dur;
    for (size_t q = i; q < e; q++) out[ord[q]] = link_of(&s[ord[q]]) == l1 ? b2 : b1;
    i = e;
  }
}

/* Whether the link snd -> rcv, at that pace ratio, is slow by the network
 * view's rule (lens_net_link_is_slow, net_analysis.h): its ops' phases in
 * this instance summed, its sender's and its receiver's; a side whose ops
 * recorded no phases is unknown. A link whose sender waits on its GPU is
 * never slow, however slow its pace. */
static int link_on_net(const struct step *s, size_t n, int32_t snd, int32_t rcv, double ratio) {
  struct lens_net_split sides;
  memset(&sides, 0, sizeof sides);
  int send_known = 0, recv_known = 0;
  for (size_t q = 0; q < n; q++) {
    const struct lens_job_op *op = s[q].op;
    if (s[q].snd != snd || s[q].rcv != rcv || !(op->flags & LENS_JOB_OP_SPLIT)) continue;
    int send = (op->flags & LENS_JOB_OP_SEND) != 0;
    int base = send ? LENS_NET_SEND_GPU_WAIT : LENS_NET_RECV_DATA_WAIT;
    for (int k = 0; k < 3; k++) sides.blame_ns[base + k] += (uint64_t)op->phase_us[k] * 1000;
    if (send) send_known = 1;
    else recv_known = 1;
  }
  return lens_net_link_is_slow(ratio, &sides, send_known, recv_known);
}

/* A link of an instance: where it first appears among the ops, and its
 * least slow op's ratio; its sender's ops' bytes, wire time and time (all
 * three phases), for its own ratio (lens_net_own_ratios). */
struct link_pick { uint64_t link; size_t first; double ratio; uint64_t bytes; double wire_ns, sender_ns; };

/* Slow link: the link whose own time is far slower than the other links'
 * in the same instance, by the network view's rule (docs/job.md): its
 * sender's wire time per byte against the typical link's of the instance
 * (the lower median), then its sender's time over that time with its wire
 * at the typical pace (lens_net_own_ratios, the function net judges its
 * connections with). Not its end-to-end pace: in a ring every link
 * downstream of a slow one waits for its data, and moves at its pace.
 * A link whose sender's ops have no bytes or no wire phase (no sender's
 * trace, a partial written before op bytes were kept) is judged by its
 * pace, as net judges a connection without a sender's trace by its score:
 * an op's ratio is
 * its pace over the fastest other link of its own rank (a proxy that is slow
 * is slow on all its links; a slow link is slow at both its ends while the
 * same proxies move the other links' data at their usual pace); with no
 * other link on that rank, of its process (proxies sharing its CPUs), then
 * of the instance. The link's ratio is its least slow op's (every end must
 * show it: a stalled proxy is slow on all its links alike and does not stand
 * out). Ties go to the link met first, whichever ratio. The ops come from
 * the map (lens_job_op). */
static int slow_link(const struct lens_job_oprefs *o, struct lens_job_inst *in, const struct lens_job_rank *r,
                     struct step **buf, size_t *cap) {
  size_t n = 0;
  for (size_t i = 0; i < in->n_ranks; i++) {
    size_t row = in->first_rank + i;
    const struct lens_job_part *p = &o->parts[o->part[row]];
    uint32_t n_ops = o->n_ops[row];
    if (n + n_ops > *cap) {
      size_t nc = *cap ? *cap : 256;
      while (nc < n + n_ops) nc *= 2;
      struct step *nb = realloc(*buf, nc * sizeof *nb);
      if (!nb) return -1;
      *buf = nb, *cap = nc;
    }
    for (uint32_t k = 0; k < n_ops; k++) {
      const struct lens_job_op *op = &p->ops[o->first_op[row] + k];
      (*buf)[n++] = (struct step){op->snd, op->rcv, r[i].rank, r[i].proc, op->dur, op};
    }
  }
  if (n < 2) return 0;
  const struct step *s = *buf;
  size_t *ord = malloc(n * sizeof *ord);
  uint64_t *own = malloc(n * sizeof *own), *proc = malloc(n * sizeof *proc), *any = malloc(n * sizeof *any);
  struct link_pick *lp = malloc(n * sizeof *lp);
  size_t hbits = 4;
  while (((size_t)1 << hbits) < 2 * n) hbits++;
  size_t hmask = ((size_t)1 << hbits) - 1, *slot = malloc((hmask + 1) * sizeof *slot);
  double *dv = malloc(3 * n * sizeof *dv);
  if (!ord || !own || !proc || !any || !lp || !slot || !dv) {
    free(ord), free(own), free(proc), free(any), free(lp), free(slot), free(dv);
    return -1;
  }
  min_other_link(s, n, 0, ord, own);
  min_other_link(s, n, 1, ord, proc);
  min_other_link(s, n, 2, ord, any);
  /* The ops' links gathered by a hash of the link, not a sort of the ops
   * (that sort was a tenth of a 128-partial merge). The order the links
   * are then visited in does not change the pick: the highest ratio, ties
   * to the link that appears first (each link's first op is its own). */
  memset(slot, 0xff, (hmask + 1) * sizeof *slot);
  size_t nl = 0;
  for (size_t q = 0; q < n; q++) {
    uint64_t base = own[q] != UINT64_MAX ? own[q] : proc[q] != UINT64_MAX ? proc[q] : any[q];
    double ratio = base && base != UINT64_MAX ? (double)s[q].dur / (double)base : 0;
    uint64_t link = link_of(&s[q]);
    size_t h = (size_t)((link * 0x9E3779B97F4A7C15ull) >> (64 - hbits));
    while (slot[h] != SIZE_MAX && lp[slot[h]].link != link) h = (h + 1) & hmask;
    if (slot[h] == SIZE_MAX) {
      slot[h] = nl;
      lp[nl++] = (struct link_pick){link, q, ratio, 0, 0, 0};
    } else if (ratio < lp[slot[h]].ratio) {
      lp[slot[h]].ratio = ratio;
    }
    const struct lens_job_op *op = s[q].op;
    if ((op->flags & LENS_JOB_OP_SEND) && (op->flags & LENS_JOB_OP_SPLIT) && op->bytes) {
      struct link_pick *L = &lp[slot[h]];
      L->bytes += op->bytes;
      L->wire_ns += (double)op->phase_us[2] * 1000; /* LENS_NET_SEND_WIRE - LENS_NET_SEND_GPU_WAIT */
      L->sender_ns += ((double)op->phase_us[0] + op->phase_us[1] + op->phase_us[2]) * 1000;
    }
  }
  double *nspb = dv, *all = dv + nl, *wire = dv + 2 * nl; /* own ratios, per link */
  for (size_t i = 0; i < nl; i++) {
    nspb[i] = lens_net_wire_ns_per_byte(lp[i].bytes, lens_f2u64(lp[i].wire_ns));
    all[i] = lp[i].sender_ns, wire[i] = lp[i].wire_ns;
  }
  if (lens_net_own_ratios(nl, nspb, all, wire, nspb, all)) {
    free(ord), free(own), free(proc), free(any), free(lp), free(slot), free(dv);
    return -1;
  }
  for (size_t i = 0; i < nl; i++)
    if (all[i] > 0) lp[i].ratio = all[i];
  double best = 0;
  size_t best_first = SIZE_MAX;
  int32_t bs = -1, br = -1;
  for (size_t i = 0; i < nl; i++) {
    double lr = lp[i].ratio;
    if (lr > best || (lr == best && lr > 0 && lp[i].first < best_first)) {
      best = lr, best_first = lp[i].first;
      bs = s[lp[i].first].snd, br = s[lp[i].first].rcv;
    }
  }
  free(ord), free(own), free(proc), free(any), free(lp), free(slot), free(dv);
  in->link_snd = bs;
  in->link_rcv = br;
  in->link_ratio = best;
  in->link_on_net = best > 0 && link_on_net(s, n, bs, br, best);
  return 0;
}

/* A link slow in one instance may be a proxy stalled at both ends; a slow
 * link is slow in most instances (strong: by the network view's rule, at
 * LENS_JOB_SLOW_LINK_RATIO). Named where it is slow job-wide, in the
 * instances where the rule holds. */
struct link_vote { uint64_t comm_id; int32_t snd, rcv; uint32_t strong, measured; }; /* measured: per link, then per comm */
static int vote_cmp(const void *x, const void *y) {
  const struct link_vote *a = x, *b = y;
  if (a->comm_id != b->comm_id) return a->comm_id < b->comm_id ? -1 : 1;
  if (a->snd != b->snd) return a->snd < b->snd ? -1 : 1;
  return (a->rcv > b->rcv) - (a->rcv < b->rcv);
}

static int confirm_links(struct lens_job *j) {
  struct link_vote *v = calloc(j->n_insts ? j->n_insts : 1, sizeof *v);
  if (!v) return -1;
  size_t n = 0;
  for (size_t i = 0; i < j->n_insts; i++)
    if (j->insts[i].link_ratio > 0)
      v[n++] = (struct link_vote){j->insts[i].comm_id, j->insts[i].link_snd, j->insts[i].link_rcv,
                                  j->insts[i].link_on_net && j->insts[i].link_ratio >= LENS_JOB_SLOW_LINK_RATIO, 0};
  qsort(v, n, sizeof *v, vote_cmp);
  size_t nv = 0;
  for (size_t i = 0; i < n;) { /* one entry per link: instances where it was strongly the slowest */
    size_t k = i;
    uint32_t strong = 0;
    while (k < n && !vote_cmp(&v[i], &v[k])) strong += v[k++].strong;
    v[nv] = v[i];
    v[nv].strong = strong;
    v[nv++].measured = (uint32_t)(k - i);
    i = k;
  }
  for (size_t i = 0; i < nv;) { /* per communicator: instances with steps measured */
    size_t k = i;
    uint32_t total = 0;
    while (k < nv && v[k].comm_id == v[i].comm_id) total += v[k++].measured;
    for (size_t q = i; q < k; q++) v[q].measured = total;
    i = k;
  }
  for (size_t i = 0; i < j->n_insts; i++) {
    struct lens_job_inst *in = &j->insts[i];
    if (in->cause != LENS_CAUSE_NONE || !in->link_on_net) continue;
    struct link_vote key = {in->comm_id, in->link_snd, in->link_rcv, 0, 0};
    const struct link_vote *lv = bsearch(&key, v, nv, sizeof *v, vote_cmp);
    if (!lv || 2 * lv->strong < lv->measured) continue;
    in->cause = LENS_CAUSE_SLOW_LINK;
    in->cause_rank = in->link_snd;
    in->cause_peer = in->link_rcv;
    in->cause_excess_ns = lens_f2i64(in->link_ratio * 1000);
  }
  free(v);
  return 0;
}

static int causes(const struct lens_job_oprefs *o, struct lens_job *j) {
  size_t maxr = 1;
  for (size_t i = 0; i < j->n_insts; i++)
    if (j->insts[i].n_ranks > maxr) maxr = j->insts[i].n_ranks;
  int64_t *tmp = malloc(maxr * sizeof *tmp);
  struct step *buf = NULL;
  size_t cap = 0;
  if (!tmp) return -1;
  int rc = 0;
  for (size_t i = 0; i < j->n_insts && !rc; i++) {
    struct lens_job_inst *in = &j->insts[i];
    struct lens_job_rank *r = j->ranks + in->first_rank;
    in->cause = LENS_CAUSE_NONE;
    in->cause_rank = in->cause_peer = -1;
    if (!lens_job_inst_decomposed(in)) continue;
    if (in->max_wait_ns >= threshold(j, in)) {
      late_cause(in, r, tmp);
      continue;
    }
    /* A starved proxy: the rank whose proxy was kept longest from noticing
     * one of the instance's events, if that is at least the straggler
     * threshold (a proxy preempted for a few us on a busy host is not a
     * cause of anything). */
    uint64_t most = 0;
    for (size_t k = 0; k < in->n_ranks; k++)
      if (r[k].starved && r[k].starved_ns >= threshold(j, in) && r[k].starved_ns > most) {
        most = r[k].starved_ns;
        in->cause = LENS_CAUSE_STARVED_PROXY;
        in->cause_rank = r[k].rank;
        in->cause_excess_ns = lens_u2i64(most);
      }
    if (in->cause == LENS_CAUSE_NONE) rc = slow_link(o, in, r, &buf, &cap);
  }
  free(tmp);
  free(buf);
  return rc ? rc : confirm_links(j);
}

/* ---- straggler ranking per communicator ---- */
static int strag_cmp(const void *x, const void *y) {
  const struct lens_job_straggler *a = x, *b = y;
  if (a->comm_id != b->comm_id) return a->comm_id < b->comm_id ? -1 : 1;
  if (a->user_tag != b->user_tag) return a->user_tag < b->user_tag ? -1 : 1;
  if (a->wait_caused_ns != b->wait_caused_ns) return a->wait_caused_ns > b->wait_caused_ns ? -1 : 1;
  return a->rank - b->rank;
}

/* The ranking per communicator (by_tag 0), or per communicator and user tag
 * over the tagged instances (by_tag 1): the same sums, keyed finer. */
static int rank_stragglers(struct lens_job *j, int by_tag, struct lens_job_straggler **out, size_t *n_out) {
  struct lens_job_straggler *v = calloc(j->n_insts ? j->n_insts : 1, sizeof *v);
  size_t n = 0;
  if (!v) return -1;
  for (size_t i = 0; i < j->n_insts; i++) {
    const struct lens_job_inst *in = &j->insts[i];
    if (!lens_job_inst_straggles(j, in)) continue;
    uint64_t tag = by_tag ? in->user_tag : 0;
    if (by_tag && !tag) continue;
    struct lens_job_straggler *s = NULL;
    for (size_t k = 0; k < n && !s; k++) /* few stragglers per job: linear is fine */
      if (v[k].comm_id == in->comm_id && v[k].user_tag == tag && v[k].rank == in->last_rank) s = &v[k];
    if (!s) {
      s = &v[n++];
      s->comm_id = in->comm_id;
      s->user_tag = tag;
      s->rank = in->last_rank;
      s->proc = -1;
      for (size_t k = 0; k < in->n_ranks; k++)
        if (j->ranks[in->first_rank + k].rank == in->last_rank) s->proc = j->ranks[in->first_rank + k].proc;
    }
    s->wait_caused_ns += in->wait_sum_ns;
    s->times_last++;
    if (in->cause >= 0 && in->cause < 8) s->cause_count[in->cause]++;
    if (in->cause == LENS_CAUSE_UNKNOWN && (in->flags & LENS_JOB_HOST_SPANS)) s->unknown_host_spans++;
  }
  qsort(v, n, sizeof *v, strag_cmp);
  *out = v;
  *n_out = n;
  return 0;
}

static int stragglers(struct lens_job *j) {
  if (rank_stragglers(j, 0, &j->stragglers, &j->n_stragglers)) return -1;
  return rank_stragglers(j, 1, &j->tag_stragglers, &j->n_tag_stragglers);
}

/* ---- headline rows ---- */
static int cmp_i32(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return a < b ? -1 : a > b;
}

static _Thread_local const struct lens_job_inst *sort_base;
static int row_cmp(const void *x, const void *y) {
  const struct lens_job_inst *a = &sort_base[*(const size_t *)x], *b = &sort_base[*(const size_t *)y];
  if (a->comm_id != b->comm_id) return a->comm_id < b->comm_id ? -1 : 1;
  int f = strcmp(a->func ? a->func : "", b->func ? b->func : "");
  if (f) return f;
  return lens_size_bucket(a->bytes) - lens_size_bucket(b->bytes);
}

/* An instance that belongs in a headline row: seen on more than one rank
 * of a communicator of more than one (a row's count; its decomposed ones,
 * lens_job_inst_decomposed, are those with an execution). */
static int multi_rank(const struct lens_job_inst *in) { return in->nranks >= 2 && in->ranks_seen >= 2; }

int lens_job_inst_decomposed(const struct lens_job_inst *in) { return multi_rank(in) && in->exec_ns; }

static int rows(struct lens_job *j) {
  size_t n = j->n_insts;
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  uint64_t *ex = malloc((n ? n : 1) * sizeof *ex);
  j->rows = calloc(n ? n : 1, sizeof *j->rows);
  int32_t *last = malloc((n ? n : 1) * sizeof *last);
  if (!idx || !ex || !j->rows || !last) {
    free(idx), free(ex), free(last);
    return -1;
  }
  for (size_t i = 0; i < n; i++) idx[i] = i;
  sort_base = j->insts;
  qsort(idx, n, sizeof *idx, row_cmp);
  for (size_t i = 0; i < n;) {
    size_t k = i;
    while (k < n && !row_cmp(&idx[i], &idx[k])) k++;
    /* A row holds the group's instances seen on more than one rank. A
     * one-rank instance (an AlltoAll's self-send, a communicator of which
     * one rank was loaded) says nothing about waiting and is left out of
     * the row, not allowed to decide for the group: the sort is not stable,
     * and a group whose first instance was one was dropped whole. */
    const struct lens_job_inst *first = NULL;
    for (size_t q = i; q < k && !first; q++)
      if (multi_rank(&j->insts[idx[q]])) first = &j->insts[idx[q]];
    if (!first) {
      i = k;
      continue;
    }
    struct lens_job_row *row = &j->rows[j->n_rows++];
    row->comm_id = first->comm_id;
    row->func = first->func;
    row->bucket = lens_size_bucket(first->bytes);
    row->top_last_rank = -1;
    size_t ne = 0, nl = 0, nw = 0;
    double moved = 0, exec_sum = 0, wsum = 0;
    for (size_t q = i; q < k; q++) {
      const struct lens_job_inst *in = &j->insts[idx[q]];
      if (!multi_rank(in)) continue;
      row->count++;
      if (!lens_job_inst_decomposed(in)) continue;
      row->decomposed++;
      ex[ne++] = in->exec_ns;
      exec_sum += (double)in->exec_ns;
      moved += (double)in->bytes * lens_job_busbw_factor(in->func, in->nranks);
      for (size_t t = 0; t < in->n_ranks; t++) {
        uint64_t w = j->ranks[in->first_rank + t].wait_ns;
        wsum += (double)w, nw++;
        if (w > row->wait_max) row->wait_max = w;
      }
      if (in->max_wait_ns >= threshold(j, in) && in->last_rank >= 0) last[nl++] = in->last_rank;
    }
    if (ne) {
      row->exec_avg = lens_f2u64(exec_sum / (double)ne);
      qsort(ex, ne, sizeof *ex, cmp_i64); /* exec values fit int64 */
      row->exec_p50 = ex[(ne - 1) / 2];
      row->exec_p99 = ex[(size_t)ceil(0.99 * (double)ne) - 1];
      row->busbw_gbps = exec_sum > 0 ? moved / exec_sum : 0;
    }
    if (nw) row->wait_avg = lens_f2u64(wsum / (double)nw);
    row->with_straggler = nl;
    qsort(last, nl, sizeof *last, cmp_i32);
    for (size_t q = 0; q < nl;) { /* the mode: most frequent last rank */
      size_t e = q;
      while (e < nl && last[e] == last[q]) e++;
      if (e - q > row->top_last_count) row->top_last_count = e - q, row->top_last_rank = last[q];
      q = e;
    }
    i = k;
  }
  free(idx), free(ex), free(last);
  return 0;
}

int lens_job_finish(struct lens_job *j, const struct lens_job_oprefs *o) {
  if (causes(o, j) || stragglers(j) || rows(j)) return -1;
  /* communicators with more than one rank loaded */
  for (size_t i = 0; i < j->n_insts; i++)
    if (j->insts[i].ranks_seen > 1 && (!i || j->insts[i - 1].comm_id != j->insts[i].comm_id)) j->comms_multi++;
  return 0;
}

void lens_job_free(struct lens_job *j) {
  free(j->insts);
  free(j->ranks);
  free(j->rows);
  free(j->stragglers);
  free(j->tag_stragglers);
  free(j->oneway);
  memset(j, 0, sizeof *j);
}
