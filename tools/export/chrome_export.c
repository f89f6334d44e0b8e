/* See chrome_export.h. */
#define _GNU_SOURCE /* open_memstream */
#include "export/chrome_export.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/passes.h"
#include "cli/spool.h"
#include "export/group_input.h"
#include "export/load_traces.h"

#define CMD "export"
#define HIST_BUCKETS 65536u /* time buckets of the split: a window is a run of them */
#define SPLIT_MAX_FILES 1000

struct map_ctx {
  const struct lens_trace_cli *c;
  const struct lens_chrome_opts *opts;
  struct lens_spool_dir *spool;
  uint32_t span;          /* ids per input index */
  /* Without --force or --split a document over the limit is refused: once
   * the groups spooled hold more than it, the others are only measured
   * (written to a sink that counts), so a refused 10 GB export does not
   * fill the spool's disk first. */
  uint64_t spool_limit;   /* 0: spool everything */
  atomic_uint_least64_t spooled;
  atomic_int counted_only; /* some group was measured, not spooled */
};

/* A FILE that only counts what is written to it. */
static ssize_t count_write(void *cookie, const char *buf, size_t n) {
  (void)buf;
  *(uint64_t *)cookie += n;
  return (ssize_t)n;
}

static void chrome_part_free(void *part) {
  struct lens_chrome_part *p = part;
  if (p) free(p->real);
  free(p);
}

static void *chrome_map(struct lens_model *m, void *ctx) {
  struct map_ctx *x = ctx; /* shared by the workers: only its atomics are written */
  struct lens_chrome_part *p = calloc(1, sizeof *p);
  if (!p) return lens_cli_error(CMD, "out of memory"), NULL;
  /* Where a group's ids start: the input position of its first trace (every
   * trace is in one group), so they do not depend on threads or order. */
  long key = lens_group_input(m, x->c);
  if (key < 0) {
    free(p);
    return lens_cli_error(CMD, "a host group's traces are not among the inputs"), NULL;
  }
  char name[sizeof p->spool] = "";
  uint64_t counted = 0;
  int measure = x->spool_limit && atomic_load(&x->spooled) > x->spool_limit;
  FILE *out = measure ? fopencookie(&counted, "w", (cookie_io_functions_t){.write = count_write})
                      : lens_spool_create(x->spool, name, sizeof name);
  if (!out) {
    free(p);
    return lens_cli_error(CMD, "cannot write a temporary file: %s", strerror(errno)), NULL;
  }
  uint32_t base = LENS_CHROME_SYNTH_ID + 1 + (uint32_t)key * x->span;
  int rc = lens_chrome_group(out, m, x->opts, base, base + x->span, NULL, p);
  long at = measure ? 0 : ftell(out);
  if (fclose(out)) rc = rc ? rc : -1;
  if (measure) atomic_store(&x->counted_only, 1);
  else atomic_fetch_add(&x->spooled, at > 0 ? (uint64_t)at : 0);
  snprintf(p->spool, sizeof p->spool, "%s", name);
  if (rc == -2)
    lens_cli_error(CMD, "a host group needs more than %u ids (processes and tracks) of the %u a trace may take",
                   x->span, x->span);
  else if (rc)
    lens_cli_error(CMD, "cannot write a temporary file (disk full?) or out of memory");
  if (rc) {
    chrome_part_free(p);
    return NULL;
  }
  return p;
}

/* A real tid is written only when no other thread or process of the whole
 * document has that number; each group judged its own threads as its map
 * ran. Where the whole job judges otherwise (the same tid on two hosts:
 * containers, or small pid_max), that group's records of that thread are
 * rewritten as they are copied out: its tid becomes an unused id of the
 * group's range. Sorted by old tid per group. */
struct demote { uint32_t from, to; };
struct demotions { struct demote *d; size_t n; };

static int cmp_demote(const void *a, const void *b) {
  uint32_t x = ((const struct demote *)a)->from, y = ((const struct demote *)b)->from;
  return (x > y) - (x < y);
}

/* 0 (*any: some group has one), -1 out of memory, -2 out of ids. */
static int demotions_build(const struct lens_passes_out *po, struct demotions *dm, int *any) {
  const struct lens_model *skel = po->skel;
  uint32_t *real = calloc(skel->n_threads + 1, sizeof *real);
  if (!real || lens_chrome_real_tids(skel, real)) return free(real), -1;
  *any = 0;
  for (size_t g = 0; g < po->n_groups; g++) {
    const struct lens_chrome_part *p = po->parts[g];
    uint32_t next = p->id_next;
    for (size_t t = 0; t < p->n_threads; t++) {
      size_t st = po->bases[g].thread + t;
      if (!p->real[t] || (st < skel->n_threads && real[st])) continue;
      if (next >= p->id_end) return free(real), -2;
      struct demote *q = realloc(dm[g].d, (dm[g].n + 1) * sizeof *q);
      if (!q) return free(real), -1;
      dm[g].d = q;
      dm[g].d[dm[g].n++] = (struct demote){st < skel->n_threads ? skel->threads[st].tid : 0, next++};
      *any = 1;
    }
    if (dm[g].n) qsort(dm[g].d, dm[g].n, sizeof *dm[g].d, cmp_demote);
  }
  free(real);
  return 0;
}

static const struct demote *demote_find(const struct demotions *dm, uint32_t tid) {
  size_t lo = 0, hi = dm->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (dm->d[mid].from < tid) lo = mid + 1;
    else hi = mid;
  }
  return lo < dm->n && dm->d[lo].from == tid ? &dm->d[lo] : NULL;
}

/* The item with its demoted tids rewritten (into *buf), or as it is. */
static const char *demote_line(const struct demotions *dm, const char *json, size_t *len, char **buf, size_t *cap) {
  if (!dm || !dm->n) return json;
  static const char pat[] = "\"tid\":";
  size_t n = *len, o = 0;
  if (*cap < n + 64) {
    char *q = realloc(*buf, n + 64);
    if (!q) return json; /* unchanged rather than lost; the ids then still collide */
    *buf = q, *cap = n + 64;
  }
  const char *p = json, *end = json + n;
  while (p < end) {
    const char *hit = memmem(p, (size_t)(end - p), pat, sizeof pat - 1);
    if (!hit) hit = end;
    else hit += sizeof pat - 1;
    size_t chunk = (size_t)(hit - p);
    if (o + chunk + 16 > *cap) {
      char *q = realloc(*buf, (*cap = o + chunk + 64) * 2);
      if (!q) return json;
      *buf = q, *cap *= 2;
    }
    memcpy(*buf + o, p, chunk);
    o += chunk;
    p = hit;
    if (hit == end) break;
    uint64_t v = 0;
    const char *d = p;
    while (d < end && *d >= '0' && *d <= '9' && v <= UINT32_MAX) v = v * 10 + (uint64_t)(*d++ - '0');
    const struct demote *r = d > p && v <= UINT32_MAX ? demote_find(dm, (uint32_t)v) : NULL;
    if (r) {
      o += (size_t)snprintf(*buf + o, *cap - o, "%u", r->to);
      p = d;
    }
  }
  *len = o;
  return *buf;
}

/* "1.23 GB", "45.6 MB", "789 bytes" (decimal, as the limit is said). */
const char *lens_export_size_text(uint64_t b, char *buf, size_t len) {
  if (b >= 1000000000ull) snprintf(buf, len, "%.2f GB", (double)b / 1e9);
  else if (b >= 1000000ull) snprintf(buf, len, "%.1f MB", (double)b / 1e6);
  else if (b >= 1000ull) snprintf(buf, len, "%.1f kB", (double)b / 1e3);
  else snprintf(buf, len, "%" PRIu64 " bytes", b);
  return buf;
}

uint64_t lens_export_max_bytes(void) {
  const char *e = getenv("NCCL_LENS_EXPORT_MAX_BYTES");
  uint64_t v;
  if (e && *e && !lens_cli_parse_u64(e, &v) && v) return v;
  return LENS_EXPORT_MAX_BYTES_DEFAULT;
}

/* The otherData and end of a document, as bytes (the skeleton's files and drops). */
static char *tail_text(const struct lens_model *skel, const char *extra, size_t *len) {
  char *t = NULL;
  FILE *f = open_memstream(&t, len);
  if (!f) return NULL;
  lens_chrome_write_other(f, skel, extra);
  if (fclose(f)) {
    free(t);
    return NULL;
  }
  return t;
}

struct sums {
  uint64_t items, json, meta_items, meta, type_bytes[17];
  uint64_t ts_min, ts_max, timed;
  struct lens_chrome_counts c;
  size_t ce;
};

static void sum_parts(struct lens_chrome_part *const *parts, size_t n, struct sums *s) {
  memset(s, 0, sizeof *s);
  for (size_t g = 0; g < n; g++) {
    const struct lens_chrome_part *p = parts[g];
    s->items += p->items, s->json += p->json_bytes, s->meta_items += p->meta_items, s->meta += p->meta_bytes;
    for (int t = 0; t < 17; t++) s->type_bytes[t] += p->type_bytes[t];
    if (p->items_timed) {
      if (!s->timed || p->ts_min < s->ts_min) s->ts_min = p->ts_min;
      if (!s->timed || p->ts_max > s->ts_max) s->ts_max = p->ts_max;
      s->timed += p->items_timed;
    }
    const struct lens_chrome_counts *c = &p->counts;
    s->c.complete += c->complete, s->c.async_pairs += c->async_pairs, s->c.metadata += c->metadata;
    s->c.ops += c->ops, s->c.gpu_slices += c->gpu_slices, s->c.gpu_overlaps += c->gpu_overlaps;
    s->c.ctrl_states += c->ctrl_states, s->c.starvation += c->starvation, s->c.proxy_levels += c->proxy_levels;
    s->c.tracks += c->tracks, s->c.lanes_extra += c->lanes_extra, s->c.crowded += c->crowded;
    s->ce += p->ce_colls;
  }
}

/* The types to keep so that the document fits: the biggest dropped first.
 * Writes "--types a,b,c" into buf and the size it would have; 0, or -1
 * when no non-empty selection fits. */
static int fitting_types(const struct sums *s, uint64_t fixed, uint64_t limit, char *buf, size_t len,
                         uint64_t *size) {
  int keep[17];
  uint64_t total = fixed;
  for (int t = 0; t < 17; t++) keep[t] = s->type_bytes[t] > 0, total += s->type_bytes[t];
  while (total > limit) {
    int big = -1;
    for (int t = 0; t < 17; t++)
      if (keep[t] && (big < 0 || s->type_bytes[t] > s->type_bytes[big])) big = t;
    if (big < 0) return -1;
    keep[big] = 0;
    total -= s->type_bytes[big];
  }
  size_t o = (size_t)snprintf(buf, len, "--types ");
  int any = 0;
  for (int t = 0; t < 17 && o < len; t++)
    if (keep[t] && lens_chrome_type_name(t)) {
      o += (size_t)snprintf(buf + o, len - o, "%s%s", any ? "," : "", lens_chrome_type_name(t));
      any = 1;
    }
  *size = total;
  return any ? 0 : -1;
}

static int each_line(const struct lens_spool_dir *spool, struct lens_chrome_part *const *parts, size_t n,
                     const struct demotions *dm, void (*fn)(void *arg, uint64_t key, const char *json, size_t len),
                     void *arg, int remove);
static void write_add(void *arg, uint64_t key, const char *json, size_t len);
struct writer { FILE *f; int first; };

/* The document in input order. 0, or 1 after an error line. */
static int write_whole(FILE *f, const struct lens_spool_dir *spool, struct lens_chrome_part *const *parts, size_t n,
                       const struct demotions *dm, const char *tail, size_t tail_len) {
  __fsetlocking(f, FSETLOCKING_BYCALLER); /* the pool's threads are gone: no lock per call */
  lens_chrome_write_head(f);
  struct writer w = {f, 1};
  if (each_line(spool, parts, n, dm, write_add, &w, 1)) return lens_cli_error(CMD, "cannot read back a temporary file");
  fwrite(tail, 1, tail_len, f);
  return 0;
}

/* ---- --split ---- */

static size_t bucket_of(uint64_t ts, uint64_t lo, uint64_t hi) {
  if (ts <= lo) return 0;
  if (ts >= hi) return HIST_BUCKETS - 1;
  return (size_t)((unsigned __int128)(ts - lo) * HIST_BUCKETS / ((unsigned __int128)(hi - lo) + 1));
}

/* Reads every spool line in input order, its tids demoted; calls fn(arg,
 * key or UINT64_MAX for metadata, json, len). remove: each spool file once
 * read (its disk space back while the output grows). */
static int each_line(const struct lens_spool_dir *spool, struct lens_chrome_part *const *parts, size_t n,
                     const struct demotions *dm, void (*fn)(void *arg, uint64_t key, const char *json, size_t len),
                     void *arg, int remove) {
  char *line = NULL, *buf = NULL;
  size_t cap = 0, bcap = 0;
  for (size_t g = 0; g < n; g++) {
    FILE *in = lens_spool_open(spool, parts[g]->spool);
    if (!in) return free(line), free(buf), -1;
    ssize_t r;
    while ((r = getline(&line, &cap, in)) > 0) {
      char *sp = memchr(line, ' ', (size_t)r);
      if (!sp) continue;
      size_t off = (size_t)(sp + 1 - line), len = (size_t)r - off;
      if (len && line[off + len - 1] == '\n') len--;
      uint64_t key = UINT64_MAX;
      if (line[0] != 'M') key = strtoull(line, NULL, 10);
      const char *json = demote_line(dm ? &dm[g] : NULL, line + off, &len, &buf, &bcap);
      fn(arg, key, json, len);
    }
    int bad = ferror(in);
    fclose(in);
    if (bad) return free(line), free(buf), -1;
    if (remove) lens_spool_remove(spool, parts[g]->spool);
  }
  free(line);
  free(buf);
  return 0;
}

/* The bytes of the items as written (their separators included). */
static void count_add(void *arg, uint64_t key, const char *json, size_t len) {
  (void)key, (void)json;
  *(uint64_t *)arg += len + 2;
}

static void write_add(void *arg, uint64_t key, const char *json, size_t len) {
  (void)key;
  struct writer *w = arg;
  fputs(w->first ? "\n" : ",\n", w->f);
  w->first = 0;
  fwrite(json, 1, len, w->f);
}

struct hist { uint64_t *b; uint64_t lo, hi; };

static void hist_add(void *arg, uint64_t key, const char *json, size_t len) {
  (void)json;
  struct hist *h = arg;
  if (key != UINT64_MAX) h->b[bucket_of(key, h->lo, h->hi)] += len + 2;
}

struct pieces {
  FILE **f; int *first; size_t n;
  uint32_t *piece_of;     /* per bucket */
  uint64_t lo, hi;
};

static void piece_add(void *arg, uint64_t key, const char *json, size_t len) {
  struct pieces *p = arg;
  for (size_t k = 0; k < p->n; k++) {
    if (key != UINT64_MAX && p->piece_of[bucket_of(key, p->lo, p->hi)] != k) continue;
    fputs(p->first[k] ? "\n" : ",\n", p->f[k]);
    p->first[k] = 0;
    fwrite(json, 1, len, p->f[k]);
  }
}

/* OUT.json -> OUT.K.json (OUT -> OUT.K.json). */
static void piece_name(const char *out, size_t k, char *buf, size_t len) {
  size_t n = strlen(out);
  if (n > 5 && !strcmp(out + n - 5, ".json")) n -= 5;
  snprintf(buf, len, "%.*s.%zu.json", (int)n, out, k + 1);
}

static int write_split(const struct lens_trace_cli *c, const struct lens_model *skel, const struct lens_spool_dir *spool,
                       struct lens_chrome_part *const *parts, size_t n, const struct demotions *dm,
                       const struct sums *s, uint64_t limit) {
  /* Every piece: head, every metadata record, its items, the tail (with
   * its window: at most this long). */
  size_t tail_len;
  char extra[200];
  snprintf(extra, sizeof extra,
           "\"split\":{\"piece\":%u,\"pieces\":%u,\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64 ",\"clock\":\"%s\"},",
           UINT32_MAX, UINT32_MAX, UINT64_MAX, UINT64_MAX, "CLOCK_MONOTONIC of each host");
  char *tail = tail_text(skel, extra, &tail_len);
  if (!tail) return lens_cli_error(CMD, "out of memory");
  free(tail);
  uint64_t fixed = strlen("{\"traceEvents\":[") + tail_len + s->meta + 2 * s->meta_items + 2;
  if (fixed >= limit) {
    char a[32], b[32];
    return lens_cli_error(CMD, "--split: the processes and tracks declared in every piece take %s of the %s "
                               "a file may have: select (--rank, --comm, --types) first",
                          lens_export_size_text(fixed, a, sizeof a), lens_export_size_text(limit, b, sizeof b));
  }
  uint64_t budget = limit - fixed;
  struct hist h = {calloc(HIST_BUCKETS, sizeof *h.b), s->ts_min, s->ts_max};
  struct pieces p = {0};
  p.piece_of = calloc(HIST_BUCKETS, sizeof *p.piece_of);
  int rc = 1;
  if (!h.b || !p.piece_of) {
    lens_cli_error(CMD, "out of memory");
    goto out;
  }
  if (each_line(spool, parts, n, dm, hist_add, &h, 0)) {
    lens_cli_error(CMD, "cannot read back a temporary file");
    goto out;
  }
  uint64_t cur = 0;
  size_t np = 1;
  uint64_t from[SPLIT_MAX_FILES + 1];
  from[0] = h.lo;
  for (size_t b = 0; b < HIST_BUCKETS; b++) {
    if (h.b[b] > budget) {
      char a[32];
      lens_cli_error(CMD, "--split: %s of events start within %" PRIu64 " ns of each other: more than a file may "
                          "hold; select (--rank, --comm, --types) first",
                     lens_export_size_text(h.b[b], a, sizeof a), (h.hi - h.lo) / HIST_BUCKETS + 1);
      goto out;
    }
    if (cur + h.b[b] > budget) {
      if (np == SPLIT_MAX_FILES) {
        lens_cli_error(CMD, "--split: more than %d files: select (--rank, --comm, --types) first", SPLIT_MAX_FILES);
        goto out;
      }
      /* The first time of bucket b: items from it on are in the new piece. */
      from[np++] = h.lo + (uint64_t)(((unsigned __int128)b * ((unsigned __int128)(h.hi - h.lo) + 1) + HIST_BUCKETS - 1) /
                                     HIST_BUCKETS);
      cur = 0;
    }
    cur += h.b[b];
    p.piece_of[b] = (uint32_t)(np - 1);
  }
  p.n = np, p.lo = h.lo, p.hi = h.hi;
  p.f = calloc(np, sizeof *p.f);
  p.first = calloc(np, sizeof *p.first);
  if (!p.f || !p.first) {
    lens_cli_error(CMD, "out of memory");
    goto out;
  }
  char name[PATH_MAX];
  for (size_t k = 0; k < np; k++) {
    piece_name(c->out, k, name, sizeof name);
    if (!(p.f[k] = lens_cli_fopen_new(name))) {
      lens_cli_error(CMD, "cannot write %s: %s", name, strerror(errno));
      goto out;
    }
    __fsetlocking(p.f[k], FSETLOCKING_BYCALLER);
    lens_chrome_write_head(p.f[k]);
    p.first[k] = 1;
  }
  if (each_line(spool, parts, n, dm, piece_add, &p, 1)) {
    lens_cli_error(CMD, "cannot read back a temporary file");
    goto out;
  }
  uint64_t biggest = 0;
  rc = 0;
  for (size_t k = 0; k < np; k++) {
    snprintf(extra, sizeof extra,
             "\"split\":{\"piece\":%zu,\"pieces\":%zu,\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64 ",\"clock\":\"%s\"},",
             k + 1, np, from[k], k + 1 < np ? from[k + 1] : h.hi + 1, "CLOCK_MONOTONIC of each host");
    lens_chrome_write_other(p.f[k], skel, extra);
    long size = ftell(p.f[k]);
    if ((uint64_t)size > biggest) biggest = (uint64_t)size;
    if (fclose(p.f[k])) {
      piece_name(c->out, k, name, sizeof name);
      rc = lens_cli_error(CMD, "write error on %s", name);
    }
    p.f[k] = NULL;
  }
  if (!rc) {
    char a[32], first[PATH_MAX], last[PATH_MAX];
    piece_name(c->out, 0, first, sizeof first);
    piece_name(c->out, np - 1, last, sizeof last);
    printf("wrote %s%s%s: %zu files of at most %s by time window (each host's CLOCK_MONOTONIC)\n", first,
           np > 1 ? " .. " : "", np > 1 ? last : "", np, lens_export_size_text(biggest, a, sizeof a));
  }
out:
  for (size_t k = 0; p.f && k < p.n; k++)
    if (p.f[k]) {
      fclose(p.f[k]);
      piece_name(c->out, k, name, sizeof name);
      unlink(name); /* a half-written piece would load as a broken trace */
    }
  free(p.f);
  free(p.first);
  free(p.piece_of);
  free(h.b);
  return rc;
}

int lens_chrome_export(struct lens_trace_cli *c, const struct lens_chrome_export_opts *o) {
  if (o->split && !lens_trace_cli_out_is_file(c))
    return lens_cli_usage(CMD, "--split writes OUT.1.json, OUT.2.json, ...: it needs -o OUT.json");
  if (lens_trace_cli_expand_dirs(CMD, c)) return 1;
  /* Spool files next to the output (its disk must hold it anyway), unless
   * -o is no regular file (/dev/null, a pipe): then $TMPDIR. */
  struct stat ost;
  int beside = lens_trace_cli_out_is_file(c) && (stat(c->out, &ost) || S_ISREG(ost.st_mode));
  struct lens_spool_dir *spool = lens_spool_dir_new(CMD, beside ? c->out : NULL);
  if (!spool) return 1;
  /* Ids: a range per input position, below INT32_MAX (process sort indexes
   * are written as ints). */
  struct map_ctx mx = {.c = c, .opts = &o->chrome, .spool = spool,
                       .span = (uint32_t)((INT32_MAX - LENS_CHROME_SYNTH_ID - 1) / (c->n + 1)),
                       .spool_limit = o->force || o->split ? 0 : lens_export_max_bytes()};
  /* ProxySteps are exported: read as events. */
  struct lens_pass pass = {.map = chrome_map, .free = chrome_part_free, .ctx = &mx, .needs = LENS_PASS_STEPS};
  struct lens_passes_opts po_opts = {.threads = o->threads};
  struct lens_passes_out po;
  struct demotions *dm = NULL;
  char *tail = NULL;
  int rc = lens_passes_run(CMD, c, &pass, 1, &po_opts, &po), any = 0;
  if (rc) goto out;
  struct lens_chrome_part *const *parts = (struct lens_chrome_part *const *)po.parts;
  int d = (dm = calloc(po.n_groups + 1, sizeof *dm)) ? demotions_build(&po, dm, &any) : -1;
  if (d) {
    rc = lens_cli_error(CMD, d == -2 ? "a host group has no ids left for its threads' tids" : "out of memory");
    goto out;
  }
  struct sums s;
  sum_parts(parts, po.n_groups, &s);
  size_t tail_len;
  tail = tail_text(po.skel, NULL, &tail_len);
  if (!tail) {
    rc = lens_cli_error(CMD, "out of memory");
    goto out;
  }
  uint64_t records = s.items + s.meta_items;
  uint64_t items_bytes = s.json + s.meta + 2 * records; /* separators: ",\n" (the first "\n") */
  /* the rewritten tids change the length: counted as written (not when some group was only measured: it
   * is over the limit, refused, and its size the groups' own, a few bytes a rewritten tid apart) */
  int measured = atomic_load(&mx.counted_only);
  if (any && !measured) items_bytes = 0;
  if (any && !measured && each_line(spool, parts, po.n_groups, dm, count_add, &items_bytes, 0)) {
    rc = lens_cli_error(CMD, "cannot read back a temporary file");
    goto out;
  }
  uint64_t size = strlen("{\"traceEvents\":[") + items_bytes - (records ? 1 : 0) + tail_len;
  uint64_t limit = lens_export_max_bytes();
  if (o->split) {
    rc = write_split(c, po.skel, spool, parts, po.n_groups, dm, &s, limit);
  } else if ((size > limit || measured) && !o->force) { /* measured: its groups past the limit were not spooled */
    char a[32], b[32], t[256] = "", ts[32];
    uint64_t tsize;
    /* measured: the groups past the limit were counted, not spooled, their rewritten tids not read back */
    fprintf(stderr, "nccl-lens export: the Chrome JSON would be %s%s, more than the Perfetto UI opens (%s): not "
                    "written\n", measured ? "about " : "", lens_export_size_text(size, a, sizeof a),
            lens_export_size_text(limit, b, sizeof b));
    if (!fitting_types(&s, size - s.json - 2 * s.items, limit, t, sizeof t, &tsize)) {
      fprintf(stderr, "nccl-lens export: these types fit (about %s; a --rank or --comm selection may too):\n",
              lens_export_size_text(tsize, ts, sizeof ts));
      /* The list, cut at commas into lines of at most 120 columns. */
      for (const char *p = t; *p;) {
        size_t len = strlen(p);
        if (len > 96) {
          len = 96;
          while (len > 0 && p[len] != ',') len--;
          if (!len) len = strlen(p);
          else len++;
        }
        fprintf(stderr, "nccl-lens export:   %.*s\n", (int)len, p);
        p += len;
      }
    }
    fprintf(stderr, "nccl-lens export: --format perfetto (protobuf) opens whole; --split cuts it into files by "
                    "time; --force writes it anyway\n");
    rc = LENS_EXPORT_TOO_BIG;
  } else {
    FILE *f = lens_trace_cli_open_out(CMD, c);
    if (!f) {
      rc = 1;
    } else {
      int wr = write_whole(f, spool, parts, po.n_groups, dm, tail, tail_len);
      if (lens_trace_cli_close_out(CMD, c, f, wr)) {
        /* A half-written trace would load as a broken one: remove it, but
         * only a regular file (never a device or a pipe -o points at). */
        struct stat st;
        if (lens_trace_cli_out_is_file(c) && lstat(c->out, &st) == 0 && S_ISREG(st.st_mode)) unlink(c->out);
        rc = 1;
      } else if (f != stdout) {
        char ce_txt[64] = "";
        if (s.ce) snprintf(ce_txt, sizeof ce_txt, ", %zu copy-engine (CE) collectives", s.ce);
        printf("wrote %s: %" PRIu64 " events of %zu processes (%zu operations%s, %zu GPU channel slices, %zu "
               "starvation)\n", c->out, po.events, po.skel->n_procs, s.c.ops, ce_txt, s.c.gpu_slices, s.c.starvation);
      }
    }
  }
out:
  free(tail);
  for (size_t g = 0; dm && g < po.n_groups; g++) free(dm[g].d);
  free(dm);
  lens_passes_free(&pass, &po);
  lens_spool_dir_free(spool);
  return rc;
}
