/* The shared plugin's own translation unit: everything else comes from the
 * lens_core archive (linked whole). Kept so the target has a source file. */
#include "nccl-lens/control.h"
