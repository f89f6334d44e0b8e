/* Stand-ins for the plugin core's services used by the cupti folder, so the CUPTI
 * session can be tested alone: config from NCCL_LENS_CUPTI (as the core
 * parses it), log lines kept, writer submissions kept. */
#ifndef NCCL_LENS_TESTS_CUPTI_FAKES_H
#define NCCL_LENS_TESTS_CUPTI_FAKES_H

#include <stddef.h>
#include <stdint.h>

extern int fake_log_lines;
extern char fake_last_log[1024];
extern int fake_chunks;          /* LENS_CHUNK_CUPTI submissions */
extern uint32_t fake_chunk_len;  /* of the last one */
extern uint8_t fake_chunk[256];  /* its first bytes */
extern uint64_t fake_cupti_drops;

#endif
