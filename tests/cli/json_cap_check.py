#!/usr/bin/env python3
"""test_json_cap: validate, net and job --json stay a few MB on a 1,024-rank
job and lose no finding (docs/cli.md, "JSON at scale").

By default each list holds every flagged item (validate: a launch without its
kernel record or with a flagged channel, a flagged channel without a launch;
net: a connection standing out, slow or asymmetric, and its links; job: an
instance with a cause or a flag) and the first ok ones while fewer than
LENS_FMT_JSON_OK_ENTRIES entries are listed (net: the instances with the most
step time); "left_out" counts the rest and --all lists every one.

On a lens-gen-job of 1,024 ranks (32 hosts, 2 M events, 4 stragglers), for
each command, the default against --all:
  - the default is under 10 MB and parses; something was left out;
  - every flagged item of --all is in the default, unchanged;
  - every listed item is one of --all's, in --all's order;
  - listed + left_out = --all's count, list by list;
  - every other key is the same (totals, verdict, stragglers, rows, hosts);
  - net lists the instances with the most step time.
On replay scenarios with findings (tests/golden/traces: overrun's flagged
launches, net-slow-link's slow connection, all's flagged connections past an
ok one), the same with a bound of 4 or 1 entries (NCCL_LENS_JSON_OK_ENTRIES),
and without it the default is --all byte for
byte (a small job loses nothing). Each command's --help names --all.
usage: json_cap_check.py NCCL_LENS_BIN LENS_GEN_JOB_BIN GOLDEN_TRACES_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

lens, gen, traces = sys.argv[1], sys.argv[2], sys.argv[3]
fails = []
MAX_BYTES = 10 * 1000 * 1000
ASYM_RATIO = 1.5  # net_print.c: an asymmetric pair's slower side


def fail(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([lens] + args, capture_output=True, timeout=300, env=e)
    if p.returncode != 0:
        raise SystemExit("nccl-lens %s: exit %d\n%s" % (" ".join(args), p.returncode, p.stderr.decode()))
    return p.stdout


def canon(x):
    return json.dumps(x, sort_keys=True, separators=(",", ":"))


# Per command: the shortened lists as (path to the list, left_out key), and the
# rule that flags an item of a list (None: no item of it is flagged).
def get(d, path):
    for k in path:
        d = d[k]
    return d


def validate_flagged(path, item):
    if path == ("launches",):
        return item["no_kernel_record"] or any(c["flags"] for c in item["channels"])
    return bool(item["flags"])


def net_flagged_conn(c):
    return c["stands_out"] or c["slow"] or (c["reverse"] >= 0 and c["asymmetry"] is not None
                                            and c["asymmetry"] >= ASYM_RATIO)


def net_flagged(path, item, full):
    if path == ("connections",):
        return net_flagged_conn(item)
    if path == ("links",):  # a flagged connection's links
        return net_flagged_conn(full["connections"][item["connection"]])
    return False


def job_flagged(path, item):
    return item["cause"] != "none" or bool(item["flags"])


LISTS = {
    "validate": ([(("launches",), "launches_ok"), (("channels_without_launch",), "channels_without_launch_ok")],
                 lambda p, i, full: validate_flagged(p, i), ["launches_unlisted", "channels_without_launch_unlisted"]),
    "net": ([(("links",), "links_ok"), (("connections",), "connections_ok"), (("instances",), "instances"),
             (("net_plugin", "qps"), "qps")], net_flagged, []),
    "job": ([(("collectives",), "collectives_ok")], lambda p, i, full: job_flagged(p, i), []),
}


def is_subsequence(small, big):
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def check(cmd, where, dflt_raw, full_raw, want_cut, want_flagged):
    """Default output against --all; returns the number of flagged items seen."""
    name = "%s %s" % (cmd, where)
    try:
        d = json.loads(dflt_raw)
        full = json.loads(full_raw)
    except ValueError as e:
        fail("%s: not JSON: %s" % (name, e))
        return 0
    lists, flagged_rule, differ = LISTS[cmd]
    left = d.get("left_out")
    if want_cut and not left:
        fail("%s: nothing left out (%d bytes against %d with --all)" % (name, len(dflt_raw), len(full_raw)))
    if not want_cut and left is not None:
        fail("%s: left_out %s on a job this small" % (name, left))
    if left is not None and not any(left.values()):
        fail("%s: left_out present with nothing left out: %s" % (name, left))
    if "left_out" in full:
        fail("%s: --all still leaves out %s" % (name, full["left_out"]))
    n_flagged = 0
    for path, key in lists:
        mine, all_items = get(d, path), get(full, path)
        got = [canon(x) for x in mine]
        every = [canon(x) for x in all_items]
        out = (left or {}).get(key, 0)
        if left is not None and key not in left:
            fail("%s: left_out has no %s" % (name, key))
        if len(mine) + out != len(all_items):
            fail("%s: %s: %d listed + %d left out != %d with --all" % (name, "/".join(path), len(mine), out,
                                                                         len(all_items)))
        if not is_subsequence(got, every):
            fail("%s: %s: a listed item is not --all's, or out of its order" % (name, "/".join(path)))
        have = set(got)
        for x, c in zip(all_items, every):
            if flagged_rule(path, x, full):
                n_flagged += 1
                if c not in have:
                    fail("%s: flagged %s item left out: %s" % (name, "/".join(path), c[:200]))
        if cmd == "net" and path == ("instances",) and out:
            listed = [x["step_ns"] for x in mine]
            rest = sorted((x["step_ns"] for x, c in zip(all_items, every) if c not in have), reverse=True)
            if listed and rest and min(listed) < rest[0]:
                fail("%s: an instance with %d ns of steps left out, one with %d listed" % (name, rest[0],
                                                                                         min(listed)))
    if want_flagged and not n_flagged:
        fail("%s: no flagged item to check" % name)
    # Every other key as --all has it
    skip = {p[0] for p, _ in lists} | {"left_out"} | set(differ)
    for k in set(d) | set(full):
        if k in skip:
            continue
        if k == "net_plugin":
            a = {x: y for x, y in d.get(k, {}).items() if x != "qps"}
            b = {x: y for x, y in full.get(k, {}).items() if x != "qps"}
        else:
            a, b = d.get(k), full.get(k)
        if canon(a) != canon(b):
            fail("%s: key %s differs from --all's" % (name, k))
    if cmd == "validate" and left is not None:
        if d["launches_unlisted"] != left["launches_ok"]:
            fail("%s: launches_unlisted %d != left_out.launches_ok %d" % (name, d["launches_unlisted"],
                                                                        left["launches_ok"]))
    return n_flagged


tmp = tempfile.mkdtemp(prefix="lens-json-cap.")
try:
    job = os.path.join(tmp, "job")
    p = subprocess.run([gen, "-o", job, "--ranks", "1024", "--hosts", "32", "--events", "2000000",
                        "--stragglers", "4", "--seed", "5"], capture_output=True, timeout=300)
    if p.returncode:
        raise SystemExit("lens-gen-job: exit %d\n%s" % (p.returncode, p.stderr.decode()))
    for cmd in ("validate", "net", "job"):
        dflt = run([cmd, "--json", job])
        full = run([cmd, "--json", "--all", job])
        print("%s --json on 1,024 ranks: %.2f MB (--all: %.2f MB)" % (cmd, len(dflt) / 1e6, len(full) / 1e6))
        if len(dflt) >= MAX_BYTES:
            fail("%s --json on 1,024 ranks: %d bytes, over %d" % (cmd, len(dflt), MAX_BYTES))
        # the generator's 4 stragglers are the job view's findings; validate and net have none there
        check(cmd, "1,024 ranks", dflt, full, True, cmd == "job")
        usage = subprocess.run([lens, cmd, "--help"], capture_output=True, timeout=60)
        if b"--all" not in usage.stdout + usage.stderr:
            fail("%s --help does not name --all" % cmd)
    # Findings of the replay, cut by a small bound; whole without it.
    # all, bound 1: net's connections 0-5, 7 and 8 are flagged (slow, standing out or asymmetric), 6 is
    # not: the first ok one takes the bound, the flagged ones past it stay.
    for cmd, scen, bound in (("validate", "overrun", 4), ("net", "net-slow-link", 4), ("net", "all", 1),
                             ("job", "job-late-app", 4)):
        d = os.path.join(traces, scen)
        full = run([cmd, "--json", "--all", d])
        if run([cmd, "--json", d]) != full:
            fail("%s --json %s: not --all's output on a small job" % (cmd, scen))
        small = run([cmd, "--json", d], env={"NCCL_LENS_JSON_OK_ENTRIES": str(bound)})
        # job-late-app: every instance has its straggler, nothing to leave out
        n = check(cmd, "%s (bound %d)" % (scen, bound), small, full, cmd != "job", True)
        print("%s --json %s, bound %d: %d flagged items kept, %d of %d bytes" % (cmd, scen, bound, n, len(small),
                                                                               len(full)))
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if fails:
    print("%d failures" % len(fails))
    sys.exit(1)
print("ok")
