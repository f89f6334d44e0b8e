/* Helpers shared by the tests that run `nccl-lens sched`: whether this host
 * can load the probe (and why not), and running the loader as a child with
 * its stdout/stderr captured. */
#ifndef NCCL_LENS_TESTS_SCHED_UTIL_H
#define NCCL_LENS_TESTS_SCHED_UTIL_H

#include <stddef.h>
#include <sys/types.h>

#define LENS_CLI LENS_BUILD_DIR "/bin/nccl-lens"

/* NULL if the probe can load here (root or CAP_BPF+CAP_PERFMON, kernel BTF,
 * sched built into the CLI); else the reason to print when skipping. */
const char *sched_test_cannot_probe(void);
/* 1 if `nccl-lens sched` is built into the CLI. */
int sched_test_cli_has_sched(void);

struct sched_child {
  pid_t pid;
  int out_fd, err_fd; /* read ends */
};
/* Starts argv (argv[0] = path). drop_privs: become uid/gid 65534 with no
 * capabilities before exec. 0 / -1. */
int sched_child_start(struct sched_child *c, char *const argv[], int drop_privs);
/* Reads stdout until a line containing `needle` or timeout_ms; copies what was
 * read into buf. 1 found, 0 not. */
int sched_child_wait_line(struct sched_child *c, const char *needle, int timeout_ms, char *buf, size_t len);
/* Waits for exit (kills after timeout_ms); returns the exit status (128+sig
 * if killed by a signal) and what it wrote to stderr / stdout. */
int sched_child_finish(struct sched_child *c, int timeout_ms, char *err_buf, size_t err_len, char *out_buf,
                       size_t out_len);
/* Runs argv to completion: exit status, stderr, stdout. */
int sched_run(char *const argv[], int drop_privs, char *err_buf, size_t err_len, char *out_buf, size_t out_len);

#endif
