/* Runs build/bin/nccl-lens (or $LENS_CLI_BIN) with arguments, capturing exit
 * status, stdout and stderr into files of a temp directory. */
#ifndef NCCL_LENS_TEST_CLI_RUN_H
#define NCCL_LENS_TEST_CLI_RUN_H

#include <stddef.h>

struct cli_result {
  int status;       /* exit code; 128 + signal if killed */
  char out[65536];  /* stdout (truncated) */
  char err[8192];   /* stderr */
  int err_lines;    /* newline count of stderr */
};

const char *cli_tmpdir(void);
void cli_cleanup(void);
/* args: NULL-terminated. */
int cli_run(struct cli_result *r, const char *const *args);
/* Runs python3 on a JSON file with a small script (argv[1] = path); returns its stdout in buf. -1 on failure. */
int cli_python(const char *script, const char *path, char *buf, size_t len);

#endif
