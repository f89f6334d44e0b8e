/* The "clocks" part of summary: where each process's CLOCK_MONOTONIC sits
 * against REALTIME (the coarse job time base), how sure that is, and the
 * facts that say which traces share a host clock. */
#include <inttypes.h>
#include <stdio.h>

#include "cli/format.h"

#include "export/json_out.h"
#include "host_clock.h"
#include "job/align_print.h"
#include "summary/summary_print.h"

static void fmt_ns(char *buf, size_t len, uint64_t ns) {
  if (ns < 10000ull)
    snprintf(buf, len, "%" PRIu64 " ns", ns);
  else if (ns < 10000000ull)
    snprintf(buf, len, "%.1f us", (double)ns / 1e3);
  else if (ns < 10000000000ull)
    snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
  else
    snprintf(buf, len, "%.1f s", (double)ns / 1e9);
}

void lens_summary_print_clocks_text(FILE *f, const struct lens_model *m, const struct lens_summary_align *al, int all) {
  size_t n = m->n_procs;
  /* capped: the least sure first (NTP not synced, then the widest bound) */
  struct lens_fmt_rows rows;
  double *key = lens_fmt_rows_begin(&rows, n, all, LENS_FMT_ROWS_PRESENT);
  if (!key) return;
  for (size_t p = 0; p < n; p++) {
    struct lens_host_clock hc;
    key[p] = -1.0; /* no clock facts: never listed */
    if (lens_host_clock_of(m, (int32_t)p, &hc) != 0) continue;
    key[p] = (hc.ntp_synced ? 0.0 : 1e30) + (double)hc.bound_ns;
  }
  lens_fmt_rows_order(&rows);
  int any = 0, unsynced = 0;
  for (size_t p; lens_fmt_rows_next(&rows, &p);) {
    struct lens_host_clock hc;
    if (lens_host_clock_of(m, (int32_t)p, &hc) != 0) continue; /* it had facts when keyed */
    if (!any)
      fprintf(f, "\nclocks (job time = CLOCK_MONOTONIC + offset; REALTIME as NTP keeps it)\n"
                 "  %-28s %-8s %20s %12s %9s %s\n",
              "process", "boot id", "offset s", "bound", "drift ppm", "");
    any = 1;
    char who[96], bound[32];
    snprintf(who, sizeof who, "%s:%u", m->procs[p].host, m->procs[p].pid);
    fmt_ns(bound, sizeof bound, hc.bound_ns);
    fprintf(f, "  %-28s %-8.8s %20.9f %12s %9.2f %s", who, hc.boot_id, (double)hc.real_minus_mono_ns / 1e9, bound,
            hc.drift_ppm, hc.ntp_synced ? "NTP synced" : "NTP not synced (*)");
    unsynced |= !hc.ntp_synced;
    if (hc.timens_mono_offset_ns) /* on a line of its own: the table stays within 120 columns */
      fprintf(f, "\n    time namespace: MONOTONIC %+.9f s from its host's", (double)hc.timens_mono_offset_ns / 1e9);
    fputc('\n', f);
  }
  lens_fmt_rows_end(&rows);
  lens_fmt_left_out(f, rows.n - rows.listed, "processes", 1);
  if (unsynced) fprintf(f, "  (*) the bound is the kernel's unsynced maxerror\n");
  if (any && al && al->a->n_hosts >= 2) lens_align_print_text(f, al->m, al->a, all);
}

void lens_summary_print_clocks_json(FILE *f, const struct lens_model *m, const struct lens_summary_align *al) {
  fputs(",\"clocks\":[", f);
  int n = 0;
  for (size_t p = 0; p < m->n_procs; p++) {
    struct lens_host_clock hc;
    if (lens_host_clock_of(m, (int32_t)p, &hc) != 0) continue;
    fprintf(f, "%s{\"host\":", n++ ? "," : "");
    lens_json_str(f, hc.host);
    fprintf(f, ",\"pid\":%u,\"boot_id\":", m->procs[p].pid);
    lens_json_str(f, hc.boot_id);
    fprintf(f,
            ",\"samples\":%u,\"ref_mono_ns\":%" PRIu64 ",\"real_minus_mono_ns\":%" PRId64 ",\"bound_ns\":%" PRIu64
            ",\"drift_ppm\":%.3f,\"ntp_synced\":%s,\"timens_mono_offset_ns\":%" PRId64 "}",
            hc.n_samples, hc.ref_mono_ns, hc.real_minus_mono_ns, hc.bound_ns, hc.drift_ppm,
            hc.ntp_synced ? "true" : "false", hc.timens_mono_offset_ns);
  }
  fputc(']', f);
  if (al && al->a->n_hosts >= 2) lens_align_print_json(f, al->m, al->a);
}
