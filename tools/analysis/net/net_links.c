/* The network view, link level: steps summed per link (rank -> peer,
 * channel, direction, communicator), step-latency quantiles, achieved
 * bandwidth, the connections (sender's and receiver's side of one
 * direction) ranked slowest first, and asymmetry. Memory: a few words per
 * ProxyOp and per step, on top of the model that already holds them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "net_analysis.h"
#include "net_priv.h"

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

/* One timed step, for quantiles and the typical time of its kind. */
struct step_rec {
  int32_t link;
  uint32_t cls;  /* direction and size class (log2 of bytes) */
  uint64_t ns;
  int starved;
  double ratio; /* ns / the median of its class */
};
static int by_link_ns(const void *pa, const void *pb) {
  const struct step_rec *a = pa, *b = pb;
  int c = cmp_i32(a->link, b->link);
  return c ? c : cmp_u64(a->ns, b->ns);
}

static uint32_t size_class(int dir, uint64_t bytes) {
  uint32_t l = 0;
  while (bytes > 1 && l < 63) {
    bytes >>= 1;
    l++;
  }
  return (uint32_t)dir << 8 | l;
}

/* Nearest-rank quantile of a sorted run. */
static uint64_t quantile(const struct step_rec *r, size_t n, double q) {
  if (!n) return 0;
  size_t k = (size_t)ceil(q * (double)n);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return r[k - 1].ns;
}

static int by_link_ratio(const void *pa, const void *pb) {
  const struct step_rec *a = pa, *b = pb;
  int c = cmp_i32(a->link, b->link);
  if (c) return c;
  if (a->starved != b->starved) return a->starved - b->starved; /* unstarved first */
  return a->ratio < b->ratio ? -1 : a->ratio > b->ratio;
}
static int by_cls_ns(const void *pa, const void *pb) {
  const struct step_rec *a = pa, *b = pb;
  int c = a->cls < b->cls ? -1 : a->cls > b->cls;
  return c ? c : cmp_u64(a->ns, b->ns);
}


/* Typical time of a step of each class: the median over every link's steps
 * (all of them: long steps overlap starvation more often, so leaving the
 * starved ones out would make "typical" too short). A link's score is the
 * median of its steps' times over that, so links carrying different sizes
 * compare fairly and a few outlying steps do not move it; it leaves out the
 * link's steps that overlapped a starved proxy thread (0 when no other step
 * is left: nothing to blame). */
static void score_links(struct lens_net *n, struct step_rec *st, size_t ns) {
  qsort(st, ns, sizeof *st, by_cls_ns);
  for (size_t i = 0; i < ns;) {
    size_t j = i;
    while (j < ns && st[j].cls == st[i].cls) j++;
    uint64_t med = st[i + (j - i - 1) / 2].ns;
    for (size_t k = i; k < j; k++) st[k].ratio = med ? (double)st[k].ns / (double)med : 0;
    i = j;
  }
  qsort(st, ns, sizeof *st, by_link_ratio);
  for (size_t i = 0; i < ns;) {
    size_t j = i;
    while (j < ns && st[j].link == st[i].link) j++;
    size_t u = 0; /* unstarved first */
    while (i + u < j && !st[i + u].starved) u++;
    n->links[st[i].link].score = u ? st[i + (u - 1) / 2].ratio : 0;
    i = j;
  }
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
static const struct lens_net_link *sort_links_base;
static int link_by_conn(const void *pa, const void *pb) {
  const struct lens_net_link *a = &sort_links_base[*(const int32_t *)pa], *b = &sort_links_base[*(const int32_t *)pb];
  int32_t sa, da, sb, db;
  link_conn_key(a, &sa, &da);
  link_conn_key(b, &sb, &db);
  int c = conn_key_cmp(a->comm_id, sa, da, a->channel, b->comm_id, sb, db, b->channel);
  return c ? c : -cmp_i32(a->dir, b->dir); /* send side first */
}
static const struct lens_net_conn *sort_conns_base;
static int conn_by_slowness(const void *pa, const void *pb) {
  const struct lens_net_conn *a = &sort_conns_base[*(const int32_t *)pa], *b = &sort_conns_base[*(const int32_t *)pb];
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return conn_key_cmp(a->comm_id, a->src, a->dst, a->channel, b->comm_id, b->src, b->dst, b->channel);
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
  sort_links_base = n->links; /* the reader is single-threaded per model */
  qsort(idx, nl, sizeof *idx, link_by_conn);
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
    /* With both sides known, each side's wait for the other is the other
     * side's time: the receiver's data_wait (dropped by the rule of
     * lens_net_split_dominant) and the sender's credit wait (dropped here). */
    if (c->send_link >= 0 && c->recv_link >= 0) both.blame_ns[LENS_NET_SEND_PEER_WAIT] = 0;
    c->dominant = lens_net_split_dominant(&both);
    double ss = c->send_link >= 0 ? n->links[c->send_link].score : 0;
    double rs = c->recv_link >= 0 ? n->links[c->recv_link].score : 0;
    c->score = ss > rs ? ss : rs;
    c->stands_out = c->score >= LENS_NET_STANDOUT;
    if (c->send_link >= 0 && c->recv_link >= 0) n->links[c->recv_link].gbps = n->links[c->send_link].gbps;
    nc++;
    i = j;
  }
  n->n_conns = nc;
  free(idx);
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
  sort_conns_base = n->conns;
  qsort(perm, nc, sizeof *perm, conn_by_slowness);
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

struct lens_net *lens_net_build(const struct lens_model *m) {
  struct lens_net *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->starvation_known = m->n_sched > 0;
  size_t nops = 0, nsteps = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    nops += m->events[i].type == LENS_T_PROXY_OP;
    nsteps += m->events[i].type == LENS_T_PROXY_STEP;
  }
  struct op_key *keys = malloc((nops ? nops : 1) * sizeof *keys);
  int32_t *link_of_op = malloc((m->n_events ? m->n_events : 1) * sizeof *link_of_op);
  struct step_rec *st = malloc((nsteps ? nsteps : 1) * sizeof *st);
  if (!keys || !link_of_op || !st) goto oom;
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
  /* Steps. */
  size_t ns = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_PROXY_STEP) continue;
    int32_t l = e->parent >= 0 ? link_of_op[e->parent] : -1;
    struct lens_net_step s;
    int timed = lens_net_step_split(m, (int32_t)i, &s);
    if (l < 0) {
      n->proxy_ops_unresolved++;
      continue;
    }
    struct lens_net_link *L = &n->links[l];
    lens_net_split_add_step(&L->t, &s, timed);
    if (!timed) continue;
    st[ns++] = (struct step_rec){.link = l, .cls = size_class(L->dir, s.bytes), .ns = s.stop_ns - s.start_ns,
                                 .starved = s.starved};
  }
  /* Quantiles per link. */
  qsort(st, ns, sizeof *st, by_link_ns);
  for (size_t i = 0; i < ns;) {
    size_t j = i;
    while (j < ns && st[j].link == st[i].link) j++;
    struct lens_net_link *L = &n->links[st[i].link];
    L->p50_step_ns = quantile(st + i, j - i, 0.50);
    L->p99_step_ns = quantile(st + i, j - i, 0.99);
    L->max_step_ns = st[j - 1].ns;
    i = j;
  }
  for (size_t l = 0; l < nl; l++) {
    struct lens_net_link *L = &n->links[l];
    if (L->dir == LENS_NET_DIR_SEND && L->t.phase_ns[LENS_NET_SEND_WIRE])
      L->gbps = (double)L->t.bytes * 8.0 / (double)L->t.phase_ns[LENS_NET_SEND_WIRE];
    L->dominant = lens_net_split_dominant(&L->t);
    lens_net_split_merge(&n->total, &L->t);
    lens_net_split_merge(L->dir == LENS_NET_DIR_SEND ? &n->send_total : &n->recv_total, &L->t);
  }
  score_links(n, st, ns);
  if (lens_net_build_qps(m, n, link_of_op)) goto oom;
  if (build_conns(n) || order_all(n)) goto oom;
  {
    int32_t *r = malloc((nl ? nl : 1) * sizeof *r);
    if (!r) goto oom;
    for (size_t l = 0; l < nl; l++) r[l] = n->links[l].rank;
    qsort(r, nl, sizeof *r, by_i32);
    for (size_t l = 0; l < nl; l++) n->n_ranks += !l || r[l] != r[l - 1];
    free(r);
  }
  free(keys);
  free(link_of_op);
  free(st);
  return n;
oom:
  free(keys);
  free(link_of_op);
  free(st);
  lens_net_free(n);
  return NULL;
}

void lens_net_free(struct lens_net *n) {
  if (!n) return;
  free(n->links);
  free(n->conns);
  free(n->qps);
  free(n);
}
