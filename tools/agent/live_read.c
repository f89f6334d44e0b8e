/* Live pages -> consistent copies (live_read.h).
 *
 * A page is another user's file in a directory others may write: it is never
 * mapped (a page truncated under a mapping raised SIGBUS in the agent and in
 * top) and never opened blocking (a FIFO named 1.live hung both). Each
 * refresh opens it with lens_file_open_read (O_NOFOLLOW|O_NONBLOCK, a
 * regular file of one link and exactly the page's size), copies the header
 * and the series in use with pread, then only the recent[] slots added since
 * the last copy, and accepts the copy when `seq` read before and after agrees
 * and is even. A page that shrinks or is replaced meanwhile reads short and
 * is dropped; every count and name in the copy is bounded before use. */
#define _GNU_SOURCE
#include "live_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lens_safe_fs.h"

#define COPY_TRIES 100
#define LIVE_SCAN_MAX 16384 /* directory entries looked at per refresh */
#define LIVE_MAX_PAGES 4096 /* pages followed at once */
/* A page of another pid namespace cannot be matched to a process: it is
 * running while the writer still publishes (every NCCL_LENS_LIVE_PERIOD_MS,
 * at most 60 s). */
#define FOREIGN_ALIVE_NS 61000000000ull

/* pread of exactly len bytes at off; -1 when the file is shorter now. */
static int read_at(int fd, void *buf, size_t len, off_t off) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  return 0;
}

/* Names in the copy end inside their arrays, whatever the writer left. */
static void terminate(char *s, size_t cap) {
  size_t n = strnlen(s, cap);
  s[n < cap ? n : cap - 1] = 0;
}

static void bound_copy(struct lens_live_page *out) {
  if (out->n_comms > LENS_LIVE_COMMS) out->n_comms = LENS_LIVE_COMMS;
  if (out->n_series > LENS_LIVE_SERIES) out->n_series = LENS_LIVE_SERIES;
  terminate(out->host, sizeof out->host);
  for (uint32_t c = 0; c < out->n_comms; c++) terminate(out->comms[c].name, sizeof out->comms[c].name);
  for (uint32_t s = 0; s < out->n_series; s++) {
    terminate(out->series[s].func, sizeof out->series[s].func);
    terminate(out->series[s].algo, sizeof out->series[s].algo);
    terminate(out->series[s].proto, sizeof out->series[s].proto);
  }
}

/* Copies what changed since *have under the seqlock; 0 ok, -1 not a page,
 * shorter than a page now, or torn after COPY_TRIES. */
static int copy_page(int fd, struct lens_live_page *out, uint64_t *have) {
  const size_t head = offsetof(struct lens_live_page, series);
  const size_t N = LENS_LIVE_RECENT, isz = sizeof out->recent[0];
  for (int tries = 0; tries < COPY_TRIES; tries++) {
    if (tries) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
    if (read_at(fd, out, head, 0) != 0) return -1;
    if (out->magic != LENS_LIVE_MAGIC || out->version != LENS_LIVE_VERSION || out->size != sizeof *out) return -1;
    uint64_t s1 = out->seq;
    if (s1 & 1) continue; /* the writer is copying */
    uint32_t ns = out->n_series <= LENS_LIVE_SERIES ? out->n_series : LENS_LIVE_SERIES;
    if (ns && read_at(fd, out->series, ns * sizeof out->series[0], (off_t)offsetof(struct lens_live_page, series)))
      return -1;
    uint64_t total = out->recent_total, from = *have;
    if (from > total || total - from > N) from = total > N ? total - N : 0;
    /* The new slots [from, total) of the ring: at most two ranges. */
    size_t a = (size_t)(from % N), cnt = (size_t)(total - from);
    size_t first = cnt < N - a ? cnt : N - a;
    const off_t rec = (off_t)offsetof(struct lens_live_page, recent);
    if (first && read_at(fd, &out->recent[a], first * isz, rec + (off_t)(a * isz)) != 0) return -1;
    if (cnt > first && read_at(fd, &out->recent[0], (cnt - first) * isz, rec) != 0) return -1;
    uint64_t s2;
    if (read_at(fd, &s2, sizeof s2, (off_t)offsetof(struct lens_live_page, seq)) != 0) return -1;
    if (s2 != s1) continue; /* published meanwhile: what was copied may mix two versions */
    bound_copy(out);
    *have = total;
    return 0;
  }
  return -1;
}

int live_read_page(const char *path, struct lens_live_page *out) {
  struct stat st;
  int fd = lens_file_open_read(AT_FDCWD, path, LENS_ANY_UID, (off_t)sizeof *out, &st, NULL, 0);
  if (fd < 0) return -1;
  uint64_t have = 0;
  int rc = (size_t)st.st_size == sizeof *out ? copy_page(fd, out, &have) : -1;
  close(fd);
  return rc;
}

static uint64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One line on stderr per refused file (by inode), not one per refresh. */
static void refuse_once(const char *dir, const char *name, const struct stat *st, const char *why) {
  static struct { dev_t dev; ino_t ino; } said[64];
  static size_t n_said;
  for (size_t i = 0; i < n_said; i++)
    if (said[i].dev == st->st_dev && said[i].ino == st->st_ino) return;
  if (n_said == sizeof said / sizeof said[0]) return; /* enough said */
  said[n_said].dev = st->st_dev, said[n_said++].ino = st->st_ino;
  fprintf(stderr, "nccl-lens: ignoring %s/%s: %s\n", dir, name, why);
}

/* Whether the page's process still runs: the same pid, start ticks and pid
 * namespace (a reused pid or a page of a container's pid 1 is not ours to
 * judge by kill(pid, 0)). Another namespace's page runs while it is fresh.
 * *owner_ok: the file belongs to the running process's user (or root). */
static int page_alive(const struct lens_live_page *p, uint64_t self_ns, uint64_t now, uid_t file_uid,
                      int *owner_ok) {
  *owner_ok = 1;
  if (!self_ns || p->pidns != self_ns)
    return p->state == LENS_LIVE_RUNNING && now >= p->updated_real_ns && now - p->updated_real_ns < FOREIGN_ALIVE_NS;
  uint64_t ticks = lens_proc_start_ticks((int)p->pid);
  if (!ticks || ticks != p->proc_start_ticks) return 0;
  uid_t uid;
  if (lens_proc_uid((int)p->pid, &uid) == 0 && file_uid != uid && file_uid != 0) *owner_ok = 0;
  return 1;
}

static void proc_drop(struct live_proc *p) {
  free(p->page);
  memset(p, 0, sizeof *p);
}

static struct live_proc *proc_for(struct live_set *s, uint32_t pid) {
  for (size_t i = 0; i < s->n; i++)
    if (s->procs[i].page && s->procs[i].page->pid == pid) return &s->procs[i];
  if (s->n >= LIVE_MAX_PAGES) return NULL;
  if (s->n == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 16;
    struct live_proc *np = realloc(s->procs, nc * sizeof *np);
    if (!np) return NULL;
    s->procs = np;
    s->cap = nc;
  }
  struct live_proc *p = &s->procs[s->n];
  memset(p, 0, sizeof *p);
  p->page = calloc(1, sizeof *p->page);
  if (!p->page) return NULL;
  p->page->pid = pid;
  s->n++;
  return p;
}

int live_read_dir(const char *dir, unsigned keep_s, struct live_set *s) {
  for (size_t i = 0; i < s->n; i++) s->procs[i].seen = 0;
  /* Walked without following a link; anyone's private directory or a sticky
   * shared one (what is read from it is checked file by file). */
  char why[256];
  int dfd = lens_dir_open(dir, 0, LENS_ANY_UID, LENS_DIR_SHARED_STICKY, why, sizeof why);
  DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    int e = errno;
    if (dfd >= 0) close(dfd);
    live_set_free(s);
    return e == ENOENT ? 0 : -1;
  }
  struct dirent *e;
  uint64_t now = real_ns(), self_ns = lens_proc_ns(0, "pid");
  int entries = 0;
  while ((e = readdir(d)) && entries++ < LIVE_SCAN_MAX) {
    const char *c = e->d_name;
    uint64_t pid = 0;
    for (; *c >= '0' && *c <= '9' && pid <= UINT32_MAX; c++) pid = pid * 10 + (uint64_t)(*c - '0');
    if (c == e->d_name || pid == 0 || pid > 0x3fffffff || strcmp(c, ".live") != 0) continue;
    struct stat st;
    int fd = lens_file_open_read(dfd, e->d_name, LENS_ANY_UID, (off_t)sizeof(struct lens_live_page), &st, why,
                                 sizeof why);
    if (fd < 0) {
      struct stat lst;
      if (errno != ENOENT && fstatat(dfd, e->d_name, &lst, AT_SYMLINK_NOFOLLOW) == 0)
        refuse_once(dir, e->d_name, &lst, why);
      continue;
    }
    if ((size_t)st.st_size != sizeof(struct lens_live_page)) {
      /* A page being created is sized before it is renamed into place:
       * another size is another version or a forgery. */
      refuse_once(dir, e->d_name, &st, "not the size of a live page of this version");
      close(fd);
      continue;
    }
    struct live_proc *p = proc_for(s, (uint32_t)pid);
    if (!p) {
      close(fd);
      break;
    }
    if (p->dev != st.st_dev || p->ino != st.st_ino) { /* a new file: a new process with this pid */
      p->dev = st.st_dev, p->ino = st.st_ino;
      p->recent_have = 0;
    }
    int rc = copy_page(fd, p->page, &p->recent_have);
    close(fd);
    if (rc != 0) {
      p->recent_have = 0; /* whatever was copied is suspect: read it whole next time */
      p->dev = 0, p->ino = 0;
      continue; /* not seen: dropped below */
    }
    if (p->page->pid != (uint32_t)pid) continue;
    int owner_ok;
    int alive = page_alive(p->page, self_ns, now, st.st_uid, &owner_ok);
    if (!owner_ok) {
      refuse_once(dir, e->d_name, &st, "not owned by its process's user");
      continue;
    }
    int finished = p->page->state == LENS_LIVE_FINISHED;
    if ((!alive || finished) &&
        (now < p->page->updated_real_ns || now - p->page->updated_real_ns > (uint64_t)keep_s * 1000000000ull))
      continue; /* a dead process's page, older than keep_s */
    p->alive = alive && !finished;
    p->seen = 1;
  }
  closedir(d);
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (!s->procs[i].seen) {
      proc_drop(&s->procs[i]);
      continue;
    }
    s->procs[k++] = s->procs[i];
  }
  s->n = k;
  return 0;
}

void live_set_free(struct live_set *s) {
  for (size_t i = 0; i < s->n; i++) proc_drop(&s->procs[i]);
  free(s->procs);
  memset(s, 0, sizeof *s);
}
