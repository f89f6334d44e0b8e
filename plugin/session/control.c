/* ncclLensSetEventMask: NCCL snapshots the mask per enqueue with relaxed
 * loads, so a relaxed store into the int it gave us is all it takes. */
#include <stddef.h>

#include "nccl-lens/control.h"
#include "session.h"

__attribute__((visibility("default"))) int ncclLensSetEventMask(int mask) {
  int *p = lens_mask_ptr;
  if (!p || lens_session_refcount() == 0) return -1;
  int old = __atomic_load_n(p, __ATOMIC_RELAXED);
  __atomic_store_n(p, mask, __ATOMIC_RELAXED);
  return old;
}
