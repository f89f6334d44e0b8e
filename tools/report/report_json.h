/* `nccl-lens report --json`: the verdict lines and exactly the numbers the
 * HTML report's plots draw (docs/report.md lists the keys). The HTML page
 * (report_html.c) embeds this same document and draws from it: one source. */
#ifndef NCCL_LENS_REPORT_JSON_H
#define NCCL_LENS_REPORT_JSON_H

#include <stdio.h>

#include "report/report_model.h"

/* Bounds that keep a 1,024-rank job's page within a few MB. */
#define LENS_REPORT_TIME_BINS 200     /* heatmap columns (time) */
#define LENS_REPORT_RANK_ROWS 1024    /* heatmap rows: ranks grouped beyond this */
#define LENS_REPORT_MATRIX_AXIS 256   /* network matrix: ranks grouped beyond this per axis */
#define LENS_REPORT_STRAGGLERS 50     /* stragglers listed */
#define LENS_REPORT_INSTANCES 10      /* instances listed per straggler */
#define LENS_REPORT_SLOW_LINKS 10     /* slowest connections listed */

/* Writes the document; 0, or -1 when out of memory (nothing useful written). */
int lens_report_print_json(FILE *f, const struct lens_model *m, const struct lens_report *r);

#endif
