/* `nccl-lens report --html`: one page that opens offline in any browser.
 * It embeds the `report --json` document (report_json.h), the plotting
 * library d3 read from Debian's libjs-d3 when the page is written, and the
 * page's own script and style (tools/report/assets/, compiled in). The page
 * draws every plot from the embedded JSON; a Content-Security-Policy forbids
 * every request, and after drawing it writes what it drew into
 * <pre id="lens-check"> (JSON) for tests (docs/report.md). */
#ifndef NCCL_LENS_REPORT_HTML_H
#define NCCL_LENS_REPORT_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "report/report_model.h"

/* Where Debian's libjs-d3 puts the minified library (overridable at build time). */
#ifndef LENS_D3_PATH
#define LENS_D3_PATH "/usr/share/javascript/d3/d3.min.js"
#endif
#define LENS_D3_MAX_BYTES (4u << 20) /* d3 v3 is 240 KB minified: anything past this is not it */

/* Reads d3 into *buf (malloc'd, *len bytes). 0, or 1 after one error line
 * "nccl-lens CMD: --html needs d3 ..." (not installed, unreadable, or not a
 * script that can sit inside a <script> element). */
int lens_report_html_library(const char *cmd, char **buf, size_t *len);
/* Writes the page; 0, or -1 when out of memory. */
int lens_report_print_html(FILE *f, const struct lens_model *m, const struct lens_report *r, const char *d3,
                           size_t d3_len);

/* The page's own script and style (generated from tools/report/assets/ at build time). */
extern const char lens_report_asset_js[], lens_report_asset_css[];

#endif
