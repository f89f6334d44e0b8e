/* `nccl-lens replay`: parse, run, print one summary line and where the
 * traces went. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lens_exe_dir.h"
#include "replay/replay.h"

#ifndef LENS_PLUGIN_BUILD_PATH
#define LENS_PLUGIN_BUILD_PATH "libnccl-profiler-lens.so"
#endif

/* mkdir -p, then a writable directory: the plugin would otherwise fail in
 * every process, say so in a WARN line the user may never see, and the
 * replay would exit 0 having written nothing. */
static int prepare_out(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return errno = ENAMETOOLONG, -1;
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
      *s = '/';
    }
  if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(p, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
  return access(p, W_OK | X_OK);
}

int lens_cmd_replay(int argc, char **argv) {
  struct lens_replay_opts o;
  lens_replay_opts_init(&o);
  /* The plugin beside the command (an install: bin/../lib), else the build tree's. */
  static char beside[4096];
  o.plugin = lens_lib_beside_exe("libnccl-profiler-lens.so", beside, sizeof beside) == 0 ? beside
                                                                                           : LENS_PLUGIN_BUILD_PATH;
  int rc = lens_replay_parse_args(argc, argv, &o);
  if (rc == 1) return 0;
  if (rc) return rc;
  if (o.out_dir && prepare_out(o.out_dir) != 0)
    return lens_cli_error("replay", "cannot write traces to --out %s: %s", o.out_dir, strerror(errno));
  struct lens_replay_result r;
  rc = lens_replay_run(&o, &r);
  if (rc == 0 && !o.quiet) {
    printf("replay: scenario %s, plugin API v%d, %d process(es), %ld calls, %ld KernelCh (%ld overrun), "
           "%d init failure(s), %d plugin WARN line(s)\n",
           o.scenario, r.api, r.processes, r.calls, r.kernel_ch, r.overruns, r.init_failures, r.warn_count);
    const char *out = o.out_dir ? o.out_dir : getenv("NCCL_LENS_OUTPUT_DIR");
    printf("replay: traces in %s (one nccl-lens-<host>-<pid>.lens per process)\n", out && *out ? out : ".");
  }
  return rc;
}
