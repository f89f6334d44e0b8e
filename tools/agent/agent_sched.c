/* The sched pages (tools/sched/sched_page.h) that `nccl-lens sched` writes
 * beside the live pages: per watched proxy/profiler thread, the time it
 * waited for a CPU. Read whole at each refresh (lens_sched_page_read_at:
 * owned by root or us, regular, bounded, parsed strictly); a page not
 * rewritten for --keep seconds (at least 10) is its gone sched's and left
 * out. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent_model.h"
#include "lens_safe_fs.h"

#define SCHED_SCAN_MAX 16384      /* directory entries looked at per refresh */
#define SCHED_MAX_THREADS 65536   /* threads kept across all pages */
/* sched rewrites its page every second: one updated this recently is of a
 * running sched, whatever its pid now is (pages carry no start ticks). */
#define SCHED_FRESH_NS 10000000000ull

void agent_sched_refresh(struct agent_model *m, const char *dir, unsigned keep_s) {
  m->n_sched = 0;
  char why[256];
  int dfd = lens_dir_open(dir, 0, LENS_ANY_UID, LENS_DIR_SHARED_STICKY, why, sizeof why);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    if (dfd >= 0) close(dfd);
    return;
  }
  static struct lens_sched_page page; /* 400 KiB: not on the stack; the agent refreshes under its mutex */
  static struct { dev_t dev; ino_t ino; } said[64]; /* refusals already named on stderr */
  static size_t n_said;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  uint64_t keep_ns = (uint64_t)keep_s * 1000000000ull;
  if (keep_ns < SCHED_FRESH_NS) keep_ns = SCHED_FRESH_NS;
  struct dirent *e;
  int entries = 0;
  while ((e = readdir(d)) && entries++ < SCHED_SCAN_MAX) {
    const char *c = e->d_name;
    size_t digits = strspn(c, "0123456789");
    if (!digits || digits > 10 || strcmp(c + digits, ".sched") != 0) continue;
    uint32_t writer;
    uint64_t updated;
    /* Owned by root (sched) or by us: a page of any other user is a
     * forgery whose counters would become our metrics. */
    if (lens_sched_page_read_at(dfd, e->d_name, &page, &writer, &updated, why, sizeof why) != 0) {
      struct stat st;
      if (errno == ENOENT || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      size_t k = 0;
      while (k < n_said && (said[k].dev != st.st_dev || said[k].ino != st.st_ino)) k++;
      if (k == n_said && n_said < sizeof said / sizeof said[0]) {
        said[n_said].dev = st.st_dev, said[n_said++].ino = st.st_ino;
        fprintf(stderr, "nccl-lens: ignoring %s/%s: %s\n", dir, e->d_name, why);
      }
      continue;
    }
    /* Its sched is gone (or the clock says nonsense): kept --keep seconds. */
    if (now < updated || now - updated > keep_ns) continue;
    size_t n = page.n;
    if (m->n_sched + n > SCHED_MAX_THREADS) n = SCHED_MAX_THREADS - m->n_sched;
    if (!n) continue;
    struct lens_sched_page_thread *t = realloc(m->sched, (m->n_sched + n + 1) * sizeof *t);
    if (!t) break;
    m->sched = t;
    memcpy(m->sched + m->n_sched, page.t, n * sizeof *t);
    m->n_sched += n;
  }
  closedir(d);
}
