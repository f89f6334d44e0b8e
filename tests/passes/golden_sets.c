/* See golden_sets.h. */
#include "golden_sets.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t golden_set_files(const char *dir, char **paths, size_t max) {
  size_t n = 0;
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && n < max && (de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l <= 5 || strcmp(de->d_name + l - 5, ".lens")) continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    if ((paths[n] = strdup(p))) n++;
  }
  if (d) closedir(d);
  return n;
}

long golden_sets_each(const char *root,
                     void (*fn)(const char *name, const char *dir, const char *const *paths, size_t n, void *ctx),
                     void *ctx) {
  DIR *d = opendir(root);
  if (!d) {
    fprintf(stderr, "FAIL: no traces at %s\n", root);
    return -1;
  }
  char *names[128];
  size_t n_names = 0;
  struct dirent *de;
  while ((de = readdir(d)) && n_names < 128)
    if (de->d_name[0] != '.') names[n_names++] = strdup(de->d_name);
  closedir(d);
  for (size_t i = 0; i < n_names; i++) {
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
    char *paths[GOLDEN_SET_MAX_FILES];
    size_t n = golden_set_files(dir, paths, GOLDEN_SET_MAX_FILES);
    fn(names[i], dir, (const char *const *)paths, n, ctx);
    for (size_t k = 0; k < n; k++) free(paths[k]);
    free(names[i]);
  }
  return (long)n_names;
}

void golden_selections_of(const struct lens_model *m, struct golden_selections *s) {
  memset(s, 0, sizeof *s);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < m->n_events; i++) {
    const struct lens_event *e = &m->events[i];
    if (e->start_mono_ns && e->start_mono_ns < lo) lo = e->start_mono_ns;
    if (e->start_mono_ns > hi) hi = e->start_mono_ns;
    if (e->stop_mono_ns > hi) hi = e->stop_mono_ns;
  }
  uint64_t span = hi > lo && lo != UINT64_MAX ? hi - lo : 1;
  if (m->n_comms) {
    if (m->comms[0].name[0]) snprintf(s->comm, sizeof s->comm, "%s", m->comms[0].name);
    else snprintf(s->comm, sizeof s->comm, "0x%" PRIx64, m->comms[0].comm_id);
  }
  s->comms[0] = s->comm;
  s->funcs[0] = "AllReduce";
  s->rank0[0] = 1;
  struct lens_filter mid = {.have_since = 1, .have_until = 1, .since_ns = span * 35 / 100, .until_ns = span * 65 / 100};
  struct lens_filter *f = s->f;
  f[0] = mid;
  f[1] = (struct lens_filter){.have_since = 1, .have_until = 1, .since_ns = 0, .until_ns = span * 4 + 1000000000};
  f[2] = (struct lens_filter){.have_since = 1, .since_ns = span * 4 + 1000000000};
  f[3] = (struct lens_filter){.comms = s->comms, .n_comms = 1};
  f[4] = (struct lens_filter){.ranks = s->rank0, .n_ranks = 1};
  f[5] = (struct lens_filter){.funcs = s->funcs, .n_funcs = 1};
  f[6] = mid;
  f[6].comms = s->comms, f[6].n_comms = 1, f[6].ranks = s->rank0, f[6].n_ranks = 1;
  static const char *const what[GOLDEN_N_SELECTIONS] = {
      "--since/--until mid", "--until all", "--since past the end", "--comm", "--rank 0", "--func AllReduce",
      "--comm --rank 0 mid"};
  for (int k = 0; k < GOLDEN_N_SELECTIONS; k++) {
    s->what[k] = what[k];
    s->used[k] = !(f[k].n_comms && !s->comm[0]);
  }
}
