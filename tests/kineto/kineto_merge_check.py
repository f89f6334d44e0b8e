#!/usr/bin/env python3
"""Checks one merged Kineto file against its original (export --format kineto, docs/pytorch.md).

    kineto_merge_check.py ORIG OUT EXPECT.json TRUTH.json RANK [--job] [--decoy] [--min-match F]

Asserts, failing with one line per problem:
  - OUT is one JSON document, every original top-level key has its value;
  - bytes: OUT with our three kinds of additions taken out (the "nccl_lens" top-level key, the
    events after the last original one, and "nccl_lens ..." members at the end of args objects)
    is ORIG, byte for byte; and per event: every original event has the same keys and values
    (args may only gain "nccl_lens ..." keys, and only on NCCL kernels);
  - the fields HTA and TraceLens key on are still there (spec §1, §3);
  - at least --min-match of the NCCL kernels matched; the unmatched counted and named (--decoy: the
    fixture's decoy kernel among them);
  - what each matched kernel says ran is what the replay ran (EXPECT, by correlation), names lying
    about the protocol included;
  - every channel slice lies inside its kernel within the file's stated bound, and the bound is small;
    and where the replay's truth says that channel started (its true host time, on the fixture's
    REALTIME, plus the offset the fixture put in), within the bound and the fixture's own noise;
  - flows pair up; proxy rows sit on the CPU process;
  - --job (a job scenario): execution, wait and last rank on the kernels, the last rank the truth's.
Channel timers that the truth says were another item's (a proxy more than its 64-item ring behind, NCCL's
KernelCh hazard, which a loaded machine provokes in the replay) are input the merge cannot tell from good
ones: kernels annotated with such an operation, and their slices, are counted apart, and then the match
rate is not judged (the kernels around them shift)."""
import argparse
import decimal
import gzip
import json
import re
import sys

fails = []


def check(cond, msg):
    if not cond:
        fails.append(msg)
    return cond


def read(path):
    with open(path, "rb") as f:
        b = f.read()
    return gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b


def strip_additions(out, orig):
    """OUT less what the merge adds, or None (with a failure) when an addition is not where it may be."""
    tail = orig[orig.rindex(b"}"):]
    if not check(out.endswith(tail), "the output does not end as the original does"):
        return None
    p = out.rfind(b',"nccl_lens":{')
    if not check(p > 0, "no top-level nccl_lens key"):
        return None
    try:
        json.loads(out[p + len(b',"nccl_lens":'):len(out) - len(tail)])
    except ValueError as e:
        check(False, "the nccl_lens value is not JSON: %s" % e)
    out = out[:p] + tail
    q = out.find(b',\n{"ph":"M","name":"thread_name"')
    if q > 0:
        end = out.index(b"]", q)
        out = out[:q] + out[end:]
    out, n = re.subn(rb',"nccl_lens [^"]*":(?:"[^"\\]*"|-?[0-9.]+)', b"", out)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("orig")
    ap.add_argument("out")
    ap.add_argument("expect")
    ap.add_argument("truth")
    ap.add_argument("rank")
    ap.add_argument("--job", action="store_true")
    ap.add_argument("--decoy", action="store_true")
    ap.add_argument("--min-match", type=float, default=0.999)
    a = ap.parse_args()
    exp = json.load(open(a.expect))[a.rank]
    clk = exp.pop("_clock")
    truth = json.load(open(a.truth))
    proc = next(p for p in truth["processes"] if p["pid"] == clk["pid"])
    comm_of = {c["index"]: int(c["commId"], 16) for c in proc["comms"]}  # ids as numbers
    over_ops = {k["op"] for k in proc["kernel_ch"] if k["overrun"]}
    over = {(comm_of[o["comm"]], o["seqNumber"]) for o in proc["ops"] if o["id"] in over_ops}
    over_any = set()  # an instance any rank's timers lied about: the job view's decomposition of it too
    for p in truth["processes"]:
        cm = {c["index"]: int(c["commId"], 16) for c in p["comms"]}
        bad = {k["op"] for k in p["kernel_ch"] if k["overrun"]}
        over_any |= {(cm[o["comm"]], o["seqNumber"]) for o in p["ops"] if o["id"] in bad}
    lied = 0
    orig_b, out_b = read(a.orig), read(a.out)
    # numbers as written (Decimal): epoch microseconds with three decimals are beyond a double
    od = json.loads(orig_b, parse_float=decimal.Decimal)
    try:
        nd = json.loads(out_b, parse_float=decimal.Decimal)
    except ValueError as e:
        print("FAIL: %s is not JSON: %s" % (a.out, e))
        return 1
    # bytes
    stripped = strip_additions(out_b, orig_b)
    if stripped is not None and not check(stripped == orig_b, "bytes: the output less our additions is not the original"):
        i = next((k for k in range(min(len(stripped), len(orig_b))) if stripped[k] != orig_b[k]), None)
        fails.append("  first difference at byte %s: %r vs %r" % (i, stripped[i - 40:i + 40] if i else b"",
                                                                 orig_b[i - 40:i + 40] if i else b""))
    # top level
    for k, v in od.items():
        if k != "traceEvents":
            check(nd.get(k) == v, "top-level key %s changed" % k)
    oe, ne = od["traceEvents"], nd["traceEvents"]
    check(len(ne) >= len(oe), "events lost: %d -> %d" % (len(oe), len(ne)))
    edited = 0
    for i, o in enumerate(oe):
        n = ne[i]
        if not check(set(n) == set(o), "event %d: keys changed" % i):
            continue
        for k in o:
            if k == "args":
                for ak, av in o["args"].items():
                    check(n["args"].get(ak) == av, "event %d: args.%s changed" % (i, ak))
                extra = set(n["args"]) - set(o["args"])
                if extra:
                    edited += 1
                    check(all(x.startswith("nccl_lens ") for x in extra), "event %d: args gained %s" % (i, extra))
                    check(o.get("cat") == "kernel" and o.get("name", "").startswith("nccl"),
                          "event %d: a non-NCCL event was annotated" % i)
            else:
                check(n[k] == o[k], "event %d: %s changed" % (i, k))
    # what HTA and TraceLens key on (spec §1, §3)
    check(nd["distributedInfo"]["rank"] == int(a.rank), "distributedInfo.rank")
    for e in ne:
        if e.get("ph") == "X":
            check(all(k in e for k in ("name", "cat", "pid", "tid", "ts", "dur")), "an X event without its fields: %s" % e)
    nccl = [e for e in ne[:len(oe)] if e.get("cat") == "kernel" and e.get("name", "").startswith("nccl")]
    for e in nccl:
        check("correlation" in e["args"] and "External id" in e["args"] or "nccl_lens func" not in e["args"],
              "a matched kernel lost correlation / External id")
    # matching
    m = nd["nccl_lens"]
    check(m["nccl_kernels"] == len(nccl), "nccl_kernels %d, the file has %d" % (m["nccl_kernels"], len(nccl)))
    matched = [e for e in nccl if "nccl_lens func" in e["args"]]
    check(m["matched"] == len(matched) == edited, "matched %d, annotated %d" % (m["matched"], len(matched)))
    if not over:
        check(len(matched) >= a.min_match * len(nccl), "only %d of %d NCCL kernels matched" % (len(matched), len(nccl)))
    check(m["unmatched"] == len(nccl) - len(matched), "unmatched count")
    check(len(m["unmatched_kernels"]) == min(m["unmatched"], 32), "unmatched kernels not all named")
    if a.decoy and not over:
        check(any(u["name"].startswith("ncclDevKernel_Broadcast") for u in m["unmatched_kernels"]),
              "the decoy kernel is not named among the unmatched")
    # what ran
    lying = 0
    for e in matched:
        x = exp.get(str(e["args"]["correlation"]))
        if not check(x is not None, "kernel %s matched, but the fixture has no such launch" % e["args"]["correlation"]):
            continue
        g = e["args"]
        if (int(g["nccl_lens comm"], 16), g.get("nccl_lens seq")) in over:
            lied += 1
            continue
        check(g["nccl_lens func"].split("+") == x["funcs"] or sorted(g["nccl_lens func"].split("+")) == x["funcs"],
              "kernel %s: func %s, ran %s" % (g["correlation"], g["nccl_lens func"], x["funcs"]))
        if x["algo"]:
            check((g.get("nccl_lens algorithm"), g.get("nccl_lens protocol"), g.get("nccl_lens seq")) ==
                  (x["algo"], x["proto"], x["seq"]),
                  "kernel %s: %s/%s seq %s, ran %s/%s seq %s" % (g["correlation"], g.get("nccl_lens algorithm"),
                                                                 g.get("nccl_lens protocol"), g.get("nccl_lens seq"),
                                                                 x["algo"], x["proto"], x["seq"]))
            lying += "_" + x["proto"] + "(" not in e["name"]
        check(1 <= g["nccl_lens channels"] <= x["nChannels"], "kernel %s: channels" % g["correlation"])
    # placement
    bound = m["clock"]["bound_ns"]
    check(0 < bound < 20000, "fit bound %.0f ns: not small" % bound)
    # the truth of each channel: its true start on the host, as the fixture put host times into the file
    true_start = {(k["op"], k["channel"]): k["true_start_ns"] for k in proc["kernel_ch"]}
    noise = clk["jitter_ns"] + clk["us_rounding_ns"] + 1
    off_truth = 0
    by_corr = {e["args"]["correlation"]: e for e in matched}
    new = ne[len(oe):]
    chans = [e for e in new if e.get("cat") == "nccl_lens_channel"]
    check(len(chans) >= len(matched), "fewer channel slices than matched kernels")
    outside = 0
    for c in chans:
        k = by_corr.get(c["args"]["kernel correlation"])
        if not check(k is not None, "a channel slice of an unmatched kernel"):
            continue
        cid = c["args"].get("comm_id")
        if (int(cid, 16) if cid else None, c["args"].get("seq")) in over:
            continue
        s_ns, e_ns = round(c["ts"] * 1000), round((c["ts"] + c["dur"]) * 1000)
        ks, ke = round(k["ts"] * 1000), round((k["ts"] + k["dur"]) * 1000)
        outside += s_ns < ks - bound - 1 or e_ns > ke + bound + 1
        check(c["pid"] == k["pid"], "a channel slice off its kernel's GPU")
        ops = exp[str(k["args"]["correlation"])]["ops"]
        t = [true_start[(o, c["args"]["channel"])] for o in ops if (o, c["args"]["channel"]) in true_start]
        if check(t, "a channel slice the truth has no channel for"):
            # a launch of several operations (a Send and a Recv) has a channel of that number in each
            want = [w + clk["realtime_minus_mono_ns"] + clk["extra_ns"] - clk["base_ns"] for w in t]
            off_truth += min(abs(s_ns - w) for w in want) > bound + noise
    check(outside == 0, "%d of %d channel slices outside their kernel by more than the bound" % (outside, len(chans)))
    check(off_truth == 0, "%d of %d channel slices not where the truth puts them (within %.0f + %d ns)" %
          (off_truth, len(chans), bound, noise))
    check(m["kernel_ch_outside_bound"] == 0 or over, "the file says %d channel slices are outside" % m["kernel_ch_outside_bound"])
    # flows and proxy rows
    s_ids = [e["id"] for e in new if e.get("ph") == "s"]
    f_ids = [e["id"] for e in new if e.get("ph") == "f"]
    check(sorted(s_ids) == sorted(f_ids) and len(set(s_ids)) == len(s_ids), "flows do not pair up")
    check(m["flows"] == len(s_ids), "flow count")
    cpu_pids = {e["pid"] for e in oe if e.get("cat") in ("cpu_op", "cuda_driver")}
    proxy = [e for e in new if e.get("cat") in ("nccl_lens_proxy", "nccl_lens_proxy_step")]
    check(proxy and all(e["pid"] in cpu_pids for e in proxy), "proxy rows not on the CPU process")
    check(all(isinstance(e["tid"], int) and isinstance(e["pid"], int) for e in new), "non-integer pid/tid")
    # what a trace viewer needs of the new events: known phases, numbers where numbers go, and complete
    # events that nest on each row (Perfetto drops or misplaces slices that overlap without nesting)
    check(all(e.get("ph") in ("X", "M", "s", "f") for e in new), "an added event of another phase")
    check(all(isinstance(e["ts"], (int, decimal.Decimal)) and e["dur"] >= 0 for e in new if e["ph"] == "X"), "bad ts/dur")
    check(all(e["name"] in ("thread_name", "thread_sort_index") for e in new if e["ph"] == "M"), "bad M event")
    rows = {}
    for e in new:
        if e["ph"] == "X":
            rows.setdefault((e["pid"], e["tid"]), []).append((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)))
    named = {(e["pid"], e["tid"]) for e in new if e["ph"] == "M" and e["name"] == "thread_name"}
    check(set(rows) <= named, "an added row without a name")
    crossed = 0
    for r in rows.values():
        r.sort(key=lambda v: (v[0], -v[1]))
        stack = []
        for b, e in r:
            while stack and stack[-1] <= b:
                stack.pop()
            crossed += bool(stack) and e > stack[-1]
            stack.append(e)
    # beyond a row's last lane slices share it, counted in the file: only those may cross
    check(crossed <= m["lanes_crowded"], "%d added slices overlap another on their row without nesting (%d said)" %
          (crossed, m["lanes_crowded"]))
    # several ranks
    if a.job:
        last = {(int(i["comm_id"], 16), i["seq"]): i["last_rank"] for i in truth["instances"]}  # ids compared as numbers
        same = with_exec = judged = 0
        for e in matched:
            g = e["args"]
            if (int(g["nccl_lens comm"], 16), g.get("nccl_lens seq")) in over_any:
                continue
            judged += 1
            if "nccl_lens exec us" not in g:
                continue
            with_exec += 1
            check(g["nccl_lens wait us"] >= 0 and g["nccl_lens exec us"] > 0, "exec/wait")
            same += last.get((int(g["nccl_lens comm"], 16), g.get("nccl_lens seq"))) == g["nccl_lens last rank"]
        check(with_exec >= 0.9 * judged, "only %d of %d kernels have exec/wait/last rank" % (with_exec, judged))
        check(same >= 0.9 * with_exec, "last rank the truth's on %d of %d" % (same, with_exec))
    if over:
        print("note: rank %s: %d operations had channel timers of another item (truth: overrun); %d kernels "
              "annotated with them not judged, nor the match rate" % (a.rank, len(over), lied))
    for f in fails[:20]:
        print("FAIL:", f)
    if fails:
        return 1
    print("ok: rank %s: %d of %d NCCL kernels matched, %d channel slices inside their kernel within %.0f ns, "
          "%d proxy slices, %d flows, %d kernels whose name lies about the protocol" %
          (a.rank, len(matched), len(nccl), len(chans), bound, len(proxy), len(s_ids), lying))
    return 0


if __name__ == "__main__":
    sys.exit(main())
