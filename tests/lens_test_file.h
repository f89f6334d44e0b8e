/* Reading a whole file in a test (outputs of nccl-lens commands, truth
 * files, pages), and running a shell command to make one. lens_test_file.c is compiled into every test
 * (lens_add_test). */
#ifndef NCCL_LENS_TESTS_FILE_H
#define NCCL_LENS_TESTS_FILE_H

#include <stddef.h>

/* The file's bytes followed by a NUL (free() it), its length in *len when len
 * is not NULL; NULL when it cannot be opened or read. */
char *lens_test_slurp(const char *path, size_t *len);
/* The length of text's longest line (the CLI's text fits 120 columns). */
size_t lens_test_max_line(const char *text);
/* system() of a printf-formatted command line (4 KiB at most). */
int lens_test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
