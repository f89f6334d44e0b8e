/* A minimal JSON reader for tests (see mini_json.h). */
#include "mini_json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
  const char *p;
  int err;
};

static void ws(struct parser *ps) {
  while (isspace((unsigned char)*ps->p)) ps->p++;
}

static struct mj *node(enum mj_type t) {
  struct mj *v = calloc(1, sizeof(*v));
  if (v) v->type = t;
  return v;
}

static char *parse_string(struct parser *ps) {
  if (*ps->p != '"') { ps->err = 1; return NULL; }
  ps->p++;
  size_t cap = 32, len = 0;
  char *s = malloc(cap);
  while (s && *ps->p && *ps->p != '"') {
    char c = *ps->p++;
    if (c == '\\') {
      char e = *ps->p++;
      c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'u' ? '?' : e;
      if (e == 'u') for (int k = 0; k < 4 && *ps->p; k++) ps->p++;
    }
    if (len + 2 > cap) s = realloc(s, cap *= 2);
    if (s) s[len++] = c;
  }
  if (!s || *ps->p != '"') { free(s); ps->err = 1; return NULL; }
  ps->p++;
  s[len] = '\0';
  return s;
}

static struct mj *parse_value(struct parser *ps, int depth);

static struct mj *parse_container(struct parser *ps, int depth, int obj) {
  struct mj *v = node(obj ? MJ_OBJ : MJ_ARR), **tail = &v->child;
  ps->p++;
  ws(ps);
  if (*ps->p == (obj ? '}' : ']')) { ps->p++; return v; }
  for (;;) {
    char *key = NULL;
    ws(ps);
    if (obj) {
      key = parse_string(ps);
      ws(ps);
      if (ps->err || *ps->p != ':') { free(key); ps->err = 1; return v; }
      ps->p++;
    }
    struct mj *c = parse_value(ps, depth + 1);
    if (!c) { free(key); ps->err = 1; return v; }
    c->key = key;
    *tail = c;
    tail = &c->next;
    v->n++;
    ws(ps);
    if (*ps->p == ',') { ps->p++; continue; }
    if (*ps->p == (obj ? '}' : ']')) { ps->p++; return v; }
    ps->err = 1;
    return v;
  }
}

static struct mj *parse_value(struct parser *ps, int depth) {
  if (depth > 64) { ps->err = 1; return NULL; }
  ws(ps);
  char c = *ps->p;
  if (c == '{' || c == '[') return parse_container(ps, depth, c == '{');
  if (c == '"') {
    struct mj *v = node(MJ_STR);
    v->str = parse_string(ps);
    return v;
  }
  if (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "false", 5)) {
    struct mj *v = node(MJ_BOOL);
    v->num = v->i = v->u = c == 't';
    ps->p += c == 't' ? 4 : 5;
    return v;
  }
  if (!strncmp(ps->p, "null", 4)) {
    ps->p += 4;
    return node(MJ_NULL);
  }
  if (c == '-' || isdigit((unsigned char)c)) {
    struct mj *v = node(MJ_NUM);
    char *end;
    v->num = strtod(ps->p, &end);
    const char *q = ps->p;
    int integral = 1;
    for (const char *k = q; k < end; k++) if (*k == '.' || *k == 'e' || *k == 'E') integral = 0;
    if (integral) {
      if (c == '-') v->i = strtoll(q, NULL, 10), v->u = (uint64_t)v->i;
      else v->u = strtoull(q, NULL, 10), v->i = (int64_t)v->u;
    } else {
      v->i = (int64_t)v->num;
      v->u = (uint64_t)(v->num < 0 ? 0 : v->num);
    }
    ps->p = end;
    return v;
  }
  ps->err = 1;
  return NULL;
}

struct mj *mj_parse(const char *text) {
  struct parser ps = {text, 0};
  struct mj *v = parse_value(&ps, 0);
  if (ps.err) { mj_free(v); return NULL; }
  return v;
}

struct mj *mj_parse_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  struct mj *v = NULL;
  if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
    buf[n] = '\0';
    v = mj_parse(buf);
  }
  free(buf);
  fclose(f);
  return v;
}

void mj_free(struct mj *v) {
  while (v) {
    struct mj *next = v->next;
    mj_free(v->child);
    free(v->key);
    free(v->str);
    free(v);
    v = next;
  }
}

const struct mj *mj_get(const struct mj *obj, const char *key) {
  if (!obj || obj->type != MJ_OBJ) return NULL;
  for (const struct mj *c = obj->child; c; c = c->next)
    if (c->key && strcmp(c->key, key) == 0) return c;
  return NULL;
}

const struct mj *mj_at(const struct mj *arr, size_t i) {
  if (!arr || (arr->type != MJ_ARR && arr->type != MJ_OBJ)) return NULL;
  const struct mj *c = arr->child;
  while (c && i--) c = c->next;
  return c;
}

const char *mj_str(const struct mj *obj, const char *key) {
  const struct mj *v = mj_get(obj, key);
  return v && v->type == MJ_STR ? v->str : NULL;
}

int64_t mj_int(const struct mj *obj, const char *key, int64_t dflt) {
  const struct mj *v = mj_get(obj, key);
  return v && (v->type == MJ_NUM || v->type == MJ_BOOL) ? v->i : dflt;
}

uint64_t mj_uint(const struct mj *obj, const char *key, uint64_t dflt) {
  const struct mj *v = mj_get(obj, key);
  return v && (v->type == MJ_NUM || v->type == MJ_BOOL) ? v->u : dflt;
}
