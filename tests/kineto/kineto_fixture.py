#!/usr/bin/env python3
"""Writes torch.profiler-like (Kineto) files for a replay run, from its ground truth.

    kineto_fixture.py TRUTH.json OUTDIR

For every process of the replay (one rank each: --ranks-per-node 1), one Kineto file
OUTDIR/rank<R>.json[.gz] as spec/pytorch.md §1 describes them: header keys, "M" rows,
per NCCL launch a record_param_comms cpu_op, a cuLaunchKernelEx driver call, an ac2g
flow and the kernel on the GPU row (pid = device 0, tid = stream 20), at the truth's
GPU kernel span on CLOCK_REALTIME (the truth's REALTIME - MONOTONIC) plus a constant
offset and a jitter (what CUPTI's own time mapping adds), plus events nccl-lens knows
nothing of: compute kernels on stream 7, python functions with escapes and non-ASCII
names. NCCL kernel names lie as NCCL's do: every kernel is named *_RING_LL whatever
ran (spec §1). Rank 0 is modern (baseTimeNanoseconds, ts with three decimals, gzip'd,
compact); rank 1 is the pre-2024 layout (absolute integer us, no base, indented), with
one of its NCCL kernels left out (a lost CUPTI record); rank 0 has one NCCL kernel no
trace knows of (a decoy: must stay unmatched and be named).
Also writes OUTDIR/expect.json: per rank, per kernel correlation, what really ran."""
import gzip
import json
import random
import re
import sys

EXTRA_NS = 23456          # CUPTI's mapping vs ours: the fine offset the merge must find
JITTER_NS = 300           # per-kernel noise of that mapping
BASE_STEP_NS = 7889238 * 10**9


def main():
    truth = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    rnd = random.Random(7)
    expect = {}
    for p in truth["processes"]:
        rank = p["ranks"][0]["rank"]
        world = truth["nranks"]
        r2m = p["realtime_minus_mono_ns"]
        modern = rank == 0
        launches = {}
        for o in p["ops"]:
            if o["rank"] != rank or o["graph_replay"] != -1 or not o["kernel_start_ns"] or not o["emitted"]:
                continue
            launches.setdefault(o["launch_start_ns"], []).append(o)
        keys = sorted(launches)
        first_real = keys[0] + r2m
        base = (first_real // BASE_STEP_NS) * BASE_STEP_NS if modern else 0

        def num(text):  # a JSON number written as Kineto writes it (placed after json.dumps)
            return "@@N:%s@@" % text

        def us(ns):
            return num("%d.%03d" % (ns // 1000, ns % 1000)) if modern else num("%d" % round(ns / 1000))

        def ts(mono_ns, jitter=0):
            return us(mono_ns + r2m + EXTRA_NS + jitter - base)

        def host_ts(mono_ns):
            return us(mono_ns + r2m - base)

        ev = []
        pid = p["pid"]
        ev.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python3"}})
        ev.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}})
        ev.append({"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python3"}})
        ev.append({"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}})
        ev.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": 20, "args": {"name": "stream 20"}})
        ev.append({"ph": "X", "cat": "python_function", "name": "train.py(12): step \u00fc \"q\" / \\ \u4e2d",
                   "pid": pid, "tid": pid, "ts": host_ts(keys[0] - 50000), "dur": us(1000),
                   "args": {"Python id": 1, "note": "tab\there, slash / kept", "big": 12345678901234567,
                            "f": 1.5e-7, "list": [1, {"a": None}, True]}})
        corr = 100
        exp = {}
        dropped = False
        for i, k in enumerate(keys):
            ops = launches[k]
            ks = min(o["kernel_start_ns"] for o in ops)
            ke = max(o["kernel_end_ns"] for o in ops)
            corr += 3
            ext = 5000 + i
            o0 = ops[0]
            name = "ncclDevKernel_%s_RING_LL(ncclDevKernelArgsStorage<4096ul>)" % o0["func"]
            ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": pid, "tid": pid,
                       "ts": host_ts(k - 3000), "dur": us(2500),
                       "args": {"External id": ext, "Rank": rank, "Collective name": o0["func"].lower()}})
            ev.append({"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": pid, "tid": pid,
                       "ts": host_ts(k), "dur": us(4000),
                       "args": {"cbid": 652, "correlation": corr, "External id": ext}})
            ev.append({"ph": "s", "id": corr, "pid": pid, "tid": pid, "ts": host_ts(k), "cat": "ac2g", "name": "ac2g"})
            if not modern and i == len(keys) // 2 and not dropped:
                dropped = True      # a kernel record CUPTI lost: our launch has no kernel here
                continue
            j = rnd.randint(-JITTER_NS, JITTER_NS)
            tid = 20 + o0["comm"]  # one NCCL stream per communicator (per process group in PyTorch)
            kev = {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": tid, "ts": ts(ks, j),
                   "dur": us(ke - ks) if modern else num("%d" % (round((ke - ks) / 1000) + 1)),
                   "args": {"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": tid,
                            "correlation": corr, "registers per thread": 96, "grid": [2, 1, 1], "block": [512, 1, 1],
                            "Collective name": o0["func"].lower(), "In msg nelems": o0["count"], "Group size": world,
                            "dtype": "Float", "Process Group Name": "0", "Process Group Ranks": "[0, 1]"}}
            ev.append(kev)
            ev.append({"ph": "f", "id": corr, "pid": 0, "tid": tid, "ts": ts(ks, j), "cat": "ac2g", "name": "ac2g",
                       "bp": "e"})
            # a compute kernel on the compute stream right after it (not NCCL's)
            ev.append({"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int)",
                       "pid": 0, "tid": 7, "ts": ts(ke + 2000), "dur": us(3000),
                       "args": {"correlation": corr + 1, "device": 0, "stream": 7}})
            colls = [o for o in ops if o["kind"] == "coll"]
            exp[str(corr)] = {"funcs": sorted(set(o["func"] for o in ops)),
                              "algo": colls[0]["algo"] if colls else None,
                              "proto": colls[0]["proto"] if colls else None,
                              "seq": colls[0]["seqNumber"] if colls else None,
                              "nChannels": max(o["nChannels"] for o in ops),
                              "ops": [o["id"] for o in ops]}
        if modern:  # a decoy: an NCCL kernel of a communicator nobody traced
            last = keys[-1] + 5000000
            ev.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                       "pid": 0, "tid": 20, "ts": ts(last), "dur": us(10000), "args": {"correlation": 999999, "device": 0,
                                                                                       "stream": 20}})
        doc = {"schemaVersion": 1,
               "deviceProperties": [{"id": 0, "name": "NVIDIA B200", "totalGlobalMem": 191503138816}],
               "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
               "displayTimeUnit": "ms"}
        if modern:
            doc["baseTimeNanoseconds"] = base
        doc["traceEvents"] = ev
        doc["traceName"] = "rank%d" % rank
        text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False) if modern else json.dumps(doc, indent=2)
        text = re.sub(r'"@@N:([-0-9.]+)@@"', r"\1", text)
        # the escaped slash as Kineto's writer may leave it (still the same string)
        text = text.replace("slash / kept", "slash \\/ kept")
        if modern:
            with gzip.open("%s/rank%d.json.gz" % (out, rank), "wb") as f:
                f.write(text.encode())
        else:
            with open("%s/rank%d.json" % (out, rank), "w") as f:
                f.write(text + "\n")
        exp["_clock"] = {"pid": pid, "realtime_minus_mono_ns": r2m, "base_ns": base, "extra_ns": EXTRA_NS,
                         "jitter_ns": JITTER_NS, "us_rounding_ns": 0 if modern else 500}
        expect[str(rank)] = exp
    json.dump(expect, open(out + "/expect.json", "w"))


if __name__ == "__main__":
    main()
