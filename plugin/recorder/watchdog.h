/* The recorder's dump triggers, on the writer thread (never NCCL's):
 *  - a hang: work in flight (a ProxyOp or KernelCh started and not stopped)
 *    and no progress (no start or stop of any event but ProxyCtrl; repeated
 *    states such as a SendPeerWait flood are not progress) for
 *    NCCL_LENS_HANG_TIMEOUT seconds; once per hang, re-armed by progress;
 *  - a slow collective: a KernelCh whose GPU span exceeds NCCL_LENS_SLOW_MS;
 *  - a user's request: the file <registry_dir>/<pid>.dump (made by
 *    `nccl-lens dump`), polled every 100 ms and removed when taken. Only a
 *    regular file owned by us or root, newer than this session and than a
 *    minute, counts; at most one request is honoured per
 *    NCCL_LENS_DUMP_INTERVAL seconds (60); the others are removed, counted
 *    and logged once. Anyone who can write the registry directory could
 *    otherwise make the job write 64 MiB dumps in a loop.
 * In flight is a count of starts minus stops: an op NCCL never stops (a
 * collnet ProxyOp) keeps it above 0, so a job that then idles longer than
 * the timeout gets one dump it did not need. */
#ifndef NCCL_LENS_PLUGIN_WATCHDOG_H
#define NCCL_LENS_PLUGIN_WATCHDOG_H

#include <stdint.h>

#include "nccl-lens/trace_format.h"

/* slow_ms: also dump when a kernel channel's GPU span (KernelCh start pTimer
 * to its KernelChStop pTimer: execution plus waiting for peers, which one
 * process cannot tell apart) exceeds it; 0 = off; at most one such dump a
 * minute. */
void lens_wd_configure(uint32_t timeout_s, uint32_t slow_ms, uint32_t dump_interval_s, int pid);
/* Requests refused by the rate limit or as stale, this process. */
uint64_t lens_wd_requests_refused(void);
/* Every record the writer drains (ring form). */
void lens_wd_observe(const struct lens_rec_hdr *h, const void *rec);
/* Returns the reason for a dump now ("hang watchdog", "slow collective", "user request"), or NULL. */
const char *lens_wd_tick(uint64_t now_mono_ns);

#endif
