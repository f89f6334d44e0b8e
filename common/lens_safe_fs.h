/* Files in directories other users may touch: the registry directory (the
 * plugin's .reg, .live, .dump files and the probe's .sched pages) and the
 * trace output directory.
 *
 * The rules (docs/security.md):
 *  - A directory is used through a file descriptor, opened O_NOFOLLOW and
 *    checked with fstat: a real directory, owned by the expected user, and
 *    not writable by group or other (a site's shared directory may be, if it
 *    is sticky and owned by root or the caller: LENS_DIR_SHARED_STICKY).
 *    Every later operation is relative to that descriptor (openat, renameat,
 *    unlinkat), so a path swapped after the check changes nothing.
 *  - A file is created O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC under a fresh
 *    temporary name, filled, then renamed into place: no planted symlink,
 *    hard link or FIFO is ever opened for writing.
 *  - A file is read O_NOFOLLOW|O_NONBLOCK, then fstat must show a regular
 *    file with one link, the expected owner and a bounded size; it is read
 *    with read(), never mapped, so a file that shrinks reads short instead of
 *    raising SIGBUS.
 *
 * Nothing here logs: each call fills `why` (a short reason) and the caller
 * logs once through its own logger. No call blocks on a FIFO or device. */
#ifndef LENS_SAFE_FS_H
#define LENS_SAFE_FS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Owner not checked (a reader that accepts anyone's file). */
#define LENS_ANY_UID ((uid_t)-1)

enum lens_dir_policy {
  LENS_DIR_PRIVATE = 0,       /* owner's only: no group/other write bit */
  LENS_DIR_SHARED_STICKY = 1, /* also accepted: sticky (1777-like), owned by root or the expected owner */
};

/* The registry directory when NCCL_LENS_REGISTRY_DIR is unset or empty:
 * $XDG_RUNTIME_DIR/nccl-lens when XDG_RUNTIME_DIR is an absolute path, else
 * /tmp/nccl-lens-<euid>. Returns 0, or -1 if it does not fit in len. */
int lens_registry_default_dir(char *out, size_t len);
/* The same for another process: its XDG_RUNTIME_DIR (NULL if unset) and euid. */
int lens_registry_dir_for(const char *xdg_runtime_dir, uid_t uid, char *out, size_t len);

/* Opens the directory `path` (O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC),
 * creating its last component with mode 0700 if it is missing and `create` is
 * set (the parents must exist: they are not ours to create in a shared
 * place). Then checks it (see above) for `owner` and `policy`. Returns the
 * descriptor, or -1 with errno set and `why` filled ("owned by uid 1001, not
 * 0", "a symbolic link", "writable by others", ...). */
int lens_dir_open(const char *path, int create, uid_t owner, enum lens_dir_policy policy, char *why,
                  size_t why_len);

/* The same checks on an already open directory descriptor. 0 or -1 + why. */
int lens_dir_check(int dirfd, uid_t owner, enum lens_dir_policy policy, char *why, size_t why_len);

/* Creates a fresh file in dirfd, O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC
 * with `mode`, named ".<stem>.<unique>.tmp"; its name goes to tmp_name.
 * Returns the descriptor or -1. */
int lens_tmp_create(int dirfd, const char *stem, mode_t mode, char *tmp_name, size_t tmp_len);

/* Renames tmp_name onto name in dirfd (replacing a file or a planted link,
 * never following it). On failure removes tmp_name. 0 or -1 (errno). */
int lens_tmp_commit(int dirfd, const char *tmp_name, const char *name);

/* Writes len bytes to dirfd/name: a fresh temporary file, written whole,
 * then renamed into place. 0 or -1 (errno; nothing left behind). */
int lens_file_replace(int dirfd, const char *name, mode_t mode, const void *data, size_t len);

/* Creates dirfd/name itself with O_CREAT|O_EXCL|O_NOFOLLOW (no rename): for
 * a file whose existence is the message (a dump request). -1 + errno (EEXIST
 * if anything, even a dangling link, is there). */
int lens_file_create_excl(int dirfd, const char *name, mode_t mode);

/* Opens dirfd/name (dirfd may be AT_FDCWD with a path) for reading:
 * O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC, then fstat: a regular file, one
 * link, owned by `owner` (unless LENS_ANY_UID), at most max_size bytes.
 * Fills *st. Returns the descriptor or -1 with errno and why. */
int lens_file_open_read(int dirfd, const char *name, uid_t owner, off_t max_size, struct stat *st, char *why,
                        size_t why_len);

/* Reads up to cap bytes from fd (from offset 0, pread; EINTR retried). A
 * file that shrank reads short. Returns the bytes read or -1. */
ssize_t lens_read_upto(int fd, void *buf, size_t cap);

/* lens_file_open_read + lens_read_upto + NUL: a small text file, whole.
 * Fails (-1, errno EFBIG) if it holds more than cap-1 bytes. */
ssize_t lens_file_read_text(int dirfd, const char *name, uid_t owner, char *buf, size_t cap, char *why,
                            size_t why_len);

/* A process's identity, to tell a live process from a reused pid.
 * start_ticks: field 22 of /proc/<pid>/stat (clock ticks since boot, shifted
 * into the reader's time namespace); 0 if the process is gone, a zombie or
 * unreadable. */
uint64_t lens_proc_start_ticks(int pid);
/* Effective uid of /proc/<pid> (second field of "Uid:"), 0 ok / -1. */
int lens_proc_uid(int pid, uid_t *uid);
/* The inode of /proc/<pid>/ns/<kind> ("pid", "time", ...; pid 0: our own),
 * 0 if unknown (a process gone, a kernel without that namespace): files
 * naming a pid are only judged by a process of the same pid namespace. */
uint64_t lens_proc_ns(int pid, const char *kind);

#endif
