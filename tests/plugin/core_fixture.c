#include "core_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "comm_table.h"
#include "counters.h"
#include "log_internal.h"
#include "plugin_driver.h"
#include "record.h"
#include "trace_file.h"
#include "trace_walk.h"
#include "tslot.h"
#include "writer.h"

struct fix_rec fix_recs[FIX_MAX_RECS];
int fix_nrecs;
char fix_path[256];

void fix_setup(uint32_t max_threads, uint64_t ring_bytes) {
  char dir[128];
  lens_log_set_logger(test_logger);
  lens_comm_table_setup();
  if (lens_tslots_setup(max_threads, ring_bytes) != 0) abort();
  lens_clock_setup(1);
  lens_self_pid = getpid();
  make_tmp_dir(dir, sizeof dir, "unit");
  if (lens_tf_open(dir, "unit", getpid()) != 0) abort();
  snprintf(fix_path, sizeof fix_path, "%s/nccl-lens-unit-%d.lens", dir, getpid());
}

static void collect(const struct lens_rec_hdr *r, uint32_t session, void *arg) {
  if (fix_nrecs < FIX_MAX_RECS && r->size <= sizeof fix_recs[0].bytes)
    memcpy(fix_recs[fix_nrecs++].bytes, r, r->size);
}

void fix_drain_and_load(void) {
  while (lens_writer_drain_once() > 0) {
  }
  fix_nrecs = 0;
  trace_for_each_record(fix_path, collect, NULL);
}

int fix_find_start(uint64_t id) {
  for (int i = 0; i < fix_nrecs; i++)
    if (fix_hdr(i)->kind == LENS_REC_START && fix_start(i)->id == id) return i;
  return -1;
}

struct lens_drops fix_drops(void) {
  struct lens_drops d;
  lens_counters_snapshot(&d);
  return d;
}
