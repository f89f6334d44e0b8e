#include "lens_utf8.h"

#include <string.h>

size_t lens_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp) {
  if (n == 0) return 0;
  unsigned c = s[0];
  if (c < 0x80) {
    if (cp) *cp = c;
    return 1;
  }
  size_t len;
  uint32_t min;
  if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
  else return 0;
  if (len > n) return 0;
  uint32_t v = c & (0x7fu >> len);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    v = v << 6 | (s[i] & 0x3f);
  }
  /* overlong forms, UTF-16 surrogates and code points above U+10FFFF are not UTF-8 */
  if (v < min || (v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff) return 0;
  if (cp) *cp = v;
  return len;
}

/* A label from a file is shown on terminals, in Markdown and in HTML: a
 * crafted trace (a commName is the application's, a culprit's comm another
 * user's) must not reach a terminal with ESC sequences or a line break that
 * forges an output line, nor a right-to-left override that shows a name
 * reversed. Kept: printable ASCII and well-formed UTF-8 of U+00A0 and above
 * but the invisible format and direction controls (U+200B-U+200F,
 * U+202A-U+202E, U+2060-U+206F, U+FEFF). Every other byte becomes '?', one
 * for one, so the length never changes and the cleaning is done in place. */
void lens_label_clean(char *s, size_t cap) {
  unsigned char *p = (unsigned char *)s;
  size_t n = strnlen(s, cap);
  for (size_t i = 0; i < n;) {
    uint32_t cp = 0;
    size_t len = lens_utf8_seq(p + i, n - i, &cp);
    int keep = len && (len == 1 ? cp >= 0x20 && cp < 0x7f
                                : cp >= 0xa0 && !(cp >= 0x200b && cp <= 0x200f) && !(cp >= 0x202a && cp <= 0x202e) &&
                                      !(cp >= 0x2060 && cp <= 0x206f) && cp != 0xfeff);
    if (!keep) memset(p + i, '?', len ? len : 1); /* a refused code point whole, a broken byte alone */
    i += len ? len : 1;
  }
}
