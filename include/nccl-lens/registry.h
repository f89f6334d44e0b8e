/* Per-process registry of threads, published by the plugin for the eBPF probe.
 *
 * File: $NCCL_LENS_REGISTRY_DIR/<pid>.reg (default dir /tmp/nccl-lens), where
 * <pid> is getpid() in the plugin's own pid namespace. Written by the plugin's
 * writer thread with write-to-temp + rename, so a reader never sees half a file.
 * Removed when the plugin's last communicator finalizes or the process exits.
 * A probe in another pid/mount namespace reaches it as
 * /proc/<host-pid>/root/<dir>/<nspid>.reg.
 *
 * Text, one record per line, fields separated by one space:
 *   nccl-lens-registry 1
 *   pid <pid>                       own namespace
 *   nspid <p0> <p1> ...             /proc/self/status NSpid, outermost first
 *   trace <absolute path of the .lens trace>
 *   thread <tid> <outer_tid> <roles-hex> <rank> <comm_index>
 * roles use LENS_ROLE_* from trace_format.h; rank/comm_index are -1 when unknown.
 * Unknown lines must be ignored by readers. */
#ifndef NCCL_LENS_REGISTRY_H
#define NCCL_LENS_REGISTRY_H
#define LENS_REGISTRY_MAGIC "nccl-lens-registry"
#define LENS_REGISTRY_VERSION 1
#define LENS_REGISTRY_DEFAULT_DIR "/tmp/nccl-lens"
#endif
