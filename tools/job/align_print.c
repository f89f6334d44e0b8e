/* Host alignment tables and JSON (align_print.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/format.h"

#include "export/json_out.h"
#include "job/align_print.h"

/* Seconds with every ns digit (a double would round ns away at 1e18). */
static void fmt_s(char *buf, size_t len, int64_t ns) {
  uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  snprintf(buf, len, "%s%" PRIu64 ".%09" PRIu64, ns < 0 ? "-" : "", a / 1000000000u, a % 1000000000u);
}

/* At most 9 characters ("9999.9 us") below 27 hours: a unit changes before
 * its value would round up to 10000.0. */
static void fmt_ns(char *buf, size_t len, uint64_t ns) {
  if (ns == UINT64_MAX) snprintf(buf, len, "unknown");
  else if (ns < 10000ull) snprintf(buf, len, "%" PRIu64 " ns", ns);
  else if (ns < 9999950ull) snprintf(buf, len, "%.1f us", (double)ns / 1e3);
  else if (ns < 9999950000ull) snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
  else snprintf(buf, len, "%.1f s", (double)ns / 1e9);
}

void lens_align_time_base_text(const struct lens_model *m, const struct lens_align *a, char *buf, size_t len) {
  (void)m;
  if (a->ref < 0) {
    snprintf(buf, len, "each process's own CLOCK_MONOTONIC (no host to align)");
    return;
  }
  const struct lens_align_host *r = &a->hosts[a->ref];
  char b[32];
  fmt_ns(b, sizeof b, a->ref_utc_bound_ns);
  if (a->time_base_realtime)
    snprintf(buf, len, "job time = UTC ns: host %s's CLOCK_MONOTONIC placed by its CLOCK_REALTIME (within %s of UTC)",
             r->host, b);
  else
    snprintf(buf, len, "job time = host %s's CLOCK_MONOTONIC ns (no REALTIME evidence: not on UTC)", r->host);
}

/* text from column `indent` on, broken at spaces so that no line passes
 * 120 columns (a word longer than the room gets a line of its own). */
static void print_wrapped(FILE *f, int indent, int first_col, const char *text) {
  int col = first_col;
  while (*text) {
    while (*text == ' ') text++;
    size_t w = strcspn(text, " ");
    if (!w) break;
    if (col > indent && col + 1 + (int)w > 120) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', f);
      col++;
    }
    fprintf(f, "%.*s", (int)w, text);
    col += (int)w;
    text += w;
  }
  fputc('\n', f);
}

/* The table's host column: 20 columns, a longer name cut to 18 and "..";
 * the JSON has it whole. */
#define HOST_COL 20

void lens_align_print_text(FILE *f, const struct lens_model *m, const struct lens_align *a, int all) {
  if (a->n_hosts < 2) return;
  char tb[512];
  lens_align_time_base_text(m, a, tb, sizeof tb);
  fprintf(f, "\nhosts\n  aligned:");
  print_wrapped(f, 4, 10, tb);
  /* 120 columns: offset 20 holds UTC seconds with every ns digit, bound and
   * realtime 9 hold fmt_ns's widest ("9999.9 ms"). "corr ppm" is drift_ppm,
   * the rate correction the mapping applies (a host clock 23 ppm slow gets
   * +23), not the clock's own drift that validate prints (host - GPU): the
   * two have opposite signs, so they are not named alike. */
  fprintf(f, "  %-*s %-8s %5s %5s %20s %9s %9s %9s %-11s %5s %7s\n", HOST_COL, "host", "boot id", "procs", "ranks",
          "offset s (job-mono)", "bound", "realtime", "corr ppm", "source", "syncs", "one-way");
  struct lens_fmt_rows rows;
  double *key = lens_fmt_rows_begin(&rows, a->n_hosts, all, LENS_FMT_ROWS_EVERY);
  for (size_t h = 0; key && h < a->n_hosts; h++)
    key[h] = (int)h == a->ref ? 1e300 : a->hosts[h].bound_ns == UINT64_MAX ? 1e299 : (double)a->hosts[h].bound_ns;
  lens_fmt_rows_order(&rows);
  for (size_t h; lens_fmt_rows_next(&rows, &h);) {
    const struct lens_align_host *x = &a->hosts[h];
    char b[32], c[32], o[40], host[HOST_COL + 1];
    fmt_ns(b, sizeof b, x->bound_ns);
    fmt_ns(c, sizeof c, x->coarse_bound_ns);
    fmt_s(o, sizeof o, x->offset_ns);
    if (strlen(x->host) > HOST_COL) snprintf(host, sizeof host, "%.*s..", HOST_COL - 2, x->host);
    else snprintf(host, sizeof host, "%s", x->host);
    fprintf(f, "  %-*s %-8.8s %5u %5u %20s %9s %9s %9.2f %-11s %5u %7u\n", HOST_COL, host, x->boot_id, x->n_procs,
            x->n_ranks, o, b, c, x->drift_ppm, lens_align_source_name(x->source), x->n_sync, x->n_oneway);
  }
  lens_fmt_rows_end(&rows);
  lens_fmt_left_out(f, rows.n - rows.listed, "hosts", 1);
  double de = 0;
  for (size_t h = 0; h < a->n_hosts; h++)
    if (a->hosts[h].drift_err_ppm > de) de = a->hosts[h].drift_err_ppm;
  char bl[256];
  snprintf(bl, sizeof bl,
           "against the job time base at the host's reference time; it grows by the drift's error (at most %.1f ppm "
           "here) away from it", de);
  fprintf(f, "  bound:");
  print_wrapped(f, 4, 8, bl);
  if (a->sync_instances)
    fprintf(f, "  sync points: %zu collective instances across hosts, ranks' ends within %.1f us of each other%s\n",
            a->sync_instances, (double)a->end_spread_ns / 1e3, a->sync_dropped ? " (contradicting: not used)" : "");
  else
    fprintf(f, "  sync points: none (no ring/tree collective with KernelCh on ranks of two hosts): REALTIME alone\n");
  if (a->oneway_pairs)
    fprintf(f, "  one-way pairs: %zu network transfers between hosts (a receive provably after its send)%s\n",
            a->oneway_pairs, a->oneway_dropped ? " (contradicting REALTIME: not used)" : "");
  if (a->rejected_points)
    fprintf(f, "  note: %zu host ends left out: their ranks' own bounds contradicted each other\n", a->rejected_points);
}

void lens_align_print_json(FILE *f, const struct lens_model *m, const struct lens_align *a) {
  char tb[256];
  lens_align_time_base_text(m, a, tb, sizeof tb);
  fputs(",\n\"time_base\":{\"clock\":", f);
  lens_json_str(f, a->time_base_realtime ? "CLOCK_REALTIME" : a->ref >= 0 ? "CLOCK_MONOTONIC" : "none");
  fputs(",\"reference_host\":", f);
  lens_json_str(f, a->ref >= 0 ? a->hosts[a->ref].host : NULL);
  fputs(",\"utc_bound_ns\":", f);
  if (a->ref_utc_bound_ns == UINT64_MAX) fputs("null", f);
  else fprintf(f, "%" PRIu64, a->ref_utc_bound_ns);
  fprintf(f, ",\"end_spread_ns\":%" PRIu64 ",\"sync_instances\":%zu,\"sync_dropped\":%s,\"rejected_points\":%zu,"
             "\"one_way_pairs\":%zu,\"one_way_dropped\":%s,\"text\":",
          a->end_spread_ns, a->sync_instances, a->sync_dropped ? "true" : "false", a->rejected_points, a->oneway_pairs,
          a->oneway_dropped ? "true" : "false");
  lens_json_str(f, tb);
  fputs("},\n\"hosts\":[", f);
  for (size_t h = 0; h < a->n_hosts; h++) {
    const struct lens_align_host *x = &a->hosts[h];
    fprintf(f, "%s\n{\"host\":", h ? "," : "");
    lens_json_str(f, x->host);
    fputs(",\"boot_id\":", f);
    lens_json_str(f, x->boot_id);
    fprintf(f, ",\"timens_mono_offset_ns\":%" PRId64 ",\"procs\":%u,\"ranks\":%u,\"pids\":[", x->timens_mono_offset_ns,
            x->n_procs, x->n_ranks);
    int k = 0;
    for (size_t p = 0; p < a->n_procs; p++)
      if (a->host_of_proc[p] == (int32_t)h) fprintf(f, "%s%u", k++ ? "," : "", m->procs[p].pid);
    fputs("],\"source\":", f);
    lens_json_str(f, lens_align_source_name(x->source));
    fprintf(f, ",\"ref_mono_ns\":%" PRIu64 ",\"offset_ns\":%" PRId64 ",\"drift_ppm\":", x->ref_mono_ns, x->offset_ns);
    lens_json_double(f, x->drift_ppm);
    fputs(",\"drift_err_ppm\":", f);
    lens_json_double(f, x->drift_err_ppm);
    fputs(",\"bound_ns\":", f);
    if (x->bound_ns == UINT64_MAX) fputs("null", f);
    else fprintf(f, "%" PRIu64, x->bound_ns);
    fputs(",\"realtime_bound_ns\":", f);
    if (x->coarse_bound_ns == UINT64_MAX) fputs("null", f);
    else fprintf(f, "%" PRIu64, x->coarse_bound_ns);
    fprintf(f, ",\"sync_points\":%u,\"one_way_pairs\":%u}", x->n_sync, x->n_oneway);
  }
  fputc(']', f);
}
