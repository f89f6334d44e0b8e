#include "lens_test_file.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *lens_test_slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *b = NULL;
  size_t n = 0, cap = 0;
  for (;;) { /* read to the end rather than trust a size: pipes and files still being written */
    if (cap - n < 65536) {
      size_t ncap = cap ? cap * 2 : 65536;
      char *nb = realloc(b, ncap + 1);
      if (!nb) {
        free(b);
        fclose(f);
        return NULL;
      }
      b = nb;
      cap = ncap;
    }
    size_t k = fread(b + n, 1, cap - n, f);
    n += k;
    if (k == 0) break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(b);
    return NULL;
  }
  b[n] = 0;
  if (len) *len = n;
  return b;
}

size_t lens_test_max_line(const char *text) {
  size_t most = 0;
  for (const char *l = text; *l;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    if (len > most) most = len;
    l += len + (e != NULL);
  }
  return most;
}

int lens_test_sh(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  return system(cmd);
}
