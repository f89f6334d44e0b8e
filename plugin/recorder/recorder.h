/* Flight-recorder mode (NCCL_LENS_MODE=recorder): the writer drains the
 * rings as in trace mode, but its chunks go to this bounded in-memory store
 * instead of the file; a dump writes them as a normal .lens file. The hot
 * path is the trace mode's. Writer thread only (no lock): trace_file.c
 * stores into it and dumps from it.
 *
 * Bound: the chunks events need to be read (SESSION, COMM, COMM_FINI,
 * THREAD, STRINGS: bounded by the communicators, threads and distinct
 * strings) are kept for the session's life; every other chunk (EVENTS,
 * DROPS, CLOCK, NOTE, CUPTI) is evicted oldest first once the store holds
 * more than its size. Evicted chunks and records are counted. */
#ifndef NCCL_LENS_PLUGIN_RECORDER_H
#define NCCL_LENS_PLUGIN_RECORDER_H

#include <stdint.h>

struct iovec;

void lens_rec_configure(int on, uint64_t bytes);
int lens_rec_on(void);
/* Copies one chunk into the store; 0, or -1 when it cannot be kept (counted). */
int lens_rec_store(uint16_t type, uint32_t session, const struct iovec *parts, int n);
/* Calls fn for every stored chunk in the order they were stored. */
void lens_rec_foreach(void (*fn)(void *ctx, uint16_t type, uint32_t session, const void *payload, uint32_t len),
                      void *ctx);
/* Forgets everything (a session ended). */
void lens_rec_clear(void);

struct lens_rec_stats {
  uint64_t bytes, peak_bytes, bound; /* payload + per-chunk overhead held now / at most */
  uint64_t chunks, evicted_chunks, evicted_event_records, refused;
};
void lens_rec_stats(struct lens_rec_stats *s);

#endif
