/* CLOCK chunks: the facts an offline aligner needs to place this host's
 * CLOCK_MONOTONIC on one job time base. REALTIME gives a coarse offset (NTP:
 * typically well under a millisecond, bounded by adjtimex's maxerror); the
 * boot id tells which traces share a host clock (and a reboot apart); the
 * time namespace offset says how this process's MONOTONIC differs from the
 * host's (what eBPF's bpf_ktime_get_ns reads). Off the hot path: writer only. */
#define _GNU_SOURCE
#include "clock_evidence.h"

#include <stdio.h>
#include <string.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

#include "trace_file.h"

static char g_boot_id[40], g_host[64];
static int64_t g_timens_ns;
static int g_timens_known;

static uint64_t read_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void read_host_facts(void) {
  memset(g_boot_id, 0, sizeof g_boot_id);
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
  if (f) {
    if (fgets(g_boot_id, sizeof g_boot_id, f)) g_boot_id[strcspn(g_boot_id, "\n")] = 0;
    fclose(f);
  }
  memset(g_host, 0, sizeof g_host);
  if (gethostname(g_host, sizeof g_host - 1) != 0) strcpy(g_host, "unknown");
  /* "monotonic <s> <ns>" (Linux 5.6+); absent: no time namespaces, offset 0 */
  g_timens_ns = 0;
  g_timens_known = 0;
  f = fopen("/proc/self/timens_offsets", "re");
  if (f) {
    char line[128];
    while (fgets(line, sizeof line, f)) {
      long long sec, nsec;
      if (sscanf(line, "monotonic %lld %lld", &sec, &nsec) == 2) {
        g_timens_ns = sec * 1000000000ll + nsec;
        g_timens_known = 1;
      }
    }
    fclose(f);
  }
}

void lens_clock_evidence_take(struct lens_clock_rec *r, int fresh) {
  if (fresh || !g_host[0]) read_host_facts();
  memset(r, 0, sizeof *r);
  /* the tightest bracket of three tries: a preemption between the reads
   * only widens the bound, the minimum removes most of them */
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; i++) {
    uint64_t a = read_ns(CLOCK_MONOTONIC), real = read_ns(CLOCK_REALTIME), b = read_ns(CLOCK_MONOTONIC);
    if (b - a < best) {
      best = b - a;
      r->mono_before_ns = a;
      r->real_ns = real;
      r->mono_after_ns = b;
    }
  }
  r->boottime_ns = read_ns(CLOCK_BOOTTIME);
  struct timex tx;
  memset(&tx, 0, sizeof tx); /* modes 0: read only */
  int st = adjtimex(&tx);
  if (st < 0) {
    r->flags |= LENS_CLOCK_F_NTP_UNKNOWN;
  } else {
    r->ntp_status = (uint32_t)tx.status;
    r->ntp_offset_ns = (tx.status & STA_NANO) ? (int64_t)tx.offset : (int64_t)tx.offset * 1000;
    r->ntp_maxerror_ns = (uint64_t)tx.maxerror * 1000;
    r->ntp_esterror_ns = (uint64_t)tx.esterror * 1000;
    if (!(tx.status & STA_UNSYNC) && st != TIME_ERROR) r->flags |= LENS_CLOCK_F_NTP_SYNCED;
  }
  r->timens_mono_offset_ns = g_timens_ns;
  if (g_timens_known) r->flags |= LENS_CLOCK_F_TIMENS;
  memcpy(r->boot_id, g_boot_id, sizeof r->boot_id);
  memcpy(r->host, g_host, sizeof r->host);
}

void lens_clock_evidence_write(int fresh) {
  struct lens_clock_rec r;
  lens_clock_evidence_take(&r, fresh);
  lens_tf_write(LENS_CHUNK_CLOCK, &r, sizeof r);
}
