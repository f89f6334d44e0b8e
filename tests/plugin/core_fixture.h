/* Test fixture for unit tests of the core: rings mapped, a trace file in a
 * temp dir, no writer thread (tests drain with lens_writer_drain_once), and
 * the records read back from the file. */
#ifndef NCCL_LENS_TESTS_CORE_FIXTURE_H
#define NCCL_LENS_TESTS_CORE_FIXTURE_H

#include <stdint.h>

#include "nccl-lens/trace_format.h"

#define FIX_MAX_RECS 20000
struct fix_rec {
  uint8_t bytes[256]; /* the record as written (file form) */
};
extern struct fix_rec fix_recs[FIX_MAX_RECS];
extern int fix_nrecs;
extern char fix_path[256];

void fix_setup(uint32_t max_threads, uint64_t ring_bytes);
/* Drain all rings to the file and reload every record into fix_recs. */
void fix_drain_and_load(void);
static inline const struct lens_rec_hdr *fix_hdr(int i) { return (const struct lens_rec_hdr *)fix_recs[i].bytes; }
static inline const struct lens_rec_start *fix_start(int i) { return (const struct lens_rec_start *)fix_recs[i].bytes; }
/* Index of the START record with this id, -1 none. */
int fix_find_start(uint64_t id);
struct lens_drops fix_drops(void);

#endif
