/* Per-process registry of threads, published by the plugin for the eBPF probe.
 *
 * File: $NCCL_LENS_REGISTRY_DIR/<pid>.reg, where <pid> is getpid() in the
 * plugin's own pid namespace. The default directory is per user:
 * $XDG_RUNTIME_DIR/nccl-lens when set, else /tmp/nccl-lens-<uid>, created
 * 0700 and used only when it is a real directory owned by the user and not
 * writable by others (docs/security.md). Written by the plugin's writer
 * thread to a fresh O_EXCL temporary, then renamed, so a reader never sees
 * half a file; mode 0600, at most LENS_REGISTRY_MAX_BYTES.
 * Removed when the plugin's last communicator finalizes or the process exits.
 * A probe in another pid/mount namespace reaches it as
 * /proc/<host-pid>/root/<dir>/<nspid>.reg.
 *
 * Text, one record per line, fields separated by one space:
 *   nccl-lens-registry 1
 *   pid <pid>                       own namespace
 *   start <ticks>                   /proc/<pid>/stat field 22 (with pid: which process)
 *   pidns <inode>                   of /proc/self/ns/pid
 *   nspid <p0> <p1> ...             /proc/self/status NSpid, outermost first
 *   trace <absolute path of the .lens trace>
 *   thread <tid> <outer_tid> <roles-hex> <rank> <comm_index>
 * roles use LENS_ROLE_* from trace_format.h; rank/comm_index are -1 when unknown.
 * Unknown lines must be ignored by readers. */
#ifndef NCCL_LENS_REGISTRY_H
#define NCCL_LENS_REGISTRY_H
#define LENS_REGISTRY_MAGIC "nccl-lens-registry"
#define LENS_REGISTRY_VERSION 1
#define LENS_REGISTRY_MAX_BYTES (256 * 1024)
/* The default directory's description, for help texts. */
#define LENS_REGISTRY_DEFAULT_DESC "$XDG_RUNTIME_DIR/nccl-lens, else /tmp/nccl-lens-<uid>"
#endif
