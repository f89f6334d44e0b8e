/* Bulk reading: a trace's events as columns per event type (docs/scale.md,
 * "What bounds it"). The general model (lensread.h) builds one 240-byte
 * lens_event per event, an id table, a global sort by (process, start),
 * parent links and children lists: a cache miss or more per event, 4 M
 * events/s per core. This reader keeps what a bulk pass needs, written
 * sequentially per type, and resolves ids through each thread's sequence
 * numbers (an id's low 40 bits count the STARTs of its thread slot, so a
 * slot's STARTs are a dense array) instead of a hash: no sort, no links.
 *
 * Per event (columns of its type, in file order of the STARTs): the id, its
 * thread (file, session, slot, tid), start and stop (CLOCK_MONOTONIC ns),
 * the parent as a reference to another column's event, flags, how many
 * STATE records it got, its communicator, the type's on-disk payload
 * zero-extended (strings stay ids: lens_cols_str), and for KernelCh and
 * KernelPhase the stop pTimer (STATE 22 / 31).
 *
 * Same as the general model: the chunk checks, damaged chunks skipped and cut
 * files (chunk_stream.h),
 * packed and zstd chunks, the first STOP kept, orphans counted, parents and
 * ids scoped to (file, session), a PXN ProxyOp's parent left to the other
 * process. Not done here: superseded ProxySteps, comms inherited from
 * parents, graph marks, the STATE records themselves (only their count),
 * CUPTI, scheduler samples, clocks. Memory beyond the columns: one read
 * buffer and the id arrays of the file being read. */
#ifndef NCCL_LENS_READER_COLUMNS_H
#define NCCL_LENS_READER_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

/* A reference to an event: its type and index in that type's columns. */
#define LENS_COL_NONE (-1)
#define LENS_COL_REF(type, idx) (((int64_t)(type) << 40) | (int64_t)(idx))
#define LENS_COL_REF_TYPE(r) ((unsigned)((uint64_t)(r) >> 40))
#define LENS_COL_REF_INDEX(r) ((size_t)((uint64_t)(r) & ((1ull << 40) - 1)))

/* lens_cols_type.flags */
#define LENS_COLF_STOPPED 0x1        /* stop holds its first STOP */
#define LENS_COLF_DUP_STOP 0x2       /* stopped again later (ignored) */
#define LENS_COLF_REMOTE 0x4         /* PXN (START flag or id bit) */
#define LENS_COLF_PARENT_MISSING 0x8 /* a parent value that names no event of this file and session */
#define LENS_COLF_PARENT_REMOTE 0x10 /* a PXN ProxyOp of another pid: its parent is in that process */

struct lens_cols_thread { uint32_t file, session, slot, tid, roles; };
struct lens_cols_comm { uint32_t file, session; uint64_t context, comm_id; int32_t rank, nranks; };
struct lens_cols_file {
  const char *path;
  uint32_t producer, pid;
  uint64_t bytes, truncated_bytes, lost_chunks;
  uint64_t damaged_bytes, damaged_chunks; /* chunks skipped for a bad CRC (lens_file's) */
  const char *truncation; /* NULL: read to its end */
  uint64_t bad_records, orphan_stops;
};

struct lens_cols_type {
  size_t n, cap;
  uint64_t *id, *start, *stop;
  int64_t *parent;    /* LENS_COL_REF or LENS_COL_NONE */
  uint32_t *thread;   /* index into lens_cols.threads */
  uint32_t *flags;    /* LENS_COLF_* */
  uint32_t *n_states; /* STATE records (a folded run counts its repeats) */
  int32_t *comm;      /* index into lens_cols.comms from the START's context, -1 none */
  uint64_t *stop_gpu; /* KernelCh, KernelPhase: stop pTimer (STATE 22 / 31), 0 none; NULL for other types */
  uint8_t *payload;   /* n * payload_size bytes: the type's lens_p_* struct as written, zero-extended */
  uint32_t payload_size;
};

struct lens_cols_priv;
struct lens_cols {
  struct lens_cols_type t[LENS_T_COUNT];
  struct lens_cols_thread *threads; size_t n_threads, cap_threads;
  struct lens_cols_comm *comms; size_t n_comms, cap_comms;
  struct lens_cols_file *files; size_t n_files, cap_files;
  struct lens_cols_priv *priv;
};

struct lens_cols *lens_cols_new(void);
/* Appends one trace's events. 0, or -1 with a line in err (not a trace,
 * unreadable, no memory). A cut trace is read up to its cut (files[].truncation). */
int lens_cols_read(struct lens_cols *c, const char *path, char *err, size_t err_len);
/* The string a payload's string id names in the event's file and session (NULL for 0 or unknown). */
const char *lens_cols_str(const struct lens_cols *c, uint32_t thread, lens_str_t id);
size_t lens_cols_events(const struct lens_cols *c);
/* Drops every event, thread, communicator, file and string, and keeps the
 * columns' memory and the zstd context (the strings and the per-file id
 * arrays are freed, as after each file): a streaming reader takes one trace
 * (or group of traces) after the other through one column set, and its
 * columns stay mapped and in cache instead of being allocated and faulted
 * in again for each. */
void lens_cols_clear(struct lens_cols *c);
void lens_cols_free(struct lens_cols *c);

/* The floor of bulk reading: walk the chunks, check every CRC, unzstd,
 * and decode every record's header, id and time (packed chunks straight
 * from the varint stream, as the columns read them), build
 * nothing. upto stops earlier, to measure the stages apart: after the
 * chunks' CRCs (LENS_SCAN_CRC), after zstd (LENS_SCAN_ZSTD). Adds to the
 * counts (records are counted only by LENS_SCAN_ALL); 0, or -1 with err set. */
enum { LENS_SCAN_CRC = 0, LENS_SCAN_ZSTD = 1, LENS_SCAN_ALL = 2 };
struct lens_scan_counts { uint64_t starts, stops, states, bytes, checksum; };
int lens_cols_scan(const char *path, int upto, struct lens_scan_counts *out, char *err, size_t err_len);

#endif
