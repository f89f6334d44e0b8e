/* The writer thread: the only thread of the plugin that touches the trace
 * file. It drains every thread's ring, converts timestamps to
 * CLOCK_MONOTONIC ns, interns strings, and writes THREAD, STRINGS, EVENTS,
 * DROPS, NOTE/CUPTI blobs and FINI; it also opens the file and writes the
 * SESSION, COMM and COMM_FINI records that init and finalize post to it.
 *
 * One thread per process, started at the first init and kept for the life
 * of the process (the plugin is pinned in memory). NCCL's threads never wait
 * on I/O: they post requests, and a close waits at most its timeout (a
 * stalled file system leaves the writer behind, not the job). */
#ifndef NCCL_LENS_PLUGIN_WRITER_H
#define NCCL_LENS_PLUGIN_WRITER_H

#include <stdint.h>

#include "config.h"

#include "lens_pack_chunk.h" /* LENS_EVENTS_CHUNK_MAX */

/* Starts the thread if needed and asks it to open the trace and begin a
 * session whose SESSION record is session_rec (copied). 0 posted, -1 no
 * thread (logged once; rings fill and drops are counted). Never blocks on I/O. */
int lens_writer_open_session(const struct lens_config *c, const char *host, int pid, const void *session_rec,
                             uint32_t len);
/* Queues one chunk (payload copied) behind the requests posted before it. */
int lens_writer_post(uint16_t chunk_type, const void *payload, uint32_t len);
/* Asks for the final drain, DROPS, FINI(reason) and the close of the file,
 * and waits at most timeout_ms (0: do not wait). 0 done, -1 not done yet (the
 * writer finishes it on its own when its I/O comes back). */
int lens_writer_close_session(uint32_t reason, unsigned timeout_ms);
/* Waits at most timeout_ms until every request posted so far is done (the
 * exit handler, after a finalize that stopped waiting). 0 done, -1 not yet. */
int lens_writer_wait_done(unsigned timeout_ms);
/* Ends the thread (only when the plugin could not be pinned): closes an open
 * session, joins within timeout_ms or detaches it. */
void lens_writer_shutdown(uint32_t reason, unsigned timeout_ms);
void lens_writer_reset_after_fork(void);
/* Events written in the current session. */
uint64_t lens_writer_events(void);
/* One full drain pass on the caller's thread (tests; the writer must not run). */
uint64_t lens_writer_drain_once(void);

#endif
