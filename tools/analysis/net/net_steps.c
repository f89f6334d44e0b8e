/* The network view, step level: one ProxyStep's time split into the phases
 * of NCCL's ProxyStep state machine, and the split summed per collective
 * instance (net_analysis.h has the phase boundaries). */
#include <stdlib.h>
#include <string.h>

#include "net_analysis.h"
#include "net_order.h"
#include "net_priv.h"

/* NCCL's state values (spec §1.4). */
enum { ST_SEND_GPU_WAIT = 8, ST_SEND_WAIT = 9, ST_RECV_WAIT = 10, ST_RECV_FLUSH_WAIT = 11 };

static const char *const phase_names[LENS_NET_NPHASES] = {
    "send_gpu_wait", "send_peer_wait", "wire", "recv_data_wait", "recv_flush", "recv_gpu_wait", "unknown"};
static const char *const phase_texts[LENS_NET_NPHASES] = {
    "waiting for the sender's GPU to produce the data",
    "waiting for the peer's credit (the receiver)",
    "in flight on the network",
    "posted, waiting for the data (the sender and the wire)",
    "flushing received data",
    "waiting for the receiver's GPU to consume the data",
    "not split (a state was not recorded)"};

const char *lens_net_phase_name(int phase) {
  return phase >= 0 && phase < LENS_NET_NPHASES ? phase_names[phase] : "none";
}
const char *lens_net_phase_text(int phase) {
  return phase >= 0 && phase < LENS_NET_NPHASES ? phase_texts[phase] : "no network time";
}
const char *lens_net_transport_name(int transport) {
  return transport == LENS_NET_TRANSPORT_IB ? "ib" : transport == LENS_NET_TRANSPORT_SOCKET ? "socket" : "net";
}

/* The earliest record of a state on event e: NCCL repeats 20 on every pass
 * while isend gives no request, and the phase starts at the first. */
static int first_state(const struct lens_model *m, const struct lens_event *e, uint32_t state, uint64_t *ts,
                       uint64_t *arg, int *has_arg) {
  int found = 0;
  for (uint32_t i = 0; i < e->n_states; i++) {
    const struct lens_state_ev *s = &m->states[e->first_state + i];
    if (s->state != state || (found && s->ts_mono_ns >= *ts)) continue;
    *ts = s->ts_mono_ns;
    if (arg) *arg = s->arg;
    if (has_arg) *has_arg = (int)s->has_args;
    found = 1;
  }
  return found;
}

/* A step is timed when it stopped, after its start, and no later START
 * of the same step replaced it: one rule for step events and step facts. */
static int step_timed(uint64_t start, uint64_t stop, uint32_t flags) {
  return stop && !(flags & (LENS_EVF_SUPERSEDED | LENS_EVF_NO_STOP)) && stop >= start;
}

int lens_net_step_split(const struct lens_model *m, int32_t step_event, struct lens_net_step *out) {
  memset(out, 0, sizeof *out);
  out->dir = -1;
  if (!m || step_event < 0 || (size_t)step_event >= m->n_events) return 0;
  const struct lens_event *e = &m->events[step_event];
  if (e->type != LENS_T_PROXY_STEP) return 0;
  if (e->parent >= 0 && m->events[e->parent].type == LENS_T_PROXY_OP)
    out->dir = m->events[e->parent].p.proxy_op.is_send ? LENS_NET_DIR_SEND : LENS_NET_DIR_RECV;
  if (!step_timed(e->start_mono_ns, e->stop_mono_ns, e->flags)) return 0;
  out->start_ns = e->start_mono_ns;
  out->stop_ns = e->stop_mono_ns;
  out->starved = (e->acc.flags & LENS_ACC_STARVED) != 0;
  /* Without the parent the direction still shows in the states. */
  uint64_t t = 0, arg = 0;
  int ha = 0;
  if (out->dir < 0) {
    if (first_state(m, e, ST_SEND_GPU_WAIT, &t, NULL, NULL) || first_state(m, e, ST_SEND_WAIT, &t, NULL, NULL))
      out->dir = LENS_NET_DIR_SEND;
    else if (first_state(m, e, ST_RECV_WAIT, &t, NULL, NULL) || first_state(m, e, ST_RECV_FLUSH_WAIT, &t, NULL, NULL))
      out->dir = LENS_NET_DIR_RECV;
  }
  /* the phases: the reader's classification (step_phases.h), which its
   * step fold sums per op for the job view */
  struct lens_step_bounds b = {0};
  for (uint32_t i = 0; i < e->n_states && e->first_state + i < m->n_states; i++) {
    const struct lens_state_ev *x = &m->states[e->first_state + i];
    lens_step_bounds_note(&b, x->state, x->ts_mono_ns);
  }
  lens_step_phases_add(&b, out->dir, out->start_ns, out->stop_ns, out->phase_ns);
  if (out->dir == LENS_NET_DIR_SEND) first_state(m, e, ST_SEND_WAIT, &t, &arg, &ha);
  else if (out->dir == LENS_NET_DIR_RECV) first_state(m, e, ST_RECV_FLUSH_WAIT, &t, &arg, &ha);
  if (ha) {
    out->bytes = arg;
    out->bytes_known = 1;
  }
  return 1;
}

int lens_net_fact_split(const struct lens_model *m, const struct lens_step_fact *x, struct lens_net_step *out) {
  memset(out, 0, sizeof *out);
  out->dir = -1;
  if (!m || !x) return 0;
  int op = x->op >= 0 && (size_t)x->op < m->n_events && m->events[x->op].type == LENS_T_PROXY_OP;
  if (op) out->dir = m->events[x->op].p.proxy_op.is_send ? LENS_NET_DIR_SEND : LENS_NET_DIR_RECV;
  if (!step_timed(x->start_mono_ns, x->stop_mono_ns, x->flags)) return 0;
  out->start_ns = x->start_mono_ns;
  out->stop_ns = x->stop_mono_ns;
  /* starved 0: the steps are folded only where no starvation is analysed */
  if (!op) { /* the reader kept no states: the direction stays unknown, all of it unsplit */
    lens_step_phases_add(&(struct lens_step_bounds){0}, -1, out->start_ns, out->stop_ns, out->phase_ns);
    return 1;
  }
  /* the op's direction's two boundaries, in their slots of step_phases.h */
  struct lens_step_bounds b = {0};
  int k = out->dir == LENS_NET_DIR_SEND ? 0 : 2;
  if (x->have & LENS_STEP_HAVE_BOUND0) b.ts[k] = x->bound_ns[0], b.have |= 1u << k;
  if (x->have & LENS_STEP_HAVE_BOUND1) b.ts[k + 1] = x->bound_ns[1], b.have |= 1u << (k + 1);
  lens_step_phases_add(&b, out->dir, out->start_ns, out->stop_ns, out->phase_ns);
  if (x->have & LENS_STEP_HAVE_ARG) {
    out->bytes = x->arg;
    out->bytes_known = 1;
  }
  return 1;
}

/* Adds one step event (timed or not) to a split. */
void lens_net_split_add_step(struct lens_net_split *s, const struct lens_net_step *st, int timed) {
  if (!timed) {
    s->untimed_steps++;
    return;
  }
  s->steps++;
  s->bytes += st->bytes;
  uint64_t whole = st->stop_ns - st->start_ns;
  s->step_ns += whole;
  for (int p = 0; p < LENS_NET_NPHASES; p++) {
    s->phase_ns[p] += st->phase_ns[p];
    if (!st->starved) s->blame_ns[p] += st->phase_ns[p];
  }
  if (st->starved) {
    s->starved_steps++;
    s->starved_ns += whole;
  }
  if (!s->first_start_ns || st->start_ns < s->first_start_ns) s->first_start_ns = st->start_ns;
  if (st->stop_ns > s->last_stop_ns) s->last_stop_ns = st->stop_ns;
}

void lens_net_split_merge(struct lens_net_split *into, const struct lens_net_split *s) {
  into->ops += s->ops;
  into->steps += s->steps;
  into->untimed_steps += s->untimed_steps;
  into->bytes += s->bytes;
  into->step_ns += s->step_ns;
  for (int p = 0; p < LENS_NET_NPHASES; p++) {
    into->phase_ns[p] += s->phase_ns[p];
    into->blame_ns[p] += s->blame_ns[p];
  }
  into->starved_steps += s->starved_steps;
  into->starved_ns += s->starved_ns;
  if (s->first_start_ns && (!into->first_start_ns || s->first_start_ns < into->first_start_ns))
    into->first_start_ns = s->first_start_ns;
  if (s->last_stop_ns > into->last_stop_ns) into->last_stop_ns = s->last_stop_ns;
}

int lens_net_op_split(const struct lens_model *m, int32_t op_event, struct lens_net_split *out) {
  memset(out, 0, sizeof *out);
  if (!m || op_event < 0 || (size_t)op_event >= m->n_events || m->events[op_event].type != LENS_T_PROXY_OP) return 0;
  const struct lens_event *op = &m->events[op_event];
  out->ops = 1;
  if (m->steps_folded) { /* the reader summed the same split (step_phases.h) */
    out->steps = op->p.proxy_op.folded_stops;
    for (int p = 0; p < LENS_NET_NPHASES; p++) {
      out->phase_ns[p] = out->blame_ns[p] = op->p.proxy_op.folded_phase_ns[p];
      out->step_ns += op->p.proxy_op.folded_phase_ns[p];
    }
    return 1;
  }
  for (int32_t s = op->first_child; s >= 0; s = m->events[s].next_sibling) {
    if (m->events[s].type != LENS_T_PROXY_STEP) continue;
    struct lens_net_step st;
    lens_net_split_add_step(out, &st, lens_net_step_split(m, s, &st));
  }
  return 1;
}

int lens_net_instance_split(const struct lens_model *m, int32_t coll_event, struct lens_net_split *out) {
  memset(out, 0, sizeof *out);
  if (!m || coll_event < 0 || (size_t)coll_event >= m->n_events) return 0;
  int ops = 0;
  for (int32_t c = m->events[coll_event].first_child; c >= 0; c = m->events[c].next_sibling) {
    if (m->events[c].type != LENS_T_PROXY_OP) continue;
    struct lens_net_split o;
    ops += lens_net_op_split(m, c, &o);
    lens_net_split_merge(out, &o);
  }
  return ops;
}

int lens_net_split_dominant(const struct lens_net_split *s) {
  /* A receive's data_wait is the sender's and the wire's time seen from the
   * other end: a candidate only when no send-side phase has time. */
  const uint64_t *b = s->blame_ns;
  int sends = b[LENS_NET_SEND_GPU_WAIT] || b[LENS_NET_SEND_PEER_WAIT] || b[LENS_NET_SEND_WIRE];
  int best = -1;
  uint64_t most = 0;
  for (int p = 0; p < LENS_NET_UNKNOWN; p++) {
    if (p == LENS_NET_RECV_DATA_WAIT && sends) continue;
    if (b[p] > most) {
      most = b[p];
      best = p;
    }
  }
  if (best < 0 && b[LENS_NET_UNKNOWN]) best = LENS_NET_UNKNOWN;
  return best;
}

int lens_net_link_dominant(const struct lens_net_split *sides, int send_known, int recv_known) {
  /* With both sides known, each side's wait for the other is the other
   * side's time: the receiver's data_wait (dropped by the rule of
   * lens_net_split_dominant) and the sender's credit wait (dropped here). */
  struct lens_net_split s = *sides;
  if (send_known && recv_known) s.blame_ns[LENS_NET_SEND_PEER_WAIT] = 0;
  return lens_net_split_dominant(&s);
}

double lens_net_wire_gbps(uint64_t bytes, uint64_t wire_ns) { return wire_ns ? (double)bytes / (double)wire_ns : 0.0; }

double lens_net_wire_ns_per_byte(uint64_t bytes, uint64_t wire_ns) {
  return bytes && wire_ns ? (double)wire_ns / (double)bytes : 0.0;
}

int lens_net_own_ratios(size_t n, const double *ns_per_byte, const double *sender_ns, const double *wire_ns,
                        double *wire_ratio, double *own_ratio) {
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return -1;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (ns_per_byte[i] > 0) v[k++] = ns_per_byte[i];
  double typical = lens_lower_median(v, k);
  free(v);
  for (size_t i = 0; i < n; i++) {
    double all = sender_ns[i], wire = wire_ns[i]; /* read before the outputs (they may alias) */
    double r = typical > 0 && ns_per_byte[i] > 0 ? ns_per_byte[i] / typical : 0, own = 0;
    if (r > 0) { /* the sender's time with its wire at the typical pace: the rest is not the wire's */
      double excess = r > 1 ? wire * (1 - 1 / r) : 0, rest = all - excess;
      if (all > 0) own = all / (rest >= 1 ? rest : 1);
    }
    wire_ratio[i] = r;
    own_ratio[i] = own;
  }
  return 0;
}

double lens_net_conn_slow_ratio(const struct lens_net_conn *c) { return c->own_ratio > 0 ? c->own_ratio : c->score; }

int lens_net_link_is_slow(double pace_ratio, const struct lens_net_split *sides, int send_known, int recv_known) {
  if (!(pace_ratio >= LENS_NET_STANDOUT)) return 0;
  return lens_net_phase_on_network(lens_net_link_dominant(sides, send_known, recv_known), send_known, recv_known);
}

int lens_net_phase_on_network(int d, int send_known, int recv_known) {
  if (d == LENS_NET_SEND_WIRE) return 1;
  if (d == LENS_NET_SEND_PEER_WAIT) return !recv_known; /* the receiver's credit: its trace would tell */
  if (d == LENS_NET_RECV_DATA_WAIT) return !send_known; /* the sender's GPU or the wire: its trace would tell */
  return 0; /* the sender's GPU, the receiver's GPU or flush, nothing split */
}
