/* A stalled output file system must never hang the job (issue: "the job must
 * never wait for us"). A named pipe stands in for a hung NFS/Lustre mount:
 * with no reader, open() blocks; with a reader that never reads, write()
 * blocks once the pipe holds 64 KiB. The plugin creates its trace with
 * O_CREAT|O_EXCL|O_NOFOLLOW, so no FIFO can stand at the trace's name: the
 * test's open() (below) sends the plugin's open of <trace>.lens to the FIFO
 * <trace>.lens.fifo, with the kernel's own blocking. Through the ABI only, in forked
 * children (configuration is read once per process); the parent gives each
 * child a deadline and kills it if it hangs, which fails the test.
 *
 * Also: a full disk leaves countable gaps, and a header lost to a full disk
 * is written once there is room, with the SESSION and COMM records again. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <dlfcn.h>

#include "lensread.h"
#include "plugin_driver.h"
#include "trace_walk.h"

#define FLUSH_MS 300
/* Bounds for "returned promptly": far above the expected (µs for init, the
 * flush timeout for a finalize), far below "hung" (for ever). */
#define PROMPT_NS 2000000000ll
#define CHILD_DEADLINE_S 30

static int g_mask;
static char g_dir[256];

/* ---- the hung mount: the executable's open() comes first in the plugin's
 * symbol lookup (ENABLE_EXPORTS); a .lens path with a FIFO beside it
 * (<path>.fifo) opens that FIFO instead, as it is: blocking. ---- */
static int stall_redirect(const char *path, char *out, size_t cap) {
  size_t n = path ? strlen(path) : 0;
  if (n < 5 || strcmp(path + n - 5, ".lens") || snprintf(out, cap, "%s.fifo", path) >= (int)cap) return 0;
  struct stat st;
  return stat(out, &st) == 0 && S_ISFIFO(st.st_mode);
}

static int stall_open(const char *sym, const char *path, int flags, va_list ap) {
  int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, sym);
  mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
  char fifo[600];
  if (stall_redirect(path, fifo, sizeof fifo)) return real(fifo, flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW));
  return real(path, flags, mode);
}

int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int fd = stall_open("open", path, flags, ap);
  va_end(ap);
  return fd;
}

int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  int fd = stall_open("open64", path, flags, ap);
  va_end(ap);
  return fd;
}

/* ---- a slow file system: each writev of the process takes g_slow_writev_us
 * longer (0: as the kernel does). ---- */
static volatile int g_slow_writev_us;

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
  static ssize_t (*real)(int, const struct iovec *, int);
  if (!real) real = (ssize_t(*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
  if (g_slow_writev_us && fd > 2) usleep((useconds_t)g_slow_writev_us);
  return real(fd, iov, iovcnt);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void child_env(void) {
  setenv("NCCL_LENS_OUTPUT_DIR", g_dir, 1);
  setenv("NCCL_LENS_REGISTRY_DIR", g_dir, 1);
  setenv("NCCL_LENS_WRITER_PERIOD_US", "1000", 1);
  char v[16];
  snprintf(v, sizeof v, "%d", FLUSH_MS);
  setenv("NCCL_LENS_FLUSH_TIMEOUT_MS", v, 1);
  /* Fixed records: the volumes below (a 64 KiB pipe, a 96 KiB file limit)
   * are sized in bytes of the fixed form; the I/O paths are the same for
   * every NCCL_LENS_COMPRESS. */
  setenv("NCCL_LENS_COMPRESS", "none", 1);
}

/* Runs body in a child that ends with exit() (so the plugin's exit handler
 * runs); kills it after CHILD_DEADLINE_S. Returns its exit code, 200 when it
 * hung, 100+signal when it died. */
static int run_child(int (*body)(void)) {
  pid_t pid = fork();
  if (pid == 0) {
    child_env();
    exit(body());
  }
  int64_t deadline = now_ns() + (int64_t)CHILD_DEADLINE_S * 1000000000ll;
  int st;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (now_ns() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      fprintf(stderr, "child hung for %d s: the job would have hung\n", CHILD_DEADLINE_S);
      return 200;
    }
    usleep(10000);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void emit_colls(struct plugin *p, void *ctx, int n) {
  lens_nccl_descr_v5_t d;
  d5_coll(&d, NULL, "AllReduce");
  for (int i = 0; i < n; i++) {
    void *h = NULL;
    p->v5->startEvent(ctx, &h, &d);
    p->v5->stopEvent(h);
  }
}

struct emitter {
  struct plugin *p;
  void *ctx;
  int n;
};
static void *emit_thread(void *arg) {
  struct emitter *e = arg;
  emit_colls(e->p, e->ctx, e->n);
  return NULL;
}

static void make_fifo(void) {
  char path[600];
  trace_path_for(path, sizeof path - 5, g_dir, getpid());
  strcat(path, ".fifo"); /* stall_redirect sends the trace's open here */
  if (mkfifo(path, 0644) != 0) {
    perror("mkfifo");
    exit(90);
  }
}

/* init, events on two threads, finalize: each returns promptly although the
 * writer is stuck in open(). Returns 0 or a step number. */
static int one_cycle(struct plugin *p, uint64_t comm_id, int step, int writer_known_stuck) {
  void *ctx = NULL;
  int64_t t0 = now_ns();
  if (p->v5->init(&ctx, comm_id, &g_mask, "stall", 1, 1, 0, test_logger) || !ctx) return step + 1;
  if (now_ns() - t0 > PROMPT_NS) return step + 2;
  pthread_t th[2];
  struct emitter e = {p, ctx, 20000};
  for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, emit_thread, &e);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  t0 = now_ns();
  if (p->v5->finalize(ctx)) return step + 3;
  int64_t fin = now_ns() - t0;
  if (fin > (int64_t)FLUSH_MS * 1000000ll + PROMPT_NS) {
    fprintf(stderr, "finalize took %lld ms\n", (long long)(fin / 1000000));
    return step + 4;
  }
  /* The first close waits the timeout (the writer cannot finish: it is
   * blocked); once the writer is known to be stuck, later ones do not wait. */
  if (!writer_known_stuck && fin < (int64_t)FLUSH_MS * 1000000ll / 2) return step + 5;
  if (writer_known_stuck && fin > (int64_t)FLUSH_MS * 1000000ll / 2) {
    fprintf(stderr, "second finalize waited %lld ms\n", (long long)(fin / 1000000));
    return step + 6;
  }
  return 0;
}

/* ---- open() blocks for ever (a pipe nobody reads: a hung mount) ---- */
static int body_stalled_open(void) {
  make_fifo();
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 1;
  int rc = one_cycle(&p, 1, 10, 0);
  if (rc) return rc;
  if (test_log_count("did not finish within") != 1) return 20; /* logged once */
  rc = one_cycle(&p, 2, 30, 1); /* a new session while the writer is still stuck */
  if (rc) return rc;
  if (test_log_count("did not finish within") != 1) return 40; /* still once */
  return 0; /* exit(): the exit handler has no session to close */
}

static void test_stalled_open_never_blocks(void **state) {
  (void)state;
  make_tmp_dir(g_dir, sizeof g_dir, "stall-open");
  assert_int_equal(run_child(body_stalled_open), 0);
}

/* ---- exit without finalize while stalled: the exit handler waits at most
 * the flush timeout ---- */
static int body_exit_stalled(void) {
  make_fifo();
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 1;
  void *ctx = NULL;
  if (p.v5->init(&ctx, 7, &g_mask, "stall", 1, 1, 0, test_logger) || !ctx) return 2;
  emit_colls(&p, ctx, 1000);
  return 0; /* no finalize */
}

static void test_exit_while_stalled(void **state) {
  (void)state;
  make_tmp_dir(g_dir, sizeof g_dir, "stall-exit");
  int64_t t0 = now_ns();
  assert_int_equal(run_child(body_exit_stalled), 0);
  assert_true(now_ns() - t0 < (int64_t)FLUSH_MS * 1000000ll + 5 * PROMPT_NS);
}

/* ---- write() blocks (a full pipe), then the file system comes back: the
 * job was never held up, and the writer finishes the trace on its own ---- */
struct capture {
  int rfd;
  char out[512];
  int rc;
};
static void *capture_thread(void *arg) {
  struct capture *c = arg;
  int fd = open(c->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    c->rc = -1;
    return NULL;
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(c->rfd, buf, sizeof buf)) > 0)
    if (write(fd, buf, (size_t)n) != n) c->rc = -1;
  close(fd);
  return NULL;
}

static int body_stalled_write(void) {
  char path[512];
  trace_path_for(path, sizeof path, g_dir, getpid());
  make_fifo();
  int rfd = open(path, O_RDONLY | O_NONBLOCK); /* a reader that does not read yet */
  if (rfd < 0) return 1;
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 2;
  void *ctx = NULL;
  if (p.v5->init(&ctx, 3, &g_mask, "stall", 1, 1, 0, test_logger) || !ctx) return 3;
  emit_colls(&p, ctx, 20000); /* ~1.3 MB of records: far more than the pipe's 64 KiB */
  int64_t t0 = now_ns();
  while (now_ns() - t0 < 200000000ll) usleep(10000); /* the writer fills the pipe and blocks */
  t0 = now_ns();
  if (p.v5->finalize(ctx)) return 4;
  int64_t fin = now_ns() - t0;
  if (fin > (int64_t)FLUSH_MS * 1000000ll + PROMPT_NS) return 5;
  if (test_log_count("did not finish within") != 1) return 6;
  /* The mount comes back: read everything the writer still has to write. */
  struct capture c = {rfd, "", 0};
  snprintf(c.out, sizeof c.out, "%s/captured.lens", g_dir);
  fcntl(rfd, F_SETFL, 0);
  pthread_t th;
  pthread_create(&th, NULL, capture_thread, &c);
  pthread_join(th, NULL); /* EOF once the writer has closed the file: the session is complete */
  if (c.rc) return 7;
  struct trace_tally t;
  if (trace_walk(c.out, &t) != 0 || !t.ok_header) return 8;
  if (t.fini_reason[1] != 1) return 9; /* the writer wrote FINI(finalize) itself */
  if (t.bad_tail_bytes || t.seq_gaps) return 10;
  if (t.starts_by_type[LENS_T_COLL] != 20000) {
    fprintf(stderr, "coll starts %llu\n", (unsigned long long)t.starts_by_type[LENS_T_COLL]);
    return 11; /* nothing lost to the stall */
  }
  if (t.last_drops.ring_full || t.last_drops.write_errors) return 12;
  return 0;
}

static void test_stalled_write_recovers(void **state) {
  (void)state;
  make_tmp_dir(g_dir, sizeof g_dir, "stall-write");
  assert_int_equal(run_child(body_stalled_write), 0);
}

/* ---- a slow file system: finalize stops waiting, the process exits at
 * once, and the exit handler gives the writer one more bounded wait so the
 * trace still ends with its FINI. The parent is the slow reader. ---- */
static int g_to_parent[2], g_to_child[2];

static int body_slow_then_exit(void) {
  setenv("NCCL_LENS_FLUSH_TIMEOUT_MS", "2000", 1);
  make_fifo();
  char c = 'f';
  if (write(g_to_parent[1], &c, 1) != 1 || read(g_to_child[0], &c, 1) != 1) return 1; /* parent has the read end */
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 2;
  void *ctx = NULL;
  if (p.v5->init(&ctx, 8, &g_mask, "slow", 1, 1, 0, test_logger) || !ctx) return 3;
  emit_colls(&p, ctx, 20000);
  usleep(200000); /* the writer fills the pipe and blocks */
  if (p.v5->finalize(ctx)) return 4;
  if (test_log_count("did not finish within") != 1) return 5;
  c = 'd';
  if (write(g_to_parent[1], &c, 1) != 1) return 6; /* the parent starts reading now */
  return 0; /* and we exit at once */
}

static void test_exit_after_slow_finalize_completes_trace(void **state) {
  (void)state;
  make_tmp_dir(g_dir, sizeof g_dir, "stall-slow");
  assert_int_equal(pipe(g_to_parent), 0);
  assert_int_equal(pipe(g_to_child), 0);
  pid_t pid = fork();
  if (pid == 0) {
    child_env();
    exit(body_slow_then_exit());
  }
  char c;
  assert_int_equal(read(g_to_parent[0], &c, 1), 1);
  char path[512];
  trace_path_for(path, sizeof path, g_dir, pid);
  int rfd = open(path, O_RDONLY | O_NONBLOCK);
  assert_true(rfd >= 0);
  assert_int_equal(write(g_to_child[1], &c, 1), 1);
  assert_int_equal(read(g_to_parent[0], &c, 1), 1); /* finalize has returned */
  fcntl(rfd, F_SETFL, 0);
  struct capture cap = {rfd, "", 0};
  snprintf(cap.out, sizeof cap.out, "%s/captured.lens", g_dir);
  capture_thread(&cap); /* until the writer closes the file, or the child is gone */
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  struct trace_tally t;
  assert_int_equal(trace_walk(cap.out, &t), 0);
  assert_int_equal(t.fini_reason[1], 1); /* the end of the trace was written before the process ended */
  assert_int_equal(t.starts_by_type[LENS_T_COLL], 20000);
  close(rfd);
}

/* ---- a slow file system that keeps taking chunks: finalize waits for the
 * end of the trace although that takes several times the flush timeout (the
 * timeout bounds a wait without progress: a stalled mount, above), and the
 * trace is whole. Each chunk takes 60 ms; the burst's 15 or so chunks about
 * 0.9 s, against a timeout of 300 ms and a cap of 10 times it. ---- */
static int body_slow_progress(void) {
  g_slow_writev_us = 60000;
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 1;
  void *ctx = NULL;
  if (p.v5->init(&ctx, 9, &g_mask, "slowfs", 1, 1, 0, test_logger) || !ctx) return 2;
  emit_colls(&p, ctx, 8000); /* ~1 MB of fixed records: the ring holds them, the writer trails */
  int64_t t0 = now_ns();
  if (p.v5->finalize(ctx)) return 3;
  int64_t fin = now_ns() - t0;
  fprintf(stderr, "finalize waited %lld ms for a writer taking 60 ms a chunk (flush timeout %d ms)\n",
          (long long)(fin / 1000000), FLUSH_MS);
  if (test_log_count("did not finish within") != 0) return 4; /* it did not give up */
  if (fin < (int64_t)FLUSH_MS * 1000000ll) return 5; /* the backlog really outlasted the timeout */
  char path[512];
  trace_path_for(path, sizeof path, g_dir, getpid());
  struct trace_tally t;
  if (trace_walk(path, &t) != 0 || !t.ok_header) return 6;
  if (t.fini_reason[1] != 1) return 7; /* finalize returned after the FINI was written */
  if (t.starts_by_type[LENS_T_COLL] != 8000) {
    fprintf(stderr, "coll starts %llu\n", (unsigned long long)t.starts_by_type[LENS_T_COLL]);
    return 8;
  }
  if (t.last_drops.ring_full || t.last_drops.write_errors) return 9;
  g_slow_writev_us = 0;
  return 0;
}

static void test_slow_fs_gets_whole_trace(void **state) {
  (void)state;
  make_tmp_dir(g_dir, sizeof g_dir, "stall-slowfs");
  assert_int_equal(run_child(body_slow_progress), 0);
}

/* ---- a disk that stays full: losses show as gaps in the chunk numbers,
 * which the reader reports even when the DROPS chunk is lost too ---- */
static int body_disk_stays_full(void) {
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit rl = {64 * 1024, 64 * 1024};
  setrlimit(RLIMIT_FSIZE, &rl);
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 1;
  void *ctx = NULL;
  if (p.v5->init(&ctx, 4, &g_mask, "full", 1, 1, 0, test_logger) || !ctx) return 2;
  for (int k = 0; k < 50; k++) {
    emit_colls(&p, ctx, 200);
    usleep(2000);
  }
  if (p.v5->finalize(ctx)) return 3;
  return 0;
}

static void test_disk_full_gaps_are_counted(void **state) {
  (void)state;
  make_tmp_dir(g_dir, sizeof g_dir, "stall-full");
  pid_t pid = fork();
  if (pid == 0) {
    child_env();
    exit(body_disk_stays_full());
  }
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  char path[512];
  trace_path_for(path, sizeof path, g_dir, pid);
  const char *paths[] = {path};
  char err[256];
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof err, NULL);
  assert_non_null(m);
  assert_true(m->files[0].lost_chunks > 0); /* the loss is visible, whatever DROPS says */
  lens_model_free(m);
}

/* ---- the disk is full when the trace is opened, and has room later: the
 * header is retried, SESSION and COMM are written again, the events are
 * attributed to their communicator ---- */
static int body_header_later(void) {
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit rl = {0, RLIM_INFINITY};
  setrlimit(RLIMIT_FSIZE, &rl);
  struct plugin p;
  if (plugin_open(&p, plugin_path())) return 1;
  void *ctx = NULL;
  if (p.v5->init(&ctx, 5, &g_mask, "later", 1, 1, 0, test_logger) || !ctx) return 2;
  /* wait until the writer has failed to write the header and SESSION */
  int64_t t0 = now_ns();
  while (test_log_count("writing the header") == 0)
    if (now_ns() - t0 > 20 * 1000000000ll) return 3;
    else usleep(1000);
  rl.rlim_cur = RLIM_INFINITY; /* space comes back */
  setrlimit(RLIMIT_FSIZE, &rl);
  emit_colls(&p, ctx, 500);
  if (p.v5->finalize(ctx)) return 4;
  return 0;
}

static void test_header_written_when_space_returns(void **state) {
  (void)state;
  make_tmp_dir(g_dir, sizeof g_dir, "stall-hdr");
  pid_t pid = fork();
  if (pid == 0) {
    child_env();
    exit(body_header_later());
  }
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  char path[512];
  trace_path_for(path, sizeof path, g_dir, pid);
  const char *paths[] = {path};
  char err[256];
  struct lens_model *m = lens_model_load(paths, 1, err, sizeof err, NULL);
  if (!m) fprintf(stderr, "load: %s\n", err);
  assert_non_null(m); /* a header: not "bad magic" */
  assert_true(m->files[0].lost_chunks >= 1);
  assert_true(m->files[0].clean_end);
  assert_int_equal(m->n_comms, 1); /* COMM written again */
  assert_string_equal(m->comms[0].name, "later");
  assert_int_equal(m->procs[0].pid, (uint32_t)pid); /* SESSION written again */
  size_t colls = 0;
  for (size_t i = 0; i < m->n_events; i++)
    if (m->events[i].type == LENS_T_COLL && m->events[i].comm == 0) colls++;
  assert_int_equal(colls, 500);
  lens_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stalled_open_never_blocks),
      cmocka_unit_test(test_exit_while_stalled),
      cmocka_unit_test(test_stalled_write_recovers),
      cmocka_unit_test(test_exit_after_slow_finalize_completes_trace),
      cmocka_unit_test(test_slow_fs_gets_whole_trace),
      cmocka_unit_test(test_disk_full_gaps_are_counted),
      cmocka_unit_test(test_header_written_when_space_returns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
