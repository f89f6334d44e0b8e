/* Spool files: what a pass writes for its group that is too big to keep in
 * memory until every group is mapped (export's JSON text, validate's listed
 * launches), written to a file of its own in a private temporary directory
 * and read back in input order by the command. One file per group, closed
 * between the map and the merge: a job of thousands of host groups must not
 * hold a descriptor per group.
 *
 * The directory is made with mkdtemp (mode 0700) next to the command's output
 * file when it has one (the output's disk is the one that must hold it
 * anyway), else in $TMPDIR or /tmp; each file is created O_EXCL|O_NOFOLLOW.
 * lens_spool_dir_free removes every file made in it and the directory; so
 * does a SIGINT, SIGTERM, SIGHUP or SIGPIPE that ends the command (caught
 * only where left at its default). A SIGKILL leaves .nccl-lens-CMD-XXXXXX. */
#ifndef NCCL_LENS_CLI_SPOOL_H
#define NCCL_LENS_CLI_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct lens_spool_dir;

/* near: the output file (NULL or "-": none). NULL after one error line
 * ("nccl-lens CMD: cannot make a temporary directory ..."). */
struct lens_spool_dir *lens_spool_dir_new(const char *cmd, const char *near);
/* Removes the files made in it and the directory; NULL-safe. */
void lens_spool_dir_free(struct lens_spool_dir *d);
/* A new file in d for writing ("wb"); its name (for lens_spool_open and
 * lens_spool_remove) goes into name[len]. Thread-safe. NULL on error (errno). */
FILE *lens_spool_create(struct lens_spool_dir *d, char *name, size_t len);
/* Opens a file made by lens_spool_create for reading. */
FILE *lens_spool_open(const struct lens_spool_dir *d, const char *name);
/* Removes one file early (its bytes are copied out). */
void lens_spool_remove(const struct lens_spool_dir *d, const char *name);

#endif
