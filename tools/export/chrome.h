/* Chrome Trace Event JSON (Perfetto, chrome://tracing) from a loaded model.
 *
 * Layout: one process per traced OS process, named after its ranks and host
 * ("ranks 0,1 of 4 (world) · nodeA pid 4242"); tracks named after their
 * rank(s) and role:
 *   - a track per thread ("r0 app · ncclMain (tid 12)") with its host spans
 *     (API, Group, KernelLaunch, CE, ProxyCtrl and its states, KernelPhase)
 *     as complete "X" events;
 *   - "r0 GPU ch 3 · comm world (proxy tid 13)": KernelCh per proxy thread,
 *     communicator and channel (mapped GPU time when known);
 *   - "r0 proxy state (tid 13)": the proxy thread's Active/Idle levels with
 *     Sleep and Append windows (proxy_levels.h);
 *   - "r0 sched: ...": probe starvation intervals of a proxy thread.
 * Complete events on one track must nest; work that really overlaps (a
 * grouped Send and Recv, a p2p pair sharing GPU timers) goes to further
 * lanes of its track ("... · lane 2", lanes.h) instead of being clipped.
 * Operations in flight (Coll/P2p start -> completion, their enqueue nested
 * inside), ProxyOp, ProxyStep (its state phases nested inside it, same id)
 * and NetPlugin are async "b"/"e" pairs with process-scoped ids (id2.local),
 * named with their rank, written in nesting order.
 * Tracks with nothing on them are not declared.
 *
 * Ids: a real pid or tid is written only when it is unambiguous in the whole
 * document (no other process or thread of any host has it); everything else
 * (processes, lanes, synthetic tracks, duplicates) gets an id from
 * LENS_CHROME_SYNTH_ID up, above the kernel's PID_MAX_LIMIT, so it can never
 * equal a real one. */
#ifndef NCCL_LENS_EXPORT_CHROME_H
#define NCCL_LENS_EXPORT_CHROME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "reader/lensread.h"

/* Linux's PID_MAX_LIMIT (4 * 1024 * 1024 on 64-bit): pid_max cannot be set
 * higher, so every real pid and tid is below it. */
#define LENS_CHROME_SYNTH_ID 4194304u

/* Event-type selection: bit (1 << LENS_T_*) per event type, plus these. */
#define LENS_CHROME_SCHED (1u << 16)  /* probe starvation intervals */
#define LENS_CHROME_ALL_TYPES 0x1FFFFu

struct lens_chrome_opts {
  uint32_t types; /* 0: everything; else LENS_CHROME_* / 1 << LENS_T_* bits */
};

struct lens_chrome_counts {
  size_t complete;    /* "X" events, all tracks */
  size_t async_pairs; /* "b"/"e" pairs */
  size_t metadata;    /* "M" events */
  size_t ops;         /* Coll/P2p in-flight spans (one per Coll/P2p) */
  size_t gpu_slices;  /* KernelCh slices */
  size_t gpu_overlaps; /* of those, on a lane past the first (started before the previous one ended) */
  size_t ctrl_states; /* ProxyCtrl state slices */
  size_t starvation;  /* probe intervals */
  size_t proxy_levels; /* Active/Idle/Sleep/Append intervals of proxy threads */
  size_t tracks;      /* declared thread tracks (lanes included) */
  size_t lanes_extra; /* of those, lanes past the first of their track */
  size_t crowded;     /* slices put on a track's last lane although they do not nest there */
};

/* Parses a --types list ("coll,p2p,kernelch", "all", type names as in
 * NCCL_LENS_EVENT_MASK, plus "sched"): 0, or -1 on an unknown name. */
int lens_chrome_parse_types(const char *s, uint32_t *types);
/* The --types name of event type i (LENS_T_*), 16: "sched"; NULL if none. */
const char *lens_chrome_type_name(int i);
/* The valid --types names, comma separated (for error messages and help). */
const char *lens_chrome_type_names(void);

/* One host group's part of the document (export reads a job group by group,
 * tools/cli/passes.h): its processes' and tracks' metadata, slices and async
 * records, written to out as lines "KEY JSON", one per item (what must stay
 * in one file: a slice, an operation's async records, a step with its
 * phases, a metadata record), KEY its start in ns (the host's
 * CLOCK_MONOTONIC) or "M" for metadata. Ids of processes and synthetic tracks
 * are id_base.. below id_end, so groups given disjoint ranges never share
 * one. A thread keeps its real tid when it is unambiguous (lens_chrome_real_tids)
 * in the group (real_ok NULL) or, given real_ok (per thread of m), where that
 * allows it; part->real says which threads kept theirs (malloc'd: the caller
 * frees it), so that a caller who judges over the whole document can
 * rewrite the ones it finds ambiguous (each record holds its tid once, as
 * "tid":N, a pattern no escaped string can hold) to ids from part->id_next. 0; -1 on a
 * write or allocation error; -2 when the group needs more ids than its range. */
struct lens_chrome_part {
  char spool[32];                 /* export: its spool file */
  uint64_t json_bytes, items, items_timed; /* items with a time (not metadata): their JSON bytes */
  uint64_t meta_bytes, meta_items;
  uint64_t type_bytes[17];        /* bytes (separator included) per event type, [16]: probe samples */
  uint64_t ts_min, ts_max;        /* over items with a time */
  struct lens_chrome_counts counts;
  size_t ce_colls;                /* copy-engine collectives (counted apart in export's line) */
  uint8_t *real; size_t n_threads; /* per thread: written with its real tid */
  uint32_t id_next, id_end;       /* the first id of its range it left unused; the range's end */
};
/* Per thread of m, its tid where no other thread and no other process of m
 * has that number (hosts and containers reuse pids and tids), else 0
 * (real_tid: n_threads entries, zeroed). 0, or -1 out of memory. */
int lens_chrome_real_tids(const struct lens_model *m, uint32_t *real_tid);
int lens_chrome_group(FILE *out, const struct lens_model *m, const struct lens_chrome_opts *opts, uint32_t id_base,
                      uint32_t id_end, const uint8_t *real_ok, struct lens_chrome_part *part);
/* The document around the items: its head, and its end with otherData from
 * m (files, drops, totals: export gives the skeleton), extra (may be NULL)
 * inserted as members ("\"k\":v,") before "files". */
void lens_chrome_write_head(FILE *f);
void lens_chrome_write_other(FILE *f, const struct lens_model *m, const char *extra);
/* Copies the items of a group's lines to f, each after "\n" (the first of
 * the document, *first) or ",\n". 0, or -1 on a read error. */
int lens_chrome_copy_items(FILE *f, FILE *in, int *first);

/* Writes the whole JSON document of one model (one group). opts may be NULL
 * (everything). 0, or -1 on a write error. */
int lens_export_chrome_sel(FILE *f, const struct lens_model *m, const struct lens_chrome_opts *opts,
                           struct lens_chrome_counts *counts);
int lens_export_chrome(FILE *f, const struct lens_model *m, struct lens_chrome_counts *counts);

#endif
