#!/usr/bin/env python3
"""test_views_agree: views that speak of the same thing give one answer
(docs/cli.md "One answer"), on the committed golden traces (tests/golden/traces):

  - the report's verdict on links (report --json, the HTML page's first line)
    calls a link slow exactly when `net` does (lens_net_link_is_slow) or the
    job view waited on one, and names one of net's slow connections: a
    connection that stands out because its sender waits on its GPU
    (net-gpu-bound, job-gpu-busy) or its receiver's GPU holds it
    (net-slow-recv) is no slow link in any view;
  - the report's network matrix is GB/s (bytes / ns on the wire), the rate
    `net --json` gives the same links (wire_gbps), not bits;
  - a matched point-to-point transfer is one instance, named by its sender
    (Send), so job's rows count transfers as summary counts Send ops, whatever
    the ranks' order (sendrecv: rank 3 -> 0 used to be a Recv row);
  - the report's job table shows "-" where job shows "-" (no instance of the
    row decomposed), not 0.0 us and 0.00 GB/s;
  - the report's prose (Markdown hints, the JSON verdict's text) names a
    straggler's cause in the words the job view prints (busy GPU), not the
    JSON key (gpu_busy).
usage: agree_check.py NCCL_LENS_BIN GOLDEN_TRACES_DIR"""
import json
import math
import re
import subprocess
import sys

lens, traces = sys.argv[1], sys.argv[2]
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def run(*args, ok=(0,)):
    p = subprocess.run([lens] + list(args), cwd=traces, capture_output=True, text=True, timeout=120)
    if p.returncode not in ok:
        raise SystemExit("nccl-lens %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def js(*args):
    return json.loads(run(*args, "--json"))


# the cause words of docs/cli.md (the job view's text), for the keys these traces have
WORDS = {"late_app_call": "late app call", "gpu_busy": "busy GPU", "slow_launch": "slow launch",
         "slow_enqueue": "slow enqueue", "unknown": "late or busy GPU"}


def links(s):
    rep, net, job = js("report", s), js("net", s), js("job", s)
    verdict = {v["key"]: v for v in rep["verdict"]}["link"]
    slow = {(c["src"], c["dst"]) for c in net["connections"] if c["slow"]}
    job_slow = {(c["cause_rank"], c["cause_peer"]) for c in job["collectives"] if c["cause"] == "slow_link"}
    want = "bad" if slow or job_slow else "ok"
    if verdict["status"] != want:
        fail("%s: report's link verdict %s (%s) but net's slow links %s, job's %s" %
             (s, verdict["status"], verdict["text"], sorted(slow), sorted(job_slow)))
    named = {(int(a), int(b)) for a, b in re.findall(r"r(\d+) -> r(\d+) \(channel", verdict["text"])}
    if not named <= slow:
        fail("%s: report's link verdict names %s, net's slow links are %s" % (s, sorted(named), sorted(slow)))
    if slow and not named:
        fail("%s: report's link verdict names none of net's slow links %s: %s" % (s, sorted(slow), verdict["text"]))
    # the matrix: one communicator's send links, bytes over wire ns = GB/s, as net's wire_gbps
    m = rep["net"]["matrix"]
    cell = {}
    for l in net["links"]:
        if l["comm_id"] == m["comm_id"] and l["dir"] == "send":
            b, w = cell.get((l["rank"], l["peer"]), (0, 0))
            cell[(l["rank"], l["peer"])] = (b + l["bytes"], w + l["phases_ns"]["wire"])
            if l["wire_gbps"] and abs(l["wire_gbps"] - l["bytes"] / l["phases_ns"]["wire"]) > 1e-9 * l["wire_gbps"]:
                fail("%s: net's wire_gbps %g is not bytes / wire ns" % (s, l["wire_gbps"]))
    for r, p, gbps, nbytes in m["cells"]:
        b, w = cell.get((r, p), (0, 0))
        if nbytes != b or not w or abs(gbps - b / w) > 1e-4 * (b / w):
            fail("%s: report matrix r%d -> r%d %g GB/s of %d bytes, net's links %g GB/s of %d bytes" %
                 (s, r, p, gbps, nbytes, b / w if w else 0, b))


def transfers(s):
    job, summ = js("job", s), js("summary", s)
    for c in job["collectives"]:
        if "sender" in c and c["ranks_seen"] == 2 and c["func"] != "Send":
            fail("%s: transfer r%d -> r%d seq %d named %s, not by its sender" %
                 (s, c["sender"], c["receiver"], c["seq"], c["func"]))
    rows = {(r["comm_id"], r["func"], r["size_log2"]): r["count"] for r in job["rows"]}
    for c in summ["communicators"]:
        for o in c["ops"]:
            if o["func"] in ("Send", "Recv"):
                got = rows.get((c["comm_id"], "Send", o["size_log2"]), 0)
                if got != o["count"]:
                    fail("%s: %d %s ops of %s in summary, job counts %d transfers" %
                         (s, o["count"], o["func"], o["size_bucket"], got))
            if o["func"] == "Recv" and (c["comm_id"], "Recv", o["size_log2"]) in rows:
                fail("%s: job has a Recv row %s beside the Send row of the same transfers" % (s, o["size_bucket"]))


def cause_words(s):
    job, rep = js("job", s), js("report", s)
    md = run("report", s)
    if not job["stragglers"]:
        fail("%s: no straggler" % s)
        return
    for st in job["stragglers"][:3]:
        top = max(st["causes"].items(), key=lambda kv: kv[1])[0]
        words = WORDS.get(top, top)
        hint = re.search(r"\*\*Straggler: rank %d .*" % st["rank"], md)
        if not hint or "mostly %s." % words not in hint.group(0):
            fail("%s: report hint for rank %d does not say 'mostly %s': %s" %
                 (s, st["rank"], words, hint.group(0)[:200] if hint else None))
    text = {v["key"]: v for v in rep["verdict"]}["stragglers"]["text"]
    if re.search(r"mostly [a-z]+_[a-z_]+", text):
        fail("%s: report verdict names a cause by its JSON key: %s" % (s, text))


def bucket_label(b):
    """lens_size_bucket_label (tools/summary/summary_labels.c)."""
    unit = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    u, e = divmod(b, 10)
    if e == 9:
        return "%d %s-1 %s" % (1 << e, unit[u], unit[u + 1])
    return "%d-%d %s" % (1 << e, 1 << (e + 1), unit[u])


def gbps_text(g):
    """GB/s as every view writes it (docs/cli.md, "One vocabulary"): 3
    significant digits, an integer from 1000, 2 digits below 0.001, "<0.0001"
    below that, "-" for 0."""
    if not g > 0 or g != g or g == float("inf"):
        return "-"
    x = int(("%.2e" % g).split("e")[1])
    if x >= 3:
        return "%d" % math.floor(g + 0.5)
    sig = 3
    if x < -3:
        sig, x = 2, int(("%.1e" % g).split("e")[1])
        if x < -4:
            return "<0.0001"
    return "%.*f" % (sig - 1 - x, g)


def headline_rows(s):
    """The report's job table says what job's text says: "-" for a row none of
    whose instances was decomposed (not 0.0 us and 0.00 GB/s), else its busbw."""
    job, md = js("job", s), run("report", s)
    for r in job["rows"]:
        label = bucket_label(r["size_log2"])
        cells = re.findall(r"^\| %s \| %s \| %s \| %d \| ([^|]+) \| ([^|]+) \| ([^|]+) \|" %
                           (r["comm_id"], r["func"], re.escape(label), r["count"]), md, re.M)
        if len(cells) != 1:
            fail("%s: %d report rows for job row %s %s count %d" % (s, len(cells), r["func"], label, r["count"]))
            continue
        got = [c.strip() for c in cells[0]]
        if r["decomposed"] == 0 and got != ["-", "-", "-"]:
            fail("%s: report row %s %s, none decomposed, shows %s; job shows -" % (s, r["func"], label, got))
        if r["decomposed"] and got[2] != gbps_text(r["busbw_gbps"]):
            fail("%s: report row %s %s busbw %s, job %s" % (s, r["func"], label, got[2], gbps_text(r["busbw_gbps"])))


for s in ("net-gpu-bound", "all"):
    headline_rows(s)
for s in ("net-gpu-bound", "net-slow-recv", "net-slow-link", "job-gpu-busy", "job-slow-link", "job-late-app", "all"):
    links(s)
for s in ("sendrecv", "net-even"):
    transfers(s)
for s in ("job-gpu-busy", "job-late-app", "job-slow-launch"):
    cause_words(s)
print("%d disagreement(s)" % len(fails))
sys.exit(1 if fails else 0)
