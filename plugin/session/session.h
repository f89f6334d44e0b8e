/* Lifecycle: sessions (first init .. last finalize), communicators, the
 * exit and fork paths. init/finalize take a mutex (never on the hot path). */
#ifndef NCCL_LENS_PLUGIN_SESSION_H
#define NCCL_LENS_PLUGIN_SESSION_H

#include <stdint.h>

/* The int* NCCL gave at the latest init (for ncclLensSetEventMask). */
extern int *volatile lens_mask_ptr;
/* Communicators currently initialised (0 = no session open). */
int lens_session_refcount(void);

#endif
