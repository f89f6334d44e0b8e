"""One vocabulary (docs/cli.md): communicator ids in every command's output.
Usage: vocab_check.py DIR  (DIR holds truth.json, hang-truth.json and the outputs named below)

A communicator id is "0x" + 16 lowercase hex digits; in JSON a string under
the key comm_id (the truth's comms[].commId, NCCL's own name, excepted).
Every value equal to a communicator id of the truth is found, in any form
(integer, hex with or without 0x or leading zeros, decimal string), in every
JSON output, in text outputs and in the agent's metrics. The outputs of
commands converted so far must have none in another form (exit 1, listed);
the others' are listed as what is left to convert, and said when clean.
"""
import json
import os
import re
import sys

d = sys.argv[1]
STRICT = ["job.json", "hang.json", "hang-stuck.json", "validate.json", "truth.json", "hang-truth.json", "job.txt",
          "hang.txt", "hang-stuck.txt", "metrics.prom", "net.txt", "summary.json", "net.json", "diff.json",
          "summary.txt", "export.json", "report.html"]
LEFT = []

ids = set()
for t in ("truth.json", "hang-truth.json"):
    for p in json.load(open(os.path.join(d, t)))["processes"]:
        for c in p["comms"]:
            ids.add(int(c["commId"], 16))
GOOD = re.compile(r"^0x[0-9a-f]{16}$")


def forms(i):
    return {"0x%016x" % i, "0x%x" % i, "%016x" % i, "%x" % i, str(i), "0X%X" % i, "%X" % i}


ALL = {f: i for i in ids for f in forms(i)}


def walk(o, path, key, out):
    if isinstance(o, dict):
        for k, v in o.items():
            walk(v, path + "." + k, k, out)
    elif isinstance(o, list):
        for v in o:
            walk(v, path + "[]", key, out)
    elif isinstance(o, bool) or o is None:
        return
    elif isinstance(o, int) and o in ids:
        out.add("%s: a number %d" % (path, o))
    elif isinstance(o, str):
        if o in ALL:
            if not GOOD.match(o):
                out.add("%s: '%s'" % (path, o))
            elif key not in ("comm_id", "commId") or (key == "commId" and not path.endswith("comms[].commId")):
                out.add("%s: key '%s' (not comm_id)" % (path, key))
        else:  # ids inside a longer string: names, labels, args
            for m in re.finditer(r"(?<![0-9A-Za-z])(0[xX])?([0-9a-fA-F]{13,16})(?![0-9A-Za-z])", o):
                if int(m.group(2), 16) in ids and not GOOD.match(m.group(0)):
                    out.add("%s: '...%s...' in a string" % (path, m.group(0)))


def text_scan(s, out):
    for m in re.finditer(r"(?<![0-9A-Za-z])(0[xX])?([0-9a-fA-F]{13,16})(?![0-9A-Za-z])", s):
        if int(m.group(2), 16) in ids and not GOOD.match(m.group(0)):
            out.add("'%s'" % m.group(0))
    for m in re.finditer(r"(?<![0-9])([0-9]{17,20})(?![0-9])", s):
        if int(m.group(1)) in ids:
            out.add("'%s' (decimal)" % m.group(1))


def scan(name):
    path = os.path.join(d, name)
    out = set()
    raw = open(path, encoding="utf-8", errors="replace").read()
    if name.endswith(".json"):
        try:
            walk(json.loads(raw), "", "", out)
        except ValueError as e:
            out.add("not JSON: %s" % e)
    elif name.endswith(".prom"):
        for m in re.finditer(r'comm_id="([^"]*)"', raw):
            if not GOOD.match(m.group(1)):
                out.add('comm_id="%s"' % m.group(1))
        if 'comm_id="' not in raw:
            out.add("no comm_id label at all")
    else:
        text_scan(raw, out)
    return sorted(out)


print("communicator ids of the run: %s" % ", ".join("0x%016x" % i for i in sorted(ids)))
if not any(i < (1 << 60) for i in ids):
    print("warning: no id with a leading zero digit: padding is not tested")
bad = 0
for name in STRICT:
    v = scan(name)
    for x in v[:10]:
        print("NOT IN FORM %s %s" % (name, x))
    bad += len(v)
for name in LEFT:
    v = scan(name)
    if not v:
        print("now clean: %s (move it to STRICT in tests/cli/vocab_check.py)" % name)
    for x in v[:10]:
        print("left to convert: %s %s" % (name, x))
print("%d problems in the converted outputs" % bad)
sys.exit(1 if bad else 0)
