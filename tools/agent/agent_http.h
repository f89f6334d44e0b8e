/* The agent's HTTP(S) server for /metrics (libmicrohttpd), hardened as a
 * Prometheus exporter is expected to be (docs/metrics.md): event-driven
 * (epoll, a small pool of threads) so slow clients never hold a scrape up,
 * connections bounded per client address and in all, short timeouts, GET and
 * HEAD, and the exporter-toolkit web configuration (TLS, basic auth, headers). */
#ifndef NCCL_LENS_AGENT_HTTP_H
#define NCCL_LENS_AGENT_HTTP_H

#include <netinet/in.h>
#include <stddef.h>

#include "prom_text.h"
#include "web_config.h"

#define AGENT_HTTP_THREADS 4          /* one slow bcrypt check or TLS handshake blocks one of them only */
#define AGENT_HTTP_CONNECTIONS 1024   /* in all */
#define AGENT_HTTP_PER_IP 16          /* per client address: one address cannot take the others' share */
#define AGENT_HTTP_TIMEOUT_S 5        /* idle (no byte either way) before a connection is closed */
#define AGENT_HTTP_BCRYPTS 2          /* bcrypt checks at once: the other threads stay free for scrapes */

/* Fills b with the exposition (b->oom when memory ran out). */
typedef void (*agent_render_fn)(void *arg, struct strbuf *b);

struct agent_http;
/* Listens on sa; wc NULL: plain HTTP, no auth. NULL with one line in err. */
struct agent_http *agent_http_start(const struct sockaddr_in *sa, const struct web_config *wc, agent_render_fn render,
                                    void *arg, char *err, size_t errlen);
void agent_http_stop(struct agent_http *h);

#endif
