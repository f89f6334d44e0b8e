/* The starvation page: `nccl-lens sched` publishes, per watched thread, how
 * long it waited for a CPU, so `nccl-lens agent` and `top` can export it live
 * (docs/metrics.md). A small text file, <dir>/<sched pid>.sched, rewritten
 * whole under a temporary name and renamed about once a second and at exit:
 *
 *   nccl-lens-sched-page 1
 *   host <hostname>
 *   pid <pid of nccl-lens sched>
 *   updated_real_ns <CLOCK_REALTIME ns of this copy>
 *   min_wait_ns <waits shorter than this are in histograms only, not summed>
 *   thread <pid> <tid> <ns_tid> <roles> <runq_ns> <runq_waits> <preempt_ns> <preempt_waits> <offcpu_ns> <sleeps>
 *
 * pid/tid are host ids (the init pid namespace), ns_tid the tid the process
 * itself sees, roles LENS_ROLE_* of the registry. runq = woken but not on a
 * CPU, preempt = switched out while runnable: together, time starved.
 * Totals are cumulative for as long as this sched runs (threads that ended
 * stay, up to LENS_SCHED_PAGE_THREADS). */
#ifndef NCCL_LENS_SCHED_PAGE_H
#define NCCL_LENS_SCHED_PAGE_H

#include <stddef.h>
#include <stdint.h>

#include "nccl-lens/trace_format.h"

#define LENS_SCHED_PAGE_MAGIC "nccl-lens-sched-page 1"
#define LENS_SCHED_PAGE_THREADS 4096

struct lens_sched_page_thread {
  uint32_t pid, tid, ns_tid, roles;
  uint64_t runq_ns, runq_waits, preempt_ns, preempt_waits, offcpu_ns, sleeps;
  uint64_t last_ns; /* CLOCK_MONOTONIC of its last sample: the oldest ended thread is replaced first */
};

struct lens_sched_page {
  size_t n;
  uint64_t evicted; /* threads replaced when the table was full */
  struct lens_sched_page_thread t[LENS_SCHED_PAGE_THREADS];
};

/* Adds one sample to its thread's totals; roles as the registry has them. */
void lens_sched_page_add(struct lens_sched_page *p, const struct lens_sched_sample *s, uint32_t roles);
/* A page is at most this big: 4096 threads of lines of at most ~230 bytes. */
#define LENS_SCHED_PAGE_MAX_BYTES (2 * 1024 * 1024)

/* Opens (creating it 0700 if missing) and checks the page directory with
 * lens_dir_open: ours, or, when explicit_dir (the user named it), a sticky
 * shared directory owned by root or us. The descriptor, or -1 + why. */
int lens_sched_page_open_dir(const char *dir, int explicit_dir, char *why, size_t why_len);
/* Writes <dirfd>/<getpid()>.sched, mode 0644: a fresh O_EXCL temporary file
 * then renamed (lens_file_replace), so no planted link is ever written
 * through. 0 ok, -1 (errno). */
int lens_sched_page_write(const struct lens_sched_page *p, int dirfd, uint64_t min_wait_ns);
/* Parses page text (NUL-terminated). Every number is strict decimal without
 * sign or overflow; a malformed thread line is skipped, at most
 * LENS_SCHED_PAGE_THREADS are kept. 0 ok, -1 not a page. */
int lens_sched_page_parse(const char *text, struct lens_sched_page *out, uint32_t *writer_pid,
                          uint64_t *updated_real_ns);
/* Reads <dirfd>/name (the agent): opened O_NOFOLLOW|O_NONBLOCK, a regular
 * file of one link and at most LENS_SCHED_PAGE_MAX_BYTES, owned by root or
 * the caller's euid (anything else is a forgery). Fills out (its threads),
 * *writer_pid and *updated_real_ns. 0 ok, -1 with why (may be NULL). */
int lens_sched_page_read_at(int dirfd, const char *name, struct lens_sched_page *out, uint32_t *writer_pid,
                            uint64_t *updated_real_ns, char *why, size_t why_len);
/* The same by path (AT_FDCWD). */
int lens_sched_page_read(const char *path, struct lens_sched_page *out, uint32_t *writer_pid,
                         uint64_t *updated_real_ns);
/* A watched thread's registry roles as the metrics and `top` label them:
 * "proxy", "profiler", "proxy,profiler" (NCCL 2.31+ can make one thread
 * both), or "" for none. */
const char *lens_sched_page_role_name(uint32_t roles);

#endif
