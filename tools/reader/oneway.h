/* One-way evidence of a ProxyStep: what its host times prove about when its
 * data crossed the network (docs/timeline.md, "One-way bounds").
 *
 * NCCL's net transport (spec §2.5, net.cc's state machines):
 *   send step k: start and 8 SendGPUWait in the pass that gives the slot to
 *     the GPU; 20 SendPeerWait on every pass while isend() gives no request
 *     (no clear-to-send yet); isend() accepted, then 9 SendWait; stop when
 *     test() reports it done. Start, 8 and every 20 are recorded before the
 *     data was handed to the network: the latest of them (a run's last
 *     record) is the latest host time step k is provably not yet posted.
 *     9 is recorded after isend() returned, so it proves nothing that way.
 *   recv step k: start, irecv() posted, 10 RecvWait; test() reports the data
 *     in, then 11 RecvFlushWait; the flush done, 12 RecvGPUWait; the GPU
 *     consumed it, stop. 11, 12 and stop are recorded after the data
 *     arrived: the earliest of them is the earliest host time step k is
 *     provably complete.
 * Step k of a send ProxyOp and step k of the recv ProxyOp of the same
 * connection (the peer's, same channel, same collective instance) are the
 * same transfer (the step index counts network transfers from 0 in both:
 * spec, ProxyStep descriptor), so its data arrived after it was posted:
 *     true(recv evidence) >= true(send evidence)
 * on each side's own host clock. */
#ifndef NCCL_LENS_ONEWAY_H
#define NCCL_LENS_ONEWAY_H

#include <stdint.h>

#define LENS_ONEWAY_STEP_START 0u  /* what: the step's start */
#define LENS_ONEWAY_STEP_STOP 99u  /* what: its stop */

/* Adds one record of a step to its evidence: *pre (send: the latest time
 * provably before the post, 0 none) and *post (recv: the earliest provably
 * after the arrival, 0 none). what: LENS_ONEWAY_STEP_START/STOP or a state
 * value; first/last: the record's time, and a folded run's last record's. */
static inline void lens_oneway_note(uint64_t *pre, uint64_t *post, uint32_t what, uint64_t first, uint64_t last) {
  switch (what) {
  case LENS_ONEWAY_STEP_START:
  case 8:  /* SendGPUWait */
  case 20: /* SendPeerWait (repeated until isend gives a request) */
    if (last > *pre) *pre = last;
    break;
  case 11: /* RecvFlushWait */
  case 12: /* RecvGPUWait */
  case LENS_ONEWAY_STEP_STOP:
    if (first && (!*post || first < *post)) *post = first;
    break;
  default: break; /* 9 after isend returned, 10 after irecv was posted: neither bounds the transfer */
  }
}

/* Folds one step's evidence into its op's: a send op keeps the latest
 * "not yet posted" time, a recv op the earliest "arrived" time (0: none).
 * The reader's step fold (resolve.c) and the map over unfolded steps
 * (job_match.c) both use it, so both keep the same evidence. */
static inline void lens_oneway_fold(uint64_t *op_t, int is_send, uint64_t pre, uint64_t post) {
  if (is_send) {
    if (pre > *op_t) *op_t = pre;
  } else if (post && (!*op_t || post < *op_t)) {
    *op_t = post;
  }
}

/* The step whose evidence a ProxyOp keeps: its first transfer. Every op
 * has it (one pair per op, 24 bytes in the map), and a later step is not
 * expected to be more prompt: the receiver has its irecv posted from the
 * op's first pass, and the sender's last SendPeerWait precedes its isend by
 * one pass whatever the step. The minimum over many ops (instances x
 * channels) does the filtering. */
#define LENS_ONEWAY_STEP 0

#endif
