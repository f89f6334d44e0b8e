/* lens_model_load: read each file, walk its valid chunks (skipping damaged ones),
 * read metadata (pass A), then event records (pass B), then join. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c_x3.h"
#include "file_read.h"
#include "lens_chunk.h"
#include "reader_priv.h"

void lens_hugepage_hint(void *p, size_t len) {
  /* Big arrays are touched once page by page: on a VM each 4 KiB fault
   * costs microseconds and loading a few hundred MiB spent more time in
   * faults than in parsing. Transparent huge pages (in "madvise" mode on
   * many distributions) cut the faults 512-fold. A hint: failure is fine. */
  const uintptr_t huge = 2u << 20;
  if (len < 4 * huge) return;
  uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + len) & ~(huge - 1);
  if (e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
}

void lens_prefault(void *p, size_t len) {
  /* Memory about to be written whole, page by page: one call faults its
   * pages in inside the kernel instead of one trap per 4 KiB (on this VM a
   * trap cost about as much as the partial merge's decoding: docs/scale.md,
   * Figures). Linux >= 5.14; elsewhere the pages fault as before. */
#ifdef MADV_POPULATE_WRITE
  const uintptr_t pg = 4096;
  uintptr_t a = ((uintptr_t)p + pg - 1) & ~(pg - 1), e = ((uintptr_t)p + len) & ~(pg - 1);
  if (len >= 16 * pg && e > a) (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
  (void)p, (void)len;
#endif
}

int lens_vec_reserve(void **arr, size_t *cap, size_t n, size_t es) {
  if (n <= *cap) return 0;
  size_t c = *cap ? *cap : 16;
  while (c < n) c *= 2;
  void *p = realloc(*arr, c * es);
  if (!p) return -1;
  lens_hugepage_hint(p, c * es);
  *arr = p;
  *cap = c;
  return 0;
}

struct lens_arena_block {
  struct lens_arena_block *next;
  size_t used, cap;
  char data[];
};

const char *lens_arena_strndup(struct lens_arena_block **head, const void *s, size_t len) {
  struct lens_arena_block *b = *head;
  if (!b || b->cap - b->used < len + 1) {
    size_t cap = len + 1 > 65536 ? len + 1 : 65536;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->next = *head;
    b->used = 0;
    b->cap = cap;
    *head = b;
  }
  char *d = b->data + b->used;
  memcpy(d, s, len);
  d[len] = 0;
  b->used += len + 1;
  return d;
}

void lens_arena_free(struct lens_arena_block *head) {
  while (head) {
    struct lens_arena_block *n = head->next;
    free(head);
    head = n;
  }
}

static int fail(struct lens_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct lens_builder *b, const char *fmt, ...) {
  if (b->err && b->err_len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, b->err_len, fmt, ap);
    va_end(ap);
  }
  return -1;
}

int lens_builder_oom(struct lens_builder *b) { return fail(b, "out of memory while loading traces"); }

/* The header at off fails its check: the next 8-byte aligned offset whose
 * header checks and whose payload fits the file, or 0 if there is none (the
 * rule of chunk_stream.c's resync, which the columns follow). */
static size_t resync(const uint8_t *base, size_t size, size_t off) {
  struct lens_chunk_hdr h;
  for (off += 8; off < size && size - off >= sizeof h; off += 8) {
    uint32_t magic;
    memcpy(&magic, base + off, sizeof magic);
    if (magic != LENS_CHUNK_MAGIC) continue;
    memcpy(&h, base + off, sizeof h);
    if (lens_chunk_hdr_check(&h)) continue;
    if ((uint64_t)h.payload_len + lens_chunk_padding(h.payload_len) > size - off - sizeof h) continue;
    return off;
  }
  return 0;
}

/* Walks chunks from the end of the file header; returns the validated views
 * and sets the file's truncation and damage fields. A chunk whose payload
 * fails its CRC is skipped; a header that fails its check is skipped up to
 * the next valid header (resync); both count as damage. A header or payload
 * past the file's end, or a bad header with no valid one after it, ends the
 * walk: the rest is a cut tail. */
static int walk_chunks(struct lens_builder *b, struct lens_file *f, const uint8_t *base, size_t size,
                       struct lens_chunk_view **views, size_t *n_views) {
  size_t cap = 0, off = sizeof(struct lens_file_hdr);
  *views = NULL;
  *n_views = 0;
  const char *why = NULL;
  uint64_t expect_seq = 0;
  int resynced = 0;
  f->lost_chunks = 0;
  f->damaged_bytes = 0;
  f->damaged_chunks = 0;
  /* A window's scan and load walk the bytes its plan walked: their payloads' CRCs were checked there. */
  int checked = b->win && lens_win_payloads_checked(b, base, size);
  while (off < size) {
    struct lens_chunk_hdr h;
    if (size - off < sizeof h) {
      why = "file ends inside a chunk header";
      break;
    }
    memcpy(&h, base + off, sizeof h);
    if (lens_chunk_hdr_check(&h)) {
      size_t next = resync(base, size, off);
      if (!next) {
        why = "chunk header fails its check (magic or CRC)";
        break;
      }
      f->damaged_bytes += next - off;
      resynced = 1;
      off = next;
      continue;
    }
    uint64_t need = (uint64_t)h.payload_len + lens_chunk_padding(h.payload_len);
    if (need > size - off - sizeof h) {
      why = "file ends inside a chunk payload";
      break;
    }
    const uint8_t *p = base + off + sizeof h;
    off += sizeof h + need;
    /* The writer numbers every chunk it tries, written or not: a jump is
     * a loss (disk full) that its own DROPS chunk may not have survived, or,
     * right after a skipped bad header, the chunks the damage took. */
    if (h.seq > expect_seq) {
      if (resynced) f->damaged_chunks += h.seq - expect_seq;
      else f->lost_chunks += h.seq - expect_seq;
    }
    resynced = 0;
    expect_seq = h.seq + 1;
    /* lens_chunk_payload_check's test, three streams at a time (crc32c_x3.h) */
    if (!checked && lens_crc32c_x3(0, p, h.payload_len) != h.payload_crc) { /* a good header: exactly this chunk is lost */
      f->damaged_bytes += sizeof h + need;
      f->damaged_chunks++;
      continue;
    }
    if (lens_vec_reserve((void **)views, &cap, *n_views + 1, sizeof **views)) return lens_builder_oom(b);
    (*views)[*n_views].h = (const struct lens_chunk_hdr *)(p - sizeof h);
    (*views)[*n_views].payload = p;
    (*views)[*n_views].len = h.payload_len;
    (*n_views)++;
  }
  f->truncated_bytes = size - off;
  f->truncation = why;
  return 0;
}

/* The events and states arrays (and the folded steps' with
 * LENS_LOAD_FOLD_STEPS) sized once for the most the files can hold,
 * before the file's records are read: grown by doubling, each step copied
 * the array, and with the pass driver's heap (no mmap, no trim:
 * tools/cli/passes.c) the old copies stayed behind as holes in the heap,
 * a hundred MB of resident memory on 0.8 M events (issue 23). The bound
 * is the fixed records the file's EVENTS chunks hold (a packed chunk
 * says how many bytes it unpacks to), a START taking 48 bytes or more and
 * a STATE 40, and the files still to read in the same proportion to their
 * size. Room never touched costs address space only; when even that is
 * refused, the arrays grow as before. */
/* The most fixed-record bytes presize believes a packed chunk's byte holds:
 * four times the most seen (the generator's zstd chunks 59, the replay's 30,
 * the plugin's hang floods 20; 2026-11-30). Beyond it the arrays grow by
 * doubling, as they did before presizing. */
#define PRESIZE_MAX_RATIO 256

static void presize(struct lens_builder *b, const struct lens_chunk_view *v, size_t nv, size_t size) {
  uint64_t raw = 0;
  for (size_t i = 0; i < nv; i++) {
    if (v[i].h->type == LENS_CHUNK_EVENTS) {
      raw += v[i].len;
    } else if (v[i].h->type == LENS_CHUNK_EVENTS_PACKED && v[i].len >= sizeof(struct lens_packed_hdr)) {
      struct lens_packed_hdr ph;
      memcpy(&ph, v[i].payload, sizeof ph);
      /* a larger one is malformed, not read; and what a chunk claims counts
       * at most PRESIZE_MAX_RATIO times its bytes, so that a few KB of
       * crafted headers cannot reserve gigabytes (address space a normal
       * build never touches, but a sanitizer's allocator clears it: a fuzzed
       * 8 KB trace took 15 s under ASan) */
      if (ph.raw_bytes <= LENS_UNPACK_MAX) raw += ph.raw_bytes < (uint64_t)v[i].len * PRESIZE_MAX_RATIO
                                                      ? ph.raw_bytes
                                                      : (uint64_t)v[i].len * PRESIZE_MAX_RATIO;
    }
  }
  double all = (double)raw + (double)b->bytes_left * ((double)raw / (double)(size ? size : 1));
  if (all > (double)(UINT64_MAX >> 8)) all = (double)(UINT64_MAX >> 8);
  uint64_t est = (uint64_t)all;
  (void)lens_vec_reserve((void **)&b->m->events, &b->cap_events, b->m->n_events + (size_t)(est / 48) + 16,
                         sizeof *b->m->events);
  /* Folded, most STATEs are a step's, kept in its fstep; the others' (a
   * ProxyOp's, a ProxyCtrl's) still grew by doubling here. */
  (void)lens_vec_reserve((void **)&b->states, &b->cap_states, b->n_states + (size_t)(est / 40) + 16,
                         sizeof *b->states);
  if (!(b->flags & LENS_LOAD_FOLD_STEPS)) return;
  /* Folded, the steps (two thirds of the STARTs of a real trace) go to
   * fsteps instead of events: the same bound, or their doublings were a
   * tenth of summary's user cycles (realloc's copies, then their holes). */
  (void)lens_vec_reserve((void **)&b->fsteps, &b->cap_fsteps, b->n_fsteps + (size_t)(est / 48) + 16,
                         sizeof *b->fsteps);
  if (b->flags & LENS_LOAD_STEP_FACTS) /* one fmore per fstep */
    (void)lens_vec_reserve((void **)&b->fmore, &b->cap_fmore, b->n_fsteps + (size_t)(est / 48) + 16,
                           sizeof *b->fmore);
}

static int load_file(struct lens_builder *b, const char *path, uint64_t *done, uint64_t total,
                     void (*progress)(uint64_t, uint64_t)) {
  struct lens_model *m = b->m;
  uint8_t *addr;
  size_t size;
  int scan = b->win_mode == LENS_WIN_SCAN;
  b->win_starts = b->win_pends = 0;
  /* Read, not mapped: a live trace can shrink under us (SIGBUS on a map).
   * A windowed load reads it once for all its scans (window.c). */
  if (b->win) {
    if (lens_win_bytes(b, path, &addr, &size)) return -1;
  } else if (lens_read_regular_file(path, UINT64_MAX, "trace", &addr, &size, b->err, b->err_len)) {
    return -1;
  }
  if (size < sizeof(struct lens_file_hdr)) {
    if (!b->win || b->win_mode == LENS_WIN_BUILD) free(addr);
    return fail(b, "%s is not a .lens trace (%zu bytes, shorter than the file header)", path, size);
  }
  if (!scan) { /* a scan's bytes stay the window's */
    struct lens_map *mp = LENS_VEC_PUSH(b, b->priv->maps, b->priv->n_maps, priv->cap_maps);
    if (!mp) {
      free(addr);
      return lens_builder_oom(b);
    }
    mp->addr = addr;
    mp->len = size;
  }
  const uint8_t *base = addr;
  struct lens_file_hdr fh;
  memcpy(&fh, base, sizeof fh);
  if (memcmp(fh.magic, LENS_FILE_MAGIC, 8) != 0)
    return fail(b, "%s is not a .lens trace (%s)", path, lens_not_trace_why(base, sizeof fh));
  if (lens_file_hdr_check(&fh))
    return fail(b, "%s: unsupported trace format version %u (this reader knows %u)", path, fh.format_version,
                LENS_FORMAT_VERSION);

  struct lens_file *f = LENS_VEC_PUSH(b, m->files, m->n_files, cap_files);
  if (!f) return lens_builder_oom(b);
  memset(f, 0, sizeof *f);
  f->path = lens_arena_strndup(&b->priv->arena, path, strlen(path));
  if (!f->path) return lens_builder_oom(b);
  f->producer = fh.producer;
  f->size_bytes = size;
  b->file = (int32_t)(m->n_files - 1);
  b->proc = -1;
  b->n_sess = 0;
  if (fh.producer != LENS_PRODUCER_SCHED) {
    struct lens_proc *p = LENS_VEC_PUSH(b, m->procs, m->n_procs, cap_procs);
    if (!p) return lens_builder_oom(b);
    memset(p, 0, sizeof *p);
    p->file = b->file;
    b->proc = (int32_t)(m->n_procs - 1);
    /* The proc's id table (id_seq.h: its runs grow with the ids they hold). */
    size_t cap = b->priv->n_events_hash;
    struct lens_idseq *hs = realloc(b->priv->events, m->n_procs * sizeof *hs);
    if (!hs) return lens_builder_oom(b);
    b->priv->events = hs;
    for (size_t i = cap; i < m->n_procs; i++) memset(&hs[i], 0, sizeof hs[i]);
    b->priv->n_events_hash = m->n_procs;
  }

  struct lens_chunk_view *v;
  size_t nv;
  if (walk_chunks(b, f, base, size, &v, &nv)) return -1;
  if (b->win_mode == LENS_WIN_OFF && b->proc >= 0) presize(b, v, nv, size);
  int rc = 0;
  for (size_t i = 0; i < nv && !rc; i++) {
    b->chunk = (uint32_t)i;
    rc = lens_read_meta_chunk(b, v[i].h, v[i].payload, v[i].len);
  }
  uint64_t step = 0;
  for (size_t i = 0; i < nv && !rc; i++) {
    b->chunk = (uint32_t)i;
    int events = v[i].h->type == LENS_CHUNK_EVENTS || v[i].h->type == LENS_CHUNK_EVENTS_PACKED;
    int unread = events && b->win && b->proc >= 0
                     ? lens_win_chunk_unread(b, v[i].h, v[i].payload, v[i].len,
                                             (uint64_t)(v[i].payload - base) - sizeof(struct lens_chunk_hdr))
                     : 0;
    if (unread < 0)
      rc = -1;
    else if (unread)
      ; /* the window's plan leaves it out */
    else if (v[i].h->type == LENS_CHUNK_EVENTS && b->proc >= 0)
      rc = lens_read_events_chunk(b, v[i].h, v[i].payload, v[i].len);
    else if (v[i].h->type == LENS_CHUNK_EVENTS_PACKED && b->proc >= 0)
      rc = scan                              ? lens_scan_packed_chunk(b, v[i].h, v[i].payload, v[i].len)
           : b->win_mode == LENS_WIN_BUILD ? lens_build_packed_chunk(b, v[i].h, v[i].payload, v[i].len)
                                             : lens_read_packed_chunk(b, v[i].h, v[i].payload, v[i].len);
    if (!rc && !scan && b->n_pend + b->n_idq) rc = lens_apply_chunk(b);
    if (!rc && scan && b->proc >= 0) rc = lens_win_chunk_end(b); /* where the load will apply records */
    step += v[i].len + sizeof(struct lens_chunk_hdr);
    if (progress && step > (16u << 20)) {
      *done += step;
      step = 0;
      progress(*done, total);
    }
  }
  *done += step;
  free(v);
  if (scan) return rc ? rc : lens_win_end_file(b);
  if (!rc) rc = lens_apply_pending(b);
  return rc;
}

/* What a load's builder holds beside the model, freed whether it built one or failed. */
static void builder_release(struct lens_builder *b) {
  free(b->states);
  free(b->pend);
  free(b->carry);
  lens_idseq_free(&b->carried);
  free(b->sess);
  free(b->thread_tmp);
  free(b->fsteps);
  free(b->fmore);
  free(b->fruns);
  free(b->fevs);
  free(b->idq);
  lens_hash_free(&b->strings);
  lens_hash_free(&b->comms);
  lens_hash_free(&b->threads);
  lens_packed_release(b);
}

struct lens_model *lens_model_load(const char *const *paths, size_t n_paths, char *err, size_t err_len,
                                   void (*progress)(uint64_t done, uint64_t total)) {
  return lens_model_load_ex(paths, n_paths, 0, err, err_len, progress);
}

struct lens_model *lens_model_load_ex(const char *const *paths, size_t n_paths, uint32_t flags, char *err,
                                      size_t err_len, void (*progress)(uint64_t done, uint64_t total)) {
  return lens_load_files(paths, n_paths, flags, NULL, LENS_WIN_OFF, err, err_len, progress);
}

struct lens_model *lens_load_files(const char *const *paths, size_t n_paths, uint32_t flags, struct lens_win *win,
                                   uint32_t win_mode, char *err, size_t err_len,
                                   void (*progress)(uint64_t done, uint64_t total)) {
  if (err && err_len) err[0] = 0;
  struct lens_model *m = calloc(1, sizeof *m);
  struct lens_reader_priv *priv = calloc(1, sizeof *priv);
  struct lens_builder b = {.m = m, .priv = priv, .err = err, .err_len = err_len, .flags = flags,
                           .win = win, .win_mode = win_mode};
  if (!m || !priv) {
    free(m);
    free(priv);
    if (err && err_len) snprintf(err, err_len, "out of memory");
    return NULL;
  }
  m->priv = priv;
  m->steps_folded = (flags & LENS_LOAD_FOLD_STEPS) != 0;
  if (!n_paths) {
    fail(&b, "no trace files given");
    goto bad;
  }
  uint64_t total = 0, done = 0;
  for (size_t i = 0; i < n_paths; i++) {
    struct stat st;
    if (!stat(paths[i], &st)) total += (uint64_t)st.st_size;
  }
  /* The event array is sized for the most events the bytes can hold as the
   * first file is read (presize); a window's load sizes it for what it
   * builds (window.c), its scans build nothing. */
  {
    size_t *keep = malloc(n_paths * sizeof *keep), n_keep = 0, n_dups = 0;
    m->same_traces = calloc(n_paths, sizeof *m->same_traces);
    if (!keep || !m->same_traces || lens_same_trace_select(paths, n_paths, keep, &n_keep, m->same_traces, &n_dups)) {
      free(keep);
      lens_builder_oom(&b);
      goto bad;
    }
    /* Paths as the model's own strings: the caller's array may go first. */
    for (size_t i = 0; i < n_dups; i++) {
      struct lens_same_trace *d = &m->same_traces[i];
      d->path = lens_arena_strndup(&priv->arena, d->path, strlen(d->path));
      d->same_as = lens_arena_strndup(&priv->arena, d->same_as, strlen(d->same_as));
      if (!d->path || !d->same_as) {
        free(keep);
        lens_builder_oom(&b);
        goto bad;
      }
    }
    m->n_same_traces = n_dups;
    uint64_t left = 0; /* the bytes of the files after the one being read (presize) */
    for (size_t k = 0; k < n_keep; k++) {
      struct stat st;
      if (!stat(paths[keep[k]], &st)) left += (uint64_t)st.st_size;
    }
    for (size_t k = 0; k < n_keep; k++) {
      const char *path = paths[keep[k]];
      struct stat st;
      if (!stat(path, &st)) left -= (uint64_t)st.st_size < left ? (uint64_t)st.st_size : left;
      b.bytes_left = left;
      b.win_file = k;
      if (load_file(&b, path, &done, total, progress)) {
        free(keep);
        goto bad;
      }
    }
    free(keep);
  }
  /* What only the reading of the files needed goes before the joins
   * allocate theirs: the chunk queues and the unpacked chunk. */
  free(b.pend), b.pend = NULL, b.cap_pend = 0;
  free(b.idq), b.idq = NULL, b.cap_idq = 0;
  lens_packed_release(&b);
  if (win_mode != LENS_WIN_SCAN && lens_resolve_model(&b)) goto bad;
  if (progress) progress(total, total);
  builder_release(&b);
  return m;
bad:
  builder_release(&b);
  lens_model_free(m);
  return NULL;
}

int lens_model_on_free(struct lens_model *m, void (*fn)(struct lens_model *m)) {
  struct lens_reader_priv *priv = m ? m->priv : NULL;
  if (!priv || !fn) return -1;
  for (size_t i = 0; i < priv->n_on_free; i++)
    if (priv->on_free[i] == fn) return 0;
  if (priv->n_on_free == LENS_MODEL_RELEASE_MAX) return -1;
  priv->on_free[priv->n_on_free++] = fn;
  return 0;
}

void lens_model_free(struct lens_model *m) {
  if (!m) return;
  struct lens_reader_priv *priv = m->priv;
  /* Analyses' state first (lens_model_on_free), last registered first. */
  for (size_t i = priv ? priv->n_on_free : 0; i-- > 0;) priv->on_free[i](m);
  if (priv) {
    for (size_t i = 0; i < priv->n_maps; i++) free(priv->maps[i].addr);
    free(priv->maps);
    lens_arena_free(priv->arena);
    for (size_t i = 0; i < priv->n_events_hash; i++) lens_idseq_free(&priv->events[i]);
    free(priv->events);
    free(priv->sessions);
    free(priv->fsteps);
    free(priv->fruns);
    free(priv->fevs);
    free(priv);
  }
  free(m->files);
  free(m->procs);
  free(m->comms);
  free(m->threads);
  free(m->events);
  free(m->states);
  free(m->notes);
  free(m->cupti);
  free(m->sched);
  free(m->sched_hist);
  free(m->clocks);
  free(m->kernels);
  free(m->clock_maps);
  free(m->kch_cols);
  free(m->same_traces);
  free(m->folded_ops);
  free(m->pending_steps);
  free(m->pending_children);
  free(m->step_facts);
  free(m->step_children);
  free(m);
}
