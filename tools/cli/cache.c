/* See cache.h. */
#include "cli/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "lens_bytes.h"
#include "lens_chunk.h"
#include "lens_safe_fs.h"

#define ENTRY_MAGIC "LNSCACH1"

struct entry_hdr {
  char magic[8];
  uint32_t key_len, crc; /* crc: lens_crc32c of the key, then the data */
  uint64_t data_len;
};

static pthread_once_t dir_once = PTHREAD_ONCE_INIT;
static int dir_fd = -1;
static int log_on;
static pthread_mutex_t evict_mu = PTHREAD_MUTEX_INITIALIZER;
static int evicted; /* once a process */
static int disabled; /* lens_cache_disable */

void lens_cache_disable(int off) { __atomic_store_n(&disabled, off, __ATOMIC_RELAXED); }

static int env_off(const char *v) {
  return v && (!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no") || !strcasecmp(v, "false"));
}

static void open_dir(void) {
  const char *lg = getenv("NCCL_LENS_CACHE_LOG");
  log_on = lg && !strcmp(lg, "1");
  if (env_off(getenv("NCCL_LENS_CACHE"))) return;
  char path[4096], why[160] = "";
  const char *given = getenv("NCCL_LENS_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (given && *given) {
    dir_fd = lens_dir_open(given, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why);
    if (dir_fd < 0) /* asked for by name: say why it is not used, once */
      fprintf(stderr, "nccl-lens: note: cache directory %s not used: %s\n", given, why);
    return;
  }
  if (xdg && xdg[0] == '/') {
    if (snprintf(path, sizeof path, "%s/nccl-lens", xdg) >= (int)sizeof path) return;
  } else if (home && home[0] == '/') {
    char parent[4096];
    if (snprintf(parent, sizeof parent, "%s/.cache", home) >= (int)sizeof parent) return;
    int p = lens_dir_open(parent, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why);
    if (p < 0) return; /* (an existing ~/.cache that others may write: no cache, silently) */
    close(p);
    if (snprintf(path, sizeof path, "%s/nccl-lens", parent) >= (int)sizeof path) return;
  } else {
    return;
  }
  dir_fd = lens_dir_open(path, 1, geteuid(), LENS_DIR_PRIVATE, why, sizeof why);
  if (dir_fd < 0 && log_on) fprintf(stderr, "nccl-lens: cache: %s not used: %s\n", path, why);
}

static int cache_dir(void) {
  pthread_once(&dir_once, open_dir);
  return dir_fd;
}

static uint64_t min_bytes(void) {
  const char *v = getenv("NCCL_LENS_CACHE_MIN_BYTES");
  if (v && *v) {
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (!errno && !*end) return x;
  }
  return 1u << 20;
}

static void put_stat(struct lens_bytes *b, const struct stat *st) {
  uint64_t v[7] = {(uint64_t)st->st_dev,
                   (uint64_t)st->st_ino,
                   (uint64_t)st->st_size,
                   (uint64_t)st->st_mtim.tv_sec,
                   (uint64_t)st->st_mtim.tv_nsec,
                   (uint64_t)st->st_ctim.tv_sec,
                   (uint64_t)st->st_ctim.tv_nsec};
  lens_bytes_put(b, v, sizeof v);
}

/* FNV-1a, 64 bits, from a given basis: two of them name an entry. */
static uint64_t fnv(const uint8_t *p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

int lens_cache_key_make(const char *kind, const char *const *paths, size_t n, struct lens_cache_key *k) {
  memset(k, 0, sizeof *k);
  if (__atomic_load_n(&disabled, __ATOMIC_RELAXED) || cache_dir() < 0 || !kind || strlen(kind) > 16) return -1;
  struct lens_bytes b = {0};
  struct stat st;
  lens_bytes_put(&b, "nccl-lens cache 1", 18);
  lens_bytes_put(&b, kind, strlen(kind) + 1);
  if (stat("/proc/self/exe", &st)) return -1;
  put_stat(&b, &st);
  uint64_t nn = n;
  lens_bytes_put(&b, &nn, sizeof nn);
  for (size_t i = 0; i < n; i++) {
    /* (a spooled input, standard input or a .gz read into an unlinked memory file, is another file
     * every run: no key, rather than an entry nobody finds again) */
    if (stat(paths[i], &st) || !S_ISREG(st.st_mode) || st.st_nlink == 0) {
      free(b.p);
      return -1;
    }
    put_stat(&b, &st);
    k->input_bytes += (uint64_t)st.st_size;
  }
  if (b.oom || k->input_bytes < min_bytes()) {
    free(b.p);
    return -1;
  }
  k->bytes = b.p, k->len = b.n;
  snprintf(k->name, sizeof k->name, "%s-%016llx%016llx.lcache", kind,
           (unsigned long long)fnv(b.p, b.n, 0xcbf29ce484222325ull),
           (unsigned long long)fnv(b.p, b.n, 0x84222325cbf29ce4ull));
  return 0;
}

int lens_cache_key_part(const struct lens_cache_key *base, const char *part, struct lens_cache_key *k) {
  memset(k, 0, sizeof *k);
  size_t pl = part ? strlen(part) : 0;
  const char *dash = strchr(base->name, '-');
  if (!base->bytes || !pl || pl > 32 || !dash) return -1;
  if (!(k->bytes = malloc(base->len + pl + 1))) return -1;
  memcpy(k->bytes, base->bytes, base->len);
  k->bytes[base->len] = 0; /* (the base ends with the last input's stat: no part reads as another key's bytes) */
  memcpy(k->bytes + base->len + 1, part, pl);
  k->len = base->len + 1 + pl;
  k->input_bytes = base->input_bytes;
  snprintf(k->name, sizeof k->name, "%.*s-%016llx%016llx.lcache", (int)(dash - base->name), base->name,
           (unsigned long long)fnv(k->bytes, k->len, 0xcbf29ce484222325ull),
           (unsigned long long)fnv(k->bytes, k->len, 0x84222325cbf29ce4ull));
  return 0;
}

void lens_cache_key_free(struct lens_cache_key *k) {
  free(k->bytes);
  memset(k, 0, sizeof *k);
}

void *lens_cache_get(const struct lens_cache_key *k, size_t *len) {
  int d = cache_dir();
  if (d < 0 || !k->bytes) return NULL;
  struct stat st;
  char why[160];
  int fd = lens_file_open_read(d, k->name, geteuid(), (off_t)LENS_CACHE_MAX_ENTRY + 4096, &st, why, sizeof why);
  if (fd < 0) {
    if (log_on) fprintf(stderr, "nccl-lens: cache: miss %s\n", k->name);
    return NULL;
  }
  /* The whole entry (its size bounded by the open): header, key, data. */
  size_t size = (size_t)st.st_size;
  uint8_t *buf = malloc(size ? size : 1);
  struct entry_hdr h;
  const char *bad = "bad entry";
  if (!buf || lens_read_upto(fd, buf, size) != (ssize_t)size || size < sizeof h) goto fail;
  memcpy(&h, buf, sizeof h);
  if (memcmp(h.magic, ENTRY_MAGIC, 8)) goto fail;
  const uint8_t *key = buf + sizeof h, *data = key + k->len;
  if (h.key_len != k->len || h.data_len > LENS_CACHE_MAX_ENTRY || (uint64_t)size != sizeof h + h.key_len + h.data_len ||
      memcmp(key, k->bytes, k->len)) {
    bad = "another key";
    goto fail;
  }
  if (lens_crc32c(lens_crc32c(0, key, h.key_len), data, h.data_len) != h.crc) {
    bad = "CRC mismatch";
    goto fail;
  }
  futimens(fd, NULL); /* recently used: the last to go */
  close(fd);
  memmove(buf, data, h.data_len); /* the caller's: the data alone */
  *len = h.data_len;
  if (log_on) fprintf(stderr, "nccl-lens: cache: hit %s (%llu bytes)\n", k->name, (unsigned long long)h.data_len);
  return buf;
fail:
  if (log_on) fprintf(stderr, "nccl-lens: cache: miss %s (%s)\n", k->name, bad);
  close(fd);
  free(buf);
  return NULL;
}

struct aged {
  struct timespec t;
  char name[64];
};
static int cmp_aged(const void *pa, const void *pb) {
  const struct aged *a = pa, *b = pb;
  if (a->t.tv_sec != b->t.tv_sec) return a->t.tv_sec < b->t.tv_sec ? -1 : 1;
  if (a->t.tv_nsec != b->t.tv_nsec) return a->t.tv_nsec < b->t.tv_nsec ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* Past LENS_CACHE_MAX_ENTRIES entries, the least recently used go until
 * three quarters are left: once a process, before its first store. Only
 * names an entry can have are counted or removed. */
static void evict(int d) {
  pthread_mutex_lock(&evict_mu);
  if (evicted) {
    pthread_mutex_unlock(&evict_mu);
    return;
  }
  evicted = 1;
  int dd = dup(d);
  DIR *dir = dd >= 0 ? fdopendir(dd) : NULL;
  if (!dir) {
    if (dd >= 0) close(dd);
    pthread_mutex_unlock(&evict_mu);
    return;
  }
  struct aged *v = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(dir))) {
    size_t l = strlen(e->d_name);
    if (e->d_name[0] == '.' || l >= sizeof v->name || l < 8 || strcmp(e->d_name + l - 7, ".lcache")) continue;
    struct stat st;
    if (fstatat(d, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) continue;
    if (n == cap) {
      size_t c = cap ? cap * 2 : 256;
      struct aged *q = realloc(v, c * sizeof *q);
      if (!q) break;
      v = q, cap = c;
    }
    v[n].t = st.st_mtim;
    memcpy(v[n].name, e->d_name, l + 1);
    n++;
  }
  closedir(dir);
  if (n > LENS_CACHE_MAX_ENTRIES) {
    qsort(v, n, sizeof *v, cmp_aged);
    for (size_t i = 0; i < n - LENS_CACHE_MAX_ENTRIES * 3 / 4; i++) unlinkat(d, v[i].name, 0);
  }
  free(v);
  pthread_mutex_unlock(&evict_mu);
}

int lens_cache_put(const struct lens_cache_key *k, const void *data, size_t len) {
  int d = cache_dir();
  if (d < 0 || !k->bytes || len > LENS_CACHE_MAX_ENTRY) return -1;
  evict(d);
  struct entry_hdr h = {.key_len = (uint32_t)k->len, .data_len = len};
  memcpy(h.magic, ENTRY_MAGIC, 8);
  h.crc = lens_crc32c(lens_crc32c(0, k->bytes, k->len), data, len);
  size_t total = sizeof h + k->len + len;
  uint8_t *buf = malloc(total);
  if (!buf) return -1;
  memcpy(buf, &h, sizeof h);
  memcpy(buf + sizeof h, k->bytes, k->len);
  if (len) memcpy(buf + sizeof h + k->len, data, len);
  int rc = lens_file_replace(d, k->name, 0600, buf, total);
  free(buf);
  if (log_on) fprintf(stderr, "nccl-lens: cache: %s %s (%zu bytes)\n", rc ? "could not store" : "stored", k->name, len);
  return rc;
}
