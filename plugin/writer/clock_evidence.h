/* Clock evidence (CLOCK chunks) for aligning hosts offline: written by the
 * writer thread only, at session start, about every second and at the end. */
#ifndef NCCL_LENS_PLUGIN_CLOCK_EVIDENCE_H
#define NCCL_LENS_PLUGIN_CLOCK_EVIDENCE_H

#include "nccl-lens/trace_format.h"

/* Reads the clocks and the host facts into r (boot id, namespace offset and
 * host name are read again when fresh is set: at a session's start). */
void lens_clock_evidence_take(struct lens_clock_rec *r, int fresh);
/* Takes a sample and writes it as a CLOCK chunk. */
void lens_clock_evidence_write(int fresh);

#endif
