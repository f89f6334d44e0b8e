/* Text and JSON output of nccl-lens validate: CUPTI join summary, clock maps,
 * per launch (kernel) and per channel detail, totals, verdict. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "export/json_out.h"

#include "analysis/gpu/gpu_analysis.h"
#include "validate_print.h"

static const char *const flag_names[] = {"stop_before_start", "non_monotonic", "shared_timer", "ring_overrun",
                                         "outside_kernel",    "no_kernel_record", "foreign_ext_id", "starved",
                                         "no_clock_map"};
#define N_FLAG_NAMES (sizeof(flag_names) / sizeof(flag_names[0]))

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

static const char *source_name(uint32_t s) {
  return s == LENS_TS_CUPTI ? "cupti" : s == LENS_TS_GPU_PTIMER ? "ptimer" : "notice";
}

static uint64_t op_launch(const struct lens_event *op) {
  return op->type == LENS_T_COLL ? op->p.coll.launch_id : op->type == LENS_T_P2P ? op->p.p2p.launch_id : 0;
}

/* "AllReduce", or with the op's user tag (NCCL 2.31+) "AllReduce, backward". */
static const char *op_func(const struct lens_event *op, char *buf, size_t len) {
  const char *f = op->type == LENS_T_COLL ? op->p.coll.func : op->type == LENS_T_P2P ? op->p.p2p.func : NULL;
  uint64_t tag = lens_event_user_tag(op);
  if (!tag) return f ? f : "?";
  char tb[32];
  snprintf(buf, len, "%s, %s", f ? f : "?", lens_tag_label(tag, tb, sizeof tb));
  return buf;
}

/* "yes" only when the channel is inside its kernel by more than the map's
 * error bound on both sides: under a map of milliseconds (notice times) the
 * bound is wider than what is judged, and the answer is "unknown". The
 * "no" comes from LENS_ACC_OUTSIDE_KERNEL (outside by more than the bound,
 * or a kernel shorter than its channels). */
static const char *inside_kernel(const struct lens_model *m, const struct lens_event *e, const struct lens_kernel *k) {
  int32_t map = lens_gpu_map_for(m, e->thread, e->p.kernel_ch.start_gpu_ns);
  if (map < 0) return "unknown";
  double tol = m->clock_maps[map].error_bound_ns - 50; /* 50 ns: %globaltimer quantisation */
  double before = (double)(int64_t)(e->acc.gpu_start_mono_ns - k->start_mono_ns);
  double after = e->acc.gpu_stop_mono_ns ? (double)(int64_t)(k->end_mono_ns - e->acc.gpu_stop_mono_ns) : before;
  return before >= tol && after >= tol ? "yes" : "unknown";
}

/* One KernelCh: text line or JSON object. kstart: kernel start for relative
 * times (0 none). */
static void print_channel(FILE *f, const struct lens_model *m, const struct lens_event *e, const struct lens_event *op,
                          int json, int first) {
  const struct lens_accuracy *a = &e->acc;
  char fl[256];
  const struct lens_kernel *k = a->cupti_kernel >= 0 ? &m->kernels[a->cupti_kernel] : NULL;
  int checked = k && k->start_mono_ns && !k->graph_id && a->gpu_start_mono_ns;
  const char *inside = !checked ? "unknown" : (a->flags & LENS_ACC_OUTSIDE_KERNEL) ? "no" : inside_kernel(m, e, k);
  int overrun = (a->flags & (LENS_ACC_RING_OVERRUN | LENS_ACC_SHARED_TIMER)) != 0;
  char ob[96];
  const char *func = op_func(op, ob, sizeof ob);
  if (json) {
    char fn[128];
    flags_text(a->flags, fl, sizeof(fl), "\",\"");
    fprintf(f,
            "%s{\"id\":%" PRIu64 ",\"channel\":%d,\"op\":\"%s\",\"func\":\"%s\",\"start_gpu_ns\":%" PRIu64
            ",\"stop_gpu_ns\":%" PRIu64 ",\"start_mono_ns\":%" PRIu64 ",\"stop_mono_ns\":%" PRIu64
            ",\"notice_lag_ns\":%" PRId64 ",\"time_source\":\"%s\",\"inside_kernel\":\"%s\",\"overrun_suspected\":%s"
            ",\"flags\":[%s%s%s]}",
            first ? "" : ",", e->id, e->p.kernel_ch.channel, lens_type_name(op->type), json_str(func, fn, sizeof(fn)),
            e->p.kernel_ch.start_gpu_ns, e->p.kernel_ch.stop_gpu_ns, a->gpu_start_mono_ns, a->gpu_stop_mono_ns,
            a->notice_lag_ns, source_name(a->time_source), inside, overrun ? "true" : "false", fl[0] ? "\"" : "", fl,
            fl[0] ? "\"" : "");
    return;
  }
  flags_text(a->flags, fl, sizeof(fl), ",");
  char span[96] = "unmapped";
  if (a->gpu_start_mono_ns) {
    uint64_t base = checked ? k->start_mono_ns : a->gpu_start_mono_ns;
    snprintf(span, sizeof(span), "%+.3f..%+.3f us%s", ((double)(int64_t)(a->gpu_start_mono_ns - base)) / 1e3,
             a->gpu_stop_mono_ns ? ((double)(int64_t)(a->gpu_stop_mono_ns - base)) / 1e3 : 0.0,
             checked ? " from kernel start" : "");
  }
  fprintf(f, "    ch %3d %-4s %-14s span %s  inside %s  notice lag %.3f us  source %s  overrun %s  flags %s\n",
          e->p.kernel_ch.channel, lens_type_name(op->type), func, span, inside, (double)a->notice_lag_ns / 1e3,
          source_name(a->time_source), overrun ? "suspected" : "no", fl[0] ? fl : "-");
}

static void print_kernel_head(FILE *f, const struct lens_model *m, const struct lens_event *l, int json) {
  const struct lens_kernel *k = l->acc.cupti_kernel >= 0 ? &m->kernels[l->acc.cupti_kernel] : NULL;
  if (json) {
    fprintf(f, "{\"launch_id\":%" PRIu64 ",\"proc\":%d,\"ext_id\":%" PRIu64 ",\"no_kernel_record\":%s,\"kernel\":", l->id,
            l->proc, l->p.kernel_launch.ext_corr_id, (l->acc.flags & LENS_ACC_NO_KERNEL_RECORD) ? "true" : "false");
    if (k)
      fprintf(f,
              "{\"index\":%d,\"correlation_id\":%u,\"device\":%u,\"stream\":%u,\"grid_x\":%u,\"graph_id\":%u,"
              "\"start_mono_ns\":%" PRIu64 ",\"end_mono_ns\":%" PRIu64 "}",
              l->acc.cupti_kernel, k->correlation_id, k->device_id, k->stream_id, k->grid_x, k->graph_id,
              k->start_mono_ns, k->end_mono_ns);
    else
      fprintf(f, "null");
    fprintf(f, ",\"channels\":[");
    return;
  }
  if (k)
    fprintf(f, "  launch %#" PRIx64 " proc %d: kernel corr %u dev %u stream %u grid %u%s, %.3f us (%" PRIu64 "..%" PRIu64 ")\n",
            l->id, l->proc, k->correlation_id, k->device_id, k->stream_id, k->grid_x, k->graph_id ? " (graph)" : "",
            (double)(k->end_mono_ns - k->start_mono_ns) / 1e3, k->start_mono_ns, k->end_mono_ns);
  else
    fprintf(f, "  launch %#" PRIx64 " proc %d: %s\n", l->id, l->proc,
            (l->acc.flags & LENS_ACC_NO_KERNEL_RECORD) ? "NO KERNEL RECORD (ext id pushed, CUPTI has none)"
                                                        : "no CUPTI kernel record");
}

/* Which Coll/P2p belongs to which launch, built once: the ops of launch
 * ordinal k (k-th KernelLaunch in event order) are ops[first[k] ..
 * first[k+1]), in event order; ops without a launch id come last. Looking
 * them up per launch by scanning every event made --json (which lists every
 * launch) quadratic: 183 s on 1 M events. */
struct launch_index {
  int32_t *ops;        /* event indices of Coll/P2p, grouped by launch ordinal */
  size_t *first;       /* n_launches + 2 entries: the last group is "no launch" */
  size_t n_launches;
};

struct op_key { int32_t proc; uint64_t id; int32_t ev; int32_t ordinal; };

static int by_key(const void *a, const void *b) {
  const struct op_key *x = a, *y = b;
  if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return (x->ev > y->ev) - (x->ev < y->ev);
}

static void launch_index_free(struct launch_index *ix) {
  free(ix->ops);
  free(ix->first);
  memset(ix, 0, sizeof *ix);
}

/* 0, or -1 out of memory. An op whose launch id names no launch of its
 * process is listed nowhere (as before); one whose (proc, id) several
 * launches share is listed under the first of them. */
static int launch_index_build(const struct lens_model *m, struct launch_index *ix) {
  memset(ix, 0, sizeof *ix);
  size_t n_l = 0, n_op = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    int t = m->events[i].type;
    n_l += t == LENS_T_KERNEL_LAUNCH;
    n_op += t == LENS_T_COLL || t == LENS_T_P2P;
  }
  struct op_key *l = malloc((n_l + 1) * sizeof *l);
  int32_t *op_of = malloc((n_op + 1) * sizeof *op_of); /* per op: its launch ordinal, n_l none, -1 unknown id */
  ix->first = calloc(n_l + 2, sizeof *ix->first);
  ix->ops = malloc((n_op + 1) * sizeof *ix->ops);
  if (!l || !op_of || !ix->first || !ix->ops) goto oom;
  ix->n_launches = n_l;
  size_t k = 0;
  for (size_t i = 0; i < m->n_events; i++)
    if (m->events[i].type == LENS_T_KERNEL_LAUNCH) {
      l[k] = (struct op_key){m->events[i].proc, m->events[i].id, (int32_t)i, (int32_t)k};
      k++;
    }
  qsort(l, n_l, sizeof *l, by_key);
  k = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *op = &m->events[i];
    if (op->type != LENS_T_COLL && op->type != LENS_T_P2P) continue;
    uint64_t id = op_launch(op);
    int32_t ord = (int32_t)n_l;
    if (id) {
      struct op_key key = {op->proc, id, -1, 0};
      size_t lo = 0, hi = n_l; /* first launch key >= (proc, id, -1) */
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (by_key(&l[mid], &key) < 0) lo = mid + 1;
        else hi = mid;
      }
      ord = lo < n_l && l[lo].proc == op->proc && l[lo].id == id ? l[lo].ordinal : -1;
    }
    op_of[k++] = ord;
    if (ord >= 0) ix->first[ord + 1]++;
  }
  for (size_t g = 1; g <= n_l + 1; g++) ix->first[g] += ix->first[g - 1];
  size_t *fill = calloc(n_l + 1, sizeof *fill);
  if (!fill) goto oom;
  k = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    int t = m->events[i].type;
    if (t != LENS_T_COLL && t != LENS_T_P2P) continue;
    int32_t ord = op_of[k++];
    if (ord >= 0) ix->ops[ix->first[ord] + fill[ord]++] = (int32_t)i;
  }
  free(fill);
  free(l);
  free(op_of);
  return 0;
oom:
  free(l);
  free(op_of);
  launch_index_free(ix);
  return -1;
}

/* Channels of every Coll/P2p of launch ordinal k (k == n_launches: ops
 * without a launch), at most max of them (-1: all); returns how many were left out. */
static size_t print_channels_of(FILE *f, const struct lens_model *m, const struct launch_index *ix, size_t k, int json,
                                long max) {
  int first = 1;
  long shown = 0;
  size_t left = 0;
  for (size_t o = ix->first[k]; o < ix->first[k + 1]; o++) {
    const struct lens_event *op = &m->events[ix->ops[o]];
    for (int32_t c = op->first_child; c >= 0; c = m->events[c].next_sibling)
      if (m->events[c].type == LENS_T_KERNEL_CH) {
        if (max >= 0 && shown >= max) {
          left++;
          continue;
        }
        print_channel(f, m, &m->events[c], op, json, first);
        first = 0;
        shown++;
      }
  }
  return left;
}

/* The clock maps, at most limit of them (-1: all); returns how many were left out. */
static size_t print_maps(FILE *f, const struct lens_model *m, int json, long limit) {
  if (!json) fprintf(f, "clock maps (host_mono = offset + slope * pTimer), per GPU = proxy thread:\n");
  if (!json && !m->n_clock_maps) fprintf(f, "  none (no KernelCh timers)\n");
  size_t n = limit >= 0 && (size_t)limit < m->n_clock_maps ? (size_t)limit : m->n_clock_maps;
  for (size_t i = 0; i < n; i++) {
    const struct lens_clock_map *c = &m->clock_maps[i];
    const char *src = c->source == LENS_TS_CUPTI ? "cupti" : "notice";
    double ppm = (c->slope - 1.0) * 1e6;
    const struct lens_gpu_report *r = lens_gpu_report_get(m);
    int fixed = r && i < r->n_segs && r->segs[i].slope_fixed;
    char drift[64];
    if (fixed) snprintf(drift, sizeof(drift), "not measured (span too short)");
    else snprintf(drift, sizeof(drift), "%+.3f ppm", ppm);
    if (json)
      fprintf(f,
              "%s{\"proc\":%d,\"thread\":%d,\"rank\":%d,\"gpu_from\":%" PRIu64 ",\"gpu_to\":%" PRIu64
              ",\"offset_at_from_ns\":%" PRId64 ",\"drift_ppm\":%.4f,\"drift_measured\":%s,\"residual_ns\":%.1f,\"error_bound_ns\":%.1f,"
              "\"points\":%u,\"source\":\"%s\"}",
              i ? "," : "", c->proc, c->thread, c->rank, c->gpu_from, c->gpu_to,
              (int64_t)(lens_gpu_map_ns(m, (int32_t)i, c->gpu_from) - c->gpu_from), ppm, fixed ? "false" : "true",
              c->residual_ns, c->error_bound_ns, c->n_points, src);
    else
      fprintf(f,
              "  proc %d rank %d thread %d: source %s, GPU %.3f s of time, host - gpu = %" PRId64
              " ns at start, drift %s, residual %.1f ns, error bound %.1f ns, %u points\n",
              c->proc, c->rank, c->thread, src, (double)(c->gpu_to - c->gpu_from) / 1e9,
              (int64_t)(lens_gpu_map_ns(m, (int32_t)i, c->gpu_from) - c->gpu_from), drift, c->residual_ns,
              c->error_bound_ns, c->n_points);
  }
  size_t left = m->n_clock_maps - n;
  if (!json && left) fprintf(f, "  (%zu more clock maps not listed: --limit N lists more)\n", left);
  return left;
}

/* Which files were read, intact or cut, and how many events each gave, as
 * in summary's JSON: a validation of a cut trace must say so. Opens the
 * object ("{\"files\":[...],"). */
static void print_files_json(FILE *f, const struct lens_model *m) {
  uint64_t *ev = calloc(m->n_files + 1, sizeof *ev);
  for (size_t i = 0; ev && i < m->n_events; i++) {
    int32_t p = m->events[i].proc;
    if (p >= 0 && (size_t)p < m->n_procs && m->procs[p].file >= 0 && (size_t)m->procs[p].file < m->n_files)
      ev[m->procs[p].file]++;
  }
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
    if (ev) fprintf(f, "%" PRIu64 "}", ev[i]);
    else fputs("null}", f);
  }
  fputs("],", f);
  free(ev);
}

int lens_validate_print(FILE *f, const struct lens_model *m, const struct lens_validate_opts *o) {
  const struct lens_gpu_report *r = lens_gpu_report_get(m);
  struct lens_gpu_report none;
  if (!r) {
    memset(&none, 0, sizeof(none));
    none.graph_join = "none";
    r = &none;
  }
  struct lens_validate_verdict v;
  lens_validate_judge(m, &v);
  int json = o->json;
  char note[600];
  /* A progress line (stderr, a terminal) while launches are written, unless
   * the output shares that terminal. */
  int progress = !isatty(fileno(f));
  lens_cli_progress(NULL, -1, 0);
  /* --limit bounds every list: clock maps, launches, channels without a launch. */
  long limit = o->limit;
  if (limit == LENS_VALIDATE_LIMIT_DEFAULT) limit = json ? -1 : LENS_VALIDATE_TEXT_LAUNCHES;
  size_t maps_left;
  if (json) {
    print_files_json(f, m);
    fprintf(f,
            "\"cupti\":{\"walker\":%s,\"note\":\"%s\",\"buffers\":%zu,\"buffer_errors\":%zu,\"records\":%zu,"
            "\"kernel_records\":%zu,\"ext_corr_records\":%zu,\"api_records\":%zu,\"kernels_joined\":%zu,"
            "\"graph_kernels\":%zu,\"graph_kernels_joined\":%zu,\"graph_join\":\"%s\",\"foreign_ext_ids\":%zu,"
            "\"launches_with_ext_id\":%zu,\"launches_without_kernel\":%zu},\"clock_maps\":[",
            r->cupti_available ? "true" : "false", json_str(r->cupti_note, note, sizeof(note)), r->blobs, r->blob_errors, r->records,
            r->kernel_records, r->ext_records, r->api_records, r->kernels_joined, r->kernels_graph,
            r->kernels_graph_joined, r->graph_join, r->foreign_ext_ids, r->launches_with_ext, r->launches_no_kernel);
    maps_left = print_maps(f, m, 1, limit);
    fprintf(f, "],\"clock_maps_unlisted\":%zu,\"launches\":[", maps_left);
  } else {
    fprintf(f, "verdict: %s: %s\n", v.level, v.text); /* first: a big job's listing is long */
    fprintf(f, "CUPTI: %s; %zu records in %zu buffers (%zu kernels, %zu external ids, %zu API)%s\n",
            r->cupti_available ? "libcupti walker loaded" : "libcupti absent, KernelCh-only analysis", r->records,
            r->blobs, r->kernel_records, r->ext_records, r->api_records, r->blob_errors ? ", SOME BUFFERS CORRUPT" : "");
    if (r->cupti_note[0]) fprintf(f, "  note: %s\n", r->cupti_note);
    fprintf(f,
            "  %zu kernels joined by external id; graph replays: %zu kernels, join by %s (%zu joined); foreign "
            "external ids: %zu; launches without kernel record: %zu of %zu\n",
            r->kernels_joined, r->kernels_graph, r->graph_join, r->kernels_graph_joined, r->foreign_ext_ids,
            r->launches_no_kernel, r->launches_with_ext);
    maps_left = print_maps(f, m, 0, limit);
    fprintf(f, "launches (kernels) and their channels:\n");
  }
  long shown = 0;
  size_t unlisted = 0;
  int first = 1;
  struct launch_index ix;
  if (launch_index_build(m, &ix)) {
    fprintf(stderr, "nccl-lens validate: out of memory indexing launches\n");
    return 1;
  }
  size_t k = 0; /* launch ordinal */
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *l = &m->events[i];
    if (l->type != LENS_T_KERNEL_LAUNCH) continue;
    k++;
    if (limit >= 0 && shown >= limit) {
      unlisted++;
      continue;
    }
    if (json && !first) fputc(',', f);
    first = 0;
    print_kernel_head(f, m, l, json);
    print_channels_of(f, m, &ix, k - 1, json, -1);
    if (json) fprintf(f, "]}");
    shown++;
    if (progress && !(shown & 4095)) lens_cli_progress("writing launches", shown, limit >= 0 ? limit : (long)ix.n_launches);
  }
  lens_cli_progress(NULL, -1, 0);
  if (!json && unlisted) fprintf(f, "  (%zu more launches not listed: --limit N lists more)\n", unlisted);
  if (json) fprintf(f, "],\"launches_unlisted\":%zu,\"channels_without_launch\":[", unlisted);
  else fprintf(f, "channels without a launch (graph replays, v4 traces):\n");
  size_t orphans_left = print_channels_of(f, m, &ix, ix.n_launches, json, limit);
  if (!json && orphans_left) fprintf(f, "  (%zu more channels not listed: --limit N lists more)\n", orphans_left);
  launch_index_free(&ix);
  size_t fc[N_FLAG_NAMES];
  memset(fc, 0, sizeof(fc));
  size_t kch = 0, mapped = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->type != LENS_T_KERNEL_CH) continue;
    kch++;
    mapped += e->acc.gpu_start_mono_ns != 0;
    for (size_t b = 0; b < N_FLAG_NAMES; b++) fc[b] += (e->acc.flags >> b) & 1;
  }
  if (json) {
    fprintf(f, "],\"channels_without_launch_unlisted\":%zu", orphans_left);
    fprintf(f, ",\"totals\":{\"kernel_ch\":%zu,\"mapped\":%zu,\"checked_against_kernel\":%zu,\"flags\":{", kch, mapped,
            r->kch_cupti_checked);
    for (size_t b = 0; b < N_FLAG_NAMES; b++) fprintf(f, "%s\"%s\":%zu", b ? "," : "", flag_names[b], fc[b]);
    fprintf(f, "}},\"verdict\":{\"level\":\"%s\",\"text\":\"%s\"}}\n", v.level, v.text);
  } else {
    fprintf(f, "totals: %zu KernelCh, %zu mapped to host time, %zu checked against their CUPTI kernel\n", kch, mapped,
            r->kch_cupti_checked);
    fprintf(f, "  flags:");
    for (size_t b = 0; b < N_FLAG_NAMES; b++) fprintf(f, " %s=%zu", flag_names[b], fc[b]);
    fputc('\n', f);
  }
  return 0;
}
