/* Shared between the BPF program (lens_sched.bpf.c) and its loader
 * (tools/sched/): the ring-buffer record, the watch entry, the per-thread
 * state and histograms kept in slots, and the counters. Only <linux/types.h> types,
 * so both the BPF target and the host compiler see the same layout. */
#ifndef NCCL_LENS_SCHED_BPF_H
#define NCCL_LENS_SCHED_BPF_H

#include <linux/types.h>

/* Kinds, numerically equal to enum lens_sched_kind in trace_format.h. */
#define LENS_BPF_RUNQ_WAIT 1 /* woken, until on CPU */
#define LENS_BPF_PREEMPT 2   /* switched out while runnable (preempted or yielded), until on CPU */
#define LENS_BPF_OFFCPU 3    /* blocked (sleeping), until woken */
#define LENS_BPF_KINDS 4

/* Where a watched thread stands, as last seen by the probe. */
#define LENS_PHASE_UNKNOWN 0  /* just added to the watch map */
#define LENS_PHASE_RUNNING 1
#define LENS_PHASE_BLOCKED 2  /* switched out with prev_state != TASK_RUNNING */
#define LENS_PHASE_RUNQ 3     /* woken, waiting for a CPU */
#define LENS_PHASE_PREEMPT 4  /* switched out runnable, waiting for a CPU */

#define LENS_HIST_BUCKETS 32 /* log2(microseconds) */

/* Value of the `watched` hash (host tid -> watch), written by the loader
 * only. The probe reads it only for tids past the bitmap and tid_slots
 * (kernel.pid_max raised after the probe was loaded). */
struct lens_bpf_watch {
  __u32 slot;            /* index into `slots`, where its state and histograms live (gen, ns_tid there) */
};

/* Per-thread state of a watched thread, inside its slot (below); the probe
 * owns every field and resets them when the slot's gen changes. */
struct lens_bpf_tstate {
  __u64 since_ns;        /* bpf_ktime_get_ns() when the phase began */
  __u32 phase;           /* LENS_PHASE_* */
  __u32 prev_state;      /* state at the last switch-out */
  __u32 culprit_pid;     /* PREEMPT: the task that took the CPU */
  __u32 culprit_tid;
  char culprit_comm[16];
  __u32 cpu;             /* CPU it left (PREEMPT/BLOCKED) */
  __u32 pad;
};

/* Per CPU (array map "cpus", indexed by CPU number): who held this CPU
 * longest while a watched thread waited for it. One waiter slot per CPU: a
 * second watched thread waiting on the same CPU falls back to `prev` at its
 * switch-in. Updated only under that CPU's run-queue lock (sched_switch on
 * it, sched_wakeup of a task queued on it). */
struct lens_bpf_cpu {
  __u64 since_ns;        /* start of the current holder's turn within the wait */
  __u64 best_ns;         /* longest turn so far */
  __u32 waiter_tid;      /* watched thread waiting here, 0 none */
  __u32 best_pid;
  __u32 best_tid;
  __u32 pad;
  char best_comm[16];
  /* Each CPU writes its slot at every switch while a thread waits: a whole
   * cache line each, or neighbouring CPUs would bounce one line between them. */
  __u8 line_pad[16];
};

/* One ring-buffer record per wait. */
struct lens_bpf_sample {
  __u64 start_ns;        /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
  __u64 end_ns;
  __u32 kind;            /* LENS_BPF_* */
  __u32 pid;             /* tgid, init pid namespace */
  __u32 tid;
  __u32 cpu;             /* CPU it got back on (RUNQ/PREEMPT) or was woken on (OFFCPU) */
  __u32 culprit_pid;     /* 0 unknown / idle */
  __u32 culprit_tid;
  __u32 prev_state;
  __u32 ns_tid;
  char culprit_comm[16];
};

/* Histograms of one (tid, kind), as the loader hands them to its caller. */
struct lens_bpf_hist_key {
  __u32 tid;
  __u32 kind;
};
struct lens_bpf_hist {
  __u64 buckets[LENS_HIST_BUCKETS];
};

/* Array map "slots": one per watched thread, assigned by the loader, which
 * writes tid, gen and ns_tid (and zeroes the rest) before it publishes the
 * watch (tid_slots entry, then the bit). The probe finds a watched thread's
 * slot with two inlined array loads (bit, then tid_slots) and keeps the
 * thread's state and histograms in it; a gen it has not seen (st_gen) means
 * a new watch: state reset. Read by the loader by index; hist[kind - 1]. */
#define LENS_BPF_SLOTS 4096 /* slot + 1 fits the 16-bit tid_slots entries */
struct lens_bpf_slot {
  __u32 tid;             /* loader */
  __u32 gen;             /* loader: watch generation, never 0 */
  __u32 ns_tid;          /* loader: tid in the target's own pid namespace */
  __u32 st_gen;          /* probe: the gen `st` belongs to */
  struct lens_bpf_tstate st;
  __u8 line_pad[64];     /* header + state: two lines; histograms start on a line of their own */
  struct lens_bpf_hist hist[LENS_BPF_KINDS - 1];
};

/* Array map "tid_slots": slot + 1 of each watched tid (0: none), four
 * 16-bit entries per word (word = tid / 4), sized from kernel.pid_max. */
#define LENS_TID_SLOTS_PER_WORD 4

/* Per-CPU counters (array map "counters"). */
#define LENS_CNT_SAMPLES 0      /* records submitted */
#define LENS_CNT_RINGBUF_FULL 1 /* records lost: ring buffer full */
#define LENS_CNT_HIST_FULL 2    /* waits lost to histograms and samples (none since slots replaced task storage; kept for the trace format) */
#define LENS_CNT_N 3

#endif
