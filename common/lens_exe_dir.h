/* Files installed beside the running executable: bin/<tool> finds
 * lib/<library> as <dir of the executable>/../lib/<library>, so a build tree
 * or an install works wherever it was copied. */
#ifndef NCCL_LENS_COMMON_EXE_DIR_H
#define NCCL_LENS_COMMON_EXE_DIR_H

#include <stddef.h>

/* Writes <executable's dir>/../lib/<name> into buf; 0 when that file exists
 * and is readable, -1 otherwise (buf is then not to be used). */
int lens_lib_beside_exe(const char *name, char *buf, size_t len);

#endif
