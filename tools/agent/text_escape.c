/* Escaping of untrusted text (text_escape.h). */
#include "text_escape.h"

#include <string.h>

size_t text_utf8_seq(const unsigned char *s, size_t n) {
  if (n == 0) return 0;
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned min;
  if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
  else return 0;
  if (len > n) return 0;
  unsigned cp = c & (0x7f >> len);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3f);
  }
  /* overlong forms, UTF-16 surrogates and code points above U+10FFFF are not UTF-8 */
  if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return 0;
  return len;
}

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
    else if ((used = text_utf8_seq(p + i, n - i)) != 0) src = p + i, k = used;
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
      size_t k = text_utf8_seq(p + i, n - i);
      if (k) sb_printf(b, "%.*s", (int)k, (const char *)p + i);
      else sb_printf(b, "\\ufffd");
      i += k ? k : 1;
    }
  }
  sb_printf(b, "\"");
}
