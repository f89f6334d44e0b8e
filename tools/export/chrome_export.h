/* `nccl-lens export --format chrome` on the pass driver (tools/cli/passes.h):
 * every host group's part of the document (chrome.h, lens_chrome_group) is
 * written to a spool file as its map runs, on any number of threads; the
 * parts are then copied into the output in input order, so the file is the
 * same on 1 thread or 16, and memory holds one group's model per thread.
 *
 * Why spool files and not each group's JSON text kept in memory: groups end
 * out of input order, and nothing can be written before every group ahead of
 * it is, so text kept in memory would be the whole document at worst.
 *
 * Size: a Chrome JSON file over about 1 GB is one the Perfetto UI cannot
 * open (the browser's string and heap limits). The spool files give its
 * exact size before anything is written: over the limit (default
 * 1,000,000,000 bytes; NCCL_LENS_EXPORT_MAX_BYTES sets another, for tests),
 * nothing is written and export exits 4 with the size, the --types that
 * would fit and the other ways out; --force writes it anyway, --split cuts it
 * into OUT.1.json, OUT.2.json ... by time window, each under the limit, each
 * a whole document (every process and track declared in each), every event
 * in exactly one. */
#ifndef NCCL_LENS_EXPORT_CHROME_EXPORT_H
#define NCCL_LENS_EXPORT_CHROME_EXPORT_H

#include <stdint.h>

#include "cli/trace_args.h"
#include "export/chrome.h"

#define LENS_EXPORT_MAX_BYTES_DEFAULT 1000000000ull
#define LENS_EXPORT_TOO_BIG 4 /* exit status: the file would be too big to open, not written */

/* The largest JSON document written without --force: NCCL_LENS_EXPORT_MAX_BYTES, else the default. */
uint64_t lens_export_max_bytes(void);
/* A size as the refusals say it: "2.93 GB", "57.9 MB", "1.7 kB", "12 bytes". */
const char *lens_export_size_text(uint64_t b, char *buf, size_t len);

struct lens_chrome_export_opts {
  struct lens_chrome_opts chrome;
  int force, split;
  long threads;             /* 0: the cores */
};

/* Runs the export: 0, 1 after an error line, 2 after a usage error,
 * LENS_EXPORT_TOO_BIG after saying so. */
int lens_chrome_export(struct lens_trace_cli *c, const struct lens_chrome_export_opts *o);

#endif
