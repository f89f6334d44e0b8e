/* A minimal JSON reader for tests (the replay driver's ground truth): parses
 * a whole document into a tree of nodes. Strings are unescaped for \" \\ \/
 * and \n/\t only (enough for the truth file); numbers are kept as double and
 * as int64 when integral. Not for untrusted input at scale. */
#ifndef NCCL_LENS_TESTS_MINI_JSON_H
#define NCCL_LENS_TESTS_MINI_JSON_H

#include <stddef.h>
#include <stdint.h>

enum mj_type { MJ_NULL, MJ_BOOL, MJ_NUM, MJ_STR, MJ_ARR, MJ_OBJ };

struct mj {
  enum mj_type type;
  char *key;          /* member name when inside an object */
  char *str;          /* MJ_STR */
  double num;         /* MJ_NUM, MJ_BOOL (0/1) */
  int64_t i;          /* MJ_NUM when integral (also exact for values beyond 2^53) */
  uint64_t u;         /* MJ_NUM non-negative integral, exact */
  struct mj *child;   /* first element / member */
  struct mj *next;    /* next sibling */
  size_t n;           /* elements / members */
};

struct mj *mj_parse(const char *text); /* NULL on a syntax error */
struct mj *mj_parse_file(const char *path);
void mj_free(struct mj *v);
const struct mj *mj_get(const struct mj *obj, const char *key); /* NULL if absent or not an object */
const struct mj *mj_at(const struct mj *arr, size_t i);
const char *mj_str(const struct mj *obj, const char *key);      /* NULL if absent / not a string */
int64_t mj_int(const struct mj *obj, const char *key, int64_t dflt);
uint64_t mj_uint(const struct mj *obj, const char *key, uint64_t dflt);

#endif
