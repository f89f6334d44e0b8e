/* The live page: a process's running aggregates, for `nccl-lens agent` and
 * `nccl-lens top` (docs/metrics.md).
 *
 * <NCCL_LENS_REGISTRY_DIR>/<pid>.live, a file of exactly sizeof(struct
 * lens_live_page) bytes, created by the plugin's writer thread at the first
 * init and mapped MAP_SHARED. The writer aggregates in private memory as it
 * drains the rings and publishes a copy every NCCL_LENS_LIVE_PERIOD_MS under a
 * seqlock: `seq` odd while it copies, even when done. A reader copies the
 * page, then reads `seq` again: equal and even is a consistent snapshot,
 * otherwise it retries (a bounded number of times). The page stays after the
 * last finalize with state FINISHED (its final totals); a reader tells a dead
 * process by its pid, `proc_start_ticks` and `pidns`.
 *
 * The page is another process's memory: a reader copies it with read()
 * (never trusting a mapping's size), checks magic, version and size, and
 * bounds every count and every name (names may lack their terminator).
 *
 * Cardinality is bounded here: at most LENS_LIVE_COMMS communicators and
 * LENS_LIVE_SERIES series per process; an event that finds no free series is
 * counted in series_overflow and aggregated nowhere else.
 *
 * Clocks: *_mono_ns fields are the process's CLOCK_MONOTONIC, *_real_ns
 * CLOCK_REALTIME, gpu_*_ns the GPU's own globaltimer (KernelCh pTimer) of the
 * rank that recorded them; durations are differences on one clock. */
#ifndef NCCL_LENS_LIVE_H
#define NCCL_LENS_LIVE_H

#include <stdint.h>

#define LENS_LIVE_MAGIC 0x3156494C534E454Cull /* "LENSLIV1" little-endian */
#define LENS_LIVE_VERSION 3 /* 2: recent[] grew from 1024 to 8192; 3: the process's start ticks and pid namespace */
#define LENS_LIVE_COMMS 64
#define LENS_LIVE_SERIES 256
/* Completed instances kept for the agent's execution/wait split: a rank may
 * complete this many between two reads of the agent (it follows the pages
 * every second) and two publishes (NCCL_LENS_LIVE_PERIOD_MS) without a loss;
 * 8192 covers ~8 k collectives/s per rank. A reader counts what it missed. */
#define LENS_LIVE_RECENT 8192
/* Time histograms: bucket i counts values <= 2^i microseconds (i < 22, up to
 * ~4.2 s); the last bucket is everything above. Not cumulative. */
#define LENS_LIVE_TIME_BUCKETS 23
#define LENS_LIVE_FUNC 24
#define LENS_LIVE_ALGO 24
#define LENS_LIVE_PROTO 16

enum { LENS_LIVE_RUNNING = 1, LENS_LIVE_FINISHED = 2 };

struct lens_live_hist {
  uint64_t count;
  uint64_t sum_ns;
  uint64_t bucket[LENS_LIVE_TIME_BUCKETS];
};

struct lens_live_comm {
  uint64_t comm_id; /* commId (v5+) / commHash (v4) */
  int32_t rank, nranks, nnodes;
  uint32_t live; /* 0 once finalized */
  char name[64]; /* commName, truncated */
};

/* One (communicator, function, algo, proto, size bucket, user tag). */
/* A copy-engine collective's series (is_p2p): algo "CE", proto its sync
 * strategy ("MC"/"UC"), no channels so no span, notice or completion;
 * enqueue holds CeColl start -> stop (the host's enqueue of the copies). */
#define LENS_LIVE_KIND_CE 2

struct lens_live_series {
  uint16_t comm;       /* index in comms[] */
  uint8_t size_bucket; /* floor(log2(bytes)), 255 for 0 bytes */
  uint8_t is_p2p;      /* 0 collective, 1 send/recv, LENS_LIVE_KIND_CE: a copy-engine collective (API v6+) */
  uint32_t reserved;
  uint64_t user_tag; /* 0 = untagged */
  char func[LENS_LIVE_FUNC], algo[LENS_LIVE_ALGO], proto[LENS_LIVE_PROTO];
  uint64_t count;                                   /* Coll/P2p events started */
  uint64_t bytes;                                   /* count x datatype size, as `summary` */
  uint64_t completed;                               /* their spans closed (all channels stopped) */
  uint64_t last_seq_started, last_seq_completed;    /* NCCL seqNumber (colls), +1 so 0 = none */
  struct lens_live_hist span;    /* GPU: first channel start -> last channel stop (execution + wait) */
  struct lens_live_hist enqueue; /* host: CollApi start (else Coll start) -> Coll stop */
  struct lens_live_hist notice;  /* host: proxy notice of a channel stop, minus the quickest notice seen */
};

/* A completed collective instance (a ring of the last LENS_LIVE_RECENT). */
struct lens_live_instance {
  uint64_t comm_id;
  uint64_t seq; /* NCCL seqNumber */
  uint64_t gpu_start_ns, gpu_stop_ns;
  uint64_t bytes;        /* count x datatype size */
  uint64_t done_real_ns; /* when the writer closed it, CLOCK_REALTIME */
  uint16_t series;
  uint16_t comm;
  int32_t rank;
};

struct lens_live_page {
  uint64_t magic;
  uint32_t version, size; /* sizeof(struct lens_live_page) */
  uint64_t seq;           /* seqlock (see above); accessed atomically */
  uint32_t pid, state;
  uint64_t proc_start_ticks; /* /proc/<pid>/stat field 22: with pid, tells a live process from a reused pid */
  uint64_t pidns;            /* inode of the process's /proc/self/ns/pid: pid and start are judged only there */
  uint64_t start_mono_ns, start_real_ns;     /* the session's start */
  uint64_t updated_mono_ns, updated_real_ns; /* this copy */
  char host[64];
  uint64_t events;          /* records drained and aggregated */
  uint64_t drops;           /* records lost before the writer (ring full, no slot, ...) */
  uint64_t series_overflow; /* events that found no free series */
  uint64_t unmatched;       /* channel records whose collective was never seen (evicted or dropped) */
  uint64_t recent_total;    /* instances ever put in recent[]; the newest is recent[(recent_total-1) % N] */
  uint32_t n_comms, n_series;
  struct lens_live_comm comms[LENS_LIVE_COMMS];
  struct lens_live_series series[LENS_LIVE_SERIES];
  struct lens_live_instance recent[LENS_LIVE_RECENT];
};

static inline int lens_live_time_bucket(uint64_t ns) {
  uint64_t us = (ns + 999) / 1000;
  int b = 0;
  while (b < LENS_LIVE_TIME_BUCKETS - 1 && us > (1ull << b)) b++;
  return b;
}

#endif
