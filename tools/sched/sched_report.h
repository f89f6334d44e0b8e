/* What `nccl-lens sched` prints at exit: the starvation summary of the trace
 * it just wrote, read back through the reader like any other tool would. */
#ifndef NCCL_LENS_SCHED_REPORT_H
#define NCCL_LENS_SCHED_REPORT_H

#include <stdio.h>

/* 0, or -1 (one line on stderr) when the trace cannot be read back. */
int lens_sched_print_report(FILE *f, const char *trace_path);

#endif
