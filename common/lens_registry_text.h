/* Reading the registry's text (include/nccl-lens/registry.h), which the
 * plugin writes and the eBPF probe's `nccl-lens sched` and the plugin's own
 * sweep of stale files read: a file another user may have written, so
 * numbers are strict and unknown or malformed lines are skipped. One parser
 * for both readers. */
#ifndef NCCL_LENS_REGISTRY_TEXT_H
#define NCCL_LENS_REGISTRY_TEXT_H

#include <stdint.h>

/* The identity lines of a registry (all in the writer's own namespace). */
struct lens_registry_id {
  uint32_t pid;
  uint64_t start_ticks, pidns;
  int has_pid, has_start, has_pidns;
};
/* Fills id from registry text; -1 if not a registry. */
int lens_registry_parse_id(const char *text, struct lens_registry_id *id);
/* Calls fn(ctx, tid, outer_tid, roles) for each well-formed thread line;
 * the number of them, or -1 if not a registry. */
int lens_registry_parse_threads(const char *text, void (*fn)(void *, uint32_t, uint32_t, uint32_t), void *ctx);

#endif
