/* The chain of line pieces that converts raw TSC values (clock_conv.h). */
#include "clock_conv.h"

#include <string.h>

void lens_clock_conv_init(struct lens_clock_conv *c, uint64_t tsc0, uint64_t mono0, double ns_per_tick) {
  memset(c, 0, sizeof *c);
  c->tsc0 = tsc0;
  c->mono0 = mono0;
  c->ns_per_tick = ns_per_tick;
  c->last_tsc = tsc0;
  c->n = 1;
  c->piece[0] = (struct lens_clock_piece){tsc0, mono0, ns_per_tick};
}

static void push(struct lens_clock_conv *c, struct lens_clock_piece p) {
  if (c->n == LENS_CLOCK_PIECES) { /* the oldest goes: older raws fall back to the measured line */
    memmove(&c->piece[0], &c->piece[1], (LENS_CLOCK_PIECES - 1) * sizeof c->piece[0]);
    c->n--;
  }
  c->piece[c->n++] = p;
}

int lens_clock_conv_refine(struct lens_clock_conv *c, uint64_t tsc, uint64_t mono) {
  if (mono < c->mono0 + LENS_CLOCK_MIN_BASE_NS || tsc <= c->last_tsc) return 1;
  c->last_tsc = tsc;
  /* A piece that starts after this pair (the measured-line piece of a slew
   * the previous refinement had not finished) never came into force: no raw
   * converted so far is that late. Every other piece starts at or before the
   * previous pair. */
  while (c->n > 1 && c->piece[c->n - 1].tsc >= tsc) c->n--;
  double rate = (double)(mono - c->mono0) / (double)(tsc - c->tsc0);
  c->ns_per_tick = rate;
  uint64_t now = lens_clock_conv_at(c, tsc); /* where the conversion is: it stays there */
  /* offset of the conversion from the measured line (which passes through
   * (tsc, mono)), and the relative rate change that absorbs it */
  double off = (double)(int64_t)(now - mono);
  double slew = off / LENS_CLOCK_SLEW_NS;
  if (slew > LENS_CLOCK_SLEW_MAX) slew = LENS_CLOCK_SLEW_MAX;
  if (slew < -LENS_CLOCK_SLEW_MAX) slew = -LENS_CLOCK_SLEW_MAX;
  /* ticks until the slewed piece meets the measured line: off / (rate * slew),
   * LENS_CLOCK_SLEW_NS of time when the slew is not bounded */
  double ticks = slew != 0 ? off / (rate * slew) : 0;
  if (ticks < 1) { /* on the line already */
    push(c, (struct lens_clock_piece){tsc, now, rate});
    return 0;
  }
  struct lens_clock_piece s = {tsc, now, rate * (1 - slew)};
  push(c, s);
  uint64_t meet = tsc + (uint64_t)ticks;
  push(c, (struct lens_clock_piece){meet, lens_clock_piece_at(&s, meet), rate});
  return 0;
}

uint64_t lens_clock_conv_older(const struct lens_clock_conv *c, uint64_t raw) {
  for (uint32_t i = c->n; i-- > 0;)
    if (raw >= c->piece[i].tsc) return lens_clock_piece_at(&c->piece[i], raw);
  /* older than the history (or than the anchor): the measured line */
  return c->mono0 + (uint64_t)(int64_t)((double)(int64_t)(raw - c->tsc0) * c->ns_per_tick);
}
