/* A private cache of what an analysis computed over a set of trace files,
 * so that a later command over the same files need not compute it again
 * from every file: a time window of a huge job takes the GPU clock maps,
 * fitted on every KernelCh of the run, from the memo a whole-run command
 * left (docs/scale.md, "The GPU memo").
 *
 * Where: $NCCL_LENS_CACHE_DIR, else $XDG_CACHE_HOME/nccl-lens, else
 * $HOME/.cache/nccl-lens: a directory of the user's own, created 0700 and
 * checked as lens_safe_fs.h checks (a real directory, ours, written by
 * nobody else), used through its descriptor. NCCL_LENS_CACHE=0 (or off,
 * no): none.
 *
 * An entry is named by a hash of its key and holds the whole key, checked
 * byte for byte, with a CRC of key and data: the kind, this program's
 * identity (a rebuilt nccl-lens computes anew), and each input's device,
 * inode, size, modification and change times (a trace rewritten, appended
 * to or replaced is another key). Anything that does not match is a miss.
 * Entries are created O_EXCL|O_NOFOLLOW under a temporary name and renamed
 * into place, read O_NOFOLLOW with owner, link count and size checked; at
 * most LENS_CACHE_MAX_ENTRY bytes, at most LENS_CACHE_MAX_ENTRIES entries
 * (the least recently used go first). Inputs under
 * NCCL_LENS_CACHE_MIN_BYTES (default 1 MiB in all: they are read again
 * faster than a cache would pay for its files) are not cached. Nothing here
 * prints unless NCCL_LENS_CACHE_LOG=1 (one stderr line a lookup or store),
 * or the directory named by NCCL_LENS_CACHE_DIR cannot be used (one line). */
#ifndef NCCL_LENS_CLI_CACHE_H
#define NCCL_LENS_CLI_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define LENS_CACHE_MAX_ENTRY (64u << 20)
#define LENS_CACHE_MAX_ENTRIES 1024

struct lens_cache_key {
  uint8_t *bytes;
  size_t len;
  uint64_t input_bytes; /* the inputs' sizes summed */
  char name[64];        /* the entry's file name */
};

/* The key of an analysis `kind` ("gpu") over these inputs, in this order.
 * 0, or -1 when there is none: the cache is off, an input is not a regular
 * file we can stat, the inputs are under the minimum, out of memory. */
int lens_cache_key_make(const char *kind, const char *const *paths, size_t n, struct lens_cache_key *k);
void lens_cache_key_free(struct lens_cache_key *k);
/* A key of its own for one part of what base names (an analysis stored in
 * several entries, each read alone: the timeline memo's slabs), part 1-32
 * characters: base's inputs, not stat'ed again. 0 or -1. */
int lens_cache_key_part(const struct lens_cache_key *base, const char *part, struct lens_cache_key *k);

/* The data stored under k (malloc'ed, *len bytes), NULL on a miss. */
void *lens_cache_get(const struct lens_cache_key *k, size_t *len);
/* Stores data under k (replacing an entry of the same name). 0 or -1. */
int lens_cache_put(const struct lens_cache_key *k, const void *data, size_t len);

/* For tests: lookups and stores off (1) or on again (0) in this process. */
void lens_cache_disable(int off);

#endif
