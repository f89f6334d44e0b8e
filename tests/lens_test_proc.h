/* Child processes for tests: start a command with its output in files, and
 * its exit status. lens_test_proc.c is compiled into every test
 * (lens_add_test). */
#ifndef NCCL_LENS_TESTS_PROC_H
#define NCCL_LENS_TESTS_PROC_H

#include <sys/types.h>

/* Starts argv (searched on PATH) with stdin /dev/null, stdout to out_path
 * and stderr to err_path (NULL: /dev/null), and "K=V" pairs of env added to
 * our environment. Its pid, or -1. */
pid_t lens_test_spawn(const char *const *argv, const char *out_path, const char *err_path, const char *const *env);
/* Waits for p: its exit status, 128 + the signal that ended it, or -1. */
int lens_test_wait_status(pid_t p);
/* The machine's 1-minute load average (0 when unreadable) and its online CPUs (at least 1): a test that runs
 * real threads against real time asserts its timing only on a quiet machine. */
double lens_test_load1(void);
long lens_test_ncpu(void);

#endif
