/* lens-frame-bench: what the size of the writer's zstd frames costs and buys
 * (docs/trace-format.md, "Frame size"). Figures, not assertions.
 *
 *   lens-frame-bench [--repeat R] [--iters N] [--cli PATH] [--level L] [--kib K,...] [TRACE|DIR...]
 *
 * Without traces it first runs `nccl-lens replay --scenario all --nodes 2
 * --iters N` (default 20) with the plugin's defaults, into a temporary
 * directory. It reads every event record of the traces back (fixed, packed
 * or zstd chunks alike), each thread slot's records in their order, and
 * prints the frames the traces hold as written (row "traces": since
 * LENS_FRAME_STREAM_BYTES, a slot's frame stays open across the writer's
 * passes; before, one frame a writer pass a ring).
 *
 * Then, for each frame size K KiB (default 4, 16, 64, 256: bytes of varint
 * stream a frame holds, i.e. zstd's decompressed size), it packs each slot's
 * records again with the writer's own encoder (common/lens_pack.c, a new
 * frame once the stream reaches K KiB) and zstd at the writer's level
 * (common/lens_pack_chunk.c), and prints:
 *   - the compressed bytes and bytes an event (event = a START);
 *   - decoding, single thread, CPU time, fastest of R passes over all frames
 *     (page-cache-free: the frames are in memory): zstd alone, and zstd plus
 *     the varint decode of every record (common/lens_unpack.h, the one decoder
 *     both readers use), as MB/s of compressed input and events/s per core;
 *   - what a SIGKILL loses when the writer keeps a frame open until it is
 *     full: up to one frame of stream per thread slot, as events and as ms
 *     of that slot's events at the traces' own event rate (events over each
 *     process's span of record times); for the busiest slot and summed.
 * The writer also writes every open frame every LENS_FRAME_MAX_AGE_MS, which
 * bounds the loss of a slot that fills its frame slowly; and a kill also
 * loses what the rings held (one writer pass: about 1 ms while records
 * arrive). */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "chunk_stream.h"
#include "lens_pack.h"
#include "lens_pack_chunk.h"
#include "lens_unpack.h"

#define MAX_SLOTS 4096

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fprintf(stderr, "lens-frame-bench: out of memory\n");
    exit(1);
  }
  return q;
}

/* One thread slot of one trace file: its fixed records, in order. */
struct slot {
  uint8_t *recs;
  size_t len, cap;
  uint64_t starts, records;
  int proc; /* index of its file */
};
struct proc {
  uint64_t t0, t1; /* first and last record time (CLOCK_MONOTONIC ns) */
};

static struct slot *slots;
static size_t n_slots;
static struct proc *procs;
static size_t n_procs;

struct frame {
  uint8_t *z;
  uint32_t zlen, stream_len, raw_bytes, count;
};
static struct frame *frames; /* the frames being measured */
static size_t n_frames, cap_frames;
static struct frame *written; /* the zstd frames as the traces hold them */
static size_t n_written, cap_written;

/* The frames as written. */
static uint64_t cur_frames, cur_zstd_frames, cur_zbytes, cur_stream, cur_fixed_chunks;
static uint32_t *cur_stream_sizes;
static size_t cur_n_sizes, cur_cap_sizes;

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Slots of the file being read: index -> slot number, -1 = none yet. */
static long slot_map[MAX_SLOTS];

static void add_records(int proc, uint32_t idx, const uint8_t *p, size_t len) {
  if (idx >= MAX_SLOTS) return;
  if (slot_map[idx] < 0) {
    slots = xrealloc(slots, (n_slots + 1) * sizeof *slots);
    memset(&slots[n_slots], 0, sizeof *slots);
    slots[n_slots].proc = proc;
    slot_map[idx] = (long)n_slots++;
  }
  struct slot *s = &slots[slot_map[idx]];
  struct proc *pr = &procs[proc];
  size_t off = 0;
  while (off + sizeof(struct lens_rec_hdr) <= len) {
    struct lens_rec_hdr h;
    memcpy(&h, p + off, sizeof h);
    if (h.size < sizeof h || (h.size & 7) || off + h.size > len) break;
    uint64_t ts = 0, ts2 = 0;
    if (h.kind == LENS_REC_START && h.size >= sizeof(struct lens_rec_start)) {
      memcpy(&ts, p + off + offsetof(struct lens_rec_start, ts), 8);
      s->starts++;
    } else if (h.kind == LENS_REC_STOP && h.size >= sizeof(struct lens_rec_stop)) {
      memcpy(&ts, p + off + offsetof(struct lens_rec_stop, ts), 8);
    } else if (h.kind == LENS_REC_STATE && h.size >= sizeof(struct lens_rec_state)) {
      memcpy(&ts, p + off + offsetof(struct lens_rec_state, ts), 8);
      if (h.size >= sizeof(struct lens_rec_state_run)) memcpy(&ts2, p + off + offsetof(struct lens_rec_state_run, last_ts), 8);
    }
    if (ts) {
      if (!pr->t0 || ts < pr->t0) pr->t0 = ts;
      if (ts > pr->t1) pr->t1 = ts;
    }
    if (ts2 > pr->t1) pr->t1 = ts2;
    s->records++;
    off += h.size;
  }
  if (s->len + off > s->cap) {
    s->cap = (s->len + off) * 2;
    s->recs = xrealloc(s->recs, s->cap);
  }
  memcpy(s->recs + s->len, p, off);
  s->len += off;
}

static int read_trace(const char *path, ZSTD_DCtx *dctx) {
  struct lens_cstream cs;
  char err[256];
  if (lens_cstream_open(&cs, path, 4u << 20, err, sizeof err)) {
    fprintf(stderr, "lens-frame-bench: %s\n", err);
    return -1;
  }
  procs = xrealloc(procs, (n_procs + 1) * sizeof *procs);
  memset(&procs[n_procs], 0, sizeof *procs);
  int proc = (int)n_procs++;
  for (size_t i = 0; i < MAX_SLOTS; i++) slot_map[i] = -1;
  static uint8_t *stream, *fixed;
  static size_t cap_stream, cap_fixed;
  struct lens_chunk_hdr h;
  const uint8_t *pl;
  int r;
  while ((r = lens_cstream_next(&cs, &h, &pl, err, sizeof err)) == 1) {
    if (h.type == LENS_CHUNK_EVENTS && h.payload_len >= sizeof(struct lens_events_hdr)) {
      struct lens_events_hdr eh;
      memcpy(&eh, pl, sizeof eh);
      cur_fixed_chunks++;
      add_records(proc, eh.slot, pl + sizeof eh, h.payload_len - sizeof eh);
    } else if (h.type == LENS_CHUNK_EVENTS_PACKED && h.payload_len >= sizeof(struct lens_packed_hdr)) {
      struct lens_packed_hdr ph;
      memcpy(&ph, pl, sizeof ph);
      if (ph.raw_bytes > (64u << 20) || ph.body_bytes > (64u << 20)) continue;
      const uint8_t *body = pl + sizeof ph;
      size_t body_len = h.payload_len - sizeof ph;
      cur_frames++;
      if (ph.codec == LENS_PACK_CODEC_ZSTD) {
        if (ph.body_bytes > cap_stream) stream = xrealloc(stream, cap_stream = ph.body_bytes);
        size_t got = ZSTD_decompressDCtx(dctx, stream, cap_stream, body, body_len);
        if (ZSTD_isError(got) || got != ph.body_bytes) continue;
        cur_zstd_frames++;
        cur_zbytes += body_len;
        if (n_written == cap_written) written = xrealloc(written, (cap_written = cap_written * 2 + 256) * sizeof *written);
        uint8_t *z = xrealloc(NULL, body_len);
        memcpy(z, body, body_len);
        written[n_written++] = (struct frame){z, (uint32_t)body_len, (uint32_t)got, ph.raw_bytes, ph.count};
        body = stream;
        body_len = got;
      } else {
        cur_zbytes += body_len;
      }
      cur_stream += body_len;
      if (cur_n_sizes == cur_cap_sizes)
        cur_stream_sizes = xrealloc(cur_stream_sizes, (cur_cap_sizes = cur_cap_sizes * 2 + 1024) * sizeof(uint32_t));
      cur_stream_sizes[cur_n_sizes++] = (uint32_t)body_len;
      if (ph.raw_bytes > cap_fixed) fixed = xrealloc(fixed, cap_fixed = ph.raw_bytes);
      size_t got = 0;
      lens_unpack(body, body_len, ph.count, fixed, cap_fixed, &got);
      add_records(proc, ph.slot, fixed, got);
    }
  }
  lens_cstream_close(&cs);
  if (r < 0) {
    fprintf(stderr, "lens-frame-bench: %s: %s\n", path, err);
    return -1;
  }
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* The frames of one frame size: every slot's records packed again. */
static void add_frame(ZSTD_CCtx *cc, int level, const struct lens_pack_enc *e, const uint8_t *stream) {
  size_t len = lens_pack_len(e, stream);
  if (!e->count) return;
  size_t bound = ZSTD_compressBound(len);
  uint8_t *z = xrealloc(NULL, bound);
  size_t zl = ZSTD_compressCCtx(cc, z, bound, stream, len, level);
  if (ZSTD_isError(zl)) {
    fprintf(stderr, "lens-frame-bench: zstd: %s\n", ZSTD_getErrorName(zl));
    exit(1);
  }
  if (n_frames == cap_frames) frames = xrealloc(frames, (cap_frames = cap_frames * 2 + 256) * sizeof *frames);
  frames[n_frames++] = (struct frame){z, (uint32_t)zl, (uint32_t)len, e->raw_bytes, e->count};
}

static void reframe(size_t target, int level, ZSTD_CCtx *cc) {
  for (size_t i = 0; i < n_frames; i++) free(frames[i].z);
  n_frames = 0;
  /* a record packs to at most lens_pack_bound of its size; 4 KiB of headroom past the target */
  size_t cap = target + 4096 + lens_pack_bound(4096);
  uint8_t *buf = xrealloc(NULL, cap);
  struct lens_pack_enc e;
  for (size_t s = 0; s < n_slots; s++) {
    lens_pack_begin(&e, buf, cap);
    size_t off = 0;
    while (off < slots[s].len) {
      struct lens_rec_hdr h;
      memcpy(&h, slots[s].recs + off, sizeof h);
      lens_pack_rec(&e, (const struct lens_rec_hdr *)(slots[s].recs + off));
      off += h.size;
      if (e.overflow) {
        fprintf(stderr, "lens-frame-bench: a record does not fit a frame\n");
        exit(1);
      }
      if (lens_pack_len(&e, buf) >= target) {
        add_frame(cc, level, &e, buf);
        lens_pack_begin(&e, buf, cap);
      }
    }
    add_frame(cc, level, &e, buf);
  }
  free(buf);
}

/* One decoding pass over all frames: zstd, then (full) every record's fields.
 * Returns the STARTs seen (so the work cannot be optimized away). */
static uint64_t decode_pass(ZSTD_DCtx *dctx, uint8_t *stream, size_t cap, int full) {
  uint64_t starts = 0;
  for (size_t i = 0; i < n_frames; i++) {
    size_t got = ZSTD_decompressDCtx(dctx, stream, cap, frames[i].z, frames[i].zlen);
    if (ZSTD_isError(got)) exit(1);
    if (!full) {
      starts += stream[0];
      continue;
    }
    struct lens_unpack_cur c;
    struct lens_unpacked u;
    lens_unpack_init(&c, stream, got, frames[i].raw_bytes);
    for (uint32_t k = 0; k < frames[i].count && lens_unpack_next(&c, &u); k++) starts += u.kind == LENS_REC_START;
  }
  return starts;
}

static double best_of(int repeat, ZSTD_DCtx *dctx, uint8_t *stream, size_t cap, int full, uint64_t *sink) {
  double best = 1e30;
  for (int r = 0; r < repeat; r++) {
    double t0 = cpu_now();
    *sink += decode_pass(dctx, stream, cap, full);
    double t = cpu_now() - t0;
    if (t < best) best = t;
  }
  return best;
}

static char **paths;
static size_t n_paths;
static void add_path(const char *p) {
  paths = xrealloc(paths, (n_paths + 1) * sizeof *paths);
  paths[n_paths++] = strdup(p);
}
static void add_arg(const char *a) {
  struct stat st;
  if (stat(a, &st) == 0 && S_ISDIR(st.st_mode)) {
    DIR *d = opendir(a);
    struct dirent *de;
    while (d && (de = readdir(d))) {
      size_t l = strlen(de->d_name);
      if (l < 6 || strcmp(de->d_name + l - 5, ".lens")) continue;
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", a, de->d_name);
      add_path(p);
    }
    if (d) closedir(d);
  } else {
    add_path(a);
  }
}

int main(int argc, char **argv) {
  const char *cli = LENS_BENCH_CLI_PATH;
  int repeat = 5, iters = 20, level = LENS_ZSTD_LEVEL_DEFAULT;
  size_t kib[16] = {4, 16, 64, 256};
  int n_kib = 4;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--cli") && i + 1 < argc) cli = argv[++i];
    else if (!strcmp(argv[i], "--level") && i + 1 < argc) level = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--kib") && i + 1 < argc) {
      n_kib = 0;
      for (char *t = strtok(argv[++i], ","); t && n_kib < 16; t = strtok(NULL, ",")) kib[n_kib++] = strtoul(t, NULL, 10);
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: %s [--repeat R] [--iters N] [--cli PATH] [--level L] [--kib K,...] [TRACE|DIR...]\n",
              argv[0]);
      return 2;
    } else {
      add_arg(argv[i]);
    }
  }
  if (repeat < 1 || iters < 1 || n_kib < 1) return 2;
  for (int k = 0; k < n_kib; k++)
    if (kib[k] < 1 || kib[k] > 16384) {
      fprintf(stderr, "lens-frame-bench: --kib: 1..16384\n");
      return 2;
    }
  char tmp[] = "/tmp/lens-frame-bench-XXXXXX";
  int made = 0;
  if (!n_paths) {
    if (!mkdtemp(tmp)) return 1;
    made = 1;
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' replay --scenario all --nodes 2 --iters %d --out '%s' --quiet >/dev/null", cli,
             iters, tmp);
    printf("traces: nccl-lens replay --scenario all --nodes 2 --iters %d (the plugin's defaults)\n", iters);
    fflush(stdout);
    if (system(cmd)) {
      fprintf(stderr, "lens-frame-bench: replay failed\n");
      return 1;
    }
    add_arg(tmp);
  }
  ZSTD_DCtx *dctx = ZSTD_createDCtx();
  ZSTD_CCtx *cctx = ZSTD_createCCtx();
  if (!dctx || !cctx) return 1;
  for (size_t i = 0; i < n_paths; i++)
    if (read_trace(paths[i], dctx)) return 1;
  if (made) {
    for (size_t i = 0; i < n_paths; i++) unlink(paths[i]);
    rmdir(tmp);
  }
  uint64_t starts = 0, records = 0, fixed_bytes = 0;
  for (size_t s = 0; s < n_slots; s++) {
    starts += slots[s].starts;
    records += slots[s].records;
    fixed_bytes += slots[s].len;
  }
  if (!starts) {
    fprintf(stderr, "lens-frame-bench: no events in the traces\n");
    return 1;
  }
  double span_sum = 0;
  for (size_t p = 0; p < n_procs; p++) span_sum += procs[p].t1 > procs[p].t0 ? (double)(procs[p].t1 - procs[p].t0) / 1e9 : 0;
  printf("%zu traces, %zu thread slots: %" PRIu64 " events (STARTs), %" PRIu64 " records, %.1f MiB of fixed records; "
         "event rate %.0f events/s a process (events over each process's span of record times)\n",
         n_procs, n_slots, starts, records, fixed_bytes / 1048576.0, span_sum > 0 ? starts / span_sum : 0);
  if (cur_n_sizes) {
    qsort(cur_stream_sizes, cur_n_sizes, sizeof *cur_stream_sizes, cmp_u32);
    printf("as written: %" PRIu64 " packed chunks (%" PRIu64 " zstd frames), %.2f MiB; frame stream bytes median %u, "
           "p90 %u, max %u; %.2f bytes an event\n",
           cur_frames, cur_zstd_frames, cur_zbytes / 1048576.0, cur_stream_sizes[cur_n_sizes / 2],
           cur_stream_sizes[cur_n_sizes * 9 / 10], cur_stream_sizes[cur_n_sizes - 1], (double)cur_zbytes / starts);
  }
  if (cur_fixed_chunks) printf("as written: %" PRIu64 " fixed EVENTS chunks\n", cur_fixed_chunks);
  /* the busiest slot: the most stream bytes a second */
  printf("zstd level %d, fastest of %d passes, one thread, CPU time; SIGKILL = the frame each slot holds open, full\n",
         level, repeat);
  printf("%6s %7s %9s %7s %9s %9s %9s %10s | %9s %8s %8s | %9s %9s\n", "frame", "frames", "zstd MiB", "B/event",
         "zstd MB/s", "dec MB/s", "dec MB/s", "M events/s", "kill: B", "events", "ms", "all: B", "events");
  printf("%6s %7s %9s %7s %9s %9s %9s %10s | %9s %8s %8s | %9s %9s\n", "KiB", "", "", "", "alone,out", "z in",
         "stream", "per core", "busiest", "", "busiest", "slots", "");
  uint64_t sink = 0;
  size_t max_cap = 0;
  for (int k = 0; k < n_kib; k++)
    if (kib[k] * 1024 + 65536 > max_cap) max_cap = kib[k] * 1024 + 65536;
  uint8_t *stream = xrealloc(NULL, max_cap);
  for (int k = -1; k < n_kib; k++) {
    size_t target = k < 0 ? 0 : kib[k] * 1024;
    uint64_t row_starts = starts;
    if (k < 0) {
      /* the frames as the traces hold them (their events only: a fixed or varint chunk is not in it) */
      if (!n_written) continue;
      struct frame *keep = frames;
      size_t keep_n = n_frames;
      frames = written;
      n_frames = n_written;
      uint64_t zb = 0, sb = 0;
      for (size_t i = 0; i < n_frames; i++) {
        zb += frames[i].zlen;
        sb += frames[i].stream_len;
      }
      row_starts = 0;
      for (size_t i = 0; i < n_frames; i++) {
        struct lens_unpack_cur c;
        struct lens_unpacked u;
        static uint8_t *tmpbuf;
        if (!tmpbuf) tmpbuf = xrealloc(NULL, 64u << 20);
        size_t got = ZSTD_decompressDCtx(dctx, tmpbuf, 64u << 20, frames[i].z, frames[i].zlen);
        if (ZSTD_isError(got)) return 1;
        lens_unpack_init(&c, tmpbuf, got, frames[i].raw_bytes);
        for (uint32_t j = 0; j < frames[i].count && lens_unpack_next(&c, &u); j++) row_starts += u.kind == LENS_REC_START;
      }
      size_t need = 0;
      for (size_t i = 0; i < n_frames; i++)
        if (frames[i].stream_len > need) need = frames[i].stream_len;
      uint8_t *sbuf = xrealloc(NULL, need + 64);
      double t_z = best_of(repeat, dctx, sbuf, need + 64, 0, &sink);
      double t_full = best_of(repeat, dctx, sbuf, need + 64, 1, &sink);
      free(sbuf);
      printf("%6s %7zu %9.2f %7.2f %9.0f %9.1f %9.0f %10.2f | %28s |\n", "traces", n_frames, zb / 1048576.0,
             (double)zb / (row_starts ? row_starts : 1), t_z > 0 ? sb / t_z / 1e6 : 0, t_full > 0 ? zb / t_full / 1e6 : 0,
             t_full > 0 ? sb / t_full / 1e6 : 0, t_full > 0 ? row_starts / t_full / 1e6 : 0,
             "as written");
      frames = keep;
      n_frames = keep_n;
      continue;
    }
    reframe(target, level, cctx);
    if (decode_pass(dctx, stream, max_cap, 1) != starts) {
      fprintf(stderr, "lens-frame-bench: the %zu KiB frames do not decode to the traces' events\n", kib[k]);
      return 1;
    }
    uint64_t zb = 0, sb = 0;
    for (size_t i = 0; i < n_frames; i++) {
      zb += frames[i].zlen;
      sb += frames[i].stream_len;
    }
    double t_z = best_of(repeat, dctx, stream, max_cap, 0, &sink);
    double t_full = best_of(repeat, dctx, stream, max_cap, 1, &sink);
    /* SIGKILL: each slot loses at most one frame's stream, and at most what it wrote */
    double busiest_ms = 0;
    uint64_t busiest_b = 0, busiest_ev = 0, all_b = 0, all_ev = 0;
    double busiest_rate = -1;
    for (size_t s = 0; s < n_slots; s++) {
      struct proc *p = &procs[slots[s].proc];
      double span = p->t1 > p->t0 ? (double)(p->t1 - p->t0) / 1e9 : 0;
      if (!slots[s].starts || span <= 0) continue;
      /* the slot's stream bytes an event: its share of the fixed records, at the frames' stream/fixed ratio */
      double stream_per_event = (double)slots[s].len * ((double)sb / (double)fixed_bytes) / slots[s].starts;
      double ev_frame = target / stream_per_event;
      uint64_t ev = ev_frame < slots[s].starts ? (uint64_t)ev_frame : slots[s].starts;
      uint64_t b = (uint64_t)(ev * stream_per_event);
      double rate = slots[s].starts / span;
      all_b += b;
      all_ev += ev;
      if (rate > busiest_rate) {
        busiest_rate = rate;
        busiest_b = b;
        busiest_ev = ev;
        busiest_ms = ev / rate * 1e3;
      }
    }
    printf("%6zu %7zu %9.2f %7.2f %9.0f %9.1f %9.0f %10.2f | %9" PRIu64 " %8" PRIu64 " %8.1f | %9" PRIu64 " %9" PRIu64
           "\n",
           kib[k], n_frames, zb / 1048576.0, (double)zb / starts, t_z > 0 ? sb / t_z / 1e6 : 0,
           t_full > 0 ? zb / t_full / 1e6 : 0, t_full > 0 ? sb / t_full / 1e6 : 0,
           t_full > 0 ? row_starts / t_full / 1e6 : 0, busiest_b, busiest_ev, busiest_ms, all_b, all_ev);
  }
  if (sink == 42) printf(" \n");
  printf("zstd MB/s alone,out: varint stream out of zstd a second; dec: zstd and every record decoded "
         "(common/lens_unpack.h), per MB of zstd frames in and of stream out\n");
  printf("traces: the traces' own zstd frames as written, their events only\n");
  printf("kill: bytes of stream, events and ms of events (at its own rate) the busiest slot loses when its "
         "open frame is full; all slots: summed (the writer also writes every frame every %d ms)\n",
         LENS_FRAME_MAX_AGE_MS);
  ZSTD_freeDCtx(dctx);
  ZSTD_freeCCtx(cctx);
  return 0;
}
