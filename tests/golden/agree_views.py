#!/usr/bin/env python3
"""test_golden_agree: one answer (docs/cli.md) on every golden trace set.

Runs summary, net, hang, validate, job, report (all --json) and diff (a set
against itself) on each scenario of tests/golden/traces and checks that where
two views state the same fact they state the same number:

 1 stragglers: report's Markdown arrival table's "last to arrive" per rank is
   job's count of late collectives it came last in; net's per-instance last_to_arrive / last_wait_ns are job's
   last_rank / max_wait_ns on the instances job's rule calls late
   (lens_job_inst_straggles: decomposed, max wait >= max(threshold_ns,
   exec x min_wait_frac)), null on the others; job's stragglers are those
   instances summed by rank (times_last, causes); report's straggler list is
   job's (rank, host, pid, times, causes, wait caused, instances) and its
   verdict is bad exactly when job names one; diff of a set against itself
   changes nothing.
 2 slow links: report's slowest connections say slow_link / stands_out as
   net's connections do; its connection and standing-out counts are net's;
   net's totals count its slow connections; the report's link verdict is bad
   exactly when net has a slow connection or job a slow_link instance.
 3 busbw: summary's algbw (exec_bytes / exec_ns) x the collective's factor is
   job's row busbw, for the rows job decomposed, and its exec_tasks is job's
   decomposed instances x ranks; diff's rows timed by execution (a set
   against itself) are job's rows (count, timed, exec avg/p50, wait, busbw);
   report's busbw curve points are job's
   decomposed collectives of that size (count, min, max, aggregate).
 4 hang: hang's stuck operation, missing ranks, stuck ranks and waiting
   connections are report's hang section's and job's / summary's hang.
 The HTML page's embedded data (its verdict, matrix and plots) is report --json's.
 5 counts: report's Data losses (per process, orphan stops, unparsable
   records) = summary's drops; events, processes and files in summary,
   report, validate, diff;
   each file's events in validate = the events summary counts in all;
   report's instances = job's collectives = job's matched total.
 6 clocks: report's timing-accuracy section is validate's (verdict, KernelCh,
   flags, each clock map's points, residual, error bound, slope vs drift);
   job's per-host correction (drift_ppm) is the opposite of the GPU clock
   maps' drift validate fits on that host, within job's drift_err_ppm:
   only with --job DIR on a lens-gen-job job, whose GPU clocks are true time
   (validate fits GPU vs host clock, job host vs reference host; on the
   replay's one host the GPU's own drift is all validate sees).

--self-test breaks each compared fact in one view's output in turn and checks
the comparison catches it (every check can fail).
usage: agree_views.py NCCL_LENS_BIN GOLDEN_TRACES_DIR [SCENARIO...]
       agree_views.py NCCL_LENS_BIN --self-test GOLDEN_TRACES_DIR
       agree_views.py NCCL_LENS_BIN --job DIR     (one job directory, e.g. lens-gen-job's)"""
import collections
import json
import os
import re
import subprocess
import sys

lens = os.path.abspath(sys.argv[1])
fails = []
checked = collections.Counter()


def fail(s, msg):
    fails.append((s, msg))
    print("FAIL %s: %s" % (s, msg))


def same(s, what, a, b):
    checked[what] += 1
    if a != b:
        fail(s, "%s: %r vs %r" % (what, a, b))


def near(s, what, a, b, rel=1e-5, absolute=1e-9):
    checked[what] += 1
    if a is None or b is None or abs(a - b) > max(absolute, rel * max(abs(a), abs(b))):
        fail(s, "%s: %r vs %r" % (what, a, b))


def text(cwd, *args, ok=(0,)):
    p = subprocess.run([lens] + list(args), cwd=cwd, capture_output=True, text=True, timeout=300)
    if p.returncode not in ok:
        raise SystemExit("nccl-lens %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def js(cwd, *args, ok=(0,)):
    return json.loads(text(cwd, *args, ok=ok))


FACTOR = {"AllReduce": lambda n: 2.0 * (n - 1) / n, "AllGather": lambda n: (n - 1) / n,
          "ReduceScatter": lambda n: (n - 1) / n, "AlltoAll": lambda n: (n - 1) / n}


def factor(func, n):
    return FACTOR.get(func, lambda n: 1.0)(n)


def straggles(job, c):
    """lens_job_inst_straggles on job --json's fields."""
    if not c.get("exec_ns") or c.get("last_rank") is None or c["last_rank"] < 0:
        return False
    return c["max_wait_ns"] >= max(job["threshold_ns"], c["exec_ns"] * job["min_wait_frac"])


def check_stragglers(s, job, net, rep, diff):
    coll, every = {}, collections.defaultdict(list)
    for c in job["collectives"]:
        every[(c["comm_id"], c["seq"], c["func"])].append(c)
        if "sender" not in c:
            coll[(c["comm_id"], c["seq"], c["func"])] = c
    for i in net["instances"]:
        c = coll.get((i["comm_id"], i["seq"], i["func"]))
        if i["kind"] != "coll" or c is None:
            continue
        want = c["last_rank"] if straggles(job, c) else None
        same(s, "net last_to_arrive = job last_rank (seq %d r%d)" % (i["seq"], i["rank"]), i["last_to_arrive"], want)
        if i["last_wait_ns"] is not None:
            same(s, "net last_wait_ns = job max_wait_ns (seq %d)" % i["seq"], i["last_wait_ns"], c["max_wait_ns"])
    # job's stragglers are its late instances summed by (communicator, rank)
    mine = collections.defaultdict(lambda: [0, collections.Counter()])
    for c in job["collectives"]:
        if straggles(job, c):
            m = mine[(c["comm_id"], c["last_rank"])]
            m[0] += 1
            m[1][c["cause"]] += 1
    theirs = {(x["comm_id"], x["rank"]): [x["times_last"], collections.Counter(x["causes"])] for x in job["stragglers"]}
    same(s, "job stragglers = its late instances by rank", dict(theirs), dict(mine))
    # report's list is job's
    rl = rep["stragglers"]["list"]
    same(s, "report straggler total = job's", rep["stragglers"]["total"], len(job["stragglers"]))
    same(s, "report stragglers (rank, host, pid, times, causes) = job's",
         [(x["comm_id"], x["rank"], x["host"], x["pid"], x["times_last"], x["causes"]) for x in rl],
         [(x["comm_id"], x["rank"], x["host"], x["pid"], x["times_last"], x["causes"])
          for x in job["stragglers"][:len(rl)]])
    for x, y in zip(rl, job["stragglers"]):
        near(s, "report wait caused (us) = job's (ns) / 1e3", x["wait_caused_us"], y["wait_caused_ns"] / 1e3, rel=1e-5)
        # report lists the rank's late instances that cost the most wait (LENS_REPORT_INSTANCES, 10)
        late = [c for c in job["collectives"]
                if c["comm_id"] == x["comm_id"] and c["last_rank"] == x["rank"] and straggles(job, c)]
        same(s, "report straggler r%d lists min(times last, 10) instances" % x["rank"], len(x["instances"]),
             min(len(late), x["times_last"], 10))
        late.sort(key=lambda c: -sum(r["wait_ns"] for r in c["ranks"]))
        top = late[:len(x["instances"])]
        mine = sorted((i["seq"], i["func"], i["bytes"], i["cause"], i["max_wait_us"], i["wait_sum_us"])
                      for i in x["instances"])
        want = sorted((c["seq"], c["func"], c["bytes"], c["cause"], c["max_wait_ns"] / 1e3,
                       sum(r["wait_ns"] for r in c["ranks"]) / 1e3) for c in top)
        same(s, "report straggler r%d instances = job's late instances with the most wait" % x["rank"],
             [m[:4] for m in mine], [w[:4] for w in want])
        for m, w in zip(mine, want):
            near(s, "report straggler instance max wait = job's", m[4], w[4])
            near(s, "report straggler instance wait sum = job's ranks' waits", m[5], w[5])
    verdict = {v["key"]: v for v in rep["verdict"]}
    same(s, "report straggler verdict bad <=> job names a straggler", verdict["stragglers"]["status"] == "bad",
         bool(job["stragglers"]))
    same(s, "diff of a set against itself changes nothing", (diff["changed"], diff["no_change"]), (0, True))


def check_arrival(s, job, summ, md):
    """report's Markdown arrival table: its "last to arrive" is job's late collectives of that rank (its stragglers'
    times last without p2p transfers; job's straggle rule, checked against its stragglers above)."""
    label = {}
    for c in summ["communicators"]:
        label[c["name"] or "comm " + c["comm_id"]] = c["comm_id"]
    times = collections.Counter()
    for c in job["collectives"]:
        if "sender" not in c and straggles(job, c):
            times[(c["comm_id"], c["last_rank"])] += 1
    part = md.split("Arrival at collectives", 1)
    if len(part) < 2:
        return
    for line in part[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or not cells[1].isdigit():
            continue
        comm = label.get(cells[0])
        if comm is None:
            fail(s, "report arrival table names communicator %r, summary has none" % cells[0])
            continue
        same(s, "report arrival last to arrive = job's times last (%s r%s)" % (cells[0], cells[1]), cells[5],
             str(times[(comm, int(cells[1]))]))


def check_links(s, job, net, rep, md):
    few = [c for c in net["connections"] if c["few_steps"]]
    same(s, "no net connection both slow and judged on too few steps", [c for c in few if c["slow"]], [])
    m = re.search(r"^- (\d+) connections? slow by the rule on fewer than \d+ timed steps, too few to judge "
                  r"\(r(\d+) -> r(\d+) ch (\d+)\)$", md, re.M)
    same(s, "report's too-few-steps line = net's few_steps connections (count, first)",
         (int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4))) if m else None,
         (len(few), few[0]["src"], few[0]["dst"], few[0]["channel"]) if few else None)
    if rep["net"] is None:
        same(s, "report has no network section <=> net has no connection", net["totals"]["connections"], 0)
        return
    slow = {(c["comm_id"], c["src"], c["dst"], c["channel"]) for c in net["connections"] if c["slow"]}
    out = {(c["comm_id"], c["src"], c["dst"], c["channel"]) for c in net["connections"] if c["stands_out"]}
    same(s, "net totals.slow_connections = its slow connections", net["totals"]["slow_connections"], len(slow))
    same(s, "report connections = net's", rep["net"]["connections"], net["totals"]["connections"])
    same(s, "report standing_out = net's connections standing out", rep["net"]["standing_out"], len(out))
    for c in rep["net"]["slowest"]:
        k = (c["comm_id"], c["src"], c["dst"], c["channel"])
        same(s, "report slow_link/stands_out of r%d->r%d ch%d = net's" % k[1:], (c["slow_link"], c["stands_out"]),
             (k in slow, k in out))
    job_slow = {(c["cause_rank"], c["cause_peer"]) for c in job["collectives"] if c["cause"] == "slow_link"}
    rep_job = {(x["src"], x["dst"]) for x in rep["net"]["job_slow_links"]}
    same(s, "report's job slow links = job's slow_link causes", rep_job, job_slow)
    verdict = {v["key"]: v for v in rep["verdict"]}["link"]
    same(s, "report link verdict bad <=> net slow connection or job slow_link", verdict["status"] == "bad",
         bool(slow or job_slow))


def bucket(x):
    return int(x).bit_length() - 1


def check_busbw(s, job, summ, rep):
    rows = {(r["comm_id"], r["func"], r["size_log2"]): r for r in job["rows"]}
    nranks = {}
    acc = collections.defaultdict(lambda: [0, 0, 0])
    for c in summ["communicators"]:
        nranks[c["comm_id"]] = c["nranks"]
        for o in c["ops"]:
            if o["func"] in ("Send", "Recv") or not o["exec_tasks"]:
                continue
            near(s, "summary algbw = exec_bytes / exec_ns", o["algbw_gbps"], o["exec_bytes"] / o["exec_ns"])
            # one size rule: summary's row is by nccl-tests' size, as job's (exec_bytes per task)
            k = (c["comm_id"], o["func"], o["size_log2"])
            same(s, "summary row size = nccl-tests size of its tasks (%s 2^%d)" % k[1:], o["size_log2"],
                 bucket(o["exec_bytes"] // o["exec_tasks"]))
            a = acc[k]
            a[0] += o["exec_bytes"]
            a[1] += o["exec_ns"]
            a[2] += o["exec_tasks"]
    for k, (b, ns, tasks) in acc.items():
        r = rows.get(k)
        if r is None:
            fail(s, "summary decomposed %s 2^%d of %s, job has no row" % (k[1], k[2], k[0]))
            continue
        near(s, "summary algbw x factor = job row busbw (%s 2^%d)" % k[1:], b / ns * factor(k[1], nranks[k[0]]),
             r["busbw_gbps"], rel=1e-9)
        same(s, "summary exec_tasks = job decomposed x ranks (%s 2^%d)" % k[1:], tasks, r["decomposed"] * nranks[k[0]])
    for k, r in rows.items():
        if r["decomposed"] and r["func"] not in ("Send", "Recv") and k not in acc:
            fail(s, "job decomposed %s 2^%d, summary has no time for it" % k[1:])
    # report's curve: job's decomposed, whole collectives of one size
    groups = collections.defaultdict(list)
    for c in job["collectives"]:
        if c.get("busbw_gbps") and "sender" not in c and c["ranks_seen"] == c["nranks"]:
            groups[(c["comm_id"], c["func"], c["bytes"])].append(c)
    seen = set()
    for sr in rep["busbw"]["series"]:
        for p in sr["points"]:
            k = (sr["comm_id"], sr["func"], p["bytes"])
            seen.add(k)
            g = groups.get(k, [])
            same(s, "report busbw point count = job's collectives (%s %d B)" % k[1:], p["count"], len(g))
            if not g:
                continue
            bw = [c["busbw_gbps"] for c in g]
            f = factor(k[1], g[0]["nranks"])
            agg = sum(c["bytes"] for c in g) / sum(c["exec_ns"] for c in g) * f
            near(s, "report busbw point = job's (bytes / exec) x factor", p["busbw"], agg, rel=1e-5)
            near(s, "report busbw point min = job's", p["min"], min(bw), rel=1e-5)
            near(s, "report busbw point max = job's", p["max"], max(bw), rel=1e-5)
    same(s, "job's whole decomposed collectives have report curve points", sorted(set(groups) - seen), [])


def check_diff_rows(s, job, diff):
    """diff's rows timed by execution are job's rows (a set against itself: its side a)."""
    comms = [c["a"]["comm_id"] for c in diff["communicators"]]
    rows = {(r["comm_id"], r["func"], r["size_log2"]): r for r in job["rows"]}
    for r in diff["rows"]:
        if r["time"] != "execution":
            continue
        k = (comms[r["comm"]], r["func"], r["size_log2"])
        j, a = rows.get(k), r["a"]
        if j is None:
            fail(s, "diff row %s 2^%d timed by execution, job has no row" % k[1:])
            continue
        same(s, "diff row (count, timed, exec avg, p50, wait avg) = job's (%s 2^%d)" % k[1:],
             (a["count"], a["timed"], a["time_avg_ns"] or 0, a["time_p50_ns"] or 0, a["wait_rank_avg_ns"] or 0),
             (j["count"], j["decomposed"], j["exec_avg_ns"], j["exec_p50_ns"], j["wait_avg_ns"]))
        if j["decomposed"]:
            near(s, "diff row busbw = job's (%s 2^%d)" % k[1:], a["busbw_gbps"], j["busbw_gbps"], rel=1e-9)


def check_hang(s, hang, job, summ, rep):
    stuck = [c for c in hang["communicators"] if c["stuck"]]
    same(s, "job hang = summary hang", job["hang"], summ["hang"])
    same(s, "hang stuck communicators = job's", len(stuck), job["hang"]["stuck_communicators"])
    same(s, "report hang section <=> hang stuck", rep["hang"] is not None, bool(stuck))
    same(s, "report hang verdict bad <=> hang stuck", {v["key"]: v for v in rep["verdict"]}["hang"]["status"] == "bad",
         bool(stuck))
    jc = {c["comm_id"]: c for c in job["hang"]["communicators"]}
    rc = {c["comm_id"]: c for c in (rep["hang"] or {}).get("comms", [])}
    for c in stuck:
        j, r = jc.get(c["comm_id"]), rc.get(c["comm_id"])
        if not j or not r:
            fail(s, "hang's stuck %s: job %s, report %s" % (c["comm_id"], bool(j), bool(r)))
            continue
        same(s, "hang stuck op = job's = report's", (c["stuck_func"], c["stuck_seq"], c["stuck_func"], c["stuck_seq"]),
             (j["func"], j["seq"], r["func"], r["seq"]))
        same(s, "hang missing ranks = job's", sorted(c["missing_ranks"]), sorted(j["missing_ranks"]))
        same(s, "hang missing ranks = report's", sorted(c["missing_ranks"]),
             [i for i, x in enumerate(r["ranks"]) if x[0] == "missing"])
        same(s, "hang stuck ranks = job's", sum(1 for x in c["ranks"] if x["stuck"]), j["stuck_ranks"])
        same(s, "hang stuck ranks = report's", sum(1 for x in c["ranks"] if x["stuck"]),
             sum(1 for x in r["ranks"] if x[0] == "stuck"))
        same(s, "hang waiting connections = report's",
             sorted((w["rank"], w["peer"], w["channel"], w["is_send"], w["step"], w["meaning"]) for w in c["waiting"]),
             sorted((w["rank"], w["peer"], w["channel"], w["send"], w["step"], w["state"]) for w in r["waiting"]))


DROPS = ("ring_full", "no_thread_slot", "null_handle", "bad_handle", "write_errors", "cupti_records", "blob_queue_full")


def check_drops(s, summ, md):
    """report's Data losses (Markdown, --all) are summary's drops: per process, orphan stops, unparsable records."""
    part = md.split("## Data losses", 1)
    if len(part) < 2:
        fail(s, "report has no Data losses section")
        return
    sec = part[1].split("\n## ", 1)[0]
    d = summ["drops"]
    rows = {}
    for line in sec.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 1 + len(DROPS) and ":" in cells[0] and cells[1].isdigit():
            rows[cells[0]] = tuple(int(c) for c in cells[1:])
    want = {"%s:%d" % (p["host"], p["pid"]): tuple(p[k] for k in DROPS) for p in d["processes"]}
    same(s, "report drops per process = summary's", rows, want)
    same(s, "report orphan stops = summary's", "orphan stops (start lost): %d" % d["orphan_stops"] in sec, True)
    same(s, "report unparsable records = summary's", "unparsable records: %d" % d["bad_records"] in sec, True)


def check_counts(s, summ, rep, val, job, diff):
    same(s, "events: summary = report = validate = diff",
         (summ["events"], rep["inputs"]["events"], sum(f["events"] for f in val["files"]), diff["a"]["events"]),
         (summ["events"],) * 4)
    same(s, "processes: summary = report = diff",
         (summ["processes"], rep["inputs"]["processes"], diff["a"]["processes"]),
         (summ["processes"],) * 3)
    same(s, "files: summary = report = validate", (len(summ["files"]), rep["inputs"]["files"], len(val["files"])),
         (len(summ["files"]),) * 3)
    same(s, "per file (path, truncated, lost chunks, damaged, sessions, clean end): summary = validate",
         [(f["path"], f["truncated_bytes"], f["lost_chunks"], f["damaged_bytes"], f["sessions"], f["clean_end"])
          for f in summ["files"]],
         [(f["path"], f["truncated_bytes"], f["lost_chunks"], f["damaged_bytes"], f["sessions"], f["clean_end"])
          for f in val["files"]])
    same(s, "instances: report = job collectives = job matched",
         (rep["inputs"]["instances"], sum(job["matched"].values())),
         (len(job["collectives"]),) * 2)


def check_gpu(s, val, rep):
    """report's timing-accuracy section is validate's: verdict, KernelCh count, flag counts, clock maps."""
    g = rep["gpu"]
    same(s, "report GPU verdict = validate's", (g["level"], g["text"]),
         (val["verdict"]["level"], val["verdict"]["text"]))
    same(s, "report KernelCh = validate's", g["kernel_ch"], val["totals"]["kernel_ch"])
    same(s, "report accuracy flags = validate's", {x["flag"]: x["events"] for x in g["flags"]}, val["totals"]["flags"])
    same(s, "report clock maps = validate's (count)", g["clock_maps_total"],
         len(val["clock_maps"]) + val["clock_maps_unlisted"])
    if val["clock_maps_unlisted"] or len(g["clock_maps"]) != len(val["clock_maps"]):
        return
    mine = sorted((m["rank"], m["points"], m["residual_us"], m["bound_us"], (m["slope"] - 1) * 1e6)
                  for m in g["clock_maps"])
    want = sorted((m["rank"], m["points"], m["residual_ns"] / 1e3, m["error_bound_ns"] / 1e3, m["drift_ppm"])
                  for m in val["clock_maps"])
    same(s, "report clock maps (rank, points) = validate's", [x[:2] for x in mine], [x[:2] for x in want])
    for a, b in zip(mine, want):
        near(s, "report clock map residual = validate's", a[2], b[2], rel=1e-5, absolute=1e-3)
        near(s, "report clock map error bound = validate's", a[3], b[3], rel=1e-5, absolute=1e-3)
        near(s, "report clock map slope - 1 = validate's drift", a[4], b[4], rel=1e-4, absolute=1e-3)


def check_clocks(s, job, val, summ):
    # validate's proc is the process's index in load order, summary's clocks a row per process in that order
    by_host = collections.defaultdict(list)
    same(s, "summary clocks: a row per process", len(summ["clocks"]), summ["processes"])
    for m in val["clock_maps"]:
        if m.get("drift_measured") and 0 <= m["proc"] < len(summ["clocks"]):
            by_host[summ["clocks"][m["proc"]]["host"]].append(m["drift_ppm"])
    for h in job["hosts"]:
        for d in by_host.get(h["host"], []):
            checked["job host correction = -(validate GPU map drift) within drift_err_ppm"] += 1
            if abs(h["drift_ppm"] + d) > h["drift_err_ppm"] + 1e-3:
                fail(s, "job host correction: host %s: job corrects %+.3f ppm +- %.3f, validate fits %+.3f ppm" %
                     (h["host"], h["drift_ppm"], h["drift_err_ppm"], d))


def views(cwd, target):
    v = {"summ": js(cwd, "summary", "--json", target), "net": js(cwd, "net", "--json", target),
         "hang": js(cwd, "hang", "--json", target, ok=(0, 3)), "val": js(cwd, "validate", "--json", "--all", target),
         "job": js(cwd, "job", "--json", "--all", target), "rep": js(cwd, "report", "--json", target),
         "diff": js(cwd, "diff", "--json", "--top", "0", target, target),
         "md": text(cwd, "report", "--all", target)}
    # the HTML page plots the JSON it embeds (libjs-d3 absent: no page, nothing to compare)
    p = subprocess.run([lens, "report", "--html", target], cwd=cwd, capture_output=True, text=True, timeout=300)
    page = p.stdout.split('<script type="application/json" id="lens-data">', 1)
    v["html"] = json.loads(page[1].split("</script>", 1)[0]) if p.returncode == 0 and len(page) == 2 else None
    return v


def check(s, v, full):
    if v["html"] is not None:
        same(s, "report --html's data = report --json", v["html"], v["rep"])
    check_stragglers(s, v["job"], v["net"], v["rep"], v["diff"])
    check_arrival(s, v["job"], v["summ"], v["md"])
    check_links(s, v["job"], v["net"], v["rep"], v["md"])
    check_busbw(s, v["job"], v["summ"], v["rep"])
    check_diff_rows(s, v["job"], v["diff"])
    check_hang(s, v["hang"], v["job"], v["summ"], v["rep"])
    check_counts(s, v["summ"], v["rep"], v["val"], v["job"], v["diff"])
    check_drops(s, v["summ"], v["md"])
    if v["rep"]["gpu"] is not None:
        check_gpu(s, v["val"], v["rep"])
    if full:
        check_clocks(s, v["job"], v["val"], v["summ"])


def first(xs, pred=lambda x: True):
    return next(x for x in xs if pred(x))


def true_clocks(v):
    """The replay's GPU clocks drift against its one host: make job's hosts say the opposite of validate's first
    fitted map, with a tight bound, so the clock check (alone: validate keeps that one map) has something true
    to break."""
    m = first(v["val"]["clock_maps"], lambda m: m["drift_measured"])
    v["val"]["clock_maps"] = [m]
    h = first(v["job"]["hosts"], lambda h: h["host"] == v["summ"]["clocks"][m["proc"]]["host"])
    h["drift_ppm"], h["drift_err_ppm"] = -m["drift_ppm"], 0.1


# Self-test: every check must be able to fail. Each mutation changes one fact in one view's output (what a view
# computing it by another rule would print) and must make the named check fail; the unchanged outputs pass.
MUTATIONS = [
    ("all", "net last_to_arrive", lambda v: first(v["net"]["instances"], lambda i: i["last_to_arrive"] is not None)
     .__setitem__("last_to_arrive", 99)),
    ("all", "net last_wait_ns", lambda v: first(v["net"]["instances"], lambda i: i["last_wait_ns"])
     .__setitem__("last_wait_ns", 1)),
    ("all", "job stragglers = its late", lambda v: v["job"]["stragglers"][0].__setitem__("times_last", 1000)),
    ("all", "report stragglers (rank", lambda v: v["rep"]["stragglers"]["list"][0].__setitem__("rank", 99)),
    ("all", "report straggler total", lambda v: v["rep"]["stragglers"].__setitem__("total", 0)),
    ("all", "report wait caused", lambda v: v["rep"]["stragglers"]["list"][0].__setitem__("wait_caused_us", 1.0)),
    ("all", "report straggler instance max wait", lambda v: v["rep"]["stragglers"]["list"][0]["instances"][0]
     .__setitem__("max_wait_us", 1e6)),
    ("all", "instances = job's late instances with the most wait", lambda v: v["rep"]["stragglers"]["list"][0]
     ["instances"][0].__setitem__("seq", 999)),
    ("all", "report straggler verdict", lambda v: first(v["rep"]["verdict"], lambda x: x["key"] == "stragglers")
     .__setitem__("status", "ok")),
    ("all", "report arrival last to arrive", lambda v: v.__setitem__("md", v["md"].replace(
        "| replay-world | 2 | 87 |", "| replay-world | 2 | 87 | 1 ns | 1 ns | 83 |\n| x | 2 | 87 |"))),
    ("job-slow-link", "report --html's data", lambda v: v["html"]["net"]["matrix"]["cells"].pop()),
    ("all", "diff of a set against itself", lambda v: v["diff"].__setitem__("changed", 1)),
    ("all", "report's too-few-steps line", lambda v: first(v["net"]["connections"], lambda c: c["few_steps"])
     .__setitem__("few_steps", False)),
    ("job-slow-link", "net totals.slow_connections", lambda v: v["net"]["totals"].__setitem__("slow_connections", 0)),
    ("job-slow-link", "report slow_link/stands_out", lambda v: v["rep"]["net"]["slowest"][0]
     .__setitem__("slow_link", False)),
    ("job-slow-link", "report standing_out", lambda v: v["rep"]["net"].__setitem__("standing_out", 0)),
    ("job-slow-link", "report connections", lambda v: v["rep"]["net"].__setitem__("connections", 5)),
    ("job-slow-link", "report's job slow links", lambda v: v["rep"]["net"].__setitem__("job_slow_links", [])),
    ("job-slow-link", "report link verdict", lambda v: first(v["rep"]["verdict"], lambda x: x["key"] == "link")
     .__setitem__("status", "ok")),
    ("job-late-app", "summary algbw x factor", lambda v: v["summ"]["communicators"][0]["ops"][0]
     .__setitem__("exec_ns", v["summ"]["communicators"][0]["ops"][0]["exec_ns"] * 2)),
    ("job-late-app", "summary exec_tasks", lambda v: v["job"]["rows"][0].__setitem__("decomposed", 1)),
    ("job-late-app", "report busbw point =", lambda v: v["rep"]["busbw"]["series"][0]["points"][0]
     .__setitem__("busbw", 1.0)),
    ("job-late-app", "diff row busbw", lambda v: v["diff"]["rows"][0]["a"].__setitem__("busbw_gbps", 1.0)),
    ("job-late-app", "diff row (count", lambda v: v["diff"]["rows"][0]["a"].__setitem__("time_avg_ns", 1)),
    ("job-late-app", "report busbw point count", lambda v: v["rep"]["busbw"]["series"][0]["points"][0]
     .__setitem__("count", 7)),
    ("job-late-app", "report curve points", lambda v: v["rep"]["busbw"]["series"][0]["points"].pop()),
    ("hang-missing", "job hang = summary hang", lambda v: v["summ"]["hang"].__setitem__("stuck", False)),
    ("hang-missing", "hang stuck op", lambda v: v["rep"]["hang"]["comms"][0].__setitem__("seq", 1)),
    ("hang-missing", "hang missing ranks = report's", lambda v: v["rep"]["hang"]["comms"][0]["ranks"][2]
     .__setitem__(0, "stuck")),
    ("hang-missing", "hang missing ranks = job's", lambda v: v["job"]["hang"]["communicators"][0]
     .__setitem__("missing_ranks", [])),
    ("hang-missing", "hang waiting connections", lambda v: v["rep"]["hang"]["comms"][0]["waiting"].pop()),
    ("hang-missing", "report hang verdict", lambda v: first(v["rep"]["verdict"], lambda x: x["key"] == "hang")
     .__setitem__("status", "ok")),
    ("all", "events:", lambda v: v["val"]["files"][0].__setitem__("events", v["val"]["files"][0]["events"] + 1)),
    ("all", "processes:", lambda v: v["rep"]["inputs"].__setitem__("processes", 3)),
    ("mixed", "report drops per process", lambda v: v.__setitem__("md", v["md"].replace(
        "| 0 | 0 | 1 | 0 |", "| 0 | 0 | 2 | 0 |", 1))),
    ("all", "report orphan stops", lambda v: v["summ"]["drops"].__setitem__("orphan_stops", 1)),
    ("all", "per file", lambda v: v["val"]["files"][1].__setitem__("clean_end", False)),
    ("all", "instances:", lambda v: v["rep"]["inputs"].__setitem__("instances", 1)),
    ("all", "report GPU verdict", lambda v: v["rep"]["gpu"].__setitem__("level", "durations trusted")),
    ("all", "report KernelCh", lambda v: v["rep"]["gpu"].__setitem__("kernel_ch", 479)),
    ("all", "report accuracy flags", lambda v: v["rep"]["gpu"]["flags"][1].__setitem__("events", 15)),
    ("all", "report clock map residual", lambda v: v["rep"]["gpu"]["clock_maps"][1].__setitem__("residual_us", 1.0)),
    ("all", "report clock map slope", lambda v: v["rep"]["gpu"]["clock_maps"][1].__setitem__("slope", 1.0001)),
    ("all", "job host correction", lambda v: (true_clocks(v), v["job"]["hosts"][0].__setitem__("drift_ppm", 0.5))),
]


def self_test(traces):
    global fails
    cache, bad = {}, 0
    for s, want, mutate in MUTATIONS:
        if s not in cache:
            cache[s] = json.dumps(views(traces, s))
        v = json.loads(cache[s])
        if want.startswith("report --html") and v["html"] is None:
            print("self-test: no HTML page (libjs-d3 missing): '%s' not tried" % want)
            continue
        if want == "job host correction":
            true_clocks(v)
            fails = []
            check_clocks(s, v["job"], v["val"], v["summ"])
            if fails:
                bad += 1
                print("SELF-TEST: the made-true clocks do not pass")
            v = json.loads(cache[s])
        mutate(v)
        fails = []
        if want == "job host correction":
            check_clocks(s, v["job"], v["val"], v["summ"])
        else:
            check(s, v, False)
        if not any(want in m for _, m in fails):
            bad += 1
            print("SELF-TEST FAIL: breaking '%s' on %s went unnoticed" % (want, s))
    fails = []
    print("self-test: %d of %d deliberate breaks caught" % (len(MUTATIONS) - bad, len(MUTATIONS)))
    return bad


if len(sys.argv) == 4 and sys.argv[2] == "--job":
    check(os.path.basename(sys.argv[3].rstrip("/")), views(sys.argv[3], "."), True)
elif len(sys.argv) == 4 and sys.argv[2] == "--self-test":
    sys.exit(1 if self_test(sys.argv[3]) else 0)
else:
    traces = sys.argv[2]
    scenarios = sys.argv[3:] or sorted(d for d in os.listdir(traces) if os.path.isdir(os.path.join(traces, d)))
    for s in scenarios:
        check(s, views(traces, s), False)
kinds = {re.sub(r"\br\d+\b", "rN", re.sub(r" \([^()]*\)$", "", what)) for what in checked}
print("%d comparisons of %d kinds, %d disagreement(s)" % (sum(checked.values()), len(kinds), len(fails)))
sys.exit(1 if fails or not checked else 0)
