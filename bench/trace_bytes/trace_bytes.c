/* Bytes per event in the trace file: runs `nccl-lens replay --scenario S`
 * (the real plugin, simulated GPUs) once per NCCL_LENS_COMPRESS value, sums
 * the .lens files it wrote and divides by the events read back from them.
 * An event = one START with its STOP and STATEs (the unit of the "190 bytes
 * per event" of the fixed form). Prints; asserts nothing.
 *   lens-trace-bytes [--scenario all] [--iters N] [--cli PATH] [--keep DIR] */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lensread.h"

static int run(const char *cli, const char *scenario, int iters, const char *mode, const char *dir) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "rm -rf '%s' && mkdir -p '%s' && NCCL_LENS_COMPRESS=%s '%s' replay --scenario %s --iters %d --out '%s' "
           "--quiet >/dev/null",
           dir, dir, mode, cli, scenario, iters, dir);
  return system(cmd);
}

int main(int argc, char **argv) {
  const char *cli = LENS_BENCH_CLI_PATH, *scenario = "all", *keep = NULL;
  int iters = 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--scenario") && i + 1 < argc) scenario = argv[++i];
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--cli") && i + 1 < argc) cli = argv[++i];
    else if (!strcmp(argv[i], "--keep") && i + 1 < argc) keep = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--scenario all] [--iters N] [--cli PATH] [--keep DIR]\n", argv[0]);
      return 2;
    }
  }
  char base[256];
  if (keep) snprintf(base, sizeof base, "%s", keep);
  else snprintf(base, sizeof base, "/tmp/lens-trace-bytes.%d", (int)getpid());
  printf("replay --scenario %s --iters %d; bytes = the .lens files' sizes; event = a START with its STOP and STATEs\n",
         scenario, iters);
  printf("%-8s %12s %10s %10s %14s %16s\n", "COMPRESS", "bytes", "events", "records", "bytes/event", "bytes/record");
  const char *modes[] = {"none", "packed", "zstd"};
  for (int k = 0; k < 3; k++) {
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", base, modes[k]);
    if (run(cli, scenario, iters, modes[k], dir)) {
      fprintf(stderr, "replay failed (COMPRESS=%s)\n", modes[k]);
      return 1;
    }
    DIR *d = opendir(dir);
    if (!d) return 1;
    char *paths[256];
    size_t n = 0;
    uint64_t bytes = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
      size_t l = strlen(de->d_name);
      if (l < 5 || strcmp(de->d_name + l - 5, ".lens")) continue;
      char *p = malloc(strlen(dir) + l + 2);
      sprintf(p, "%s/%s", dir, de->d_name);
      struct stat st;
      if (!stat(p, &st)) bytes += (uint64_t)st.st_size;
      paths[n++] = p;
    }
    closedir(d);
    char err[512];
    struct lens_model *m = lens_model_load((const char *const *)paths, n, err, sizeof err, NULL);
    if (!m) {
      fprintf(stderr, "load: %s\n", err);
      return 1;
    }
    uint64_t stops = 0;
    for (size_t i = 0; i < m->n_events; i++) stops += m->events[i].stop_mono_ns != 0;
    uint64_t records = m->n_events + stops + m->n_states;
    printf("%-8s %12llu %10zu %10llu %14.1f %16.1f\n", modes[k], (unsigned long long)bytes, m->n_events,
           (unsigned long long)records, (double)bytes / (double)(m->n_events ? m->n_events : 1),
           (double)bytes / (double)(records ? records : 1));
    lens_model_free(m);
    for (size_t i = 0; i < n; i++) free(paths[i]);
    if (!keep) {
      char cmd[600];
      snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
      if (system(cmd)) {
      }
    }
  }
  if (!keep) rmdir(base);
  return 0;
}
