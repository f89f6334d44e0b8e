/* The phases of one ProxyStep: where its time (start -> stop, host
 * CLOCK_MONOTONIC of the proxy's process) went, from the states NCCL
 * recorded on it (spec §1.4, §2.5; NCCL 2.28.9 src/transport/net.cc).
 *
 *   send  start(+8 SendGPUWait, buffer posted to the GPU)
 *           -- gpu_wait  --> first 20 SendPeerWait (the GPU produced the data)
 *           -- peer_wait --> 9 SendWait (isend accepted: the receiver's credit came)
 *           -- wire      --> stop (test() done: the network finished it)
 *   recv  start(+10 RecvWait, irecv posted)
 *           -- data_wait --> 11 RecvFlushWait (data received)
 *           -- flush     --> 12 RecvGPUWait (flush done or not needed)
 *           -- gpu_wait  --> stop (the GPU consumed the data)
 *
 * One classification for every reader of steps: the network view splits
 * step events with it (net_steps.c), and the reader's step fold
 * (LENS_LOAD_FOLD_STEPS, resolve.c) sums it per ProxyOp for the job view,
 * which reads its traces with the steps folded. Header-only, as oneway.h:
 * the reader knows no analysis. */
#ifndef NCCL_LENS_STEP_PHASES_H
#define NCCL_LENS_STEP_PHASES_H

#include <stdint.h>

enum lens_step_phase {
  LENS_STEP_SEND_GPU_WAIT = 0,  /* send: waiting for the GPU to produce the data */
  LENS_STEP_SEND_PEER_WAIT = 1, /* send: data ready, waiting for the peer's credit */
  LENS_STEP_SEND_WIRE = 2,      /* send: in flight on the network */
  LENS_STEP_RECV_DATA_WAIT = 3, /* recv: posted, waiting for the data */
  LENS_STEP_RECV_FLUSH = 4,     /* recv: flushing */
  LENS_STEP_RECV_GPU_WAIT = 5,  /* recv: waiting for the GPU to consume it */
  LENS_STEP_UNKNOWN = 6,        /* a boundary was not recorded */
  LENS_STEP_NPHASES = 7
};
enum { LENS_STEP_DIR_RECV = 0, LENS_STEP_DIR_SEND = 1 };

/* The boundaries of one step: the first record of each boundary state
 * (NCCL repeats 20 on every pass while isend gives no request; the phase
 * starts at the first). Slots: 20, 9 (send); 11, 12 (recv). */
struct lens_step_bounds {
  uint64_t ts[4];
  uint32_t have; /* bit per slot */
};

static inline int lens_step_bound_slot(uint32_t state) {
  switch (state) {
  case 20: return 0; /* SendPeerWait */
  case 9: return 1;  /* SendWait */
  case 11: return 2; /* RecvFlushWait */
  case 12: return 3; /* RecvGPUWait */
  default: return -1;
  }
}

/* One state record of the step (a folded run: its first record's time). */
static inline void lens_step_bounds_note(struct lens_step_bounds *b, uint32_t state, uint64_t ts) {
  int k = lens_step_bound_slot(state);
  if (k < 0) return;
  if (!(b->have >> k & 1u) || ts < b->ts[k]) b->ts[k] = ts;
  b->have |= 1u << k;
}

static inline uint64_t lens_step_span(uint64_t from, uint64_t to) { return to > from ? to - from : 0; }

/* Adds the phases of a timed step (start <= stop) of direction dir
 * (LENS_STEP_DIR_*, or -1 unknown: all unknown) to phase_ns. Boundaries are
 * clamped into the step and ordered; a missing boundary merges the phases
 * on both sides of it into LENS_STEP_UNKNOWN, never a guess. The parts add
 * up to stop - start. */
static inline void lens_step_phases_add(const struct lens_step_bounds *b, int dir, uint64_t start, uint64_t stop,
                                        uint64_t phase_ns[LENS_STEP_NPHASES]) {
  int k1, p0, p1, p2;
  if (dir == LENS_STEP_DIR_SEND) {
    k1 = 0, p0 = LENS_STEP_SEND_GPU_WAIT, p1 = LENS_STEP_SEND_PEER_WAIT, p2 = LENS_STEP_SEND_WIRE;
  } else if (dir == LENS_STEP_DIR_RECV) {
    k1 = 2, p0 = LENS_STEP_RECV_DATA_WAIT, p1 = LENS_STEP_RECV_FLUSH, p2 = LENS_STEP_RECV_GPU_WAIT;
  } else {
    phase_ns[LENS_STEP_UNKNOWN] += lens_step_span(start, stop);
    return;
  }
  int have1 = (int)(b->have >> k1 & 1u), have2 = (int)(b->have >> (k1 + 1) & 1u);
  uint64_t s = start, e = stop, b1 = b->ts[k1], b2 = b->ts[k1 + 1];
  if (have1) b1 = b1 < s ? s : b1 > e ? e : b1;
  if (have2) b2 = b2 < s ? s : b2 > e ? e : b2;
  if (have1 && have2 && b2 < b1) b2 = b1;
  if (have1 && have2) {
    phase_ns[p0] += lens_step_span(s, b1);
    phase_ns[p1] += lens_step_span(b1, b2);
    phase_ns[p2] += lens_step_span(b2, e);
  } else if (have1) {
    phase_ns[p0] += lens_step_span(s, b1);
    phase_ns[LENS_STEP_UNKNOWN] += lens_step_span(b1, e);
  } else if (have2) {
    phase_ns[LENS_STEP_UNKNOWN] += lens_step_span(s, b2);
    phase_ns[p2] += lens_step_span(b2, e);
  } else {
    phase_ns[LENS_STEP_UNKNOWN] += lens_step_span(s, e);
  }
}

#endif
