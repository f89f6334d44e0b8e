/* A small trace holding every record type and every payload field, with
 * known values the tests assert on. Shared by reader and CLI tests. */
#ifndef NCCL_LENS_TEST_SAMPLE_TRACE_H
#define NCCL_LENS_TEST_SAMPLE_TRACE_H

#include <stdint.h>

#include "nccl-lens/trace_format.h"

#define S_PID 4242u
#define S_CTX 0xC0FFEE00ull
#define S_COMM_ID 0xABCDEFull
#define S_GPU0 1700000000000000000ull

/* Ids of the sample's events (slot 1 app, 2 proxy, 3 net). */
#define S_GROUP_API LENS_ID_MAKE(LENS_T_GROUP_API, 1, 1)
#define S_COLL_API LENS_ID_MAKE(LENS_T_COLL_API, 1, 2)
#define S_LAUNCH LENS_ID_MAKE(LENS_T_KERNEL_LAUNCH, 1, 3)
#define S_GROUP LENS_ID_MAKE(LENS_T_GROUP, 1, 4)
#define S_COLL LENS_ID_MAKE(LENS_T_COLL, 1, 5)
#define S_P2P_API LENS_ID_MAKE(LENS_T_P2P_API, 1, 6)
#define S_P2P LENS_ID_MAKE(LENS_T_P2P, 1, 7)
#define S_CE_COLL LENS_ID_MAKE(LENS_T_CE_COLL, 1, 8)
#define S_CE_SYNC LENS_ID_MAKE(LENS_T_CE_SYNC, 1, 9)
#define S_CE_BATCH LENS_ID_MAKE(LENS_T_CE_BATCH, 1, 10)
#define S_CTRL LENS_ID_MAKE(LENS_T_PROXY_CTRL, 2, 1)
#define S_OP LENS_ID_MAKE(LENS_T_PROXY_OP, 2, 2)
#define S_STEP LENS_ID_MAKE(LENS_T_PROXY_STEP, 2, 3)
#define S_KCH LENS_ID_MAKE(LENS_T_KERNEL_CH, 2, 4)
#define S_NET LENS_ID_MAKE(LENS_T_NET_PLUGIN, 3, 1)

/* Coll: AllReduce of 1 MiB float32 (262144 elements), started at 150 ns
 * (CollApi at 110), stopped at 200; its ProxyOp stops at 1000150 and its
 * KernelCh at 900000: completion 1000150, so 1 MiB / 1 ms. */
#define S_COLL_COUNT 262144ull
#define S_COLL_START 150ull
#define S_COLL_API_START 110ull
#define S_COLL_STOP 200ull
#define S_OP_STOP 1000150ull
#define S_KCH_STOP 900000ull

/* Writes the sample. With session > 0 a second session is appended by a
 * second call on the same builder (see tests). */
struct tb;
void sample_trace_session(struct tb *t, uint32_t session, uint32_t pid, const char *host);
void sample_trace_write(const char *path);
/* The sample as one process of its own: this pid on this host (one session). */
void sample_trace_write_as(const char *path, uint32_t pid, const char *host);

#endif
