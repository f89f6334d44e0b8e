/* The agent and top read pages other users may plant or change. Played
 * here: a FIFO named 1.live (hung both; top ignored SIGTERM), a page
 * truncated while read in a loop (SIGBUS under the old mapping), hostile
 * counts and names without terminators, a reused pid and a page of another
 * pid namespace (alive by pid + start ticks + pid namespace, not kill()),
 * a page of a live process owned by another user, and forged .sched pages
 * (not exported unless root's or ours). Also: a refresh copies only the
 * recent[] slots past its cursor. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lens_test_attack.h"
#include "../lens_test_tmp.h"
#include "agent_model.h"
#include "lens_safe_fs.h"
#include "live_read.h"

#define CLI LENS_BUILD_DIR "/bin/nccl-lens"

extern char **environ;
static char err[65536], out[262144];

static uint64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A well-formed page of this process (alive), one communicator, one series. */
static struct lens_live_page *make_page(void) {
  struct lens_live_page *p = calloc(1, sizeof *p);
  assert_non_null(p);
  p->magic = LENS_LIVE_MAGIC;
  p->version = LENS_LIVE_VERSION;
  p->size = sizeof *p;
  p->seq = 2;
  p->pid = (uint32_t)getpid();
  p->state = LENS_LIVE_RUNNING;
  p->proc_start_ticks = lens_proc_start_ticks(getpid());
  p->pidns = lens_proc_ns(0, "pid");
  p->updated_real_ns = p->start_real_ns = real_ns();
  snprintf(p->host, sizeof p->host, "h");
  p->n_comms = 1;
  p->comms[0] = (struct lens_live_comm){.comm_id = 77, .rank = 0, .nranks = 2, .nnodes = 1, .live = 1};
  snprintf(p->comms[0].name, sizeof p->comms[0].name, "c");
  p->n_series = 1;
  snprintf(p->series[0].func, sizeof p->series[0].func, "AllReduce");
  p->series[0].count = 5;
  return p;
}

static void put_page(const char *path, const struct lens_live_page *p) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, p, sizeof *p), (ssize_t)sizeof *p);
  close(fd);
}

static void page_path(char *out_path, size_t cap, const char *dir, uint32_t pid) {
  snprintf(out_path, cap, "%s/%u.live", dir, pid);
}

/* FIFOs as 1.live and 2.sched: agent --once and top end at once, saying
 * each refusal once; top also ends promptly on SIGTERM. */
static void test_fifo_pages(void **state) {
  (void)state;
  char dir[64], p[128];
  lens_test_tmpdir(dir, sizeof dir, "live-fifo");
  snprintf(p, sizeof p, "%s/1.live", dir);
  assert_int_equal(mkfifo(p, 0666), 0);
  snprintf(p, sizeof p, "%s/2.sched", dir);
  assert_int_equal(mkfifo(p, 0666), 0);
  double secs;
  int rc = lens_attack_run((char *[]){CLI, "agent", "--once", "--dir", dir, NULL}, NULL, 10000, err, sizeof err, out,
                           sizeof out, &secs);
  if (rc != 0 || secs > 5) print_error("agent rc=%d secs=%.1f stderr=[%s]\n", rc, secs, err);
  assert_int_equal(rc, 0);
  assert_true(secs < 5);
  assert_int_equal(lens_count_lines(err, "1.live: not a regular file"), 1);
  assert_int_equal(lens_count_lines(err, "2.sched: not a regular file"), 1);

  rc = lens_attack_run((char *[]){CLI, "top", "--dir", dir, "--period", "0.2", "--duration", "1", NULL}, NULL, 10000,
                       err, sizeof err, out, sizeof out, &secs);
  if (rc != 0 || secs > 4) print_error("top rc=%d secs=%.1f stderr=[%s]\n", rc, secs, err);
  assert_int_equal(rc, 0);
  assert_true(secs < 4);
  assert_int_equal(lens_count_lines(err, "1.live: not a regular file"), 1); /* once, not per redraw */

  /* Without --duration: SIGTERM ends it. */
  pid_t top = lens_attack_spawn_as(0, (char *[]){CLI, "top", "--dir", dir, "--period", "0.2", NULL}, environ);
  assert_true(top > 0);
  usleep(500000);
  double t0 = mono_s();
  kill(top, SIGTERM);
  int st = 0;
  pid_t w = 0;
  while ((w = waitpid(top, &st, WNOHANG)) == 0 && mono_s() - t0 < 3) usleep(10000);
  if (w == 0) lens_attack_reap(top);
  assert_int_equal(w, top);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A page truncated and restored in a loop while read: never SIGBUS (the
 * reader would die); copies are whole pages or none. top reads it too. */
static void test_truncated_page(void **state) {
  (void)state;
  char dir[64], p[128];
  lens_test_tmpdir(dir, sizeof dir, "live-trunc");
  struct lens_live_page *pg = make_page();
  page_path(p, sizeof p, dir, pg->pid);
  put_page(p, pg);
  pid_t churn = fork();
  if (churn == 0) {
    int fd = open(p, O_RDWR);
    for (;;) {
      if (ftruncate(fd, 4096) != 0) _exit(1);
      usleep(200);
      if (pwrite(fd, pg, sizeof *pg, 0) != (ssize_t)sizeof *pg) _exit(1);
      usleep(200);
    }
  }
  pid_t top = lens_attack_spawn_as(0, (char *[]){CLI, "top", "--dir", dir, "--period", "0.1", "--duration", "2", NULL},
                                   environ);
  struct live_set s = {0};
  int whole = 0, none = 0, bad = 0;
  double t0 = mono_s();
  /* Counted, not asserted, inside the loop: the churn and top are reaped
   * before any assertion can end the test. */
  while (mono_s() - t0 < 2.0) {
    bad += live_read_dir(dir, 300, &s) != 0;
    if (s.n == 1) {
      whole++;
      /* (Its series may be mid-rewrite by the churn, which keeps seq: only
       * the header, never truncated, is compared.) */
      bad += s.procs[0].page->magic != LENS_LIVE_MAGIC || s.procs[0].page->pid != (uint32_t)getpid();
    } else
      none++;
  }
  live_set_free(&s);
  lens_attack_reap(churn);
  int st = 0;
  double tw = mono_s();
  pid_t w = 0;
  while ((w = waitpid(top, &st, WNOHANG)) == 0 && mono_s() - tw < 10) usleep(10000);
  if (w == 0) lens_attack_reap(top);
  printf("  %d whole copies, %d refreshes without the page\n", whole, none);
  assert_int_equal(bad, 0);
  assert_int_equal(w, top);
  assert_true(whole > 0);
  assert_true(WIFEXITED(st)); /* not killed by SIGBUS */
  assert_int_equal(WEXITSTATUS(st), 0);
  free(pg);
}

/* Counts past the arrays, names without terminators, instances pointing
 * nowhere, a recent_total at the top of its range: bounded copies, and the
 * model folds them without reading out of bounds. */
static void test_hostile_counts_and_names(void **state) {
  (void)state;
  char dir[64], p[128];
  lens_test_tmpdir(dir, sizeof dir, "live-hostile");
  struct lens_live_page *pg = make_page();
  pg->n_comms = 100000;
  pg->n_series = 0xffffffffu;
  memset(pg->host, 'H', sizeof pg->host);
  for (int c = 0; c < LENS_LIVE_COMMS; c++) {
    memset(pg->comms[c].name, 'A', sizeof pg->comms[c].name);
    pg->comms[c].comm_id = 1000 + (uint64_t)c;
  }
  for (int s = 0; s < LENS_LIVE_SERIES; s++) {
    memset(pg->series[s].func, 'F', sizeof pg->series[s].func);
    memset(pg->series[s].algo, 'G', sizeof pg->series[s].algo);
    memset(pg->series[s].proto, 'P', sizeof pg->series[s].proto);
    pg->series[s].comm = 0xffff;
  }
  pg->recent_total = UINT64_MAX;
  for (int i = 0; i < LENS_LIVE_RECENT; i++)
    pg->recent[i] = (struct lens_live_instance){.comm_id = 1000, .seq = (uint64_t)i, .gpu_start_ns = 1,
                                                .gpu_stop_ns = 2, .series = 0xffff, .comm = 0xffff};
  page_path(p, sizeof p, dir, pg->pid);
  put_page(p, pg);

  struct lens_live_page *cp = calloc(1, sizeof *cp);
  assert_int_equal(live_read_page(p, cp), 0);
  assert_int_equal(cp->n_comms, LENS_LIVE_COMMS);
  assert_int_equal(cp->n_series, LENS_LIVE_SERIES);
  assert_true(strlen(cp->host) < sizeof cp->host);
  assert_true(strlen(cp->comms[63].name) < sizeof cp->comms[63].name);
  assert_true(strlen(cp->series[255].func) < sizeof cp->series[255].func);
  assert_true(strlen(cp->series[255].proto) < sizeof cp->series[255].proto);

  struct agent_model *m = calloc(1, sizeof *m);
  assert_int_equal(agent_model_refresh(m, dir, 300), 0);
  assert_int_equal(agent_model_refresh(m, dir, 300), 0);
  assert_int_equal(m->pages.n, 1);
  agent_model_free(m);
  free(m);

  /* The whole exposition through the CLI, too. */
  double secs;
  int rc = lens_attack_run((char *[]){CLI, "agent", "--once", "--dir", dir, NULL}, NULL, 20000, err, sizeof err, out,
                           sizeof out, &secs);
  assert_int_equal(rc, 0);
  free(cp);
  free(pg);
}

static int find_pid(const struct live_set *s, uint32_t pid) {
  for (size_t i = 0; i < s->n; i++)
    if (s->procs[i].page->pid == pid) return (int)i;
  return -1;
}

/* Alive by pid + start ticks + pid namespace: this process's page is
 * running; a page with our pid but another start is a dead process's (kept
 * while fresh, dropped after --keep); another namespace's page is judged by
 * its age; a running process's page owned by another user is dropped. */
static void test_alive_rule(void **state) {
  (void)state;
  char dir[64], p[128];
  struct live_set s = {0};
  uint64_t old = real_ns() - 1000ull * 1000000000ull;
  struct lens_live_page *pg = make_page();

  lens_test_tmpdir(dir, sizeof dir, "live-alive");
  page_path(p, sizeof p, dir, pg->pid);
  put_page(p, pg);
  assert_int_equal(live_read_dir(dir, 300, &s), 0);
  assert_int_equal(s.n, 1);
  assert_true(s.procs[0].alive);

  /* Reused pid: kill(pid, 0) would say alive; the start ticks say not. */
  pg->proc_start_ticks++;
  put_page(p, pg);
  assert_int_equal(live_read_dir(dir, 300, &s), 0);
  assert_int_equal(s.n, 1);
  assert_false(s.procs[0].alive);
  pg->updated_real_ns = old;
  put_page(p, pg);
  assert_int_equal(live_read_dir(dir, 300, &s), 0);
  assert_int_equal(s.n, 0); /* a dead process's page, older than --keep */

  /* Another pid namespace: fresh is running, old is gone. */
  pg->proc_start_ticks--;
  pg->pidns ^= 1;
  pg->updated_real_ns = real_ns();
  put_page(p, pg);
  assert_int_equal(live_read_dir(dir, 300, &s), 0);
  assert_int_equal(s.n, 1);
  assert_true(s.procs[0].alive);
  pg->updated_real_ns = old;
  put_page(p, pg);
  assert_int_equal(live_read_dir(dir, 300, &s), 0);
  assert_int_equal(find_pid(&s, pg->pid), -1);

  /* Our page, written by another user. */
  pg->pidns ^= 1;
  pg->updated_real_ns = real_ns();
  put_page(p, pg);
  assert_int_equal(lens_attack_give(p), 0);
  assert_int_equal(live_read_dir(dir, 300, &s), 0);
  assert_int_equal(s.n, 0);
  live_set_free(&s);
  free(pg);
}

/* top keeps each rank's previous sample apart (issue 26 item 4): a process
 * holding two ranks of one communicator, counters that never change. Keyed
 * by (pid, communicator) alone, the second rank's rate was its count minus
 * the first rank's (1.8e19 ops/s when that wrapped, a made-up rate when not).
 * Every row of every redraw after the first says 0.0 ops/s and keeps its 11
 * columns within 120. */
static void test_top_ranks_of_one_process(void **state) {
  (void)state;
  char dir[64], p[128];
  lens_test_tmpdir(dir, sizeof dir, "live-top-ranks");
  struct lens_live_page *pg = make_page();
  pg->n_comms = 2;
  pg->comms[1] = pg->comms[0];
  pg->comms[1].rank = 1;
  pg->n_series = 2;
  pg->series[1] = pg->series[0];
  pg->series[1].comm = 1;
  pg->series[0].count = 100, pg->series[0].bytes = 1 << 20;
  pg->series[1].count = 300, pg->series[1].bytes = 3 << 20;
  page_path(p, sizeof p, dir, pg->pid);
  put_page(p, pg);
  double secs;
  int rc = lens_attack_run((char *[]){CLI, "top", "--dir", dir, "--period", "0.2", "--duration", "1", NULL}, NULL,
                           10000, err, sizeof err, out, sizeof out, &secs);
  if (rc != 0) print_error("top rc=%d stderr=[%s]\n", rc, err);
  assert_int_equal(rc, 0);
  int frames = 0, rows = 0;
  char pid[16];
  snprintf(pid, sizeof pid, "%u ", pg->pid);
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    if (strstr(line, "\033[H")) frames++;
    if (strncmp(line, pid, strlen(pid))) continue;
    assert_true(strlen(line) <= 120);
    char rank[8], comm[32], ops[32], gbs[32], span[32], ex[32], wt[32], last[32], drops[32], st[32];
    unsigned upid;
    assert_int_equal(sscanf(line, "%u %7s %31s %31s %31s %31s %31s %31s %31s %31s %31s", &upid, rank, comm, ops, gbs,
                            span, ex, wt, last, drops, st),
                     11);
    rows++;
    if (frames < 2) continue; /* the first redraw has no previous sample: no rate */
    if (strcmp(ops, "0.0") || strcmp(gbs, "0.000"))
      print_error("rank %s of one process: %s ops/s, %s GB/s from counters that never changed\n", rank, ops, gbs);
    assert_string_equal(ops, "0.0");
    assert_string_equal(gbs, "0.000");
  }
  assert_true(frames >= 3);
  assert_true(rows >= 2 * frames);
  free(pg);
}

/* A refresh reads the header, the series and only the recent[] slots past
 * its cursor: a slot below it changed in the file stays as first copied. */
static void test_incremental_recent(void **state) {
  (void)state;
  char dir[64], p[128];
  lens_test_tmpdir(dir, sizeof dir, "live-incr");
  struct lens_live_page *pg = make_page();
  pg->recent_total = 10;
  for (int i = 0; i < 10; i++) pg->recent[i].seq = 100 + (uint64_t)i;
  page_path(p, sizeof p, dir, pg->pid);
  put_page(p, pg);
  struct live_set s = {0};
  assert_int_equal(live_read_dir(dir, 300, &s), 0);
  assert_int_equal(s.n, 1);
  assert_int_equal(s.procs[0].page->recent[3].seq, 103);
  /* Rewrite in place (same inode): slot 3 changed, two new slots. */
  pg->recent[3].seq = 999;
  pg->recent[10].seq = 110;
  pg->recent[11].seq = 111;
  pg->recent_total = 12;
  pg->seq += 2;
  int fd = open(p, O_WRONLY);
  assert_int_equal(pwrite(fd, pg, sizeof *pg, 0), (ssize_t)sizeof *pg);
  close(fd);
  assert_int_equal(live_read_dir(dir, 300, &s), 0);
  assert_int_equal(s.procs[0].page->recent_total, 12);
  assert_int_equal(s.procs[0].page->recent[11].seq, 111);
  assert_int_equal(s.procs[0].page->recent[3].seq, 103); /* not read again */
  live_set_free(&s);
  free(pg);
}

/* A .sched page of another user is a forgery: not counted, not exported;
 * root's is. */
static void test_forged_sched_page(void **state) {
  (void)state;
  char dir[64], p[128], text[512];
  lens_test_tmpdir(dir, sizeof dir, "live-sched");
  snprintf(p, sizeof p, "%s/4000.sched", dir);
  snprintf(text, sizeof text,
           "nccl-lens-sched-page 1\nhost h\npid 4000\nupdated_real_ns %llu\nmin_wait_ns 1\n"
           "thread 31337 31338 31338 2 9000000000 7 0 0 0 0\n",
           (unsigned long long)real_ns());
  FILE *f = fopen(p, "w");
  fputs(text, f);
  fclose(f);
  assert_int_equal(lens_attack_give(p), 0);

  struct agent_model *m = calloc(1, sizeof *m);
  agent_sched_refresh(m, dir, 300);
  assert_int_equal(m->n_sched, 0);
  double secs;
  int rc = lens_attack_run((char *[]){CLI, "agent", "--once", "--dir", dir, NULL}, NULL, 10000, err, sizeof err, out,
                           sizeof out, &secs);
  assert_int_equal(rc, 0);
  assert_null(strstr(out, "tid=\"31338\""));
  assert_int_equal(lens_count_lines(err, "4000.sched: owned by uid 4242"), 1);

  assert_int_equal(chown(p, 0, 0), 0);
  agent_sched_refresh(m, dir, 300);
  assert_int_equal(m->n_sched, 1);
  rc = lens_attack_run((char *[]){CLI, "agent", "--once", "--dir", dir, NULL}, NULL, 10000, err, sizeof err, out,
                       sizeof out, &secs);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, "tid=\"31338\""));
  agent_model_free(m);
  free(m);
}

int main(void) {
  if (geteuid() != 0) {
    printf("skip: these cases plant files as another user (uid %d) and need root\n", LENS_TEST_OTHER_UID);
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fifo_pages),         cmocka_unit_test(test_truncated_page),
      cmocka_unit_test(test_hostile_counts_and_names), cmocka_unit_test(test_alive_rule),
      cmocka_unit_test(test_incremental_recent), cmocka_unit_test(test_forged_sched_page),
      cmocka_unit_test(test_top_ranks_of_one_process),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
