/* Live aggregates (include/nccl-lens/live.h, docs/metrics.md): the writer
 * thread folds every record it drains into per-series counters and
 * histograms and publishes them in <registry_dir>/<pid>.live. Everything here
 * runs on the writer thread only; NCCL's threads never see it. */
#ifndef NCCL_LENS_PLUGIN_LIVE_H
#define NCCL_LENS_PLUGIN_LIVE_H

#include <stdint.h>

#include "nccl-lens/live.h"
#include "nccl-lens/trace_format.h"

/* Session start. on: NCCL_LENS_LIVE; period_ms: NCCL_LENS_LIVE_PERIOD_MS;
 * dirfd: the checked registry directory (regdir.h), -1 for none (then the
 * aggregates are kept but no page is published). */
void lens_live_begin(int on, uint32_t period_ms, int dirfd, int pid, const char *host);
/* One record in ring form (raw timestamps, string pointers), before the
 * writer converts it in place. */
void lens_live_on_record(const struct lens_rec_hdr *h);
/* A control chunk the writer is about to write (COMM, COMM_FINI). */
void lens_live_on_chunk(uint16_t type, const void *payload, uint32_t len);
/* Called each writer pass: publishes when the period has passed. */
void lens_live_tick(uint64_t now_mono_ns);
/* Session end: final publish, state FINISHED; the page stays. */
void lens_live_end(void);

/* live_agg.c -> live_page.c */
struct lens_live_page *lens_live_private(void); /* the writer's private copy */
int lens_live_page_open(int dirfd, int pid);
void lens_live_page_publish(const struct lens_live_page *p);
void lens_live_page_close(void);

#endif
