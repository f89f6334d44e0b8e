/* libFuzzer target: the timeline memo's two readers on bytes, as
 * `nccl-lens export --since/--until` takes them from the cache after the
 * entry's key and CRC matched (tools/export/timeline_memo.c): the first
 * byte's low bit picks the reader.
 *   0: the main entry, byte 1 the inputs it must be of, the rest its data;
 *      when it parses, everything a window reads of it is walked (every
 *      instance's name, every host's names, every process placed on job
 *      time, every communicator's name).
 *   1: a slab, bytes 1-8 its number, 9-12 its rows, 13 the processes its
 *      rows may name, the rest the zstd entry. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "export/timeline_memo.h"

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || size > (4u << 20)) return -1;
  if (data[0] & 1) {
    if (size < 14) return 0;
    uint64_t slab;
    uint32_t rows;
    memcpy(&slab, data + 1, sizeof slab);
    memcpy(&rows, data + 9, sizeof rows);
    sink += (size_t)lens_timeline_memo_slab_check(data + 14, size - 14, slab, rows, data[13]);
    return 0;
  }
  struct lens_timeline_memo mm;
  if (lens_timeline_memo_parse(data + 2, size - 2, data[1], &mm) == 0) {
    for (size_t i = 0; i < mm.j.n_insts; i++)
      if (mm.j.insts[i].func) sink += strlen(mm.j.insts[i].func);
    for (size_t h = 0; h < mm.a.n_hosts; h++) sink += strlen(mm.a.hosts[h].host) + strlen(mm.a.hosts[h].boot_id);
    for (size_t p = 0; p < mm.n_procs; p++) {
      int64_t t;
      uint64_t bound;
      lens_align_to_job(&mm.a, (int32_t)p, mm.min_start[p] == UINT64_MAX ? 0 : mm.min_start[p], &t, &bound);
      sink += (size_t)t + mm.pid[p] + mm.plugin[p];
    }
    for (size_t c = 0; c < mm.n_comms; c++) sink += strlen(mm.comms[c].name);
    for (size_t i = 0; i < mm.n_inputs; i++) sink += (size_t)mm.group_of_input[i];
  }
  lens_timeline_memo_free(&mm);
  return 0;
}
