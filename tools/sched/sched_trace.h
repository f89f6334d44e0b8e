/* The probe's own .lens trace (producer LENS_PRODUCER_SCHED):
 * nccl-lens-sched-<host>-<pid>.lens = file header, SESSION, then SCHED chunks
 * as samples arrive (flushed at least every flush interval so a killed loader
 * leaves a readable file), SCHED_HIST and DROPS at the end, then FINI.
 * Framing through common/lens_chunk.h. No libbpf: tests use it on its own. */
#ifndef NCCL_LENS_SCHED_TRACE_H
#define NCCL_LENS_SCHED_TRACE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

#define LENS_SCHED_BATCH 1024 /* samples per SCHED chunk at most */

struct lens_sched_trace {
  int fd;
  uint64_t seq;              /* next chunk number */
  uint64_t samples_written;
  uint64_t write_errors;     /* chunks that failed to write (counted, never fatal) */
  uint32_t n_pending;
  struct lens_sched_sample pending[LENS_SCHED_BATCH];
  char path[PATH_MAX];
};

/* Creates <dir>/nccl-lens-sched-<host>-<pid>.lens and writes the header and
 * SESSION chunk. 0, or -1 with a one-line reason in err. */
int lens_sched_trace_open(struct lens_sched_trace *t, const char *dir, char *err, size_t err_len);
/* Queues one sample; writes a SCHED chunk when the batch is full. */
void lens_sched_trace_add(struct lens_sched_trace *t, const struct lens_sched_sample *s);
/* Writes the queued samples as one SCHED chunk (nothing if none). */
void lens_sched_trace_flush(struct lens_sched_trace *t);
void lens_sched_trace_hist(struct lens_sched_trace *t, const struct lens_sched_hist *h);
void lens_sched_trace_note(struct lens_sched_trace *t, uint32_t level, const char *text);
/* DROPS chunk: ring_full = samples the kernel could not queue. */
void lens_sched_trace_drops(struct lens_sched_trace *t, uint64_t ring_full);
/* Flushes, writes FINI (reason 1 = clean stop) and closes. */
void lens_sched_trace_close(struct lens_sched_trace *t, uint32_t reason);

/* CLOCK_MONOTONIC / CLOCK_REALTIME now, ns. */
uint64_t lens_sched_mono_ns(void);
uint64_t lens_sched_real_ns(void);

#endif
