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
};

struct lens_job_export_counts {
  size_t slices, flows, instances_flowed, last_marked;
  size_t lanes_extra;       /* lanes opened beyond the first on some track (overlapping work) */
  size_t crowded;           /* slices that could not be given a nesting lane (LENS_LANES_MAX) */
  size_t procs_unaligned;   /* processes left out: their host could not be placed */
  int64_t origin_job_ns;
};

/* Writes the document. 0, or -1 on a write or allocation error. */
int lens_export_job(FILE *f, const struct lens_model *m, const struct lens_job *j, const struct lens_align *a,
                    const struct lens_job_export_opts *o, struct lens_job_export_counts *c);

#endif
