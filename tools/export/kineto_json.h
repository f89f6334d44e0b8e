/* A torch.profiler (Kineto) Chrome-trace file, read twice as a stream
 * (spec/pytorch.md §1): gzip'd or not, never whole in memory.
 *
 * Pass 1 (kineto_scan): yajl parses the whole document, so a file that is
 * not JSON is refused before anything is written; it keeps the header facts
 * (baseTimeNanoseconds, distributedInfo's rank), the processes of the CPU
 * side and every NCCL kernel event (by its index in traceEvents), and a
 * CRC32 of the bytes.
 * Pass 2 (kineto_rewrite): the same bytes copied to the output unchanged,
 * except for three insertions: keys appended at the end of chosen events'
 * `args` objects, new events before traceEvents' closing bracket, and one
 * top-level key before the document's closing brace. Every original byte of
 * every original event is written as read; the pass fails if the file's
 * bytes are not those pass 1 checked (same CRC). */
#ifndef NCCL_LENS_EXPORT_KINETO_JSON_H
#define NCCL_LENS_EXPORT_KINETO_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KJ_NAME_MAX 128               /* kernel names kept this long (longer ones cut) */
#define KJ_MAX_KERNELS 1000000        /* NCCL kernels kept per file (176 MB); more is an error */
#define KJ_MAX_EDIT_EVENT (16u << 20) /* an edited event is held whole: at most this */
#define KJ_CPU_PIDS 16

/* One NCCL kernel event. Times are ns relative to the file's base (absolute
 * epoch ns when the file has no baseTimeNanoseconds). */
struct kj_kernel {
  uint64_t index;   /* its place among traceEvents' objects */
  int64_t pid, tid; /* device, stream (both numbers, else the event is not kept) */
  int64_t ts_ns, dur_ns;
  int64_t correlation; /* args.correlation, -1 none */
  char name[KJ_NAME_MAX];
};

struct kj_scan {
  uint64_t n_events;      /* objects in traceEvents */
  uint64_t n_kernels_all; /* events with cat "kernel" */
  int have_base;
  int64_t base_ns; /* baseTimeNanoseconds (0 without: ts is epoch us) */
  int have_rank;
  int64_t rank, world_size; /* distributedInfo (world_size -1 unknown) */
  int already_merged;       /* a top-level "nccl_lens" key: merged before */
  int have_trace_events;
  struct kj_kernel *k;
  size_t n_k, cap_k;         /* NCCL kernels, in file order */
  size_t kernels_unreadable; /* NCCL kernel events without numeric pid/tid/ts/dur (counted, not kept) */
  int64_t cpu_pids[KJ_CPU_PIDS];
  size_t n_cpu_pids;   /* pids of cpu_op / cuda_runtime / cuda_driver events */
  int64_t max_tid_gpu; /* largest numeric tid on a GPU kernel row */
  uint32_t crc;
  uint64_t bytes; /* of the uncompressed document */
  int gzipped;
};

/* 0, or -1 with one line in err. Frees nothing on error: call kj_scan_free. */
int kj_scan_file(const char *path, struct kj_scan *s, char *err, size_t err_len);
void kj_scan_free(struct kj_scan *s);

/* Is this kernel name NCCL's (ncclDevKernel_*, ncclKernel_*, RCCL's)? */
int kj_is_nccl_kernel(const char *name);

/* What pass 2 inserts. args_for(ctx, event_index, out) writes ",\"k\":v..."
 * members (each preceded by a comma) for the events listed in edit[]
 * (ascending event indexes); tail(ctx, out) writes whole events, each
 * preceded by a comma; meta(ctx, out) writes the value of the top-level key
 * "nccl_lens". Any of them may be NULL. out is a stdio stream into memory. */
struct kj_insert {
  const uint64_t *edit;
  size_t n_edit;
  void (*args_for)(void *ctx, uint64_t event_index, FILE *out);
  void (*tail)(void *ctx, FILE *out);
  void (*meta)(void *ctx, FILE *out);
  void *ctx;
};

/* Copies in_path to the open descriptor out_fd (gzip'd when gz), with the
 * insertions. 0, or -1 with one line in err. Takes out_fd (closes it). */
int kj_rewrite(const char *in_path, const struct kj_scan *s, int out_fd, int gz, const struct kj_insert *ins, char *err,
               size_t err_len);

#endif
