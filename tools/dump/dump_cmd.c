/* nccl-lens dump PID...|--all [--registry-dir DIR] [--wait-s N]: asks
 * processes running the plugin in recorder mode (NCCL_LENS_MODE=recorder)
 * to write their flight recorder now. A request is a file
 * <registry_dir>/<pid>.dump that the plugin's writer thread polls and
 * removes: no signal, which NCCL or the application may own. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "nccl-lens/registry.h"

#define CMD "dump"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens dump [--registry-dir DIR] [--wait-s N] PID...|--all\n"
             "  Asks processes recording with NCCL_LENS_MODE=recorder to write their flight recorder as a .lens\n"
             "  file (in their NCCL_LENS_OUTPUT_DIR) now. --all: every process registered in the registry\n"
             "  directory (NCCL_LENS_REGISTRY_DIR, default " LENS_REGISTRY_DEFAULT_DIR "). Waits up to --wait-s\n"
             "  seconds (5) for each process to take the request; exit status 1 if one did not.\n");
}

static int request(const char *dir, long pid) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%ld.dump", dir, pid);
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return lens_cli_error(CMD, "cannot write %s: %s", path, strerror(errno));
  close(fd);
  return 0;
}

static int taken(const char *dir, long pid) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%ld.dump", dir, pid);
  return access(path, F_OK) != 0;
}

int lens_cmd_dump(int argc, char **argv) {
  const char *dir = getenv("NCCL_LENS_REGISTRY_DIR");
  if (!dir || !*dir) dir = LENS_REGISTRY_DEFAULT_DIR;
  long pids[256];
  int n = 0, all = 0;
  double wait_s = 5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    char *end;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--all")) {
      all = 1;
    } else if (!strcmp(a, "--registry-dir") && i + 1 < argc) {
      dir = argv[++i];
    } else if (!strcmp(a, "--wait-s") && i + 1 < argc) {
      wait_s = strtod(argv[++i], &end);
      if (*end || wait_s < 0 || wait_s > 3600) return lens_cli_error(CMD, "--wait-s: '%s' is not 0..3600", argv[i]);
    } else {
      long p = strtol(a, &end, 10);
      if (*end || p <= 0) return lens_cli_error(CMD, "'%s' is not a pid (try --help)", a);
      if (n == 256) return lens_cli_error(CMD, "at most 256 pids");
      pids[n++] = p;
    }
  }
  if (all) {
    DIR *d = opendir(dir);
    if (!d) return lens_cli_error(CMD, "cannot read %s: %s", dir, strerror(errno));
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
      char *end;
      long p = strtol(de->d_name, &end, 10);
      if (p > 0 && !strcmp(end, ".reg")) pids[n++] = p;
    }
    closedir(d);
  }
  if (!n) return lens_cli_error(CMD, all ? "no process registered in %s" : "no pid given (try --help)", dir);
  for (int i = 0; i < n; i++)
    if (request(dir, pids[i])) return 1;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int left = n;
  while (left) {
    left = 0;
    for (int i = 0; i < n; i++) left += !taken(dir, pids[i]);
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (!left || (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= wait_s) break;
    usleep(20000);
  }
  int rc = 0;
  for (int i = 0; i < n; i++) {
    int ok = taken(dir, pids[i]);
    printf("pid %ld: %s\n", pids[i], ok ? "dump requested, taken" : "request not taken (not in recorder mode, or gone)");
    rc |= !ok;
  }
  return rc;
}
