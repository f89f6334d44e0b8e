/* Runs a job-* replay and `nccl-lens job --json` on its traces, and checks
 * the job view against the replay's per-instance ground truth. */
#ifndef NCCL_LENS_TESTS_JOB_TRUTH_H
#define NCCL_LENS_TESTS_JOB_TRUTH_H

#include <stddef.h>
#include <stdint.h>

struct job_check {
  size_t instances;       /* truth instances */
  size_t matched;         /* found in the job view with every rank */
  size_t withheld;        /* matched, but the view gave no execution (flag ends_apart or no_span): left out of
                           * every count below; allowed on an overloaded machine only (test_job_replay.c) */
  size_t exec_ok, wait_ok; /* within 1 % or 2 us / every rank within 2 us */
  size_t truth_last_x;    /* truth: the injected rank was last (arrival causes) */
  size_t named_right;     /* ... and the job view named it with the cause that really made it late */
  size_t injected_named;  /* ... named with the injected cause */
  size_t undecided;       /* ... named with cause "unknown" (the trace could not decide) */
  size_t undecided_coarse; /* ... of those, where the last rank's GPU clock map bound was >= a quarter of the wait:
                            * the trace really cannot tell a busy GPU from a late call (job.md) */
  size_t excess_off;      /* ... named with a stage (slow_enqueue, slow_launch, gpu_busy) whose "+X us" excess is
                           * not this instance's lateness: above the truth's max wait (+ 1 % or 2 us), or below half
                           * of it (docs/job.md: the stage explains at least half, and never more than all) */
  size_t quiet;           /* truth: no straggler (max wait below half the threshold) */
  size_t quiet_named;     /* ... yet the job view named a straggler cause (late rank) */
  size_t quiet_link;      /* ... or a slow link / starved proxy (real in the simulation when its proxies are slowed) */
  size_t link_named;      /* slow link: the right sender -> receiver named */
  size_t link_wrong;      /* ... another link named */
  size_t link_straggler;  /* ... neither, but the machine made a real straggler there (the truth's max wait at
                           * least the straggler threshold, max(20 us, 2 % of the execution)) and the view named
                           * the truth's last rank with a late-rank cause: slow links are judged only in instances
                           * without a straggler (docs/job.md "Causes"), so that is the right answer there */
  int top_straggler;      /* first of "stragglers" (-1 none) */
  char cause[32];         /* the truth's injected cause */
  int straggler, peer;    /* truth: injected rank, link receiver */
};

/* Runs `nccl-lens replay --scenario SC ...` into dir; job_check_dir runs
 * `nccl-lens job --json` on dir and checks it against the truth. 0 ok. */
int job_run_replay(const char *dir, const char *scenario, int nodes, int rpn, int iters, int delay_us);
/* The same with more replay options (e.g. "--kineto DIR"). */
int job_run_replay_with(const char *dir, const char *scenario, int nodes, int rpn, int iters, int delay_us,
                        const char *extra);
/* The replay's proxies and GPU clock maps are real threads on this machine:
 * with more than 3 runnable threads per CPU (other builds beside the tests)
 * a proxy stalls for tens of ms and its steps and notices stop meaning
 * anything; so too when job_run_replay measured other work on three
 * quarters of the CPUs during its replay. Then the rates that depend on
 * them are not asserted (said on stderr); the decomposition and "never a
 * wrong cause" always are. */
int job_machine_overloaded(void);
/* 1 when the 1-min load is below the CPU count and, if job_run_replay ran,
 * the rest of the machine used less than a quarter of its CPUs while the
 * last replay ran (asked before a replay, that is the previous one's): the
 * rates the issue asks for (>= 99 %) are asserted only then; else says so
 * on stderr. */
int job_machine_quiet(void);
/* The simulation injected what it says: the injected rank was last in >= 90 % of
 * the instances the view decomposed. Asked only where the machine is not
 * overloaded (job_machine_overloaded): beyond that, other ranks are
 * descheduled past the 20 ms injection (20 of 24 instances had the injected
 * rank last at load 10.7); the straggler ranking's top rank, which the tests
 * compare with the injected one whatever the load, still says the injected
 * rank caused the most waiting. 1 = it holds, or it is not asked (said on
 * stderr). */
int job_injection_held(const struct job_check *c);
/* Inputs other than the plugin's traces (torch.profiler Kineto files written by
 * `replay --kineto`): the communicator id the job view gives the truth
 * instance's communicator set (NULL: the truth's commId), and spans on the
 * host's clock (1: the simulated GPUs' drift is not in them). */
extern uint64_t (*job_truth_comm_of_set)(int set);
extern int job_truth_host_clock_spans;
/* more_truth: another host's truth file (its processes' GPU drifts), or NULL. */
int job_check_dir(const char *dir, const char *truth_path, const char *more_truth, struct job_check *c);

#endif
