/* Allocation-free text building for NVTX messages (see nvtx_text.h). */
#include "nvtx_text.h"

#include <string.h>

void lens_text_char(struct lens_text *t, char c) {
  if (t->len + 1 < t->cap) {
    t->buf[t->len++] = c;
    t->buf[t->len] = '\0';
  }
}

static void append(struct lens_text *t, const char *s, size_t n) {
  size_t room = t->cap - 1 - t->len;
  if (n > room) n = room;
  memcpy(t->buf + t->len, s, n);
  t->len += n;
  t->buf[t->len] = '\0';
}

void lens_text_str(struct lens_text *t, const char *s) {
  if (!s) s = "?";
  append(t, s, strnlen(s, t->cap - 1 - t->len));
}

void lens_text_u64(struct lens_text *t, uint64_t v) {
  char tmp[20];
  int i = (int)sizeof(tmp);
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  append(t, tmp + i, sizeof(tmp) - (size_t)i);
}

void lens_text_i64(struct lens_text *t, int64_t v) {
  if (v < 0) {
    lens_text_char(t, '-');
    lens_text_u64(t, (uint64_t)0 - (uint64_t)v);
  } else {
    lens_text_u64(t, (uint64_t)v);
  }
}

void lens_text_bytes(struct lens_text *t, uint64_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  unsigned u = 0;
  uint64_t whole = bytes, rem = 0; /* rem: the remainder below the unit, in the unit below */
  while (whole >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
    rem = whole % 1024;
    whole /= 1024;
    u++;
  }
  lens_text_u64(t, whole);
  if (rem) { /* one decimal, truncated: never claims more than there is */
    lens_text_char(t, '.');
    lens_text_char(t, (char)('0' + (rem * 10) / 1024));
  }
  lens_text_char(t, ' ');
  lens_text_str(t, units[u]);
}

struct dtype_info {
  const char *name;
  const char *short_name;
  unsigned size;
};
/* NCCL's datatype strings (spec §1.6); "Unknown" is what ncclUint8 becomes. */
static const struct dtype_info dtypes[] = {
    {"ncclInt8", "i8", 1},         {"ncclUint8", "u8", 1},        {"Unknown", "u8?", 1},
    {"ncclInt32", "i32", 4},       {"ncclUint32", "u32", 4},      {"ncclInt64", "i64", 8},
    {"ncclUint64", "u64", 8},      {"ncclFloat16", "f16", 2},     {"ncclFloat32", "f32", 4},
    {"ncclFloat64", "f64", 8},     {"ncclBfloat16", "bf16", 2},   {"ncclFloat8e4m3", "f8e4m3", 1},
    {"ncclFloat8e5m2", "f8e5m2", 1},
};

static const struct dtype_info *dtype_find(struct lens_dtype_cache *c, const char *name) {
  if (!name) return NULL;
  if (c)
    for (int i = 0; i < LENS_DTYPE_CACHE; i++)
      if (c->ptr[i] == name) return c->info[i];
  const struct dtype_info *found = NULL;
  for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]) && !found; i++)
    if (strcmp(dtypes[i].name, name) == 0) found = &dtypes[i];
  if (c) {
    unsigned k = c->next++ % LENS_DTYPE_CACHE;
    c->ptr[k] = name;
    c->info[k] = found;
  }
  return found;
}

unsigned lens_dtype_size(struct lens_dtype_cache *c, const char *name) {
  const struct dtype_info *d = dtype_find(c, name);
  return d ? d->size : 0;
}

const char *lens_dtype_short(struct lens_dtype_cache *c, const char *name) {
  const struct dtype_info *d = dtype_find(c, name);
  return d ? d->short_name : (name ? name : "?");
}
