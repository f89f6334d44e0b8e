/* The flight recorder's memory against its bound. For each
 * NCCL_LENS_RECORDER_SIZE, runs `nccl-lens replay --scenario S --iters N
 * --no-finalize` (the real plugin, as fast as the replay goes) in recorder
 * mode; the process exits without finalize, so the recorder dumps its store
 * at exit, with a NOTE giving the store's bytes (payloads plus the
 * allocator's bytes per chunk), its peak and its bound. Also prints the
 * process's peak RSS (getrusage of the replay) against the same replay in
 * trace mode writing to /dev/shm: the difference is what the recorder holds
 * in memory, seen from outside. Prints; asserts nothing.
 *   lens-recorder-mem [--scenario all] [--iters N] [--sizes 1M,4M,16M,64M] [--cli PATH] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lensread.h"

/* Runs cmd through the shell in a fresh child; returns the peak RSS (KiB)
 * of the processes it waited for, -1 on failure. */
static long run_rss(const char *cmd) {
  int fd[2];
  if (pipe(fd)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    int rc = system(cmd);
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    long v = rc == 0 ? ru.ru_maxrss : -1;
    if (write(fd[1], &v, sizeof v) != sizeof v) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  long v = -1;
  if (read(fd[0], &v, sizeof v) != sizeof v) v = -1;
  close(fd[0]);
  waitpid(pid, NULL, 0);
  return v;
}

static unsigned long long parse_size(const char *s) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end == 'K' || *end == 'k') v <<= 10;
  else if (*end == 'M' || *end == 'm') v <<= 20;
  else if (*end == 'G' || *end == 'g') v <<= 30;
  return v;
}

int main(int argc, char **argv) {
  const char *cli = LENS_BENCH_CLI_PATH, *scenario = "all", *sizes = "1M,4M,16M,64M";
  int iters = 300;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--scenario") && i + 1 < argc) scenario = argv[++i];
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes = argv[++i];
    else if (!strcmp(argv[i], "--cli") && i + 1 < argc) cli = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--scenario all] [--iters N] [--sizes 1M,4M,16M,64M] [--cli PATH]\n", argv[0]);
      return 2;
    }
  }
  char base[128], cmd[2048];
  snprintf(base, sizeof base, "/dev/shm/lens-recorder-mem.%d", (int)getpid());
  snprintf(cmd, sizeof cmd,
           "rm -rf %s/t && mkdir -p %s/t && NCCL_LENS_MODE=trace '%s' replay --scenario %s --iters %d --no-finalize "
           "--out %s/t --quiet >/dev/null 2>&1",
           base, base, cli, scenario, iters, base);
  long rss_trace = run_rss(cmd);
  unsigned long long trace_bytes = 0;
  {
    DIR *d;
    char dir[200];
    snprintf(dir, sizeof dir, "%s/t", base);
    if ((d = opendir(dir))) {
      struct dirent *de;
      char p[600];
      while ((de = readdir(d)))
        if (strstr(de->d_name, ".lens")) {
          FILE *f;
          snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
          if ((f = fopen(p, "rb"))) {
            fseek(f, 0, SEEK_END);
            trace_bytes += (unsigned long long)ftell(f);
            fclose(f);
          }
        }
      closedir(d);
    }
  }
  printf("replay --scenario %s --iters %d --no-finalize, NCCL_LENS_COMPRESS as set (default zstd); the whole trace "
         "(trace mode) = %llu bytes, peak RSS %ld KiB\n",
         scenario, iters, trace_bytes, rss_trace);
  printf("%-10s %12s %12s %8s %12s %12s %12s %10s %12s\n", "SIZE", "store", "peak", "peak/SIZE", "evicted rec",
         "dump bytes", "dump events", "peak RSS", "RSS-trace");
  char list[256];
  snprintf(list, sizeof list, "%s", sizes);
  for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
    unsigned long long bound = parse_size(tok);
    snprintf(cmd, sizeof cmd,
             "rm -rf %s/r && mkdir -p %s/r && NCCL_LENS_MODE=recorder NCCL_LENS_RECORDER_SIZE=%s '%s' replay "
             "--scenario %s --iters %d --no-finalize --out %s/r --quiet >/dev/null 2>&1",
             base, base, tok, cli, scenario, iters, base);
    long rss = run_rss(cmd);
    char dir[200];
    snprintf(dir, sizeof dir, "%s/r", base);
    DIR *d = opendir(dir);
    char *paths[64];
    size_t n = 0;
    unsigned long long dump_bytes = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) && n < 64) {
      if (!strstr(de->d_name, ".lens")) continue;
      paths[n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
      sprintf(paths[n], "%s/%s", dir, de->d_name);
      FILE *f = fopen(paths[n], "rb");
      if (f) {
        fseek(f, 0, SEEK_END);
        dump_bytes += (unsigned long long)ftell(f);
        fclose(f);
      }
      n++;
    }
    if (d) closedir(d);
    unsigned long long store = 0, peak = 0, evicted = 0;
    size_t events = 0;
    char err[256];
    struct lens_model *m = n ? lens_model_load((const char *const *)paths, n, err, sizeof err, NULL) : NULL;
    if (m) {
      events = m->n_events;
      for (size_t i = 0; i < m->n_notes; i++) { /* one dump per process: the largest store */
        const char *t = m->notes[i].text;
        unsigned long long b, p, bd, c, ec, er;
        const char *s = t ? strstr(t, "(store: ") : NULL;
        if (s && sscanf(s, "(store: %llu bytes, peak %llu, bound %llu; %llu chunks, %llu evicted with %llu", &b, &p,
                        &bd, &c, &ec, &er) == 6) {
          if (p > peak) peak = p;
          if (b > store) store = b;
          evicted += er;
        }
      }
      lens_model_free(m);
    }
    for (size_t i = 0; i < n; i++) free(paths[i]);
    printf("%-10s %12llu %12llu %7.1f%% %12llu %12llu %12zu %10ld %12ld\n", tok, store, peak,
           bound ? 100.0 * (double)peak / (double)bound : 0.0, evicted, dump_bytes, events, rss,
           rss >= 0 && rss_trace >= 0 ? rss - rss_trace : 0);
    fflush(stdout);
  }
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  if (system(cmd)) {
  }
  printf("store/peak: the recorder's own count (payload + %s per chunk); RSS in KiB (getrusage of the replay)\n",
         "the allocator's bytes");
  return 0;
}
