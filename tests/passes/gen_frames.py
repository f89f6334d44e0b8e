#!/usr/bin/env python3
"""lens-gen-job cuts its frames by the plugin writer's rules (docs/scale.md,
the generator): a thread slot's EVENTS_PACKED chunk is written once it holds
--frame-kib of varint stream (64 KiB, LENS_FRAME_STREAM_BYTES) and every
open frame every --frame-ms of the host's clock (100, LENS_FRAME_MAX_AGE_MS).
Checked from the chunks' own headers (the stream's size, lens_packed_hdr
body_bytes) and from lens-window-plan's span of a chunk's records; each
check can fail: a frame past its stream bound, frames of the old 256 KiB
chunks (about 200 ms), a tick that does not cut, a stream bound that does
not cut. And --profiler-thread (NCCL 2.31's layout: KernelCh reported from
a thread of their own) writes that thread's frames (slot 2, none without
it) and changes no answer: `job --json` the same, every KernelCh mapped.
Usage: gen_frames.py GEN PLAN LENS"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

GEN, PLAN, LENS = sys.argv[1], sys.argv[2], sys.argv[3]
EVENTS_PACKED = 14
REC_MAX_PACKED = 2 * 256 + 16  # a record packs to at most 2 x size + 16 bytes (lens_pack.c), size <= 256
fails = []


def frames(d):
    """(slot, stream bytes, raw bytes) of every EVENTS_PACKED chunk of every trace in d."""
    out = []
    for name in sorted(os.listdir(d)):
        if not name.endswith(".lens"):
            continue
        b = open(os.path.join(d, name), "rb").read()
        off = 64
        while off + 32 <= len(b):
            _magic, ctype, _flags, plen = struct.unpack_from("<IHHI", b, off)
            if ctype == EVENTS_PACKED:
                slot, _count, raw, body = struct.unpack_from("<IIII", b, off + 32)
                out.append((slot, body, raw))
            off += 32 + plen + (-plen % 8)
    return out


def span_ms(d):
    txt = subprocess.run([PLAN, "--gpu", "none", d], check=True, capture_output=True, text=True).stdout
    m = re.search(r"a chunk's records span ([0-9.]+) ms on average", txt)
    if not m:
        fails.append("lens-window-plan printed no span: " + txt)
        return 0.0
    return float(m.group(1))


def gen(d, *extra):
    subprocess.run([GEN, "-o", d, "--ranks", "8", "--hosts", "2", "--events", "2000000", *extra], check=True,
                   capture_output=True)


with tempfile.TemporaryDirectory(prefix="lens-gen-frames-") as t:
    dflt, slow, small = (os.path.join(t, x) for x in ("dflt", "slow", "small"))
    gen(dflt)
    gen(slow, "--frame-ms", "1000")
    gen(small, "--frame-kib", "4")
    f_d, f_s, f_k = frames(dflt), frames(slow), frames(small)
    s_d, s_s = span_ms(dflt), span_ms(slow)
    print(f"default: {len(f_d)} frames, records span {s_d:.1f} ms, stream max {max(b for _, b, _ in f_d)} B; "
          f"--frame-ms 1000: {len(f_s)} frames, {s_s:.1f} ms; --frame-kib 4: {len(f_k)} frames, "
          f"stream max {max(b for _, b, _ in f_k)} B")
    if not f_d:
        fails.append("no EVENTS_PACKED chunk in a zstd job")
    for name, fr, bound in (("default", f_d, 64 * 1024), ("--frame-kib 4", f_k, 4 * 1024)):
        over = [b for _, b, _ in fr if b >= bound + REC_MAX_PACKED]
        if over:
            fails.append(f"{name}: {len(over)} frames hold more than {bound} B of stream and a record: {over[:5]}")
        if any(r > 2 << 20 for _, _, r in fr):
            fails.append(f"{name}: a frame over LENS_FRAME_RAW_MAX of fixed records")
    # the tick cuts: a chunk's records span at most the tick (an instance is 2 ms)
    if not 0 < s_d <= 100.0:
        fails.append(f"default frames' records span {s_d} ms on average, not within the 100 ms tick")
    if not s_s > 2 * s_d or not len(f_s) * 2 < len(f_d):
        fails.append(f"--frame-ms 1000 did not make longer, fewer frames: {s_s} ms x {len(f_s)} "
                     f"against {s_d} ms x {len(f_d)}")
    # the stream bound cuts: 4 KiB frames are many more, and most of a slot's frames reach the bound
    full = sum(1 for _, b, _ in f_k if b >= 4 * 1024)
    if not len(f_k) > 2 * len(f_d) or full * 2 < len(f_k):
        fails.append(f"--frame-kib 4 did not cut at 4 KiB of stream: {len(f_k)} frames ({full} full) "
                     f"against {len(f_d)}")
    prof = os.path.join(t, "prof")
    gen(prof, "--profiler-thread")
    slots_d, slots_p = {s for s, _, _ in f_d}, {s for s, _, _ in frames(prof)}
    print(f"frames' slots: default {sorted(slots_d)}, --profiler-thread {sorted(slots_p)}")
    if 2 in slots_d or 2 not in slots_p:
        fails.append(f"--profiler-thread: slot 2's frames {sorted(slots_p)}, without it {sorted(slots_d)}")

    def lens(*args):
        return subprocess.run([LENS, *args], check=True, capture_output=True, text=True).stdout

    if lens("job", "--json", dflt) != lens("job", "--json", prof):
        fails.append("--profiler-thread changed job --json")
    acc = [json.loads(lens("summary", "--json", d))["accuracy"]["kernel_ch_time_source"] for d in (dflt, prof)]
    if acc[0] != acc[1] or not acc[1].get("gpu-ptimer") or acc[1].get("host-notice"):
        fails.append(f"--profiler-thread: KernelCh time sources {acc[1]}, default {acc[0]}")
    bad = subprocess.run([GEN, "-o", os.path.join(t, "bad"), "--frame-ms", "0"], capture_output=True)
    if bad.returncode != 2:
        fails.append(f"--frame-ms 0 exits {bad.returncode}, not 2")

for f in fails:
    print("FAIL:", f)
if not fails:
    print("gen_frames: all checks passed")
sys.exit(1 if fails else 0)
