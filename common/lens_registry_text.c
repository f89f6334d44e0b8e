/* See lens_registry_text.h. */
#include "lens_registry_text.h"

#include <string.h>

#include "nccl-lens/registry.h"

/* Strict numbers for registry text, which another user may have written:
 * digits only (hex: an optional 0x), no sign, no overflow, ended by a space,
 * a newline or the end. Advances *s. */
static int reg_num(const char **s, int base, uint64_t max, uint64_t *v) {
  const char *p = *s;
  while (*p == ' ') p++;
  if (base == 16 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
  uint64_t x = 0;
  const char *d0 = p;
  for (;; p++) {
    unsigned d;
    if (*p >= '0' && *p <= '9') d = (unsigned)(*p - '0');
    else if (base == 16 && *p >= 'a' && *p <= 'f') d = (unsigned)(*p - 'a' + 10);
    else if (base == 16 && *p >= 'A' && *p <= 'F') d = (unsigned)(*p - 'A' + 10);
    else break;
    if (x > (max - d) / (unsigned)base) return -1;
    x = x * (unsigned)base + d;
  }
  if (p == d0 || (*p != ' ' && *p != '\n' && *p != 0)) return -1;
  *s = p;
  *v = x;
  return 0;
}

#define TID_MAX 0x3fffffffull /* above any pid_max (2^22) */

int lens_registry_parse_threads(const char *text, void (*fn)(void *, uint32_t, uint32_t, uint32_t), void *ctx) {
  size_t ml = strlen(LENS_REGISTRY_MAGIC);
  if (strncmp(text, LENS_REGISTRY_MAGIC, ml) != 0 || (text[ml] != ' ' && text[ml] != '\n')) return -1;
  int n = 0;
  for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    uint64_t tid, outer, roles;
    if (strncmp(line, "thread ", 7) != 0) continue; /* unknown lines are ignored by contract */
    const char *p = line + 7;
    if (reg_num(&p, 10, TID_MAX, &tid) || reg_num(&p, 10, TID_MAX, &outer) || reg_num(&p, 16, UINT32_MAX, &roles) ||
        tid == 0)
      continue; /* a malformed line: skipped, like an unknown one */
    fn(ctx, (uint32_t)tid, (uint32_t)outer, (uint32_t)roles);
    n++;
  }
  return n;
}

int lens_registry_parse_id(const char *text, struct lens_registry_id *id) {
  memset(id, 0, sizeof *id);
  size_t ml = strlen(LENS_REGISTRY_MAGIC);
  if (strncmp(text, LENS_REGISTRY_MAGIC, ml) != 0 || (text[ml] != ' ' && text[ml] != '\n')) return -1;
  for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    const char *p;
    uint64_t v;
    if (!strncmp(line, "pid ", 4) && (p = line + 4, reg_num(&p, 10, TID_MAX, &v) == 0))
      id->pid = (uint32_t)v, id->has_pid = 1;
    else if (!strncmp(line, "start ", 6) && (p = line + 6, reg_num(&p, 10, UINT64_MAX, &v) == 0))
      id->start_ticks = v, id->has_start = 1;
    else if (!strncmp(line, "pidns ", 6) && (p = line + 6, reg_num(&p, 10, UINT64_MAX, &v) == 0))
      id->pidns = v, id->has_pidns = 1;
  }
  return 0;
}
