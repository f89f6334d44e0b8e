#!/usr/bin/env python3
"""Digest of an `nccl-lens export` output for the golden test.

The exports are too big to store (the `all` scenario's Chrome trace is ~20 MB),
so the test stores this digest instead. It is made to show *what* changed when
the test fails, not only that something did:

  - the sha256 of a canonical form of every event (so any change fails);
  - the trace's metadata (otherData; process and track names) as is;
  - per track and event name (instance and step numbers left out): how many, the sum of durations, first and last
    timestamp (integer ns), and the sum of every numeric argument.

Event order is not part of the canonical form (a viewer sorts by time), so a
new model that writes the same events in another order passes.

`digest.py json FILE` prints a command's JSON output one value a line where
it fits 120 columns, else one member a line (order kept), with floats to 12 significant digits: a float a merge sums in
another order may differ in its last bits, not in the number a view shows.

usage: digest.py json|chrome|perfetto FILE
       digest.py batch MANIFEST   (lines MODE<tab>IN<tab>OUT)
"""
import collections
import hashlib
import json
import re
import sys


def ns(us):
    """Chrome timestamps are us with 3 decimals: back to integer ns."""
    return int(round(us * 1000))


INSTANCE = re.compile(r" #[0-9]+")
STEP = re.compile(r"^Step [0-9]+")


def group_name(name):
    """Instances and proxy steps are numbered in their names (`AllReduce #12`,
    `Step 3 r0`): one group for all of a name's instances or steps (their
    `seq`, `step` arguments are summed), or the digest would be as long as the
    trace."""
    return STEP.sub("Step N", INSTANCE.sub(" #N", str(name)))


def numeric(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def fmt_sums(sums):
    return " ".join("%s=%s" % (k, fmt_num(sums[k])) for k in sorted(sums))


def fmt_num(v):
    if isinstance(v, float):
        return repr(round(v, 6))
    return str(v)


def chrome(path):
    with open(path, "rb") as f:
        doc = json.load(f)
    if isinstance(doc, list):
        events, other = doc, None
    else:
        events, other = doc.get("traceEvents", []), doc.get("otherData")
    canon = sorted(json.dumps(e, sort_keys=True, separators=(",", ":")) for e in events)
    h = hashlib.sha256("\n".join(canon).encode()).hexdigest()
    out = ["# export digest (tests/golden/digest.py): %d events" % len(events),
           "sha256 of the sorted canonical events: " + h]
    if other is not None:
        out.append("otherData:")
        out.extend("  " + l for l in json.dumps(other, sort_keys=True, indent=1).splitlines())
    names = {}
    meta = []
    groups = collections.OrderedDict()
    for e in events:
        ph = e.get("ph")
        if ph == "M":
            meta.append((e.get("pid"), e.get("tid"), e.get("name"),
                         json.dumps(e.get("args"), sort_keys=True)))
            if e.get("name") == "process_name":
                names[(e.get("pid"), None)] = e["args"].get("name")
            elif e.get("name") == "thread_name":
                names[(e.get("pid"), e.get("tid"))] = e["args"].get("name")
            continue
        key = (str(e.get("pid")), str(e.get("tid")), str(ph), str(e.get("cat")), group_name(e.get("name")))
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"n": 0, "dur": 0, "ts0": None, "ts1": None, "args": {}}
        g["n"] += 1
        if numeric(e.get("dur")):
            g["dur"] += ns(e["dur"])
        if numeric(e.get("ts")):
            t = ns(e["ts"])
            g["ts0"] = t if g["ts0"] is None else min(g["ts0"], t)
            g["ts1"] = t if g["ts1"] is None else max(g["ts1"], t)
        args = e.get("args")
        if isinstance(args, dict):
            for k, v in args.items():
                if numeric(v):
                    g["args"][k] = g["args"].get(k, 0) + v
    out.append("metadata (pid tid name args):")
    for m in sorted(meta, key=lambda m: (str(m[0]), str(m[1]), str(m[2]), m[3])):
        out.append("  %s %s %s %s" % m)
    out.append("events per track, phase, category and name:")
    for key in sorted(groups):
        g = groups[key]
        pid, tid = key[0], key[1]
        out.append("  pid %s tid %s ph %s cat %s name %s: n=%d dur_ns=%d ts_ns=%s..%s" %
                   (pid, tid, key[2], key[3], key[4], g["n"], g["dur"], g["ts0"], g["ts1"]))
        if g["args"]:
            out.append("    args sums: " + fmt_sums(g["args"]))
    return out


# --- Perfetto protobuf: the subset tools/export/perfetto_subset.proto writes ---

def varint(b, i):
    v = 0
    shift = 0
    while True:
        if i >= len(b):
            raise ValueError("varint runs past the end")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """(field number, wire type, value) of one message: ints for varints and
    fixed, bytes for length-delimited."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        elif wt == 2:
            n, i = varint(b, i)
            v = bytes(b[i:i + n])
            if len(v) != n:
                raise ValueError("field %d runs past the end" % num)
            i += n
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v


def s64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def perfetto(path):
    with open(path, "rb") as f:
        data = f.read()
    tracks = {}          # uuid -> description
    groups = {}
    canon = []
    n_packets = 0
    open_slices = collections.defaultdict(list)
    for num, wt, pkt in fields(data):
        if num != 1 or wt != 2:
            raise ValueError("top-level field %d is not a packet" % num)
        n_packets += 1
        p = {}
        ts = None
        for pn, pwt, pv in fields(pkt):
            if pn == 8:
                ts = pv
            elif pn == 60:
                d = {"name": None, "process": None, "thread": None, "parent": None, "uuid": None}
                for dn, _, dv in fields(pv):
                    if dn == 1:
                        d["uuid"] = dv
                    elif dn == 2:
                        d["name"] = dv.decode("utf-8", "replace")
                    elif dn == 5:
                        d["parent"] = dv
                    elif dn in (3, 4):
                        sub = {}
                        for sn, _, sv in fields(dv):
                            sub[sn] = sv.decode("utf-8", "replace") if isinstance(sv, bytes) else s64(sv)
                        d["process" if dn == 3 else "thread"] = sub
                tracks[d["uuid"]] = d
                p["track"] = d
            elif pn == 11:
                ev = {"type": 0, "track": None, "name": None, "cats": [], "flows": 0, "tflows": 0,
                      "ann": {}}
                for en, ewt, evv in fields(pv):
                    if en == 9:
                        ev["type"] = evv
                    elif en == 11:
                        ev["track"] = evv
                    elif en == 23:
                        ev["name"] = evv.decode("utf-8", "replace")
                    elif en == 22:
                        ev["cats"].append(evv.decode("utf-8", "replace"))
                    elif en == 47:
                        ev["flows"] += len(evv) // 8 if ewt == 2 else 1
                    elif en == 48:
                        ev["tflows"] += len(evv) // 8 if ewt == 2 else 1
                    elif en == 4:
                        name, val = None, None
                        for an, _, av in fields(evv):
                            if an == 10:
                                name = av.decode("utf-8", "replace")
                            elif an == 6:
                                val = av.decode("utf-8", "replace")
                            elif an == 4:
                                val = s64(av)
                            elif an in (2, 3):
                                val = av
                        ev["ann"][name] = val
                p["event"] = ev
            else:
                p["f%d" % pn] = pv if not isinstance(pv, bytes) else pv.hex()
        p["ts"] = ts
        canon.append(json.dumps(p, sort_keys=True, separators=(",", ":")))
        ev = p.get("event")
        if ev is None:
            continue
        # A slice's name is on its begin; its end closes the track's innermost open slice.
        name = ev["name"]
        if ev["type"] == 2:
            st = open_slices[ev["track"]]
            if st:
                name, t0 = st.pop()
            else:
                name, t0 = "(end without begin)", ts
        key = (ev["track"], ev["type"], group_name(name), ",".join(ev["cats"]))
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"n": 0, "dur": 0, "ts0": ts, "ts1": ts, "flows": 0, "tflows": 0, "args": {}}
        g["n"] += 1
        g["flows"] += ev["flows"]
        g["tflows"] += ev["tflows"]
        if ts is not None:
            g["ts0"] = ts if g["ts0"] is None else min(g["ts0"], ts)
            g["ts1"] = ts if g["ts1"] is None else max(g["ts1"], ts)
        if ev["type"] == 1:
            open_slices[ev["track"]].append((name, ts))
        elif ev["type"] == 2 and ts is not None and t0 is not None:
            g["dur"] += ts - t0
        for k, v in ev["ann"].items():
            if numeric(v):
                g["args"][k] = g["args"].get(k, 0) + v
    h = hashlib.sha256("\n".join(sorted(canon)).encode()).hexdigest()
    out = ["# export digest (tests/golden/digest.py): %d packets, %d bytes" % (n_packets, len(data)),
           "sha256 of the sorted canonical packets: " + h, "tracks (uuid parent name process thread):"]
    for u in sorted(tracks, key=lambda u: (u is None, u or 0)):
        d = tracks[u]
        out.append("  %s %s %s %s %s" % (u, d["parent"], json.dumps(d["name"]),
                                         json.dumps(d["process"], sort_keys=True),
                                         json.dumps(d["thread"], sort_keys=True)))
    out.append("events per track, type (1 begin, 2 end: dur_ns = end - begin, 3 instant), name, categories:")
    for key in sorted(groups, key=lambda k: tuple(str(x) for x in k)):
        g = groups[key]
        out.append("  track %s type %s name %s cats %s: n=%d dur_ns=%d ts_ns=%s..%s flows=%d terminating=%d" %
                   (key[0], key[1], json.dumps(key[2]), key[3] or "-", g["n"], g["dur"], g["ts0"], g["ts1"],
                    g["flows"], g["tflows"]))
        if g["args"]:
            out.append("    args sums: " + fmt_sums(g["args"]))
    left = sum(len(s) for s in open_slices.values())
    out.append("slices never ended: %d" % left)
    return out


def round_floats(v):
    if isinstance(v, float):
        return float("%.12g" % v)
    if isinstance(v, list):
        return [round_floats(x) for x in v]
    if isinstance(v, dict):
        return {k: round_floats(x) for k, x in v.items()}
    return v


WIDTH = 120


def compact(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def layout(v, indent, prefix, out, last):
    """One line per value that fits WIDTH columns, else one line per member:
    a diff then shows the object that changed, and the file stays small."""
    comma = "" if last else ","
    pad = " " * indent
    one = compact(v)
    if not isinstance(v, (dict, list)) or len(pad) + len(prefix) + len(one) + 1 <= WIDTH or not v:
        out.append(pad + prefix + one + comma)
        return
    if isinstance(v, dict):
        out.append(pad + prefix + "{")
        items = list(v.items())
        for i, (k, x) in enumerate(items):
            layout(x, indent + 1, compact(k) + ":", out, i == len(items) - 1)
        out.append(pad + "}" + comma)
    else:
        out.append(pad + prefix + "[")
        for i, x in enumerate(v):
            layout(x, indent + 1, "", out, i == len(v) - 1)
        out.append(pad + "]" + comma)


def canon_json(path):
    with open(path, "rb") as f:
        doc = json.load(f)
    out = []
    layout(round_floats(doc), 0, "", out, True)
    return out


MODES = {"json": canon_json, "chrome": chrome, "perfetto": perfetto}


def batch(manifest):
    """Lines "MODE IN OUT": one process for many files (a Python start costs
    more than most digests)."""
    failed = 0
    with open(manifest) as f:
        for line in f:
            mode, src, dst = line.rstrip("\n").split("\t")
            try:
                lines = MODES[mode](src)
            except (OSError, ValueError) as e:
                lines = ["(digest.py %s failed: %s)" % (mode, type(e).__name__)]
                failed += 1
            with open(dst, "wb") as o:
                o.write(("\n".join(lines) + "\n").encode("utf-8"))
    return 1 if failed else 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "batch":
        return batch(sys.argv[2])
    if len(sys.argv) != 3 or sys.argv[1] not in MODES:
        sys.stderr.write("usage: digest.py json|chrome|perfetto FILE\n")
        return 2
    try:
        lines = MODES[sys.argv[1]](sys.argv[2])
    except (OSError, ValueError) as e:
        sys.stderr.write("digest.py: %s: %s\n" % (sys.argv[2], e))
        return 1
    sys.stdout.buffer.write(("\n".join(lines) + "\n").encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
