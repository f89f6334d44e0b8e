/* OTLP/HTTP push of the agent (docs/metrics.md): configuration from the
 * standard OTEL_EXPORTER_OTLP_* variables, one POST with bounded retries, and
 * a pusher thread with a bounded queue so that a collector that never answers
 * holds neither the lock /metrics renders under nor the agent's exit. */
#ifndef NCCL_LENS_AGENT_OTLP_PUSH_H
#define NCCL_LENS_AGENT_OTLP_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "prom_text.h"

#define OTLP_QUEUE 4         /* bodies waiting; a new one drops the oldest (counted) */
#define OTLP_ATTEMPTS 5      /* one POST and at most 4 retries (429, 502, 503, 504 only) */
#define OTLP_BACKOFF_MAX_S 30 /* exponential backoff 1, 2, 4 ... s, at most this */
#define OTLP_RETRY_AFTER_MAX_S 60 /* a longer Retry-After gives the body up */

struct curl_slist;
struct otlp_cfg {
  char url[2048];
  long timeout_ms; /* per attempt */
  int gzip;
  char ca_file[1024], client_cert[1024], client_key[1024]; /* "" when unset */
  struct curl_slist *headers;
};

/* Reads the environment; 0 ok, -1 with one line in err (a configuration error). */
int otlp_config_from_env(struct otlp_cfg *c, char *err, size_t errlen);
void otlp_config_free(struct otlp_cfg *c);

/* POSTs body with retries. stop(arg) is polled every 100 ms while connecting,
 * sending, waiting for the answer or backing off: nonzero abandons the push.
 * 0 sent (2xx), -1 not (one line on stderr, repeated lines suppressed). */
int otlp_send(const struct otlp_cfg *c, const char *body, size_t len, int (*stop)(void *), void *arg);

struct otlp_pusher;
/* Starts the thread; NULL (one line on stderr) if it cannot. cfg must outlive it. */
struct otlp_pusher *otlp_pusher_start(const struct otlp_cfg *cfg);
/* Queues body (taken over, b left empty). */
void otlp_pusher_enqueue(struct otlp_pusher *p, struct strbuf *b);
struct otlp_stats {
  uint64_t sent, failed, dropped, retries;
};
void otlp_pusher_stats(struct otlp_pusher *p, struct otlp_stats *s);
/* Abandons the push in flight and the queue, joins the thread (within ~0.2 s). */
void otlp_pusher_stop(struct otlp_pusher *p);

#endif
