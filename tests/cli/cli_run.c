/* See cli_run.h. */
#include "cli_run.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../lens_test_tmp.h"

static char dir[64];

const char *cli_tmpdir(void) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/lens-cli-XXXXXX");
    if (!mkdtemp(dir)) abort();
  }
  return dir;
}

void cli_cleanup(void) {
  if (!dir[0]) return;
  if (lens_test_rmtree(dir)) fprintf(stderr, "cleanup failed\n");
}

static void slurp(const char *path, char *buf, size_t len) {
  buf[0] = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return;
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = 0;
  fclose(f);
}

int cli_run(struct cli_result *r, const char *const *args) {
  const char *bin = getenv("LENS_CLI_BIN") ? getenv("LENS_CLI_BIN") : LENS_BUILD_DIR "/bin/nccl-lens";
  char out[128], err[128];
  snprintf(out, sizeof out, "%s/stdout", cli_tmpdir());
  snprintf(err, sizeof err, "%s/stderr", cli_tmpdir());
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (!pid) {
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    const char *argv[64] = {bin};
    int n = 1;
    for (; args[n - 1] && n < 63; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  int st;
  if (waitpid(pid, &st, 0) < 0) return -1;
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  slurp(out, r->out, sizeof r->out);
  slurp(err, r->err, sizeof r->err);
  r->err_lines = 0;
  for (const char *p = r->err; *p; p++) r->err_lines += *p == '\n';
  return 0;
}

int cli_python(const char *script, const char *path, char *buf, size_t len) {
  char sp[128], cmd[512];
  snprintf(sp, sizeof sp, "%s/check.py", cli_tmpdir());
  FILE *f = fopen(sp, "w");
  if (!f) return -1;
  fputs(script, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "python3 '%s' '%s' 2>&1", sp, path);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = fread(buf, 1, len - 1, p);
  buf[n] = 0;
  return pclose(p) == 0 ? 0 : -1;
}
