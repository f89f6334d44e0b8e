/* A 1,024-rank lens-gen-job made once by a test binary, and nccl-lens
 * commands run on it as a user runs them (test_cli_width, test_cli_rows). */
#ifndef NCCL_LENS_TEST_GEN_JOB_CLI_H
#define NCCL_LENS_TEST_GEN_JOB_CLI_H

/* In a fresh temporary directory named after name: DIR/job, 1,024 ranks on
 * hosts hosts, 300 k events, uncompressed (quick to write). 0, or the
 * generator's failing status. */
int gen_job_make(const char *name, int hosts);
/* stdout of `nccl-lens CMD DIR/job` (stderr dropped; the command must
 * succeed), kept in a file of the directory; free() it. */
char *gen_job_run(const char *cmd);

#endif
