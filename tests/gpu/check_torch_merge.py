#!/usr/bin/env python3
"""The GPU check's torch.profiler merge (run_gpu_check.sh step 7), judged on the files:

    check_torch_merge.py [--ranks N] [--min-match X] [--cli NCCL_LENS] KINETO_DIR LENS_TRACES OUT_DIR

KINETO_DIR: torch.profiler's traces of the job, one per rank (*.json, *.json.gz: torch_job.py
--trace-dir); LENS_TRACES: the plugin's traces of the same run (a directory or .lens files);
OUT_DIR: where the merge writes (must not hold files of the same names: the merge never replaces).
It runs `nccl-lens export --format kineto --into KINETO_DIR LENS_TRACES -o OUT_DIR` (docs/pytorch.md)
and checks:

  - N Kineto files (default 2) and the merge exits 0;
  - every merged file was merged, not copied unchanged: it has the top-level "nccl_lens" object, and
    at least --min-match (0.9) of its NCCL kernels were matched with our launches;
  - what the merge adds is there and agrees with its own counts: as many kernels carrying
    "nccl_lens func" args as "matched", "nccl_lens_channel" slices (KernelCh spans) as "kernel_ch",
    at least one; proxy ops ("nccl_lens_proxy") as "proxy_ops"; flows (cat "nccl_lens");
  - with several ranks, the kernels carry the job view's decomposition ("nccl_lens exec us");
  - `nccl-lens job --json` reads the merged Kineto files (docs/kineto-import.md): instances matched on
    every rank, >= 90 % of them decomposed.

Prints PASS/FAIL lines with the numbers seen; exit 0 when every check passed, 1 otherwise, 2 on a
usage error."""
import argparse
import collections
import glob
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check_lib as lib  # noqa: E402


def kineto_files(d):
    return sorted(glob.glob(os.path.join(d, "*.json")) + glob.glob(os.path.join(d, "*.json.gz")))


def main():
    ap = argparse.ArgumentParser(prog="check_torch_merge.py", description="torch.profiler + nccl-lens merge check")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--min-match", type=float, default=0.9)
    ap.add_argument("--cli", default=lib.default_cli())
    ap.add_argument("kineto_dir")
    ap.add_argument("lens_traces")
    ap.add_argument("out_dir")
    a = ap.parse_args()
    if os.path.isdir(a.out_dir) and os.listdir(a.out_dir):
        lib.usage_exit(ap, "%s is not empty (the merge never replaces a file: give a new directory)" % a.out_dir)
    c = lib.Checks("check_torch_merge")
    ins = kineto_files(a.kineto_dir)
    if not c.check(len(ins) == a.ranks, "torch.profiler traces", "%d in %s (want %d): %s" % (
            len(ins), a.kineto_dir, a.ranks, " ".join(os.path.basename(p) for p in ins))) and not ins:
        return c.done()
    rc, out, err = lib.run_cli(a.cli, ["export", "--format", "kineto", "--into", a.kineto_dir, a.lens_traces,
                                       "-o", a.out_dir], 600)
    for line in (out + err).splitlines():
        print("  " + line)
    c.check(rc == 0, "nccl-lens export --format kineto --into", "exit %s" % rc)

    merged = []
    for p in ins:
        q = os.path.join(a.out_dir, os.path.basename(p))
        name = os.path.basename(p)
        if not os.path.exists(q):
            c.check(False, "%s merged" % name, "no %s" % q)
            continue
        try:
            d = lib.read_json_file(q)
        except (OSError, ValueError) as e:
            c.check(False, "%s merged" % name, "not JSON: %s" % e)
            continue
        nl = d.get("nccl_lens") if isinstance(d, dict) else None
        ev = d.get("traceEvents", []) if isinstance(d, dict) else []
        kernels = sum(1 for e in ev if e.get("cat") == "kernel" and "nccl" in str(e.get("name", "")).lower())
        if not c.check(isinstance(nl, dict), "%s merged" % name,
                       "\"nccl_lens\" object present, %d NCCL kernels" % kernels if isinstance(nl, dict) else
                       "no \"nccl_lens\" object: copied unchanged (%d NCCL kernels in it; the export said why)" %
                       kernels):
            continue
        merged.append(q)
        n, m = nl.get("nccl_kernels", 0), nl.get("matched", 0)
        c.check(m >= 1 and m >= a.min_match * n, "%s: NCCL kernels matched" % name,
                "%d of %d (by correlation %s, order+time %s, order %s), unmatched %s, ambiguous %s; fit bound %s ns; "
                "%s of our launches unmatched, %s without GPU time" % (
                    m, n, nl.get("matched_by_correlation"), nl.get("matched_by_order_time"),
                    nl.get("matched_by_order_between_neighbours"), nl.get("unmatched"), nl.get("ambiguous"),
                    (nl.get("clock") or {}).get("bound_ns"), nl.get("our_launches_unmatched"),
                    nl.get("our_launches_without_gpu_time")))
        cats = collections.Counter(e.get("cat") for e in ev if str(e.get("cat", "")).startswith("nccl_lens"))
        annotated = sum(1 for e in ev if "nccl_lens func" in (e.get("args") or {}))
        decomposed = sum(1 for e in ev if "nccl_lens exec us" in (e.get("args") or {}))
        c.check(annotated == m and cats["nccl_lens_channel"] >= 1 and cats["nccl_lens_channel"] == nl.get("kernel_ch")
                and cats["nccl_lens_proxy"] == nl.get("proxy_ops"), "%s: NCCL events added" % name,
                "%d kernels annotated, %d channel slices (kernel_ch %s), %d proxy ops (proxy_ops %s), %d steps, "
                "%d flow events (start + end)" % (annotated, cats["nccl_lens_channel"], nl.get("kernel_ch"),
                                                  cats["nccl_lens_proxy"], nl.get("proxy_ops"),
                                                  cats["nccl_lens_proxy_step"], cats["nccl_lens"]))
        if a.ranks > 1:
            c.check(decomposed >= 1, "%s: kernels carry execution and wait" % name,
                    "%d kernels with \"nccl_lens exec us\"" % decomposed)
    if not merged:
        return c.done()

    j = lib.cli_json(c, a.cli, ["job", "--json"] + merged, "nccl-lens job on the merged Kineto files")
    if j is not None:
        cs = j.get("collectives", [])
        dec = [x for x in cs if x.get("exec_ns") is not None]
        full = [x for x in cs if x.get("ranks_seen") == x.get("nranks") == a.ranks]
        c.check(len(full) >= 1 and len(dec) >= 0.9 * len(cs), "nccl-lens job reads the merged Kineto files",
                "%d instances, matched %s, %d on all %d ranks, %d decomposed; last ranks %s" % (
                    len(cs), j.get("matched"), len(full), a.ranks, len(dec),
                    dict(collections.Counter(x.get("last_rank") for x in dec))))
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
