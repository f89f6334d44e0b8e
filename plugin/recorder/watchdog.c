/* Dump triggers of the flight recorder (watchdog.h). Writer thread only. */
#include "watchdog.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "regdir.h"

#define LENS_ST_KCH_STOP_STATE 22 /* NCCL's ncclProfilerKernelChStop: arg = the stop pTimer */
#include <unistd.h>

static uint64_t g_timeout_ns;
static char g_request[64];  /* "<pid>.dump" in the registry directory */
static uint64_t g_dump_gap_ns, g_last_request_ns, g_refused;
static time_t g_session_real_s;
static int g_refused_once;
static int64_t g_in_flight;
static int g_progress;       /* seen since the last tick */
static uint64_t g_last_progress_ns, g_last_poll_ns;
static int g_fired;          /* this hang was dumped */

/* Slow collectives: KernelCh id -> start pTimer, a small open table (a few
 * hundred channels in flight at most; a full slot is overwritten, and that
 * channel is not judged). */
#define SLOW_SLOTS 1024u
#define SLOW_DUMP_GAP_NS 60000000000ull /* at most one slow-collective dump a minute */
static uint64_t g_slow_ns, g_slow_seen_ns, g_last_slow_dump_ns;
static struct { uint64_t id, start_gpu; } g_kch[SLOW_SLOTS];

void lens_wd_configure(uint32_t timeout_s, uint32_t slow_ms, uint32_t dump_interval_s, int pid) {
  g_dump_gap_ns = (uint64_t)dump_interval_s * 1000000000ull;
  g_last_request_ns = 0;
  g_session_real_s = time(NULL);
  g_timeout_ns = (uint64_t)timeout_s * 1000000000ull;
  g_slow_ns = (uint64_t)slow_ms * 1000000ull;
  g_slow_seen_ns = g_last_slow_dump_ns = 0;
  for (unsigned i = 0; i < SLOW_SLOTS; i++) g_kch[i].id = 0;
  snprintf(g_request, sizeof g_request, "%d.dump", pid);
  g_in_flight = 0;
  g_progress = 1;
  g_last_progress_ns = 0;
  g_fired = 0;
}

static unsigned id_type(uint64_t id) { return (unsigned)((id >> 56) & 0xf); }

static void observe_slow(const struct lens_rec_hdr *h, const void *rec) {
  if (h->kind == LENS_REC_START && h->type == LENS_T_KERNEL_CH) {
    const struct lens_rec_start *s = rec;
    const struct lens_p_kernel_ch *k = (const void *)(s + 1);
    unsigned slot = (unsigned)(s->id * 0x9E3779B97F4A7C15ull >> 54) & (SLOW_SLOTS - 1);
    g_kch[slot].id = s->id;
    g_kch[slot].start_gpu = k->start_gpu_ns;
  } else if (h->kind == LENS_REC_STATE && h->aux == LENS_ST_KCH_STOP_STATE) {
    const struct lens_rec_state *st = rec;
    unsigned slot = (unsigned)(st->id * 0x9E3779B97F4A7C15ull >> 54) & (SLOW_SLOTS - 1);
    if (g_kch[slot].id != st->id) return;
    g_kch[slot].id = 0;
    uint64_t start = g_kch[slot].start_gpu;
    if (start && st->arg > start && st->arg - start > g_slow_ns) g_slow_seen_ns = st->arg - start;
  }
}

void lens_wd_observe(const struct lens_rec_hdr *h, const void *rec) {
  if (g_slow_ns) observe_slow(h, rec);
  unsigned type;
  if (h->kind == LENS_REC_START) {
    type = h->type;
  } else if (h->kind == LENS_REC_STOP) {
    type = id_type(((const struct lens_rec_stop *)rec)->id);
  } else {
    return; /* states: a flood of the same state is no progress */
  }
  if (type == LENS_T_PROXY_CTRL) return;
  g_progress = 1;
  if (type == LENS_T_PROXY_OP || type == LENS_T_KERNEL_CH) g_in_flight += h->kind == LENS_REC_START ? 1 : -1;
  if (g_in_flight < 0) g_in_flight = 0; /* a stop whose start came before the session */
}

static void refuse(const char *why);

/* A request is the file's existence; it is judged without opening it (a
 * FIFO or device there must not block us) and always removed. */
static int take_request(uint64_t now) {
  int dfd = lens_regdir_fd();
  struct stat st;
  if (dfd < 0 || fstatat(dfd, g_request, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  unlinkat(dfd, g_request, 0);
  time_t t = time(NULL);
  if (!S_ISREG(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0)) {
    refuse("not a regular file of this user or root");
    return 0;
  }
  if (st.st_mtime < g_session_real_s - 1 || st.st_mtime + 60 < t) {
    refuse("stale: made before this process's session or over a minute ago");
    return 0;
  }
  if (g_last_request_ns && now - g_last_request_ns < g_dump_gap_ns) {
    refuse("rate limit NCCL_LENS_DUMP_INTERVAL");
    return 0;
  }
  g_last_request_ns = now;
  return 1;
}

const char *lens_wd_tick(uint64_t now) {
  if (g_progress || !g_last_progress_ns) {
    g_progress = 0;
    g_last_progress_ns = now;
    g_fired = 0;
  }
  if (g_timeout_ns && !g_fired && g_in_flight > 0 && now - g_last_progress_ns >= g_timeout_ns) {
    g_fired = 1;
    return "hang watchdog: work in flight made no progress for NCCL_LENS_HANG_TIMEOUT";
  }
  if (g_slow_seen_ns && (!g_last_slow_dump_ns || now - g_last_slow_dump_ns >= SLOW_DUMP_GAP_NS)) {
    g_slow_seen_ns = 0;
    g_last_slow_dump_ns = now;
    return "slow collective: a kernel channel's GPU span exceeded NCCL_LENS_SLOW_MS";
  }
  if (g_request[0] && now - g_last_poll_ns >= 100000000ull) {
    g_last_poll_ns = now;
    if (take_request(now)) return "user request (nccl-lens dump)";
  }
  return NULL;
}

uint64_t lens_wd_requests_refused(void) { return g_refused; }

static void refuse(const char *why) {
  g_refused++;
  lens_log_once(&g_refused_once, LENS_LOG_WARN,
                "nccl-lens: recorder dump request %s/%s refused (%s); further refusals are counted, not logged",
                lens_regdir_path(), g_request, why);
}
