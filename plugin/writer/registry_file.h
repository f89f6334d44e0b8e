/* The per-process thread registry for the eBPF probe
 * (include/nccl-lens/registry.h): <registry_dir>/<pid>.reg, rewritten
 * atomically (temp + rename) by the writer whenever the thread table
 * changes, removed at the last finalize and at exit. */
#ifndef NCCL_LENS_PLUGIN_REGISTRY_FILE_H
#define NCCL_LENS_PLUGIN_REGISTRY_FILE_H

#include <stdint.h>

/* Session start: where to write and what trace to name. */
void lens_registry_begin(int pid, const char *trace_path); /* in the checked directory (regdir.h) */
/* Rewrite from the slot table (writer thread). */
void lens_registry_write(void);
void lens_registry_remove(void);
/* NSpid helpers: the outermost id of /proc/<path>/status NSpid, or fallback. */
uint32_t lens_outer_id(const char *status_path, uint32_t fallback);

#endif
