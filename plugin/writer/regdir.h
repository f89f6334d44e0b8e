/* The registry directory (NCCL_LENS_REGISTRY_DIR, else per user): where the
 * plugin publishes its thread registry (<pid>.reg), its live page
 * (<pid>.live) and takes recorder dump requests (<pid>.dump).
 *
 * Opened and checked once per session by the writer thread
 * (common/lens_safe_fs.h): a real directory owned by this process's euid and
 * not writable by others (a site's shared directory may be if sticky and
 * owned by root or us). If the check fails the plugin logs once and runs
 * without registry, live page and dump requests; the trace is unaffected.
 * Every file in it is then reached through this descriptor. Writer thread
 * only. */
#ifndef NCCL_LENS_PLUGIN_REGDIR_H
#define NCCL_LENS_PLUGIN_REGDIR_H

/* configured: NCCL_LENS_REGISTRY_DIR, "" for the per-user default.
 * Returns 0 when the directory is usable. */
int lens_regdir_open(const char *configured);
/* The checked directory's descriptor, or -1 (no registry this session). */
int lens_regdir_fd(void);
/* Its path, for messages ("" when none). */
const char *lens_regdir_path(void);
void lens_regdir_close(void);

/* Removes what processes that are gone left behind in the directory: the
 * .reg, .live, .dump files of a pid that no longer runs (or runs as another
 * process: its start time differs), and stale temporaries. Only files of our
 * own pid namespace that we own are judged. Returns the files removed. */
int lens_regdir_sweep(void);

#endif
