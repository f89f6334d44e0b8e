#include "cli/opt.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int lens_opt_val(const char *cmd, int *i, int argc, char **argv, const char *lng, char s, const char *what,
                 const char **val) {
  const char *a = argv[*i];
  size_t n = strlen(lng);
  if (!strncmp(a, lng, n) && a[n] == '=') { /* --name=VALUE */
    *val = a + n + 1;
    return 1;
  }
  int whole = !strcmp(a, lng) || (s && a[0] == '-' && a[1] == s && !a[2]);
  if (!whole && s && a[0] == '-' && a[1] == s && a[2] && strncmp(a, "--", 2)) { /* -xVALUE */
    *val = a + 2;
    return 1;
  }
  if (!whole) return 0;
  if (*i + 1 >= argc) {
    lens_cli_usage(cmd, "%s needs %s", lng, what);
    return -1;
  }
  *val = argv[++*i];
  return 1;
}

int lens_opt_flag(const char *a, const char *lng, char s) {
  return !strcmp(a, lng) || (s && a[0] == '-' && a[1] == s && !a[2]);
}

int lens_opt_num(const char *v, double lo, double hi, double *out) {
  char *end;
  double d = strtod(v, &end);
  if (end == v || *end || !(d >= lo && d <= hi)) return -1; /* NaN fails every comparison */
  *out = d;
  return 0;
}
