/* Command-line options of `nccl-lens replay`. Kept apart from the command
 * so tests can parse without the CLI. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay.h"

static const char usage[] =
    "usage: nccl-lens replay [--plugin PATH|NAME] [--scenario NAME] [--ranks-per-node N] [--nodes N]\n"
    "                        [--iters N] [--api 4|5|6|7|auto] [--out DIR] [--truth FILE] [--seed N]\n"
    "                        [--no-finalize] [--reload] [--mask-change] [--quiet] [--verbose]\n"
    "                        [--hang-exit-after SECONDS] [--hang-post-gap-ms N] [--hang-freeze-delay-ms N]\n"
    "                        [--straggler RANK] [--delay-us N]\n"
    "                        [--node I --board FILE] [--slow FUNC:FACTOR] [--kineto DIR [--kineto-layout L]]\n"
    "Drives a profiler plugin exactly as NCCL 2.28.9 would (2.31.2 with ncclProfiler_v7), without a GPU.\n"
    "  --plugin      a path, or a name X for libnccl-profiler-X.so (default: the lens plugin of this build)\n"
    "  --scenario    allreduce (default), sendrecv, mixed, graph, pxn, starved, overrun, tagged, symmetric,\n"
    "                phases, all; ce (copy-engine collectives: --api 6, 7 or auto);\n"
    "                hang-missing, hang-proxy, hang-graph (a collective that never completes);\n"
    "                job-none, job-late-app, job-slow-launch, job-gpu-busy, job-slow-link,\n"
    "                job-starved-proxy (coupled GPUs); net-even, net-slow-link, net-gpu-bound, net-slow-recv, net-ib\n"
    "  --hang-exit-after  hang scenarios: end without finalize, as a killed job, this long after the hang (2);\n"
    "                hang-proxy: after the freeze, and once the trace shows it (docs/replay.md)\n"
    "  --hang-post-gap-ms hang scenarios: pause after posting each proxy op of the hung collective, as a\n"
    "                descheduled host thread (0..1000, default 0)\n"
    "  --hang-freeze-delay-ms hang-proxy: the frozen rank's proxy does nothing for N ms from the hang, as a\n"
    "                descheduled thread, so it freezes late (0..10000, default 0; over 5000 it never does)\n"
    "  --straggler   job-*: the late rank, or the slow link's sender (default 1); --delay-us its lateness;\n"
    "                'rotate': job-late-app makes rank (iteration mod ranks) late (every host is late sometimes)\n"
    "  --node I      run only node I of --nodes as one \"host\"; --board FILE couples the hosts' GPUs\n"
    "  --slow F:X    every op of func F (AllReduce, AllGather, ...) works X times longer (0.1..100) on the GPU\n"
    "  --api         default: as NCCL 2.28.9 (ncclProfiler_v5, then _v4); auto: as NCCL 2.31.2 (_v7, _v6, ...)\n"
    "  --out DIR     sets NCCL_LENS_OUTPUT_DIR for the plugin\n"
    "  --truth FILE  ground-truth JSON of what the driver did (docs/replay.md)\n"
    "  --kineto DIR  also write each simulated rank's torch.profiler (Kineto) trace, DIR/rank-R.json\n"
    "                (docs/kineto-import.md); --kineto-layout 2024 (default: baseTimeNanoseconds,\n"
    "                collective args, Seq) or 2023 (epoch us, no collective args, no Seq)\n";

static int bad(const char *fmt, const char *arg) {
  fprintf(stderr, "nccl-lens replay: ");
  fprintf(stderr, fmt, arg);
  fputs(" (try 'nccl-lens replay --help')\n", stderr);
  return 2;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int lens_replay_parse_args(int argc, char **argv, struct lens_replay_opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    long x;
    /* --name=VALUE: the value is in this argument; the branches below step
     * over a separate value, which is undone after them. */
    char name[64];
    const char *eq = !strncmp(a, "--", 2) ? strchr(a, '=') : NULL;
    int i0 = i;
    if (eq && (size_t)(eq - a) < sizeof name) {
      memcpy(name, a, (size_t)(eq - a));
      name[eq - a] = 0;
      a = name, v = eq + 1;
    } else {
      eq = NULL;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage, stdout);
      return 1;
    } else if (!strcmp(a, "--no-finalize")) {
      o->no_finalize = true;
    } else if (!strcmp(a, "--reload")) {
      o->reload = true;
    } else if (!strcmp(a, "--mask-change")) {
      o->mask_change = true;
    } else if (!strcmp(a, "--quiet")) {
      o->quiet = true;
    } else if (!strcmp(a, "--verbose")) {
      o->verbose = true;
    } else if (!v && a[0] == '-' && a[1] == '-') {
      return bad("option %s needs a value", a);
    } else if (!strcmp(a, "--plugin")) {
      o->plugin = v, i++;
    } else if (!strcmp(a, "--scenario")) {
      o->scenario = v, i++;
    } else if (!strcmp(a, "--out")) {
      if (!*v) return bad("--out wants a directory, not '%s'", v);
      o->out_dir = v, i++;
    } else if (!strcmp(a, "--truth")) {
      o->truth = v, i++;
    } else if (!strcmp(a, "--kineto")) {
      if (!*v) return bad("--kineto wants a directory, not '%s'", v);
      o->kineto_dir = v, i++;
    } else if (!strcmp(a, "--kineto-layout")) {
      if (strcmp(v, "2024") && strcmp(v, "2023")) return bad("--kineto-layout wants 2024 or 2023, not '%s'", v);
      o->kineto_2023 = !strcmp(v, "2023"), i++;
    } else if (!strcmp(a, "--ranks-per-node")) {
      if (parse_int(v, 1, 8, &x)) return bad("--ranks-per-node: '%s' is not 1..8", v);
      o->ranks_per_node = (int)x, i++;
    } else if (!strcmp(a, "--nodes")) {
      if (parse_int(v, 1, 16, &x)) return bad("--nodes: '%s' is not 1..16", v);
      o->nodes = (int)x, i++;
    } else if (!strcmp(a, "--iters")) {
      if (parse_int(v, 1, 1000, &x)) return bad("--iters: '%s' is not 1..1000", v);
      o->iters = (int)x, o->iters_given = true, i++;
    } else if (!strcmp(a, "--hang-exit-after")) {
      char *end;
      errno = 0;
      double s = strtod(v, &end);
      if (errno || end == v || *end || s <= 0 || s > 3600) return bad("--hang-exit-after: '%s' is not 0..3600 s", v);
      o->hang_exit_ms = (int)(s * 1000 + 0.5), i++;
    } else if (!strcmp(a, "--hang-post-gap-ms")) {
      long x;
      if (parse_int(v, 0, 1000, &x)) return bad("--hang-post-gap-ms: '%s' is not 0..1000", v);
      o->hang_post_gap_ms = (int)x, i++;
    } else if (!strcmp(a, "--hang-freeze-delay-ms")) {
      long x;
      if (parse_int(v, 0, 10000, &x)) return bad("--hang-freeze-delay-ms: '%s' is not 0..10000", v);
      o->hang_freeze_delay_ms = (int)x, i++;
    } else if (!strcmp(a, "--seed")) {
      char *end;
      errno = 0;
      unsigned long long s = strtoull(v, &end, 0);
      if (errno || end == v || *end) return bad("--seed: '%s' is not a number", v);
      o->seed = s, i++;
    } else if (!strcmp(a, "--straggler") && v && !strcmp(v, "rotate")) {
      o->straggler = LENS_REPLAY_STRAGGLER_ROTATE, i++;
    } else if (!strcmp(a, "--straggler")) {
      if (parse_int(v, 0, 127, &x)) return bad("--straggler: '%s' is not a rank 0..127 or 'rotate'", v);
      o->straggler = (int)x, i++;
    } else if (!strcmp(a, "--delay-us")) {
      if (parse_int(v, 1, 1000000, &x)) return bad("--delay-us: '%s' is not 1..1000000", v);
      o->delay_us = (int)x, i++;
    } else if (!strcmp(a, "--slow")) {
      const char *colon = strchr(v, ':');
      char *end;
      double f = colon ? strtod(colon + 1, &end) : 0;
      if (!colon || colon == v || (size_t)(colon - v) >= sizeof o->slow_func || *end || !(f >= 0.1 && f <= 100))
        return bad("--slow: '%s' is not FUNC:FACTOR (e.g. AllGather:2, factor 0.1..100)", v);
      memcpy(o->slow_func, v, (size_t)(colon - v));
      o->slow_func[colon - v] = 0;
      o->slow_factor = f, i++;
    } else if (!strcmp(a, "--node")) {
      if (parse_int(v, 0, 15, &x)) return bad("--node: '%s' is not 0..15", v);
      o->node = (int)x, i++;
    } else if (!strcmp(a, "--board")) {
      o->board = v, i++;
    } else if (!strcmp(a, "--api")) {
      if (!strcmp(v, "auto")) o->api = LENS_REPLAY_API_AUTO;
      else if (!parse_int(v, 4, 7, &x)) o->api = (int)x;
      else return bad("--api: '%s' is not 4, 5, 6, 7 or auto", v);
      i++;
    } else {
      return bad("unknown option '%s'", a);
    }
    if (eq && i == i0) return bad("%s takes no value", a);
    if (eq) i = i0;
  }
  return 0;
}
