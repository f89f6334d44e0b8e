/* The exporter-toolkit web configuration file (--web.config.file), the YAML
 * every official Prometheus exporter reads: TLS (tls_server_config), response
 * headers (http_server_config.headers) and basic auth users with bcrypt
 * hashes (basic_auth_users). docs/metrics.md lists what is supported; any
 * other key is refused with an error, never ignored: an option an operator
 * wrote for security must not be dropped silently. */
#ifndef NCCL_LENS_AGENT_WEB_CONFIG_H
#define NCCL_LENS_AGENT_WEB_CONFIG_H

#include <stddef.h>

#define WEB_CONFIG_MAX_BYTES (64 * 1024)  /* the YAML file */
#define WEB_CONFIG_MAX_PEM (1024 * 1024)  /* each certificate or key file */
#define WEB_CONFIG_MAX_USERS 64
#define WEB_CONFIG_MAX_HEADERS 8

enum web_client_auth { WEB_NO_CLIENT_CERT, WEB_VERIFY_IF_GIVEN, WEB_REQUIRE_AND_VERIFY };
enum web_tls_version { WEB_TLS_ANY = 0, WEB_TLS12 = 12, WEB_TLS13 = 13 };

struct web_config {
  int tls;                              /* cert_file and key_file given */
  char *cert_pem, *key_pem, *client_ca_pem; /* file contents, NUL-terminated */
  enum web_client_auth client_auth;
  enum web_tls_version min_version, max_version;
  struct {
    char name[64], value[1024];
  } headers[WEB_CONFIG_MAX_HEADERS];
  int n_headers;
  struct {
    char user[128], hash[128];
  } users[WEB_CONFIG_MAX_USERS];
  int n_users;
};

/* 0 ok; -1 with one line in err. Relative file paths are taken from the
 * configuration file's directory, as exporter-toolkit does. */
int web_config_load(const char *path, struct web_config *c, char *err, size_t errlen);
void web_config_free(struct web_config *c);
/* The GnuTLS priority string for the versions asked. */
const char *web_config_priorities(const struct web_config *c);

#endif
