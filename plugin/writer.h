/* The writer thread: drains every thread's ring, converts timestamps to
 * CLOCK_MONOTONIC ns, interns strings, and writes THREAD, STRINGS, EVENTS,
 * DROPS, NOTE/CUPTI blobs and finally FINI. It is the only consumer of the
 * rings. Started at the first init of a session, stopped at the last
 * finalize (reason 1) or at exit without finalize (reason 2). */
#ifndef NCCL_LENS_PLUGIN_WRITER_H
#define NCCL_LENS_PLUGIN_WRITER_H

#include <stdint.h>

#include "config.h"

#define LENS_EVENTS_CHUNK_MAX (256 * 1024)

/* 0 started, -1 no thread (logged; rings fill and drops are counted). */
int lens_writer_start(const struct lens_config *c, uint32_t session);
/* Final drain, DROPS, FINI(reason), join. timeout_ms 0 = wait for ever.
 * Without a thread (start failed) drains on the caller's thread. */
void lens_writer_stop(uint32_t reason, unsigned timeout_ms);
void lens_writer_reset_after_fork(void);
/* Events written in the current session. */
uint64_t lens_writer_events(void);
/* One full drain pass on the caller's thread (tests; the writer must not run). */
uint64_t lens_writer_drain_once(void);

#endif
