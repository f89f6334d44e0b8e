/* Reader internals shared by load.c, chunks.c, records.c and resolve.c.
 * Nothing outside tools/reader/ includes this. */
#ifndef NCCL_LENS_READER_PRIV_H
#define NCCL_LENS_READER_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "lensread.h"
#include "id_seq.h"
#include "reader_hash.h"
#include "step_phases.h"

#include "mem_hint.h"
/* Sizes a writer never exceeds by far (its chunks hold at most 256 KiB of
 * fixed records); a packed chunk claiming more is malformed input, not a
 * reason to allocate. */
#define LENS_UNPACK_MAX (64u << 20)
/* An EVENTS_PACKED chunk made back into the fixed records of an EVENTS
 * chunk (packed.c), for both readers: the buffers and the zstd context are
 * reused from chunk to chunk (zeroed to start). */
struct lens_unpacker {
  uint8_t *unpack, *unzstd;
  size_t cap_unpack, cap_unzstd;
  struct ZSTD_DCtx_s *dctx; /* NULL until a zstd chunk */
};
/* The checks of an EVENTS_PACKED chunk's header and its zstd: 1: *ph
 * holds the header and *body the varint stream (in u's buffer or the
 * chunk); 0: the chunk is malformed (its records counted in *bad); -1: no
 * memory. */
int lens_unpack_body(struct lens_unpacker *u, const uint8_t *p, uint32_t len, uint64_t *bad,
                     struct lens_packed_hdr *ph, const uint8_t **body, size_t *body_len);
/* 1: *out (in u's buffer) holds an EVENTS payload of *out_len bytes; 0:
 * the chunk is malformed; -1: no memory. Records lost count in *bad. */
int lens_unpack_chunk(struct lens_unpacker *u, const uint8_t *p, uint32_t len, uint64_t *bad, const uint8_t **out,
                      uint32_t *out_len);
void lens_unpacker_release(struct lens_unpacker *u);
/* Grow *arr (element size es) so that index n fits; 0 or -1 (no memory). */
int lens_vec_reserve(void **arr, size_t *cap, size_t n, size_t es);
/* The room test inline: a push is a compare and a store, the call only to grow. */
#define LENS_VEC_PUSH(b, arr, n, cap) \
  (((n) < (b)->cap || !lens_vec_reserve((void **)&(arr), &(b)->cap, (n) + 1, sizeof *(arr))) ? &(arr)[(n)++] : NULL)

/* Strings live in an arena of fixed blocks so their pointers never move. */
struct lens_arena_block;
const char *lens_arena_strndup(struct lens_arena_block **head, const void *s, size_t len);
void lens_arena_free(struct lens_arena_block *head);
/* A STRINGS chunk's entries (u32 id, u16 length, bytes) copied into the
 * arena and put in h under (file, session, id); a malformed tail is left
 * out. 0, or -1 (no memory). Both readers' (chunks.c, columns.c). */
int lens_strings_put(struct lens_arena_block **arena, struct lens_hash *h, uint32_t file, uint32_t session,
                     const uint8_t *p, uint32_t len);

/* While loading: the event has seen its STOP (cleared before the model is returned). */
#define LENS_EVF_STOPPED_PRIV 0x80000000u

struct lens_map { void *addr; size_t len; }; /* a file read whole (file_read.h), freed with the model */

/* Storage the model keeps after loading (model->priv). */
struct lens_reader_priv {
  struct lens_map *maps; size_t n_maps, cap_maps;
  struct lens_arena_block *arena;
  /* (session, id) -> event index (or a folded step's LENS_STEP_VALUE):
   * one table per proc, so reading a file touches only its own table, not
   * one spanning every file (which made loading N files at once several
   * times slower per event). Keyed by the writer's numbering (id_seq.h):
   * the hash it replaced missed the cache on every START, STOP, STATE and
   * parent (issue 23). */
  struct lens_idseq *events; size_t n_events_hash;
  struct lens_proc_session { int32_t proc; uint32_t session; } *sessions; /* every session number seen */
  size_t n_sessions, cap_sessions;
  void (*on_free[LENS_MODEL_RELEASE_MAX])(struct lens_model *m); /* lens_model_on_free */
  size_t n_on_free;
  /* LENS_LOAD_FOLD_LATER: the builder's folded steps, their state runs
   * and one-way evidence, until lens_model_fold counts them (their parents
   * event indices of the model as it is, kept in step with pending_steps). */
  struct lens_fstep *fsteps; size_t n_fsteps;
  struct lens_frun *fruns;
  struct lens_fev *fevs;
};

/* A stop or state record waiting for its event (applied per file in file order). */
struct lens_pending {
  uint64_t id, ts, arg;
  uint32_t session, state, has_args, kind; /* kind: LENS_REC_STOP or LENS_REC_STATE */
  uint64_t last_ts;  /* a run (lens_rec_state_run): its last record's ts */
  uint32_t repeats;  /* ... and how many records it folds (0: a plain record) */
  uint32_t max_gap_ns;
};
struct lens_state_tmp { int32_t event; struct lens_state_ev s; };

/* Per-file session bookkeeping while loading. */
struct lens_sess { uint32_t number; int has_session, has_drops; struct lens_session s; struct lens_drops drops; };

/* Everything the loader carries between passes. */
struct lens_builder {
  struct lens_model *m;
  struct lens_reader_priv *priv;
  size_t cap_files, cap_procs, cap_comms, cap_threads, cap_events, cap_notes, cap_cupti, cap_sched,
      cap_sched_hist, cap_clocks;
  struct lens_state_tmp *states; size_t n_states, cap_states;
  struct lens_pending *pend; size_t n_pend, cap_pend; /* of the current chunk (lens_apply_chunk) */
  /* Records of the current file whose START was not read when their chunk
   * was, applied at its end in order; carried: their (session, id). */
  struct lens_pending *carry; size_t n_carry, cap_carry;
  struct lens_idseq carried;
  struct lens_sess *sess; size_t n_sess, cap_sess; /* of the current file */
  struct lens_hash strings; /* (file, session, str id) -> const char* */
  struct lens_hash comms;   /* (proc, session, context) -> comm index */
  struct lens_hash threads; /* (proc, session, slot) -> latest thread index of that slot */
  /* Parallel to m->threads. A slot is recycled when its thread exits and
   * another claims it: each owner gets its own entry, chained by prev, and
   * an EVENTS chunk goes to the entry whose THREAD chunk came last before it. */
  struct lens_thread_tmp { uint32_t session; uint32_t from_chunk; int32_t prev; } *thread_tmp;
  size_t cap_thread_tmp;
  uint32_t chunk;           /* index of the chunk being read in the current file */
  int32_t file, proc;       /* current file; its proc or -1 (probe files) */
  char *err; size_t err_len;
  struct lens_unpacker unpacker; /* packed.c's buffers and zstd context */
  uint32_t flags;           /* LENS_LOAD_* */
  uint64_t bytes_left;      /* the sizes of the files still to read after this one (load.c's presize) */
  /* The current chunk's STARTs, entered into the id table at the end of
   * the chunk, in order (the latest START of an id wins). */
  struct lens_idq { uint64_t id; int64_t value; uint32_t session, reserved; } *idq;
  size_t n_idq, cap_idq;
  /* LENS_LOAD_FOLD_STEPS: the ProxySteps read, folded into their ProxyOp
   * once every file is read; the id table maps a step's id to
   * LENS_STEP_VALUE(index). */
  struct lens_fstep {
    uint64_t parent_raw, stop;
    uint64_t start;        /* its START's time */
    /* What its event would have held, as far as the readers of a folded
     * model ask (lens_folded_op, lens_thread.folded_*): its bytes (the arg
     * of its last state 9 or 11 with args), thread, step number, LENS_EVF_*
     * flags (those of its records while reading, LENS_EVF_STOPPED_PRIV once
     * stopped; resolve.c adds the rest), and while it has not stopped its
     * last state entries (run: an index into fruns, -1 none). */
    uint64_t bytes;
    int64_t parent;        /* resolve.c: its parent in the id table (an event, LENS_STEP_VALUE, -1 missing) */
    struct lens_step_bounds bounds; /* its phases' boundaries (step_phases.h) */
    int32_t proc;
    uint32_t session;
    int32_t ev;            /* step LENS_ONEWAY_STEP only: its one-way evidence in fevs; -1 other steps */
    int32_t thread, step;
    uint32_t flags;
    int32_t run;
    int32_t comm;          /* its context's communicator (-1); resolve.c: else its nearest ancestor event's */
    uint64_t last;         /* the latest time it reached: start, stop, states' records */
  } *fsteps;
  size_t n_fsteps, cap_fsteps, cap_folded_ops; /* cap_folded_ops: of m->folded_ops */
  /* LENS_LOAD_STEP_FACTS only, one per fstep (the others' loads do not pay
   * for it): the arg of its earliest record of state 9 and of state 11
   * (arg_have bit 0, 1: that record had args), and the events before it in
   * (proc, start, creation) order: while reading, the events built before
   * it; resolve.c: the events it sorts after. Gone once model->step_facts
   * holds them. */
  struct lens_fstep_more {
    uint64_t arg9, arg11;
    uint32_t events_before, arg_have;
  } *fmore;
  size_t cap_fmore;
  /* A folded step's last state entries as the loader keeps an event's
   * (apply_one, fold_run: a run record merges into the entry before it when
   * its state, arg and has_args are the same): the last entry's state, arg,
   * has_args, records, first and last record; the run of its state at the
   * end: its first record and the records of its earlier entries. Only
   * steps not stopped hold one (a stopped step is nobody's wait): a slot
   * goes back to the free list at the step's stop. */
  struct lens_frun {
    uint32_t state, has_args, count;
    uint32_t next_free;    /* on the free list: 1 + the next free slot, 0 none */
    uint64_t arg, ts, last, since, before;
  } *fruns;
  size_t n_fruns, cap_fruns;
  uint32_t frun_free;      /* 1 + the first free slot of fruns, 0 none */
  struct lens_fev { uint64_t pre, post; } *fevs; /* (oneway.h): one per step LENS_ONEWAY_STEP, not per step */
  size_t n_fevs, cap_fevs;
  /* lens_model_load_window (window.c): what this read of the files is for,
   * the window's state, which of its files is being read, and that file's
   * START and STOP/STATE records so far (the numbers its decisions use). */
  uint32_t win_mode;        /* LENS_WIN_* */
  struct lens_win *win;
  size_t win_file;
  uint64_t win_starts, win_pends;
};
/* A read of the files by lens_model_load_window: none (a plain load); the
 * scan, for each host's origin and each file's columns (its STARTs and
 * STOP/STATE records), from which it decides which STARTs to build and
 * which STOP/STATE records to drop; the load. */
enum { LENS_WIN_OFF = 0, LENS_WIN_SCAN, LENS_WIN_BUILD };
struct lens_win;
/* window.c's hooks into records.c and load.c. A START (its type checked)
 * of the chunk of thread (the model's index, as the load finds it): 1 build
 * it, 0 not (or a scan took it), -1 out of memory. A STOP or STATE record
 * (a STATE's state, arg and has_args; 0 for a STOP): 1 keep it, 0 not, -1
 * out of memory. */
int lens_win_start(struct lens_builder *b, uint32_t session, int32_t thread, const struct lens_rec_start *s,
                   const uint8_t *payload, size_t payload_len);
int lens_win_pend(struct lens_builder *b, uint32_t session, uint32_t kind, uint64_t id, uint64_t ts, uint32_t state,
                  uint64_t arg, uint32_t has_args);
/* The bytes of the window's file b->win_file (read on the scan and kept,
 * so the scan and the load see the same bytes); on the load they
 * pass to the caller. 0, or -1 with err set. */
int lens_win_bytes(struct lens_builder *b, const char *path, uint8_t **addr, size_t *size);
/* 1 when these are the bytes the window's plan walked (its index read) and
 * found whole: every chunk payload's CRC already checked on them, the same
 * chunks a walk of them finds. */
int lens_win_payloads_checked(const struct lens_builder *b, const uint8_t *base, size_t size);
/* End of a chunk of the scanned file (where the loader applies its records). 0 or -1. */
int lens_win_chunk_end(struct lens_builder *b);
/* End of a scanned file: its origin evidence noted, its columns resolved. 0 or -1. */
int lens_win_end_file(struct lens_builder *b);
/* The scan read EVENTS_PACKED chunk b->chunk: its STARTs and STOP/STATE
 * records are those numbered from starts0 and pends0 to the file's counts
 * now; bad, what the load would count bad in it (lens_build_packed_chunk's
 * count); opened, whether the load would find its thread. 0 or -1. */
int lens_win_chunk_scanned(struct lens_builder *b, uint64_t starts0, uint64_t pends0, uint64_t bad, int opened);
/* The load: 1 when the decisions keep nothing of EVENTS_PACKED chunk
 * b->chunk (no START built, every STOP/STATE record dropped), its records
 * counted as read (win_starts, win_pends), *bad and *opened the scan's;
 * else 0 and the chunk is read. */
int lens_win_chunk_skip(struct lens_builder *b, uint64_t *bad, int *opened);
/* Every events chunk of a window's scan and load, before it is read: 1
 * when the window's plan leaves it out (never decoded but, on the scan, for
 * the GPU table's records of a light one; its thread found as a read finds
 * it), 0 read it, -1 out of memory (window.c). */
int lens_win_chunk_unread(struct lens_builder *b, const struct lens_chunk_hdr *h, const uint8_t *payload,
                          uint32_t len, uint64_t offset);
/* load.c: lens_model_load_ex with a window's read (win_mode; win NULL for
 * LENS_WIN_OFF). A scan returns a model of the files' tables only (no
 * event built, nothing resolved). */
struct lens_model *lens_load_files(const char *const *paths, size_t n_paths, uint32_t flags, struct lens_win *win,
                                   uint32_t win_mode, char *err, size_t err_len,
                                   void (*progress)(uint64_t done, uint64_t total));
/* A folded step's entry in the id table: below -1, so never an event index
 * (and turned to -1, "not found", once folded). */
#define LENS_STEP_VALUE(i) (-2 - (int64_t)(i))
#define LENS_STEP_INDEX(v) ((size_t)(-2 - (v)))

/* A validated chunk inside a mapped file. */
struct lens_chunk_view { const struct lens_chunk_hdr *h; const uint8_t *payload; uint32_t len; };

/* chunks.c: pass A (everything but EVENTS). 0, or -1 with err set (out of memory). */
int lens_read_meta_chunk(struct lens_builder *b, const struct lens_chunk_hdr *h, const uint8_t *p, uint32_t len);
struct lens_sess *lens_builder_session(struct lens_builder *b, uint32_t number);
/* New thread entry for (session, slot) current from chunk b->chunk on; prev
 * is the slot's previous entry or -1. Index, or -1 (out of memory). */
int32_t lens_builder_new_thread(struct lens_builder *b, uint32_t session, uint32_t slot, int32_t prev);
/* records.c: pass B. */
int lens_read_events_chunk(struct lens_builder *b, const struct lens_chunk_hdr *h, const uint8_t *p, uint32_t len);
/* The current chunk's STARTs into the id table and its STOP/STATE records
 * applied (those whose START is still to come carried). 0, or -1 (out of memory). */
int lens_apply_chunk(struct lens_builder *b);
/* End of a file: the last records, the carried ones (or orphans), its sessions and drops. */
int lens_apply_pending(struct lens_builder *b);
/* The current file's queued STARTs into its id table. 0, or -1 (out of memory). */
int lens_enter_ids(struct lens_builder *b);
/* packed.c: EVENTS_PACKED, decoded to fixed records and read as EVENTS. */
int lens_read_packed_chunk(struct lens_builder *b, const struct lens_chunk_hdr *h, const uint8_t *p, uint32_t len);
/* A window's scan of an EVENTS_PACKED chunk: its records' fields straight
 * to lens_win_start/lens_win_pend, as lens_read_packed_chunk would give them. */
int lens_scan_packed_chunk(struct lens_builder *b, const struct lens_chunk_hdr *h, const uint8_t *p, uint32_t len);
/* One fixed record of an EVENTS chunk (size: at least a header, a multiple
 * of 8), as lens_read_events_chunk reads it. 0 or -1. */
int lens_read_record(struct lens_builder *b, uint32_t session, int32_t thread, const uint8_t *r, uint32_t size);
/* The same for a record the window's hooks already said to build or keep. */
int lens_build_record(struct lens_builder *b, uint32_t session, int32_t thread, const uint8_t *r, uint32_t size);
/* The thread an EVENTS chunk of (session, slot) belongs to (a placeholder
 * made if no THREAD chunk names it), as lens_read_events_chunk finds it; -1
 * out of memory. */
int32_t lens_chunk_thread(struct lens_builder *b, uint32_t session, uint32_t slot);
/* A window's load of an EVENTS_PACKED chunk: the model lens_read_packed_chunk
 * makes of it, with only the records it builds or keeps written out. */
int lens_build_packed_chunk(struct lens_builder *b, const struct lens_chunk_hdr *h, const uint8_t *p, uint32_t len);
void lens_packed_release(struct lens_builder *b);
/* same_trace.c: which inputs to read. keep gets the indexes of the inputs to
 * read, in order; dups (room for n) the others. 0, or -1 (out of memory). */
int lens_same_trace_select(const char *const *paths, size_t n, size_t *keep, size_t *n_keep,
                           struct lens_same_trace *dups, size_t *n_dups);
/* resolve.c: joins after every file is read. */
int lens_resolve_model(struct lens_builder *b);

int lens_builder_oom(struct lens_builder *b);

/* The id table of proc (NULL when out of range). */
static inline struct lens_idseq *lens_proc_events(const struct lens_reader_priv *pv, int32_t proc) {
  return proc >= 0 && (size_t)proc < pv->n_events_hash ? &pv->events[proc] : NULL;
}

#endif
