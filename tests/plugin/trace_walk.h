/* Test helper: walks a .lens file with the shared chunk framing
 * (common/lens_chunk.h) and tallies what it holds. Used alongside the
 * reader library to check framing-level facts (sessions, chunk counts,
 * torn tails) that a reader's model does not expose directly. */
#ifndef NCCL_LENS_TESTS_TRACE_WALK_H
#define NCCL_LENS_TESTS_TRACE_WALK_H

#include <stdint.h>

#include "nccl-lens/trace_format.h"

struct trace_tally {
  int ok_header;
  uint64_t chunks;                 /* complete, valid chunks */
  uint64_t by_type[16];            /* chunks per LENS_CHUNK_* */
  uint64_t records;                /* event records in EVENTS chunks */
  uint64_t starts, stops, states;
  uint64_t starts_by_type[LENS_T_COUNT];
  uint32_t sessions;               /* distinct session numbers seen */
  uint32_t max_session;
  uint64_t fini_reason[3];         /* FINI chunks by reason (1, 2) */
  uint64_t bad_tail_bytes;         /* bytes after the last valid chunk */
  uint64_t bad_packed;             /* EVENTS_PACKED chunks that did not decode in full */
  uint64_t seq_gaps;               /* chunk seq not incrementing by 1 */
  uint64_t ts_nonmono;             /* records whose ts went back within a chunk */
  struct lens_drops last_drops;
  uint64_t last_ts;                /* largest record ts */
  uint64_t first_ts;               /* smallest record ts */
  uint32_t last_session_api;       /* nccl_api_version of the last SESSION */
};

/* 0 if the file could be read (even if cut short), -1 otherwise. */
int trace_walk(const char *path, struct trace_tally *t);
/* Calls fn for every event record (file form) of every EVENTS chunk. */
int trace_for_each_record(const char *path, void (*fn)(const struct lens_rec_hdr *rec, uint32_t session, void *arg),
                          void *arg);

#endif
