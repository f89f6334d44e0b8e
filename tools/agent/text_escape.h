/* Escaping of untrusted text for the agent's outputs. Every name the agent
 * prints comes from a live page another process wrote (a fixed-size char
 * array that may lack its terminator, hold newlines, quotes or bytes that are
 * not UTF-8): these read at most `max` bytes and write only what the format
 * allows, so a forged name can neither over-read its array nor inject a line
 * into /metrics or break the OTLP JSON. */
#ifndef NCCL_LENS_AGENT_TEXT_ESCAPE_H
#define NCCL_LENS_AGENT_TEXT_ESCAPE_H

#include <stddef.h>

#include "lens_utf8.h"
#include "prom_text.h"


/* A Prometheus label value (exposition format 0.0.4): backslash, double quote
 * and newline escaped; other control bytes and invalid UTF-8 become '?'.
 * Reads at most max bytes of in (stops at a NUL); out always terminated,
 * never cut inside an escape. Returns out. */
const char *prom_label_value(const char *in, size_t max, char *out, size_t cap);

/* Appends a JSON string literal of at most max bytes of s: quote, backslash
 * and control bytes escaped, invalid UTF-8 as U+FFFD. */
void json_string(struct strbuf *b, const char *s, size_t max);

#endif
