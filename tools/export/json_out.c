/* See json_out.h. */
#include "export/json_out.h"

#include <inttypes.h>
#include <math.h>

/* Length of a valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static int utf8_len(const unsigned char *s) {
  if (s[0] < 0x80) return 1;
  int n = (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
  if (!n || s[0] == 0xC0 || s[0] == 0xC1 || s[0] > 0xF4) return 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80) return 0; /* also stops at NUL */
  return n;
}

void lens_json_str(FILE *f, const char *s) {
  if (!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    if (*p == '"' || *p == '\\') {
      fputc('\\', f);
      fputc(*p++, f);
    } else if (*p < 0x20) {
      fprintf(f, "\\u%04x", *p++);
    } else if (*p < 0x80) {
      fputc(*p++, f);
    } else {
      int n = utf8_len(p);
      if (n) {
        fwrite(p, 1, (size_t)n, f);
        p += n;
      } else {
        fprintf(f, "\\u%04x", *p++); /* invalid byte: its Latin-1 code point */
      }
    }
  }
  fputc('"', f);
}

void lens_json_key(FILE *f, const char *key) {
  lens_json_str(f, key);
  fputc(':', f);
}

void lens_json_us(FILE *f, uint64_t ns) { fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000)); }

void lens_json_us_signed(FILE *f, int64_t ns) {
  if (ns < 0) {
    fputc('-', f);
    lens_json_us(f, (uint64_t)0 - (uint64_t)ns);
  } else {
    lens_json_us(f, (uint64_t)ns);
  }
}

void lens_json_double(FILE *f, double v) {
  if (isnan(v) || isinf(v)) fputs("null", f);
  else fprintf(f, "%.17g", v);
}

void lens_json_hex(FILE *f, uint64_t v) { fprintf(f, "\"0x%" PRIx64 "\"", v); }
