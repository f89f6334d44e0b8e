/* A trace's INDEX chunks (docs/trace-format.md, "The index"), read without
 * decoding a single event: for every events chunk of the file, what it
 * holds (its time range, its STARTs' sequence numbers, its event types, the
 * ids its STOP and STATE records touch) when the writer indexed it, and the
 * process's open events as the writer saw them now and then. A window's
 * plan (which chunks it must decode) is made from this; a chunk without a
 * valid INDEX is marked so and must always be decoded.
 *
 * Same chunk walk and checks as every reader (chunk_stream.h): damaged
 * chunks are skipped, a cut file is read to its last whole chunk. An INDEX
 * names the events chunk right before it (same session); one whose slot or
 * record count does not match that chunk's header, or that is short or
 * inconsistent, is counted in bad and ignored. */
#ifndef NCCL_LENS_READER_TRACE_INDEX_H
#define NCCL_LENS_READER_TRACE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

#define LENS_CIX_INDEXED 0x1   /* an INDEX described it: the fields below are the writer's */
#define LENS_CIX_TOUCH_ANY 0x2 /* its STOP/STATE records may touch any id */

/* One events chunk (EVENTS or EVENTS_PACKED). */
struct lens_chunk_ix {
  uint64_t offset;   /* of its chunk header in the file */
  uint64_t seq;      /* its chunk number */
  uint32_t bytes;    /* header, payload and padding */
  uint32_t session;  /* the chunk header's session number */
  uint32_t slot;     /* from its events header */
  uint32_t records;  /* its header's count */
  uint32_t flags;    /* LENS_CIX_* */
  uint32_t types;    /* bit t: holds a record of type t (indexed only) */
  uint64_t first_ts, last_ts;  /* its records' times, CLOCK_MONOTONIC ns (indexed only) */
  uint64_t start_lo, start_hi; /* its STARTs' sequence numbers, 0 0 none (indexed only) */
  uint32_t touch, n_touch;     /* its touches: lens_trace_index.touch[touch ..] */
};

/* An open set (struct lens_index_open) and what it rode on. */
struct lens_open_ix {
  uint64_t taken_mono_ns;
  uint32_t session;
  uint32_t flags;        /* LENS_INDEX_OPEN_F_* */
  size_t after_chunk;    /* written after this events chunk (index into lens_trace_index.c) */
  size_t drained, n_drained; /* lens_trace_index.drained[drained ..] */
  size_t ids, n_ids;         /* lens_trace_index.ids[ids ..], ascending */
};

/* A touch, for the lookup (lens_trace_index_touches): by (session, slot, seq_lo); hi_max the highest seq_hi
 * of its (session, slot) up to it. */
struct lens_touch_ent {
  uint32_t session, slot;
  uint64_t lo, hi, hi_max;
  size_t chunk;
};

struct lens_trace_index {
  struct lens_chunk_ix *c;
  size_t n;
  struct lens_index_touch *touch;
  size_t n_touch;
  struct lens_open_ix *open;
  size_t n_open;
  struct lens_index_drained *drained;
  size_t n_drained;
  uint64_t *ids;
  size_t n_ids;
  size_t indexed;       /* events chunks an INDEX described */
  size_t bad;           /* INDEX chunks ignored: no events chunk before them, a mismatch, malformed */
  uint64_t event_bytes; /* the events chunks' bytes, header and padding included */
  uint64_t index_bytes; /* the INDEX chunks' */
  /* What a window's plan asks of the file before reading it (window.c). */
  uint32_t producer;      /* the file header's LENS_PRODUCER_* */
  int has_session;        /* a SESSION chunk was read: */
  uint32_t pid;           /* its first's pid and host (cleaned as the reader cleans it) */
  char host[64];
  uint32_t session_flags; /* every SESSION's LENS_SESSION_F_*, or-ed */
  size_t cupti_chunks;    /* CUPTI chunks */
  uint64_t ring_full;     /* the largest ring_full a DROPS chunk gave: STARTs lost, sequence numbers skipped */
  int payloads_checked;   /* the walk found no damage: every chunk's payload passed its CRC, on the bytes read */
  /* The touches sorted for lookups, and the chunks every lookup of their session returns (unindexed, or
   * touching any id). */
  struct lens_touch_ent *tsort;
  size_t n_tsort;
  size_t *tany;
  size_t n_tany;
};

/* Reads path's chunks (payloads of INDEX chunks and events headers only).
 * 0, or -1 with a line in err (not a trace, unreadable, no memory). */
int lens_trace_index_read(const char *path, struct lens_trace_index *ix, char *err, size_t err_len);
/* The same from the file's bytes already read (path names it in err). */
int lens_trace_index_read_mem(const uint8_t *bytes, size_t size, const char *path, struct lens_trace_index *ix,
                              char *err, size_t err_len);
void lens_trace_index_free(struct lens_trace_index *ix);

/* The events chunks that may hold a STOP or STATE of (session, slot, seq)
 * whose START is elsewhere: a touch of theirs holds it (or TOUCH_ANY), or
 * they are unindexed. Calls fn(ctx, chunk index) for each (a binary search
 * in the sorted touches, not a walk of the file).
 * (Where a START is: window_plan.c's lookup, by each slot's ranges.) */
void lens_trace_index_touches(const struct lens_trace_index *ix, uint32_t session, uint32_t slot, uint64_t seq,
                              void (*fn)(void *ctx, size_t chunk), void *ctx);

#endif
