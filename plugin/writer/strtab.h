/* Writer-side interning of the const char* NCCL passes (static literals):
 * pointer -> id, and the text of new ids queued for the next STRINGS chunk,
 * which is always written before the EVENTS chunk that uses them. */
#ifndef NCCL_LENS_PLUGIN_STRTAB_H
#define NCCL_LENS_PLUGIN_STRTAB_H

#include <stdint.h>

#define LENS_STR_MAX 128 /* bytes read from a string pointer, at most */

/* Forget every mapping (new session). Ids keep increasing across sessions. */
void lens_strtab_reset(void);
/* Id for a pointer (0 for NULL); new text goes to the pending buffer. */
uint32_t lens_strtab_intern(uint64_t ptr);
/* Pending STRINGS payload (NULL/0 when none); clear after writing it. */
const void *lens_strtab_pending(uint32_t *len);
void lens_strtab_clear_pending(void);
/* 1 when a record's strings (up to 4) surely fit in the pending buffer. */
int lens_strtab_room(void);

#endif
