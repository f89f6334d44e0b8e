/* Memory hints for big allocations, for the reader and the analyses (public:
 * the analyses include this, never reader_priv.h). */
#ifndef NCCL_LENS_MEM_HINT_H
#define NCCL_LENS_MEM_HINT_H

#include <stddef.h>

/* Asks for transparent huge pages over the 2 MiB-aligned interior of a big
 * allocation (fewer page faults); a hint only. */
void lens_hugepage_hint(void *p, size_t len);
/* Faults in the pages of a big allocation about to be written whole, in one
 * call; a hint only. */
void lens_prefault(void *p, size_t len);

#endif
