/* Host clocks from CLOCK chunks (see host_clock.h). */
#include "host_clock.h"

#include <string.h>

#include "lens_checked.h"

int lens_host_clock_of(const struct lens_model *m, int32_t proc, struct lens_host_clock *out) {
  memset(out, 0, sizeof *out);
  out->proc = proc;
  const struct lens_clock_sample *best = NULL, *first = NULL, *last = NULL;
  for (size_t i = 0; i < m->n_clocks; i++) {
    const struct lens_clock_sample *c = &m->clocks[i];
    if (c->proc != proc || c->r.mono_after_ns < c->r.mono_before_ns) continue;
    out->n_samples++;
    if (!first) first = c;
    last = c;
    if (!best || c->r.mono_after_ns - c->r.mono_before_ns < best->r.mono_after_ns - best->r.mono_before_ns) best = c;
  }
  if (!best) return -1;
  uint64_t half = (best->r.mono_after_ns - best->r.mono_before_ns + 1) / 2;
  out->ref_mono_ns = best->r.mono_before_ns + half;
  /* samples come from the trace: the difference saturates (lens_checked.h) */
  out->real_minus_mono_ns = lens_u64_diff(best->r.real_ns, out->ref_mono_ns);
  out->bound_ns = half + best->r.ntp_maxerror_ns;
  out->ntp_synced = (best->r.flags & LENS_CLOCK_F_NTP_SYNCED) != 0;
  out->timens_mono_offset_ns = best->r.timens_mono_offset_ns;
  out->boot_id = best->r.boot_id;
  out->host = best->r.host;
  /* The slope between the first and last samples: only meaningful over
   * seconds, where the brackets' widths (µs) are small against the span. */
  if (first != last && last->r.mono_before_ns > first->r.mono_before_ns + 1000000000ull) {
    double dm = (double)(last->r.mono_before_ns - first->r.mono_before_ns);
    double dr = (double)lens_u64_diff(last->r.real_ns, first->r.real_ns);
    out->drift_ppm = (dr / dm - 1.0) * 1e6;
  }
  return 0;
}

int64_t lens_host_clock_to_job(const struct lens_host_clock *hc, uint64_t mono_ns) {
  double dt = (double)lens_u64_diff(mono_ns, hc->ref_mono_ns);
  return lens_i64_add(lens_i64_add(lens_u2i64(mono_ns), hc->real_minus_mono_ns), lens_f2i64(dt * hc->drift_ppm * 1e-6));
}
