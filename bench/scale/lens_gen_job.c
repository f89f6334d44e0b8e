/* lens-gen-job: writes a synthetic job's traces for the scale benchmarks
 * (docs/scale.md): N ranks on H hosts, one process per rank and one .lens
 * file per process (as a real job writes them), a total event budget, one
 * world communicator running AllReduce after AllReduce.
 *
 * Each rank and instance: GroupApi > CollApi > Coll, a KernelLaunch under the
 * GroupApi and before the Coll, which names it (launch_id) as the plugin's
 * Coll record does, C KernelCh channel spans under the Coll (pTimer on the
 * rank's own GPU clock, state 22 carries the stop, noticed 1-4 us late) and
 * a send and a receive ProxyOp (channel 0's, state 19 on its first pass) of
 * K ProxySteps each. Every step carries the states NCCL records on it (spec
 * §2.5), in time order: send 8 SendGPUWait, 20 SendPeerWait, 9 SendWait;
 * receive 10 RecvWait, 11 RecvFlushWait, 12 RecvGPUWait, with transSize as
 * NCCL sets it (the step's bytes from 9 and 11 on, the previous step's
 * before). Bytes: an instance reduces INST_BYTES (4 MiB); a ring AllReduce
 * moves 2 (n - 1) / n of that each way a rank, split evenly over the C
 * channels, and an op's K steps carry its channel's share (the last step
 * the remainder): op_bytes and step_bytes in truth.json. Phase times: see
 * send_step_times. Every rank of an instance ends on the same true time
 * (the ring's coupling), so the rank that arrived last has the shortest span.
 *
 * --events counts events (STARTs), as summary's "events" does: a rank and
 * instance is EVENTS_PER_RANK_INST events; its STATE records (1 a KernelCh,
 * 1 an op, 3 a step) ride along and are not counted.
 *
 * Injected: stragglers (a known rank calls the API late by a known time in a
 * known instance) and per-host clocks: CLOCK_MONOTONIC = base + offset +
 * (1 + drift) x true time, offset +-seconds, drift +-50 ppm; CLOCK_REALTIME
 * within +-1 ms of the truth (NTP); CLOCK chunks about every second.
 * The truth (hosts' offsets and drifts, the stragglers) goes to truth.json.
 *
 * The traces go through the one chunk framing (common/lens_chunk.h) and the
 * public format (trace_format.h); files are written in parallel, one worker
 * thread per core. Events are written as the plugin writes them
 * (NCCL_LENS_COMPRESS, default zstd) and cut into chunks by the writer's
 * rules (plugin/writer/writer.c): packed, each thread slot's records go
 * into its open frame (common/lens_pack.c) as they come, and the frame is
 * written as one EVENTS_PACKED chunk (one zstd frame at the writer's level,
 * common/lens_pack_chunk.c) before a record that finds it holding
 * LENS_FRAME_STREAM_BYTES of stream or that would take it past
 * LENS_FRAME_RAW_MAX of fixed records, and every open frame is written
 * every LENS_FRAME_MAX_AGE_MS (the writer's tick; here of the host's
 * clock, between two records: an instance's records are staged and
 * written in time order, as NCCL's threads record them). With --compress
 * none a slot's fixed records fill an EVENTS chunk up to the writer's
 * limit for a busy ring (LENS_EVENTS_CHUNK_MAX, 256 KiB). The writer's
 * folding of repeated STATEs into runs is not needed: no event here
 * repeats a STATE. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lens_chunk.h"
#include "lens_index.h"
#include "lens_pack_chunk.h"
#include "nccl-lens/trace_format.h"

enum { COMPRESS_NONE, COMPRESS_PACKED, COMPRESS_ZSTD };
static const char *const compress_name[] = {"none", "packed", "zstd"};

struct cfg {
  int ranks, hosts, channels, steps, stragglers, threads, compress, zstd_level;
  int profiler_thread;  /* KernelCh from a profiler thread of their own (slot 2), as NCCL 2.31 reports them */
  int no_index;         /* no INDEX chunks, as plugins before them wrote */
  int hang_rank;        /* this rank never calls the last instance; the others hang in it, and no process ends
                         * (the job killed): -1 none */
  uint64_t chunk_bytes; /* --compress none: fixed-record bytes a chunk holds at most (LENS_EVENTS_CHUNK_MAX) */
  uint64_t frame_bytes; /* packed: stream bytes that close a frame (LENS_FRAME_STREAM_BYTES) */
  uint64_t frame_ns;    /* packed: every open frame is written this often (LENS_FRAME_MAX_AGE_MS) */
  uint64_t events, seed, period_ns, exec_ns;
  const char *out;
};

static struct cfg C = {.ranks = 1024, .hosts = 128, .channels = 2, .steps = 8, .stragglers = 16, .threads = 0,
                       .hang_rank = -1,
                       .compress = COMPRESS_ZSTD, .zstd_level = LENS_ZSTD_LEVEL_DEFAULT, .chunk_bytes = LENS_EVENTS_CHUNK_MAX,
                       .frame_bytes = LENS_FRAME_STREAM_BYTES, .frame_ns = LENS_FRAME_MAX_AGE_MS * 1000000ull,
                       .events = 100000000ull, .seed = 1, .period_ns = 2000000, .exec_ns = 200000, .out = NULL};

/* Derived, shared read-only by the workers. */
static uint64_t n_inst;            /* instances of the collective */
static uint64_t *kend_true;        /* per instance: true time every rank's kernel ends */
static int64_t *host_off;          /* per host: MONOTONIC offset ns */
static double *host_drift;         /* per host: drift (ppm x 1e-6) */
static int64_t *host_ntp;          /* per host: REALTIME error ns */
struct strag { uint64_t inst; int rank; uint64_t late_ns; };
static struct strag *strags;
static atomic_int next_rank;
static atomic_uint_fast64_t events_written, bytes_written;

#define MONO_BASE 1000000000000ull       /* 1000 s since boot */
#define REAL_BASE 1790000000000000000ull /* 2026 */
#define GPU_BASE 1700000000000000000ull
#define COMM_ID 0x5ca1ab1e00000001ull
/* Each instance: INST_COUNT float32 elements (string 2, ncclFloat32). */
#define INST_COUNT (1u << 20)
#define INST_BYTES ((uint64_t)INST_COUNT * 4u)
#define EVENTS_PER_RANK_INST(c) (4u + (unsigned)(c).channels + 2u + 2u * (unsigned)(c).steps)

static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static uint64_t rnd3(uint64_t a, uint64_t b, uint64_t c) { return mix(mix(mix(C.seed ^ a) ^ b) ^ c); }

/* Jitter of a rank's API call: 0-3 us, well under the straggler threshold. */
static uint64_t jitter(uint64_t k, int r) { return rnd3(1, k, (uint64_t)r) % 3000; }
static uint64_t late_of(uint64_t k, int r) {
  for (int i = 0; i < C.stragglers; i++)
    if (strags[i].inst == k && strags[i].rank == r) return strags[i].late_ns;
  return 0;
}
/* Stage lengths (ns) on the true time line. */
#define T_ENQ 3000   /* API call -> launch start */
#define T_LAUNCH 4000 /* the launch */
#define T_GPU 2000   /* launch return -> kernel start */
#define T_LAG 1500   /* the proxy notices a timer this late */
#define T_NET 2000   /* a network step: posted -> received */

static uint64_t arrival(uint64_t k, int r) { return k * C.period_ns + 50000 + jitter(k, r) + late_of(k, r); }
static uint64_t kstart_true(uint64_t k, int r) { return arrival(k, r) + T_ENQ + T_LAUNCH + T_GPU; }

/* ---- ProxySteps: times (true time line) and bytes ----
 * Step st of rank r's send op starts at ks + 500 + st x step_ns (step_ns:
 * the rank's kernel span over steps + 1) and lasts step_ns + 0-300 ns of
 * noise. Its phases: the GPU produces the data in 2-5 % of that (8 -> 20),
 * isend is accepted 4-11 % later (20 -> 9), or when the receiver's credit
 * comes (T_NET / 2 after the receiver's step started) if that is later: the
 * rank before a late one waits for it there; the rest is the wire (9 ->
 * stop, T_NET at least). The receive step of the same transfer (rank
 * r + 1's, same st) starts with its own op's pace (10 at its start); the
 * data is in (11) 2-5 % of step_ns before the sender's test() reports it
 * done, and never sooner than T_NET after the isend (true(11) >= true(9) +
 * T_NET: the one-way bounds of docs/timeline.md rest on the arrival
 * following the post); the flush takes 1-3 % (11 -> 12), the GPU consumes
 * the data in 5-14 % (12 -> stop); 8 steps of the default job: about 22 us
 * a step. The receive step stops no sooner than its own
 * pace (start + step_ns + noise) and than T_NET after its sender's start,
 * as before the states were written. */
struct send_step { uint64_t start, peer, posted, stop; };
struct recv_step { uint64_t start, arrived, flushed, stop; };
static uint64_t step_span(uint64_t k, int r) { return (kend_true[k] - kstart_true(k, r)) / (uint64_t)(C.steps + 1); }
static uint64_t step_noise(uint64_t k, int r, int st) { return rnd3(2, k, (uint64_t)r * 64 + (uint64_t)st) % 300; }
static void send_step_times(uint64_t k, int r, int st, struct send_step *x) {
  uint64_t sn = step_span(k, r), d = sn + step_noise(k, r, st), u = rnd3(9, k, (uint64_t)r * 64 + (uint64_t)st);
  x->start = kstart_true(k, r) + 500 + (uint64_t)st * sn;
  x->peer = x->start + d * (2 + u % 4) / 100;
  x->posted = x->peer + d * (4 + (u >> 8) % 8) / 100;
  int nx = (r + 1) % C.ranks; /* its receiver: the credit comes T_NET / 2 after its irecv was posted */
  uint64_t credit = kstart_true(k, nx) + 500 + (uint64_t)st * step_span(k, nx) + T_NET / 2;
  if (credit > x->posted) x->posted = credit;
  x->stop = x->start + d;
  if (x->stop < x->posted + T_NET) x->stop = x->posted + T_NET;
}
static void recv_step_times(uint64_t k, int r, int st, struct recv_step *x) {
  int p = (r + C.ranks - 1) % C.ranks;
  struct send_step s;
  send_step_times(k, p, st, &s);
  uint64_t sn = step_span(k, r), u = rnd3(10, k, (uint64_t)r * 64 + (uint64_t)st);
  x->start = kstart_true(k, r) + 500 + (uint64_t)st * sn;
  uint64_t ack = sn * (2 + u % 4) / 100, in = s.stop - ack;
  x->arrived = in > s.posted + T_NET ? in : s.posted + T_NET;
  if (x->arrived < x->start) x->arrived = x->start;
  x->flushed = x->arrived + sn * (1 + (u >> 16) % 3) / 100;
  uint64_t end = x->start + sn + step_noise(k, r, st), sent = s.start + T_NET, gpu = x->flushed + sn * (5 + (u >> 32) % 10) / 100;
  x->stop = end > sent ? end : sent;
  if (gpu > x->stop) x->stop = gpu;
}
/* Bytes of step st (transSize): a ring AllReduce of S bytes over n ranks
 * sends and receives 2 (n - 1) / n x S bytes a rank, split evenly over the
 * C channels; the op pair written (channel 0's) carries one channel's share
 * over its K steps, the last step the remainder. */
static uint64_t op_bytes, chunk_size;
static uint64_t step_bytes(int st) {
  uint64_t per = op_bytes / (uint64_t)C.steps;
  return st == C.steps - 1 ? op_bytes - per * (uint64_t)(C.steps - 1) : per;
}

/* ---- one file ---- */
/* The largest record made here (a START and its payload) is below this. */
#define GEN_REC_MAX 512
/* One thread slot's records being filled: with --compress none its EVENTS
 * payload; packed, the record written last (packed into the slot's open
 * frame when the next one comes or the frame is written) and the frame. */
struct ring {
  uint8_t *buf;
  size_t len;
  uint32_t count;
  struct lens_pack_enc enc; /* packed: the open frame */
  uint8_t *stream;          /* its varint stream */
  struct lens_index_acc idx; /* what its chunk being filled holds, for its INDEX (common/lens_index.h) */
};
/* An instance's records as they are made, before they go out in time order. */
struct staged {
  uint64_t ts;
  uint32_t off, size, seq;
  uint32_t slot;
};
struct stage {
  uint8_t *buf;
  size_t len, cap;
  struct staged *ix;
  size_t n, ixcap;
};
struct out {
  FILE *f;
  uint64_t seq;
  struct ring ring[3]; /* slot 0: the application thread, 1: the proxy thread, 2: the profiler thread (2.31) */
  struct stage stage;
  uint64_t mono0, tick; /* packed: the writer thread's start on the host's clock, its next tick */
  size_t cap;
  uint32_t slot;       /* slot records go to */
  uint64_t events;
  int err;
  /* packed chunks: each frame's stream room, the zstd frame and the chunk built from one */
  uint8_t *zbuf, *chunk;
  size_t stream_cap, zcap;
  ZSTD_CCtx *zc; /* the worker thread's, NULL without zstd */
  /* the index, as the plugin's writer writes it: the process's open events, fed every record in time order
   * (the writer's drain order), and the time of the last one (when its open set is taken) */
  uint64_t seq_of[3]; /* per slot: the last START sequence number written */
  struct lens_openset *open;
  uint8_t *obuf;
  size_t obuf_cap;
  uint64_t last_ts;
};

static int put_chunk(struct out *o, uint16_t type, const void *p, uint32_t len) {
  struct lens_chunk_hdr h;
  lens_chunk_hdr_init(&h, type, 0, o->seq++, p, len);
  static const uint8_t zero[8];
  if (fwrite(&h, sizeof h, 1, o->f) != 1 || (len && fwrite(p, len, 1, o->f) != 1) ||
      fwrite(zero, lens_chunk_padding(len), 1, o->f) != (lens_chunk_padding(len) ? 1u : 0u))
    return -1;
  atomic_fetch_add(&bytes_written, sizeof h + len + lens_chunk_padding(len));
  return 0;
}

/* The INDEX of the events chunk just written, records its count (writer.c, index_write). */
static int put_index(struct out *o, uint32_t slot, uint32_t records) {
  struct lens_index_acc *a = &o->ring[slot].idx;
  int rc = 0;
  if (a->h.records && o->open) {
    size_t open_len = lens_openset_due(o->open, o->last_ts)
                          ? lens_openset_write(o->open, o->last_ts, o->obuf, o->obuf_cap) : 0;
    uint32_t len;
    const void *p = lens_index_payload(a, records, open_len != 0, &len);
    memcpy(o->obuf + o->obuf_cap, p, len); /* the header and touches after the open set's room */
    if (open_len) memcpy(o->obuf + o->obuf_cap + len, o->obuf, open_len);
    rc = put_chunk(o, LENS_CHUNK_INDEX, o->obuf + o->obuf_cap, (uint32_t)(len + open_len));
  }
  lens_index_begin(a, slot);
  return rc;
}

/* Packs the slot's record written last into its open frame. */
static void pack_pending(struct out *o, uint32_t slot) {
  struct ring *g = &o->ring[slot];
  if (g->len == sizeof(struct lens_events_hdr)) return;
  lens_pack_rec(&g->enc, (const struct lens_rec_hdr *)(g->buf + sizeof(struct lens_events_hdr)));
  if (g->enc.overflow) o->err = 1; /* cannot happen: a frame is written before it fills (rec) */
  g->len = sizeof(struct lens_events_hdr);
}

/* Writes the slot's open frame as one EVENTS_PACKED chunk, packed and
 * compressed as the plugin's writer does (common/lens_pack_chunk.h). */
static int put_frame(struct out *o, uint32_t slot) {
  struct ring *g = &o->ring[slot];
  pack_pending(o, slot);
  if (!g->enc.count) return 0;
  struct lens_packed_hdr ph;
  const void *body;
  size_t body_len;
  uint32_t count = g->enc.count;
  lens_pack_chunk(&g->enc, g->stream, slot, o->zc, C.zstd_level, o->zbuf, o->zcap, &ph, &body, &body_len);
  memcpy(o->chunk, &ph, sizeof ph);
  memcpy(o->chunk + sizeof ph, body, body_len);
  lens_pack_begin(&g->enc, g->stream, o->stream_cap);
  if (put_chunk(o, LENS_CHUNK_EVENTS_PACKED, o->chunk, (uint32_t)(sizeof ph + body_len))) return -1;
  return put_index(o, slot, count);
}

/* Drains one slot's records as one chunk, as the writer drains a ring. */
static int flush_slot(struct out *o, uint32_t slot) {
  if (C.compress != COMPRESS_NONE) return put_frame(o, slot);
  struct ring *g = &o->ring[slot];
  if (!g->count) return 0;
  struct lens_events_hdr eh = {.slot = slot, .count = g->count};
  memcpy(g->buf, &eh, sizeof eh);
  int rc = put_chunk(o, LENS_CHUNK_EVENTS, g->buf, (uint32_t)g->len);
  g->len = sizeof eh;
  g->count = 0;
  return rc ? rc : put_index(o, slot, eh.count);
}
static int flush_events(struct out *o) { return flush_slot(o, 0) | flush_slot(o, 1) | flush_slot(o, 2); }

/* Records go to slot's ring from now on. */
static int begin_slot(struct out *o, uint32_t slot) {
  o->slot = slot;
  return 0;
}

/* Room for one record in slot's ring. Packed, the record before it goes
 * into the slot's frame, and the frame is written first when it holds the
 * writer's stream bytes or would pass its fixed-record bytes (writer.c,
 * drain_ring). With --compress none a slot whose chunk would pass the
 * writer's limit is drained first, so every chunk but a slot's last before
 * a CLOCK holds 256 KiB less at most one record, as a busy ring's does. */
static void *put_rec(struct out *o, uint32_t slot, size_t size) {
  struct ring *g = &o->ring[slot];
  if (C.compress != COMPRESS_NONE) {
    pack_pending(o, slot);
    if ((lens_pack_len(&g->enc, g->stream) >= C.frame_bytes || g->enc.raw_bytes + size > LENS_FRAME_RAW_MAX) &&
        put_frame(o, slot))
      o->err = 1;
  } else if (g->len + size > o->cap && flush_slot(o, slot))
    o->err = 1;
  void *p = g->buf + g->len;
  memset(p, 0, size);
  g->len += size;
  g->count++;
  return p;
}

/* An instance's records are made event by event (a KernelCh's START, STATE
 * and STOP together); NCCL's threads record them as they happen. So they
 * are staged, then written in time order (stable: a STATE at its START's
 * time stays after it), the writer's tick cutting every open frame between
 * two records as it does between two passes over the rings: events open at
 * the tick span two frames, as on the plugin's traces. */
static void *rec(struct out *o, size_t size, uint64_t ts) {
  struct stage *sg = &o->stage;
  if (sg->len + size > sg->cap || sg->n == sg->ixcap) {
    size_t cap = sg->cap ? sg->cap : 16384, ixcap = sg->ixcap ? sg->ixcap : 256;
    while (cap < sg->len + size) cap *= 2;
    if (sg->n == ixcap) ixcap *= 2;
    uint8_t *buf = realloc(sg->buf, cap);
    if (buf) sg->buf = buf, sg->cap = cap;
    struct staged *ix = realloc(sg->ix, ixcap * sizeof *ix);
    if (ix) sg->ix = ix, sg->ixcap = ixcap;
    if (!buf || !ix || sg->len + size > sg->cap || sg->n == sg->ixcap) {
      static __thread uint64_t sink[GEN_REC_MAX / 8];
      o->err = 1;
      return sink;
    }
  }
  void *p = sg->buf + sg->len;
  memset(p, 0, size);
  sg->ix[sg->n] = (struct staged){.ts = ts, .off = (uint32_t)sg->len, .size = (uint32_t)size, .seq = (uint32_t)sg->n,
                                  .slot = o->slot};
  sg->n++;
  sg->len += size;
  return p;
}

static int cmp_staged(const void *a, const void *b) {
  const struct staged *x = a, *y = b;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

/* An instance's ids renumbered in time order (write_staged): old id -> new. */
#define GEN_IDMAP 4096 /* a power of two above twice an instance's events (4 + 32 channels + 2 ops of 65: 166) */
struct idmap_ent { uint64_t from, to; uint32_t gen; };
static __thread struct idmap_ent tl_idmap[GEN_IDMAP];
static __thread uint32_t tl_idgen;
static struct idmap_ent *idmap_slot(uint64_t id) {
  uint32_t i = (uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 52) & (GEN_IDMAP - 1);
  while (tl_idmap[i].gen == tl_idgen && tl_idmap[i].from != id) i = (i + 1) & (GEN_IDMAP - 1);
  return &tl_idmap[i];
}
static uint64_t idmap_get(uint64_t id) {
  struct idmap_ent *e = idmap_slot(id);
  return e->gen == tl_idgen ? e->to : id;
}

/* The staged records in time order into their slots' frames; packed, every
 * open frame is written at each tick of the host's clock crossed. A slot's
 * STARTs take their sequence numbers in that order, as a thread numbers its
 * events as it records them (the instance is made op by op, not in time
 * order): the trace's INDEX relies on it (a slot's STARTs come in sequence
 * order, trace_format.h). */
static int write_staged(struct out *o) {
  struct stage *sg = &o->stage;
  int rc = 0;
  qsort(sg->ix, sg->n, sizeof *sg->ix, cmp_staged);
  if (++tl_idgen == 0) memset(tl_idmap, 0, sizeof tl_idmap), tl_idgen = 1;
  for (size_t i = 0; i < sg->n; i++) {
    const struct staged *x = &sg->ix[i];
    struct lens_rec_start *r = (void *)(sg->buf + x->off); /* id and parent are where a STOP's id is too */
    if (r->h.kind == LENS_REC_START) {
      uint64_t id = r->id;
      uint64_t to = (id & ~LENS_ID_SEQ(~0ull)) | ++o->seq_of[LENS_ID_SLOT(id) % 3]; /* its slot, a new number */
      struct idmap_ent *e = idmap_slot(id);
      *e = (struct idmap_ent){id, to, tl_idgen};
      r->id = to;
      if (r->parent) r->parent = idmap_get(r->parent);
      if (r->h.type == LENS_T_COLL) { /* it names its KernelLaunch (started before it) */
        struct lens_p_coll *pc = (void *)(r + 1);
        pc->launch_id = idmap_get(pc->launch_id);
      }
    } else {
      r->id = idmap_get(r->id);
    }
    if (C.compress != COMPRESS_NONE && x->ts >= o->tick) {
      rc |= flush_events(o);
      o->tick = o->mono0 + ((x->ts - o->mono0) / C.frame_ns + 1) * C.frame_ns;
    }
    const struct lens_rec_hdr *h = (const void *)(sg->buf + x->off);
    memcpy(put_rec(o, x->slot, x->size), h, x->size);
    if (o->open) {
      lens_index_add(&o->ring[x->slot].idx, h);
      lens_openset_add(o->open, h);
      if (x->ts > o->last_ts) o->last_ts = x->ts;
    }
  }
  sg->n = sg->len = 0;
  return rc;
}

static void start(struct out *o, int type, uint64_t id, uint64_t parent, uint64_t ctx, uint64_t ts, int rank,
                  const void *pl, size_t pl_len) {
  size_t size = sizeof(struct lens_rec_start) + ((pl_len + 7) & ~(size_t)7);
  uint8_t *p = rec(o, size, ts);
  struct lens_rec_start s = {.h = {.size = (uint16_t)size, .kind = LENS_REC_START, .type = (uint8_t)type},
                             .id = id, .parent = parent, .context = ctx, .ts = ts, .rank = rank};
  memcpy(p, &s, sizeof s);
  memcpy(p + sizeof s, pl, pl_len);
  o->events++;
}
static void stop(struct out *o, uint64_t id, uint64_t ts) {
  /* The header names the event's type, as the plugin's STOPs and STATEs do
   * (plugin/record.c): the packed form predicts ids with it. */
  struct lens_rec_stop s = {.h = {.size = sizeof s, .kind = LENS_REC_STOP, .type = (uint8_t)LENS_ID_TYPE(id)},
                            .id = id, .ts = ts};
  memcpy(rec(o, sizeof s, ts), &s, sizeof s);
}
static void state(struct out *o, uint64_t id, uint32_t st, uint64_t ts, uint64_t arg) {
  struct lens_rec_state s = {.h = {.size = sizeof s, .kind = LENS_REC_STATE, .type = (uint8_t)LENS_ID_TYPE(id), .aux = st},
                             .id = id, .ts = ts,
                             .arg = arg, .has_args = 1};
  memcpy(rec(o, sizeof s, ts), &s, sizeof s);
}

static void host_name(int h, char *buf, size_t len) { snprintf(buf, len, "gen-host%03d", h); }

/* The host's CLOCK_MONOTONIC at true time t. */
static uint64_t mono(int h, uint64_t t) {
  return (uint64_t)((int64_t)MONO_BASE + host_off[h] + (int64_t)t + (int64_t)((double)t * host_drift[h]));
}

static int clock_chunk(struct out *o, int h, uint64_t t) {
  struct lens_clock_rec c;
  memset(&c, 0, sizeof c);
  c.mono_before_ns = mono(h, t);
  c.real_ns = (uint64_t)((int64_t)REAL_BASE + (int64_t)t + 100 + host_ntp[h]);
  c.mono_after_ns = mono(h, t + 200);
  c.boottime_ns = c.mono_after_ns;
  c.ntp_maxerror_ns = 2000000;
  c.ntp_esterror_ns = 1000000;
  c.flags = LENS_CLOCK_F_NTP_SYNCED;
  snprintf(c.boot_id, sizeof c.boot_id, "00000000-0000-4000-8000-%012x", h);
  host_name(h, c.host, sizeof c.host);
  return put_chunk(o, LENS_CHUNK_CLOCK, &c, sizeof c);
}

static __thread ZSTD_CCtx *tl_zc; /* the worker thread's zstd context, for all its files */
/* the index's table and buffer: the worker thread's, for all its files */
static __thread struct lens_openset tl_open;
static __thread uint8_t *tl_obuf;

static int write_rank(int r) {
  int rph = C.ranks / C.hosts, h = r / rph, local = r % rph;
  char host[64], path[4096];
  host_name(h, host, sizeof host);
  uint32_t pid = 10000 + (uint32_t)local;
  snprintf(path, sizeof path, "%s/nccl-lens-%s-%u.lens", C.out, host, pid);
  struct out o = {.f = fopen(path, "wb"), .cap = (size_t)C.chunk_bytes, .slot = 0};
  if (!o.f) {
    fprintf(stderr, "lens-gen-job: cannot create %s: %s\n", path, strerror(errno));
    return -1;
  }
  int rc = 0;
  static __thread char iobuf[1 << 20];
  setvbuf(o.f, iobuf, _IOFBF, sizeof iobuf);
  for (int i = 0; i < 3; i++) {
    o.ring[i].buf = malloc(o.cap);
    o.ring[i].len = sizeof(struct lens_events_hdr);
    lens_index_begin(&o.ring[i].idx, (uint32_t)i);
    if (!o.ring[i].buf) rc = -1;
  }
  if (!C.no_index) {
    if (!tl_open.t && lens_openset_init(&tl_open, 3)) rc = -1;
    size_t room = lens_openset_bound(&tl_open);
    if (!tl_obuf && !(tl_obuf = malloc(2 * room + sizeof(struct lens_index_acc)))) rc = -1;
    lens_openset_reset(&tl_open);
    o.open = &tl_open, o.obuf = tl_obuf, o.obuf_cap = room;
  }
  if (C.compress != COMPRESS_NONE) {
    if (C.compress == COMPRESS_ZSTD && !tl_zc && !(tl_zc = ZSTD_createCCtx())) rc = -1;
    o.zc = C.compress == COMPRESS_ZSTD ? tl_zc : NULL;
    /* a frame holds less than frame_bytes of stream when a record comes
     * (put_rec), and a record packs to at most lens_pack_bound of its size */
    o.stream_cap = C.frame_bytes + lens_pack_bound(GEN_REC_MAX);
    o.zcap = ZSTD_compressBound(o.stream_cap);
    for (int i = 0; i < 3; i++) {
      o.ring[i].stream = malloc(o.stream_cap);
      if (!o.ring[i].stream) rc = -1;
      else lens_pack_begin(&o.ring[i].enc, o.ring[i].stream, o.stream_cap);
    }
    o.zbuf = malloc(o.zcap);
    o.chunk = malloc(sizeof(struct lens_packed_hdr) + (o.zcap > o.stream_cap ? o.zcap : o.stream_cap));
    if (!o.zbuf || !o.chunk) rc = -1;
  }
  struct lens_file_hdr fh;
  lens_file_hdr_init(&fh, LENS_PRODUCER_TEST, REAL_BASE);
  if (fwrite(&fh, sizeof fh, 1, o.f) != 1) rc = -1;

  struct lens_session s;
  memset(&s, 0, sizeof s);
  s.pid = s.outer_pid = pid;
  s.nccl_api_version = 5;
  s.start_mono_ns = mono(h, 0);
  s.start_real_ns = REAL_BASE + (uint64_t)host_ntp[h];
  s.ts_clock = LENS_CLOCK_MONOTONIC;
  s.hot_clock = LENS_CLOCK_MONOTONIC;
  s.event_mask = 0xFFFF;
  s.buffer_bytes = 1u << 20;
  s.max_threads = 64;
  memcpy(s.host, host, sizeof host);
  snprintf(s.plugin_version, sizeof s.plugin_version, "lens-gen-job");
  if (C.profiler_thread) s.lib_version = 23102, s.lib_kind = LENS_LIB_NCCL; /* the library whose layout it writes */
  rc |= put_chunk(&o, LENS_CHUNK_SESSION, &s, sizeof s);
  rc |= clock_chunk(&o, h, 0);
  uint64_t ctx = 0x7f0000001000ull + (uint64_t)r * 0x100;
  struct lens_comm_rec cr;
  memset(&cr, 0, sizeof cr);
  cr.context = ctx;
  cr.comm_id = COMM_ID;
  cr.rank = r;
  cr.nranks = C.ranks;
  cr.nnodes = C.hosts;
  cr.init_mono_ns = mono(h, 0);
  cr.api_version = 5;
  snprintf(cr.name, sizeof cr.name, "world");
  rc |= put_chunk(&o, LENS_CHUNK_COMM, &cr, sizeof cr);
  struct lens_thread_rec tr[2];
  memset(tr, 0, sizeof tr);
  tr[0] = (struct lens_thread_rec){.slot = 0, .tid = pid, .outer_tid = pid, .roles = LENS_ROLE_APP | LENS_ROLE_INIT,
                                   .proxy_rank = -1, .proxy_comm_index = UINT32_MAX, .first_mono_ns = mono(h, 0)};
  snprintf(tr[0].name, sizeof tr[0].name, "python");
  tr[1] = (struct lens_thread_rec){.slot = 1, .tid = pid + 1, .outer_tid = pid + 1, .roles = LENS_ROLE_PROXY,
                                   .proxy_rank = r, .proxy_comm_index = 0, .first_mono_ns = mono(h, 0)};
  snprintf(tr[1].name, sizeof tr[1].name, "ncclProxy");
  rc |= put_chunk(&o, LENS_CHUNK_THREAD, &tr[0], sizeof tr[0]);
  rc |= put_chunk(&o, LENS_CHUNK_THREAD, &tr[1], sizeof tr[1]);
  if (C.profiler_thread) { /* NCCL 2.31's profiler thread: it polls the kernels' channels for this rank's GPU */
    struct lens_thread_rec tp = {.slot = 2, .tid = pid + 2, .outer_tid = pid + 2, .roles = LENS_ROLE_PROFILER,
                                 .proxy_rank = r, .proxy_comm_index = 0, .first_mono_ns = mono(h, 0)};
    snprintf(tp.name, sizeof tp.name, "profiler");
    rc |= put_chunk(&o, LENS_CHUNK_THREAD, &tp, sizeof tp);
  }
  /* strings: 1 AllReduce, 2 ncclFloat32, 3 RING, 4 SIMPLE */
  {
    uint8_t sb[96];
    size_t n = 0;
    const char *names[] = {"AllReduce", "ncclFloat32", "RING", "SIMPLE"};
    for (uint32_t i = 0; i < 4; i++) {
      uint32_t id = i + 1;
      uint16_t l = (uint16_t)strlen(names[i]);
      memcpy(sb + n, &id, 4), memcpy(sb + n + 4, &l, 2), memcpy(sb + n + 6, names[i], l);
      n += 6u + l;
    }
    rc |= put_chunk(&o, LENS_CHUNK_STRINGS, sb, (uint32_t)n);
  }

  uint64_t app_seq = 1, px_seq = 1, pf_seq = 1;
  uint32_t kch_slot = C.profiler_thread ? 2 : 1;
  uint64_t gpu_off = GPU_BASE + (uint64_t)r * 1000000007ull;
  int next = (r + 1) % C.ranks, prev = (r + C.ranks - 1) % C.ranks;
  /* the writer thread ticks from its own start, not in step with the job's
   * iterations: a seeded phase a process */
  o.mono0 = mono(h, 0) + rnd3(12, 0, (uint64_t)r) % C.frame_ns;
  o.tick = o.mono0 + C.frame_ns;
  for (uint64_t k = 0; k < n_inst && !rc && !o.err; k++) {
    /* --hang-rank: the last instance, which that rank never calls; the
     * others enter it and wait there for ever (below: what stays open) */
    int hung = C.hang_rank >= 0 && k == n_inst - 1;
    if (hung && r == C.hang_rank) break;
    if (k && k % 500 == 0) rc |= flush_events(&o) | clock_chunk(&o, h, k * C.period_ns);
    uint64_t a = arrival(k, r), ks = kstart_true(k, r), ke = kend_true[k];
    /* app thread: GroupApi > CollApi > Coll, KernelLaunch */
    rc |= begin_slot(&o, 0);
    uint64_t g = LENS_ID_MAKE(LENS_T_GROUP_API, 0, app_seq++), ca = LENS_ID_MAKE(LENS_T_COLL_API, 0, app_seq++);
    uint64_t co = LENS_ID_MAKE(LENS_T_COLL, 0, app_seq++), kl = LENS_ID_MAKE(LENS_T_KERNEL_LAUNCH, 0, app_seq++);
    struct lens_p_group_api pg = {0, 1};
    start(&o, LENS_T_GROUP_API, g, 0, ctx, mono(h, a - 500), r, &pg, sizeof pg);
    struct lens_p_coll_api pa = {.func = 1, .count = INST_COUNT, .datatype = 2, .stream = 0x5000, .root = -1};
    start(&o, LENS_T_COLL_API, ca, g, ctx, mono(h, a), r, &pa, sizeof pa);
    stop(&o, ca, mono(h, a + 2000));
    struct lens_p_kernel_launch pk = {.stream = 0x5000};
    start(&o, LENS_T_KERNEL_LAUNCH, kl, g, ctx, mono(h, a + T_ENQ), r, &pk, sizeof pk);
    stop(&o, kl, mono(h, a + T_ENQ + T_LAUNCH));
    /* The Coll starts after its launch returned (NCCL starts the plan's task
     * events after ncclLaunchKernel) and names it in launch_id, as the
     * plugin's record does: validate and the CUPTI join find a launch's
     * channels through it (KernelCh -> Coll -> launch_id -> KernelLaunch). */
    struct lens_p_coll pc = {.seq = k + 1, .func = 1, .send_buff = 0x1000, .recv_buff = 0x2000, .count = INST_COUNT,
                             .datatype = 2, .algo = 3, .proto = 4, .launch_id = kl, .root = -1,
                             .n_channels = (uint8_t)C.channels, .n_warps = 16};
    start(&o, LENS_T_COLL, co, ca, ctx, mono(h, a + T_ENQ + T_LAUNCH + 100), r, &pc, sizeof pc);
    stop(&o, g, mono(h, a + T_ENQ + T_LAUNCH + 500));
    /* proxy thread (or, with --profiler-thread, NCCL 2.31's profiler
     * thread): KernelCh per channel */
    rc |= begin_slot(&o, kch_slot);
    for (int c = 0; c < C.channels; c++) {
      uint64_t id = LENS_ID_MAKE(LENS_T_KERNEL_CH, kch_slot, C.profiler_thread ? pf_seq++ : px_seq++);
      uint64_t cs = ks + (uint64_t)c * 100, ce = ke - (uint64_t)c * 50;
      struct lens_p_kernel_ch pkc = {.start_gpu_ns = gpu_off + cs, .channel = (uint8_t)c};
      /* The proxy polls the channel's counters: it notices the start
       * T_LAG late and the end 1-4 us later than that (seeded), as a busy
       * proxy does; the job view's end bounds take the notice as the
       * latest the end can be (docs/timeline.md). */
      uint64_t lag_end = T_LAG + 1000 + rnd3(11, k, (uint64_t)r * 64 + (uint64_t)c) % 3000;
      start(&o, LENS_T_KERNEL_CH, id, co, ctx, mono(h, cs + T_LAG), r, &pkc, sizeof pkc);
      if (hung) continue; /* the kernel waits for the missing rank: its channels never end */
      state(&o, id, 22, mono(h, ce + lag_end), gpu_off + ce);
      stop(&o, id, mono(h, ce + lag_end + 200));
    }
    rc |= begin_slot(&o, 1);
    /* proxy thread: the send op, then the receive op, each with its first-pass state
     * (19 InProgress, zeroed args) and its steps, each step with the states
     * NCCL records on it (spec §2.5) in time order. */
    for (int send = 1; send >= 0; send--) {
      uint64_t op = LENS_ID_MAKE(LENS_T_PROXY_OP, 1, px_seq++);
      struct lens_p_proxy_op po = {.pid = (int32_t)pid, .peer = send ? next : prev, .n_steps = C.steps,
                                   .chunk_size = (int32_t)chunk_size, .is_send = send, .channel = 0};
      start(&o, LENS_T_PROXY_OP, op, co, ctx, mono(h, ks + 300), r, &po, sizeof po);
      state(&o, op, 19, mono(h, ks + 400), 0);
      if (hung) { /* its first step posted, waiting: for the GPU's data (send), for the peer's (receive) */
        uint64_t sid = LENS_ID_MAKE(LENS_T_PROXY_STEP, 1, px_seq++);
        struct lens_p_proxy_step ps = {.step = 0};
        start(&o, LENS_T_PROXY_STEP, sid, op, ctx, mono(h, ks + 500), r, &ps, sizeof ps);
        state(&o, sid, send ? 8 : 10, mono(h, ks + 500), 0);
        continue;
      }
      for (int st = 0; st < C.steps; st++) {
        uint64_t sid = LENS_ID_MAKE(LENS_T_PROXY_STEP, 1, px_seq++);
        struct lens_p_proxy_step ps = {.step = st};
        /* sub->transSize: the step's bytes once isend/test set it, the
         * previous step's before (0 before the op's first) */
        uint64_t bytes = step_bytes(st), prev_bytes = st ? step_bytes(st - 1) : 0;
        if (send) {
          struct send_step x;
          send_step_times(k, r, st, &x);
          start(&o, LENS_T_PROXY_STEP, sid, op, ctx, mono(h, x.start), r, &ps, sizeof ps);
          state(&o, sid, 8, mono(h, x.start), prev_bytes);  /* SendGPUWait: the slot given to the GPU */
          state(&o, sid, 20, mono(h, x.peer), prev_bytes);  /* SendPeerWait: the GPU produced the data */
          state(&o, sid, 9, mono(h, x.posted), bytes);      /* SendWait: isend accepted */
          stop(&o, sid, mono(h, x.stop));
        } else {
          struct recv_step x;
          recv_step_times(k, r, st, &x);
          start(&o, LENS_T_PROXY_STEP, sid, op, ctx, mono(h, x.start), r, &ps, sizeof ps);
          state(&o, sid, 10, mono(h, x.start), prev_bytes); /* RecvWait: irecv posted */
          state(&o, sid, 11, mono(h, x.arrived), bytes);    /* RecvFlushWait: the data is in */
          state(&o, sid, 12, mono(h, x.flushed), bytes);    /* RecvGPUWait: flush done */
          stop(&o, sid, mono(h, x.stop));
        }
      }
      stop(&o, op, mono(h, ke + 1000));
    }
    rc |= begin_slot(&o, 0);
    if (!hung) stop(&o, co, mono(h, ke + T_LAG + 300));
    rc |= write_staged(&o);
  }
  rc |= flush_events(&o) | o.err;
  if (C.hang_rank >= 0) { /* killed in the hang: no communicator destroyed, no FINI */
    if (fclose(o.f)) rc = -1;
    o.f = NULL;
  }
  /* the application destroys its communicator, then the process finalizes: as the plugin writes them (a job that
   * never finalized its communicators read as "not finalized" on every rank in the report) */
  if (o.f) {
    struct lens_comm_fini cf = {.context = ctx, .fini_mono_ns = mono(h, n_inst * C.period_ns), .comm_index = 0};
    rc |= put_chunk(&o, LENS_CHUNK_COMM_FINI, &cf, sizeof cf);
    struct lens_fini fi = {.at_mono_ns = mono(h, n_inst * C.period_ns), .events_written = o.events,
                           .chunks_written = o.seq + 1, .reason = 1};
    rc |= put_chunk(&o, LENS_CHUNK_FINI, &fi, sizeof fi);
    if (fclose(o.f)) rc = -1;
  }
  for (int i = 0; i < 3; i++) free(o.ring[i].buf), free(o.ring[i].stream);
  free(o.zbuf), free(o.chunk);
  free(o.stage.buf), free(o.stage.ix);
  atomic_fetch_add(&events_written, o.events);
  if (rc) fprintf(stderr, "lens-gen-job: write error on %s\n", path);
  return rc;
}

static void *worker(void *arg) {
  int *fail = arg;
  for (;;) {
    int r = atomic_fetch_add(&next_rank, 1);
    if (r >= C.ranks) break;
    if (write_rank(r)) *fail = 1;
  }
  ZSTD_freeCCtx(tl_zc);
  tl_zc = NULL;
  lens_openset_free(&tl_open);
  free(tl_obuf);
  tl_obuf = NULL;
  return NULL;
}

static int write_truth(void) {
  char path[4096];
  snprintf(path, sizeof path, "%s/truth.json", C.out);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "{\"generator\":\"lens-gen-job\",\"seed\":%" PRIu64 ",\"ranks\":%d,\"hosts\":%d,\"ranks_per_host\":%d,",
          C.seed, C.ranks, C.hosts, C.ranks / C.hosts);
  fprintf(f, "\"instances\":%" PRIu64 ",\"events\":%" PRIu64 ",\"comm_id\":\"0x%" PRIx64 "\",\"func\":\"AllReduce\",",
          n_inst, (uint64_t)atomic_load(&events_written), (uint64_t)COMM_ID);
  fprintf(f, "\"period_ns\":%" PRIu64 ",\"compress\":\"%s\",\"zstd_level\":%d,", C.period_ns, compress_name[C.compress],
          C.zstd_level);
  /* the ProxySteps' bytes (transSize): an op's, its steps' but the last */
  fprintf(f, "\"channels\":%d,\"steps\":%d,\"op_bytes\":%" PRIu64 ",\"step_bytes\":%" PRIu64 ",\n\"hosts_clock\":[",
          C.channels, C.steps, op_bytes, step_bytes(0));
  for (int h = 0; h < C.hosts; h++) {
    char hn[64];
    host_name(h, hn, sizeof hn);
    fprintf(f, "%s\n {\"host\":\"%s\",\"mono_offset_ns\":%" PRId64 ",\"drift_ppm\":%.3f,\"realtime_error_ns\":%" PRId64
               ",\"mono_at_true0_ns\":%" PRIu64 "}",
            h ? "," : "", hn, host_off[h], host_drift[h] * 1e6, host_ntp[h], mono(h, 0));
  }
  fprintf(f, "],\n\"stragglers\":[");
  for (int i = 0; i < C.stragglers; i++)
    fprintf(f, "%s\n {\"seq\":%" PRIu64 ",\"rank\":%d,\"late_ns\":%" PRIu64 ",\"cause\":\"late_app_call\"}", i ? "," : "",
            strags[i].inst + 1, strags[i].rank, strags[i].late_ns);
  fprintf(f, "],\n\"hang\":");
  if (C.hang_rank >= 0)
    fprintf(f, "{\"rank\":%d,\"seq\":%" PRIu64 ",\"missing\":[%d]}\n}\n", C.hang_rank, n_inst, C.hang_rank);
  else
    fprintf(f, "null}\n");
  return fclose(f);
}

static void usage(FILE *f) {
  fprintf(f, "usage: lens-gen-job -o DIR [--ranks N] [--hosts H] [--events E] [--stragglers S] [--channels C]\n"
             "                    [--steps K] [--seed X] [--threads T] [--compress none|packed|zstd]\n"
             "                    [--zstd-level L] [--frame-kib N] [--frame-ms M] [--chunk-kib N] [--profiler-thread]\n"
             "                    [--hang-rank R] [--no-index]\n"
             "  Writes a synthetic job's .lens traces (one file per rank/process) and DIR/truth.json.\n"
             "  Defaults: 1024 ranks on 128 hosts, 100000000 events, 16 stragglers, 2 channels, 8 steps per op,\n"
             "  events compressed as the plugin's default (NCCL_LENS_COMPRESS=zstd, NCCL_LENS_ZSTD_LEVEL=-1),\n"
             "  cut into frames as the plugin's writer cuts them: a thread's frame is written once it holds\n"
             "  64 KiB of packed stream, and every open frame every 100 ms of the job's time.\n"
             "  --frame-kib, --frame-ms: other frames, to measure what they would give the reader (the plugin\n"
             "  does not write them); --chunk-kib: the fixed records an EVENTS chunk holds with --compress none\n"
             "  (256, a busy ring's). --profiler-thread: KernelCh reported from a thread of their own, as NCCL\n"
             "  2.31 reports them from its profiler thread (default: from the proxy thread, as NCCL up to 2.30).\n"
             "  --hang-rank R: rank R never calls the last instance; every other rank enters it and waits\n"
             "  there (its kernel's channels and first proxy steps never end), and no process ends (the\n"
             "  job killed in the hang: no FINI); truth.json's \"hang\" names the rank and the seq.\n"
             "  An INDEX chunk follows each events chunk, as the plugin writes it (docs/trace-format.md, \"The\n"
             "  index\"); --no-index: none, as plugins before it wrote.\n");
}

static int num(const char *s, uint64_t *v) {
  char *e;
  errno = 0;
  unsigned long long x = strtoull(s, &e, 10);
  if (errno || e == s || *e || s[0] == '-') return -1;
  *v = x;
  return 0;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    uint64_t v = 0;
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout), 0;
    if (!strcmp(a, "--profiler-thread")) {
      C.profiler_thread = 1;
      continue;
    }
    if (!strcmp(a, "--no-index")) {
      C.no_index = 1;
      continue;
    }
    if (i + 1 >= argc) return usage(stderr), 2;
    if (!strcmp(a, "-o")) {
      C.out = argv[++i];
      continue;
    }
    if (!strcmp(a, "--compress")) {
      const char *v = argv[++i];
      C.compress = -1;
      for (int k = 0; k < 3; k++)
        if (!strcmp(v, compress_name[k])) C.compress = k;
      if (C.compress < 0) return fprintf(stderr, "lens-gen-job: --compress takes none, packed or zstd\n"), 2;
      continue;
    }
    if (!strcmp(a, "--zstd-level")) {
      char *end;
      long l = strtol(argv[++i], &end, 10);
      if (*end || end == argv[i] || l < LENS_ZSTD_LEVEL_MIN || l > LENS_ZSTD_LEVEL_MAX)
        return fprintf(stderr, "lens-gen-job: --zstd-level takes -50..19\n"), 2;
      C.zstd_level = (int)l;
      continue;
    }
    if (num(argv[++i], &v)) return fprintf(stderr, "lens-gen-job: %s needs a number\n", a), 2;
    if (!strcmp(a, "--ranks")) C.ranks = (int)v;
    else if (!strcmp(a, "--hosts")) C.hosts = (int)v;
    else if (!strcmp(a, "--events")) C.events = v;
    else if (!strcmp(a, "--stragglers")) C.stragglers = (int)v;
    else if (!strcmp(a, "--channels")) C.channels = (int)v;
    else if (!strcmp(a, "--steps")) C.steps = (int)v;
    else if (!strcmp(a, "--seed")) C.seed = v;
    else if (!strcmp(a, "--threads")) C.threads = (int)v;
    else if (!strcmp(a, "--chunk-kib")) C.chunk_bytes = v * 1024;
    else if (!strcmp(a, "--frame-kib")) C.frame_bytes = v * 1024;
    else if (!strcmp(a, "--frame-ms")) C.frame_ns = v * 1000000;
    else if (!strcmp(a, "--hang-rank")) C.hang_rank = v > INT32_MAX ? INT32_MAX : (int)v;
    else return usage(stderr), 2;
  }
  if (!C.out || C.ranks < 2 || C.hosts < 1 || C.ranks % C.hosts || C.channels < 1 || C.channels > 32 ||
      C.steps < 4 || C.steps > 64 || C.ranks > 1 << 20 || C.hosts > 100000 || C.chunk_bytes < 16384 ||
      C.chunk_bytes > (16u << 20) || C.frame_bytes < 1024 || C.frame_bytes > (1u << 20) || C.frame_ns < 1000000 ||
      C.frame_ns > 3600000000000ull || C.hang_rank >= C.ranks)
    return fprintf(stderr, "lens-gen-job: need -o DIR, ranks a multiple of hosts, 1-32 channels, 4-64 steps, "
                           "16-16384 KiB chunks, 1-1024 KiB frames, 1-3600000 ms between frames, "
                           "a hang rank below the ranks\n"), 2;
  if (mkdir(C.out, 0755) && errno != EEXIST)
    return fprintf(stderr, "lens-gen-job: cannot create %s: %s\n", C.out, strerror(errno)), 1;
  n_inst = C.events / ((uint64_t)C.ranks * EVENTS_PER_RANK_INST(C));
  op_bytes = 2 * (uint64_t)(C.ranks - 1) * INST_BYTES / ((uint64_t)C.ranks * (uint64_t)C.channels);
  for (chunk_size = 4096; chunk_size < step_bytes(C.steps - 1); chunk_size *= 2) /* a slot holds any step */
    ;
  if (n_inst < 1) n_inst = 1;
  if ((uint64_t)C.stragglers > n_inst) C.stragglers = (int)n_inst;
  host_off = calloc((size_t)C.hosts, sizeof *host_off);
  host_drift = calloc((size_t)C.hosts, sizeof *host_drift);
  host_ntp = calloc((size_t)C.hosts, sizeof *host_ntp);
  kend_true = calloc(n_inst, sizeof *kend_true);
  strags = calloc((size_t)C.stragglers + 1, sizeof *strags);
  if (!host_off || !host_drift || !host_ntp || !kend_true || !strags) return fprintf(stderr, "out of memory\n"), 1;
  for (int h = 0; h < C.hosts; h++) {
    host_off[h] = (int64_t)(rnd3(3, (uint64_t)h, 0) % 10000000000ull) - 5000000000ll; /* +-5 s */
    host_drift[h] = ((double)(rnd3(4, (uint64_t)h, 0) % 100001) - 50000.0) * 1e-9;   /* +-50 ppm */
    host_ntp[h] = (int64_t)(rnd3(5, (uint64_t)h, 0) % 2000001) - 1000000;            /* +-1 ms */
  }
  /* Stragglers: distinct instances spread over the run, a rank each, late
   * 100-1000 us (well above the 20 us threshold, below the period). */
  for (int i = 0; i < C.stragglers; i++) {
    strags[i].inst = (uint64_t)i * n_inst / (uint64_t)C.stragglers + rnd3(6, (uint64_t)i, 0) % (n_inst / (uint64_t)C.stragglers);
    strags[i].rank = (int)(rnd3(7, (uint64_t)i, 0) % (uint64_t)C.ranks);
    strags[i].late_ns = 100000 + rnd3(8, (uint64_t)i, 0) % 900000;
  }
  for (uint64_t k = 0; k < n_inst; k++) {
    uint64_t mx = 0;
    for (int r = 0; r < C.ranks; r++) {
      uint64_t s = kstart_true(k, r);
      if (s > mx) mx = s;
    }
    kend_true[k] = mx + C.exec_ns;
  }
  int nt = C.threads > 0 ? C.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (nt < 1) nt = 1;
  pthread_t *th = calloc((size_t)nt, sizeof *th);
  int *fail = calloc((size_t)nt, sizeof *fail);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < nt; i++) pthread_create(&th[i], NULL, worker, &fail[i]);
  int bad = 0;
  for (int i = 0; i < nt; i++) pthread_join(th[i], NULL), bad |= fail[i];
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  if (bad || write_truth()) return fprintf(stderr, "lens-gen-job: failed\n"), 1;
  free(th);
  free(fail);
  free(host_off), free(host_drift), free(host_ntp), free(kend_true), free(strags);
  uint64_t ev = atomic_load(&events_written), by = atomic_load(&bytes_written);
  printf("lens-gen-job: %d ranks on %d hosts, %" PRIu64 " instances, %" PRIu64 " events, %.1f MiB (%s, %.1f bytes an "
         "event) in %.2f s (%d threads, %.2f M events/s)\n",
         C.ranks, C.hosts, n_inst, ev, (double)by / 1048576.0, compress_name[C.compress], ev ? (double)by / (double)ev : 0.0,
         s, nt, (double)ev / s / 1e6);
  return 0;
}
