/* The exporter-toolkit web configuration file (web_config.h), parsed with
 * libyaml's document API. The file and every file it names are read with a
 * size bound; the walk looks at three fixed levels only. */
#define _GNU_SOURCE
#include "web_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <gnutls/gnutls.h>
#include <yaml.h>

struct ctx {
  yaml_document_t *doc;
  const char *path;
  char dir[4096];
  char *err;
  size_t errlen;
};

static int fail(struct ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct ctx *x, const char *fmt, ...) {
  char m[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  snprintf(x->err, x->errlen, "web config %s: %s", x->path, m);
  return -1;
}

/* Reads a whole file of at most max bytes, NUL-terminated. */
static char *slurp(const char *path, size_t max, size_t *len) {
  FILE *f = fopen(path, "re");
  if (!f) return NULL;
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
    fclose(f);
    return NULL;
  }
  char *s = malloc((size_t)st.st_size + 1);
  size_t n = s ? fread(s, 1, (size_t)st.st_size, f) : 0;
  fclose(f);
  if (!s || n != (size_t)st.st_size) {
    free(s);
    return NULL;
  }
  s[n] = 0;
  if (len) *len = n;
  return s;
}

static const char *scalar(struct ctx *x, yaml_node_t *n) {
  if (!n || n->type != YAML_SCALAR_NODE) return NULL;
  /* a NUL inside a scalar would cut it short where we compare it */
  if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length) return NULL;
  return (const char *)n->data.scalar.value;
}

/* A value that may be absent: YAML null ("", "~", "null") reads as unset. */
static int is_null(yaml_node_t *n) {
  if (!n) return 1;
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
  const char *v = (const char *)n->data.scalar.value;
  return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static int load_pem(struct ctx *x, const char *key, const char *file, char **dst) {
  char p[8192];
  if (file[0] == '/') snprintf(p, sizeof p, "%s", file);
  else snprintf(p, sizeof p, "%s/%s", x->dir, file);
  size_t n = 0;
  free(*dst);
  *dst = slurp(p, WEB_CONFIG_MAX_PEM, &n);
  if (!*dst) return fail(x, "%s: cannot read %s (a regular file of at most 1 MiB)", key, p);
  if (n == 0 || strlen(*dst) != n) return fail(x, "%s: %s is empty or not PEM text", key, p);
  return 0;
}

static int tls_version(struct ctx *x, const char *key, const char *v, enum web_tls_version *out) {
  if (!strcmp(v, "TLS12")) *out = WEB_TLS12;
  else if (!strcmp(v, "TLS13")) *out = WEB_TLS13;
  else if (!strcmp(v, "TLS10") || !strcmp(v, "TLS11"))
    return fail(x, "%s: %s is not supported (TLS12 or TLS13)", key, v);
  else return fail(x, "%s: '%s' is not a TLS version (TLS12 or TLS13)", key, v);
  return 0;
}

/* The files are checked here, so that a wrong one is a configuration error
 * that names it rather than a server that will not start. */
static int check_pems(struct ctx *x, const struct web_config *c) {
  gnutls_certificate_credentials_t cred;
  if (gnutls_certificate_allocate_credentials(&cred) != GNUTLS_E_SUCCESS) return fail(x, "GnuTLS cannot start");
  gnutls_datum_t cert = {(unsigned char *)c->cert_pem, (unsigned)strlen(c->cert_pem)};
  gnutls_datum_t key = {(unsigned char *)c->key_pem, (unsigned)strlen(c->key_pem)};
  int r = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
  int rc = 0;
  if (r < 0) rc = fail(x, "cert_file and key_file: %s", gnutls_strerror(r));
  if (!rc && c->client_ca_pem) {
    gnutls_datum_t ca = {(unsigned char *)c->client_ca_pem, (unsigned)strlen(c->client_ca_pem)};
    r = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
    if (r <= 0) rc = fail(x, "client_ca_file: %s", r < 0 ? gnutls_strerror(r) : "no certificate in it");
  }
  gnutls_certificate_free_credentials(cred);
  return rc;
}

/* Keys exporter-toolkit documents that nccl-lens does not implement. */
static int unsupported(struct ctx *x, const char *section, const char *k) {
  static const char *const known[] = {"cert", "key", "client_allowed_sans", "cipher_suites",
                                      "prefer_server_cipher_suites", "curve_preferences", "http2", "rate_limit", NULL};
  for (int i = 0; known[i]; i++)
    if (!strcmp(k, known[i])) return fail(x, "%s%s is not supported by nccl-lens agent", section, k);
  return fail(x, "unknown key '%s%s'", section, k);
}

#define FOR_PAIRS(x, map, kn, vn, k)                                                                      \
  for (yaml_node_pair_t *pp_ = (map)->data.mapping.pairs.start; pp_ < (map)->data.mapping.pairs.top; pp_++) \
    for (yaml_node_t *kn = yaml_document_get_node((x)->doc, pp_->key),                                    \
                     *vn = yaml_document_get_node((x)->doc, pp_->value), *once_ = kn;                     \
         once_; once_ = NULL)                                                                             \
      for (const char *k = scalar((x), kn); once_; once_ = NULL)

static int tls_section(struct ctx *x, yaml_node_t *map, struct web_config *c) {
  if (is_null(map)) return 0;
  if (map->type != YAML_MAPPING_NODE) return fail(x, "tls_server_config must be a mapping");
  int have_cert = 0, have_key = 0, have_ca = 0, auth_set = 0;
  FOR_PAIRS(x, map, kn, vn, k) {
    if (!k) return fail(x, "tls_server_config: a key is not a string");
    if (is_null(vn)) continue;
    const char *v = scalar(x, vn);
    int known = !strcmp(k, "cert_file") || !strcmp(k, "key_file") || !strcmp(k, "client_ca_file") ||
                !strcmp(k, "client_auth_type") || !strcmp(k, "min_version") || !strcmp(k, "max_version");
    if (!known) return unsupported(x, "tls_server_config.", k);
    if (!v) return fail(x, "tls_server_config.%s must be a string", k);
    if (!strcmp(k, "cert_file")) {
      if (load_pem(x, "tls_server_config.cert_file", v, &c->cert_pem)) return -1;
      have_cert = 1;
    } else if (!strcmp(k, "key_file")) {
      if (load_pem(x, "tls_server_config.key_file", v, &c->key_pem)) return -1;
      have_key = 1;
    } else if (!strcmp(k, "client_ca_file")) {
      if (load_pem(x, "tls_server_config.client_ca_file", v, &c->client_ca_pem)) return -1;
      have_ca = 1;
    } else if (!strcmp(k, "client_auth_type")) {
      auth_set = 1;
      if (!strcmp(v, "NoClientCert")) c->client_auth = WEB_NO_CLIENT_CERT;
      else if (!strcmp(v, "VerifyClientCertIfGiven")) c->client_auth = WEB_VERIFY_IF_GIVEN;
      else if (!strcmp(v, "RequireAndVerifyClientCert")) c->client_auth = WEB_REQUIRE_AND_VERIFY;
      else if (!strcmp(v, "RequestClientCert") || !strcmp(v, "RequireAnyClientCert"))
        return fail(x, "client_auth_type %s is not supported (NoClientCert, VerifyClientCertIfGiven, "
                       "RequireAndVerifyClientCert)", v);
      else return fail(x, "client_auth_type: unknown value '%s'", v);
    } else if (!strcmp(k, "min_version")) {
      if (tls_version(x, "min_version", v, &c->min_version)) return -1;
    } else if (tls_version(x, "max_version", v, &c->max_version)) {
      return -1;
    }
  }
  if (have_cert != have_key) return fail(x, "tls_server_config needs both cert_file and key_file");
  if (have_cert && check_pems(x, c)) return -1;
  c->tls = have_cert;
  if (!c->tls && (have_ca || auth_set || c->min_version || c->max_version))
    return fail(x, "tls_server_config without cert_file and key_file");
  if (c->client_auth != WEB_NO_CLIENT_CERT && !have_ca)
    return fail(x, "client_auth_type verifies client certificates: client_ca_file is needed");
  if (c->min_version && c->max_version && c->max_version < c->min_version)
    return fail(x, "max_version is below min_version");
  return 0;
}

static int header_ok(const char *v) {
  for (const unsigned char *p = (const unsigned char *)v; *p; p++)
    if (*p < 0x20 || *p == 0x7f) return 0; /* no CR/LF: a value must not add header lines */
  return 1;
}

static int http_section(struct ctx *x, yaml_node_t *map, struct web_config *c) {
  if (is_null(map)) return 0;
  if (map->type != YAML_MAPPING_NODE) return fail(x, "http_server_config must be a mapping");
  FOR_PAIRS(x, map, kn, vn, k) {
    if (!k) return fail(x, "http_server_config: a key is not a string");
    if (strcmp(k, "headers") != 0) return unsupported(x, "http_server_config.", k);
    if (is_null(vn)) continue;
    if (vn->type != YAML_MAPPING_NODE) return fail(x, "http_server_config.headers must be a mapping");
    /* the headers exporter-toolkit documents; any other is refused as it does */
    static const char *const allowed[] = {"Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options",
                                          "X-XSS-Protection", "Content-Security-Policy", NULL};
    FOR_PAIRS(x, vn, hk, hv, name) {
      const char *v = scalar(x, hv);
      if (!name || !v) return fail(x, "http_server_config.headers: names and values must be strings");
      int ok = 0;
      for (int i = 0; allowed[i] && !ok; i++) ok = !strcmp(name, allowed[i]);
      if (!ok) return fail(x, "http_server_config.headers: '%s' is not a supported header", name);
      if (!header_ok(v) || strlen(v) >= sizeof c->headers[0].value)
        return fail(x, "http_server_config.headers.%s: control characters or over 1023 bytes", name);
      /* the values exporter-toolkit accepts for these two */
      if (!strcmp(name, "X-Content-Type-Options") && strcasecmp(v, "nosniff") != 0)
        return fail(x, "http_server_config.headers.X-Content-Type-Options: only nosniff, not '%.64s'", v);
      if (!strcmp(name, "X-Frame-Options") && strcasecmp(v, "deny") != 0 && strcasecmp(v, "sameorigin") != 0)
        return fail(x, "http_server_config.headers.X-Frame-Options: deny or sameorigin, not '%.64s'", v);
      if (c->n_headers == WEB_CONFIG_MAX_HEADERS) return fail(x, "http_server_config.headers: too many");
      snprintf(c->headers[c->n_headers].name, sizeof c->headers[0].name, "%s", name);
      snprintf(c->headers[c->n_headers].value, sizeof c->headers[0].value, "%s", v);
      c->n_headers++;
    }
  }
  return 0;
}

static int users_section(struct ctx *x, yaml_node_t *map, struct web_config *c) {
  if (is_null(map)) return 0;
  if (map->type != YAML_MAPPING_NODE) return fail(x, "basic_auth_users must be a mapping of user: bcrypt hash");
  FOR_PAIRS(x, map, kn, vn, user) {
    const char *h = scalar(x, vn);
    if (!user || !h || !*user) return fail(x, "basic_auth_users: users and hashes must be strings");
    if (strlen(user) >= sizeof c->users[0].user || strchr(user, ':'))
      return fail(x, "basic_auth_users: bad user name '%.64s' (over 127 bytes or a ':')", user);
    if (strlen(h) != 60 || (strncmp(h, "$2a$", 4) && strncmp(h, "$2b$", 4) && strncmp(h, "$2y$", 4)))
      return fail(x, "basic_auth_users.%s: not a bcrypt hash ($2a$, $2b$ or $2y$, 60 characters)", user);
    for (int i = 0; i < c->n_users; i++)
      if (!strcmp(c->users[i].user, user)) return fail(x, "basic_auth_users: '%s' twice", user);
    if (c->n_users == WEB_CONFIG_MAX_USERS) return fail(x, "basic_auth_users: more than %d users", WEB_CONFIG_MAX_USERS);
    snprintf(c->users[c->n_users].user, sizeof c->users[0].user, "%s", user);
    snprintf(c->users[c->n_users].hash, sizeof c->users[0].hash, "%s", h);
    c->n_users++;
  }
  return 0;
}

int web_config_load(const char *path, struct web_config *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  struct ctx x = {.path = path, .err = err, .errlen = errlen};
  const char *slash = strrchr(path, '/');
  if (slash) snprintf(x.dir, sizeof x.dir, "%.*s", (int)(slash > path ? slash - path : 1) /* "/x": "/" */, path);
  else snprintf(x.dir, sizeof x.dir, ".");
  size_t len = 0;
  char *text = slurp(path, WEB_CONFIG_MAX_BYTES, &len);
  if (!text) return fail(&x, "cannot read it (a regular file of at most %d KiB)", WEB_CONFIG_MAX_BYTES / 1024);
  yaml_parser_t p;
  yaml_document_t doc;
  int rc = -1;
  if (!yaml_parser_initialize(&p)) {
    free(text);
    return fail(&x, "out of memory");
  }
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  if (!yaml_parser_load(&p, &doc)) {
    fail(&x, "YAML error at line %zu: %s", p.problem_mark.line + 1, p.problem ? p.problem : "?");
    yaml_parser_delete(&p);
    free(text);
    return -1;
  }
  x.doc = &doc;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (!root || is_null(root)) {
    rc = 0; /* an empty file: plain HTTP, no auth, as exporter-toolkit */
  } else if (root->type != YAML_MAPPING_NODE) {
    fail(&x, "the top level must be a mapping");
  } else {
    rc = 0;
    FOR_PAIRS(&x, root, kn, vn, k) {
      if (rc) break;
      if (!k) rc = fail(&x, "a top-level key is not a string");
      else if (!strcmp(k, "tls_server_config")) rc = tls_section(&x, vn, c);
      else if (!strcmp(k, "http_server_config")) rc = http_section(&x, vn, c);
      else if (!strcmp(k, "basic_auth_users")) rc = users_section(&x, vn, c);
      else rc = unsupported(&x, "", k);
    }
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&p);
  free(text);
  if (rc) web_config_free(c);
  return rc;
}

void web_config_free(struct web_config *c) {
  free(c->cert_pem);
  free(c->key_pem);
  free(c->client_ca_pem);
  c->cert_pem = c->key_pem = c->client_ca_pem = NULL;
}

const char *web_config_priorities(const struct web_config *c) {
  int lo = c->min_version ? (int)c->min_version : 12, hi = c->max_version ? (int)c->max_version : 13;
  if (lo == 13) return "NORMAL:-VERS-ALL:+VERS-TLS1.3";
  if (hi == 12) return "NORMAL:-VERS-ALL:+VERS-TLS1.2";
  return "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
}
