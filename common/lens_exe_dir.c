#include "lens_exe_dir.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int lens_lib_beside_exe(const char *name, char *buf, size_t len) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = 0;
  int w = snprintf(buf, len, "%s/../lib/%s", exe, name);
  if (w < 0 || (size_t)w >= len) return -1;
  return access(buf, R_OK) == 0 ? 0 : -1;
}
