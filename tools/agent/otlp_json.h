/* OTLP/HTTP JSON metrics body (docs/metrics.md); otlp_push.h sends it. */
#ifndef NCCL_LENS_AGENT_OTLP_JSON_H
#define NCCL_LENS_AGENT_OTLP_JSON_H

#include "agent_model.h"
#include "prom_text.h"

/* The ExportMetricsServiceRequest of the model, JSON (protobuf JSON mapping). */
void otlp_render(const struct agent_model *m, const char *host, struct strbuf *b);

#endif
