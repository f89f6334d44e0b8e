/* The spot where the scheduler probe joins the demo. The eBPF engineer
 * implements these (tools/sched/ or tools/demo/demo_sched.c); while they are
 * absent (weak, NULL) the demo runs without a probe.
 *
 * lens_demo_sched_start: if the probe can run here (privileges, BTF), start
 * it writing into dir and return 0; otherwise return -1 with a one-line reason
 * in why (printed as a note, not an error). Called before the replay.
 * lens_demo_sched_stop: stop it and flush its .lens file into dir. Called
 * after the replay, before the traces are read.
 * lens_demo_sched_scenario: extra replay arguments for a starvation scenario
 * (NULL-terminated), or NULL to keep the default workload. */
#ifndef NCCL_LENS_DEMO_HOOKS_H
#define NCCL_LENS_DEMO_HOOKS_H

#include <stddef.h>

__attribute__((weak)) int lens_demo_sched_start(const char *dir, char *why, size_t why_len);
__attribute__((weak)) void lens_demo_sched_stop(void);
__attribute__((weak)) const char *const *lens_demo_sched_scenario(void);

#endif
