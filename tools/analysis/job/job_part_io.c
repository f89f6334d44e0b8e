/* Partial files (`nccl-lens job --partial -o FILE`), format version 2.
 *
 * All integers little-endian, structs naturally aligned (sizes asserted
 * below):
 *   header  32 bytes: magic "NCCLJOBP", u32 version (2), u32 header size
 *           (32), u32 flags (bit 0: a GPU clock map was fitted), u32 and u64
 *           reserved (0)
 *   then sections, each: struct sec (24 bytes: u32 tag, u32 CRC-32C of the
 *           stored payload, u64 count, u64 stored payload bytes) + payload.
 *           Version 2 stores each payload of one byte or more as one zstd
 *           frame (with its content size) of the bytes below; version 1
 *           stored them as they are (padded to 8), and is still read.
 *     1 FILES    count strings: u32 length + bytes, padded to 8
 *     2 PROCS    count x struct lens_job_pproc (pid, outer pid, host[64])
 *     3 COMMS    count x struct lens_job_pcomm (proc, rank, nranks, 0, comm id, name[128])
 *     4 STRINGS  count strings as in FILES; records name them by index + 1 (0 = none)
 *     5 RECORDS  count x struct disk_rec: one rank's side of one instance
 *     6 OPS      count x {i32 sender, i32 receiver, u64 pace ns}: each proxy op
 *     7 RECX     count x struct disk_recx (user tag, longest starvation ns), one
 *                per record, in order, after RECORDS (added later: a file
 *                without it reads as untagged and never starved that long)
 *     8 ENDS     count x {u64 lo, hi}, one per record, in order, after RECORDS: the
 *                rank's end bracketed on its host's MONOTONIC for the host
 *                alignment (0, 0 none; lo > hi: its bounds contradicted)
 *     9 CLOCKS   count x struct lens_align_proc_clock (host[64], boot id[48],
 *                time namespace offset, has clock, ranks, REALTIME bound, its
 *                sample's MONOTONIC, REALTIME - MONOTONIC, drift and its error
 *                in ppm as doubles, first event), one per process (ENDS and
 *                CLOCKS added later: a file without them places no host)
 *    10 WAYS     count x struct lens_job_wop (host ns, record, peer rank, channel, is
 *                send, step, 0), in record order: each proxy op's one-way evidence
 *                (oneway.h) for the host alignment (added later: a file without it
 *                gives no one-way pair; an older reader skips it)
 *    11 CE       count 1, {u64 copy-engine collectives, their host enqueue ns}
 *                (added later: a file without it leaves them unknown)
 *    12 OPPH     count x {u32 phase us[3], u32 flags}, one per op, in order, after OPS:
 *                where each op's step time went (struct lens_job_op; added later: a file
 *                without it has no op's phases, and the job view names no slow link from it)
 *    13 OPBY     count x u64, one per op, in order, after OPS: each op's steps' bytes (added
 *                later: a file without it has no op's bytes; the job view then judges its
 *                links by their pace, as before, docs/job.md)
 *     0 END      count 0, no payload
 * A reader takes only the versions it knows (a version-1 reader refuses a
 * version-2 file by its version, with one line) and refuses a file that
 * fails a check; an unknown section tag is skipped (a newer writer may add
 * one). The sections' decompressed bytes together may be at most
 * PART_RAW_RATIO times the file's size (plus 1 MiB): a frame claiming more
 * is refused before anything is allocated for it (the measured ratio is 7 to
 * 8, docs/scale.md). */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "crc32c_x3.h"
#include "file_read.h"
#include "job_part.h"
#include "job_priv.h"
#include "lens_checked.h"
#include "lens_chunk.h"
#include "mem_hint.h"
#include "lens_utf8.h"

/* zstd level of the sections: 3 (zstd's default) took 2.40 MB of a host's
 * partial to 344 KB, 1 to 357 KB, 9 to 324 KB at several times the time. */
#define PART_ZSTD_LEVEL 3
#define PART_RAW_RATIO 256

struct fhdr { char magic[8]; uint32_t version, hdr_size, flags, reserved0; uint64_t reserved1; };
struct sec { uint32_t tag, crc; uint64_t count, len; };
enum { S_END = 0, S_FILES = 1, S_PROCS = 2, S_COMMS = 3, S_STRINGS = 4, S_RECORDS = 5, S_OPS = 6, S_RECX = 7,
       S_ENDS = 8, S_CLOCKS = 9, S_WAYS = 10, S_CE = 11, S_OPPH = 12,
       S_OPBY = 13 };

struct disk_rec {
  uint64_t comm_id;
  int64_t seq;
  int32_t kind, func, a, b, nranks;
  uint32_t iflags, func_i, algo_i, proto_i;
  int32_t rank, proc, event;
  uint64_t bytes, first_op;
  uint32_t n_ops, host_span, starved, reserved;
  uint64_t span_ns, api_ns, launch_start_ns, launch_stop_ns, kstart_mono_ns, kstop_mono_ns, map_err_ns,
      kstart_notice_ns;
};
struct disk_recx { uint64_t user_tag, starved_ns; };
struct disk_op { int32_t snd, rcv; uint64_t dur; };
struct disk_oph { uint32_t phase_us[3], flags; };
struct disk_end { uint64_t lo, hi; };
_Static_assert(sizeof(struct fhdr) == 32, "partial header");
_Static_assert(sizeof(struct disk_recx) == 16, "partial record extras");
_Static_assert(sizeof(struct sec) == 24, "partial section");
_Static_assert(sizeof(struct disk_rec) == 160, "partial record");
_Static_assert(sizeof(struct lens_job_pproc) == 72, "partial proc");
_Static_assert(sizeof(struct lens_job_pcomm) == 152, "partial comm");
_Static_assert(sizeof(struct disk_op) == 16, "partial op");
_Static_assert(sizeof(struct disk_oph) == 16, "partial op phases");
_Static_assert(sizeof(struct disk_end) == 16, "partial rank end");
_Static_assert(sizeof(struct lens_job_wop) == 24, "partial one-way evidence");
_Static_assert(sizeof(struct lens_align_proc_clock) == 176, "partial process clock");

/* ---- writing ---- */
struct buf { uint8_t *p; size_t len, cap; };
static int put(struct buf *b, const void *d, size_t n) {
  if (b->len + n > b->cap) {
    size_t c = b->cap ? b->cap : 4096;
    while (c < b->len + n) c *= 2;
    uint8_t *q = realloc(b->p, c);
    if (!q) return -1;
    b->p = q, b->cap = c;
  }
  memcpy(b->p + b->len, d, n);
  b->len += n;
  return 0;
}
static int put_str(struct buf *b, const char *s) {
  static const uint8_t zero[8];
  uint32_t l = (uint32_t)strlen(s);
  return put(b, &l, 4) || put(b, s, l) || put(b, zero, (8 - ((4 + l) & 7)) & 7);
}
/* One section, its payload compressed into z's buffer (one zstd frame). */
struct zw { ZSTD_CCtx *cx; void *out; size_t cap; };
static int section(FILE *f, struct zw *z, uint32_t tag, uint64_t count, const void *p, size_t len) {
  const void *w = p;
  size_t wl = len;
  if (len) {
    size_t need = ZSTD_compressBound(len);
    if (need > z->cap) {
      void *q = realloc(z->out, need);
      if (!q) return -1;
      z->out = q, z->cap = need;
    }
    size_t r = ZSTD_compressCCtx(z->cx, z->out, z->cap, p, len, PART_ZSTD_LEVEL);
    if (ZSTD_isError(r)) return -1;
    w = z->out, wl = r;
  }
  struct sec s = {tag, lens_crc32c(0, w, wl), count, wl};
  return fwrite(&s, sizeof s, 1, f) != 1 || (wl && fwrite(w, wl, 1, f) != 1) ? -1 : 0;
}

/* String table: the distinct pointers of the records (few), linear lookup
 * against the last ones seen. */
struct stab { const char **s; size_t n, cap; };
static uint32_t stab_id(struct stab *t, const char *s, int *oom) {
  if (!s) return 0;
  for (size_t i = t->n; i-- > 0;)
    if (t->s[i] == s || !strcmp(t->s[i], s)) return (uint32_t)i + 1;
  if (t->n == t->cap) {
    size_t c = t->cap ? t->cap * 2 : 16;
    const char **q = realloc(t->s, c * sizeof *q);
    if (!q) return *oom = 1, 0;
    t->s = q, t->cap = c;
  }
  t->s[t->n++] = s;
  return (uint32_t)t->n;
}

/* OPS (each op's link and pace), OPPH (its phases) and OPBY (its bytes), as
 * three sections: a reader that knows no OPPH or OPBY skips it. */
static int ops_sections(FILE *f, struct zw *z, const struct lens_job_part *p) {
  size_t n = p->n_ops;
  struct disk_op *o = malloc((n ? n : 1) * sizeof *o);
  struct disk_oph *h = malloc((n ? n : 1) * sizeof *h);
  uint64_t *by = malloc((n ? n : 1) * sizeof *by);
  int rc = -1;
  if (o && h && by) {
    for (size_t i = 0; i < n; i++) {
      const struct lens_job_op *x = &p->ops[i];
      o[i] = (struct disk_op){x->snd, x->rcv, x->dur};
      h[i] = (struct disk_oph){{x->phase_us[0], x->phase_us[1], x->phase_us[2]}, x->flags};
      by[i] = x->bytes;
    }
    rc = section(f, z, S_OPS, n, o, n * sizeof *o) || section(f, z, S_OPPH, n, h, n * sizeof *h) ||
                 section(f, z, S_OPBY, n, by, n * sizeof *by)
             ? -1
             : 0;
  }
  free(o);
  free(h);
  free(by);
  return rc;
}

int lens_job_part_write(FILE *f, const struct lens_job_part *p) {
  struct fhdr h = {.version = LENS_JOB_PART_VERSION, .hdr_size = sizeof h, .flags = p->have_clock_map ? 1u : 0u};
  memcpy(h.magic, LENS_JOB_PART_MAGIC, 8);
  struct buf b = {0};
  struct stab t = {0};
  struct zw z = {ZSTD_createCCtx(), NULL, 0};
  int oom = 0, rc = -1;
  if (!z.cx || fwrite(&h, sizeof h, 1, f) != 1) goto out;
  for (size_t i = 0; i < p->n_files; i++)
    if (put_str(&b, p->files[i])) goto out;
  if (section(f, &z, S_FILES, p->n_files, b.p, b.len)) goto out;
  if (section(f, &z, S_PROCS, p->n_procs, p->procs, p->n_procs * sizeof *p->procs)) goto out;
  if (section(f, &z, S_COMMS, p->n_comms, p->comms, p->n_comms * sizeof *p->comms)) goto out;
  /* records first into the buffer (they name the strings), strings then written before them */
  struct buf rb = {0};
  for (size_t i = 0; i < p->n_recs; i++) {
    const struct lens_job_prec *x = &p->recs[i];
    struct disk_rec d = {.comm_id = x->comm_id, .seq = x->seq, .kind = x->kind, .func = x->func, .a = x->a,
                         .b = x->b, .nranks = x->nranks, .iflags = x->iflags,
                         .func_i = stab_id(&t, x->func_s, &oom), .algo_i = stab_id(&t, x->algo_s, &oom),
                         .proto_i = stab_id(&t, x->proto_s, &oom), .rank = x->r.rank, .proc = x->r.proc,
                         .event = x->r.event, .bytes = x->bytes, .first_op = x->first_op, .n_ops = x->n_ops,
                         .host_span = x->r.host_span, .starved = x->r.starved, .span_ns = x->r.span_ns,
                         .api_ns = x->r.api_ns, .launch_start_ns = x->r.launch_start_ns,
                         .launch_stop_ns = x->r.launch_stop_ns, .kstart_mono_ns = x->r.kstart_mono_ns,
                         .kstop_mono_ns = x->r.kstop_mono_ns, .map_err_ns = x->r.map_err_ns,
                         .kstart_notice_ns = x->r.kstart_notice_ns};
    if (oom || put(&rb, &d, sizeof d)) {
      free(rb.p);
      goto out;
    }
  }
  b.len = 0;
  for (size_t i = 0; i < t.n; i++)
    if (put_str(&b, t.s[i])) {
      free(rb.p);
      goto out;
    }
  if (section(f, &z, S_STRINGS, t.n, b.p, b.len) || section(f, &z, S_RECORDS, p->n_recs, rb.p, rb.len)) {
    free(rb.p);
    goto out;
  }
  rb.len = 0;
  for (size_t i = 0; i < p->n_recs; i++) {
    struct disk_recx x = {p->recs[i].user_tag, p->recs[i].r.starved_ns};
    if (put(&rb, &x, sizeof x)) {
      free(rb.p);
      goto out;
    }
  }
  if (section(f, &z, S_RECX, p->n_recs, rb.p, rb.len)) {
    free(rb.p);
    goto out;
  }
  rb.len = 0;
  for (size_t i = 0; i < p->n_recs; i++) {
    struct disk_end x = {p->recs[i].r.end_lo_ns, p->recs[i].r.end_hi_ns};
    if (put(&rb, &x, sizeof x)) {
      free(rb.p);
      goto out;
    }
  }
  if (section(f, &z, S_ENDS, p->n_recs, rb.p, rb.len) ||
      (p->clocks && section(f, &z, S_CLOCKS, p->n_procs, p->clocks, p->n_procs * sizeof *p->clocks)) ||
      ops_sections(f, &z, p) ||
      section(f, &z, S_WAYS, p->n_wops, p->wops, p->n_wops * sizeof *p->wops) ||
      (p->have_ce && section(f, &z, S_CE, 1, (uint64_t[2]){p->ce_count, p->ce_enqueue_ns}, 16)) ||
      section(f, &z, S_END, 0, NULL, 0)) {
    free(rb.p);
    goto out;
  }
  free(rb.p);
  rc = 0;
out:
  free(b.p);
  free(t.s);
  free(z.out);
  ZSTD_freeCCtx(z.cx);
  return rc;
}

/* ---- what a partial may hold (job_part.h) ---- */
/* LENS_JOB_PART_DRIFT_MAX_PPM: the map computes drifts from CLOCK samples of
 * times at most 2^62 ns (the reader drops others) over at least
 * LENS_ALIGN_DRIFT_MIN_SPAN_NS (0.1 s): 2^63 / 1e8 * 1e6 < 1e17. NaN and
 * infinities fail the comparisons. */
#define RANK_TIMES(X)                                                                                                  \
  X(span_ns) X(api_ns) X(launch_start_ns) X(launch_stop_ns) X(kstart_mono_ns) X(kstop_mono_ns) X(map_err_ns)          \
      X(kstart_notice_ns) X(starved_ns) X(end_lo_ns) X(end_hi_ns)
int lens_job_rank_times_ok(const struct lens_job_rank *r) {
#define OK(f) &&lens_time_ok(r->f)
  return 1 RANK_TIMES(OK);
#undef OK
}
int lens_job_rank_clear_bad_times(struct lens_job_rank *r) {
  int n = 0;
#define CLR(f)                                                                                                         \
  if (!lens_time_ok(r->f)) r->f = 0, n++;
  RANK_TIMES(CLR)
#undef CLR
  return n;
}
int lens_job_clock_ok(const struct lens_align_proc_clock *c) {
  return lens_time_ok(c->bound_ns) && lens_time_ok(c->ref_mono_ns) && lens_time_ok(c->start_mono_ns) &&
         lens_stime_ok(c->real_minus_mono_ns) && lens_stime_ok(c->timens_mono_offset_ns) &&
         fabs(c->drift_ppm) <= LENS_JOB_PART_DRIFT_MAX_PPM && c->drift_err_ppm >= 0 &&
         c->drift_err_ppm <= LENS_JOB_PART_DRIFT_MAX_PPM;
}
int lens_job_clock_clear_bad(struct lens_align_proc_clock *c) {
  if (lens_job_clock_ok(c)) return 0;
  /* what was past the bounds is not evidence: the process as one without samples */
  if (!lens_time_ok(c->start_mono_ns)) c->start_mono_ns = 0;
  if (!lens_stime_ok(c->timens_mono_offset_ns)) c->timens_mono_offset_ns = 0;
  c->has_clock = 0;
  c->bound_ns = c->ref_mono_ns = 0;
  c->real_minus_mono_ns = 0;
  c->drift_ppm = 0;
  c->drift_err_ppm = LENS_ALIGN_DRIFT_UNKNOWN_PPM;
  return 1;
}

/* ---- reading ---- */
int lens_job_part_is(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char m[8];
  int r = fread(m, 8, 1, f) == 1 && !memcmp(m, LENS_JOB_PART_MAGIC, 8);
  fclose(f);
  return r;
}

static int bad(char *err, size_t len, const char *path, const char *why) {
  snprintf(err, len, "%s: not a valid job partial file (%s)", path, why);
  return -1;
}

/* count strings from a FILES/STRINGS payload, interned into p->strings. */
static int get_strs(struct lens_job_part *p, const uint8_t *d, size_t len, uint64_t count, const char ***out) {
  /* each string takes at least 8 bytes (its length, padded): a count the
   * payload cannot hold is refused before anything is allocated for it */
  if (count > len / 8) return -1;
  const char **v = calloc(count ? (size_t)count : 1, sizeof *v);
  if (!v) return -1;
  size_t off = 0;
  char tmp[4096];
  for (uint64_t i = 0; i < count; i++) {
    uint32_t l;
    if (off > len || len - off < 4) goto fail;
    memcpy(&l, d + off, 4);
    if (l >= sizeof tmp || l > len - off - 4) goto fail;
    memcpy(tmp, d + off + 4, l);
    tmp[l] = 0;
    lens_label_clean(tmp, sizeof tmp);
    if (!(v[i] = lens_job_part_intern(&p->strings, tmp))) goto fail;
    off += 4 + l + ((8 - ((4 + l) & 7)) & 7);
    if (off > len) goto fail;
  }
  *out = v;
  return 0;
fail:
  free(v);
  return -1;
}

/* The file mapped read-only with its pages populated, not read into the
 * heap: a version-1 file's sections are decoded straight from the page
 * cache, so the merge neither copies 84 MiB of partials (128 files, 416 k
 * records) nor faults a fresh heap page per 4 KiB of them (docs/scale.md,
 * Figures); a version-2 file's sections are decompressed from it, one at a
 * time, into a buffer freed after the section. A file that is
 * not regular, or empty, goes the read path for its error message. A
 * partial is written once, before the reduce: one truncated while mapped
 * would fault, which is why the trace reader (files still being written)
 * reads instead. */
static int map_file(const char *path, const uint8_t **d, size_t *size, int *mapped, char *err, size_t err_len) {
  *mapped = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (m != MAP_FAILED) {
      close(fd);
      *d = m, *size = (size_t)st.st_size, *mapped = 1;
      return 0;
    }
  }
  if (fd >= 0) close(fd);
  uint8_t *b;
  if (lens_read_regular_file(path, UINT64_MAX, "job partial", &b, size, err, err_len)) return -1;
  *d = b;
  return 0;
}

int lens_job_part_read(const char *path, struct lens_job_part *p, char *err, size_t err_len) {
  memset(p, 0, sizeof *p);
  const uint8_t *d;
  size_t size;
  int mapped;
  if (map_file(path, &d, &size, &mapped, err, err_len)) return -1;
  struct fhdr h;
  const char **files = NULL, **strs = NULL;
  uint8_t *raw = NULL; /* a version-2 section's payload, decompressed */
  ZSTD_DCtx *dx = NULL;
  uint64_t n_strs = 0;
  size_t n_clocks = 0;
  int rc = -1, got_end = 0;
  if (size < sizeof h) {
    bad(err, err_len, path, "shorter than its header");
    goto out;
  }
  memcpy(&h, d, sizeof h);
  if (memcmp(h.magic, LENS_JOB_PART_MAGIC, 8) || h.hdr_size != sizeof h) {
    bad(err, err_len, path, "bad magic or header size");
    goto out;
  }
  if (h.version != 1 && h.version != LENS_JOB_PART_VERSION) {
    snprintf(err, err_len, "%s: job partial format version %u (this reader knows 1 to %u)", path, h.version,
             LENS_JOB_PART_VERSION);
    goto out;
  }
  /* what the sections may decompress to, all together (saturated) */
  uint64_t raw_left = size > (UINT64_MAX - (1u << 20)) / PART_RAW_RATIO ? UINT64_MAX
                                                                         : (uint64_t)size * PART_RAW_RATIO + (1u << 20);
  if (h.version >= 2 && !(dx = ZSTD_createDCtx())) goto oom;
  p->have_clock_map = h.flags & 1;
  size_t off = sizeof h;
  while (!got_end) {
    struct sec s;
    if (size - off < sizeof s) {
      bad(err, err_len, path, "cut short (no END section)");
      goto out;
    }
    memcpy(&s, d + off, sizeof s);
    off += sizeof s;
    /* three interleaved streams: one 8-byte step at a time was 8 % of a
     * 128-partial merge (84 MiB) */
    if (s.len > size - off || lens_crc32c_x3(0, d + off, (size_t)s.len) != s.crc) {
      bad(err, err_len, path, "a section is cut short or fails its CRC");
      goto out;
    }
    const uint8_t *q = d + off;
    size_t l = (size_t)s.len;
    off += l;
    free(raw);
    raw = NULL;
    if (dx && l) {
      unsigned long long rl = ZSTD_getFrameContentSize(q, l);
      if (rl == ZSTD_CONTENTSIZE_UNKNOWN || rl == ZSTD_CONTENTSIZE_ERROR || rl > raw_left) {
        bad(err, err_len, path, "a section's zstd frame is damaged or claims too many bytes");
        goto out;
      }
      if (!(raw = malloc(rl ? (size_t)rl : 1))) goto oom;
      size_t got = ZSTD_decompressDCtx(dx, raw, (size_t)rl, q, l);
      if (ZSTD_isError(got) || got != rl) {
        bad(err, err_len, path, "a section's zstd frame does not decompress to its size");
        goto out;
      }
      raw_left -= rl;
      q = raw, l = (size_t)rl;
    }
#define FIXED(arr, n, T)                                                                                               \
  do {                                                                                                                 \
    size_t need_;                                                                                                      \
    if (lens_mul_size(s.count, sizeof(T), &need_) || need_ != l) {                                                    \
      bad(err, err_len, path, "a section's size does not match its count");                                          \
      goto out;                                                                                                        \
    }                                                                                                                  \
    if (!((arr) = malloc(l ? l : 1))) goto oom;                                                                        \
    lens_prefault((arr), l); /* the one-way evidence: 24 bytes per op, megabytes */                                    \
    memcpy((arr), q, l);                                                                                               \
    (n) = (size_t)s.count;                                                                                             \
  } while (0)
    switch (s.tag) {
    case S_END: got_end = 1; break;
    case S_FILES:
      if (files || get_strs(p, q, l, s.count, &files)) goto badstr;
      p->files = calloc(s.count ? (size_t)s.count : 1, sizeof *p->files);
      if (!p->files) goto oom;
      for (uint64_t i = 0; i < s.count; i++, p->n_files++)
        if (!(p->files[i] = strdup(files[i]))) goto oom;
      break;
    case S_STRINGS:
      if (strs || get_strs(p, q, l, s.count, &strs)) goto badstr;
      n_strs = s.count;
      break;
    case S_PROCS:
      if (p->procs) goto dup;
      FIXED(p->procs, p->n_procs, struct lens_job_pproc);
      for (size_t i = 0; i < p->n_procs; i++) {
        p->procs[i].host[sizeof p->procs[i].host - 1] = 0;
        lens_label_clean(p->procs[i].host, sizeof p->procs[i].host);
      }
      break;
    case S_COMMS:
      if (p->comms) goto dup;
      FIXED(p->comms, p->n_comms, struct lens_job_pcomm);
      for (size_t i = 0; i < p->n_comms; i++) {
        p->comms[i].name[sizeof p->comms[i].name - 1] = 0;
        lens_label_clean(p->comms[i].name, sizeof p->comms[i].name);
      }
      break;
    case S_OPS: {
      if (p->ops) goto dup;
      size_t need;
      if (lens_mul_size(s.count, sizeof(struct disk_op), &need) || need != l ||
          lens_mul_size(s.count, sizeof *p->ops, &need)) {
        bad(err, err_len, path, "a section's size does not match its count");
        goto out;
      }
      if (!(p->ops = malloc(need ? need : 1))) goto oom;
      lens_prefault(p->ops, need); /* 40 bytes per proxy op, megabytes */
      for (uint64_t i = 0; i < s.count; i++) {
        struct disk_op x;
        memcpy(&x, q + i * sizeof x, sizeof x);
        p->ops[i] = (struct lens_job_op){x.snd, x.rcv, x.dur, {0, 0, 0}, 0, 0}; /* OPPH, OPBY, if any */
      }
      p->n_ops = (size_t)s.count;
      break;
    }
    case S_OPPH:
      if (!p->ops || s.count != p->n_ops || l / sizeof(struct disk_oph) != s.count || l % sizeof(struct disk_oph)) {
        bad(err, err_len, path, "op phases without their ops, or of another count");
        goto out;
      }
      for (uint64_t i = 0; i < s.count; i++) {
        struct disk_oph x;
        memcpy(&x, q + i * sizeof x, sizeof x);
        memcpy(p->ops[i].phase_us, x.phase_us, sizeof x.phase_us);
        p->ops[i].flags = x.flags & (LENS_JOB_OP_SEND | LENS_JOB_OP_SPLIT);
      }
      break;
    case S_OPBY:
      if (!p->ops || s.count != p->n_ops || l / sizeof(uint64_t) != s.count || l % sizeof(uint64_t)) {
        bad(err, err_len, path, "op bytes without their ops, or of another count");
        goto out;
      }
      for (uint64_t i = 0; i < s.count; i++) memcpy(&p->ops[i].bytes, q + i * sizeof(uint64_t), sizeof(uint64_t));
      break;
    case S_WAYS:
      if (p->wops) goto dup;
      FIXED(p->wops, p->n_wops, struct lens_job_wop);
      break;
    case S_CE: {
      uint64_t v[2];
      if (p->have_ce) goto dup;
      if (s.count != 1 || l != sizeof v) {
        bad(err, err_len, path, "a section's size does not match its count");
        goto out;
      }
      memcpy(v, q, sizeof v);
      p->ce_count = v[0], p->ce_enqueue_ns = v[1], p->have_ce = 1;
      break;
    }
    case S_RECORDS: {
      if (p->recs) goto dup;
      size_t need;
      if (lens_mul_size(s.count, sizeof(struct disk_rec), &need) || need != l ||
          lens_mul_size(s.count, sizeof *p->recs, &need)) {
        bad(err, err_len, path, "a section's size does not match its count");
        goto out;
      }
      /* malloc, not calloc: each record is written whole below, and calloc
       * cleared reused heap pages one fault at a time before the prefault */
      p->recs = malloc(need ? need : 1);
      if (!p->recs) goto oom;
      lens_prefault(p->recs, need);
      for (uint64_t i = 0; i < s.count; i++) {
        struct disk_rec x;
        memcpy(&x, q + i * sizeof x, sizeof x);
        if (x.func_i > n_strs || x.algo_i > n_strs || x.proto_i > n_strs) goto badstr;
        struct lens_job_prec *r = &p->recs[p->n_recs++];
        *r = (struct lens_job_prec){.comm_id = x.comm_id, .seq = x.seq, .kind = x.kind, .func = x.func, .a = x.a,
                                    .b = x.b, .nranks = x.nranks, .iflags = x.iflags,
                                    .func_s = x.func_i ? strs[x.func_i - 1] : NULL,
                                    .algo_s = x.algo_i ? strs[x.algo_i - 1] : NULL,
                                    .proto_s = x.proto_i ? strs[x.proto_i - 1] : NULL, .bytes = x.bytes,
                                    .first_op = x.first_op, .n_ops = x.n_ops};
        r->r = (struct lens_job_rank){.rank = x.rank, .proc = x.proc, .event = x.event, .span_ns = x.span_ns,
                                      .api_ns = x.api_ns, .launch_start_ns = x.launch_start_ns,
                                      .launch_stop_ns = x.launch_stop_ns, .kstart_mono_ns = x.kstart_mono_ns,
                                      .kstop_mono_ns = x.kstop_mono_ns, .map_err_ns = x.map_err_ns,
                                      .kstart_notice_ns = x.kstart_notice_ns, .host_span = x.host_span,
                                      .starved = x.starved};
      }
      break;
    }
    case S_RECX:
      if (!p->recs || s.count != p->n_recs || l / sizeof(struct disk_recx) != s.count ||
          l % sizeof(struct disk_recx)) {
        bad(err, err_len, path, "record extras without their records, or of another count");
        goto out;
      }
      for (uint64_t i = 0; i < s.count; i++) {
        struct disk_recx x;
        memcpy(&x, q + i * sizeof x, sizeof x);
        p->recs[i].user_tag = x.user_tag;
        p->recs[i].r.starved_ns = x.starved_ns;
      }
      break;
    case S_ENDS:
      if (!p->recs || s.count != p->n_recs || l / sizeof(struct disk_end) != s.count || l % sizeof(struct disk_end)) {
        bad(err, err_len, path, "rank ends without their records, or of another count");
        goto out;
      }
      for (uint64_t i = 0; i < s.count; i++) {
        struct disk_end x;
        memcpy(&x, q + i * sizeof x, sizeof x);
        p->recs[i].r.end_lo_ns = x.lo;
        p->recs[i].r.end_hi_ns = x.hi;
      }
      break;
    case S_CLOCKS: {
      if (p->clocks) goto dup;
      FIXED(p->clocks, n_clocks, struct lens_align_proc_clock);
      for (size_t i = 0; i < n_clocks; i++) {
        p->clocks[i].host[sizeof p->clocks[i].host - 1] = 0;
        lens_label_clean(p->clocks[i].host, sizeof p->clocks[i].host);
        p->clocks[i].boot_id[sizeof p->clocks[i].boot_id - 1] = 0;
        lens_label_clean(p->clocks[i].boot_id, sizeof p->clocks[i].boot_id);
      }
      break;
    }
    default: break; /* a newer writer's section */
    }
#undef FIXED
  }
  /* references inside the partial must hold before anyone indexes with them
   * (the sections may come in any order: PROCS after CLOCKS too) */
  if (p->clocks && n_clocks != p->n_procs) {
    bad(err, err_len, path, "process clocks of another count than the processes");
    goto out;
  }
  for (size_t i = 0; i < p->n_recs; i++) {
    const struct lens_job_prec *r = &p->recs[i];
    if ((r->r.proc >= 0 && (size_t)r->r.proc >= p->n_procs) || r->first_op > p->n_ops ||
        r->n_ops > p->n_ops - r->first_op) {
      bad(err, err_len, path, "a record points past the processes or ops");
      goto out;
    }
  }
  /* Times past LENS_TIME_MAX_NS and drifts out of any clock's range are no
   * readings: refused here, so the reduce and the alignment compute on
   * values whose sums and differences fit (lens_checked.h). */
  for (size_t i = 0; i < p->n_recs; i++) {
    if (!lens_job_rank_times_ok(&p->recs[i].r)) {
      bad(err, err_len, path, "a record's time is past 2^62 ns");
      goto out;
    }
  }
  for (size_t i = 0; i < p->n_wops; i++)
    if (!lens_time_ok(p->wops[i].t)) {
      bad(err, err_len, path, "one-way evidence's time is past 2^62 ns");
      goto out;
    }
  for (size_t i = 0; p->clocks && i < n_clocks; i++) {
    if (!lens_job_clock_ok(&p->clocks[i])) {
      bad(err, err_len, path, "a process clock's time or drift is out of range");
      goto out;
    }
  }
  for (size_t i = 0; i < p->n_wops; i++)
    if (p->wops[i].rec >= p->n_recs || (i && p->wops[i].rec < p->wops[i - 1].rec)) {
      bad(err, err_len, path, "one-way evidence points past the records or is out of record order");
      goto out;
    }
  for (size_t i = 0; i < p->n_comms; i++)
    if (p->comms[i].proc >= 0 && (size_t)p->comms[i].proc >= p->n_procs) {
      bad(err, err_len, path, "a communicator points past the processes");
      goto out;
    }
  rc = 0;
  goto out;
dup:
  bad(err, err_len, path, "a section appears twice");
  goto out;
badstr:
  bad(err, err_len, path, "bad string table");
  goto out;
oom:
  snprintf(err, err_len, "out of memory reading %s", path);
out:
  free(files);
  free(strs);
  free(raw);
  ZSTD_freeDCtx(dx);
  if (mapped) munmap((void *)d, size);
  else free((void *)d);
  if (rc) lens_job_part_free(p);
  return rc;
}
