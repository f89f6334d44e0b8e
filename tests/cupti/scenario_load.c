#include "scenario_load.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lens_model *scenario_load(const char *dir) {
  char *paths[64];
  size_t n = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  struct dirent *de;
  while ((de = readdir(d)) && n < 64) {
    size_t l = strlen(de->d_name);
    if (l > 5 && !strcmp(de->d_name + l - 5, ".lens") && (paths[n] = malloc(strlen(dir) + l + 2)))
      sprintf(paths[n++], "%s/%s", dir, de->d_name);
  }
  closedir(d);
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && strcmp(paths[j - 1], paths[j]) > 0; j--) {
      char *t = paths[j];
      paths[j] = paths[j - 1], paths[j - 1] = t;
    }
  char err[256];
  struct lens_model *m = n ? lens_model_load((const char *const *)paths, n, err, sizeof err, NULL) : NULL;
  for (size_t i = 0; i < n; i++) free(paths[i]);
  return m;
}
