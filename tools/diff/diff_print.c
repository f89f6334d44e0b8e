/* See diff_print.h. */
#include "cli/format.h"
#include "diff/diff_print.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "export/json_out.h"

/* "850 ns", "12.3 us", "4.56 ms", "1.23 s" */
static const char *human_ns(double ns, char *buf, size_t len) {
  if (ns < 1e3) snprintf(buf, len, "%.0f ns", ns);
  else if (ns < 1e6) snprintf(buf, len, "%.1f us", ns / 1e3);
  else if (ns < 1e9) snprintf(buf, len, "%.2f ms", ns / 1e6);
  else snprintf(buf, len, "%.2f s", ns / 1e9);
  return buf;
}

/* How the communicator is named in a row: its name, else its hash. */
static const char *comm_label(const struct lens_diff_run *a, const struct lens_diff_run *b, const struct lens_diff_comm *c,
                              char *buf, size_t len) {
  const struct lens_sum_group *g = c->a >= 0 ? lens_diff_group(a, c->a) : lens_diff_group(b, c->b);
  if (g && g->name && g->name[0] && g->name[0] != '(') snprintf(buf, len, "%s", g->name);
  else lens_fmt_comm_label(NULL, g ? g->comm_id : 0, buf, len);
  return buf;
}

static void run_line(FILE *f, const char *tag, const struct lens_diff_run *r) {
  int ranks = 0;
  for (size_t i = 0; i < r->s->n_groups; i++)
    if (r->s->groups[i].ranks_seen > ranks) ranks = r->s->groups[i].ranks_seen;
  size_t cut = 0;
  for (size_t i = 0; i < r->m->n_files; i++) cut += r->m->files[i].truncated_bytes != 0;
  fprintf(f, "  %s: %zu file%s%s, %zu process%s, %zu communicator%s, up to %d ranks each, %" PRIu64 " events\n", tag,
          r->m->n_files, r->m->n_files == 1 ? "" : "s", cut ? " (some cut short)" : "", r->m->n_procs,
          r->m->n_procs == 1 ? "" : "es", r->s->n_groups, r->s->n_groups == 1 ? "" : "s", ranks, r->s->events);
}

static const char *nz(const char *s) { return s && *s ? s : "-"; }

static int streq_safe(const char *x, const char *y) { return !strcmp(nz(x), nz(y)); }

/* The change table's columns, 118 wide with the widest common values: a
 * communicator cut at 12 (as net cuts it), ReduceScatter, "512 KiB-1 MiB", "7200 -> 7200",
 * "999.99 ms -> 999.99 ms", "+4329.0%", "completion", two 7-character GB/s
 * (lens_fmt_gbps) and " -> ". Rarer wider values widen their cell. */
#define DIFF_ROW "  %-12.12s %-13.13s %-13s %-13s %-22s %8s %-10s %18s"

/* A side's busbw, "-" when the job view decomposed none of its operations. */
static void bw_text(const struct lens_diff_side *s, char *buf, size_t len) {
  if (s->bw_known) lens_fmt_gbps(s->busbw_gbps, buf, len); /* the views' one GB/s form */
  else snprintf(buf, len, "-");
}

static void row_text(FILE *f, const struct lens_diff_run *a, const struct lens_diff_run *b, const struct lens_diff *d,
                     const struct lens_diff_row *r) {
  char cl[64], size[32], ta[24], tb[24], ch[24] = "", cnt[48], bw[40] = "-", al[64] = "";
  comm_label(a, b, &d->comms[r->comm], cl, sizeof cl);
  lens_size_bucket_label(r->bucket, size, sizeof size);
  if (r->a.present && r->b.present) snprintf(cnt, sizeof cnt, "%" PRIu64 " -> %" PRIu64, r->a.count, r->b.count);
  else snprintf(cnt, sizeof cnt, "%" PRIu64, r->a.present ? r->a.count : r->b.count);
  snprintf(ta, sizeof ta, "-");
  snprintf(tb, sizeof tb, "-");
  if (r->a.present && r->a.timed) human_ns(r->a.avg_ns, ta, sizeof ta);
  if (r->b.present && r->b.timed) human_ns(r->b.avg_ns, tb, sizeof tb);
  if (r->status == LENS_DIFF_NEW || r->status == LENS_DIFF_GONE) snprintf(ch, sizeof ch, "%s", lens_diff_status_name(r->status));
  else if (r->moved == LENS_DIFF_MOVED_WAIT) snprintf(ch, sizeof ch, "wait %s", r->wait_change_ns > 0 ? "+" : "-");
  else if (r->change != 0) snprintf(ch, sizeof ch, "%+.1f%%", r->change * 100);
  else snprintf(ch, sizeof ch, "%s", lens_diff_status_name(r->status));
  char bwa[16], bwb[16];
  bw_text(&r->a, bwa, sizeof bwa);
  bw_text(&r->b, bwb, sizeof bwb);
  if (r->a.present && r->b.present) snprintf(bw, sizeof bw, "%s -> %s", bwa, bwb);
  else snprintf(bw, sizeof bw, "%s", r->a.present ? bwa : bwb);
  if (r->metric == LENS_DIFF_COMPLETION && r->a.present && r->b.present &&
      (!streq_safe(r->a.algo, r->b.algo) || !streq_safe(r->a.proto, r->b.proto)))
    snprintf(al, sizeof al, "  %s/%s -> %s/%s", nz(r->a.algo), nz(r->a.proto), nz(r->b.algo), nz(r->b.proto));
  char t[64];
  snprintf(t, sizeof t, "%s -> %s", r->a.present ? ta : "-", r->b.present ? tb : "-");
  fprintf(f, DIFF_ROW "%s\n", cl, nz(r->func), size, cnt, t, ch, r->metric == LENS_DIFF_EXECUTION ? "execution" : "completion",
          bw, al);
  if (r->moved & LENS_DIFF_MOVED_WAIT) { /* the wait moved: it and the wall time, on a line of their own */
    char wa[24], wb[24], wd[24], la[24], lb[24];
    human_ns(r->a.wait_ns, wa, sizeof wa);
    human_ns(r->b.wait_ns, wb, sizeof wb);
    human_ns(fabs(r->wait_change_ns), wd, sizeof wd);
    human_ns(r->a.wall_ns, la, sizeof la);
    human_ns(r->b.wall_ns, lb, sizeof lb);
    fprintf(f, "      wait (last rank's lateness) %s -> %s (%c%s), wall time %s -> %s (%+.1f%%)%s\n", wa, wb,
            r->wait_change_ns < 0 ? '-' : '+', wd, la, lb, r->wall_change * 100,
            r->moved & LENS_DIFF_MOVED_EXEC ? "" : ", execution held");
  }
}

void lens_diff_print_text(FILE *f, const struct lens_diff_run *a, const struct lens_diff_run *b,
                          const struct lens_diff *d, size_t top) {
  fprintf(f, "nccl-lens diff: run A against run B\n");
  run_line(f, "A", a);
  run_line(f, "B", b);
  fprintf(f, "  time: execution (job view) for a communicator with several ranks in both runs, else completion (its\n"
             "  kernel launch -> its last channel or proxy op); a change under %.1f%% (or of the mean but not the median)\n"
             "  is noise. With the job view the wait (how late each instance's last rank was) counts too, when it moves\n"
             "  by %.1f%% of the wall time (execution + wait)\n",
          d->threshold, d->threshold);
  fprintf(f, "communicators:\n");
  for (size_t i = 0; i < d->n_comms; i++) {
    const struct lens_diff_comm *c = &d->comms[i];
    const struct lens_sum_group *ga = lens_diff_group(a, c->a), *gb = lens_diff_group(b, c->b);
    char cl[64];
    comm_label(a, b, c, cl, sizeof cl);
    char ia[LENS_COMM_ID_LEN], ib[LENS_COMM_ID_LEN];
    if (ga && gb)
      fprintf(f, "  %-18s %d ranks: A %s = B %s (matched by %s)\n", cl, ga->nranks, lens_fmt_comm_id(ga->comm_id, ia),
              lens_fmt_comm_id(gb->comm_id, ib), lens_diff_match_name(c->match));
    else
      fprintf(f, "  %-18s %d ranks: only in %s (%s)\n", cl, ga ? ga->nranks : gb->nranks, ga ? "A" : "B",
              lens_fmt_comm_id(ga ? ga->comm_id : gb->comm_id, ia));
  }
  if (!d->n_changed) {
    fprintf(f, "\nno change: %zu operation%s compared, time and wait within %.1f%% and the same counts\n", d->n_rows,
            d->n_rows == 1 ? "" : "s", d->threshold);
    return;
  }
  fprintf(f, "\nchanges, most important first (relative change x share of the runs' time):\n");
  fprintf(f, DIFF_ROW "\n", "communicator", "func", "size", "count A -> B", "time A -> B (mean)", "change", "time is",
          "busbw GB/s");
  size_t shown = 0;
  for (size_t i = 0; i < d->n_rows && d->rows[i].status != LENS_DIFF_SAME; i++) {
    if (top && shown >= top) break;
    row_text(f, a, b, d, &d->rows[i]);
    shown++;
  }
  if (shown < d->n_changed) fprintf(f, "  (%zu more changes: --top N lists more)\n", d->n_changed - shown);
  size_t same = d->n_rows - d->n_changed;
  if (same) fprintf(f, "unchanged: %zu operation%s within %.1f%%\n", same, same == 1 ? "" : "s", d->threshold);
}

static void side_json(FILE *f, const struct lens_diff_side *s) {
  if (!s->present) {
    fputs("null", f);
    return;
  }
  fprintf(f, "{\"count\":%" PRIu64 ",\"timed\":%" PRIu64 ",\"time_avg_ns\":", s->count, s->timed);
  lens_json_double(f, s->avg_ns);
  fputs(",\"time_p50_ns\":", f);
  if (s->p50_ns > 0) lens_json_double(f, s->p50_ns);
  else fputs("null", f);
  fputs(",\"time_total_ns\":", f);
  lens_json_double(f, s->total_ns);
  fputs(",\"busbw_gbps\":", f); /* null: nothing decomposed (never a bandwidth over a completion time) */
  if (s->bw_known) lens_json_double(f, s->busbw_gbps);
  else fputs("null", f);
  fputs(",\"algbw_gbps\":", f);
  if (s->bw_known) lens_json_double(f, s->algbw_gbps);
  else fputs("null", f);
  if (s->wall_ns > 0) {
    fputs(",\"wait_ns\":", f);
    lens_json_double(f, s->wait_ns);
    fputs(",\"wait_p50_ns\":", f);
    lens_json_double(f, s->wait_p50_ns);
    fputs(",\"wait_p75_ns\":", f);
    lens_json_double(f, s->wait_p75_ns);
    fputs(",\"wait_rank_avg_ns\":", f);
    lens_json_double(f, s->wait_rank_ns);
    fputs(",\"wall_ns\":", f);
    lens_json_double(f, s->wall_ns);
  } else {
    fputs(",\"wait_ns\":null,\"wait_p50_ns\":null,\"wait_p75_ns\":null,\"wait_rank_avg_ns\":null,\"wall_ns\":null", f);
  }
  fputs(",\"algo\":", f);
  lens_json_str(f, s->algo);
  fputs(",\"proto\":", f);
  lens_json_str(f, s->proto);
  fputc('}', f);
}

static void run_json(FILE *f, const struct lens_diff_run *r) {
  fputs("{\"files\":[", f);
  for (size_t i = 0; i < r->m->n_files; i++) {
    fputs(i ? "," : "", f);
    lens_json_str(f, r->m->files[i].path);
  }
  fprintf(f, "],\"processes\":%zu,\"events\":%" PRIu64 "}", r->m->n_procs, r->s->events);
}

static void group_json(FILE *f, const struct lens_sum_group *g) {
  if (!g) {
    fputs("null", f);
    return;
  }
  fputs("{\"name\":", f);
  lens_json_str(f, g->name);
  fputs(",\"comm_id\":", f);
  lens_json_comm_id(f, g->comm_id);
  fprintf(f, ",\"nranks\":%d,\"ranks_seen\":%d}", g->nranks, g->ranks_seen);
}

void lens_diff_print_json(FILE *f, const struct lens_diff_run *a, const struct lens_diff_run *b,
                          const struct lens_diff *d) {
  fputs("{\"a\":", f);
  run_json(f, a);
  fputs(",\"b\":", f);
  run_json(f, b);
  fputs(",\"threshold_pct\":", f);
  lens_json_double(f, d->threshold);
  fprintf(f, ",\"changed\":%zu,\"no_change\":%s,\"communicators\":[", d->n_changed, d->n_changed ? "false" : "true");
  for (size_t i = 0; i < d->n_comms; i++) {
    const struct lens_diff_comm *c = &d->comms[i];
    fputs(i ? ",{\"a\":" : "{\"a\":", f);
    group_json(f, lens_diff_group(a, c->a));
    fputs(",\"b\":", f);
    group_json(f, lens_diff_group(b, c->b));
    fprintf(f, ",\"matched_by\":\"%s\",\"time\":\"%s\"}", lens_diff_match_name(c->match),
            c->metric == LENS_DIFF_EXECUTION ? "execution" : "completion");
  }
  fputs("],\"rows\":[", f);
  for (size_t i = 0; i < d->n_rows; i++) {
    const struct lens_diff_row *r = &d->rows[i];
    char cl[64], size[32];
    comm_label(a, b, &d->comms[r->comm], cl, sizeof cl);
    lens_size_bucket_label(r->bucket, size, sizeof size);
    fprintf(f, "%s{\"communicator\":", i ? "," : "");
    lens_json_str(f, cl);
    fprintf(f, ",\"comm\":%zu,\"func\":", r->comm);
    lens_json_str(f, r->func);
    fputs(",\"size_bucket\":", f);
    lens_json_str(f, size);
    fprintf(f, ",\"size_log2\":%d,\"time\":\"%s\",\"status\":\"%s\",\"time_change_pct\":", r->bucket,
            r->metric == LENS_DIFF_EXECUTION ? "execution" : "completion", lens_diff_status_name(r->status));
    if (r->a.present && r->b.present && r->a.timed && r->b.timed) lens_json_double(f, r->change * 100);
    else fputs("null", f);
    fprintf(f, ",\"moved\":[%s%s%s]", r->moved & LENS_DIFF_MOVED_EXEC ? "\"execution\"" : "",
            (r->moved & LENS_DIFF_MOVED_EXEC) && (r->moved & LENS_DIFF_MOVED_WAIT) ? "," : "",
            r->moved & LENS_DIFF_MOVED_WAIT ? "\"wait\"" : "");
    fputs(",\"wait_change_ns\":", f);
    if (r->a.wall_ns > 0 && r->b.wall_ns > 0) lens_json_double(f, r->wait_change_ns);
    else fputs("null", f);
    fputs(",\"wall_change_pct\":", f);
    if (r->a.wall_ns > 0 && r->b.wall_ns > 0) lens_json_double(f, r->wall_change * 100);
    else fputs("null", f);
    fputs(",\"score\":", f);
    lens_json_double(f, r->score);
    fputs(",\"a\":", f);
    side_json(f, &r->a);
    fputs(",\"b\":", f);
    side_json(f, &r->b);
    fputc('}', f);
  }
  fputs("]}\n", f);
}
