/* The merged job timeline (`nccl-lens export --format job`, docs/timeline.md):
 * the traces of every host on one job time base (tools/analysis/job/job_align.h),
 * as Chrome Trace Event JSON for Perfetto.
 *
 * Layout: one process per host ("host NAME: ranks ..."), and per rank its
 * tracks: each recording thread's host calls (API, group, launch, enqueue),
 * "GPU" (each collective instance's kernel span, from the job view), and
 * "proxy" (ProxyOps). Only complete events, placed on lanes (lanes.h) so that
 * events on any one track nest. A flow ties the ranks' GPU slices of each
 * instance together (in the order of their midpoints); the instance's last
 * rank (the one the others waited for) is named in its slice and args.
 *
 * Times: ts = (job time - origin) in us, origin = the earliest aligned event,
 * floored to a millisecond; otherData says the job time base, the origin, and
 * each host's offset, drift and bound; each slice's args carry its
 * MONOTONIC time and its alignment bound. Hosts that could not be placed are
 * left out (counted). Selection by communicator, rank set and job-time
 * window keeps a 1,000-rank run within what a JSON viewer opens.
 *
 * --format perfetto writes the same tracks and slices as Perfetto's own
 * protobuf (TracePacket / TrackDescriptor / TrackEvent, the subset declared
 * in tools/export/perfetto_subset.proto), packet by packet: SLICE_BEGIN and
 * SLICE_END at job-time ns, flows as flow_ids / terminating_flow_ids. */
#ifndef NCCL_LENS_EXPORT_JOB_EXPORT_H
#define NCCL_LENS_EXPORT_JOB_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/job/job.h"
#include "analysis/job/job_align.h"

struct lens_job_export_opts {
  int have_comm;
  uint64_t comm_id;         /* --comm: only this communicator's events and instances */
  const uint8_t *ranks;     /* --ranks: ranks[r] != 0 selected (NULL: all) */
  size_t n_ranks;
  int have_since, have_until;
  int64_t since_ns, until_ns; /* --since/--until: ns after the origin (job time) */
  int perfetto;             /* --format perfetto: Perfetto's protobuf (perfetto_subset.proto), streamed */
  int force;                /* --force: the JSON written however big (else over the limit: not written) */
  /* A window drawn from the timeline memo (export_memo.h): each GPU slice's
   * times per row of j->ranks, from the whole reading (its group's events
   * are not all read). NULL: from the group's model. */
  const struct lens_job_row_time *row_times;
};

struct lens_job_export_counts {
  size_t slices, flows, instances_flowed, last_marked;
  size_t lanes_extra;       /* lanes opened beyond the first on some track (overlapping work) */
  size_t crowded;           /* slices that could not be given a nesting lane (LENS_LANES_MAX) */
  size_t procs_unaligned;   /* processes left out: their host could not be placed */
  int64_t origin_job_ns;
  int64_t end_ns;           /* the latest slice end drawn (ns after the origin), 0 none */
};

/* The document is written host group by host group (tools/cli/passes.h,
 * export_job.c): the job view and alignment come first (the job's map and
 * reduce); then each group's model, read again, gives its tracks and slices
 * (calls and ProxyOps from its events, GPU spans from the job view's rows of
 * its processes), into a spool file; then the head (the hosts), the groups
 * in input order, and the tail (flows through each instance's ranks,
 * otherData) are put together. Each group's tracks take the numbers from
 * track_base, so tids (and Perfetto's track uuids) are unique in the
 * document; Perfetto packets of a group are a sequence of their own (seq_id),
 * each in time order. Flows in Perfetto: every GPU slice of an instance
 * carries its flow id (the viewer joins them in time order). */

struct lens_job_host_rank { int32_t host, rank; };
/* A rank row's GPU slice on its host's MONOTONIC: its mapped kernel span,
 * else its Coll/P2p's start and completion; a UINT64_MAX: not drawn (its
 * event is not in its group). */
struct lens_job_row_time { uint64_t a, b; };
struct lens_job_gpu_slice { int32_t inst; int64_t mid; int32_t proc; uint32_t tid; };

struct lens_job_export_part {
  char spool[32];                                    /* "": not spooled, its bytes counted only */
  uint64_t bytes;                                    /* what its drawing wrote */
  struct lens_job_export_counts counts;              /* slices, lanes, last ranks of the group */
  struct lens_job_host_rank *host_ranks; size_t n_host_ranks; /* its slices' (host, rank), repeats once */
  struct lens_job_gpu_slice *gpu; size_t n_gpu;      /* its GPU slices, for the flows */
};
void lens_job_export_part_free(struct lens_job_export_part *p);

/* Per skeleton process: its trace was written by the plugin (plugin), and
 * it has a rank in --comm's communicator (in_comm; every process without
 * --comm). */
void lens_job_export_proc_facts(const struct lens_model *skel, const struct lens_job_export_opts *o, uint8_t *plugin,
                                uint8_t *in_comm);
/* Which processes are drawn (sel, per process: placed on the job time base
 * and in_comm) and the origin (c->origin_job_ns: the earliest aligned start
 * of a drawn process, min_start per proc on its MONOTONIC, UINT64_MAX none,
 * floored to a millisecond); counts the plugin's processes left out. 0. */
int lens_job_export_select(size_t n_procs, const uint8_t *plugin, const uint8_t *in_comm, const struct lens_align *a,
                           const uint64_t *min_start, uint8_t *sel, struct lens_job_export_counts *c);
/* Whether rank row r has its mapped kernel span (its GPU slice's times). */
int lens_job_rank_kernel_timed(const struct lens_job_rank *r);
/* Rank row r's GPU slice, its event in m (the group's model, as the job
 * map read it): lens_job_row_time. */
struct lens_job_row_time lens_job_export_row_time(const struct lens_model *m, const struct lens_job_rank *r);
/* One group: m, whose procs are pbase.. in the job's numbering. 0 / -1. */
int lens_job_export_group(FILE *out, const struct lens_model *m, size_t pbase, uint32_t track_base, uint64_t seq_id,
                          const struct lens_job *j, const struct lens_align *a, const struct lens_job_export_opts *o,
                          const uint8_t *sel, int64_t origin, struct lens_job_export_part *part);
/* The document's start: JSON's opening and the hosts' processes, or
 * Perfetto's first packets. 1 when no record was written (the first group
 * record then goes without its leading comma), 0, or -1 on an error. */
int lens_job_export_head(FILE *f, const struct lens_model *skel, const struct lens_job *j, const struct lens_align *a,
                         const struct lens_job_export_opts *o, struct lens_job_export_part *const *parts,
                         size_t n_parts, struct lens_job_export_counts *c);
/* Its end: the flows (JSON), otherData with c's counts (first: nothing
 * written before). 0 / -1. */
int lens_job_export_tail(FILE *f, const struct lens_model *skel, const struct lens_job *j, const struct lens_align *a,
                         const struct lens_job_export_opts *o, struct lens_job_export_part *const *parts,
                         size_t n_parts, int first, struct lens_job_export_counts *c);

#endif
