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
  if (o.out_dir && lens_cli_make_dir(o.out_dir) != 0)
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
