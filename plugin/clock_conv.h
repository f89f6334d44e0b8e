/* The writer's conversion of raw TSC values to CLOCK_MONOTONIC ns, as pure
 * math (no clock reads), so tests can drive it with made-up (tsc, mono) pairs.
 *
 * The conversion is a chain of line pieces, continuous and increasing. Each
 * refinement measures the rate over [anchor, now] (the "measured line", the
 * old conversion) and, rather than stepping onto it, keeps the conversion's
 * value at the refinement's raw time and slews onto it: one piece at a rate
 * that closes the offset over LENS_CLOCK_SLEW_NS (the rate changed by at most
 * LENS_CLOCK_SLEW_MAX), then a piece on the measured line. Pieces that
 * started before a refinement stay, so a record that waited in a ring across
 * it converts with the piece in force at its raw time: a raw value converts
 * to the same ns whenever the writer gets to it, and one thread's records keep
 * their order. Error bound: docs/trace-format.md, "Clocks". */
#ifndef NCCL_LENS_PLUGIN_CLOCK_CONV_H
#define NCCL_LENS_PLUGIN_CLOCK_CONV_H

#include <stdint.h>

/* 2 pieces per refinement, refinements >= 1 s apart: 16 s of history. A raw
 * value older than that (a record that sat in a ring through 16 refinements
 * of a running writer, or a thread's first raw value announced again) falls
 * back to the measured line: within its bound of CLOCK_MONOTONIC, but no
 * longer on the chain (its order against records converted before is not
 * kept). */
#define LENS_CLOCK_PIECES 32
#define LENS_CLOCK_SLEW_NS 1000000000.0 /* an offset is absorbed over this much time ... */
#define LENS_CLOCK_SLEW_MAX 5e-4        /* ... unless that changes the rate by more (500 ppm, as NTP's) */
#define LENS_CLOCK_MIN_BASE_NS 1000000000ull /* a refinement wants this much time since the anchor */

struct lens_clock_piece {
  uint64_t tsc;       /* the first raw value it converts */
  uint64_t mono;      /* what tsc converts to */
  double ns_per_tick; /* > 0 */
};

struct lens_clock_conv {
  uint64_t tsc0, mono0; /* the anchor pair */
  double ns_per_tick;   /* measured: over [anchor, the latest pair] */
  uint64_t last_tsc;    /* tsc of the latest pair taken (tsc0 before any) */
  uint32_t n;           /* pieces in use, 1 .. LENS_CLOCK_PIECES */
  struct lens_clock_piece piece[LENS_CLOCK_PIECES]; /* by tsc, oldest first */
};

/* The anchor pair and the first rate (the calibration). */
void lens_clock_conv_init(struct lens_clock_conv *c, uint64_t tsc0, uint64_t mono0, double ns_per_tick);
/* A refinement with a (tsc, mono) pair read now, after every record
 * converted so far was read. Returns 0 when it took it, 1 when it ignored it
 * (less than LENS_CLOCK_MIN_BASE_NS since the anchor, or not after the last pair). */
int lens_clock_conv_refine(struct lens_clock_conv *c, uint64_t tsc, uint64_t mono);
/* Raw values before the two newest pieces (out of line: rare). */
uint64_t lens_clock_conv_older(const struct lens_clock_conv *c, uint64_t raw);

static inline uint64_t lens_clock_piece_at(const struct lens_clock_piece *p, uint64_t raw) {
  return p->mono + (uint64_t)(int64_t)((double)(int64_t)(raw - p->tsc) * p->ns_per_tick);
}

/* Per record: one of the two newest pieces is in force (the slew, which
 * lasts about until the next refinement, and the measured line after it):
 * one or two compares and a multiply-add. */
static inline uint64_t lens_clock_conv_at(const struct lens_clock_conv *c, uint64_t raw) {
  const struct lens_clock_piece *p = &c->piece[c->n - 1];
  if (raw >= p->tsc) return lens_clock_piece_at(p, raw);
  if (c->n >= 2 && raw >= p[-1].tsc) return lens_clock_piece_at(p - 1, raw);
  return lens_clock_conv_older(c, raw);
}

#endif
