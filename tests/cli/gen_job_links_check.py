#!/usr/bin/env python3
"""test_gen_job_links: lens-gen-job links a launch and its channels as the
plugin's traces do (KernelCh -> its Coll -> the Coll's launch_id -> the
KernelLaunch), so validate on a generated job reads like validate on a real
one: every launch with its channels, no channel without a launch.

On a generated job of 8 ranks on 2 hosts, 3 channels (truth.json gives the
instances), `nccl-lens validate --json --all`:
  - lists ranks x instances launches, each with exactly its 3 channels
    (channels 0, 1, 2, each of a Coll AllReduce);
  - lists no channel without a launch, and counts ranks x instances x 3
    KernelCh in all, every one of them inside a launch;
the default --json leaves no channel without a launch out either; the text
lists the first launch with its 3 channels and nothing under "channels
without a launch".
usage: gen_job_links_check.py NCCL_LENS_BIN LENS_GEN_JOB_BIN"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

lens, gen = sys.argv[1], sys.argv[2]
RANKS, HOSTS, CHANNELS = 8, 2, 3
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def run(args):
    p = subprocess.run([lens] + args, capture_output=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit("nccl-lens %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr.decode()))
    return p.stdout.decode()


tmp = tempfile.mkdtemp(prefix="lens-gen-links.")
try:
    job = os.path.join(tmp, "job")
    p = subprocess.run([gen, "-o", job, "--ranks", str(RANKS), "--hosts", str(HOSTS), "--channels", str(CHANNELS),
                        "--events", "30000", "--stragglers", "2"], capture_output=True, timeout=120)
    if p.returncode:
        raise SystemExit("lens-gen-job: exit %d\n%s" % (p.returncode, p.stderr.decode()))
    with open(os.path.join(job, "truth.json")) as f:
        inst = json.load(f)["instances"]
    want_launches = RANKS * inst

    full = json.loads(run(["validate", "--json", "--all", job]))
    launches, orphans = full["launches"], full["channels_without_launch"]
    if len(launches) != want_launches:
        fail("%d launches listed, want %d ranks x %d instances" % (len(launches), RANKS, inst))
    bad = [l for l in launches if sorted(c["channel"] for c in l["channels"]) != list(range(CHANNELS))]
    if bad:
        fail("%d of %d launches without their %d channels; the first: %s" % (len(bad), len(launches), CHANNELS,
                                                                           json.dumps(bad[0])[:300]))
    not_coll = [c for l in launches for c in l["channels"] if c["op"] != "Coll" or c["func"] != "AllReduce"]
    if not_coll:
        fail("%d channels not of a Coll AllReduce: %s" % (len(not_coll), json.dumps(not_coll[0])[:300]))
    if orphans:
        fail("%d channels without a launch (the generator's KernelCh do not reach their KernelLaunch)" % len(orphans))
    in_launches = sum(len(l["channels"]) for l in launches)
    kch = full["totals"]["kernel_ch"]
    if kch != want_launches * CHANNELS or in_launches != kch:
        fail("%d KernelCh, %d of them inside launches; want %d, all inside" % (kch, in_launches,
                                                                            want_launches * CHANNELS))

    dflt = json.loads(run(["validate", "--json", job]))
    if dflt["channels_without_launch"] or (dflt.get("left_out") or {}).get("channels_without_launch_ok", 0):
        fail("default --json: %d channels without a launch listed, %s left out" %
             (len(dflt["channels_without_launch"]), (dflt.get("left_out") or {}).get("channels_without_launch_ok")))

    text = run(["validate", job]).splitlines()
    try:
        i = text.index("launches (kernels) and their channels:")
        j = next(k for k, s in enumerate(text) if s.startswith("channels without a launch"))
    except (ValueError, StopIteration):
        raise SystemExit("validate's text has no launches or no channels-without-a-launch section:\n" +
                         "\n".join(text))
    first = text[i + 1:i + 2 + CHANNELS]
    if not first or not first[0].startswith("  launch 0x") or \
            [s.split()[:2] for s in first[1:]] != [["ch", str(c)] for c in range(CHANNELS)]:
        fail("text: the first launch is not listed with its %d channels:\n%s" % (CHANNELS, "\n".join(first)))
    if j + 1 >= len(text) or not text[j + 1].startswith("totals:"):
        fail("text: channels listed without a launch:\n%s" % "\n".join(text[j:j + 4]))
    print("%d launches, %d KernelCh, %d of them inside a launch, %d channels without a launch" %
          (len(launches), kch, in_launches, len(orphans)))
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if fails:
    print("%d failures" % len(fails))
    sys.exit(1)
print("ok")
