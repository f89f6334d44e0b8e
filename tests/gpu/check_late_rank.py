#!/usr/bin/env python3
"""The GPU check's late-rank step (run_gpu_check.sh step 8), judged from the traces alone:

    check_late_rank.py --late-rank R --sleep-us US [--func F] [--bytes N] [--min-instances N]
                       [--min-wait-frac X] [--max-wait-frac X] [--max-exec-frac X] [--cli NCCL_LENS] TRACE...

TRACE: the job's .lens files or their directory. The job made rank R late on purpose: it slept US
microseconds before each call of F (default AllReduce) of N bytes, every rank waiting for each op to
complete (lens-nccl-job -L R:US). `nccl-lens job --json` on the traces must then say, over those
instances (seen on every rank of their communicator):

  - enough of them were matched and decomposed (exec_ns not null);
  - R is the last rank in >= 90 % of them, and the straggler named (a cause on rank R) in >= 90 %;
  - R leads the communicator's stragglers table (most wait caused), and the job's row for F at that
    size (the table `summary` leads with) has R as its most frequent last rank;
  - the others' wait (wait_ns of every rank but R), median over the instances, is about the sleep:
    between --min-wait-frac (0.5) and --max-wait-frac (2.0) of it. The sleep is a floor on how late R
    calls; what can make the measured wait shorter is the other rank's own delay in calling the next
    op after the last one completed (its host noticing completion, a GPU time-sliced between the
    ranks' processes: 4.8 ms round trips on the H100 of docs/gpu-check.md), so half the sleep leaves
    room for that at the 20 ms the script sleeps, and far less than half would mean waits are lost;
  - the execution does not hold the sleep ("never count waiting as working"): median exec_ns at most
    --max-exec-frac (0.5) of the sleep, and its 90th percentile below the sleep itself. An execution
    that included R's sleep would be at least the sleep in every instance.

Prints PASS/FAIL lines with the numbers seen (and INFO: causes, flags, span sources); exit 0 when every
check passed, 1 otherwise, 2 on a usage error."""
import argparse
import collections
import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_lib as lib  # noqa: E402


def main():
    ap = argparse.ArgumentParser(prog="check_late_rank.py", description="late-rank check on nccl-lens job --json")
    ap.add_argument("--late-rank", type=int, required=True)
    ap.add_argument("--sleep-us", type=int, required=True)
    ap.add_argument("--func", default="AllReduce")
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--min-instances", type=int, default=10)
    ap.add_argument("--min-wait-frac", type=float, default=0.5)
    ap.add_argument("--max-wait-frac", type=float, default=2.0)
    ap.add_argument("--max-exec-frac", type=float, default=0.5)
    ap.add_argument("--cli", default=lib.default_cli())
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    if a.sleep_us <= 0 or a.late_rank < 0 or a.bytes <= 0:
        lib.usage_exit(ap, "--sleep-us, --bytes must be > 0 and --late-rank >= 0")
    c = lib.Checks("check_late_rank")
    sleep_ns = a.sleep_us * 1000
    print("late rank %d, sleep %d us before each %s of %d bytes" % (a.late_rank, a.sleep_us, a.func, a.bytes))
    d = lib.cli_json(c, a.cli, ["job", "--json"] + a.traces, "nccl-lens job --json")
    if d is None:
        return c.done()

    seen = [x for x in d.get("collectives", []) if x.get("func") == a.func and x.get("bytes") == a.bytes and
            x.get("ranks_seen") == x.get("nranks") and (x.get("nranks") or 0) > a.late_rank]
    dec = [x for x in seen if x.get("exec_ns") is not None]
    c.check(len(dec) >= a.min_instances and len(dec) >= 0.9 * len(seen),
            "instances matched on every rank and decomposed",
            "%d of %d (need >= %d and >= 90 %%)" % (len(dec), len(seen), a.min_instances))
    if not dec:
        return c.done()
    comms = collections.Counter(x["comm_id"] for x in dec)
    comm = comms.most_common(1)[0][0]
    c.info("communicators with such instances", dict(comms))

    last = sum(1 for x in dec if x.get("last_rank") == a.late_rank)
    c.check(last >= 0.9 * len(dec), "rank %d is the last rank" % a.late_rank,
            "in %d of %d instances; last ranks %s" % (last, len(dec),
                                                      dict(collections.Counter(x.get("last_rank") for x in dec))))
    named = sum(1 for x in dec if x.get("cause_rank") == a.late_rank and x.get("cause") not in (None, "none"))
    c.check(named >= 0.9 * len(dec), "rank %d named the straggler" % a.late_rank,
            "in %d of %d instances" % (named, len(dec)))
    c.info("causes named", dict(collections.Counter(x.get("cause") for x in dec)))
    c.info("flags", dict(collections.Counter(f for x in dec for f in x.get("flags", []))) or "none")
    c.info("span sources", dict(collections.Counter(x.get("span_source") for x in dec)))

    st = [s for s in d.get("stragglers", []) if s.get("comm_id") == comm]
    top = max(st, key=lambda s: s.get("wait_caused_ns", 0)) if st else None
    c.check(top is not None and top.get("rank") == a.late_rank, "stragglers table led by rank %d" % a.late_rank,
            "; ".join("rank %s: %.1f ms caused, last %s times" % (s.get("rank"), s.get("wait_caused_ns", 0) / 1e6,
                                                                 s.get("times_last")) for s in st) or "empty")
    size_log2 = int(math.floor(math.log2(a.bytes)))
    rows = [r for r in d.get("rows", []) if r.get("comm_id") == comm and r.get("func") == a.func and
            r.get("size_log2") == size_log2]
    row = rows[0] if rows else None
    c.check(row is not None and row.get("top_last_rank") == a.late_rank,
            "the %s 2^%d row's last rank is %d" % (a.func, size_log2, a.late_rank),
            ("last rank %s (%s of %s), %s with a straggler; exec p50 %.1f us, wait avg/max %.1f/%.1f us" %
             (row.get("top_last_rank"), row.get("top_last_count"), row.get("count"), row.get("with_straggler"),
              (row.get("exec_p50_ns") or 0) / 1e3, (row.get("wait_avg_ns") or 0) / 1e3,
              (row.get("wait_max_ns") or 0) / 1e3)) if row else "no such row")

    waits = [r["wait_ns"] for x in dec for r in x.get("ranks", [])
             if r.get("rank") != a.late_rank and r.get("wait_ns") is not None]
    w50 = lib.median(waits)
    c.check(w50 is not None and a.min_wait_frac * sleep_ns <= w50 <= a.max_wait_frac * sleep_ns,
            "the others' wait is about the sleep",
            "median %.1f us, p10 %.1f us, p90 %.1f us over %d rank-instances; sleep %d us, allowed %.1f..%.1f us" %
            ((w50 or 0) / 1e3, (lib.quantile(waits, 0.1) or 0) / 1e3, (lib.quantile(waits, 0.9) or 0) / 1e3,
             len(waits), a.sleep_us, a.min_wait_frac * a.sleep_us, a.max_wait_frac * a.sleep_us))
    execs = [x["exec_ns"] for x in dec]
    e50, e90 = lib.median(execs), lib.quantile(execs, 0.9)
    c.check(e50 <= a.max_exec_frac * sleep_ns and e90 < sleep_ns, "execution does not hold the sleep",
            "exec median %.1f us, p90 %.1f us, max %.1f us; sleep %d us (median must be <= %.1f us, p90 < sleep)" %
            (e50 / 1e3, e90 / 1e3, max(execs) / 1e3, a.sleep_us, a.max_exec_frac * a.sleep_us))
    late_waits = [r["wait_ns"] for x in dec for r in x.get("ranks", [])
                  if r.get("rank") == a.late_rank and r.get("wait_ns") is not None]
    c.info("rank %d's own wait" % a.late_rank, "median %.1f us" % ((lib.median(late_waits) or 0) / 1e3))
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
