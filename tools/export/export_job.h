/* `nccl-lens export --format job|perfetto` read host group by host group
 * (export_job.c, job_export.h). */
#ifndef NCCL_LENS_EXPORT_EXPORT_JOB_H
#define NCCL_LENS_EXPORT_EXPORT_JOB_H

#include "cli/trace_args.h"
#include "export/job_export.h"

/* Writes the merged job timeline of c's traces to c's output, o's selection
 * applied on job time (its --comm resolved here). 0, 1 after an error line,
 * 2 after a usage error. threads: 0 the cores. */
int lens_job_export_run(struct lens_trace_cli *c, struct lens_job_export_opts *o, long threads);

#endif
