/* Text and JSON forms of the hang diagnosis. JSON contract in docs/hang.md. */
#include "hang/hang_print.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/format.h"
#include "export/json_out.h"

static uint32_t pid_of(const struct lens_model *m, int32_t proc) {
  return proc >= 0 && (size_t)proc < m->n_procs ? m->procs[proc].pid : 0;
}
static uint32_t tid_of(const struct lens_model *m, int32_t thread) {
  return thread >= 0 && (size_t)thread < m->n_threads ? m->threads[thread].tid : 0;
}

/* Text lines stay within 120 columns: long rank lists wrap, indented. */
#define HANG_COLUMNS 120

static double secs(uint64_t a, uint64_t b) { return a > b ? (double)(a - b) / 1e9 : 0.0; }

/* At the scale of a job (a thousand ranks stuck alike) a line per rank,
 * channel, op and proxy thread buries the one rank that differs. Past
 * LENS_FMT_LIST_ROWS lines a section's alike lines become one line with the
 * ranks as ranges; --all lists each (the JSON always has every item). */
static int grouped(size_t lines, int all) { return !all && lines > LENS_FMT_LIST_ROWS; }
/* Ops and threads alike in groups this small keep their own lines (a peer, a
 * repeat count, a thread id say more than a range of one or two ranks). */
#define HANG_GROUP_MIN 4

/* Sorted, distinct ranks (or channels) as ranges ("0-55,57-63", each run as
 * lens_fmt_run writes it) after a prefix of col columns, wrapped onto
 * indented lines at a run's end; uncapped, unlike lens_fmt_ranges (hang
 * names every rank). Returns the column it ends at. */
static int rank_ranges(FILE *f, const int32_t *r, size_t n, int col) {
  int first = 1;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && r[j + 1] == r[j] + 1) j++;
    char b[32];
    int len = lens_fmt_run(b, sizeof b, r[i], r[j]);
    if (!first && col + 1 + len > HANG_COLUMNS) {
      fputs(",\n    ", f);
      col = 4;
    } else if (!first) {
      fputc(',', f);
      col++;
    }
    fputs(b, f);
    col += len;
    first = 0;
    i = j + 1;
  }
  return col;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* A line's key and a rank: lines of one section sorted by key, then rank,
 * print one line per key (O(n log n) whatever the input). */
struct gkey { int64_t k[4]; int32_t rank; uint32_t idx; /* the item's index in its list */ };
static int cmp_gkey(const void *x, const void *y) {
  const struct gkey *a = x, *b = y;
  for (int i = 0; i < 4; i++)
    if (a->k[i] != b->k[i]) return a->k[i] < b->k[i] ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}
static int same_key(const struct gkey *a, const struct gkey *b) { return !memcmp(a->k, b->k, sizeof a->k); }
/* The ranks of keys [i, j) into buf, distinct and sorted (keys come sorted by rank within a key). */
static size_t group_ranks(const struct gkey *g, size_t i, size_t j, int32_t *buf) {
  size_t n = 0;
  for (size_t q = i; q < j; q++)
    if (!n || buf[n - 1] != g[q].rank) buf[n++] = g[q].rank;
  return n;
}

static const char *rank_status(const struct lens_hang_rank *x) {
  return x->stuck ? "stuck in it" : x->entered ? "entered" : "NEVER ENTERED";
}

/* The ranks' table as one line per (status, last started, last completed):
 * the ranks that never entered first. */
static void ranks_grouped(FILE *f, const struct lens_hang_comm *c, int fi, struct gkey *g, int32_t *buf) {
  size_t n = 0;
  for (int32_t r = 0; r < c->nranks; r++) {
    const struct lens_hang_rank *x = &c->ranks[r];
    if (x->proc < 0) continue;
    g[n++] = (struct gkey){{x->stuck ? 2 : x->entered ? 1 : 0, fi >= 0 ? x->last_started[fi] : -1,
                            fi >= 0 ? x->last_completed[fi] : -1, 0}, r, 0};
  }
  qsort(g, n, sizeof *g, cmp_gkey);
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && same_key(&g[i], &g[j]);) j++;
    size_t k = group_ranks(g, i, j, buf);
    int col = fprintf(f, "  %zu rank%s %s (last started %" PRId64 ", last completed %" PRId64 "): ", k,
                      k == 1 ? "" : "s", rank_status(&c->ranks[g[i].rank]), g[i].k[1], g[i].k[2]);
    rank_ranges(f, buf, k, col);
    fputc('\n', f);
  }
}

/* "kernel never stopped" as one line per set of channels (channels 0-127 by
 * bit; any higher ones only counted in the key). */
static void kch_grouped(FILE *f, const struct lens_hang_comm *c, struct gkey *g, int32_t *buf) {
  size_t n = 0;
  for (size_t i = 0; i < c->n_kch; i++) g[n++] = (struct gkey){{0, 0, 0, c->kch[i].channel}, c->kch[i].rank, 0};
  /* by rank: each rank's channels into one key */
  for (size_t i = 0; i < n; i++) g[i].k[0] = g[i].rank;
  qsort(g, n, sizeof *g, cmp_gkey);
  size_t m = 0;
  for (size_t i = 0, j; i < n; i = j) {
    uint64_t lo = 0, hi = 0, more = 0;
    for (j = i; j < n && g[j].rank == g[i].rank; j++) {
      int64_t ch = g[j].k[3];
      if (ch >= 0 && ch < 64) lo |= 1ull << ch;
      else if (ch >= 64 && ch < 128) hi |= 1ull << (ch - 64);
      else more++;
    }
    g[m++] = (struct gkey){{(int64_t)lo, (int64_t)hi, (int64_t)more, 0}, g[i].rank, 0};
  }
  qsort(g, m, sizeof *g, cmp_gkey);
  for (size_t i = 0, j; i < m; i = j) {
    for (j = i + 1; j < m && same_key(&g[i], &g[j]);) j++;
    size_t k = group_ranks(g, i, j, buf);
    uint64_t lo = (uint64_t)g[i].k[0], hi = (uint64_t)g[i].k[1];
    int nch = __builtin_popcountll(lo) + __builtin_popcountll(hi) + (int)g[i].k[2];
    int col = fprintf(f, "  kernel never stopped on channel%s ", nch == 1 ? "" : "s");
    int32_t chs[128]; /* as ranges too: 64 channels would be 180 columns */
    size_t nc = 0;
    for (int ch = 0; ch < 128; ch++)
      if (ch < 64 ? lo >> ch & 1 : hi >> (ch - 64) & 1) chs[nc++] = ch;
    col = rank_ranges(f, chs, nc, col);
    if (g[i].k[2]) col += fprintf(f, "%s%" PRId64 " past 127", nc ? " and " : "", g[i].k[2]);
    col += fprintf(f, ", %zu rank%s: ", k, k == 1 ? "" : "s");
    rank_ranges(f, buf, k, col);
    fputc('\n', f);
  }
}

/* One proxy op in flight; what it means on a line of its own (the two stay
 * within 120 columns). */
static void wait_line(FILE *f, const struct lens_hang_wait *w) {
  fprintf(f, "  rank %d %s peer %d, channel %d: step %d, %s", w->rank, w->is_send ? "send to" : "recv from", w->peer,
          w->channel, w->step, w->state ? lens_state_name(w->state) : "-");
  if (w->state_repeats > 1)
    fprintf(f, ", recorded %" PRIu64 " times over %.3f s", w->state_repeats, secs(w->state_last_ns, w->state_since_ns));
  fprintf(f, "\n      %s\n", lens_hang_state_meaning(w->state, w->is_send, w->step_started));
}

/* The proxy ops in flight keyed by (direction, step, state) and sorted: the
 * text's groups and the page's (lens_hang_print_wait_groups_json). */
static size_t wait_keys(const struct lens_hang_comm *c, struct gkey *g) {
  size_t n = 0;
  for (size_t i = 0; i < c->n_waiting; i++) {
    const struct lens_hang_wait *w = &c->waiting[i];
    g[n++] = (struct gkey){{w->is_send, w->step, w->state, w->step_started}, w->rank, (uint32_t)i};
  }
  qsort(g, n, sizeof *g, cmp_gkey);
  return n;
}

/* One group of wait_keys' sorted keys: [i, j), its k distinct ranks in
 * the caller's buffer, and its key. */
struct wait_group {
  size_t i, j, k;
  int is_send, started;
  int64_t step;
  uint32_t state;
};
/* The group starting at *at (the text's and the page's walk); 0 past the end. */
static int next_wait_group(const struct gkey *g, size_t n, size_t *at, int32_t *buf, struct wait_group *w) {
  size_t i = *at, j;
  if (i >= n) return 0;
  for (j = i + 1; j < n && same_key(&g[i], &g[j]);) j++;
  *w = (struct wait_group){i, j, group_ranks(g, i, j, buf), (int)g[i].k[0], (int)g[i].k[3], g[i].k[1],
                           (uint32_t)g[i].k[2]};
  *at = j;
  return 1;
}

/* The proxy ops in flight as one line per (direction, step, state); a group
 * of HANG_GROUP_MIN or fewer keeps a line each. */
static void waiting_grouped(FILE *f, const struct lens_hang_comm *c, struct gkey *g, int32_t *buf) {
  size_t n = wait_keys(c, g), at = 0;
  struct wait_group w;
  while (next_wait_group(g, n, &at, buf, &w)) {
    size_t ops = w.j - w.i;
    if (ops <= HANG_GROUP_MIN) { /* a few: each with its peer, channel and repeats */
      for (size_t q = w.i; q < w.j; q++) wait_line(f, &c->waiting[g[q].idx]);
      continue;
    }
    int col = fprintf(f, "  %zu %s in flight at step %" PRId64 ", %s, on %zu rank%s: ", ops,
                      w.is_send ? (ops == 1 ? "send" : "sends") : (ops == 1 ? "receive" : "receives"), w.step,
                      w.state ? lens_state_name(w.state) : "-", w.k, w.k == 1 ? "" : "s");
    rank_ranges(f, buf, w.k, col);
    fprintf(f, "\n      %s\n", lens_hang_state_meaning(w.state, w.is_send, w.started));
  }
}

void lens_hang_print_wait_groups_json(FILE *f, const struct lens_hang_comm *c) {
  struct gkey *g = malloc((c->n_waiting + 1) * sizeof *g);
  int32_t *buf = malloc((c->n_waiting + 1) * sizeof *buf);
  fputc('[', f);
  if (g && buf) {
    size_t n = wait_keys(c, g), at = 0;
    struct wait_group w;
    for (int first = 1; next_wait_group(g, n, &at, buf, &w); first = 0) {
      char rl[1024];
      struct lens_fmt_ranges r;
      lens_fmt_ranges_begin(&r, rl, sizeof rl, 64);
      for (size_t q = 0; q < w.k; q++) lens_fmt_ranges_add(&r, buf[q], buf[q]);
      fprintf(f, "%s{\"send\":%s,\"step\":%" PRId64 ",\"state\":", first ? "" : ",", w.is_send ? "true" : "false",
              w.step);
      lens_json_str(f, lens_hang_state_meaning(w.state, w.is_send, w.started));
      fprintf(f, ",\"ops\":%zu,\"n_ranks\":%zu,\"ranks\":", w.j - w.i, w.k);
      lens_json_str(f, lens_fmt_ranges_end(&r));
      fputc('}', f);
    }
  }
  fputc(']', f);
  free(g);
  free(buf);
}

static void comm_text(FILE *f, const struct lens_model *m, const struct lens_hang_comm *c, int all, int *any_grouped) {
  char id[LENS_COMM_ID_LEN];
  fprintf(f, "communicator %s (id %s, %d ranks): ", lens_fmt_comm_name(c->name), lens_fmt_comm_id(c->comm_id, id),
          c->nranks);
  if (!c->stuck) {
    fprintf(f, "no collective left in flight\n");
    return;
  }
  int fi = c->stuck_func;
  const char *func = fi >= 0 ? c->funcs[fi] : "?";
  fprintf(f, "STUCK at %s seq %" PRId64 "\n", func, c->stuck_seq);
  if (c->n_missing) {
    int col = fprintf(f, "  never entered it: rank%s ", c->n_missing > 1 ? "s" : "");
    rank_ranges(f, c->missing, c->n_missing, col);
    fputc('\n', f);
  }
  if (c->n_untraced) {
    int col = fprintf(f, "  no trace loaded for rank%s ", c->n_untraced > 1 ? "s" : "");
    rank_ranges(f, c->untraced, c->n_untraced, col);
    fputc('\n', f);
  }
  size_t loaded = 0;
  for (int32_t r = 0; r < c->nranks; r++) loaded += c->ranks[r].proc >= 0;
  size_t most = loaded > c->n_kch ? loaded : c->n_kch;
  most = most > c->n_waiting ? most : c->n_waiting;
  int32_t *buf = malloc(most * sizeof *buf + 1);
  struct gkey *g = malloc(most * sizeof *g + 1);
  int ok = buf && g; /* without the memory: a line each, as --all */
  int g_ranks = ok && grouped(loaded, all), g_kch = ok && grouped(c->n_kch, all),
      g_wait = ok && grouped(c->n_waiting, all);
  *any_grouped |= g_ranks | g_kch | g_wait;
  if (g_ranks) ranks_grouped(f, c, fi, g, buf);
  else fprintf(f, "  %-6s %-8s %-14s %-16s %s\n", "rank", "pid", "last started", "last completed", func);
  for (int32_t r = 0; r < c->nranks && !g_ranks; r++) {
    const struct lens_hang_rank *x = &c->ranks[r];
    if (x->proc < 0) continue;
    fprintf(f, "  %-6d %-8u %-14" PRId64 " %-16" PRId64 " %s\n", r, pid_of(m, x->proc), fi >= 0 ? x->last_started[fi] : -1,
            fi >= 0 ? x->last_completed[fi] : -1, rank_status(x));
  }
  if (g_kch) kch_grouped(f, c, g, buf);
  for (size_t i = 0; i < c->n_kch && !g_kch; i++) {
    const struct lens_hang_kch *k = &c->kch[i];
    fprintf(f, "  rank %d channel %d: kernel never stopped\n", k->rank, k->channel);
  }
  if (g_wait) waiting_grouped(f, c, g, buf);
  for (size_t i = 0; i < c->n_waiting && !g_wait; i++) wait_line(f, &c->waiting[i]);
  free(buf), free(g);
}

/* Flight-recorder dumps among the inputs, grouped by why they were written
 * (the plugin's NOTE: lens_parse_dump_note): a hang read from dumps says so,
 * and says when a store had evicted its oldest history before dumping (what
 * a rank did before its oldest event is then not in its file). */
#define DUMP_REASONS 8
struct dump_reason { char why[160]; size_t dumps, evicting; uint64_t chunks, records; };
static size_t dump_reasons(const struct lens_model *m, struct dump_reason *v) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_notes; i++) {
    struct lens_dump_note d;
    if (!lens_parse_dump_note(m->notes[i].text, &d)) continue;
    size_t k = 0;
    while (k < n && strcmp(v[k].why, d.why)) k++;
    if (k == n) {
      if (n == DUMP_REASONS) k = n - 1, snprintf(v[k].why, sizeof v[k].why, "other reasons");
      else memset(&v[n], 0, sizeof v[n]), snprintf(v[n].why, sizeof v[n].why, "%s", d.why), n++;
    }
    v[k].dumps++;
    v[k].evicting += d.evicted_chunks > 0;
    v[k].chunks += d.evicted_chunks;
    v[k].records += d.evicted_records;
  }
  return n;
}

static void dumps_text(FILE *f, const struct lens_model *m) {
  struct dump_reason v[DUMP_REASONS];
  size_t n = dump_reasons(m, v);
  for (size_t k = 0; k < n; k++) {
    fprintf(f, "%zu flight-recorder dump%s (why: %s)\n", v[k].dumps, v[k].dumps == 1 ? "" : "s", v[k].why);
    if (v[k].evicting)
      fprintf(f, "  %zu had evicted older history first (%" PRIu64 " chunks, %" PRIu64 " event records): what their "
                 "ranks did before their oldest event is not in them\n",
              v[k].evicting, v[k].chunks, v[k].records);
  }
}

static void dumps_json(FILE *f, const struct lens_model *m) {
  struct dump_reason v[DUMP_REASONS];
  size_t n = dump_reasons(m, v);
  fputs(",\n\"recorder_dumps\":[", f);
  for (size_t k = 0; k < n; k++) {
    fputs(k ? ",{\"why\":" : "{\"why\":", f);
    lens_json_str(f, v[k].why);
    fprintf(f, ",\"dumps\":%zu,\"evicting\":%zu,\"evicted_chunks\":%" PRIu64 ",\"evicted_event_records\":%" PRIu64
               "}",
            v[k].dumps, v[k].evicting, v[k].chunks, v[k].records);
  }
  fputc(']', f);
}

/* The verdict on a proxy thread (docs/hang.md), one rule for its line, the
 * grouped lines, the JSON and the headline; the first four group. */
enum proxy_kind { PROXY_NOTHING, PROXY_CYCLING, PROXY_WAITING, PROXY_SILENT, PROXY_FROZEN };
static enum proxy_kind proxy_kind(const struct lens_hang_proxy *p) {
  if (!p->last_record_ns) return PROXY_NOTHING;
  if (p->recording) return PROXY_CYCLING;
  if (p->frozen) return PROXY_FROZEN;
  return p->waiting_only ? PROXY_WAITING : PROXY_SILENT;
}

/* A proxy thread's verdict as its own line (the --all form, and a frozen one always). */
static void proxy_line(FILE *f, const struct lens_model *m, const struct lens_hang_proxy *p) {
  fprintf(f, "  pid %u tid %u (rank %d): ", pid_of(m, p->proc), tid_of(m, p->thread), p->rank);
  enum proxy_kind kind = proxy_kind(p);
  if (kind == PROXY_NOTHING)
    fprintf(f, "recorded nothing\n");
  else if (kind == PROXY_CYCLING)
    fprintf(f, "still recording %.3f s before the end of its trace: cycling\n", secs(p->trace_end_ns, p->last_record_ns));
  else if (kind == PROXY_FROZEN)
    fprintf(f, "FROZEN: silent for the last %.3f s of its trace\n      while rank %d's send (channel %d) waits for "
               "its credit at step %d, which its receive posted\n",
            secs(p->trace_end_ns, p->last_record_ns), p->blocked_rank, p->blocked_channel, p->blocked_step);
  else if (kind == PROXY_WAITING)
    fprintf(f, "no record for the last %.3f s of its trace:\n      its ops wait on their GPU or peer (above); "
               "NCCL records nothing then, nothing says it stopped\n",
            secs(p->trace_end_ns, p->last_record_ns));
  else
    fprintf(f, "silent for the last %.3f s of its trace:\n      stopped, or polling receives (NCCL records nothing then)\n",
            secs(p->trace_end_ns, p->last_record_ns));
}

/* The proxy threads but the frozen ones (each on its line) as one line per
 * verdict, with the range of their silences and their ranks. */
static void proxies_grouped(FILE *f, const struct lens_model *m, const struct lens_hang_report *h) {
  int32_t *buf = malloc(h->n_proxies * sizeof *buf + 1);
  if (!buf) return;
  static const char *const what[] = {
      [PROXY_NOTHING] = "recorded nothing",
      [PROXY_CYCLING] = "still recording before the end of their traces: cycling",
      [PROXY_WAITING] = "with no record for the last %.3f-%.3f s of their traces:\n      their ops wait on their GPU or peer "
            "(above); NCCL records nothing then, nothing says they stopped",
      [PROXY_SILENT] = "silent for the last %.3f-%.3f s of their traces:\n      stopped, or polling receives (NCCL records "
            "nothing then)"};
  for (size_t i = 0; i < h->n_proxies; i++)
    if (proxy_kind(&h->proxies[i]) == PROXY_FROZEN) proxy_line(f, m, &h->proxies[i]);
  for (enum proxy_kind v = PROXY_NOTHING; v < PROXY_FROZEN; v++) {
    size_t n = 0, unknown = 0;
    double lo = 0, hi = 0;
    for (size_t i = 0; i < h->n_proxies; i++) {
      const struct lens_hang_proxy *p = &h->proxies[i];
      if (proxy_kind(p) != v) continue;
      double sec = secs(p->trace_end_ns, p->last_record_ns);
      if (!n && !unknown) lo = hi = sec;
      lo = sec < lo ? sec : lo, hi = sec > hi ? sec : hi;
      if (p->rank >= 0) buf[n++] = p->rank;
      else unknown++;
    }
    if (!n && !unknown) continue;
    if (n + unknown <= HANG_GROUP_MIN) { /* a few: each with its pid, tid and silence */
      for (size_t i = 0; i < h->n_proxies; i++) {
        const struct lens_hang_proxy *p = &h->proxies[i];
        if (proxy_kind(p) == v) proxy_line(f, m, p);
      }
      continue;
    }
    qsort(buf, n, sizeof *buf, cmp_i32);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (!k || buf[k - 1] != buf[i]) buf[k++] = buf[i];
    int col = fprintf(f, "  %zu thread%s of rank%s ", n + unknown, n + unknown == 1 ? "" : "s", k == 1 ? "" : "s");
    rank_ranges(f, buf, k, col);
    if (unknown) fprintf(f, "%s%zu of no known rank", k ? " and " : "", unknown);
    fputs(": ", f);
    fprintf(f, what[v], lo, hi);
    fputc('\n', f);
  }
  free(buf);
}

void lens_hang_print_text(FILE *f, const struct lens_model *m, const struct lens_hang_report *h, int all) {
  dumps_text(f, m);
  if (!h->n_comms) fprintf(f, "no communicators in these traces\n");
  int any_grouped = 0;
  for (size_t i = 0; i < h->n_comms; i++) comm_text(f, m, &h->comms[i], all, &any_grouped);
  if (h->n_proxies) {
    fprintf(f, "proxy threads of the processes with stuck ranks:\n");
    if (grouped(h->n_proxies, all)) {
      proxies_grouped(f, m, h);
      any_grouped = 1;
    } else {
      for (size_t i = 0; i < h->n_proxies; i++) proxy_line(f, m, &h->proxies[i]);
    }
  }
  if (any_grouped)
    fprintf(f, "(alike ranks, channels, ops and threads on one line each past %d lines: --all lists every one, "
               "--json has them)\n",
            LENS_FMT_LIST_ROWS);
}

/* The verdict on a proxy thread, as JSON and the headline name it. */
static const char *proxy_verdict(const struct lens_hang_proxy *p) {
  static const char *const name[] = {[PROXY_NOTHING] = "nothing_recorded", [PROXY_CYCLING] = "cycling",
                                     [PROXY_WAITING] = "waiting", [PROXY_SILENT] = "silent", [PROXY_FROZEN] = "frozen"};
  return name[proxy_kind(p)];
}

/* One comm's headline: "AllReduce seq 3 of replay-world stuck on 3 of 4 ranks, never entered by rank 2"
 * (the comm's id when it has no name). */
static void comm_headline(FILE *f, const struct lens_hang_report *h, const struct lens_hang_comm *c, int md) {
  int stuck = 0;
  for (int32_t r = 0; r < c->nranks; r++) stuck += c->ranks[r].stuck;
  const char *func = c->stuck_func >= 0 ? c->funcs[c->stuck_func] : "?";
  char id[LENS_COMM_ID_LEN];
  const char *name = c->name[0] ? c->name : lens_fmt_comm_id(c->comm_id, id);
  /* Markdown: the names from the trace escaped (format.h, lens_fmt_md) */
  if (md) lens_fmt_md_put(f, func);
  else fputs(func, f);
  fprintf(f, " seq %" PRId64 " of ", c->stuck_seq);
  if (md) lens_fmt_md_put(f, name);
  else fputs(name, f);
  fprintf(f, " stuck on %d of %d ranks", stuck, c->nranks);
  if (c->n_missing) {
    fprintf(f, ", never entered by rank%s", c->n_missing > 1 ? "s" : "");
    for (size_t i = 0; i < c->n_missing; i++) fprintf(f, "%s%d", i ? "," : " ", c->missing[i]);
  }
  int any = 0;
  for (size_t i = 0; i < h->n_proxies; i++) {
    const struct lens_hang_proxy *p = &h->proxies[i];
    if (!p->frozen || p->rank < 0 || p->rank >= c->nranks || c->ranks[p->rank].proc != p->proc) continue;
    fprintf(f, "%s%d", any ? "," : ", frozen proxy of rank ", p->rank);
    any = 1;
  }
}

void lens_hang_print_headline(FILE *f, const struct lens_hang_report *h) {
  if (!h->n_stuck_comms) return;
  fputs("hang: ", f);
  int n = 0;
  for (size_t i = 0; i < h->n_comms; i++) {
    if (!h->comms[i].stuck) continue;
    if (n++) fputs("; ", f);
    comm_headline(f, h, &h->comms[i], 0);
  }
  fputs(": see nccl-lens hang\n", f);
}

void lens_hang_print_headline_md(FILE *f, const struct lens_hang_report *h) {
  if (!h->n_stuck_comms) return;
  fputs("- **Hang: ", f);
  int n = 0;
  for (size_t i = 0; i < h->n_comms; i++) {
    if (!h->comms[i].stuck) continue;
    if (n++) fputs("; ", f);
    comm_headline(f, h, &h->comms[i], 1);
  }
  fputs("**. The hang diagnosis above has what each stuck rank's channels and proxy ops wait for; `nccl-lens hang` "
        "exits 3 on such traces.\n", f);
}

void lens_hang_print_headline_json(FILE *f, const struct lens_hang_report *h) {
  if (!h) {
    fputs("null", f);
    return;
  }
  fprintf(f, "{\"stuck\":%s,\"stuck_communicators\":%zu,\"communicators\":[", h->n_stuck_comms ? "true" : "false",
          h->n_stuck_comms);
  int n = 0;
  for (size_t i = 0; i < h->n_comms; i++) {
    const struct lens_hang_comm *c = &h->comms[i];
    if (!c->stuck) continue;
    int stuck = 0;
    for (int32_t r = 0; r < c->nranks; r++) stuck += c->ranks[r].stuck;
    fputs(n++ ? ",{\"comm_id\":" : "{\"comm_id\":", f);
    lens_json_comm_id(f, c->comm_id);
    fputs(",\"name\":", f);
    lens_json_str(f, c->name[0] ? c->name : NULL);
    fputs(",\"func\":", f);
    lens_json_str(f, c->stuck_func >= 0 ? c->funcs[c->stuck_func] : NULL);
    fprintf(f, ",\"seq\":%" PRId64 ",\"nranks\":%d,\"stuck_ranks\":%d,\"missing_ranks\":[", c->stuck_seq, c->nranks,
            stuck);
    for (size_t k = 0; k < c->n_missing; k++) fprintf(f, "%s%d", k ? "," : "", c->missing[k]);
    fputs("],\"frozen_proxy_ranks\":[", f);
    int any = 0;
    for (size_t k = 0; k < h->n_proxies; k++) {
      const struct lens_hang_proxy *p = &h->proxies[k];
      if (!p->frozen || p->rank < 0 || p->rank >= c->nranks || c->ranks[p->rank].proc != p->proc) continue;
      fprintf(f, "%s%d", any++ ? "," : "", p->rank);
    }
    fputs("]}", f);
  }
  fputs("]}", f);
}

static void per_func(FILE *f, const struct lens_hang_comm *c, const struct lens_hang_rank *r, int completed) {
  fputc('{', f);
  for (size_t i = 0; i < c->n_funcs; i++) {
    if (i) fputc(',', f);
    lens_json_key(f, c->funcs[i]);
    fprintf(f, "%" PRId64, completed ? r->last_completed[i] : r->last_started[i]);
  }
  fputc('}', f);
}

static void ints(FILE *f, const int32_t *v, size_t n) {
  fputc('[', f);
  for (size_t i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", v[i]);
  fputc(']', f);
}

static void comm_json(FILE *f, const struct lens_model *m, const struct lens_hang_comm *c) {
  fputs("{\"comm_id\":", f);
  lens_json_comm_id(f, c->comm_id);
  fputs(",\"name\":", f);
  lens_json_str(f, c->name[0] ? c->name : NULL);
  fprintf(f, ",\"nranks\":%d,\"stuck\":%s,\"stuck_func\":", c->nranks, c->stuck ? "true" : "false");
  lens_json_str(f, c->stuck_func >= 0 ? c->funcs[c->stuck_func] : NULL);
  if (c->stuck) fprintf(f, ",\"stuck_seq\":%" PRId64, c->stuck_seq);
  else fputs(",\"stuck_seq\":null", f);
  fputs(",\"missing_ranks\":", f);
  ints(f, c->missing, c->n_missing);
  fputs(",\"untraced_ranks\":", f);
  ints(f, c->untraced, c->n_untraced);
  fputs(",\"ranks\":[", f);
  int first = 1;
  for (int32_t r = 0; r < c->nranks; r++) {
    const struct lens_hang_rank *x = &c->ranks[r];
    if (x->proc < 0) continue;
    fprintf(f, "%s{\"rank\":%d,\"pid\":%u,\"last_started\":", first ? "" : ",", r, pid_of(m, x->proc));
    per_func(f, c, x, 0);
    fputs(",\"last_completed\":", f);
    per_func(f, c, x, 1);
    fprintf(f, ",\"entered\":%s,\"stuck\":%s}", x->entered ? "true" : "false", x->stuck ? "true" : "false");
    first = 0;
  }
  fputs("],\"waiting\":[", f);
  for (size_t i = 0; i < c->n_waiting; i++) {
    const struct lens_hang_wait *w = &c->waiting[i];
    fprintf(f, "%s{\"rank\":%d,\"peer\":%d,\"channel\":%d,\"step\":%d,\"state\":", i ? "," : "", w->rank, w->peer,
            w->channel, w->step);
    lens_json_str(f, w->state ? lens_state_name(w->state) : NULL);
    fputs(",\"meaning\":", f);
    lens_json_str(f, lens_hang_state_meaning(w->state, w->is_send, w->step_started));
    fprintf(f, ",\"is_send\":%s,\"step_started\":%s,\"state_since_ns\":%" PRIu64 ",\"state_last_ns\":%" PRIu64
               ",\"state_repeats\":%" PRIu64 ",\"pid\":%u,\"tid\":%u}",
            w->is_send ? "true" : "false", w->step_started ? "true" : "false", w->state_since_ns, w->state_last_ns,
            w->state_repeats, pid_of(m, w->proc), tid_of(m, w->thread));
  }
  fputs("],\"kernel_channels\":[", f);
  for (size_t i = 0; i < c->n_kch; i++)
    fprintf(f, "%s{\"rank\":%d,\"channel\":%d,\"start_ns\":%" PRIu64 ",\"pid\":%u}", i ? "," : "", c->kch[i].rank,
            c->kch[i].channel, c->kch[i].start_ns, pid_of(m, c->kch[i].proc));
  fputs("]}", f);
}

void lens_hang_print_json(FILE *f, const struct lens_model *m, const struct lens_hang_report *h) {
  fputs("{\"clock\":\"CLOCK_MONOTONIC_ns of the recording host\",\"communicators\":[", f);
  for (size_t i = 0; i < h->n_comms; i++) {
    if (i) fputs(",\n", f);
    comm_json(f, m, &h->comms[i]);
  }
  fputs("],\n\"proxies\":[", f);
  for (size_t i = 0; i < h->n_proxies; i++) {
    const struct lens_hang_proxy *p = &h->proxies[i];
    fprintf(f, "%s{\"pid\":%u,\"tid\":%u,\"rank\":%d,\"last_record_ns\":%" PRIu64 ",\"trace_end_ns\":%" PRIu64
               ",\"silent_ns\":%" PRIu64 ",\"recording\":%s,\"frozen\":%s,\"verdict\":\"%s\"",
            i ? "," : "", pid_of(m, p->proc), tid_of(m, p->thread), p->rank, p->last_record_ns, p->trace_end_ns,
            p->trace_end_ns > p->last_record_ns ? p->trace_end_ns - p->last_record_ns : 0,
            p->recording ? "true" : "false", p->frozen ? "true" : "false", proxy_verdict(p));
    if (p->frozen)
      fprintf(f, ",\"blocked_send\":{\"rank\":%d,\"channel\":%d,\"step\":%d}", p->blocked_rank, p->blocked_channel,
              p->blocked_step);
    fputc('}', f);
  }
  fputc(']', f);
  dumps_json(f, m);
  fputs("}\n", f);
}
