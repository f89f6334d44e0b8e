/* Inputs that are the same trace: one file named twice (overlapping globs,
 * a symlink, a hard link), or a copy of a trace beside the original (a copy
 * taken while the job ran is a prefix of it). Loading both would double every
 * count, so each trace is read once and the others are reported.
 *
 * Identity: the same (device, inode) is the same file. Otherwise the first 96
 * bytes, the file header (with its creation time in ns) and the first chunk's
 * header (with the CRC of the SESSION record: pid, host, start times), name
 * one writer's session; two different writers never share them. Of a group,
 * the largest copy is read (it holds the most of the run). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader_priv.h"

#define ID_BYTES (sizeof(struct lens_file_hdr) + sizeof(struct lens_chunk_hdr))

struct input_id {
  int ok, has_bytes;
  dev_t dev;
  ino_t ino;
  uint64_t size;
  uint8_t bytes[ID_BYTES];
};

static void identify(const char *path, struct input_id *id) {
  memset(id, 0, sizeof *id);
  struct stat st;
  if (stat(path, &st) || !S_ISREG(st.st_mode)) return; /* the loader reports it */
  id->ok = 1;
  id->dev = st.st_dev;
  id->ino = st.st_ino;
  id->size = (uint64_t)st.st_size;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  id->has_bytes = pread(fd, id->bytes, ID_BYTES, 0) == (ssize_t)ID_BYTES;
  close(fd);
}

int lens_same_trace_select(const char *const *paths, size_t n, size_t *keep, size_t *n_keep,
                           struct lens_same_trace *dups, size_t *n_dups) {
  struct input_id *ids = calloc(n ? n : 1, sizeof *ids);
  int32_t *rep = malloc((n ? n : 1) * sizeof *rep); /* index of the input read in i's place, -1 = itself */
  if (!ids || !rep) {
    free(ids);
    free(rep);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    identify(paths[i], &ids[i]);
    rep[i] = -1;
  }
  *n_keep = 0;
  *n_dups = 0;
  for (size_t i = 0; i < n; i++) {
    if (rep[i] >= 0 || !ids[i].ok) continue;
    size_t best = i;
    for (size_t j = i + 1; j < n; j++) {
      if (rep[j] >= 0 || !ids[j].ok) continue;
      int same_file = ids[j].dev == ids[i].dev && ids[j].ino == ids[i].ino;
      int copy = !same_file && ids[i].has_bytes && ids[j].has_bytes && !memcmp(ids[i].bytes, ids[j].bytes, ID_BYTES);
      if (!same_file && !copy) continue;
      rep[j] = (int32_t)i; /* provisional: the group's first member */
      if (copy && ids[j].size > ids[best].size) best = j;
    }
    /* Point every member of the group at the one read. */
    for (size_t j = i; j < n; j++) {
      if (j != i && rep[j] != (int32_t)i) continue;
      if (j == best) {
        rep[j] = -1;
        continue;
      }
      rep[j] = (int32_t)best;
      dups[*n_dups].path = paths[j];
      dups[*n_dups].same_as = paths[best];
      dups[*n_dups].same_file = ids[j].dev == ids[best].dev && ids[j].ino == ids[best].ino;
      (*n_dups)++;
    }
  }
  for (size_t i = 0; i < n; i++)
    if (rep[i] < 0) keep[(*n_keep)++] = i;
  free(ids);
  free(rep);
  return 0;
}
