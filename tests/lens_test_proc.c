/* Child processes for tests (lens_test_proc.h). */
#define _GNU_SOURCE
#include "lens_test_proc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t lens_test_spawn(const char *const *argv, const char *out_path, const char *err_path, const char *const *env) {
  pid_t p = fork();
  if (p == 0) {
    int fd = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 1);
    fd = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 2);
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0) dup2(nul, 0);
    for (int i = 0; env && env[i]; i++) putenv((char *)env[i]);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  return p;
}

int lens_test_wait_status(pid_t p) {
  int st = 0;
  if (waitpid(p, &st, 0) < 0) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

double lens_test_load1(void) {
  double l = 0;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = 0;
    fclose(f);
  }
  return l;
}

long lens_test_ncpu(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}
