/* The report's "What was recorded" section (docs/report.md): the files, the
 * processes and the communicator inits of the run.
 *
 * A job whose processes fit one capped table (LENS_FMT_LIST_ROWS, or --all)
 * keeps a row per process; past that the rows would be a thousand alike, so
 * the section says what the processes share, counted per value (the most
 * common few values, then how many others), and lists only the processes
 * that differ from the others in something that matters (no clean end, a
 * cut file, drops, another session count, API version or event mask), those
 * that differ most first, capped. Communicator inits follow the same rule:
 * a row per init when they fit, else a row per communicator with its inits
 * counted and the ranks missing as a range list. */
#ifndef NCCL_LENS_REPORT_RECORDED_H
#define NCCL_LENS_REPORT_RECORDED_H

#include <stdio.h>

#include "report/report_model.h"

void lens_report_print_recorded(FILE *f, const struct lens_model *m, const struct lens_report *r);

#endif
