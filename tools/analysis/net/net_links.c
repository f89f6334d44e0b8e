#define _GNU_SOURCE /* qsort_r */
/* The network view, link level: steps summed per link (rank -> peer,
 * channel, direction, communicator), step-latency quantiles, achieved
 * bandwidth, the connections (sender's and receiver's side of one
 * direction) ranked slowest first, and asymmetry. Memory: a few words per
 * ProxyOp and per step, on top of the model that already holds them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_analysis.h"
#include "net_order.h"
#include "net_priv.h"
#include "net_step_runs.h"

struct op_key {
  uint64_t comm_id;
  int32_t comm, rank, peer, channel, dir, proc;
  int32_t event;
};

static int cmp_i32(int32_t a, int32_t b) { return a < b ? -1 : a > b; }
static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }
static int by_i32(const void *a, const void *b) { return cmp_i32(*(const int32_t *)a, *(const int32_t *)b); }

static int op_key_cmp(const void *pa, const void *pb) {
  const struct op_key *a = pa, *b = pb;
  int c;
  if ((c = cmp_u64(a->comm_id, b->comm_id))) return c;
  if ((c = cmp_i32(a->rank, b->rank))) return c;
  if ((c = cmp_i32(a->peer, b->peer))) return c;
  if ((c = cmp_i32(a->channel, b->channel))) return c;
  if ((c = cmp_i32(a->dir, b->dir))) return c;
  return cmp_i32(a->event, b->event);
}
static int same_link(const struct op_key *a, const struct op_key *b) {
  return a->comm_id == b->comm_id && a->rank == b->rank && a->peer == b->peer && a->channel == b->channel &&
         a->dir == b->dir;
}

/* One timed step of a partial, 8 bytes: its time (ns, up to 2^54), its size
 * class (direction << 8 | log2 of bytes: 9 bits) and whether it overlapped
 * a starved proxy thread (1 bit). Sorted as integers, a link's steps are in
 * the order of their times. */
typedef uint64_t net_step_t;
#define STEP_NS_MAX ((UINT64_C(1) << 54) - 1)
static net_step_t step_pack(uint64_t ns, unsigned cls, int starved) {
  return (ns > STEP_NS_MAX ? STEP_NS_MAX : ns) << 10 | (uint64_t)(cls & 511u) << 1 | (starved != 0);
}
static uint64_t step_ns(net_step_t x) { return x >> 10; }
static unsigned step_cls(net_step_t x) { return (unsigned)(x >> 1) & 511u; }
static int step_starved(net_step_t x) { return (int)(x & 1u); }

struct lens_net_part {
  struct lens_net n;          /* links (not scored, no connections; proc and comm the group's), qps, instances */
  uint8_t *steps;             /* timed steps by link, each link's sorted, each link a run of net_step_runs.h */
  size_t *first;              /* n.n_links + 1: link l's steps are first[l] .. first[l + 1] */
  size_t *at;                 /* n.n_links + 1: where link l's run starts in steps */
  size_t n_steps;
  /* The send steps' own pace, for the slow-link rule: each timed, not
   * starved send step with a wire phase and bytes, its wire time per byte
   * (WIRE_SCALE ns per byte, step_pack with no tag), as steps, first, at. */
  uint8_t *wsteps;
  size_t *wfirst, *wat;
  size_t n_wsteps;
  uint64_t n_events;          /* the group model's events: where the next group's event numbers start */
};

#define WIRE_SCALE 1024.0 /* a wire value is ns per byte * WIRE_SCALE: exact to a thousandth of a ns per byte */
static net_step_t wire_pack(const struct lens_net_step *s) {
  double v = lens_net_wire_ns_per_byte(s->bytes_known ? s->bytes : 0, s->phase_ns[LENS_NET_SEND_WIRE]) * WIRE_SCALE;
  return step_pack(v >= (double)STEP_NS_MAX ? STEP_NS_MAX : (uint64_t)(v + 0.5), 0, 0);
}

static uint16_t size_class(int dir, uint64_t bytes) {
  uint16_t l = 0;
  while (bytes > 1 && l < 63) {
    bytes >>= 1;
    l++;
  }
  return (uint16_t)((unsigned)dir << 8 | l);
}
#define NET_NCLASSES 512 /* dir << 8 | log2 */

/* Nearest-rank quantile of a sorted run. */
static uint64_t quantile(const net_step_t *st, size_t n, double q) {
  if (!n) return 0;
  size_t k = (size_t)ceil(q * (double)n);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return step_ns(st[k - 1]);
}
static int by_u64(const void *a, const void *b) { return cmp_u64(*(const uint64_t *)a, *(const uint64_t *)b); }

/* A monotone bucket of a step time: exact below 1024 ns, then 1024 buckets
 * per power of two (a 1/1024 relative width). */
#define NET_NBUCKETS (1024u + 45u * 1024u)
static uint32_t ns_bucket(uint64_t ns) {
  if (ns < 1024) return (uint32_t)ns;
  int e = 63 - __builtin_clzll(ns); /* 10 .. 53 */
  return 1024u + (uint32_t)(e - 10) * 1024u + (uint32_t)((ns >> (e - 10)) & 1023u);
}

/* body, with x each timed step of every partial in turn (the runs of a
 * partial's links follow each other). */
#define EACH_STEP(parts, np, x, body)                                                                                  \
  for (size_t g_ = 0; g_ < (np); g_++) {                                                                               \
    const struct lens_net_part *p_ = (parts)[g_];                                                                      \
    const uint8_t *q_ = p_->steps;                                                                                     \
    for (size_t l_ = 0; l_ < p_->n.n_links; l_++) {                                                                    \
      struct lens_net_steps_cursor c_;                                                                                 \
      lens_net_steps_start(&c_);                                                                                       \
      for (size_t i_ = p_->first[l_]; i_ < p_->first[l_ + 1]; i_++) {                                                  \
        net_step_t x;                                                                                                  \
        q_ = lens_net_steps_get(&c_, q_, &x);                                                                          \
        body;                                                                                                          \
      }                                                                                                                \
    }                                                                                                                  \
  }

/* Typical time of a step of each class: the median over every link's steps
 * in every group (all of them: long steps overlap starvation more often, so
 * leaving the starved ones out would make "typical" too short); the lower
 * median, exact, without a copy of the steps: a histogram of each class's
 * times finds the bucket that holds the median, then only that bucket's
 * values are gathered and sorted. */
static int class_medians(struct lens_net_part *const *parts, size_t np, uint64_t med[NET_NCLASSES]) {
  uint64_t cnt[NET_NCLASSES] = {0};
  uint64_t *hist[NET_NCLASSES] = {0};
  uint32_t bucket[NET_NCLASSES];
  uint64_t rank[NET_NCLASSES], in_bucket[NET_NCLASSES];
  uint64_t *vals[NET_NCLASSES] = {0};
  size_t nv[NET_NCLASSES] = {0};
  int rc = -1;
  EACH_STEP(parts, np, x, cnt[step_cls(x)]++);
  for (size_t c = 0; c < NET_NCLASSES; c++) {
    med[c] = 0;
    if (cnt[c] && !(hist[c] = calloc(NET_NBUCKETS, sizeof *hist[c]))) goto out;
  }
  EACH_STEP(parts, np, x, hist[step_cls(x)][ns_bucket(step_ns(x))]++);
  for (size_t c = 0; c < NET_NCLASSES; c++) {
    if (!cnt[c]) continue;
    uint64_t r = (cnt[c] - 1) / 2, seen = 0;
    uint32_t b = 0;
    while (seen + hist[c][b] <= r) seen += hist[c][b++];
    bucket[c] = b;
    rank[c] = r - seen;
    in_bucket[c] = hist[c][b];
    free(hist[c]);
    hist[c] = NULL;
    if (!(vals[c] = malloc(in_bucket[c] * sizeof *vals[c]))) goto out;
  }
  EACH_STEP(parts, np, x, {
    unsigned c = step_cls(x);
    uint64_t ns = step_ns(x);
    if (ns_bucket(ns) == bucket[c]) vals[c][nv[c]++] = ns;
  });
  for (size_t c = 0; c < NET_NCLASSES; c++) {
    if (!cnt[c]) continue;
    qsort(vals[c], nv[c], sizeof *vals[c], by_u64);
    med[c] = vals[c][rank[c]];
  }
  rc = 0;
out:
  for (size_t c = 0; c < NET_NCLASSES; c++) free(hist[c]), free(vals[c]);
  return rc;
}

/* A merged link's steps, sorted, decoded into buf: its one partial's run
 * (the map sorted it), or the runs of the groups that share it, sorted. */
struct link_src { uint32_t part, local; };
static const net_step_t *link_steps(struct lens_net_part *const *parts, const struct link_src *src, size_t n_src,
                                    int wire, net_step_t *buf, net_step_t *tmp, size_t *n) {
  size_t k = 0;
  for (size_t i = 0; i < n_src; i++) {
    const struct lens_net_part *p = parts[src[i].part];
    const size_t *first = wire ? p->wfirst : p->first, *at = wire ? p->wat : p->at;
    size_t a = first[src[i].local], b = first[src[i].local + 1];
    const uint8_t *q = (wire ? p->wsteps : p->steps) + at[src[i].local];
    struct lens_net_steps_cursor c;
    lens_net_steps_start(&c);
    for (size_t t = a; t < b; t++) q = lens_net_steps_get(&c, q, &buf[k++]);
  }
  if (n_src > 1) lens_sort_u64(buf, k, tmp);
  *n = k;
  return buf;
}

/* A link's score is the median of its steps' times over the typical time of
 * their class, so links carrying different sizes compare fairly and a few
 * outlying steps do not move it; it leaves out the link's steps that
 * overlapped a starved proxy thread (0 when no other step is left: nothing
 * to blame). Also the links' step quantiles. src: each merged link's
 * partial links, link_src[l] .. link_src[l + 1]. */
static int score_links(struct lens_net *n, struct lens_net_part *const *parts, size_t np, const struct link_src *src,
                       const size_t *src_first) {
  uint64_t med[NET_NCLASSES];
  if (class_medians(parts, np, med)) return -1;
  size_t maxl = 1;
  for (size_t l = 0; l < n->n_links; l++) {
    size_t k = 0;
    for (size_t i = src_first[l]; i < src_first[l + 1]; i++) {
      const struct lens_net_part *p = parts[src[i].part];
      k += p->first[src[i].local + 1] - p->first[src[i].local];
    }
    if (k > maxl) maxl = k;
  }
  double *ratio = malloc(maxl * sizeof *ratio);
  net_step_t *buf = malloc(maxl * sizeof *buf), *tmp = malloc(maxl * sizeof *tmp);
  if (!ratio || !buf || !tmp) {
    free(ratio), free(buf), free(tmp);
    return -1;
  }
  for (size_t l = 0; l < n->n_links; l++) {
    size_t ns = 0, u = 0;
    size_t nw = 0;
    const net_step_t *wt = link_steps(parts, src + src_first[l], src_first[l + 1] - src_first[l], 1, buf, tmp, &nw);
    struct lens_net_link *L = &n->links[l];
    L->wire_ns_per_byte = nw ? (double)step_ns(wt[(nw - 1) / 2]) / WIRE_SCALE : 0; /* the lower median */
    const net_step_t *st = link_steps(parts, src + src_first[l], src_first[l + 1] - src_first[l], 0, buf, tmp, &ns);
    if (!ns) continue;
    L->p50_step_ns = quantile(st, ns, 0.50);
    L->p99_step_ns = quantile(st, ns, 0.99);
    L->max_step_ns = step_ns(st[ns - 1]);
    for (size_t k = 0; k < ns; k++) {
      uint64_t md = med[step_cls(st[k])];
      if (!step_starved(st[k])) ratio[u++] = md ? (double)step_ns(st[k]) / (double)md : 0;
    }
    L->score = lens_lower_median(ratio, u);
  }
  free(ratio);
  free(buf);
  free(tmp);
  return 0;
}

static int conn_key_cmp(uint64_t ca, int32_t sa, int32_t da, int32_t cha, uint64_t cb, int32_t sb, int32_t db,
                        int32_t chb) {
  int c;
  if ((c = cmp_u64(ca, cb))) return c;
  if ((c = cmp_i32(sa, sb))) return c;
  if ((c = cmp_i32(da, db))) return c;
  return cmp_i32(cha, chb);
}
/* A link's connection key: src -> dst. */
static void link_conn_key(const struct lens_net_link *l, int32_t *src, int32_t *dst) {
  *src = l->dir == LENS_NET_DIR_SEND ? l->rank : l->peer;
  *dst = l->dir == LENS_NET_DIR_SEND ? l->peer : l->rank;
}

static int link_by_conn(const void *pa, const void *pb, void *ctx) {
  const struct lens_net_link *sort_links_base = ctx; /* qsort_r: no state shared between threads */
  const struct lens_net_link *a = &sort_links_base[*(const int32_t *)pa], *b = &sort_links_base[*(const int32_t *)pb];
  int32_t sa, da, sb, db;
  link_conn_key(a, &sa, &da);
  link_conn_key(b, &sb, &db);
  int c = conn_key_cmp(a->comm_id, sa, da, a->channel, b->comm_id, sb, db, b->channel);
  return c ? c : -cmp_i32(a->dir, b->dir); /* send side first */
}

static int conn_by_slowness(const void *pa, const void *pb, void *ctx) {
  const struct lens_net_conn *sort_conns_base = ctx;
  const struct lens_net_conn *a = &sort_conns_base[*(const int32_t *)pa], *b = &sort_conns_base[*(const int32_t *)pb];
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return conn_key_cmp(a->comm_id, a->src, a->dst, a->channel, b->comm_id, b->src, b->dst, b->channel);
}

/* The slow-link rule per connection (lens_net_link_is_slow of own_ratio):
 * its sender's wire time per byte (the median over its steps, in
 * wire_ratio on entry: a few steps delayed by something else do not make a
 * link slow) over the typical connection's, the lower median over the
 * connections that have one (a slow link's own channels may be half of a
 * small job's connections, and the lower median is then still a healthy
 * one's); then own_ratio, its sender's step time over what it would be with
 * that wire time at the typical pace. The wire, not the step: a link
 * downstream of a slow one waits for its data (the sender's GPU, its
 * credit) as long as the slow one works, and that wait is not its own time;
 * over the step time, so a wire that is slow per byte but a small part of
 * the link's time (tens of us among ms of waits) is no slow link. */
static int judge_conns(struct lens_net *n) {
  size_t nc = n->n_conns;
  double *v = malloc((nc ? nc : 1) * 3 * sizeof *v), *all = v + (nc ? nc : 1), *wire = all + (nc ? nc : 1);
  if (!v) return -1;
  for (size_t i = 0; i < nc; i++) { /* the sender's steps: their time, their wire */
    const struct lens_net_conn *c = &n->conns[i];
    v[i] = c->wire_ratio, all[i] = wire[i] = 0;
    if (c->send_link < 0) continue;
    const struct lens_net_split *t = &n->links[c->send_link].t;
    wire[i] = (double)t->blame_ns[LENS_NET_SEND_WIRE];
    for (int p = 0; p < LENS_NET_NPHASES; p++) all[i] += (double)t->blame_ns[p];
  }
  int rc = lens_net_own_ratios(nc, v, all, wire, v, all);
  for (size_t i = 0; i < nc && !rc; i++) {
    struct lens_net_conn *c = &n->conns[i];
    c->wire_ratio = v[i];
    c->own_ratio = all[i];
    struct lens_net_split both;
    memset(&both, 0, sizeof both);
    if (c->send_link >= 0) lens_net_split_merge(&both, &n->links[c->send_link].t);
    if (c->recv_link >= 0) lens_net_split_merge(&both, &n->links[c->recv_link].t);
    int rule = lens_net_link_is_slow(lens_net_conn_slow_ratio(c), &both, c->send_link >= 0, c->recv_link >= 0);
    c->slow = rule && both.steps >= LENS_NET_SLOW_MIN_STEPS;
    c->few_steps = rule && !c->slow;
  }
  free(v);
  return rc;
}

static int build_conns(struct lens_net *n) {
  size_t nl = n->n_links;
  int32_t *idx = malloc((nl ? nl : 1) * sizeof *idx);
  n->conns = calloc(nl ? nl : 1, sizeof *n->conns);
  if (!idx || !n->conns) {
    free(idx);
    return -1;
  }
  for (size_t i = 0; i < nl; i++) idx[i] = (int32_t)i;
  if (nl) qsort_r(idx, nl, sizeof *idx, link_by_conn, n->links);
  size_t nc = 0;
  for (size_t i = 0; i < nl;) {
    struct lens_net_link *a = &n->links[idx[i]];
    struct lens_net_conn *c = &n->conns[nc];
    c->comm_id = a->comm_id;
    c->comm = a->comm;
    link_conn_key(a, &c->src, &c->dst);
    c->channel = a->channel;
    c->send_link = c->recv_link = c->reverse = -1;
    size_t j = i;
    while (j < nl) {
      struct lens_net_link *b = &n->links[idx[j]];
      int32_t s, d;
      link_conn_key(b, &s, &d);
      if (conn_key_cmp(b->comm_id, s, d, b->channel, c->comm_id, c->src, c->dst, c->channel)) break;
      if (b->dir == LENS_NET_DIR_SEND) c->send_link = idx[j];
      else c->recv_link = idx[j];
      if (c->comm < 0) c->comm = b->comm;
      b->conn = (int32_t)nc;
      j++;
    }
    if (j == i) j = i + 1; /* cannot happen: a link always matches its own key */
    struct lens_net_split both;
    memset(&both, 0, sizeof both);
    if (c->send_link >= 0) lens_net_split_merge(&both, &n->links[c->send_link].t);
    if (c->recv_link >= 0) lens_net_split_merge(&both, &n->links[c->recv_link].t);
    c->dominant = lens_net_link_dominant(&both, c->send_link >= 0, c->recv_link >= 0);
    double ss = c->send_link >= 0 ? n->links[c->send_link].score : 0;
    double rs = c->recv_link >= 0 ? n->links[c->recv_link].score : 0;
    c->score = ss > rs ? ss : rs;
    c->stands_out = c->score >= LENS_NET_STANDOUT;
    if (c->send_link >= 0) c->wire_ratio = n->links[c->send_link].wire_ns_per_byte; /* judge_conns: a ratio */
    if (c->send_link >= 0 && c->recv_link >= 0) n->links[c->recv_link].gbps = n->links[c->send_link].gbps;
    nc++;
    i = j;
  }
  n->n_conns = nc;
  free(idx);
  if (judge_conns(n)) return -1;
  /* Reverse directions: conns are sorted by (comm, src, dst, channel). */
  for (size_t i = 0; i < nc; i++) {
    struct lens_net_conn *c = &n->conns[i];
    size_t lo = 0, hi = nc;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      const struct lens_net_conn *x = &n->conns[mid];
      int k = conn_key_cmp(x->comm_id, x->src, x->dst, x->channel, c->comm_id, c->dst, c->src, c->channel);
      if (k < 0) lo = mid + 1;
      else hi = mid;
    }
    if (lo < nc) {
      const struct lens_net_conn *x = &n->conns[lo];
      if (!conn_key_cmp(x->comm_id, x->src, x->dst, x->channel, c->comm_id, c->dst, c->src, c->channel)) {
        c->reverse = (int32_t)lo;
        c->asymmetry = x->score > 0 ? c->score / x->score : 0;
      }
    }
  }
  return 0;
}

/* Sorts conns slowest first and links in that order (send side first),
 * fixing every cross index. */
static int order_all(struct lens_net *n) {
  size_t nc = n->n_conns, nl = n->n_links;
  int32_t *perm = malloc((nc ? nc : 1) * sizeof *perm), *inv = malloc((nc ? nc : 1) * sizeof *inv);
  int32_t *lnew = malloc((nl ? nl : 1) * sizeof *lnew);
  struct lens_net_conn *cs = malloc((nc ? nc : 1) * sizeof *cs);
  struct lens_net_link *ls = malloc((nl ? nl : 1) * sizeof *ls);
  if (!perm || !inv || !lnew || !cs || !ls) {
    free(perm), free(inv), free(lnew), free(cs), free(ls);
    return -1;
  }
  for (size_t i = 0; i < nc; i++) perm[i] = (int32_t)i;
  if (nc) qsort_r(perm, nc, sizeof *perm, conn_by_slowness, n->conns);
  for (size_t i = 0; i < nc; i++) inv[perm[i]] = (int32_t)i;
  size_t k = 0;
  for (size_t i = 0; i < nc; i++) {
    struct lens_net_conn *c = &n->conns[perm[i]];
    if (c->send_link >= 0) lnew[c->send_link] = (int32_t)k++;
    if (c->recv_link >= 0) lnew[c->recv_link] = (int32_t)k++;
  }
  for (size_t i = 0; i < nc; i++) {
    cs[i] = n->conns[perm[i]];
    cs[i].order = (int32_t)i;
    if (cs[i].send_link >= 0) cs[i].send_link = lnew[cs[i].send_link];
    if (cs[i].recv_link >= 0) cs[i].recv_link = lnew[cs[i].recv_link];
    if (cs[i].reverse >= 0) cs[i].reverse = inv[cs[i].reverse];
  }
  for (size_t l = 0; l < nl; l++) {
    ls[lnew[l]] = n->links[l];
    ls[lnew[l]].conn = inv[n->links[l].conn];
  }
  free(n->conns);
  free(n->links);
  n->conns = cs;
  n->links = ls;
  free(perm), free(inv), free(lnew);
  return 0;
}

static int32_t op_comm(const struct lens_model *m, const struct lens_event *e) {
  if (e->comm >= 0) return e->comm;
  return e->parent >= 0 ? m->events[e->parent].comm : -1;
}


void lens_net_part_free(struct lens_net_part *p) {
  if (!p) return;
  free(p->n.links);
  free(p->n.conns);
  free(p->n.qps);
  free(p->n.insts);
  free(p->steps);
  free(p->first);
  free(p->at);
  free(p->wsteps);
  free(p->wfirst);
  free(p->wat);
  free(p);
}

/* Instances by step time, most first; ties by event. */
int lens_net_inst_by_step_ns(const void *a, const void *b) {
  const struct lens_net_inst *x = a, *y = b;
  if (x->s.step_ns != y->s.step_ns) return x->s.step_ns < y->s.step_ns ? 1 : -1;
  return cmp_u64(x->event, y->event);
}

/* A model's folded steps (LENS_LOAD_STEP_FACTS) by their op (at[op] ..
 * at[op + 1] in of), and where each would sort among the events (before,
 * ascending): what an instance reads of its ops' steps and its number in a
 * full load. All NULL without facts. */
struct fact_index { uint32_t *at, *of, *before; };

static void fact_index_free(struct fact_index *x) {
  free(x->at), free(x->of), free(x->before);
  memset(x, 0, sizeof *x);
}

static int by_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static int fact_index_build(const struct lens_model *m, struct fact_index *x) {
  memset(x, 0, sizeof *x);
  size_t nf = m->n_step_facts, ne = m->n_events;
  if (!nf) return 0;
  x->at = calloc(ne + 2, sizeof *x->at);
  x->of = malloc(nf * sizeof *x->of);
  x->before = malloc(nf * sizeof *x->before);
  if (!x->at || !x->of || !x->before) return fact_index_free(x), -1;
  for (size_t i = 0; i < nf; i++) {
    int32_t op = m->step_facts[i].op;
    if (op >= 0 && (size_t)op < ne) x->at[op + 1]++;
    x->before[i] = m->step_facts[i].events_before;
  }
  for (size_t e = 0; e < ne; e++) x->at[e + 1] += x->at[e];
  for (size_t i = 0; i < nf; i++) { /* in step order within an op, as its children are (the sums do not care) */
    int32_t op = m->step_facts[i].op;
    if (op >= 0 && (size_t)op < ne) x->of[x->at[op]++] = (uint32_t)i;
  }
  for (size_t e = ne; e > 0; e--) x->at[e] = x->at[e - 1];
  x->at[0] = 0;
  qsort(x->before, nf, sizeof *x->before, by_u32);
  return 0;
}

/* lens_net_instance_split, the steps of a folded model's ops read from
 * their facts as the events' are (a folded model without facts: the
 * reader's sums, lens_net_op_split). */
static int instance_split(const struct lens_model *m, const struct fact_index *fx, int32_t coll,
                          struct lens_net_split *out) {
  if (!fx->at) return lens_net_instance_split(m, coll, out);
  memset(out, 0, sizeof *out);
  int ops = 0;
  for (int32_t c = m->events[coll].first_child; c >= 0; c = m->events[c].next_sibling) {
    if (m->events[c].type != LENS_T_PROXY_OP) continue;
    struct lens_net_split o;
    memset(&o, 0, sizeof o);
    o.ops = 1;
    ops++;
    for (uint32_t k = fx->at[c]; k < fx->at[c + 1]; k++) {
      struct lens_net_step st;
      lens_net_split_add_step(&o, &st, lens_net_fact_split(m, &m->step_facts[fx->of[k]], &st));
    }
    lens_net_split_merge(out, &o);
  }
  return ops;
}

/* The top ones of n's instances by step time (lens_net_inst_by_step_ns: a total order), most first. */
static void keep_top(struct lens_net *n, size_t top) {
  qsort(n->insts, n->n_insts, sizeof *n->insts, lens_net_inst_by_step_ns);
  if (n->n_insts > top) n->n_insts = top;
}

static int map_instances(const struct lens_model *m, const struct fact_index *fx, struct lens_net *n, size_t top) {
  size_t cap = 0, steps_before = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_COLL && e->type != LENS_T_P2P) continue;
    struct lens_net_inst x;
    memset(&x, 0, sizeof x);
    if (!instance_split(m, fx, (int32_t)i, &x.s)) continue;
    /* its number in a full load: the folded steps that sort before it count */
    while (fx->before && steps_before < m->n_step_facts && fx->before[steps_before] <= i) steps_before++;
    n->insts_total++;
    const struct lens_comm *c = e->comm >= 0 && (size_t)e->comm < m->n_comms ? &m->comms[e->comm] : NULL;
    x.comm_id = c ? c->comm_id : 0;
    x.rank = c ? c->rank : e->rank;
    x.kind = e->type;
    x.peer = e->type == LENS_T_P2P ? e->p.p2p.peer : -1;
    x.has_seq = e->type == LENS_T_COLL;
    x.seq = x.has_seq ? e->p.coll.seq : 0;
    x.event = i + steps_before;
    const char *f = e->type == LENS_T_COLL ? e->p.coll.func : e->p.p2p.func;
    snprintf(x.func, sizeof x.func, "%s", f ? f : "?");
    /* keep the top ones: past twice as many, the top half by step time stays (a few sorts of 2 x top: the
     * JSON keeps 16,384 of a group's tens of thousands, the text 5) */
    if (top && n->n_insts == 2 * top) keep_top(n, top);
    if (n->n_insts == cap) {
      size_t nc = cap ? cap * 2 : 64;
      if (top && nc > 2 * top) nc = 2 * top;
      struct lens_net_inst *q = realloc(n->insts, nc * sizeof *q);
      if (!q) return -1;
      n->insts = q, cap = nc;
    }
    n->insts[n->n_insts++] = x;
  }
  if (top && n->n_insts > top) keep_top(n, top);
  if (n->n_insts && n->n_insts < cap) { /* the partial lives until the merge: no slack */
    struct lens_net_inst *q = realloc(n->insts, n->n_insts * sizeof *q);
    if (q) n->insts = q;
  }
  n->insts_top = top;
  return 0;
}

/* One step (an event, or a folded step's facts) split: counted on link l
 * (-1: its op is unknown, counted unresolved), and when timed kept for the
 * link's runs (tmp, tmp_link: p->n_steps so far); a send step's wire time
 * per byte too, when known and not starved (wtmp, wtmp_link: p->n_wsteps). */
static void add_step(struct lens_net_part *p, int32_t l, const struct lens_net_step *s, int timed, net_step_t *tmp,
                     uint32_t *tmp_link, net_step_t *wtmp, uint32_t *wtmp_link) {
  if (l < 0) {
    p->n.proxy_ops_unresolved++;
    return;
  }
  struct lens_net_link *L = &p->n.links[l];
  lens_net_split_add_step(&L->t, s, timed);
  if (!timed) return;
  tmp_link[p->n_steps] = (uint32_t)l;
  tmp[p->n_steps++] = step_pack(s->stop_ns - s->start_ns, size_class(L->dir, s->bytes), s->starved);
  if (L->dir == LENS_NET_DIR_SEND && !s->starved &&
      lens_net_wire_ns_per_byte(s->bytes_known ? s->bytes : 0, s->phase_ns[LENS_NET_SEND_WIRE]) > 0) {
    wtmp_link[p->n_wsteps] = (uint32_t)l;
    wtmp[p->n_wsteps++] = wire_pack(s);
  }
}

/* Values (tmp, n of them, each of link tmp_link) as runs by link, each
 * link's sorted (net_step_runs.h): *steps, and link l's at (*at)[l], its
 * values (*first)[l] .. (*first)[l + 1]. by_link: scratch for n values. */
static int build_runs(size_t nl, const net_step_t *tmp, const uint32_t *tmp_link, size_t n, net_step_t *by_link,
                      uint8_t **steps, size_t **first, size_t **at) {
  size_t *f = *first = calloc(nl + 2, sizeof *f);
  if (!f) return -1;
  for (size_t i = 0; i < n; i++) f[tmp_link[i] + 1]++;
  for (size_t l = 0; l < nl; l++) f[l + 1] += f[l];
  for (size_t i = 0; i < n; i++) by_link[f[tmp_link[i]]++] = tmp[i];
  for (size_t l = nl; l > 0; l--) f[l] = f[l - 1];
  f[0] = 0;
  /* each link's run sorted, then kept as net_step_runs.h runs (about a byte a step, not 8) */
  size_t *a = *at = calloc(nl + 2, sizeof *a);
  if (!a) return -1;
  size_t longest = 1;
  for (size_t l = 0; l < nl; l++)
    if (f[l + 1] - f[l] > longest) longest = f[l + 1] - f[l];
  net_step_t *sort_tmp = malloc(longest * sizeof *sort_tmp);
  if (!sort_tmp) return -1;
  for (size_t l = 0; l < nl; l++) {
    lens_sort_u64(by_link + f[l], f[l + 1] - f[l], sort_tmp);
    struct lens_net_steps_cursor c;
    lens_net_steps_start(&c);
    size_t len = 0;
    for (size_t i = f[l]; i < f[l + 1]; i++) len += lens_net_steps_len(&c, by_link[i]);
    a[l + 1] = a[l] + len;
  }
  free(sort_tmp);
  if (!(*steps = malloc(a[nl] ? a[nl] : 1))) return -1;
  for (size_t l = 0; l < nl; l++) {
    struct lens_net_steps_cursor c;
    lens_net_steps_start(&c);
    uint8_t *w = *steps + a[l];
    for (size_t i = f[l]; i < f[l + 1]; i++) w = lens_net_steps_put(&c, by_link[i], w);
  }
  return 0;
}

struct lens_net_part *lens_net_map(const struct lens_model *m, const struct lens_net_map_opts *o) {
  struct lens_net_part *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  struct lens_net *n = &p->n;
  p->n_events = m->n_events + m->n_step_facts; /* a folded step is an event of a full load */
  n->starvation_known = m->n_sched > 0;
  struct fact_index fx = {0};
  size_t nops = 0, nsteps = m->n_step_facts;
  for (size_t i = 0; i < m->n_events; i++) {
    nops += m->events[i].type == LENS_T_PROXY_OP;
    nsteps += m->events[i].type == LENS_T_PROXY_STEP;
  }
  struct op_key *keys = malloc((nops ? nops : 1) * sizeof *keys);
  int32_t *link_of_op = malloc((m->n_events ? m->n_events : 1) * sizeof *link_of_op);
  net_step_t *tmp = malloc((nsteps ? nsteps : 1) * sizeof *tmp);
  uint32_t *tmp_link = malloc((nsteps ? nsteps : 1) * sizeof *tmp_link);
  net_step_t *by_link = malloc((nsteps ? nsteps : 1) * sizeof *by_link);
  net_step_t *wtmp = malloc((nsteps ? nsteps : 1) * sizeof *wtmp);
  uint32_t *wtmp_link = malloc((nsteps ? nsteps : 1) * sizeof *wtmp_link);
  if (!keys || !link_of_op || !tmp || !tmp_link || !by_link || !wtmp || !wtmp_link) goto oom;
  size_t k = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    link_of_op[i] = -1;
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_PROXY_OP) continue;
    int32_t c = op_comm(m, e);
    keys[k++] = (struct op_key){.comm_id = c >= 0 ? m->comms[c].comm_id : 0, .comm = c, .rank = e->rank,
                                .peer = e->p.proxy_op.peer, .channel = e->p.proxy_op.channel,
                                .dir = e->p.proxy_op.is_send ? LENS_NET_DIR_SEND : LENS_NET_DIR_RECV,
                                .proc = e->proc, .event = (int32_t)i};
  }
  qsort(keys, nops, sizeof *keys, op_key_cmp);
  size_t nl = 0;
  for (size_t i = 0; i < nops; i++) nl += !i || !same_link(&keys[i - 1], &keys[i]);
  n->links = calloc(nl ? nl : 1, sizeof *n->links);
  if (!n->links) goto oom;
  for (size_t i = 0, l = (size_t)-1; i < nops; i++) {
    if (!i || !same_link(&keys[i - 1], &keys[i])) {
      l++;
      struct lens_net_link *L = &n->links[l];
      L->comm_id = keys[i].comm_id;
      L->comm = keys[i].comm;
      L->rank = keys[i].rank;
      L->peer = keys[i].peer;
      L->channel = keys[i].channel;
      L->dir = keys[i].dir;
      L->proc = keys[i].proc;
      L->dominant = -1;
    }
    if (n->links[l].comm < 0) n->links[l].comm = keys[i].comm;
    n->links[l].t.ops++;
    link_of_op[keys[i].event] = (int32_t)l;
  }
  n->n_links = nl;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_PROXY_STEP) continue;
    struct lens_net_step s;
    int timed = lens_net_step_split(m, (int32_t)i, &s);
    add_step(p, e->parent >= 0 ? link_of_op[e->parent] : -1, &s, timed, tmp, tmp_link, wtmp, wtmp_link);
  }
  /* LENS_LOAD_STEP_FACTS: the folded steps, each as its event above */
  for (size_t i = 0; i < m->n_step_facts; i++) {
    const struct lens_step_fact *x = &m->step_facts[i];
    struct lens_net_step s;
    int timed = lens_net_fact_split(m, x, &s);
    add_step(p, x->op >= 0 && (size_t)x->op < m->n_events ? link_of_op[x->op] : -1, &s, timed, tmp, tmp_link, wtmp,
             wtmp_link);
  }
  /* by link, each link's in order of time (of wire time per byte) */
  if (build_runs(nl, tmp, tmp_link, p->n_steps, by_link, &p->steps, &p->first, &p->at)) goto oom;
  free(tmp), tmp = NULL;
  free(tmp_link), tmp_link = NULL;
  if (build_runs(nl, wtmp, wtmp_link, p->n_wsteps, by_link, &p->wsteps, &p->wfirst, &p->wat)) goto oom;
  free(wtmp), wtmp = NULL;
  free(wtmp_link), wtmp_link = NULL;
  free(by_link), by_link = NULL;
  if (lens_net_build_qps(m, n, link_of_op)) goto oom;
  if (fact_index_build(m, &fx) || map_instances(m, &fx, n, o ? o->top_instances : 0)) goto oom;
  fact_index_free(&fx);
  free(keys);
  free(link_of_op);
  return p;
oom:
  fact_index_free(&fx);
  free(keys);
  free(link_of_op);
  free(tmp);
  free(tmp_link);
  free(by_link);
  free(wtmp);
  free(wtmp_link);
  lens_net_part_free(p);
  return NULL;
}

/* A partial's link, for joining the groups' links by key. */
struct link_ref {
  const struct lens_net_link *l;
  uint32_t part, local;
};
static int link_ref_cmp(const void *pa, const void *pb) {
  const struct link_ref *a = pa, *b = pb;
  const struct lens_net_link *x = a->l, *y = b->l;
  int c;
  if ((c = cmp_u64(x->comm_id, y->comm_id))) return c;
  if ((c = cmp_i32(x->rank, y->rank))) return c;
  if ((c = cmp_i32(x->peer, y->peer))) return c;
  if ((c = cmp_i32(x->channel, y->channel))) return c;
  if ((c = cmp_i32(x->dir, y->dir))) return c;
  if (a->part != b->part) return a->part < b->part ? -1 : 1;
  return a->local < b->local ? -1 : a->local > b->local;
}
static int same_key(const struct lens_net_link *x, const struct lens_net_link *y) {
  return x->comm_id == y->comm_id && x->rank == y->rank && x->peer == y->peer && x->channel == y->channel &&
         x->dir == y->dir;
}
static int qp_order(const void *pa, const void *pb) {
  const struct lens_net_qp *a = pa, *b = pb;
  int c;
  if ((c = cmp_i32(a->rank, b->rank))) return c;
  if ((c = cmp_i32(a->proc, b->proc))) return c;
  if ((c = cmp_i32(a->transport, b->transport))) return c;
  if ((c = cmp_i32(a->device, b->device))) return c;
  return cmp_i32(a->qp_num, b->qp_num);
}

static int32_t rebase(int32_t i, size_t base) { return i >= 0 ? (int32_t)((size_t)i + base) : i; }

/* The links of every partial joined by key; *src: each merged link's
 * partial links (src_first[l] .. src_first[l + 1]), whose steps score_links
 * reads where they are. */
static int merge_links(struct lens_net *n, struct lens_net_part *const *parts, size_t np,
                       const struct lens_model_base *bases, struct link_src **src, size_t **src_first) {
  size_t total = 0;
  for (size_t g = 0; g < np; g++) total += parts[g]->n.n_links;
  struct link_ref *refs = malloc((total ? total : 1) * sizeof *refs);
  *src = malloc((total ? total : 1) * sizeof **src);
  if (!refs || !*src) goto oom;
  size_t k = 0;
  for (size_t g = 0; g < np; g++)
    for (size_t l = 0; l < parts[g]->n.n_links; l++)
      refs[k++] = (struct link_ref){&parts[g]->n.links[l], (uint32_t)g, (uint32_t)l};
  qsort(refs, total, sizeof *refs, link_ref_cmp);
  size_t nl = 0;
  for (size_t i = 0; i < total; i++) nl += !i || !same_key(refs[i - 1].l, refs[i].l);
  n->links = calloc(nl ? nl : 1, sizeof *n->links);
  *src_first = calloc(nl + 1, sizeof **src_first);
  if (!n->links || !*src_first) goto oom;
  for (size_t i = 0, l = (size_t)-1; i < total; i++) {
    const struct lens_net_link *x = refs[i].l;
    const struct lens_model_base *b = bases ? &bases[refs[i].part] : NULL;
    int32_t comm = rebase(x->comm, b ? b->comm : 0), proc = rebase(x->proc, b ? b->proc : 0);
    if (!i || !same_key(refs[i - 1].l, x)) {
      l++;
      struct lens_net_link *L = &n->links[l];
      *L = *x;
      memset(&L->t, 0, sizeof L->t);
      L->comm = comm;
      L->proc = proc; /* the first op's: the first group's */
      L->transport = LENS_NET_TRANSPORT_NET;
      L->dominant = -1;
    }
    struct lens_net_link *L = &n->links[l];
    if (L->comm < 0) L->comm = comm;
    if (L->transport == LENS_NET_TRANSPORT_NET) L->transport = x->transport;
    lens_net_split_merge(&L->t, &x->t);
    (*src)[i] = (struct link_src){refs[i].part, refs[i].local};
    (*src_first)[l + 1] = i + 1;
  }
  n->n_links = nl;
  free(refs);
  return 0;
oom:
  free(refs);
  return -1;
}

static int merge_qps(struct lens_net *n, struct lens_net_part *const *parts, size_t np,
                     const struct lens_model_base *bases) {
  size_t total = 0;
  for (size_t g = 0; g < np; g++) total += parts[g]->n.n_qps;
  n->qps = calloc(total ? total : 1, sizeof *n->qps);
  if (!n->qps) return -1;
  for (size_t g = 0; g < np; g++) {
    const struct lens_net *x = &parts[g]->n;
    for (size_t i = 0; i < x->n_qps; i++) {
      struct lens_net_qp q = x->qps[i];
      q.proc = rebase(q.proc, bases ? bases[g].proc : 0);
      n->qps[n->n_qps++] = q;
    }
    n->net_plugin_events += x->net_plugin_events;
    n->net_plugin_unparented += x->net_plugin_unparented;
    n->proxy_ops_unresolved += x->proxy_ops_unresolved;
    n->starvation_known |= x->starvation_known;
  }
  if (np > 1) qsort(n->qps, n->n_qps, sizeof *n->qps, qp_order); /* a QP is one process's: no two groups share one */
  return 0;
}

static int merge_instances(struct lens_net *n, struct lens_net_part *const *parts, size_t np) {
  size_t total = 0, top = np ? parts[0]->n.insts_top : 0;
  for (size_t g = 0; g < np; g++) total += parts[g]->n.n_insts;
  if (top && total > 2 * top) total = 2 * top; /* the top ones kept as they come: no copy of every group's */
  n->insts = malloc((total ? total : 1) * sizeof *n->insts);
  if (!n->insts) return -1;
  uint64_t base = 0;
  for (size_t g = 0; g < np; g++) {
    const struct lens_net *x = &parts[g]->n;
    for (size_t i = 0; i < x->n_insts; i++) {
      if (top && n->n_insts == 2 * top) keep_top(n, top);
      n->insts[n->n_insts] = x->insts[i];
      n->insts[n->n_insts++].event += base;
    }
    n->insts_total += x->insts_total;
    base += parts[g]->n_events;
  }
  n->insts_top = top;
  if (top) {
    qsort(n->insts, n->n_insts, sizeof *n->insts, lens_net_inst_by_step_ns);
    if (n->n_insts > top) n->n_insts = top;
  }
  return 0;
}

struct lens_net *lens_net_merge(struct lens_net_part *const *parts, size_t np, const struct lens_model_base *bases) {
  struct lens_net *n = calloc(1, sizeof *n);
  struct link_src *src = NULL;
  size_t *src_first = NULL;
  if (!n) return NULL;
  if (merge_links(n, parts, np, bases, &src, &src_first)) goto oom;
  size_t nl = n->n_links;
  for (size_t l = 0; l < nl; l++) {
    struct lens_net_link *L = &n->links[l];
    if (L->dir == LENS_NET_DIR_SEND) L->gbps = lens_net_wire_gbps(L->t.bytes, L->t.phase_ns[LENS_NET_SEND_WIRE]);
    L->dominant = lens_net_split_dominant(&L->t);
    lens_net_split_merge(&n->total, &L->t);
    lens_net_split_merge(L->dir == LENS_NET_DIR_SEND ? &n->send_total : &n->recv_total, &L->t);
  }
  if (score_links(n, parts, np, src, src_first)) goto oom;
  free(src), src = NULL;
  free(src_first), src_first = NULL;
  if (merge_qps(n, parts, np, bases) || merge_instances(n, parts, np)) goto oom;
  if (build_conns(n) || order_all(n)) goto oom;
  {
    int32_t *r = malloc((nl ? nl : 1) * sizeof *r);
    if (!r) goto oom;
    for (size_t l = 0; l < nl; l++) r[l] = n->links[l].rank;
    qsort(r, nl, sizeof *r, by_i32);
    for (size_t l = 0; l < nl; l++) n->n_ranks += !l || r[l] != r[l - 1];
    free(r);
  }
  return n;
oom:
  free(src);
  free(src_first);
  lens_net_free(n);
  return NULL;
}

void *lens_net_pass_map(struct lens_model *m, void *ctx) { return lens_net_map(m, ctx); }
void lens_net_pass_free(void *part) { lens_net_part_free(part); }

struct lens_net *lens_net_build(const struct lens_model *m) {
  struct lens_net_part *p = lens_net_map(m, NULL);
  if (!p) return NULL;
  struct lens_net *n = lens_net_merge(&p, 1, NULL);
  lens_net_part_free(p);
  return n;
}

void lens_net_free(struct lens_net *n) {
  if (!n) return;
  free(n->links);
  free(n->conns);
  free(n->qps);
  free(n->insts);
  free(n);
}
