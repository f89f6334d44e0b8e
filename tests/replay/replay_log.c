/* Runs the replay in-process (or forked for --nodes > 1) and parses the
 * recording plugin's log. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay_log.h"

void rl_opts(struct lens_replay_opts *o, const char *scenario, int nodes, int rpn) {
  lens_replay_opts_init(o);
  o->plugin = getenv("REC_PLUGIN");
  o->scenario = scenario;
  o->nodes = nodes;
  o->ranks_per_node = rpn;
  o->iters = 1;
  o->quiet = true;
}

static void parse(struct rl_line *l, char *s) {
  memset(l, 0, sizeof *l);
  int off = 0;
  if (sscanf(s, "%ld %d %d %11s %n", &l->seq, &l->pid, &l->tid, l->call, &off) < 4) return;
  snprintf(l->rest, sizeof l->rest, "%s", s + off);
  char b[64];
  snprintf(l->id, sizeof l->id, "%s", rl_get(l, "id", b, sizeof b));
  snprintf(l->parent, sizeof l->parent, "%s", rl_get(l, "parent", b, sizeof b));
  snprintf(l->ctx, sizeof l->ctx, "%s", rl_get(l, "ctx", b, sizeof b));
  l->type = strtoull(rl_get(l, "type", b, sizeof b), NULL, 10);
  l->rank = (int)rl_geti(l, "rank");
  l->state = (int)rl_geti(l, "state");
  const char *a = rl_get(l, "args", b, sizeof b);
  l->args_null = !strcmp(a, "null");
  l->args = strtoull(a, NULL, 10);
}

void rl_run(struct rl_log *lg, const struct lens_replay_opts *o, int mask, const char *env) {
  char path[] = "/tmp/replay-rec-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  char m[32];
  snprintf(m, sizeof m, "%d", mask);
  setenv("REC_LOG", path, 1);
  setenv("REC_MASK", m, 1);
  char *k = NULL;
  if (env) {
    k = strdup(env);
    char *eq = strchr(k, '=');
    *eq = 0;
    setenv(k, eq + 1, 1);
  }
  lg->rc = lens_replay_run(o, &lg->res);
  if (k) {
    unsetenv(k);
    free(k);
  }
  FILE *f = fopen(path, "r");
  int cap = 1024;
  lg->n = 0;
  lg->l = malloc(sizeof *lg->l * (size_t)cap);
  char line[1024];
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (lg->n == cap) lg->l = realloc(lg->l, sizeof *lg->l * (size_t)(cap *= 2));
    parse(&lg->l[lg->n++], line);
  }
  if (f) fclose(f);
  unlink(path);
}

void rl_free(struct rl_log *lg) {
  free(lg->l);
  lg->l = NULL;
  lg->n = 0;
}

const char *rl_get(const struct rl_line *l, const char *key, char *buf, int len) {
  size_t kl = strlen(key);
  const char *p = l->rest;
  buf[0] = 0;
  while ((p = strstr(p, key)) != NULL) {
    if ((p == l->rest || p[-1] == ' ') && p[kl] == '=') {
      p += kl + 1;
      int i = 0;
      while (p[i] && p[i] != ' ' && i < len - 1) {
        buf[i] = p[i];
        i++;
      }
      buf[i] = 0;
      return buf;
    }
    p += kl;
  }
  return buf;
}

long rl_geti(const struct rl_line *l, const char *key) {
  char b[64];
  return strtol(rl_get(l, key, b, sizeof b), NULL, 0);
}

int rl_find_start(const struct rl_log *lg, const char *id, int pid) {
  for (int i = 0; i < lg->n; i++)
    if (lg->l[i].pid == pid && !strcmp(lg->l[i].call, "start") && !strcmp(lg->l[i].id, id)) return i;
  return -1;
}
