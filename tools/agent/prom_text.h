/* Prometheus text exposition (format 0.0.4) of the node's live pages and of
 * the agent's job view; every metric is in docs/metrics.md. */
#ifndef NCCL_LENS_AGENT_PROM_TEXT_H
#define NCCL_LENS_AGENT_PROM_TEXT_H

#include <stddef.h>

#include "agent_model.h"

struct strbuf {
  char *s;
  size_t len, cap;
  int oom;
};
void sb_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_free(struct strbuf *b);

/* Renders everything; b->oom set when memory ran out. */
void prom_render(const struct agent_model *m, const char *host, struct strbuf *b);

#endif
