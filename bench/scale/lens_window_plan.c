/* lens-window-plan: what a time window would have to decode if the reader
 * could skip chunks (docs/scale.md, "A design for it"), measured on real
 * traces before the trace format changes. Reads every event chunk of each
 * trace, notes which chunk holds each record, and prints, for a window of
 * WIDTH of each file's span starting at FROM of it, the share of the event
 * chunks' bytes (and records) that three plans would decode:
 *
 *   exact    the chunks holding a record of an event the window needs: the
 *            events the selection's rule keeps (start before the window's
 *            end, not stopped before its start), their ancestors, and what
 *            the GPU clock maps need (below); what an index naming each
 *            event's chunks could reach, the floor of any chunk skipping;
 *   range    what the proposed INDEX chunk allows: from the oldest chunk
 *            that holds the START of an event still running (itself or a
 *            descendant) after the last chunk whose records all end before
 *            the window, to the last chunk "exact" needs (every chunk in
 *            between decoded);
 *   today    every event chunk (what the window's scan decoded before it
 *            read only what the INDEX plan names: window.c, plan_files).
 *
 * GPU policies (what the clock maps need, --gpu): "all" every KernelCh with
 * its Coll/P2p (the maps are whole-run fits and the flags read every item of
 * a channel: the reader's rule today), "near" the KernelCh starting within
 * --gpu-margin of the window (one fit window a side: the maps are refitted
 * every second of GPU time) with theirs, "none" (a trace without KernelCh,
 * or maps kept from an earlier read). Per file, from its own first START:
 * the window's origin is the file's, not its host's, and "ends before the
 * window" is judged by the records' times, as the writer's own clock would
 * (a chunk is written after its last record). Figures, not assertions.
 *
 * Usage: lens-window-plan [--from F] [--width W] [--gpu all|near|none]
 *                         [--gpu-margin-ms MS] TRACE|DIR...
 *   F, W: fractions of each file's span (default 0.495, 0.01). */
#define _GNU_SOURCE /* qsort_r */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "lens_chunk.h"
#include "lens_unpack.h"
#include "nccl-lens/trace_format.h"
#include "trace_index.h"
#include "window_plan.h"

enum { GPU_ALL, GPU_NEAR, GPU_NONE };

struct chunk { uint64_t bytes, records, min_ts, max_ts; };
struct ev {
  uint64_t id, parent_id, start, stop;
  uint32_t flags;        /* its START's LENS_START_F_* */
  int32_t parent;        /* event index, -1 none */
  uint32_t type, first, last; /* its START's chunk; the last chunk holding one of its records */
  uint32_t sub_last;     /* the last chunk holding a record of it or a descendant */
  uint8_t stopped, need;
};
/* A STOP or STATE record: its chunk, and its event once resolved (plan_file). */
struct rec { uint64_t id, ts; uint32_t chunk; int32_t ev; uint8_t stop; };

struct file_scan {
  struct chunk *c; size_t nc, cc;
  struct ev *e; size_t ne, ce;
  struct rec *r; size_t nr, cr; /* STOP and STATE records */
};

static void *grow(void *p, size_t *cap, size_t need, size_t sz) {
  if (need <= *cap) return p;
  size_t nc = *cap ? *cap * 2 : 1024;
  while (nc < need) nc *= 2;
  void *q = realloc(p, nc * sz);
  if (!q) {
    fprintf(stderr, "lens-window-plan: out of memory\n");
    exit(1);
  }
  *cap = nc;
  return q;
}

/* id -> event index: open addressing, the id's bits mixed. */
struct idmap { uint64_t *k; uint32_t *v; size_t cap; };
static size_t hsh(uint64_t x, size_t cap) {
  x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33;
  return (size_t)x & (cap - 1);
}
static void idmap_build(struct idmap *m, const struct ev *e, size_t n) {
  m->cap = 1;
  while (m->cap < 2 * n + 2) m->cap *= 2;
  m->k = calloc(m->cap, sizeof *m->k), m->v = calloc(m->cap, sizeof *m->v);
  if (!m->k || !m->v) exit(1);
  for (size_t i = 0; i < n; i++) { /* the latest START of an id wins, as the reader's rule */
    uint64_t key = LENS_INDEX_KEY(e[i].id) | LENS_ID_TAG; /* an open set names events by key: ids match by it */
    size_t h = hsh(key, m->cap);
    while (m->k[h] && m->k[h] != key) h = (h + 1) & (m->cap - 1);
    m->k[h] = key, m->v[h] = (uint32_t)i;
  }
}
static long idmap_get(const struct idmap *m, uint64_t id) {
  if (!id) return -1;
  uint64_t key = LENS_INDEX_KEY(id) | LENS_ID_TAG;
  for (size_t h = hsh(key, m->cap); m->k[h]; h = (h + 1) & (m->cap - 1))
    if (m->k[h] == key) return m->v[h];
  return -1;
}

static void on_record(struct file_scan *f, unsigned kind, unsigned type, uint64_t id, uint64_t ts, uint64_t parent,
                      uint32_t aux) {
  struct chunk *c = &f->c[f->nc - 1];
  c->records++;
  if (ts < c->min_ts) c->min_ts = ts;
  if (ts > c->max_ts) c->max_ts = ts;
  if (kind == LENS_REC_START) {
    f->e = grow(f->e, &f->ce, f->ne + 1, sizeof *f->e);
    f->e[f->ne++] = (struct ev){.id = id, .parent_id = parent, .start = ts, .flags = aux, .type = type, .parent = -1,
                                .first = (uint32_t)(f->nc - 1)};
    return;
  }
  f->r = grow(f->r, &f->cr, f->nr + 1, sizeof *f->r);
  f->r[f->nr++] = (struct rec){id, ts, (uint32_t)(f->nc - 1), -1, kind == LENS_REC_STOP};
}

/* A fixed record's header, id, time and (a START's) parent: an EVENTS
 * chunk's records and a packed chunk's RAW ones. */
static void fixed_fields(const uint8_t *p, struct lens_rec_hdr *rh, uint64_t *id, uint64_t *ts, uint64_t *parent) {
  memcpy(rh, p, sizeof *rh);
  memcpy(id, p + 8, 8);
  *parent = 0;
  if (rh->kind == LENS_REC_START && rh->size >= 40) memcpy(parent, p + 16, 8), memcpy(ts, p + 32, 8);
  else memcpy(ts, p + 16, 8);
}

static int scan_file(const char *path, struct file_scan *f) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return fprintf(stderr, "lens-window-plan: %s: %s\n", path, strerror(errno)), -1;
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(struct lens_file_hdr)) {
    close(fd);
    return fprintf(stderr, "lens-window-plan: %s: not a trace\n", path), -1;
  }
  uint8_t *b = malloc((size_t)st.st_size);
  if (!b || pread(fd, b, (size_t)st.st_size, 0) != st.st_size) {
    close(fd), free(b);
    return fprintf(stderr, "lens-window-plan: %s: cannot read\n", path), -1;
  }
  close(fd);
  static ZSTD_DCtx *z;
  static uint8_t *zb;
  static size_t zcap;
  if (!z && !(z = ZSTD_createDCtx())) exit(1);
  size_t off = sizeof(struct lens_file_hdr), n = (size_t)st.st_size;
  while (n - off >= sizeof(struct lens_chunk_hdr)) {
    struct lens_chunk_hdr h;
    memcpy(&h, b + off, sizeof h);
    if (h.magic != LENS_CHUNK_MAGIC || h.payload_len > n - off - sizeof h) break; /* a projection: good traces */
    const uint8_t *p = b + off + sizeof h;
    uint64_t whole = sizeof h + h.payload_len + lens_chunk_padding(h.payload_len);
    off += whole;
    if (h.type != LENS_CHUNK_EVENTS && h.type != LENS_CHUNK_EVENTS_PACKED) continue;
    f->c = grow(f->c, &f->cc, f->nc + 1, sizeof *f->c);
    f->c[f->nc++] = (struct chunk){.bytes = whole, .min_ts = UINT64_MAX};
    if (h.type == LENS_CHUNK_EVENTS_PACKED) {
      struct lens_packed_hdr ph;
      if (h.payload_len < sizeof ph) continue;
      memcpy(&ph, p, sizeof ph);
      const uint8_t *body = p + sizeof ph;
      size_t blen = h.payload_len - sizeof ph;
      if (ph.codec == LENS_PACK_CODEC_ZSTD) {
        if (ph.body_bytes > zcap) {
          free(zb);
          zcap = ph.body_bytes;
          if (!(zb = malloc(zcap))) exit(1);
        }
        size_t got = ZSTD_decompressDCtx(z, zb, ph.body_bytes, body, blen);
        if (ZSTD_isError(got)) continue;
        body = zb, blen = got;
      }
      struct lens_unpack_cur cur;
      struct lens_unpacked r;
      lens_unpack_init(&cur, body, blen, ph.raw_bytes);
      for (uint32_t i = 0; i < ph.count && lens_unpack_next(&cur, &r); i++) {
        unsigned kind = r.kind;
        uint64_t parent = kind == LENS_REC_START ? r.parent : 0;
        unsigned type = r.type;
        uint32_t aux = r.aux;
        if (!kind) { /* RAW: its fixed header */
          struct lens_rec_hdr rh;
          fixed_fields(r.raw, &rh, &r.id, &r.ts, &parent);
          kind = rh.kind, type = rh.type, aux = rh.aux;
        }
        on_record(f, kind, type, r.id, r.ts, parent, aux);
      }
      continue;
    }
    struct lens_events_hdr eh;
    if (h.payload_len < sizeof eh) continue;
    memcpy(&eh, p, sizeof eh);
    size_t o = sizeof eh;
    for (uint32_t i = 0; i < eh.count && h.payload_len - o >= 24; i++) {
      struct lens_rec_hdr rh;
      memcpy(&rh, p + o, sizeof rh);
      if (rh.size < 24 || (rh.size & 7) || rh.size > h.payload_len - o) break;
      uint64_t id, ts, parent;
      fixed_fields(p + o, &rh, &id, &ts, &parent);
      on_record(f, rh.kind, rh.type, id, ts, parent, rh.aux);
      o += rh.size;
    }
  }
  free(b);
  return 0;
}

/* Union-find "paint": the next chunk >= k not yet given its open_from. */
static uint32_t next_free(uint32_t *nx, uint32_t k) {
  uint32_t r = k;
  while (nx[r] != r) r = nx[r];
  while (nx[k] != r) {
    uint32_t t = nx[k];
    nx[k] = r, k = t;
  }
  return r;
}

static int cmp_first(const void *a, const void *b, void *ctx) {
  const struct ev *e = ctx;
  uint32_t x = e[*(const uint32_t *)a].first, y = e[*(const uint32_t *)b].first;
  return (x > y) - (x < y);
}

#define N_PLANS 4
struct totals {
  double bytes, records, chunks, chunk_ns, span_ns;
  double plan_bytes[N_PLANS], plan_records[N_PLANS];
  uint64_t never_stopped, long_reach;
  uint64_t files_indexed, index_misses, index_bytes, index_fallback;
};

/* ---- the plan the INDEX chunks allow ----
 * The reader's (window_plan.h), with this tool's knowledge of each chunk's
 * records standing in for decoding it. Its misses (exact chunks the plan
 * leaves out) must be none. */
struct chunk_recs {
  const struct file_scan *f;
  uint32_t *eo, *el, *ro, *rl; /* per chunk: its STARTs (events), its STOP/STATE records, as CSR lists */
  struct lens_wplan_rec *buf;
  size_t cap;
};
static int chunk_decode(void *ctx, size_t k, const struct lens_wplan_rec **out, size_t *n) {
  struct chunk_recs *c = ctx;
  size_t ne = c->eo[k + 1] - c->eo[k], nr = c->ro[k + 1] - c->ro[k];
  c->buf = grow(c->buf, &c->cap, ne + nr, sizeof *c->buf);
  size_t j = 0;
  for (uint32_t i = c->eo[k]; i < c->eo[k + 1]; i++) {
    const struct ev *e = &c->f->e[c->el[i]];
    c->buf[j++] = (struct lens_wplan_rec){LENS_REC_START, (uint8_t)e->type, e->flags, e->id, e->start, e->parent_id};
  }
  for (uint32_t i = c->ro[k]; i < c->ro[k + 1]; i++) {
    const struct rec *r = &c->f->r[c->rl[i]];
    c->buf[j++] = (struct lens_wplan_rec){r->stop ? LENS_REC_STOP : LENS_REC_STATE, 0, 0, r->id, r->ts, 0};
  }
  *out = c->buf, *n = j;
  return 0;
}

static void index_plan(const struct file_scan *f, const struct lens_trace_index *ix, uint64_t s, uint64_t u, int gpu,
                       uint64_t margin, uint8_t *in, struct totals *t) {
  struct chunk_recs c = {.f = f};
  c.eo = calloc(f->nc + 1, sizeof *c.eo), c.ro = calloc(f->nc + 1, sizeof *c.ro);
  c.el = malloc((f->ne ? f->ne : 1) * sizeof *c.el), c.rl = malloc((f->nr ? f->nr : 1) * sizeof *c.rl);
  uint32_t *ef = malloc((f->nc + 1) * sizeof *ef), *rf = malloc((f->nc + 1) * sizeof *rf);
  if (!c.eo || !c.ro || !c.el || !c.rl || !ef || !rf) exit(1);
  for (size_t i = 0; i < f->ne; i++) c.eo[f->e[i].first + 1]++;
  for (size_t i = 0; i < f->nr; i++) c.ro[f->r[i].chunk + 1]++;
  for (size_t k = 0; k < f->nc; k++) c.eo[k + 1] += c.eo[k], c.ro[k + 1] += c.ro[k];
  memcpy(ef, c.eo, (f->nc + 1) * sizeof *ef), memcpy(rf, c.ro, (f->nc + 1) * sizeof *rf);
  for (size_t i = 0; i < f->ne; i++) c.el[ef[f->e[i].first]++] = (uint32_t)i;
  for (size_t i = 0; i < f->nr; i++) c.rl[rf[f->r[i].chunk]++] = (uint32_t)i;
  free(ef), free(rf);
  struct lens_wplan_opts o = {.since = s, .until = u};
  if (gpu != GPU_NONE) {
    o.need_types = (1u << LENS_T_KERNEL_CH) | (1u << LENS_T_KERNEL_PHASE);
    o.need_margin = gpu == GPU_ALL ? UINT64_MAX : margin;
  }
  struct lens_wplan_stats st;
  if (lens_wplan_make(ix, &o, chunk_decode, &c, in, &st)) {
    fprintf(stderr, "lens-window-plan: out of memory\n");
    exit(1);
  }
  if (st.no_open_set) t->index_fallback++;
  free(c.eo), free(c.ro), free(c.el), free(c.rl), free(c.buf);
}

static void plan_file(struct file_scan *f, const struct lens_trace_index *ix, double from, double width, int gpu,
                      uint64_t margin, struct totals *t) {
  if (!f->ne || !f->nc) return;
  struct idmap m;
  idmap_build(&m, f->e, f->ne);
  for (size_t i = 0; i < f->ne; i++) {
    f->e[i].last = f->e[i].first;
    f->e[i].parent = (int32_t)idmap_get(&m, f->e[i].parent_id);
    if (f->e[i].parent == (int32_t)i) f->e[i].parent = -1;
  }
  for (size_t i = 0; i < f->nr; i++) { /* each record to its event once: its last chunk, its first STOP */
    struct rec *r = &f->r[i];
    long k = idmap_get(&m, r->id);
    if (k < 0) continue;
    r->ev = (int32_t)k;
    if (r->chunk > f->e[k].last) f->e[k].last = r->chunk;
    if (r->stop && !f->e[k].stopped) f->e[k].stopped = 1, f->e[k].stop = r->ts;
  }
  uint64_t t0 = UINT64_MAX, t1 = 0;
  for (size_t i = 0; i < f->ne; i++) {
    if (f->e[i].start < t0) t0 = f->e[i].start;
    uint64_t end = f->e[i].stopped ? f->e[i].stop : f->e[i].start;
    if (end > t1) t1 = end;
  }
  uint64_t span = t1 > t0 ? t1 - t0 : 1;
  uint64_t s = t0 + (uint64_t)(from * (double)span), u = s + (uint64_t)(width * (double)span);
  /* what the window needs: the rule's events, then the GPU's, then every ancestor */
  for (size_t i = 0; i < f->ne; i++) {
    struct ev *e = &f->e[i];
    e->sub_last = e->stopped ? e->last : (uint32_t)(f->nc - 1); /* a never-stopped event stays open */
    if (!e->stopped) t->never_stopped++;
    e->need = e->start < u && (!e->stopped || e->stop >= s);
    if (e->type == LENS_T_KERNEL_CH &&
        (gpu == GPU_ALL || (gpu == GPU_NEAR && e->start + margin >= s && e->start < u + margin)))
      e->need = 1;
  }
  for (size_t i = 0; i < f->ne; i++)
    for (int32_t p = f->e[i].need ? f->e[i].parent : -1, g = 0; p >= 0 && !f->e[p].need && g < 64; g++)
      f->e[p].need = 1, p = f->e[p].parent;
  /* descendants keep an ancestor open: children come after their parents in file order */
  for (size_t i = f->ne; i-- > 0;) {
    int32_t p = f->e[i].parent;
    if (p >= 0 && f->e[i].sub_last > f->e[p].sub_last) f->e[p].sub_last = f->e[i].sub_last;
  }
  uint8_t *exact = calloc(f->nc, 1);
  if (!exact) exit(1);
  uint32_t lo = UINT32_MAX, hi = 0;
  for (size_t i = 0; i < f->ne; i++)
    if (f->e[i].need) {
      exact[f->e[i].first] = 1;
      if (f->e[i].first < lo) lo = f->e[i].first;
      if (f->e[i].last > hi) hi = f->e[i].last;
    }
  for (size_t i = 0; i < f->nr; i++)
    if (f->r[i].ev >= 0 && f->e[f->r[i].ev].need) exact[f->r[i].chunk] = 1;
  /* open_from[k]: the oldest START chunk of an event still open after chunk k */
  uint32_t *open_from = malloc(f->nc * sizeof *open_from), *nx = malloc((f->nc + 1) * sizeof *nx);
  uint32_t *ord = malloc(f->ne * sizeof *ord);
  if (!open_from || !nx || !ord) exit(1);
  for (uint32_t k = 0; k <= f->nc; k++) nx[k] = k;
  for (uint32_t k = 0; k < f->nc; k++) open_from[k] = k + 1; /* nothing open: the next chunk */
  for (uint32_t i = 0; i < f->ne; i++) ord[i] = i;
  qsort_r(ord, f->ne, sizeof *ord, cmp_first, f->e);
  for (size_t q = 0; q < f->ne; q++) { /* oldest first: a chunk keeps the first (oldest) that covers it */
    const struct ev *e = &f->e[ord[q]];
    for (uint32_t k = next_free(nx, e->first); k < e->sub_last; k = next_free(nx, k)) open_from[k] = e->first, nx[k] = k + 1;
  }
  /* the last chunk whose records all end before the window */
  long k0 = -1;
  for (size_t k = 0; k < f->nc; k++)
    if (f->c[k].max_ts < s && f->c[k].records) k0 = (long)k;
  uint32_t rfrom = k0 >= 0 ? open_from[k0] : 0;
  if (lo != UINT32_MAX && lo < rfrom) rfrom = lo; /* an event the rule keeps, started earlier still: not seen open */
  if (k0 >= 0 && (long)rfrom + 64 < k0) t->long_reach++;
  t->span_ns += (double)span;
  uint8_t *iin = NULL; /* the index's plan, when every events chunk is the tool's (else the whole read) */
  if (ix && ix->n == f->nc && ix->indexed) {
    if (!(iin = calloc(f->nc, 1))) exit(1);
    index_plan(f, ix, s, u, gpu, margin, iin, t);
    t->files_indexed++;
    t->index_bytes += ix->index_bytes;
  }
  for (size_t k = 0; k < f->nc; k++) {
    t->bytes += (double)f->c[k].bytes, t->records += (double)f->c[k].records, t->chunks += 1;
    if (f->c[k].records) t->chunk_ns += (double)(f->c[k].max_ts - f->c[k].min_ts);
    int in[N_PLANS] = {exact[k], lo != UINT32_MAX && k >= rfrom && k <= hi, iin ? iin[k] : 1, 1};
    for (int p = 0; p < N_PLANS; p++)
      if (in[p]) t->plan_bytes[p] += (double)f->c[k].bytes, t->plan_records[p] += (double)f->c[k].records;
    if (iin && exact[k] && !iin[k]) t->index_misses++;
  }
  free(exact), free(open_from), free(nx), free(ord), free(m.k), free(m.v), free(iin);
}

static void one_file(const char *path, double from, double width, int gpu, uint64_t margin, struct totals *t) {
  struct file_scan f = {0};
  struct lens_trace_index ix;
  char err[256];
  int have_ix = lens_trace_index_read(path, &ix, err, sizeof err) == 0;
  if (!scan_file(path, &f)) plan_file(&f, have_ix ? &ix : NULL, from, width, gpu, margin, t);
  if (have_ix) lens_trace_index_free(&ix);
  free(f.c), free(f.e), free(f.r);
}

int main(int argc, char **argv) {
  double from = 0.495, width = 0.01;
  int gpu = GPU_ALL;
  uint64_t margin = 1000000000ull;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "--from") && i + 1 < argc) from = atof(argv[++i]);
    else if (!strcmp(argv[i], "--width") && i + 1 < argc) width = atof(argv[++i]);
    else if (!strcmp(argv[i], "--gpu-margin-ms") && i + 1 < argc) margin = (uint64_t)(atof(argv[++i]) * 1e6);
    else if (!strcmp(argv[i], "--gpu") && i + 1 < argc) {
      const char *v = argv[++i];
      gpu = !strcmp(v, "all") ? GPU_ALL : !strcmp(v, "near") ? GPU_NEAR : !strcmp(v, "none") ? GPU_NONE : -1;
      if (gpu < 0) return fprintf(stderr, "lens-window-plan: --gpu all|near|none\n"), 2;
    } else {
      fprintf(stderr, "usage: lens-window-plan [--from F] [--width W] [--gpu all|near|none] [--gpu-margin-ms MS] "
                      "TRACE|DIR...\n");
      return 2;
    }
  }
  if (i >= argc || from < 0 || width <= 0 || from + width > 1) return fprintf(stderr, "lens-window-plan: bad arguments\n"), 2;
  struct totals t = {0};
  size_t files = 0;
  for (; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st)) return fprintf(stderr, "lens-window-plan: %s: %s\n", argv[i], strerror(errno)), 1;
    if (!S_ISDIR(st.st_mode)) {
      one_file(argv[i], from, width, gpu, margin, &t), files++;
      continue;
    }
    struct dirent **names;
    int n = scandir(argv[i], &names, NULL, alphasort);
    for (int k = 0; k < n; k++) {
      size_t l = strlen(names[k]->d_name);
      if (l > 5 && !strcmp(names[k]->d_name + l - 5, ".lens")) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", argv[i], names[k]->d_name);
        one_file(p, from, width, gpu, margin, &t), files++;
      }
      free(names[k]);
    }
    free(names);
  }
  const char *pol = gpu == GPU_ALL ? "all KernelCh (today's rule)" : gpu == GPU_NEAR ? "KernelCh near the window" : "none";
  printf("%zu files; window %.3f..%.3f of each file's span; GPU maps from: %s\n", files, from, from + width, pol);
  printf("  %.0f event chunks, %.1f a file, %.0f bytes each; a chunk's records span %.1f ms on average, a file's "
         "events %.1f ms\n", t.chunks, t.chunks / (files ? (double)files : 1), t.bytes / (t.chunks ? t.chunks : 1),
         t.chunk_ns / (t.chunks ? t.chunks : 1) / 1e6, t.span_ns / (files ? (double)files : 1) / 1e6);
  printf("  %-8s %14s %8s %14s %8s\n", "plan", "event bytes", "share", "records", "share");
  const char *nm[N_PLANS] = {"exact", "range", "index", "today"};
  for (int p = 0; p < N_PLANS; p++)
    printf("  %-8s %14.0f %7.2f%% %14.0f %7.2f%%\n", nm[p], t.plan_bytes[p], 100 * t.plan_bytes[p] / (t.bytes ? t.bytes : 1),
           t.plan_records[p], 100 * t.plan_records[p] / (t.records ? t.records : 1));
  printf("  events never stopped (keep the range open to the end): %llu; files whose range reaches back over 64 chunks: %llu\n",
         (unsigned long long)t.never_stopped, (unsigned long long)t.long_reach);
  printf("  index: %llu of %zu files indexed (the others count whole in its plan), %llu bytes of INDEX chunks "
         "(%.2f%% of the event chunks'); %llu files without an open set before the window; misses (exact chunks "
         "the index plan leaves out): %llu\n",
         (unsigned long long)t.files_indexed, files, (unsigned long long)t.index_bytes,
         100.0 * (double)t.index_bytes / (t.bytes ? t.bytes : 1), (unsigned long long)t.index_fallback,
         (unsigned long long)t.index_misses);
  return 0;
}
