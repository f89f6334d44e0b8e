/* Test-only writer of .lens traces, byte for byte as trace_format.h documents
 * them, so reader tests do not depend on the plugin. Each call appends one
 * chunk (events are gathered and appended by tb_flush). Errors abort: this
 * is test code. */
#ifndef NCCL_LENS_TEST_TRACE_BUILDER_H
#define NCCL_LENS_TEST_TRACE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

struct tb;

struct tb *tb_open(const char *path, uint32_t producer);
void tb_close(struct tb *t);
/* Starts session `number` (later chunks carry it). */
void tb_session(struct tb *t, uint32_t number, uint32_t pid, const char *host, uint32_t api_version);
void tb_comm(struct tb *t, uint64_t context, uint64_t comm_id, int rank, int nranks, int nnodes, uint32_t comm_index,
             const char *name);
void tb_comm_fini(struct tb *t, uint64_t context, uint64_t fini_mono_ns, uint32_t comm_index);
void tb_thread(struct tb *t, uint32_t slot, uint32_t tid, uint32_t roles, const char *name, int proxy_rank,
               uint32_t proxy_comm_index);
void tb_string(struct tb *t, uint32_t id, const char *s); /* one STRINGS chunk per call */
/* Records go to a buffer for `slot` until tb_flush writes one EVENTS chunk. */
void tb_events_begin(struct tb *t, uint32_t slot);
void tb_start(struct tb *t, int type, uint64_t id, uint64_t parent, uint64_t context, uint64_t ts, int rank,
              uint32_t aux, const void *payload, size_t payload_len);
void tb_stop(struct tb *t, uint64_t id, uint64_t ts);
void tb_state(struct tb *t, uint64_t id, uint32_t state, uint64_t ts, uint64_t arg, uint32_t has_args);
/* A run record (lens_rec_state_run): `repeats` more records of the same state, arg and has_args, the last
 * at last_ts. */
void tb_state_run(struct tb *t, uint64_t id, uint32_t state, uint64_t ts, uint64_t arg, uint32_t has_args,
                  uint64_t last_ts, uint32_t repeats, uint32_t max_gap_ns);
void tb_flush(struct tb *t);
/* From now on each events chunk is followed by its INDEX chunk (common/lens_index.h, as the plugin's writer
 * writes it), with the open set after every events chunk (taken at that chunk's last record). */
void tb_index(struct tb *t);
void tb_drops(struct tb *t, const struct lens_drops *d);
void tb_note(struct tb *t, uint64_t at, uint32_t level, const char *text);
void tb_sched(struct tb *t, const struct lens_sched_sample *s, uint32_t n);
void tb_sched_hist(struct tb *t, const struct lens_sched_hist *h);
void tb_cupti(struct tb *t, uint64_t delivered, const void *bytes, uint32_t len);
void tb_fini(struct tb *t, uint64_t at, uint32_t reason);
void tb_raw_chunk(struct tb *t, uint16_t type, const void *payload, uint32_t len);

/* Reads a whole file into a malloc'd buffer. */
uint8_t *tb_read_file(const char *path, size_t *len);
void tb_write_file(const char *path, const void *data, size_t len);

#endif
