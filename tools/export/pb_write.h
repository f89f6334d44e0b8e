/* Protocol-buffer wire encoding, just what the Perfetto output needs:
 * varints, fixed64, length-delimited fields, nested messages built in a
 * buffer of their own. */
#ifndef NCCL_LENS_EXPORT_PB_WRITE_H
#define NCCL_LENS_EXPORT_PB_WRITE_H

#include <stddef.h>
#include <stdint.h>

struct pb {
  uint8_t *b;
  size_t n, cap;
  int oom; /* an allocation failed: the buffer is incomplete */
};

void pb_reset(struct pb *p);
void pb_free(struct pb *p);
void pb_varint(struct pb *p, uint32_t field, uint64_t v);
void pb_sint(struct pb *p, uint32_t field, int64_t v); /* int32/int64: two's complement varint */
void pb_fixed64(struct pb *p, uint32_t field, uint64_t v);
void pb_bytes(struct pb *p, uint32_t field, const void *d, size_t n);
void pb_str(struct pb *p, uint32_t field, const char *s);
/* A nested message: its bytes as a length-delimited field. */
void pb_msg(struct pb *p, uint32_t field, const struct pb *m);

#endif
