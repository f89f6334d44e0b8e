#!/usr/bin/env python3
"""The GPU check's hang step (run_gpu_check.sh step 9), judged from what the plugin wrote:

    check_hang.py --missing-rank R [--func F] [--cli NCCL_LENS] DIR

DIR holds what a job run in flight-recorder mode (NCCL_LENS_MODE=recorder, NCCL_LENS_HANG_TIMEOUT)
wrote there: its dumps nccl-lens-<host>-<pid>-dump<N>.lens, and the logs (*.log: NCCL's log files,
NCCL_DEBUG_FILE, where the plugin's lines go through NCCL's logger; or the replay's stderr). Rank R
stopped calling collectives; the others entered one more F (default AllReduce), which could not
complete. Checks:

  - the watchdog fired: a dump holds the NOTE "nccl-lens recorder dump: hang watchdog: ..." (the
    plugin writes NOTE chunks as plain text, docs/trace-format.md, so the file's bytes are searched),
    and that dump is of a process holding a stuck rank;
  - the watchdog said so in the log: "recorder dump (hang watchdog: ...): PATH" (WARN, through NCCL's
    logger), PATH one of the dumps (skipped, saying so, when DIR has no *.log);
  - `nccl-lens hang --json DIR` exits 3 (a collective is stuck) and names it: a communicator stuck at
    F, with its sequence number;
  - the missing rank named: missing_ranks is [R] (R traced, its last started F lower), not R among the
    untraced ranks (no dump of its process);
  - every other rank of the communicator entered it and is stuck in it, each with what it waits for
    (ProxyOps in flight or kernel channels that never stopped), printed;
  - the views that lead with the hang say the same: `summary`'s first line "hang: F seq S ... never
    entered by rank R", and `job --json`'s "hang" object with missing_ranks [R].

Prints PASS/FAIL lines with the numbers seen; exit 0 when every check passed, 1 otherwise, 2 on a
usage error."""
import argparse
import collections
import glob
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_lib as lib  # noqa: E402

WATCHDOG_NOTE = b"nccl-lens recorder dump: hang watchdog"
WATCHDOG_LOG = re.compile(r"recorder dump \(hang watchdog[^)]*\): (\S+\.lens)")
DUMP_NAME = re.compile(r"^nccl-lens-.*-(\d+)-dump\d+\.lens$")


def dump_pid(path):
    m = DUMP_NAME.match(os.path.basename(path))
    return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(prog="check_hang.py", description="hang check on a recorder-mode job's dumps")
    ap.add_argument("--missing-rank", type=int, required=True)
    ap.add_argument("--func", default="AllReduce")
    ap.add_argument("--cli", default=lib.default_cli())
    ap.add_argument("dir")
    a = ap.parse_args()
    c = lib.Checks("check_hang")
    R = a.missing_rank
    dumps = sorted(glob.glob(os.path.join(a.dir, "nccl-lens-*-dump*.lens")))
    c.check(bool(dumps), "recorder dumps written", "%d: %s" % (len(dumps), " ".join(os.path.basename(p)
                                                                                     for p in dumps) or "none"))
    wd = []
    for p in dumps:
        with open(p, "rb") as f:
            if WATCHDOG_NOTE in f.read():
                wd.append(p)
    for p in dumps:
        with open(p, "rb") as f:
            b = f.read()
        m = re.search(rb"nccl-lens recorder dump: ([^(]*)\(", b)
        c.info("dump %s says why" % os.path.basename(p), m.group(1).decode("utf-8", "replace").strip() if m else "?")

    logs = sorted(glob.glob(os.path.join(a.dir, "*.log")))
    logged = []
    for p in logs:
        with open(p, "r", errors="replace") as f:
            logged += WATCHDOG_LOG.findall(f.read())
    if logs:
        named = [p for p in logged if os.path.basename(p) in {os.path.basename(d) for d in dumps}]
        c.check(bool(named), "the watchdog's dump logged through NCCL's logger",
                "%d line(s) in %d log file(s)%s" % (len(logged), len(logs),
                                                    ": " + os.path.basename(named[0]) if named else ""))
    else:
        c.info("the watchdog's log line", "not checked: no *.log in %s" % a.dir)

    rc, out, err = lib.run_cli(a.cli, ["hang", "--json", a.dir], 300)
    c.check(rc == 3, "nccl-lens hang: a collective is stuck (exit 3)", "exit %s%s" % (
        rc, "" if rc in (0, 3) else ": " + err.strip()[-200:]))
    try:
        h = json.loads(out) if rc in (0, 3) else None
    except ValueError:
        h = None
    comms = [x for x in (h or {}).get("communicators", []) if x.get("stuck")]
    cm = next((x for x in comms if x.get("stuck_func") == a.func), None)
    c.check(cm is not None, "the stuck op named", "%s seq %s of %s (%s ranks)" % (
        cm["stuck_func"], cm.get("stuck_seq"), cm.get("name") or cm.get("comm_id"), cm.get("nranks"))
        if cm else "stuck communicators: %s" % ([(x.get("stuck_func"), x.get("stuck_seq")) for x in comms] or "none"))
    if cm is None:
        c.check(False, "rank %d named missing" % R, "no stuck %s" % a.func)
        return c.done()
    c.check(cm.get("missing_ranks") == [R], "rank %d named missing" % R, "missing_ranks %s, untraced_ranks %s" % (
        cm.get("missing_ranks"), cm.get("untraced_ranks")))
    ranks = cm.get("ranks", [])
    others = [r for r in ranks if r.get("rank") != R]
    stuck = [r for r in others if r.get("entered") and r.get("stuck")]
    waits = collections.defaultdict(list)
    for w in cm.get("waiting", []):
        waits[w.get("rank")].append("%s %s ch%s step %s %s" % ("send to" if w.get("is_send") else "recv from",
                                                               w.get("peer"), w.get("channel"), w.get("step"),
                                                               w.get("state") or "(no state)"))
    kch = collections.Counter(k.get("rank") for k in cm.get("kernel_channels", []))
    c.check(len(others) == (cm.get("nranks") or 0) - 1 and len(stuck) == len(others) and
            all(waits[r["rank"]] or kch[r["rank"]] for r in stuck),
            "every other rank stuck in it, waiting on something",
            "; ".join("rank %s: %s, %d kernel channel(s) never stopped, %s" % (
                r.get("rank"), "stuck" if r in stuck else "NOT stuck", kch[r.get("rank")],
                ", ".join(waits[r.get("rank")][:4]) or "no op in flight") for r in others) or "no other rank")
    stuck_pids = {r.get("pid") for r in stuck}
    wd_stuck = [p for p in wd if dump_pid(p) in stuck_pids]
    c.check(bool(wd_stuck), "the hang watchdog dumped a stuck rank's process",
            "%d dump(s) with the watchdog's NOTE, %d of a stuck rank's process (pids %s)" % (
                len(wd), len(wd_stuck), sorted(p for p in stuck_pids if p is not None)))
    for p in (h or {}).get("proxies", []):
        c.info("proxy pid %s tid %s (rank %s)" % (p.get("pid"), p.get("tid"), p.get("rank")),
               "%s, silent %.3f s" % (p.get("verdict"), (p.get("silent_ns") or 0) / 1e9))

    rc, out, err = lib.run_cli(a.cli, ["summary", a.dir], 300)
    first = out.splitlines()[0] if out else ""
    want = "hang: %s seq %s" % (a.func, cm.get("stuck_seq"))
    c.check(first.startswith(want) and ("never entered by rank %d" % R) in first, "summary leads with the hang",
            repr(first) if first else "exit %s: %s" % (rc, err.strip()[-200:]))
    j = lib.cli_json(c, a.cli, ["job", "--json", a.dir], "job --json reads the dumps")
    jh = (j or {}).get("hang") or {}
    jc = [x for x in jh.get("communicators", []) if x.get("func") == a.func]
    c.check(bool(jh.get("stuck")) and bool(jc) and jc[0].get("missing_ranks") == [R] and
            jc[0].get("seq") == cm.get("stuck_seq"), "job --json's hang object agrees",
            "stuck %s, %s" % (jh.get("stuck"), [(x.get("func"), x.get("seq"), x.get("missing_ranks")) for x in jc]))
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
