/* A streaming reader of torch.profiler (Kineto) Chrome-trace JSON files,
 * plain or gzip'd (docs/kineto-import.md; the layout: spec pytorch.md §1).
 *
 * The file is parsed as a stream of SAX events (yajl 2) and each trace event
 * is handed to a callback as soon as its object closes, with the few fields
 * and args the job view needs; nothing of the file is kept. Memory is bounded
 * whatever the file: nesting deeper than LENS_KINETO_MAX_DEPTH and any token
 * (string, number, key) longer than LENS_KINETO_MAX_TOKEN bytes stop the read
 * with an error (yajl would otherwise buffer a token whole), and every string
 * kept is truncated to its field's size (counted). */
#ifndef NCCL_LENS_KINETO_READ_H
#define NCCL_LENS_KINETO_READ_H

#include <stddef.h>
#include <stdint.h>

#define LENS_KINETO_MAX_DEPTH 64
#define LENS_KINETO_MAX_TOKEN (1u << 20)

/* Which fields an event has (lens_kineto_event.have). */
enum {
  LENS_KEV_PID = 1u << 0,
  LENS_KEV_TID = 1u << 1,
  LENS_KEV_TS = 1u << 2,
  LENS_KEV_DUR = 1u << 3,
  LENS_KEV_CORRELATION = 1u << 4,
  LENS_KEV_EXTERNAL_ID = 1u << 5,
  LENS_KEV_IN_NELEMS = 1u << 6,
  LENS_KEV_OUT_NELEMS = 1u << 7,
  LENS_KEV_GROUP_SIZE = 1u << 8,
  LENS_KEV_SEQ = 1u << 9,
  LENS_KEV_RANK = 1u << 10,
  LENS_KEV_PG_RANKS = 1u << 11,
};

/* One trace event. Strings are NUL-terminated, "" when absent, bytes outside
 * printable ASCII replaced by '?'. Times are ns as the file gives them: µs
 * with up to 3 decimals (ns resolution; further digits rounded), relative to
 * baseTimeNanoseconds when the file has one (lens_kineto_info.base_ns, known
 * only at the end of the file: Kineto writes it after the events' header
 * keys, or not at all in files older than May 2024, whose ts are epoch µs). */
struct lens_kineto_event {
  char ph;                 /* 'X', 'M', 'i', 's', 'f', ...; 0 absent */
  uint32_t have;           /* LENS_KEV_* */
  int64_t pid, tid;        /* GPU rows: device, stream; CPU rows: OS pid, thread id (numbers only) */
  int64_t ts_ns, dur_ns;
  int64_t correlation, external_id; /* args "correlation" (CUPTI), "External id" (PyTorch op) */
  int64_t in_nelems, out_nelems, group_size;
  int64_t seq;             /* args "Seq" (the process group's sequence number; pytorch 2026+) */
  int64_t rank;            /* args "Rank" (record_param_comms) */
  uint32_t pg_ranks_n;     /* integers in args "Process Group Ranks" */
  char name[512], cat[48];
  char coll_name[64], dtype[32], pg_name[128], pg_desc[128];
};

/* What the file said besides its events, and the read's counts. */
struct lens_kineto_info {
  int64_t base_ns;         /* baseTimeNanoseconds (Unix epoch ns) */
  int64_t rank, world_size; /* distributedInfo */
  int has_base, has_rank, has_world_size;
  uint64_t events;         /* trace events delivered */
  uint64_t truncated;      /* strings cut to their field's size */
  uint64_t bad_values;     /* fields of a wrong type or out of range (left absent) */
  uint64_t bytes;          /* JSON bytes read (after gunzip) */
};

/* Returns nonzero to stop the read (lens_kineto_read then returns -1 with
 * err "stopped by the caller"). */
typedef int (*lens_kineto_event_fn)(void *ctx, const struct lens_kineto_event *e);

/* Reads path (gzip'd or not: told by its bytes, not its name). 0, or -1 with
 * a one-line reason in err (a truncated or malformed file, too deep, a token
 * too long, not a JSON object, a read error). info may be NULL. */
int lens_kineto_read(const char *path, lens_kineto_event_fn fn, void *ctx, struct lens_kineto_info *info, char *err,
                     size_t err_len);

/* 1 when path's name is a Kineto trace's: ends in .json or .json.gz. */
int lens_kineto_name_is(const char *path);
/* 1 when path looks like a Kineto trace: a regular file whose first 64 KiB
 * (gunzip'd) name "traceEvents" or "schemaVersion" (other JSON files of a
 * directory, e.g. a replay's truth.json, are not traces). */
int lens_kineto_sniff(const char *path);

#endif
