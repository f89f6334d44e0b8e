/* nccl-lens replay: drives any NCCL profiler plugin .so with the call
 * sequences NCCL 2.28.9 makes (spec §1.2-§4, §7, §9), with real threads, a
 * simulated GPU clock per rank and a ground-truth JSON of what it did.
 * Public C API for tests and the demo; the CLI (replay_cmd.c) wraps it. */
#ifndef NCCL_LENS_REPLAY_H
#define NCCL_LENS_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* api: which ncclProfiler_vN symbol to drive. */
enum {
  LENS_REPLAY_API_NCCL2289 = 0, /* default: as NCCL 2.28.9 does, _v5 then _v4 */
  LENS_REPLAY_API_AUTO = -1,    /* as NCCL 2.31.2: _v7, _v6, _v5, _v4 */
  /* 4, 5, 6, 7: exactly that symbol (7: driven as NCCL 2.31.2) */
};

/* --straggler rotate: job-late-app makes rank (iteration mod ranks) late. */
#define LENS_REPLAY_STRAGGLER_ROTATE (-2)

struct lens_replay_opts {
  const char *plugin;   /* path (contains '/') or NCCL name rule: X -> libnccl-profiler-X.so */
  const char *scenario; /* allreduce (default), sendrecv, mixed, graph, pxn, starved, overrun, all */
  int ranks_per_node;   /* local ranks (fake GPUs) per process; default 2 */
  int nodes;            /* processes; > 1 forks one child per node; default 1 */
  int iters;            /* scenario iterations; default 3 */
  bool iters_given;     /* --iters was given (scenario all then runs each part that often) */
  int api;              /* see enum above, or 4/5/6/7 */
  const char *out_dir;  /* sets NCCL_LENS_OUTPUT_DIR before the plugin is loaded */
  const char *truth;    /* ground-truth JSON path, or NULL */
  uint64_t seed;        /* clock offsets, drifts, jitter; default 1 */
  bool no_finalize;     /* end without calling finalize (and without dlclose) */
  bool reload;          /* after the batched finalize: dlclose, re-dlopen, run once more */
  bool mask_change;     /* store new masks into the shared int between iterations */
  bool quiet;           /* no summary line on stdout */
  bool verbose;         /* print the plugin's INFO/WARN log lines on stderr */
  int hang_exit_ms;     /* hang-* scenarios: end without finalize this long after the hang (default 2000) */
  int hang_post_gap_ms; /* hang-* scenarios: the app thread pauses this long after posting each proxy op of the hung collective (0) */
  int hang_freeze_delay_ms; /* hang-proxy: the frozen rank's proxy does nothing this long from the hang (0) */
  /* job scenarios (job-*): */
  int straggler;        /* rank made late (or the slow link's sender); -1 = rank 1; LENS_REPLAY_STRAGGLER_ROTATE */
  int delay_us;         /* injected lateness; 0 = 3000 */
  /* --slow FUNC:FACTOR: every op of that func (e.g. "AllGather") works FACTOR
   * times longer on the GPU; a known change for `nccl-lens diff` to find */
  char slow_func[32];
  double slow_factor;   /* 0 = no slow function */
  int node;             /* -1: run every node; >= 0: run only this node of `nodes` (a "host") */
  const char *board;    /* with node >= 0: the file all hosts share to couple their GPUs */
  const char *kineto_dir; /* --kineto DIR: a torch.profiler (Kineto) JSON per simulated rank (rp_kineto.c) */
  bool kineto_2023;       /* --kineto-layout 2023: the pre-May-2024 layout (epoch us, no collective args, no Seq) */
};

struct lens_replay_result {
  int api;               /* version driven (4 to 7); 0 when nothing was loaded */
  int warn_count;        /* WARN lines the plugin logged, summed over processes */
  int init_failures;     /* init calls that returned non-zero */
  long calls;            /* plugin calls made (start+stop+record), summed over processes */
  long kernel_ch;        /* KernelCh events started */
  long overruns;         /* KernelCh that reported another item's timers */
  int processes;         /* processes that ran (nodes) */
};

void lens_replay_opts_init(struct lens_replay_opts *o);

/* Runs one replay. Returns 0 on success, 2 for bad options (message on
 * stderr), 1 when the plugin cannot be loaded or a child process failed. */
int lens_replay_run(const struct lens_replay_opts *o, struct lens_replay_result *res);

/* Parses the CLI options (argv[0] is the subcommand name). Returns 0, or 2
 * after printing a one-line error; 1 after printing --help. */
int lens_replay_parse_args(int argc, char **argv, struct lens_replay_opts *o);

#ifdef __cplusplus
}
#endif
#endif
