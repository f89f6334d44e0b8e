/* `nccl-lens replay`: parse, run, print one summary line. */
#include <stdio.h>

#include "replay/replay.h"

#ifndef LENS_PLUGIN_BUILD_PATH
#define LENS_PLUGIN_BUILD_PATH "libnccl-profiler-lens.so"
#endif

int lens_cmd_replay(int argc, char **argv) {
  struct lens_replay_opts o;
  lens_replay_opts_init(&o);
  o.plugin = LENS_PLUGIN_BUILD_PATH;
  int rc = lens_replay_parse_args(argc, argv, &o);
  if (rc == 1) return 0;
  if (rc) return rc;
  struct lens_replay_result r;
  rc = lens_replay_run(&o, &r);
  if (rc == 0 && !o.quiet)
    printf("replay: scenario %s, plugin API v%d, %d process(es), %ld calls, %ld KernelCh (%ld overrun), "
           "%d init failure(s), %d plugin WARN line(s)\n",
           o.scenario, r.api, r.processes, r.calls, r.kernel_ch, r.overruns, r.init_failures, r.warn_count);
  return rc;
}
