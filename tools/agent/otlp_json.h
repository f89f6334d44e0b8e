/* OTLP/HTTP JSON metrics push (docs/metrics.md): the standard
 * OTEL_EXPORTER_OTLP_* variables, libcurl as the client. */
#ifndef NCCL_LENS_AGENT_OTLP_JSON_H
#define NCCL_LENS_AGENT_OTLP_JSON_H

#include "agent_model.h"
#include "prom_text.h"

/* The ExportMetricsServiceRequest of the model, JSON (protobuf JSON mapping). */
void otlp_render(const struct agent_model *m, const char *host, struct strbuf *b);
/* Renders and POSTs it; 0 ok (2xx). Errors print one line. */
int otlp_push(const struct agent_model *m, const char *host);

#endif
