/* Text and JSON output of nccl-lens validate: CUPTI join summary, clock maps,
 * per launch (kernel) and per channel detail, totals, verdict. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/format.h"
#include "export/json_out.h"

#include "analysis/gpu/gpu_analysis.h"
#include "validate_print.h"
#include "validate_part.h"

static const char *const flag_names[] = {"stop_before_start", "non_monotonic", "shared_timer", "ring_overrun",
                                         "outside_kernel",    "no_kernel_record", "foreign_ext_id", "starved",
                                         "no_clock_map"};
#define N_FLAG_NAMES (sizeof(flag_names) / sizeof(flag_names[0]))
_Static_assert(N_FLAG_NAMES == LENS_VALIDATE_N_FLAGS, "one name per counted flag");

static void flags_text(uint32_t f, char *out, size_t len, const char *sep) {
  out[0] = 0;
  size_t used = 0;
  for (size_t b = 0; b < N_FLAG_NAMES; b++)
    if (f & (1u << b)) {
      int w = snprintf(out + used, len - used, "%s%s", used ? sep : "", flag_names[b]);
      if (w < 0 || (size_t)w >= len - used) break;
      used += (size_t)w;
    }
}

/* Strings from traces and libcupti go into JSON escaped. */
static const char *json_str(const char *in, char *out, size_t len) {
  size_t o = 0;
  for (const unsigned char *p = (const unsigned char *)(in ? in : ""); *p && o + 7 < len; p++) {
    if (*p == '"' || *p == '\\') out[o++] = '\\', out[o++] = (char)*p;
    else if (*p < 0x20) o += (size_t)snprintf(out + o, len - o, "\\u%04x", *p);
    else out[o++] = (char)*p;
  }
  out[o] = 0;
  return out;
}

/* One KernelCh: text line or JSON object. */
static void print_channel(FILE *f, const struct lens_vl_channel *c, int json, int first) {
  char fl[256];
  /* The lag when measured, 0 and below 0 included; null / "-" when not */
  char lag[32] = "null", lag_us[32] = "-";
  if (c->lag_known) {
    snprintf(lag, sizeof lag, "%" PRId64, c->notice_lag);
    snprintf(lag_us, sizeof lag_us, "%.3f us", (double)c->notice_lag / 1e3);
  }
  if (json) {
    char fn[128];
    flags_text(c->flags, fl, sizeof(fl), "\",\"");
    fprintf(f,
            "%s{\"id\":\"0x%016" PRIx64 "\",\"channel\":%d,\"op\":\"%s\",\"func\":\"%s\",\"start_gpu_ns\":%" PRIu64
            ",\"stop_gpu_ns\":%" PRIu64 ",\"start_mono_ns\":%" PRIu64 ",\"stop_mono_ns\":%" PRIu64
            ",\"notice_lag_ns\":%s,\"time_source\":\"%s\",\"inside_kernel\":\"%s\",\"overrun_suspected\":%s"
            ",\"flags\":[%s%s%s]}",
            first ? "" : ",", c->id, c->channel, lens_type_name(c->op_type), json_str(c->func, fn, sizeof(fn)),
            c->start_gpu, c->stop_gpu, c->start_mono, c->stop_mono, lag, lens_time_source_name(c->time_source),
            c->inside, c->overrun ? "true" : "false", fl[0] ? "\"" : "", fl, fl[0] ? "\"" : "");
    return;
  }
  flags_text(c->flags, fl, sizeof(fl), ",");
  char span[96] = "unmapped";
  if (c->start_mono) {
    uint64_t base = c->span_base;
    snprintf(span, sizeof(span), "%+.3f..%+.3f us%s", ((double)(int64_t)(c->start_mono - base)) / 1e3,
             c->stop_mono ? ((double)(int64_t)(c->stop_mono - base)) / 1e3 : 0.0,
             c->checked ? " from kernel start" : "");
  }
  /* One record of fields, two spaces apart, within LENS_FMT_COLUMNS: what
   * does not fit (a CUPTI span "from kernel start", a long flag list) goes
   * on a next line under "span". "overrun suspected" only when it is: the
   * row without it fits 120 columns. */
  char head[64], rec[512];
  int hn = snprintf(head, sizeof head, "    ch %3d %-4s %-14s ", c->channel, lens_type_name(c->op_type), c->func);
  char indent[64];
  hn = hn < 0 ? 0 : hn >= (int)sizeof indent ? (int)sizeof indent - 1 : hn;
  memset(indent, ' ', (size_t)hn);
  indent[hn] = 0;
  snprintf(rec, sizeof rec, "span %s  inside %s  notice lag %s  source %s%s  flags %s", span, c->inside, lag_us,
           lens_time_source_name(c->time_source), c->overrun ? "  overrun suspected" : "", fl[0] ? fl : "-");
  lens_fmt_wrap_fields(f, head, indent, rec, LENS_FMT_COLUMNS);
}

/* cupti: the traces hold CUPTI records at all; without any, a launch's
 * missing kernel record is not a finding, only what was not checked. */
static void print_kernel_head(FILE *f, const struct lens_vl_launch *l, int32_t proc, int json, int cupti) {
  if (json) {
    /* Ids as "0x" + 16 digits, strings: a JSON number loses digits past 2^53. */
    fprintf(f,
            "{\"launch_id\":\"0x%016" PRIx64 "\",\"proc\":%d,\"ext_id\":\"0x%016" PRIx64
            "\",\"no_kernel_record\":%s,\"kernel\":",
            l->id, proc, l->ext_id, l->no_kernel_record ? "true" : "false");
    if (l->kernel_index >= 0)
      fprintf(f,
              "{\"index\":%d,\"correlation_id\":%u,\"device\":%u,\"stream\":%u,\"grid_x\":%u,\"graph_id\":%u,"
              "\"start_mono_ns\":%" PRIu64 ",\"end_mono_ns\":%" PRIu64 "}",
              l->kernel_index, l->corr, l->dev, l->stream, l->grid_x, l->graph_id, l->k_start, l->k_end);
    else
      fprintf(f, "null");
    fprintf(f, ",\"channels\":[");
    return;
  }
  if (l->kernel_index >= 0) {
    char line[256]; /* long ids and times wrap under the launch */
    snprintf(line, sizeof line,
             "launch %#" PRIx64 " proc %d: kernel corr %u dev %u stream %u grid %u%s, %.3f us (%" PRIu64 "..%" PRIu64 ")",
             l->id, proc, l->corr, l->dev, l->stream, l->grid_x, l->graph_id ? " (graph)" : "",
             (double)(l->k_end - l->k_start) / 1e3, l->k_start, l->k_end);
    lens_fmt_wrap(f, "  ", "      ", line, LENS_FMT_COLUMNS);
  } else
    fprintf(f, "  launch %#" PRIx64 " proc %d: %s\n", l->id, proc,
            l->no_kernel_record ? "NO KERNEL RECORD (ext id pushed, CUPTI has none)"
            : cupti             ? "no CUPTI kernel record"
                                : "kernel not checked (no CUPTI records in these traces)");
}

/* The clock maps, at most limit of them (-1: all); returns how many were left out. */
static size_t print_maps(FILE *f, const struct lens_model *m, const struct lens_validate_part *s, int json,
                         long limit) {
  if (!json) fprintf(f, "clock maps (host_mono = offset + slope * pTimer), per GPU = proxy thread:\n");
  if (!json && !m->n_clock_maps) fprintf(f, "  none (no KernelCh timers)\n");
  size_t n = limit >= 0 && (size_t)limit < m->n_clock_maps ? (size_t)limit : m->n_clock_maps;
  for (size_t i = 0; i < n; i++) {
    const struct lens_clock_map *c = &m->clock_maps[i];
    const char *src = lens_clock_map_source_name(c->source);
    double ppm = (c->slope - 1.0) * 1e6;
    int fixed = i < s->n_maps && s->map_fixed[i];
    int64_t offset = i < s->n_maps ? s->map_offset[i] : 0;
    char drift[64];
    if (fixed) snprintf(drift, sizeof(drift), "not measured (span too short)");
    else snprintf(drift, sizeof(drift), "%+.3f ppm", ppm);
    if (json)
      fprintf(f,
              "%s{\"proc\":%d,\"thread\":%d,\"rank\":%d,\"gpu_from\":%" PRIu64 ",\"gpu_to\":%" PRIu64
              ",\"offset_at_from_ns\":%" PRId64 ",\"drift_ppm\":%.4f,\"drift_measured\":%s,\"residual_ns\":%.1f,\"error_bound_ns\":%.1f,"
              "\"points\":%u,\"source\":\"%s\"}",
              i ? "," : "", c->proc, c->thread, c->rank, c->gpu_from, c->gpu_to, offset, ppm,
              fixed ? "false" : "true", c->residual_ns, c->error_bound_ns, c->n_points, src);
    else {
      /* Two lines within LENS_FMT_COLUMNS: the map and how far to trust it,
       * then its terms (offset, drift, fit residual). */
      char line[256];
      snprintf(line, sizeof line, "proc %d rank %d thread %d: source %s, GPU %.3f s of time, %u points, error bound %.1f ns",
               c->proc, c->rank, c->thread, src, (double)(c->gpu_to - c->gpu_from) / 1e9, c->n_points,
               c->error_bound_ns);
      lens_fmt_wrap(f, "  ", "      ", line, LENS_FMT_COLUMNS);
      snprintf(line, sizeof line, "host - gpu = %" PRId64 " ns at start, drift %s, residual %.1f ns", offset, drift,
               c->residual_ns);
      lens_fmt_wrap(f, "    ", "      ", line, LENS_FMT_COLUMNS);
    }
  }
  size_t left = m->n_clock_maps - n;
  if (!json && left) fprintf(f, "  (%zu more clock maps not listed: --limit N lists more)\n", left);
  return left;
}

/* Which files were read, intact or cut, and how many events each gave, as
 * in summary's JSON: a validation of a cut trace must say so. Opens the
 * object ("{\"files\":[...],"). */
static void print_files_json(FILE *f, const struct lens_model *m, const uint64_t *ev) {
  fprintf(f, "{\"files\":[");
  for (size_t i = 0; i < m->n_files; i++) {
    const struct lens_file *fl = &m->files[i];
    fprintf(f, "%s{\"path\":", i ? "," : "");
    lens_json_str(f, fl->path);
    fprintf(f, ",\"size_bytes\":%" PRIu64 ",\"intact\":%s,\"truncated_bytes\":%" PRIu64 ",\"truncation\":",
            fl->size_bytes, fl->truncated_bytes || fl->damaged_bytes || !fl->n_sessions ? "false" : "true",
            fl->truncated_bytes);
    lens_json_str(f, fl->truncation);
    fprintf(f,
            ",\"lost_chunks\":%" PRIu64 ",\"damaged_bytes\":%" PRIu64 ",\"damaged_chunks\":%" PRIu64
            ",\"sessions\":%u,\"clean_end\":%s,\"events\":",
            fl->lost_chunks, fl->damaged_bytes, fl->damaged_chunks, fl->n_sessions, fl->clean_end ? "true" : "false");
    fprintf(f, "%" PRIu64 "}", ev[i]);
  }
  fputs("],", f);
}

/* Reads n records of size sz from a spool file; 0, or -1 when it is short. */
static int read_rec(FILE *in, void *rec, size_t sz) { return fread(rec, sz, 1, in) == 1 ? 0 : -1; }

/* The listed launches of every group, in input order, at most limit in all;
 * with ok_capped (--json's default) every flagged one and the ok ones while
 * lens_fmt_json_ok_listed says, *ok_shown counting those. Returns how many
 * were listed, -1 on a spool read error. */
static long print_launches(FILE *f, const struct lens_validate_job *j, int json, long limit, int cupti, int ok_capped,
                           size_t *ok_shown) {
  long shown = 0;
  size_t ok_used = 0;
  *ok_shown = 0;
  int progress = !isatty(fileno(f));
  for (size_t g = 0; g < j->n_parts && (limit < 0 || shown < limit); g++) {
    const struct lens_validate_part *p = j->parts[g];
    if (!p->launches_listed) continue;
    FILE *in = lens_spool_open(j->spool, p->spool);
    if (!in) return -1;
    for (size_t i = 0; i < p->launches_listed && (limit < 0 || shown < limit); i++) {
      struct lens_vl_launch l;
      if (read_rec(in, &l, sizeof l)) return fclose(in), -1;
      if (ok_capped && !l.flagged && !lens_fmt_json_ok_listed(&ok_used, 1 + (size_t)l.n_ch, 0)) {
        if (fseeko(in, (off_t)l.n_ch * (off_t)sizeof(struct lens_vl_channel), SEEK_CUR)) return fclose(in), -1;
        continue; /* its channels skipped */
      }
      *ok_shown += !l.flagged;
      if (json && shown) fputc(',', f);
      print_kernel_head(f, &l, l.proc < 0 ? l.proc : (int32_t)(l.proc + (int32_t)j->bases[g].proc), json, cupti);
      for (uint32_t c = 0; c < l.n_ch; c++) {
        struct lens_vl_channel ch;
        if (read_rec(in, &ch, sizeof ch)) return fclose(in), -1;
        print_channel(f, &ch, json, c == 0);
      }
      if (json) fprintf(f, "]}");
      shown++;
      if (progress && !(shown & 4095))
        lens_cli_progress("writing launches", shown, limit >= 0 ? limit : (long)j->sum.launches);
    }
    fclose(in);
  }
  lens_cli_progress(NULL, -1, 0);
  return shown;
}

/* The listed channels without a launch of every group, at most limit in all;
 * with ok_capped as print_launches. */
static long print_orphans(FILE *f, const struct lens_validate_job *j, int json, long limit, int ok_capped,
                          size_t *ok_shown) {
  long shown = 0;
  size_t ok_used = 0;
  *ok_shown = 0;
  for (size_t g = 0; g < j->n_parts && (limit < 0 || shown < limit); g++) {
    const struct lens_validate_part *p = j->parts[g];
    if (!p->orphans_listed) continue;
    FILE *in = lens_spool_open(j->spool, p->spool);
    if (!in || fseeko(in, (off_t)p->orphans_at, SEEK_SET)) return in ? fclose(in), -1 : -1;
    for (size_t i = 0; i < p->orphans_listed && (limit < 0 || shown < limit); i++) {
      struct lens_vl_channel ch;
      if (read_rec(in, &ch, sizeof ch)) return fclose(in), -1;
      int flagged = (ch.flags & LENS_VALIDATE_FLAGGED) != 0;
      if (ok_capped && !flagged && !lens_fmt_json_ok_listed(&ok_used, 1, 0)) continue;
      *ok_shown += !flagged;
      print_channel(f, &ch, json, shown == 0);
      shown++;
    }
    fclose(in);
  }
  return shown;
}

int lens_validate_print(FILE *f, const struct lens_model *m, const struct lens_validate_job *j,
                        const struct lens_validate_opts *o) {
  const struct lens_validate_part *s = &j->sum;
  const struct lens_vl_cupti *r = &s->cupti;
  struct lens_validate_verdict v;
  lens_validate_judge_job(j, m, &v);
  int json = o->json;
  char note[600];
  lens_cli_progress(NULL, -1, 0);
  /* --limit bounds every list: clock maps, launches, channels without a launch. */
  long limit = o->limit;
  if (o->all) limit = -1;
  else if (limit == LENS_VALIDATE_LIMIT_DEFAULT) limit = json ? -1 : LENS_VALIDATE_TEXT_LAUNCHES;
  size_t maps_left;
  if (json) {
    print_files_json(f, m, s->file_events);
    fprintf(f,
            "\"cupti\":{\"walker\":%s,\"note\":\"%s\",\"buffers\":%zu,\"buffer_errors\":%zu,\"records\":%zu,"
            "\"kernel_records\":%zu,\"ext_corr_records\":%zu,\"api_records\":%zu,\"kernels_joined\":%zu,"
            "\"graph_kernels\":%zu,\"graph_kernels_joined\":%zu,\"graph_join\":\"%s\",\"foreign_ext_ids\":%zu,"
            "\"launches_with_ext_id\":%zu,\"launches_without_kernel\":%zu},\"clock_maps\":[",
            r->cupti_available ? "true" : "false", json_str(r->note, note, sizeof(note)), r->blobs, r->blob_errors,
            r->records, r->kernel_records, r->ext_records, r->api_records, r->kernels_joined, r->kernels_graph,
            r->kernels_graph_joined, r->graph_join, r->foreign_ext_ids, r->launches_with_ext, r->launches_no_kernel);
    maps_left = print_maps(f, m, s, 1, limit);
    fprintf(f, "],\"clock_maps_unlisted\":%zu,\"launches\":[", maps_left);
  } else {
    /* first: a big job's listing is long; wrapped under its first word */
    char vhead[64];
    snprintf(vhead, sizeof vhead, "verdict: %s: ", v.level);
    lens_fmt_wrap(f, vhead, "         ", v.text, LENS_FMT_COLUMNS);
    fprintf(f, "CUPTI: %s; %zu records in %zu buffers (%zu kernels, %zu external ids, %zu API)%s\n",
            r->cupti_available ? "libcupti walker loaded" : "libcupti absent, KernelCh-only analysis", r->records,
            r->blobs, r->kernel_records, r->ext_records, r->api_records, r->blob_errors ? ", SOME BUFFERS CORRUPT" : "");
    if (r->note[0]) lens_fmt_wrap(f, "  note: ", "        ", r->note, LENS_FMT_COLUMNS);
    char joins[512];
    snprintf(joins, sizeof joins,
             "%zu kernels joined by external id; graph replays: %zu kernels, join by %s (%zu joined);\n"
             "foreign external ids: %zu; launches without kernel record: %zu of %zu",
             r->kernels_joined, r->kernels_graph, r->graph_join, r->kernels_graph_joined, r->foreign_ext_ids,
             r->launches_no_kernel, r->launches_with_ext);
    lens_fmt_wrap(f, "  ", "    ", joins, LENS_FMT_COLUMNS);
    maps_left = print_maps(f, m, s, 0, limit);
    fprintf(f, "launches (kernels) and their channels:\n");
  }
  int ok_capped = lens_validate_ok_capped(o);
  size_t ok_shown, orphans_ok_shown;
  long shown = print_launches(f, j, json, limit, r->records > 0, ok_capped, &ok_shown);
  if (shown < 0) return lens_cli_error("validate", "cannot read back a temporary file"), 1;
  size_t unlisted = s->launches - (size_t)shown;
  if (!json && unlisted) fprintf(f, "  (%zu more launches not listed: --limit N lists more)\n", unlisted);
  if (json) fprintf(f, "],\"launches_unlisted\":%zu,\"channels_without_launch\":[", unlisted);
  else fprintf(f, "channels without a launch (graph replays, v4 traces):\n");
  long oshown = print_orphans(f, j, json, limit, ok_capped, &orphans_ok_shown);
  if (oshown < 0) return lens_cli_error("validate", "cannot read back a temporary file"), 1;
  size_t orphans_left = s->orphans - (size_t)oshown;
  if (!json && orphans_left) fprintf(f, "  (%zu more channels not listed: --limit N lists more)\n", orphans_left);
  if (json) {
    fprintf(f, "],\"channels_without_launch_unlisted\":%zu", orphans_left);
    /* What the default left out: ok items only (every flagged one is listed);
     * absent when every item is listed. */
    if (ok_capped && (ok_shown < s->launches_ok || orphans_ok_shown < s->orphans_ok))
      fprintf(f, ",\"left_out\":{\"launches_ok\":%zu,\"channels_without_launch_ok\":%zu}",
              s->launches_ok - ok_shown, s->orphans_ok - orphans_ok_shown);
    fprintf(f, ",\"totals\":{\"kernel_ch\":%zu,\"mapped\":%zu,\"checked_against_kernel\":%zu,\"flags\":{", s->kch,
            s->mapped, r->kch_cupti_checked);
    for (size_t b = 0; b < N_FLAG_NAMES; b++) fprintf(f, "%s\"%s\":%zu", b ? "," : "", flag_names[b], s->flags[b]);
    fprintf(f, "}},\"verdict\":{\"level\":\"%s\",\"text\":\"%s\"}}\n", v.level, v.text);
  } else {
    fprintf(f, "totals: %zu KernelCh, %zu mapped to host time, %zu checked against their CUPTI kernel\n", s->kch,
            s->mapped, r->kch_cupti_checked);
    /* name=count pairs, wrapped under the first */
    char counts[512];
    size_t used = 0;
    counts[0] = 0;
    for (size_t b = 0; b < N_FLAG_NAMES && used < sizeof counts; b++) {
      int w = snprintf(counts + used, sizeof counts - used, "%s%s=%zu", b ? " " : "", flag_names[b], s->flags[b]);
      if (w < 0) break;
      used += (size_t)w;
    }
    lens_fmt_wrap(f, "  flags: ", "         ", counts, LENS_FMT_COLUMNS);
  }
  return 0;
}
