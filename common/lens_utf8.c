#include "lens_utf8.h"

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
