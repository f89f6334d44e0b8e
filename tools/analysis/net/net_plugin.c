/* The network view, NetPlugin level: the events a net plugin reports under a
 * ProxyStep (NCCL's IB transport: one per work request posted on a QP,
 * stopped at its completion; sockets: one per task), summarised per QP or
 * socket (spec §5). Payloads were copied by the plugin at the start
 * callback (LENS_T_NET_PLUGIN, payload[40]); their layout is NCCL's
 * ncclProfilerNetIbDescr_v1_t / ncclProfilerNetSockDescr_v1_t. */
#include <stdlib.h>
#include <string.h>

#include "nccl-lens/nccl_profiler_abi.h"
#include "net_analysis.h"
#include "net_priv.h"

struct qp_rec {
  int32_t proc, rank, transport, device, qp_num;
  int32_t link;   /* -1 */
  uint64_t bytes; /* reported length */
  uint64_t ns;    /* start -> stop, 0 when never stopped */
  int timed;
};

static int cmp_i32(int32_t a, int32_t b) { return a < b ? -1 : a > b; }
static int same_qp(const struct qp_rec *a, const struct qp_rec *b) {
  return a->proc == b->proc && a->rank == b->rank && a->transport == b->transport && a->device == b->device &&
         a->qp_num == b->qp_num;
}
static int qp_cmp(const void *pa, const void *pb) {
  const struct qp_rec *a = pa, *b = pb;
  int c;
  if ((c = cmp_i32(a->rank, b->rank))) return c;
  if ((c = cmp_i32(a->proc, b->proc))) return c;
  if ((c = cmp_i32(a->transport, b->transport))) return c;
  if ((c = cmp_i32(a->device, b->device))) return c;
  if ((c = cmp_i32(a->qp_num, b->qp_num))) return c;
  if ((c = cmp_i32(b->timed, a->timed))) return c; /* timed first, by time */
  return a->ns < b->ns ? -1 : a->ns > b->ns;
}

/* Decodes one event's payload; 0 when the plugin or version is unknown. */
static int decode(const struct lens_event *e, struct qp_rec *r) {
  uint64_t id = (uint64_t)e->p.net_plugin.plugin_id;
  if ((id & LENS_NET_VER_MASK) != 1) return 0;
  if ((id & LENS_NET_TYPE_MASK) == LENS_NET_TYPE_IB && e->p.net_plugin.payload_len >= sizeof(lens_nccl_net_ib_v1_t)) {
    lens_nccl_net_ib_v1_t ib;
    memcpy(&ib, e->p.net_plugin.payload, sizeof ib);
    r->transport = LENS_NET_TRANSPORT_IB;
    r->device = ib.qp.device;
    r->qp_num = ib.qp.qpNum;
    r->bytes = ib.qp.length;
    return 1;
  }
  if ((id & LENS_NET_TYPE_MASK) == LENS_NET_TYPE_SOCK &&
      e->p.net_plugin.payload_len >= sizeof(lens_nccl_net_sock_v1_t)) {
    lens_nccl_net_sock_v1_t so;
    memcpy(&so, e->p.net_plugin.payload, sizeof so);
    r->transport = LENS_NET_TRANSPORT_SOCKET;
    r->device = -1;
    r->qp_num = so.sock.fd;
    r->bytes = so.sock.length;
    return 1;
  }
  return 0;
}

int lens_net_build_qps(const struct lens_model *m, struct lens_net *n, const int32_t *link_of_op) {
  size_t cnt = 0;
  for (size_t i = 0; i < m->n_events; i++) cnt += m->events[i].type == LENS_T_NET_PLUGIN;
  n->net_plugin_events = cnt;
  if (!cnt) return 0;
  struct qp_rec *r = malloc(cnt * sizeof *r);
  /* LENS_LOAD_STEP_FACTS: an event under a folded step has no parent
   * event; its step's fact says the op */
  int32_t *fact_of = m->n_step_children ? malloc(m->n_events * sizeof *fact_of) : NULL;
  if (!r || (m->n_step_children && !fact_of)) {
    free(r), free(fact_of);
    return -1;
  }
  for (size_t i = 0; fact_of && i < m->n_events; i++) fact_of[i] = -1;
  for (size_t i = 0; fact_of && i < m->n_step_children; i++) {
    const struct lens_step_child *c = &m->step_children[i];
    if (c->event >= 0 && (size_t)c->event < m->n_events && c->step >= 0 && (size_t)c->step < m->n_step_facts)
      fact_of[c->event] = c->step;
  }
  size_t k = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_NET_PLUGIN) continue;
    int32_t step = e->parent, op = step >= 0 ? m->events[step].parent : -1;
    int32_t link = step >= 0 && m->events[step].type == LENS_T_PROXY_STEP && op >= 0 ? link_of_op[op] : -1;
    if (step < 0 && fact_of && fact_of[i] >= 0) { /* the op of its folded step, as of its step event */
      op = m->step_facts[fact_of[i]].op;
      link = op >= 0 ? link_of_op[op] : -1;
    }
    if (link < 0) n->net_plugin_unparented++;
    struct qp_rec q = {.proc = e->proc, .rank = link >= 0 ? n->links[link].rank : e->rank, .link = link};
    if (!decode(e, &q)) continue;
    q.timed = e->stop_mono_ns >= e->start_mono_ns && e->stop_mono_ns && !(e->flags & LENS_EVF_NO_STOP);
    q.ns = q.timed ? e->stop_mono_ns - e->start_mono_ns : 0;
    if (link >= 0 && n->links[link].transport == LENS_NET_TRANSPORT_NET) n->links[link].transport = q.transport;
    r[k++] = q;
  }
  free(fact_of);
  qsort(r, k, sizeof *r, qp_cmp);
  size_t nq = 0;
  for (size_t i = 0; i < k; i++) nq += !i || !same_qp(&r[i - 1], &r[i]);
  n->qps = calloc(nq ? nq : 1, sizeof *n->qps);
  if (!n->qps) {
    free(r);
    return -1;
  }
  for (size_t i = 0; i < k;) {
    size_t j = i;
    while (j < k && same_qp(&r[i], &r[j])) j++;
    struct lens_net_qp *q = &n->qps[n->n_qps++];
    q->rank = r[i].rank;
    q->proc = r[i].proc;
    q->transport = r[i].transport;
    q->device = r[i].device;
    q->qp_num = r[i].qp_num;
    q->peer = q->channel = q->dir = -1;
    for (size_t x = i; x < j; x++) {
      q->events++;
      q->bytes += r[x].bytes;
      if (q->peer < 0 && r[x].link >= 0) {
        q->peer = n->links[r[x].link].peer;
        q->channel = n->links[r[x].link].channel;
        q->dir = n->links[r[x].link].dir;
      }
      if (!r[x].timed) continue;
      q->timed++;
      q->total_ns += r[x].ns;
      if (r[x].ns > q->max_ns) q->max_ns = r[x].ns;
    }
    /* timed records come first in the run, sorted by time */
    if (q->timed) q->p50_ns = r[i + (q->timed - 1) / 2].ns;
    i = j;
  }
  free(r);
  return 0;
}
