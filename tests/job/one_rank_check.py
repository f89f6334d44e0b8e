#!/usr/bin/env python3
"""test_job_one_rank: one rule for "how long an operation worked" (docs/job.md "What counts"): an instance
seen on one rank only of several (traces of a subset of the ranks), or on the only rank of its own (a send to
itself), has no execution in any view, and every view counts the instances job's rows call decomposed:

  - job --json: exec_ns (and busbw, last rank, max wait, the ranks' waits) set exactly on the instances the
    rows count as decomposed (sum of the rows' `decomposed`), and never on one seen on one rank (flag one_rank);
  - report --json: the busbw curve's points count exactly those instances that are collectives, not partial;
    the ranks' collective time (stragglers.collective_us) is the spans of those instances summed; the link
    verdict's "in N of M instances" has M = the rows' decomposed;
  - export --format kineto (--into): a kernel carries "nccl_lens exec us" only where its instance was
    decomposed.

Inputs: the golden `mixed` traces (2 processes x 2 ranks: AllReduce, AllGather, ReduceScatter, Broadcast over
two communicators, AlltoAll with self-sends) whole and one process alone (its transfers with the other's ranks
seen from one side), the golden job-slow-link traces (a link verdict with its count), and for the Kineto merge
(which needs the replay's truth for its fixture) a replay of `mixed` on 2 processes of one rank, whole and
rank 0 alone (every instance on one rank of two). On the old views the subset's instances (each a rank's span, its wait
for its unseen peer included) carried an execution in job's JSON and the report's collective time while
job's rows counted none of them.
usage: one_rank_check.py NCCL_LENS_BIN SOURCE_DIR"""
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

lens, src = sys.argv[1], sys.argv[2]
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def run(*args):
    p = subprocess.run([lens] + list(args), capture_output=True, text=True, timeout=120)
    if p.returncode:
        raise SystemExit("nccl-lens %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def js(*args):
    return json.loads(run(*args, "--json"))


def decomposed_of(job, what):
    """the instances with an execution, after checking that they are the rows' decomposed ones"""
    insts = job["collectives"]
    with_exec = [c for c in insts if c["exec_ns"] is not None]
    rows = sum(r["decomposed"] for r in job["rows"])
    if len(with_exec) != rows:
        fail("%s: job's JSON gives %d instances an execution, its rows count %d decomposed" %
             (what, len(with_exec), rows))
    for c in insts:
        alone = c["ranks_seen"] < 2 or sum(1 for r in c["ranks"] if r["span_ns"]) < 2
        if alone and (c["exec_ns"] is not None or c["last_rank"] is not None or c["max_wait_ns"] is not None or
                      c["busbw_gbps"] is not None or any(r["wait_ns"] is not None for r in c["ranks"])):
            fail("%s: %s seq %d seen on %d rank(s) has an execution or waits: %s" %
                 (what, c["func"], c["seq"], c["ranks_seen"], json.dumps(c)[:300]))
        if alone and "one_rank" not in c["flags"]:
            fail("%s: %s seq %d seen on one rank, flags %s lack one_rank" % (what, c["func"], c["seq"], c["flags"]))
    return with_exec


def check_report(rep, dec, what):
    want = {}
    for c in dec:
        if c["bytes"] and "sender" not in c and "partial" not in c["flags"]:
            want[(c["comm_id"], c["func"])] = want.get((c["comm_id"], c["func"]), 0) + 1
    got = {}
    for s in rep["busbw"]["series"]:
        got[(s["comm_id"], s["func"])] = sum(p["count"] for p in s["points"])
    if got != want:
        fail("%s: report's busbw curve counts %s, job's decomposed collectives (not partial) %s" % (what, got, want))
    spans_us = sum(r["span_ns"] for c in dec for r in c["ranks"]) / 1e3
    coll = rep["stragglers"]["collective_us"]
    if abs(coll - spans_us) > 1e-3 * max(spans_us, 1) + 0.01:
        fail("%s: report's collective time %.3f us, the decomposed instances' spans %.3f us" % (what, coll, spans_us))
    for v in rep["verdict"]:
        m = re.search(r"in (\d+) of (\d+) instances", v["text"])
        if v["key"] == "link" and m and int(m.group(2)) != len(dec):
            fail("%s: report's link verdict says %s instances, job decomposed %d" % (what, m.group(2), len(dec)))
    return bool(want)


def kineto(path):
    b = open(path, "rb").read()
    return json.loads(gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b)


def check_kineto(out, job, what):
    dec = {(c["comm_id"], c["seq"], c["func"]) for c in job["collectives"] if c["exec_ns"] is not None}
    known = {(c["comm_id"], c["seq"], c["func"]) for c in job["collectives"]}
    n_exec = judged = 0
    for e in kineto(out)["traceEvents"]:
        g = e.get("args") or {}
        if "nccl_lens comm" not in g:
            continue
        has = "nccl_lens exec us" in g
        n_exec += has
        key = (g["nccl_lens comm"], g.get("nccl_lens seq"), g.get("nccl_lens func"))
        if key not in known:  # a grouped launch (Send+Recv): no one instance to compare with
            continue
        judged += 1
        if has != (key in dec):
            fail("%s: kernel %s %s: exec in the merge %s, decomposed by job %s" % (what, key, out, has, key in dec))
    return n_exec, judged


def views(inputs, what):
    """job and report on inputs: the instances job decomposed, how many stand alone, whether the curve has any"""
    job = js("job", *inputs)
    dec = decomposed_of(job, what)
    alone = sum(1 for c in job["collectives"] if "one_rank" in c["flags"])
    curve = check_report(js("report", *inputs), dec, what)
    print("%s: %d instances, %d decomposed, %d on one rank, busbw curve %s" %
          (what, len(job["collectives"]), len(dec), alone, "drawn" if curve else "empty"))
    return job, dec, alone, curve


def main():
    # committed traces (deterministic): golden mixed, 2 processes x 2 ranks; one process alone sees its p2p
    # transfers with the other's ranks from one side only
    gm = sorted(glob.glob(src + "/tests/golden/traces/mixed/*.lens"))
    if len(gm) != 2:
        raise SystemExit("golden mixed: %d traces" % len(gm))
    _, dec, alone, _ = views(gm[:1], "golden mixed, one process")
    if not dec or alone < 8:
        fail("golden mixed, one process: %d decomposed, %d alone (want > 0, >= 8 one-sided transfers)" %
             (len(dec), alone))
    _, dec, alone, curve = views(gm, "golden mixed, both processes")
    if not dec or not curve or not alone:
        fail("golden mixed, both: %d decomposed, curve %s, %d self-sends alone (want all > 0)" %
             (len(dec), curve, alone))
    # a link verdict with its count (golden job-slow-link: the job waited on r1 -> r2)
    g = sorted(glob.glob(src + "/tests/golden/traces/job-slow-link/*.lens"))
    views(g, "golden job-slow-link")
    if not any(re.search(r"in \d+ of \d+ instances", v["text"]) for v in js("report", *g)["verdict"]):
        fail("job-slow-link: no link verdict with its count")
    # the Kineto merge needs the replay's truth (its fixture): mixed on 2 processes of one rank each
    t = tempfile.mkdtemp(prefix="test_job_one_rank.")
    ok = False
    try:
        run("replay", "--scenario", "mixed", "--nodes", "2", "--ranks-per-node", "1", "--iters", "2", "--out",
            t + "/tr", "--truth", t + "/truth.json", "--quiet")
        os.mkdir(t + "/kin")
        subprocess.run([sys.executable, src + "/tests/kineto/kineto_fixture.py", t + "/truth.json", t + "/kin"],
                       check=True, capture_output=True)
        files = sorted(glob.glob(t + "/tr/*.lens"))
        if len(files) != 2:
            raise SystemExit("replay wrote %d traces, not 2" % len(files))
        # rank 0's trace: the one whose job view has rank 0
        one = [f for f in files if any(r["rank"] == 0 for c in js("job", f)["collectives"] for r in c["ranks"])]
        if len(one) != 1:
            raise SystemExit("rank 0 in %d traces" % len(one))
        for what, inputs, kin in (("replay, rank 0 alone", one, [t + "/kin/rank0.json.gz"]),
                                  ("replay, both ranks", files, [t + "/kin/rank0.json.gz", t + "/kin/rank1.json"])):
            job, dec, alone, _ = views(inputs, what)
            out = t + "/out-" + str(len(inputs))
            run("export", "--format", "kineto", "--into", *kin, *inputs, "-o", out)
            n_exec, judged = check_kineto(out + "/rank0.json.gz", job, what)
            print("%s: %d of rank 0's kernels with an execution (%d compared with their instance)" %
                  (what, n_exec, judged))
            if not judged:
                fail("%s: no kernel compared" % what)
            if len(inputs) == 1 and (dec or alone != len(job["collectives"]) or n_exec):
                fail("%s: %d decomposed, %d of %d alone, %d kernels with exec (want 0, all, 0)" %
                     (what, len(dec), alone, len(job["collectives"]), n_exec))
            if len(inputs) == 2 and not alone:  # the self-sends: their only rank (whatever the timing)
                fail("%s: no instance alone (its self-sends)" % what)
        ok = not fails
    finally:
        if ok:
            shutil.rmtree(t)
        else:
            print("kept " + t)
    print("ok" if ok else "%d failure(s)" % len(fails))
    return 0 if ok else 1


sys.exit(main())
