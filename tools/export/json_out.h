/* Minimal JSON writing for export and summary: always valid output (strings
 * escaped, invalid UTF-8 bytes escaped as code points), numbers written
 * exactly. */
#ifndef NCCL_LENS_JSON_OUT_H
#define NCCL_LENS_JSON_OUT_H

#include <stdint.h>
#include <stdio.h>

/* Writes "s" (with quotes); NULL writes null. */
void lens_json_str(FILE *f, const char *s);
/* Writes "key": */
void lens_json_key(FILE *f, const char *key);
/* Nanoseconds as microseconds with ns precision: 1234567 -> 1234.567 */
void lens_json_us(FILE *f, uint64_t ns);
void lens_json_us_signed(FILE *f, int64_t ns);
/* A double that is always valid JSON (NaN/inf -> null). */
void lens_json_double(FILE *f, double v);
/* Writes "0x..." for ids and pointers. */
void lens_json_hex(FILE *f, uint64_t v);

#endif
