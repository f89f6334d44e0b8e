/* See report_html.h. The page is static text around three embedded parts:
 * the JSON document (escaped so that no "<" can end its <script> element),
 * d3 (checked for "</script" and "<!--" before it is embedded), and the
 * page's script and style. Nothing in the page names a server. */
#include "report/report_html.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "report/report_json.h"

static const char *find_ci(const char *s, size_t n, const char *what) {
  size_t w = strlen(what);
  for (size_t i = 0; i + w <= n; i++)
    if (!strncasecmp(s + i, what, w)) return s + i;
  return NULL;
}

int lens_report_html_library(const char *cmd, char **buf, size_t *len) {
  *buf = NULL;
  *len = 0;
  FILE *f = fopen(LENS_D3_PATH, "rb"); /* nofollow-ok: a system file of a Debian package, read only */
  if (!f) {
    lens_cli_error(cmd, "--html needs d3: %s not found (install Debian's libjs-d3)", LENS_D3_PATH);
    return 1;
  }
  char *b = malloc(LENS_D3_MAX_BYTES + 1);
  size_t n = b ? fread(b, 1, LENS_D3_MAX_BYTES + 1, f) : 0;
  int err = ferror(f);
  fclose(f);
  if (!b) {
    lens_cli_error(cmd, "out of memory");
    return 1;
  }
  if (err || !n || n > LENS_D3_MAX_BYTES || find_ci(b, n, "</script") || find_ci(b, n, "<!--") ||
      !find_ci(b, n < 4096 ? n : 4096, "d3")) {
    free(b);
    lens_cli_error(cmd, "--html needs d3: %s is unreadable, empty, over %u bytes or not d3", LENS_D3_PATH,
                   LENS_D3_MAX_BYTES);
    return 1;
  }
  b[n] = 0;
  *buf = b;
  *len = n;
  return 0;
}

/* d3's version as it states it (`version:"3.5.16"`), for the page's footer. */
static void d3_version(const char *d3, size_t n, char *out, size_t len) {
  snprintf(out, len, "unknown");
  const char *v = find_ci(d3, n < 4096 ? n : 4096, "version:\"");
  if (!v) return;
  v += 9;
  size_t k = 0;
  while (k + 1 < len && v + k < d3 + n && ((v[k] >= '0' && v[k] <= '9') || v[k] == '.')) out[k] = v[k], k++;
  if (k) out[k] = 0;
}

/* JSON inside <script type="application/json">: "<", ">" and "&" only occur
 * within strings there, where \u escapes mean the same characters. */
static void put_json_for_script(FILE *f, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '<') fputs("\\u003c", f);
    else if (c == '>') fputs("\\u003e", f);
    else if (c == '&') fputs("\\u0026", f);
    else fputc(c, f);
  }
}

int lens_report_print_html(FILE *f, const struct lens_model *m, const struct lens_report *r, const char *d3,
                           size_t d3_len) {
  char *json = NULL;
  size_t json_len = 0;
  FILE *mf = open_memstream(&json, &json_len);
  if (!mf) return -1;
  int bad = lens_report_print_json(mf, m, r);
  if (fclose(mf) || bad || !json) {
    free(json);
    return -1;
  }
  char ver[32];
  d3_version(d3, d3_len, ver, sizeof ver);
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
        "style-src 'unsafe-inline'; img-src data:\">\n"
        "<meta name=\"viewport\" content=\"width=device-width\">\n<title>nccl-lens report</title>\n<style>\n",
        f);
  fputs(lens_report_asset_css, f);
  /* errors before the page's script runs (d3 itself, a blocked request) are caught too */
  fputs("</style>\n<script>window.lensErrors=[];window.addEventListener('error',function(e){"
        "window.lensErrors.push(String(e.message||e.type)+(e.lineno?' line '+e.lineno:''));});"
        "document.addEventListener('securitypolicyviolation',function(e){"
        "window.lensErrors.push('blocked request: '+e.violatedDirective);});"
        "(function(){var ce=console.error;console.error=function(){"
        "window.lensErrors.push('console: '+Array.prototype.join.call(arguments,' '));"
        "return ce.apply(console,arguments);};})();</script>\n"
        "</head>\n<body>\n<header><h1>nccl-lens report</h1></header>\n<main id=\"report\"></main>\n",
        f);
  fprintf(f, "<footer>Written by nccl-lens %s (<code>nccl-lens report --html</code>). Plots drawn with d3 %s "
             "(Debian libjs-d3), embedded in this page: it opens offline and makes no request. The numbers are "
             "those of <code>nccl-lens report --json</code>, embedded below.</footer>\n",
          LENS_VERSION, ver);
  fputs("<pre id=\"lens-check\" hidden></pre>\n<script type=\"application/json\" id=\"lens-data\">", f);
  put_json_for_script(f, json, json_len);
  fputs("</script>\n<script>\n", f);
  fwrite(d3, 1, d3_len, f);
  fputs("\n</script>\n<script>\n", f);
  fputs(lens_report_asset_js, f);
  fputs("\n</script>\n</body></html>\n", f);
  free(json);
  return 0;
}
