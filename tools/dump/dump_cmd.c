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
#include "cli/opt.h"
#include "lens_safe_fs.h"
#include "nccl-lens/registry.h"

#define CMD "dump"

static void usage(FILE *f) {
  fprintf(f, "usage: nccl-lens dump [--registry-dir DIR] [--wait-s N] PID...|--all\n"
             "  Asks processes recording with NCCL_LENS_MODE=recorder to write their flight recorder as a .lens\n"
             "  file (in their NCCL_LENS_OUTPUT_DIR) now. --all: every process registered in the registry\n"
             "  directory (NCCL_LENS_REGISTRY_DIR, default " LENS_REGISTRY_DEFAULT_DESC "). Waits up to --wait-s\n"
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
  static char dflt_dir[512];
  if (!dir || !*dir) {
    lens_registry_default_dir(dflt_dir, sizeof dflt_dir);
    dir = dflt_dir;
  }
  long pids[256];
  int n = 0, all = 0;
  double wait_s = 5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    char *end;
    int r;
    if (lens_opt_flag(a, "--help", 'h')) {
      usage(stdout);
      return 0;
    } else if (lens_opt_flag(a, "--all", 0)) {
      all = 1;
    } else if ((r = lens_opt_val(CMD, &i, argc, argv, "--registry-dir", 0, "a directory", &v))) {
      if (r < 0) return 2;
      dir = v;
    } else if ((r = lens_opt_val(CMD, &i, argc, argv, "--wait-s", 0, "seconds", &v))) {
      if (r < 0 || lens_opt_num(v, 0, 3600, &wait_s))
        return r < 0 ? 2 : lens_cli_usage(CMD, "--wait-s wants seconds 0..3600, not '%s'", v);
    } else if (a[0] == '-') {
      return lens_cli_usage(CMD, "unknown option '%s'", a);
    } else {
      long p = strtol(a, &end, 10);
      if (*end || p <= 0) return lens_cli_usage(CMD, "'%s' is not a pid", a);
      if (n == 256) return lens_cli_usage(CMD, "at most 256 pids");
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
  if (!n && !all) return lens_cli_usage(CMD, "no pid given");
  if (!n) return lens_cli_error(CMD, "no process registered in %s", dir);
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
