/* lens-read-bench: events/s per core of the reader (bytes -> model) and of
 * `nccl-lens job` (docs/scale.md). Figures, not assertions.
 *
 *   lens-read-bench [--files-per-load N] [--decode-only | --columns] [--job PATH-TO-nccl-lens] [--job-args "..."] TRACE|DIR...
 *
 * Reader: the traces are read once first (page cache warm, so the disk is
 * not what is measured), then loaded into models of N files each (default 1:
 * one process's trace per model), one after the other on this thread; CPU
 * time from getrusage. --repeat R loads them R times and prints the fastest
 * pass (a shared machine's other load only ever adds time). Also prints the
 * share of that time spent reading the bytes (pread) alone.
 * --decode-only: the floor of any reader instead: the chunks walked through
 * one reused buffer, every CRC checked, packed chunks unzstd'ed and their
 * varint streams decoded in place (as the columns read them), every
 * record's header, id and time decoded, nothing built
 * (lens_cols_scan); also the bytes alone, read the same way (pread in 4 MiB
 * blocks into one buffer).
 * --columns: the bulk columnar reader (columns.h), N files a column set:
 * one set a pass, cleared for each group (lens_cols_clear), as a streaming
 * reader keeps it.
 * Job: runs the nccl-lens binary given with --job on the same traces
 * (--json to /dev/null) and prints wall time, CPU time over all its threads,
 * events per CPU second and its max RSS. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "columns.h"
#include "file_read.h"
#include "lensread.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
static double cpu_self(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
         (double)u.ru_stime.tv_usec / 1e6;
}

/* The bytes alone, as the bulk readers read them: pread in blocks into one buffer. */
static uint64_t read_blocks(const char *path) {
  static uint8_t *buf;
  const size_t block = 4u << 20;
  if (!buf && !(buf = malloc(block))) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uint64_t got = 0;
  ssize_t r;
  while ((r = pread(fd, buf, block, (off_t)got)) > 0) got += (uint64_t)r;
  close(fd);
  return got;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char **paths;
static size_t n_paths, cap_paths;
static void add_path(const char *p) {
  if (n_paths == cap_paths) {
    cap_paths = cap_paths ? cap_paths * 2 : 256;
    paths = realloc(paths, cap_paths * sizeof *paths);
    if (!paths) exit(1);
  }
  paths[n_paths++] = strdup(p);
}
static void add_arg(const char *a) {
  struct stat st;
  DIR *d = stat(a, &st) == 0 && S_ISDIR(st.st_mode) ? opendir(a) : NULL;
  if (!d) return add_path(a);
  size_t first = n_paths;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 6 || strcmp(de->d_name + l - 5, ".lens")) continue;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", a, de->d_name);
    add_path(buf);
  }
  closedir(d);
  qsort(paths + first, n_paths - first, sizeof *paths, cmp_str);
}

static int run_job(const char *exe, const char *extra, size_t *events) {
  (void)events;
  size_t argc = 0, cap = n_paths + 16;
  char **argv = calloc(cap, sizeof *argv);
  char *copy = extra ? strdup(extra) : NULL;
  argv[argc++] = (char *)exe;
  argv[argc++] = "job";
  argv[argc++] = "--json";
  argv[argc++] = "-o";
  argv[argc++] = "/dev/null";
  for (char *t = copy ? strtok(copy, " ") : NULL; t && argc < 12; t = strtok(NULL, " ")) argv[argc++] = t;
  for (size_t i = 0; i < n_paths; i++) argv[argc++] = paths[i];
  argv[argc] = NULL;
  double t0 = now();
  pid_t pid = fork();
  if (pid == 0) {
    execv(exe, argv);
    perror("execv");
    _exit(127);
  }
  int st = 0;
  struct rusage u;
  if (pid < 0 || wait4(pid, &st, 0, &u) < 0) return -1;
  double wall = now() - t0;
  double cpu = (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
               (double)u.ru_stime.tv_usec / 1e6;
  free(argv);
  free(copy);
  if (!WIFEXITED(st) || WEXITSTATUS(st)) {
    fprintf(stderr, "lens-read-bench: %s job failed (status %d)\n", exe, st);
    return -1;
  }
  printf("job:    %zu traces, %.2f s wall, %.2f s CPU (all threads), %.2f M events per CPU second, "
         "%.2f M events/s wall, max RSS %.0f MiB\n",
         n_paths, wall, cpu, (double)*events / cpu / 1e6, (double)*events / wall / 1e6, (double)u.ru_maxrss / 1024.0);
  return 0;
}

int main(int argc, char **argv) {
  size_t per = 1, repeat = 1;
  int decode_only = 0, columns = 0;
  const char *job = NULL, *job_args = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--files-per-load") && i + 1 < argc) per = (size_t)strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = (size_t)strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--decode-only")) decode_only = 1;
    else if (!strcmp(argv[i], "--columns")) columns = 1;
    else if (!strcmp(argv[i], "--job") && i + 1 < argc) job = argv[++i];
    else if (!strcmp(argv[i], "--job-args") && i + 1 < argc) job_args = argv[++i];
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      printf("usage: lens-read-bench [--files-per-load N] [--repeat R] [--decode-only | --columns] [--job NCCL-LENS] [--job-args \"ARGS\"] TRACE|DIR...\n");
      return 0;
    } else add_arg(argv[i]);
  }
  if (!n_paths || !per || !repeat) {
    fprintf(stderr, "lens-read-bench: no traces given\n");
    return 2;
  }
  /* As nccl-lens job does (job_cmd.c): big blocks from a heap that is kept,
   * so model after model reuses pages instead of faulting fresh mmaps in. */
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  char err[512];
  uint64_t bytes = 0;
  size_t events = 0, states = 0;
  /* Warm the page cache and time the bytes alone. */
  double c0 = cpu_self(), w0 = now();
  for (size_t i = 0; i < n_paths; i++) {
    uint8_t *d;
    size_t len;
    if (lens_read_regular_file(paths[i], UINT64_MAX, "trace", &d, &len, err, sizeof err)) {
      fprintf(stderr, "lens-read-bench: %s\n", err);
      return 1;
    }
    bytes += len;
    free(d);
  }
  double read_cpu = cpu_self() - c0, read_wall = now() - w0;
  double load_cpu = 0, blocks_cpu = 0, crc_cpu = 0, zstd_cpu = 0;
  struct lens_scan_counts sc = {0};
  for (size_t pass = 0; pass < repeat; pass++) {
    double pass_cpu = 0;
    events = states = 0;
    struct lens_cols *cols = NULL; /* --columns: one set a pass, cleared for each group of files */
    if (decode_only) {
      double a = cpu_self();
      for (size_t i = 0; i < n_paths; i++) (void)read_blocks(paths[i]);
      double b = cpu_self() - a;
      if (!pass || b < blocks_cpu) blocks_cpu = b;
      /* The stages apart: up to the CRCs, up to zstd. */
      for (int upto = LENS_SCAN_CRC; upto <= LENS_SCAN_ZSTD; upto++) {
        struct lens_scan_counts x = {0};
        a = cpu_self();
        for (size_t k = 0; k < n_paths; k++)
          if (lens_cols_scan(paths[k], upto, &x, err, sizeof err)) {
            fprintf(stderr, "lens-read-bench: %s\n", err);
            return 1;
          }
        b = cpu_self() - a;
        double *slot = upto == LENS_SCAN_CRC ? &crc_cpu : &zstd_cpu;
        if (!pass || b < *slot) *slot = b;
      }
    }
    for (size_t i = 0; i < n_paths; i += per) {
      size_t n = n_paths - i < per ? n_paths - i : per;
      double a = cpu_self();
      if (decode_only) {
        memset(&sc, 0, sizeof sc);
        for (size_t k = 0; k < n_paths; k++)
          if (lens_cols_scan(paths[k], LENS_SCAN_ALL, &sc, err, sizeof err)) {
            fprintf(stderr, "lens-read-bench: %s\n", err);
            return 1;
          }
        events = sc.starts;
        states = sc.states;
        pass_cpu += cpu_self() - a;
        break;
      }
      if (columns) {
        /* One column set for the pass (its first files allocate it),
         * cleared for each group of files, as a streaming reader keeps
         * it (lens_cols_clear). */
        if (!cols && !(cols = lens_cols_new())) return 1;
        lens_cols_clear(cols);
        for (size_t k = i; k < i + n; k++)
          if (lens_cols_read(cols, paths[k], err, sizeof err)) {
            fprintf(stderr, "lens-read-bench: %s\n", err);
            return 1;
          }
        events += lens_cols_events(cols);
        pass_cpu += cpu_self() - a;
        continue;
      }
      struct lens_model *m = lens_model_load((const char *const *)paths + i, n, err, sizeof err, NULL);
      if (!m) {
        fprintf(stderr, "lens-read-bench: %s\n", err);
        return 1;
      }
      events += m->n_events;
      states += m->n_states;
      lens_model_free(m);
      pass_cpu += cpu_self() - a;
    }
    if (cols) { /* counted: freeing it is part of the pass */
      double a = cpu_self();
      lens_cols_free(cols);
      pass_cpu += cpu_self() - a;
    }
    if (!pass || pass_cpu < load_cpu) load_cpu = pass_cpu;
  }
  if (decode_only) {
    printf("decode: %zu traces, %.1f MiB, %" PRIu64 " events (%" PRIu64 " stops, %" PRIu64
           " states), fastest of %zu passes (checksum %016" PRIx64 ")\n",
           n_paths, (double)bytes / 1048576.0, sc.starts, sc.stops, sc.states, repeat, sc.checksum);
    printf("decode: %.3f s CPU on one core: %.2f M events/s per core (%.0f MiB/s), walk + CRC + unzstd + decode, "
           "no model; the bytes alone (pread in 4 MiB blocks): %.3f s = %.0f%% of it\n",
           load_cpu, (double)events / load_cpu / 1e6, (double)bytes / 1048576.0 / load_cpu, blocks_cpu,
           100.0 * blocks_cpu / load_cpu);
    printf("decode: stages (each pass stops after one): bytes %.3f s, + chunk walk and CRC %.3f s, + zstd %.3f s, "
           "+ decode %.3f s\n",
           blocks_cpu, crc_cpu, zstd_cpu, load_cpu);
  } else {
    printf("%s: %zu traces, %.1f MiB, %zu events (+%zu states), %zu file(s) per %s, fastest of %zu passes\n",
           columns ? "columns" : "reader", n_paths, (double)bytes / 1048576.0, events, states, per,
           columns ? "column set" : "model", repeat);
    printf("%s: %.3f s CPU on one core: %.2f M events/s per core (%.0f MiB/s); the bytes alone (pread, warm "
           "cache): %.2f s = %.0f%% of it\n",
           columns ? "columns" : "reader", load_cpu, (double)events / load_cpu / 1e6,
           (double)bytes / 1048576.0 / load_cpu, read_cpu, 100.0 * read_cpu / load_cpu);
    (void)read_wall;
  }
  if (job) {
    if (run_job(job, job_args, &events)) return 1;
  }
  for (size_t i = 0; i < n_paths; i++) free(paths[i]);
  free(paths);
  return 0;
}
