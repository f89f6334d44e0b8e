/* Temporary directories for tests: made under /tmp and removed when the
 * process that made them exits (not its forked children, which share the
 * list), unless LENS_TEST_KEEP=1 asks to keep them for a look after a
 * failure. Removal walks the tree itself (nftw, no shell, never following
 * links). lens_test_tmp.c is compiled into every test (lens_add_test). */
#ifndef NCCL_LENS_TESTS_TMP_H
#define NCCL_LENS_TESTS_TMP_H

#include <stddef.h>

/* Makes /tmp/lens-test-<tag>-XXXXXX into out; aborts when it cannot. */
void lens_test_tmpdir(char *out, size_t cap, const char *tag);
/* Removes dir and everything below it; 0 when it is gone. */
int lens_test_rmtree(const char *dir);

#endif
