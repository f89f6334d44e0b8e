/* UTF-8 as the CLI checks it in every name it did not write itself (agent
 * pages, trace labels): one decoder, so that what counts as well-formed is
 * one rule. */
#ifndef NCCL_LENS_UTF8_H
#define NCCL_LENS_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1..4) of the well-formed UTF-8 sequence at s (n bytes available),
 * its code point in *cp (may be NULL); 0 if none starts there (a stray
 * continuation byte, an overlong form, a UTF-16 surrogate, past U+10FFFF,
 * or cut short by n). */
size_t lens_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp);

/* Makes a label read from a file (name, host, comm, string; a Kineto name,
 * a file name) safe to print: control bytes, malformed UTF-8 and invisible
 * direction controls become '?', in place, the length unchanged; up to its
 * NUL or cap bytes. One rule for every reader and view. */
void lens_label_clean(char *s, size_t cap);

#endif
