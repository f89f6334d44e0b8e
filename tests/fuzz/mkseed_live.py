#!/usr/bin/env python3
"""A live page (<pid>.live, include/nccl-lens/live.h) in fuzz_live_page's
compact form: the header, its n_comms communicators, its n_series series,
then its newest instances (at most MAX). usage: mkseed_live.py PAGE OUT [MAX]"""
import struct
import sys

HDR, COMM, SERIES, INST = 176, 88, 720, 56
COMMS, NSERIES, RECENT = 64, 256, 8192
page = open(sys.argv[1], "rb").read()
most = int(sys.argv[3]) if len(sys.argv) > 3 else 64
recent_total = struct.unpack_from("<Q", page, 160)[0]
n_comms, n_series = struct.unpack_from("<II", page, 168)
nc, ns = min(n_comms, COMMS), min(n_series, NSERIES)
out = bytearray(page[:HDR])
out += page[HDR:HDR + nc * COMM]
base = HDR + COMMS * COMM
out += page[base:base + ns * SERIES]
base += NSERIES * SERIES
n = min(recent_total, RECENT, most)
for k in range(n):
    i = (recent_total - n + k) % RECENT
    out += page[base + i * INST:base + (i + 1) * INST]
open(sys.argv[2], "wb").write(out)
