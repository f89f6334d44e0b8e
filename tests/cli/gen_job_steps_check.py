#!/usr/bin/env python3
"""test_gen_job_steps: lens-gen-job writes its ProxySteps as the plugin's
traces carry them (spec §2.5): each send step with 8 SendGPUWait, 20
SendPeerWait and 9 SendWait, each receive step with 10 RecvWait, 11
RecvFlushWait and 12 RecvGPUWait, with the step's bytes (transSize) on them;
and the stragglers it injects are still found.

On a generated job of 16 ranks on 4 hosts (truth.json gives the instances,
the stragglers and the bytes of an op):
  - `net --json`: every link has bytes = its ops x the truth's op_bytes
    (nonzero), its steps split with nothing unknown: a send link's time in
    GPU wait, peer wait and wire (all > 0, the wire the most), a receive
    link's in data wait, flush and GPU wait (all > 0); the totals' unknown 0;
  - `summary --json`: every proxy thread's bytes = its ops x op_bytes, and
    its state shares null (the generator writes no ProxyCtrl: not recorded);
  - `report --all`: every rank's communicator init is finalized (the
    generator writes each rank's COMM_FINI, as the plugin does);
  - `job --json`: the late collectives are exactly the truth's stragglers
    (same instance, same rank, cause late_app_call), and each straggler's
    times_last is its count in the truth.
usage: gen_job_steps_check.py NCCL_LENS_BIN LENS_GEN_JOB_BIN"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

lens, gen = sys.argv[1], sys.argv[2]
RANKS, HOSTS = 16, 4
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def run(args, as_json=True):
    p = subprocess.run([lens] + args, capture_output=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit("nccl-lens %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr.decode()))
    return json.loads(p.stdout.decode()) if as_json else p.stdout.decode()


tmp = tempfile.mkdtemp(prefix="lens-gen-steps.")
try:
    job = os.path.join(tmp, "job")
    p = subprocess.run([gen, "-o", job, "--ranks", str(RANKS), "--hosts", str(HOSTS), "--events", "40000"],
                       capture_output=True, timeout=120)
    if p.returncode:
        raise SystemExit("lens-gen-job: exit %d\n%s" % (p.returncode, p.stderr.decode()))
    with open(os.path.join(job, "truth.json")) as f:
        truth = json.load(f)
    op_bytes = truth["op_bytes"]
    if op_bytes <= 0:
        fail("truth.json: op_bytes %d" % op_bytes)

    net = run(["net", "--json", job])
    links = net["links"]
    if len(links) != 2 * RANKS:
        fail("%d links, want %d (a send and a receive link a rank)" % (len(links), 2 * RANKS))
    for l in links:
        name = "r%d %s r%d ch %d" % (l["rank"], "->" if l["dir"] == "send" else "<-", l["peer"], l["channel"])
        if l["bytes"] != l["ops"] * op_bytes or l["bytes"] <= 0:
            fail("%s: %d bytes, want %d ops x %d" % (name, l["bytes"], l["ops"], op_bytes))
        ph = l["phases_ns"]
        if ph["unknown"]:
            fail("%s: %d ns unsplit" % (name, ph["unknown"]))
        if l["dir"] == "send":
            g, pw, w = ph["send_gpu_wait"], ph["send_peer_wait"], ph["wire"]
            if not (g > 0 and pw > 0 and w > g and w > pw):
                fail("%s: send split gpu %d, peer %d, wire %d ns (want all > 0, the wire the most)" % (name, g, pw, w))
        elif not (ph["recv_data_wait"] > 0 and ph["recv_flush"] > 0 and ph["recv_gpu_wait"] > 0):
            fail("%s: receive split %s" % (name, json.dumps(ph)))
    if net["totals"]["phases_ns"]["unknown"]:
        fail("totals: %d ns unsplit" % net["totals"]["phases_ns"]["unknown"])

    summ = run(["summary", "--json", job])
    for t in summ["proxy_threads"]:
        if t["bytes"] != t["ops"] * op_bytes or t["bytes"] <= 0:
            fail("summary: proxy %s:%d: %d bytes, want %d ops x %d" % (t["host"], t["pid"], t["bytes"], t["ops"],
                                                                     op_bytes))
        # the generator writes no ProxyCtrl: the thread's shares are not recorded (null), not 0
        shares = {k: t[k + "_fraction"] for k in ("active", "sleep", "idle", "append")}
        if any(v is not None for v in shares.values()):
            fail("summary: proxy %s:%d without ProxyCtrl has shares %s, want null" % (t["host"], t["pid"], shares))

    md = run(["report", "--all", job], as_json=False)
    init_row = re.compile(r"^\| world \| \S+ \| \d+ \| %d \| %d \| " % (RANKS, HOSTS))  # the inits table's
    inits = [l for l in md.splitlines() if init_row.match(l)]
    if len(inits) != RANKS or any(l.endswith("| not finalized |") for l in inits):
        fail("report: %d inits of world (want %d), %d not finalized (want 0)"
             % (len(inits), RANKS, sum(l.endswith("| not finalized |") for l in inits)))

    jv = run(["job", "--json", job])
    want = sorted((s["seq"], s["rank"]) for s in truth["stragglers"])
    got = sorted((c["seq"], c["cause_rank"]) for c in jv["collectives"] if c["cause"] != "none")
    if got != want:
        fail("job: late collectives (seq, rank) %s, want the truth's %s" % (got, want))
    causes = {c["cause"] for c in jv["collectives"] if c["cause"] != "none"}
    if causes - {"late_app_call"}:
        fail("job: causes %s, want late_app_call only" % sorted(causes))
    per_rank = collections.Counter(s["rank"] for s in truth["stragglers"])
    theirs = {s["rank"]: s["times_last"] for s in jv["stragglers"]}
    if theirs != dict(per_rank):
        fail("job: stragglers' times_last %s, want %s" % (theirs, dict(per_rank)))
    print("%d links, %d bytes an op, %d stragglers found of %d" % (len(links), op_bytes, len(got), len(want)))
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if fails:
    print("%d failures" % len(fails))
    sys.exit(1)
print("ok")
