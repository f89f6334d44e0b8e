#!/bin/bash
# test_kineto_merge BUILD_DIR SOURCE_DIR: export --format kineto on replay runs (see kineto_merge_check.py for
# what each merged file must satisfy), the refusals, and the real B200 file left unchanged.
set -u
# shellcheck source=kineto_sh.sh
source "$(dirname "$0")/kineto_sh.sh"

# 1. 2 ranks, AllReduce of 3 sizes (LL, LL128, SIMPLE: the kernel names all say RING_LL), 1200 launches a rank.
# The match rate is the merge's only on complete traces: a run whose plugin dropped records (ring_full, a machine
# too loaded) is run again, at most 3 times.
complete() { # the merged files say every launch of ours had GPU times
  python3 -c 'import gzip,json,sys
def lost(f):
    b=open(f,"rb").read(); b=gzip.decompress(b) if b[:2]==b"\x1f\x8b" else b
    return json.loads(b)["nccl_lens"]["our_launches_without_gpu_time"]
sys.exit(any(lost(f) for f in sys.argv[1:]))' "$@"
}
for try in 1 2 3; do
  rm -rf "$T/tr" "$T/kin" "$T/out"
  "$L" replay --scenario allreduce --nodes 2 --ranks-per-node 1 --iters 400 --out "$T/tr" --truth "$T/truth.json" \
    --quiet || { echo "FAIL: replay"; exit 1; }
  mkdir "$T/kin" && python3 "$S/kineto_fixture.py" "$T/truth.json" "$T/kin" || { echo "FAIL: fixture"; exit 1; }
  "$L" export --format kineto --into "$T/kin/rank0.json.gz" "$T/kin/rank1.json" "$T/tr" -o "$T/out" >"$T/log" 2>&1 ||
    bad "merge exited $?: $(tail -1 "$T/log")"
  complete "$T/out/rank0.json.gz" "$T/out/rank1.json" && break
  echo "note: run $try: the plugin dropped records (a loaded machine): again"
done
cat "$T/log"
grep -q "unmatched: ncclDevKernel_Broadcast_RING_LL (device 0, stream 20" "$T/log" || bad "the decoy kernel not named"
python3 "$S/kineto_merge_check.py" "$T/kin/rank0.json.gz" "$T/out/rank0.json.gz" "$T/kin/expect.json" "$T/truth.json" 0 --decoy || fail=1
python3 "$S/kineto_merge_check.py" "$T/kin/rank1.json" "$T/out/rank1.json" "$T/kin/expect.json" "$T/truth.json" 1 || fail=1
# --into DIR (tensorboard_trace_handler's directory): the same files, byte for byte (the merge is deterministic)
mkdir "$T/kdir" && cp "$T/kin/rank0.json.gz" "$T/kin/rank1.json" "$T/kdir/"
"$L" export --into "$T/kdir" "$T/tr" -o "$T/outd" >/dev/null 2>&1 && cmp -s "$T/out/rank1.json" "$T/outd/rank1.json" &&
  cmp -s <(zcat "$T/out/rank0.json.gz") <(zcat "$T/outd/rank0.json.gz") && ok "--into DIR: the same output" ||
  bad "--into DIR"
[ "$(stat -c %a "$T/out")" = 700 ] && ok "OUTDIR created 0700" || bad "OUTDIR mode $(stat -c %a "$T/out")"

# 1b. mixed: two communicators (two NCCL streams), grouped Send/Recv launches, every collective
for try in 1 2 3; do
  rm -rf "$T/trm" "$T/kinm" "$T/outm"
  "$L" replay --scenario mixed --nodes 2 --ranks-per-node 1 --iters 40 --out "$T/trm" --truth "$T/truthm.json" \
    --quiet || { echo "FAIL: replay mixed"; exit 1; }
  mkdir "$T/kinm" && python3 "$S/kineto_fixture.py" "$T/truthm.json" "$T/kinm" || { echo "FAIL: fixture"; exit 1; }
  "$L" export --into "$T/kinm/rank0.json.gz" "$T/kinm/rank1.json" "$T/trm" -o "$T/outm" >"$T/log" 2>&1 ||
    bad "merge (mixed) exited $?: $(tail -1 "$T/log")"
  complete "$T/outm/rank0.json.gz" "$T/outm/rank1.json" && break
  echo "note: mixed run $try: the plugin dropped records (a loaded machine): again"
done
for r in 0 1; do
  f=$T/kinm/rank$r.json; [ $r = 0 ] && f=$f.gz
  python3 "$S/kineto_merge_check.py" "$f" "$T/outm/$(basename "$f")" "$T/kinm/expect.json" "$T/truthm.json" $r \
    --min-match 0.99 $([ $r = 0 ] && echo --decoy) || fail=1
done

# 2. refusals: an existing output is not replaced; a merged file is not merged again; not JSON; usage
"$L" export --format kineto --into "$T/kin/rank0.json.gz" "$T/tr" -o "$T/out" >"$T/log" 2>&1
[ $? = 1 ] && grep -q "exists in the output directory: not replaced" "$T/log" && ok "existing output kept" ||
  bad "existing output: $(cat "$T/log")"
"$L" export --format kineto --into "$T/out/rank0.json.gz" "$T/tr" -o "$T/out2" >"$T/log" 2>&1
[ $? = 1 ] && grep -q "already holds a merge" "$T/log" && ok "a merged file refused" || bad "remerge: $(cat "$T/log")"
printf '{"traceEvents":[{"ph":"X",' >"$T/cut.json"
"$L" export --format kineto --into "$T/cut.json" "$T/tr" -o "$T/out3" >"$T/log" 2>&1
[ $? = 1 ] && grep -q "is not a JSON document" "$T/log" && [ ! -e "$T/out3/cut.json" ] && ok "a cut file refused" ||
  bad "cut file: $(cat "$T/log")"
# a cut .json.gz (a copy stopped mid-way): one line that says so, nothing written
head -c 3000 "$T/kin/rank0.json.gz" >"$T/cutz.json.gz"
"$L" export --format kineto --into "$T/cutz.json.gz" "$T/tr" -o "$T/out4" >"$T/log" 2>&1
[ $? = 1 ] && [ "$(wc -l <"$T/log")" = 1 ] && grep -q "cutz.json.gz: truncated (unexpected end of the gzip stream)" \
  "$T/log" && [ ! -e "$T/out4/cutz.json.gz" ] && ok "a cut .json.gz: $(cat "$T/log")" || bad "cut .gz: $(cat "$T/log")"
"$L" export --format kineto --into "$T/kin/rank0.json.gz" "$T/tr" >"$T/log" 2>&1
[ $? = 2 ] && [ "$(wc -l <"$T/log")" = 1 ] && ok "no -o: usage error" || bad "no -o: $(cat "$T/log")"
"$L" export --into "$T/kin/rank0.json.gz" --format chrome "$T/tr" -o "$T/x" >"$T/log" 2>&1
[ $? = 2 ] && ok "--into with another format: usage error" || bad "--into chrome: $(cat "$T/log")"

# 3. a job scenario: rank 1 late on every collective; the kernels carry execution, wait and last rank
for try in 1 2 3; do
  rm -rf "$T/trj" "$T/kinj" "$T/outj"
  "$L" replay --scenario job-late-app --nodes 2 --ranks-per-node 1 --iters 100 --delay-us 1000 --out "$T/trj" \
    --truth "$T/truthj.json" --quiet || { echo "FAIL: replay job"; exit 1; }
  mkdir "$T/kinj" && python3 "$S/kineto_fixture.py" "$T/truthj.json" "$T/kinj" || { echo "FAIL: fixture"; exit 1; }
  "$L" export --format kineto --into "$T/kinj/rank0.json.gz" "$T/kinj/rank1.json" "$T/trj" -o "$T/outj" >"$T/log" 2>&1 ||
    bad "merge (job) exited $?: $(tail -1 "$T/log")"
  complete "$T/outj/rank0.json.gz" "$T/outj/rank1.json" && break
  echo "note: job run $try: the plugin dropped records (a loaded machine): again"
done
python3 "$S/kineto_merge_check.py" "$T/kinj/rank0.json.gz" "$T/outj/rank0.json.gz" "$T/kinj/expect.json" "$T/truthj.json" 0 \
  --decoy --job --min-match 0.99 || fail=1
python3 "$S/kineto_merge_check.py" "$T/kinj/rank1.json" "$T/outj/rank1.json" "$T/kinj/expect.json" "$T/truthj.json" 1 \
  --job --min-match 0.99 || fail=1

# 4. the real B200 file (rank 0 of 8, NCCL 2.27.5) with traces of another job: copied unchanged, one line why.
# The repository's copy (tests/kineto/data, as test_kineto_read reads it): a clean clone has it.
R=${KINETO_REALDATA:-$S/data}
F=$R/tracelens_b200_eager_trace_rank0of8.json.gz
if [ -r "$F" ]; then
  "$L" export --format kineto --into "$F" "$T/tr" -o "$T/outr" >"$T/log" 2>"$T/err"
  rc=$?
  cat "$T/err"
  if [ $rc = 0 ] && cmp -s <(zcat "$F") <(zcat "$T/outr/$(basename "$F")") && [ "$(wc -l <"$T/err")" = 1 ] &&
    grep -q "copied unchanged: no nccl-lens trace of its process (rank 0 of 8, pid 6583)" "$T/err"; then
    ok "the real B200 file: unchanged, with its reason"
  else
    bad "the real B200 file (rc $rc)"
  fi
else
  echo "skipped: the real B200 Kineto file is not at $F (set KINETO_REALDATA)"
fi

# 5. the replay's own --kineto files, 2 nodes: node 1 writes its wall clock 1.5 ms off (truth kineto_wall_error_ns),
# more than the kernels' spacing (~90 us). Every kernel the merge enriches must be its own collective: one function
# on one communicator, so Kineto's Seq (the replay's order on the communicator) equals NCCL's seqNumber. Rank 1's
# fit finds the 1.5 ms. Then rank 1's file moved 30 ms more (outside the first guesses' 20 ms window): no alignment
# lies on the GPU clock's line, so nothing is paired and the line says why (it paired 27 kernels with the launches
# 6 collectives later before, fit bound 123 us).
seqcheck() { # OUT_FILE -> prints "matched wrong offset_ns bound_ns" (the offset's stated bound: the fit's, the
  # CLOCK samples' spread and our GPU clock map's, each in the file's nccl_lens.clock)
  python3 -c 'import gzip,json,sys,math
d=json.load(open(sys.argv[1])); ks=[e for e in d["traceEvents"] if e.get("cat")=="kernel" and "nccl_lens seq" in e["args"]]
n=d.get("nccl_lens"); c=n["clock"] if n else {}; f=c.get("fits") or [{"offset_ns": 0, "bound_ns": 0}]
b=f[0]["bound_ns"] + c.get("samples_spread_ns", 0) + c.get("our_gpu_map_bound_ns", 0)
print(len(ks), sum(e["args"]["Seq"]!=e["args"]["nccl_lens seq"] for e in ks), f[0]["offset_ns"], math.ceil(b))' "$1"
}
# Node 1's offset against the truth: within the bounds the two files state (the fit's, the CLOCK samples' spread
# and our GPU clock maps', which dominates: 0.6 to 12 ms on a run this short, its maps fitted on notice times),
# and within a tenth of the 1.5 ms (the wall clock's error found, not 0 and not another kernel's; which kernel is
# whose is the Seq check above, exactly). Earlier this asserted 10 us outside sanitizer builds, a figure no bound
# the merge states supports: it held in CI's runs, but on a quiet 2-core machine the error was beyond it in 6 of 12
# runs (-41 to +27 us; 0.1 to 9 us in the others). The offset goes through our GPU clock map; the channel slices
# placed in Kineto's kernels do not (the raw GPU fit: within 2 us above).
for try in 1 2 3; do
  rm -rf "$T/trw" "$T/kinw" "$T/outw"
  "$L" replay --scenario allreduce --nodes 2 --ranks-per-node 1 --iters 50 --out "$T/trw" --kineto "$T/kinw" \
    --truth "$T/truthw.json" --quiet || { echo "FAIL: replay --kineto"; exit 1; }
  "$L" export --format kineto --into "$T/kinw" "$T/trw" -o "$T/outw" >"$T/log" 2>&1 ||
    bad "merge (--kineto) exited $?"
  complete "$T/outw/rank-0.json" "$T/outw/rank-1.json" && break
  echo "note: --kineto run $try: the plugin dropped records (a loaded machine): again"
done
read -r m0 w0 o0 b0 < <(seqcheck "$T/outw/rank-0.json")
read -r m1 w1 o1 b1 < <(seqcheck "$T/outw/rank-1.json")
err=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["processes"][1]["kineto_wall_error_ns"])' \
  "$T/truthw.json")
d=$((o1 - o0 - err))
[ "$w0" = 0 ] && [ "$w1" = 0 ] && ok "--kineto, 2 nodes: no kernel enriched with another collective's launch" ||
  bad "--kineto, 2 nodes: kernels paired with another collective: rank 0 $w0 of $m0, rank 1 $w1 of $m1"
[ "$m0" = 150 ] && [ "$m1" = 150 ] && [ "${d#-}" -le $((b0 + b1)) ] && [ "${d#-}" -le $((err / 10)) ] &&
  ok "--kineto, 2 nodes: 150 + 150 matched, node 1's wall clock found $((o1 - o0)) ns off (truth $err; error $d ns," \
    "stated bounds $b0 + $b1 ns)" ||
  bad "--kineto, 2 nodes: matched $m0 + $m1 of 150 + 150, offsets $o0 $o1 (truth $err), bounds $b0 + $b1:" \
    "$(cat "$T/log")"
# mixed, 2 nodes x 2 ranks: grouped Send/Recv are one launch and one kernel; the replay wrote two kernels per group
# (the truth times each op's part of the kernel), 40 SendRecv kernels no launch had (120 of 160 matched). And two
# local ranks in one process: the other rank's streams, which have no kernel in this file, are not a misalignment.
for try in 1 2 3; do
  rm -rf "$T/trx" "$T/kinx" "$T/outx"
  "$L" replay --scenario mixed --nodes 2 --ranks-per-node 2 --iters 20 --out "$T/trx" --kineto "$T/kinx" --quiet ||
    { echo "FAIL: replay mixed --kineto"; exit 1; }
  "$L" export --format kineto --into "$T/kinx" "$T/trx" -o "$T/outx" >"$T/log" 2>&1 || bad "merge (mixed --kineto) $?"
  complete "$T/outx"/rank-*.json && break
  echo "note: mixed --kineto run $try: the plugin dropped records (a loaded machine): again"
done
python3 -c 'import json,sys
for f in sys.argv[1:]:
    n = json.load(open(f))["nccl_lens"]
    if n["matched"] != n["nccl_kernels"] or n["streams_misaligned"]:
        sys.exit("%s: %d of %d matched, %d streams misaligned" % (f, n["matched"], n["nccl_kernels"],
                 n["streams_misaligned"]))' "$T/outx"/rank-*.json &&
  [ "$(grep -c "streams left unmatched" "$T/log")" = 0 ] &&
  ok "mixed --kineto, 2 x 2 ranks: every kernel matched (one SendRecv kernel per group), no stream misaligned" ||
  bad "mixed --kineto: $(grep -E 'wrote|left' "$T/log" | head -4)"

# shifted US DIR: rank 1's --kineto file with every ts US microseconds later, merged into DIR; sets rc and reads
# seqcheck's "matched wrong offset" into mf wf of
shifted() {
  mkdir "$T/in$2" && python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for e in d["traceEvents"]:
    if "ts" in e: e["ts"] = round(e["ts"] + float(sys.argv[3]), 3)
json.dump(d, open(sys.argv[2], "w"))' "$T/kinw/rank-1.json" "$T/in$2/rank-1.json" "$1"
  "$L" export --format kineto --into "$T/in$2/rank-1.json" "$T/trw" -o "$T/$2" >"$T/log" 2>"$T/err"
  rc=$?
  read -r mf wf of _ < <(seqcheck "$T/$2/rank-1.json")
}
# Which reason depends on how far apart the replay's kernels lie (TSan stretches the run to over 100 ms): the
# nearest kernel within the first guesses' 20 ms (an alignment tried: off the GPU clock's line, or none pairing
# any) or not (none tried, the distance said). Each says the wall clock may be off.
reason() { grep -qE "off the GPU clock's line|no alignment pairs them|the nearest is [0-9.]+ ms away" "$T/err" &&
  grep -q "wall clock off by more than" "$T/err"; }
shifted 30000 outfar
[ $rc = 0 ] && [ "$wf" = 0 ] && { [ "$mf" = 150 ] || reason; } &&
  ok "a wall clock 31.5 ms off: $mf matched, none wrong $(head -c 160 "$T/err")" ||
  bad "a wall clock 31.5 ms off: rc $rc, $wf of $mf kernels paired with another collective: $(cat "$T/err")"
# 80 ms more. On a quiet machine in a normal build the 150 kernels lie ~90 us apart and none within 20 ms: the
# distance is said. A loaded machine or TSan stretches the run past the shift: then every kernel found its own
# launch (the alignment is unique) or a reason is said; never a kernel paired with another collective's launch.
shifted 80000 outfar2
[ $rc = 0 ] && [ "$wf" = 0 ] && { [ "$mf" = 150 ] || { [ "$mf" = 0 ] && reason; }; } &&
  ok "a wall clock 81.5 ms off: $mf matched, none wrong $(head -c 160 "$T/err")" ||
  bad "a wall clock 81.5 ms off: rc $rc, $wf of $mf paired with another collective: $(cat "$T/err")"
exit $fail
