/* A time window's plan from a trace's INDEX chunks (trace_index.h,
 * docs/trace-format.md "The index"): which events chunks of one file a
 * window [since, until) must decode to see every record of every event it
 * needs, and of their ancestors, without decoding the others.
 *
 * Seeds: the chunks whose time range meets the window; every chunk an
 * INDEX does not describe; the START chunks of the events open at the last
 * open set taken at least 1 ms before the window (the TSC's conversion to
 * MONOTONIC may put a record drained just before a set a little after it)
 * and the chunks of STARTs drained after it that begin before the window
 * ends (none such set, or an incomplete one: every chunk of the session
 * beginning before the window ends); the chunks holding the event types the
 * caller needs whole (the GPU clock maps: every KernelCh) within a margin
 * of the window. Then, as each planned chunk is decoded (by the caller's
 * function), an event is wanted when it may be needed: it starts in the
 * window, it was open at the set, it started after the set and before the
 * window's end, it is of a needed type, a record of it lies in the window,
 * or it is the parent of a wanted event (of this process: a PXN ProxyOp's
 * parent is another's), or one of the caller's seeds. A wanted event brings
 * its START chunk and every chunk touching it (its STOP and its states).
 * With step_siblings, a wanted ProxyStep makes every ProxyStep of its
 * parent wanted (a re-posted step supersedes its twin: the reader's mark
 * needs both): the chunks of the step's thread over its parent's life (its
 * START to its first STOP; to the end of the file when it has none, or
 * every chunk of that thread when its parent's START is not found).
 *
 * lens-window-plan measures it on traces (its misses, chunks an exact plan
 * needs that this one leaves out, must be none: test_window_plan); the
 * window's loader (window.c, plan_files) reads only what it plans
 * (docs/scale.md, "Step 2 landed"). */
#ifndef NCCL_LENS_READER_WINDOW_PLAN_H
#define NCCL_LENS_READER_WINDOW_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "trace_index.h"

/* What the plan needs of one record. */
struct lens_wplan_rec {
  uint8_t kind, type; /* LENS_REC_*, enum lens_type */
  uint32_t flags;     /* a START's LENS_START_F_* */
  uint64_t id, ts;
  uint64_t parent;    /* a START's parent id, raw */
};

/* Gives the records of events chunk `chunk` (an index into ix->c), in file
 * order, valid until the next call: 0, or -1 (the chunk cannot be read: the
 * plan goes on without its records). */
typedef int (*lens_wplan_decode_fn)(void *ctx, size_t chunk, const struct lens_wplan_rec **recs, size_t *n);

/* An event wanted whatever the window (the file's earliest, a parent
 * another process asks for). */
struct lens_wplan_seed {
  uint32_t session;
  uint64_t id;
};

struct lens_wplan_opts {
  uint64_t since, until; /* CLOCK_MONOTONIC ns of the file's session, since < until */
  uint32_t need_types;   /* bit t: every event of type t within need_margin of the window is needed */
  uint64_t need_margin;  /* ns; UINT64_MAX: all of them (the GPU maps are whole-run fits) */
  const struct lens_wplan_seed *seeds;
  size_t n_seeds;
  int step_siblings;     /* a wanted ProxyStep wants its parent's every ProxyStep (above) */
  /* Called once for each wanted event once the plan is made (NULL: not
   * asked). A wanted event's records are all in the plan; another event
   * whose START the plan holds may miss its STOP. */
  void (*wanted)(void *ctx, uint32_t session, uint64_t id);
  void *wanted_ctx;
  /* 1-99: give up once the plan holds more than this share of the events chunks' bytes (a window that reads
   * most of the file is cheaper read whole than planned: the plan decodes what it plans); 0 never. */
  uint32_t give_up_pct;
};

struct lens_wplan_stats {
  size_t planned;   /* chunks in the plan */
  size_t decoded;   /* chunks decode was asked for (the planned ones) */
  int no_open_set;  /* no usable open set before the window: the session read up to the window's end */
  int gave_up;      /* past give_up_pct: every chunk planned */
};

/* Sets in[k] (ix->n bytes, zeroed by the caller) for every chunk the
 * window needs. 0; 1 gave up (give_up_pct) or -1 out of memory: in[] then
 * holds every chunk and the wanted events are not given. */
int lens_wplan_make(const struct lens_trace_index *ix, const struct lens_wplan_opts *o, lens_wplan_decode_fn decode,
                    void *ctx, uint8_t *in, struct lens_wplan_stats *st);

/* Where STARTs are, from the INDEX chunks alone: a (session, slot)'s
 * indexed chunks by their STARTs' sequence numbers. */
struct lens_start_groups {
  const struct lens_trace_index *ix;
  uint32_t *order;  /* chunk indices by (session, slot, start_lo) */
  uint64_t *hi_max; /* per order position: the highest start_hi of its group up to it */
  struct lens_start_group { uint32_t session, slot; size_t first, n; } *g;
  size_t ng;
};
/* 0, or -1 out of memory. */
int lens_start_groups_make(const struct lens_trace_index *ix, struct lens_start_groups *sg);
void lens_start_groups_free(struct lens_start_groups *sg);
/* The group of (session, slot), NULL none. */
const struct lens_start_group *lens_start_groups_group(const struct lens_start_groups *sg, uint32_t session,
                                                      uint32_t slot);
/* Calls fn(ctx, chunk) for each indexed chunk whose STARTs' range holds
 * (session, slot, seq) (a writer's ranges do not overlap: one at most). */
void lens_start_groups_find(const struct lens_start_groups *sg, uint32_t session, uint32_t slot, uint64_t seq,
                            void (*fn)(void *ctx, size_t chunk), void *ctx);

#endif
