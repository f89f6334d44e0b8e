/* Names of NCCL user tags (ncclCollConfig_t.userProfilerTag, NCCL 2.31+):
 * "1:forward,2:backward,3:optimizer" from NCCL_LENS_TAG_NAMES or a command's
 * --tag-names. A table a tool reads, so every view labels a tag the same. */
#include <ctype.h>
#include <pthread.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lensread.h"

#define MAX_TAGS 64
#define MAX_NAME 32

static struct {
  uint64_t tag;
  char name[MAX_NAME];
} g_tags[MAX_TAGS];
static int g_ntags, g_loaded;

int lens_tag_names_set(const char *spec) {
  uint64_t tags[MAX_TAGS];
  char names[MAX_TAGS][MAX_NAME];
  int n = 0;
  const char *s = spec ? spec : "";
  while (*s) {
    while (*s == ',' || isspace((unsigned char)*s)) s++;
    if (!*s) break;
    if (!isdigit((unsigned char)*s) || n == MAX_TAGS) return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end != ':' || v == 0) return -1; /* 0 means untagged: it has no name */
    s = end + 1;
    size_t len = strcspn(s, ",");
    while (len && isspace((unsigned char)s[len - 1])) len--;
    if (!len || len >= MAX_NAME) return -1;
    tags[n] = v;
    memcpy(names[n], s, len);
    names[n][len] = 0;
    n++;
    s += strcspn(s, ",");
  }
  for (int i = 0; i < n; i++) {
    g_tags[i].tag = tags[i];
    memcpy(g_tags[i].name, names[i], MAX_NAME);
  }
  g_ntags = n;
  g_loaded = 1;
  return 0;
}

int lens_tag_names_from_env(void) {
  g_loaded = 1;
  const char *v = getenv("NCCL_LENS_TAG_NAMES");
  return v && *v ? lens_tag_names_set(v) : 0;
}

/* The environment is read once, the first label waiting for it: labels are
 * made on the pass driver's threads (export, validate), and a thread that
 * saw g_loaded set before the table was filled said "tag N" for a name. */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static void env_load(void) {
  if (!g_loaded) lens_tag_names_from_env();
}

const char *lens_tag_label(uint64_t tag, char *buf, size_t cap) {
  pthread_once(&env_once, env_load);
  if (!tag) return "";
  for (int i = 0; i < g_ntags; i++)
    if (g_tags[i].tag == tag) return g_tags[i].name;
  snprintf(buf, cap, "tag %" PRIu64, tag);
  return buf;
}
