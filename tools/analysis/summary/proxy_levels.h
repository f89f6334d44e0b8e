/* ProxyCtrl events are short (spec §2.5): each records one transition. The
 * proxy thread's state is a level that holds between them: Active/Idle from
 * one record 14/13 to the next on the same thread; Sleep from record 15 to
 * its Wakeup (16); Append from 17 to AppendEnd (18). This walks those
 * intervals per thread. Active, Idle and Sleep partition the thread's time
 * (a Sleep cuts the Active/Idle level around it); Append lies inside them. */
#ifndef NCCL_LENS_PROXY_LEVELS_H
#define NCCL_LENS_PROXY_LEVELS_H

#include <stdint.h>

#include "lensread.h"

enum lens_proxy_level { LENS_PL_ACTIVE = 0, LENS_PL_SLEEP = 1, LENS_PL_IDLE = 2, LENS_PL_APPEND = 3 };

typedef void (*lens_proxy_level_cb)(void *arg, int32_t thread, int level, uint64_t from_ns, uint64_t to_ns);

/* Calls cb for every interval, thread by thread in time order. 0, or -1 (no memory). */
int lens_proxy_levels(const struct lens_model *m, lens_proxy_level_cb cb, void *arg);

#endif
