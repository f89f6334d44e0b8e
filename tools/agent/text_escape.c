/* Escaping of untrusted text (text_escape.h). */
#include "text_escape.h"

#include <string.h>

const char *prom_label_value(const char *in, size_t max, char *out, size_t cap) {
  size_t j = 0, n = in ? strnlen(in, max) : 0;
  const unsigned char *p = (const unsigned char *)in;
  if (cap == 0) return out;
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    char e[4];
    size_t k = 0, used = 1;
    const unsigned char *src = NULL;
    if (c == '\\' || c == '"') e[k++] = '\\', e[k++] = (char)c;
    else if (c == '\n') e[k++] = '\\', e[k++] = 'n';
    else if (c < 0x20 || c == 0x7f) e[k++] = '?';
    else if (c < 0x80) e[k++] = (char)c;
    else if ((used = lens_utf8_seq(p + i, n - i, NULL)) != 0) src = p + i, k = used;
    else used = 1, e[k++] = '?';
    if (j + k >= cap) break; /* whole escapes only: no dangling backslash */
    memcpy(out + j, src ? (const char *)src : e, k);
    j += k;
    i += used;
  }
  out[j] = 0;
  return out;
}

void json_string(struct strbuf *b, const char *s, size_t max) {
  size_t n = s ? strnlen(s, max) : 0;
  const unsigned char *p = (const unsigned char *)s;
  sb_printf(b, "\"");
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      sb_printf(b, "\\%c", c);
      i++;
    } else if (c < 0x20 || c == 0x7f) {
      sb_printf(b, "\\u%04x", c);
      i++;
    } else if (c < 0x80) {
      sb_printf(b, "%c", c);
      i++;
    } else {
      size_t k = lens_utf8_seq(p + i, n - i, NULL);
      if (k) sb_printf(b, "%.*s", (int)k, (const char *)p + i);
      else sb_printf(b, "\\ufffd");
      i += k ? k : 1;
    }
  }
  sb_printf(b, "\"");
}
