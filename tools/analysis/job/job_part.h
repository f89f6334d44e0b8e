/* The job view as map and reduce (docs/scale.md).
 *
 * Map (job_match.c): one model -- the traces of one host, say -- becomes a
 * partial: one compact record per (collective instance, rank) with the
 * instance's match key, the rank's span and host-side stages, and its proxy
 * ops' step pace; plus the few process and communicator facts the report
 * prints. No event of the model is needed after that.
 * Reduce (job_reduce.c): any number of partials are merged, matched by key
 * and decomposed into the job view (lens_job); the causes, stragglers and
 * rows follow (job_causes.c). lens_job_build(model) is map + reduce of one
 * partial, so the single run and the map/reduce run share every line.
 * Partial files (job_part_io.c): a partial written to disk, versioned. */
#ifndef NCCL_LENS_JOB_PART_H
#define NCCL_LENS_JOB_PART_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "job.h"
#include "job_align.h"

/* One proxy op of a rank in an instance: its link, its pace (first to
 * last step completion over the steps; ops with fewer than 4 steps are left
 * out) and where its steps' time went: the blamed time of the three phases
 * of its direction (lens_net_op_split: the network view's split; send:
 * GPU wait, peer wait, wire; recv: data wait, flush, GPU wait), in us,
 * saturated. The job view names a slow link by the network view's rule
 * (lens_net_link_is_slow), which needs them. */
#define LENS_JOB_OP_SEND 0x1u  /* the sender's op (else the receiver's) */
#define LENS_JOB_OP_SPLIT 0x2u /* its steps' phases were recorded (else phase_us is 0: unknown) */
struct lens_job_op {
  int32_t snd, rcv;
  uint64_t dur;
  uint32_t phase_us[3];
  uint32_t flags;      /* LENS_JOB_OP_* */
  uint64_t bytes;      /* its steps' bytes (transSize), 0 unknown: with a send op's wire phase, its wire time
                        * per byte, the pace the slow-link rule judges (lens_net_own_ratios) */
};

/* One proxy op's one-way evidence (oneway.h), for the host alignment: the
 * reduce pairs a send op (a -> b, channel) with the recv op (a -> b,
 * channel) of the same instance. 24 bytes per op with a peer. */
struct lens_job_wop {
  uint64_t t;          /* host MONOTONIC ns: send: step LENS_ONEWAY_STEP provably not yet posted; recv: provably in */
  uint32_t rec;        /* its record (rank side of an instance) in the partial */
  int32_t peer;        /* the op's peer rank (the receiver of a send, the sender of a recv) */
  uint16_t channel;
  uint8_t is_send;
  uint8_t step;        /* the step the evidence is of (LENS_ONEWAY_STEP) */
  uint32_t reserved;
};

/* One rank's side of one instance. */
struct lens_job_prec {
  /* match key */
  uint64_t comm_id;
  int64_t seq;
  int32_t kind, func, a, b; /* kind 0 coll, 1 p2p; func id; p2p sender, receiver (-1 for collectives) */
  int32_t nranks;
  uint32_t iflags;          /* LENS_JOB_BY_ORDER | LENS_JOB_GRAPH | LENS_JOB_APPROX_RULE as this rank sees them */
  const char *func_s, *algo_s, *proto_s;
  uint64_t bytes;
  uint64_t first_op;        /* into the partial's ops */
  uint32_t n_ops, reserved;
  uint64_t user_tag;        /* v7 userProfilerTag of this rank's call, 0 = none */
  struct lens_job_rank r;   /* r.proc: index into the partial's procs; r.event: in its model (order only) */
};

struct lens_job_pproc { uint32_t pid, outer_pid; char host[64]; };
struct lens_job_pcomm { int32_t proc, rank, nranks, reserved; uint64_t comm_id; char name[128]; };

struct lens_job_part {
  char **files; size_t n_files;                 /* trace paths read (owned) */
  struct lens_job_pproc *procs; size_t n_procs;
  struct lens_job_pcomm *comms; size_t n_comms;
  struct lens_job_prec *recs; size_t n_recs;
  struct lens_job_op *ops; size_t n_ops;
  struct lens_job_wop *wops; size_t n_wops;     /* in record order */
  struct lens_align_proc_clock *clocks;         /* n_procs of them (the host alignment's evidence); NULL: none */
  int have_clock_map;
  /* Copy-engine collectives (v6 CeColl) of the traces: the job view cannot
   * match them (their events time the host's enqueue), it says they were
   * there. have_ce 0: a partial file written before section 11 (unknown). */
  uint64_t ce_count, ce_enqueue_ns;
  int have_ce;
  void *strings;                                /* storage of the strings of a partial read from a file */
  /* The records compressed (lens_job_part_pack): recs NULL, n_recs of them
   * in recs_z_len bytes; NULL when recs holds them. */
  void *recs_z; size_t recs_z_len;
};

/* Map: the partial of one model. Strings point into the model (keep it) --
 * or copy them with lens_job_part_own_strings before freeing it. 0 / -1. */
int lens_job_map(const struct lens_model *m, struct lens_job_part *p);
int lens_job_part_own_strings(struct lens_job_part *p);
/* A copy of s in p->strings (an importer filling a partial itself); NULL on no memory. */
const char *lens_job_part_intern(void **strings, const char *s);
void lens_job_part_free(struct lens_job_part *p);
/* Compresses p's records in place (recs -> recs_z, job_part_pack.c) while
 * the partial waits for the reduce, which reads them back partial by
 * partial. Lossless. 0 / -1 (out of memory: p unchanged). */
int lens_job_part_pack(struct lens_job_part *p);
/* The pass driver's map and free (tools/cli/passes.h) for a command that
 * reduces the job view beside its own passes: one group's model -> a
 * malloc'd partial (lens_job_map, its strings owned, its records packed: it
 * waits for the reduce beside every other group's). NULL only when out of
 * memory. ctx is not read. */
void *lens_job_pass_map(struct lens_model *m, void *ctx);
void lens_job_pass_free(void *part);
/* Moves the driver's n partials (lens_job_pass_map's, parts[0..n)) into one
 * array, side by side as lens_job_reduce_consume and lens_job_skeleton take
 * them; the driver's slots become NULL (a NULL slot: an empty partial).
 * NULL when out of memory, nothing moved. The caller frees each partial
 * (lens_job_part_free) and the array. */
struct lens_job_part *lens_job_pass_take(void **parts, size_t n);
/* p's n_recs records: recs, or recs_z decompressed into *scratch (grown,
 * *cap records; the caller frees it). NULL on no memory or a bad frame. */
const struct lens_job_prec *lens_job_part_recs(const struct lens_job_part *p, struct lens_job_prec **scratch,
                                               size_t *cap);

/* Reduce: the job view of the partials (which must outlive j: it points at
 * their strings). Proc indexes in j are global: partial k's procs follow
 * those of partials 0..k-1. 0 / -1 (out of memory). */
int lens_job_reduce(const struct lens_job_part *parts, size_t n, struct lens_job *j, uint64_t min_wait_ns);
/* A packed partial (lens_job_part_pack) is read as it is. The same, freeing
 * each partial's records (and one-way evidence) once they are rows of j
 * (recs, recs_z and wops NULL, n_recs and n_wops 0 after; procs, comms,
 * ops, clocks and strings stay): the records and the rows are not all alive
 * at once (docs/scale.md, 2 GB). */
int lens_job_reduce_consume(struct lens_job_part *parts, size_t n, struct lens_job *j, uint64_t min_wait_ns);

/* A model holding only what the job report prints (files, procs, comms) of
 * the partials, procs numbered as in lens_job_reduce. Free with
 * lens_job_skeleton_free. NULL on no memory. */
struct lens_model *lens_job_skeleton(const struct lens_job_part *parts, size_t n);
void lens_job_skeleton_free(struct lens_model *m);
/* The partials' process clocks, procs numbered as in lens_job_reduce (a
 * partial without them: its processes' hosts by name, no clock), for
 * lens_align_build_ends. malloc'd (*n_procs of them), NULL on no memory. */
struct lens_align_proc_clock *lens_job_parts_clocks(const struct lens_job_part *parts, size_t n, size_t *n_procs);

/* Partial files. "NCCLJOBP" magic; see job_part_io.c for the layout. */
#define LENS_JOB_PART_MAGIC "NCCLJOBP"
#define LENS_JOB_PART_VERSION 2u /* 2: sections zstd-compressed; 1 still read */
int lens_job_part_write(FILE *f, const struct lens_job_part *p);
/* 1 if the file starts with the partial magic, 0 if not, -1 unreadable. */
int lens_job_part_is(const char *path);

/* Times a partial holds are at most LENS_TIME_MAX_NS (lens_checked.h: past
 * any clock reading, and their sums and differences fit int64), its clock
 * drifts finite and at most LENS_JOB_PART_DRIFT_MAX_PPM. The map clears what
 * a trace had past them (a time 0 is unknown, a clock without samples);
 * the partial reader refuses a file that holds such a value. Clear: how many
 * were cleared. */
#define LENS_JOB_PART_DRIFT_MAX_PPM 1e17
int lens_job_rank_times_ok(const struct lens_job_rank *r);
int lens_job_rank_clear_bad_times(struct lens_job_rank *r);
int lens_job_clock_ok(const struct lens_align_proc_clock *c);
int lens_job_clock_clear_bad(struct lens_align_proc_clock *c);
int lens_job_part_read(const char *path, struct lens_job_part *p, char *err, size_t err_len);

#endif
