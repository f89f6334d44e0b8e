#include "cli/cli.h"

#include <stdarg.h>
#include <unistd.h>

int lens_cli_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "nccl-lens %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

int lens_cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "nccl-lens %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (try 'nccl-lens %s --help')\n", cmd);
  va_end(ap);
  return 2;
}

void lens_cli_progress(const char *what, long done, long total) {
  static int tty = -1;
  if (tty < 0) tty = isatty(STDERR_FILENO);
  if (!tty) return;
  if (done < 0) {
    fprintf(stderr, "\r\033[K");
    return;
  }
  if (total > 0)
    fprintf(stderr, "\r%s: %ld/%ld (%ld%%)\033[K", what, done, total, done * 100 / total);
  else
    fprintf(stderr, "\r%s: %ld\033[K", what, done);
}
