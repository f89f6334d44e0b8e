/* Dump triggers of the flight recorder (watchdog.h). Writer thread only. */
#include "watchdog.h"

#include <stdio.h>
#include <unistd.h>

static uint64_t g_timeout_ns;
static char g_request[600];
static int64_t g_in_flight;
static int g_progress;       /* seen since the last tick */
static uint64_t g_last_progress_ns, g_last_poll_ns;
static int g_fired;          /* this hang was dumped */

void lens_wd_configure(uint32_t timeout_s, const char *registry_dir, int pid) {
  g_timeout_ns = (uint64_t)timeout_s * 1000000000ull;
  snprintf(g_request, sizeof g_request, "%s/%d.dump", registry_dir, pid);
  g_in_flight = 0;
  g_progress = 1;
  g_last_progress_ns = 0;
  g_fired = 0;
}

static unsigned id_type(uint64_t id) { return (unsigned)((id >> 56) & 0xf); }

void lens_wd_observe(const struct lens_rec_hdr *h, const void *rec) {
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
  if (g_request[0] && now - g_last_poll_ns >= 100000000ull) {
    g_last_poll_ns = now;
    if (access(g_request, F_OK) == 0 && unlink(g_request) == 0) return "user request (nccl-lens dump)";
  }
  return NULL;
}
